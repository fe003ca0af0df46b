// Utf8Stream: holds back incomplete UTF-8 across pieces, passes invalid bytes through, flushes at the end.
#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace lazyslot {
namespace {

TEST(Utf8, CompletePrefix) {
  EXPECT_EQ(CompleteUtf8Prefix(""), 0u);
  EXPECT_EQ(CompleteUtf8Prefix("abc"), 3u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xF0\x9F\xA6"), 1u);      // 3 of 4 bytes
  EXPECT_EQ(CompleteUtf8Prefix("a\xF0\x9F\xA6\x99"), 5u);  // complete
  EXPECT_EQ(CompleteUtf8Prefix("a\xE4"), 1u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xFF"), 2u);  // never valid: passed through
  EXPECT_EQ(CompleteUtf8Prefix("a\x80"), 2u);  // stray continuation
  EXPECT_EQ(CompleteUtf8Prefix("a\xE4"
                               "b"),
            3u);                                   // broken sequence: passed through
  EXPECT_EQ(CompleteUtf8Prefix("a\xED\xA0"), 3u);  // would be a surrogate
}

TEST(Utf8, Valid) {
  EXPECT_TRUE(IsValidUtf8("héllo 🦙"));
  EXPECT_FALSE(IsValidUtf8("\xC0\x80"));
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));
  EXPECT_FALSE(IsValidUtf8("\xE4\xB8"));
}

TEST(Utf8, StreamBytewise) {
  const std::string text = "a🦙é中";
  Utf8Stream stream;
  std::string out;
  std::vector<std::string> emitted;
  for (char c : text) {
    std::string piece = stream.Push(std::string(1, c));
    if (!piece.empty()) emitted.push_back(piece);
    out += piece;
  }
  EXPECT_EQ(stream.pending(), 0u);
  out += stream.Flush();
  EXPECT_EQ(out, text);
  EXPECT_EQ(emitted, (std::vector<std::string>{"a", "🦙", "é", "中"}));
}

TEST(Utf8, StreamFlushesIncompleteTail) {
  Utf8Stream stream;
  EXPECT_EQ(stream.Push(" x\xE4\xB8"), " x");
  EXPECT_EQ(stream.pending(), 2u);
  EXPECT_EQ(stream.Flush(), "\xE4\xB8");
  EXPECT_EQ(stream.pending(), 0u);
  EXPECT_EQ(stream.Push("\xFF"
                        "z"),
            "\xFF"
            "z");
}

}  // namespace
}  // namespace lazyslot
