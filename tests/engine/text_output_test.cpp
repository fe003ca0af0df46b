// TextOutput: stop strings across token boundaries and UTF-8 completeness of streamed text.
#include "engine/text_output.h"

#include <gtest/gtest.h>

namespace lazyslot {
namespace {

std::string Feed(TextOutput& t, const std::vector<std::string>& pieces, bool* stopped) {
  std::string out;
  for (const auto& p : pieces) {
    out += t.Append(p, stopped);
    if (*stopped) return out;
  }
  return out + t.Flush();
}

TEST(TextOutputTest, StopStringSpanningPieces) {
  TextOutput t({"</end>"});
  bool stopped = false;
  EXPECT_EQ(Feed(t, {"Hello", " wor", "ld</", "en", "d> tail"}, &stopped), "Hello world");
  EXPECT_TRUE(stopped);
}

TEST(TextOutputTest, HeldBackPrefixIsReleasedWhenItIsNotAStop) {
  TextOutput t({"STOP"});
  bool stopped = false;
  EXPECT_EQ(t.Append("abc ST", &stopped), "abc ");
  EXPECT_EQ(t.Append("ART", &stopped), "START");
  EXPECT_FALSE(stopped);
}

TEST(TextOutputTest, EarliestOfSeveralStops) {
  TextOutput t({"xyz", "b"});
  bool stopped = false;
  EXPECT_EQ(t.Append("a b xyz", &stopped), "a ");
  EXPECT_TRUE(stopped);
}

TEST(TextOutputTest, PartialUtf8IsHeldUntilComplete) {
  TextOutput t;
  bool stopped = false;
  const std::string euro = "\xE2\x82\xAC";
  EXPECT_EQ(t.Append("a\xE2", &stopped), "a");
  EXPECT_EQ(t.Append("\x82", &stopped), "");
  EXPECT_EQ(t.Append("\xAC!", &stopped), euro + "!");
  EXPECT_EQ(t.Append("\xF0\x9F", &stopped), "");
  EXPECT_EQ(t.Flush(), "\xF0\x9F");
}

}  // namespace
}  // namespace lazyslot
