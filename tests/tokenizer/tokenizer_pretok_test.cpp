// Word splitters, Unicode categories, lenient UTF-8 decoding, the GPT-2 byte map and clean_spaces.
#include "tokenizer/tokenizer_pretok.h"

#include <gtest/gtest.h>

#include <random>

#include "core/utf8.h"
#include "tokenizer/tokenizer_vocab.h"
#include "tokenizer/unicode.h"

namespace lazyslot::tok {
namespace {

std::vector<std::string> Words(PreType type, const std::string& text) {
  const std::vector<uint32_t> cps = unicode::Decode(text);
  std::vector<uint32_t> lengths;
  SplitWords(type, cps, &lengths);
  std::vector<std::string> words;
  size_t start = 0;
  for (uint32_t len : lengths) {
    EXPECT_GT(len, 0u);
    std::string w;
    for (size_t i = start; i < start + len; ++i) AppendUtf8(cps[i], &w);
    words.push_back(w);
    start += len;
  }
  EXPECT_EQ(start, cps.size());
  return words;
}

using W = std::vector<std::string>;

TEST(PreTokenizer, Gpt2) {
  EXPECT_EQ(Words(PreType::kGpt2, "Hello world"), (W{"Hello", " world"}));
  EXPECT_EQ(Words(PreType::kGpt2, "it's IT'S"), (W{"it", "'s", " IT", "'", "S"}));  // case-sensitive
  EXPECT_EQ(Words(PreType::kGpt2, "  a"), (W{" ", " a"}));
  EXPECT_EQ(Words(PreType::kGpt2, "a  "), (W{"a", "  "}));
  EXPECT_EQ(Words(PreType::kGpt2, "x 123 ...!"), (W{"x", " 123", " ...!"}));
  EXPECT_EQ(Words(PreType::kGpt2, "a\n\n b"), (W{"a", "\n\n", " b"}));
  EXPECT_EQ(Words(PreType::kGpt2, "\t1"), (W{"\t", "1"}));
  EXPECT_EQ(Words(PreType::kGpt2, ""), W{});
}

TEST(PreTokenizer, Llama3) {
  EXPECT_EQ(Words(PreType::kLlama3, "IT'S it's"), (W{"IT", "'S", " it", "'s"}));  // case-insensitive
  EXPECT_EQ(Words(PreType::kLlama3, "12345"), (W{"123", "45"}));
  EXPECT_EQ(Words(PreType::kLlama3, "hello\n\nworld"), (W{"hello", "\n\n", "world"}));
  EXPECT_EQ(Words(PreType::kLlama3, "a \n b"), (W{"a", " \n", " b"}));
  EXPECT_EQ(Words(PreType::kLlama3, "x   y"), (W{"x", "  ", " y"}));
  EXPECT_EQ(Words(PreType::kLlama3, "x ..\n\ny"), (W{"x", " ..\n\n", "y"}));
  EXPECT_EQ(Words(PreType::kLlama3, "\tword (x)"), (W{"\tword", " (", "x", ")"}));
  EXPECT_EQ(Words(PreType::kLlama3, "a  "), (W{"a", "  "}));
}

TEST(PreTokenizer, Qwen2SingleDigits) {
  EXPECT_EQ(Words(PreType::kQwen2, "12345 ab"), (W{"1", "2", "3", "4", "5", " ab"}));
  EXPECT_EQ(Words(PreType::kQwen2, "Ünïcödé 中文"), (W{"Ünïcödé", " 中文"}));
}

TEST(PreTokenizer, DefaultChain) {
  // punctuation runs | GPT-2 | digit runs | ASCII digit triples, each splitting the previous words.
  EXPECT_EQ(Words(PreType::kDefault, "a+b=c 1234"), (W{"a", "+", "b", "=", "c", " ", "123", "4"}));
  EXPECT_EQ(Words(PreType::kDefault, "don't"), (W{"don", "'", "t"}));
}

TEST(PreTokenizer, UnassignedCodePointsAreOther) {
  // llama.cpp's flags give unassigned code points a non-zero category, so they match [^\s\p{L}\p{N}] like
  // punctuation: two in a row form one word.
  EXPECT_EQ(Words(PreType::kGpt2, "\u0378\u0378"), (W{"\u0378\u0378"}));
  EXPECT_EQ(Words(PreType::kLlama3, " \u0378\u0378x"), (W{" \u0378\u0378", "x"}));
}

TEST(PreTokenizer, RandomInputsCoverEveryCodePoint) {
  // Words() checks that lengths are positive and add up; mix the classes the splitters branch on.
  const uint32_t pool[] = {'a', 'Z',  '1',    ' ',    ' ',    '\n',   '\r',   '\t',    '\'', 's',   '.',
                           '+', 0xA0, 0x3000, 0x0378, 0x4E2D, 0x0663, 0xFFFD, 0x1F999, 0x85, 0x0301};
  std::mt19937 rng(7);
  for (PreType type : {PreType::kDefault, PreType::kGpt2, PreType::kLlama3, PreType::kQwen2}) {
    for (int iter = 0; iter < 500; ++iter) {
      std::string text;
      const int len = rng() % 24;
      for (int k = 0; k < len; ++k) AppendUtf8(pool[rng() % std::size(pool)], &text);
      std::string joined;
      for (const std::string& w : Words(type, text)) joined += w;
      ASSERT_EQ(joined, text) << PreTypeName(type);
    }
  }
}

TEST(Unicode, Categories) {
  using unicode::Flags;
  EXPECT_TRUE(Flags('A') & unicode::kFlagLetter);
  EXPECT_TRUE(Flags(0x4E2D) & unicode::kFlagLetter);  // 中
  EXPECT_TRUE(Flags(0x0663) & unicode::kFlagNumber);  // Arabic-Indic three
  EXPECT_TRUE(Flags(0x00BD) & unicode::kFlagNumber);  // ½ (No)
  EXPECT_TRUE(Flags(',') & unicode::kFlagPunct);
  EXPECT_FALSE(Flags('$') & unicode::kFlagPunct);  // Sc, not P
  EXPECT_TRUE(Flags(0x0378) & unicode::kFlagUnassigned);
  for (uint32_t ws :
       {0x09u, 0x0Au, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x200Au, 0x2028u, 0x3000u}) {
    EXPECT_TRUE(Flags(ws) & unicode::kFlagWhite) << std::hex << ws;
  }
  for (uint32_t not_ws : {0x1Cu, 0x1Fu, 0x200Bu, 0x180Eu}) EXPECT_FALSE(Flags(not_ws) & unicode::kFlagWhite);
  for (uint32_t cp : {0u, 0x7Fu, 0x378u, 0x10FFFFu}) EXPECT_TRUE(Flags(cp) & unicode::kFlagAny);
}

TEST(Unicode, LenientDecode) {
  using V = std::vector<uint32_t>;
  EXPECT_EQ(unicode::Decode("a\xC3\xA9"), (V{'a', 0xE9}));
  EXPECT_EQ(unicode::Decode("\xFF"), (V{0xFFFD}));
  EXPECT_EQ(unicode::Decode("\xE2\x82"), (V{0xFFFD, 0xFFFD}));  // truncated: one replacement per byte
  EXPECT_EQ(unicode::Decode("\xC0\x80"), (V{0}));               // overlong accepted, as llama.cpp does
  EXPECT_EQ(unicode::Decode("\xED\xA0\x80"), (V{0xD800}));      // surrogate accepted
  EXPECT_EQ(unicode::Decode("\xF4\x90\x80\x80"), (V{0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}));  // > U+10FFFF
  EXPECT_EQ(unicode::Decode("\xF0\x9F\xA6\x99"), (V{0x1F999}));
  std::string s;
  AppendUtf8(0x1F999, &s);
  EXPECT_EQ(s, "\xF0\x9F\xA6\x99");
}

TEST(Unicode, ByteMap) {
  EXPECT_EQ(unicode::ByteToCodePoint(' '), 0x120u);
  EXPECT_EQ(unicode::ByteToCodePoint('\n'), 0x10Au);
  EXPECT_EQ(unicode::ByteToCodePoint('A'), uint32_t('A'));
  EXPECT_EQ(unicode::ByteToCodePoint(0xAD), 0x143u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(unicode::CodePointToByte(unicode::ByteToCodePoint(uint8_t(b))), b);
  EXPECT_EQ(unicode::CodePointToByte(0x144), -1);
  EXPECT_EQ(unicode::CodePointToByte(0x80), -1);
}

TEST(CleanSpaces, LlamaCppPasses) {
  EXPECT_EQ(CleanSpaces("Hello , world ! ok ? yes ."), "Hello, world! ok? yes.");
  EXPECT_EQ(CleanSpaces("a ' b"), "a'b");
  EXPECT_EQ(CleanSpaces(" ' ' "), "'' ");  // a consumed space cannot be reused
  EXPECT_EQ(CleanSpaces("I 'm we 're you 've it 's"), "I'm we're you've it's");
  EXPECT_EQ(CleanSpaces("don 't I 'd we 'll"), "don 't I 'd we 'll");
  EXPECT_EQ(CleanSpaces(" ."), ".");
  EXPECT_EQ(CleanSpaces(""), "");
}

}  // namespace
}  // namespace lazyslot::tok
