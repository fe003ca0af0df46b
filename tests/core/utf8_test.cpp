// AppendUtf8 / EncodeUtf8 (core/utf8.h): the byte sequences at each length's bounds, surrogates encoded as
// their three bytes, values above U+10FFFF replaced by U+FFFD, and every code point decoded back by a
// straightforward decoder written here.
#include "core/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace lazyslot {
namespace {

TEST(Utf8Encode, LengthBounds) {
  EXPECT_EQ(EncodeUtf8(0x00), std::string(1, '\0'));
  EXPECT_EQ(EncodeUtf8(0x41), "A");
  EXPECT_EQ(EncodeUtf8(0x7F), "\x7F");
  EXPECT_EQ(EncodeUtf8(0x80), "\xC2\x80");
  EXPECT_EQ(EncodeUtf8(0xE9), "\xC3\xA9");  // é
  EXPECT_EQ(EncodeUtf8(0x7FF), "\xDF\xBF");
  EXPECT_EQ(EncodeUtf8(0x800), "\xE0\xA0\x80");
  EXPECT_EQ(EncodeUtf8(0x120), "\xC4\xA0");  // Ġ, GPT-2's space
  EXPECT_EQ(EncodeUtf8(0x4E2D), "\xE4\xB8\xAD");  // 中
  EXPECT_EQ(EncodeUtf8(0xFFFF), "\xEF\xBF\xBF");
  EXPECT_EQ(EncodeUtf8(0x10000), "\xF0\x90\x80\x80");
  EXPECT_EQ(EncodeUtf8(0x1F999), "\xF0\x9F\xA6\x99");  // 🦙
  EXPECT_EQ(EncodeUtf8(0x10FFFF), "\xF4\x8F\xBF\xBF");
}

TEST(Utf8Encode, SurrogatesAndOutOfRange) {
  EXPECT_EQ(EncodeUtf8(0xD800), "\xED\xA0\x80");
  EXPECT_EQ(EncodeUtf8(0xDFFF), "\xED\xBF\xBF");
  EXPECT_EQ(EncodeUtf8(0x110000), "\xEF\xBF\xBD");  // U+FFFD
  EXPECT_EQ(EncodeUtf8(0xFFFFFFFF), "\xEF\xBF\xBD");
}

TEST(Utf8Encode, AppendsAfterExistingText) {
  std::string s = "a";
  AppendUtf8(0xE9, &s);
  AppendUtf8(0x1F999, &s);
  AppendUtf8('z', &s);
  EXPECT_EQ(s, "a\xC3\xA9\xF0\x9F\xA6\x99z");
}

// Decodes one well-formed sequence (no validation beyond what the round trip needs).
uint32_t DecodeWellFormed(const std::string& s) {
  const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(s[i])); };
  switch (s.size()) {
    case 1: return b(0);
    case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    case 4: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
  return 0xFFFFFFFF;
}

TEST(Utf8Encode, EveryCodePointRoundTripsWithTheShortestForm) {
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const std::string s = EncodeUtf8(cp);
    const size_t want = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    ASSERT_EQ(s.size(), want) << std::hex << cp;
    ASSERT_EQ(DecodeWellFormed(s), cp) << std::hex << cp;
    for (size_t i = 1; i < s.size(); ++i) {
      ASSERT_EQ(static_cast<unsigned char>(s[i]) & 0xC0, 0x80) << std::hex << cp;
    }
  }
}

}  // namespace
}  // namespace lazyslot
