// WPM (BERT WordPiece) tokenizer: framing with [CLS]/[SEP], BERT's basic pre-tokenizer (lower-casing, accent
// stripping, punctuation and CJK words, dropped controls), greedy longest-match pieces, whole-word [UNK],
// detokenization, and the metadata defaults and overrides, as llama.cpp does them. Expected ids come from
// token texts looked up in the vocabulary, from llama.cpp's vectors, or from hand-made vocabularies.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "gguf/writer.h"
#include "tokenizer/tokenizer_models.h"
#include "tokenizer/tokenizer_vocab.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace lazyslot {
namespace {

using Ids = std::vector<TokenId>;
using Words = std::vector<std::string>;
using testing::MustTokenize;
using testing::SharedTokenizer;

constexpr char kBge[] = "models/vocab/ggml-vocab-bert-bge.gguf";
constexpr char kTiny[] = "models/bert-tiny-f32.gguf";
constexpr char kRerank[] = "models/bert-rerank-tiny-f32.gguf";

// The id whose vocabulary text is `text` (linear scan: independent of the tokenizer's own index), -1 if none.
TokenId IdOf(const Tokenizer& tok, const std::string& text) {
  for (TokenId id = 0; id < tok.n_vocab(); ++id) {
    if (tok.TokenText(id) == text) return id;
  }
  return -1;
}

// A word start: U+2581 + text.
std::string Start(const std::string& text) { return "\xE2\x96\x81" + text; }

Words Split(const std::string& text, bool lowercase = true, bool strip_accents = true) {
  tok::Vocab v;
  v.lowercase = lowercase;
  v.strip_accents = strip_accents;
  Words words;
  tok::WpmSplitWords(v, text, &words);
  return words;
}

// ---------------------------------------------------------------------------------------------------------
// Unicode data of the normaliser (facts of the Unicode Character Database).

TEST(WpmUnicode, LowerCaseIsTheSimpleMapping) {
  EXPECT_EQ(unicode::ToLower('A'), uint32_t('a'));
  EXPECT_EQ(unicode::ToLower('z'), uint32_t('z'));
  EXPECT_EQ(unicode::ToLower(0xC4), 0xE4u);        // Ä -> ä
  EXPECT_EQ(unicode::ToLower(0x3A3), 0x3C3u);      // Σ -> σ, never the final form ς
  EXPECT_EQ(unicode::ToLower(0x130), 0x69u);       // İ -> i (the full mapping would add U+0307)
  EXPECT_EQ(unicode::ToLower(0x1C5), 0x1C6u);      // titlecase ǅ -> ǆ
  EXPECT_EQ(unicode::ToLower(0x410), 0x430u);      // Cyrillic А -> а
  EXPECT_EQ(unicode::ToLower(0xFF21), 0xFF41u);    // fullwidth Ａ -> ａ
  EXPECT_EQ(unicode::ToLower(0x10400), 0x10428u);  // Deseret
  EXPECT_EQ(unicode::ToLower(0x4E00), 0x4E00u);
}

TEST(WpmUnicode, NfdKeepsTheFirstCodePoint) {
  EXPECT_EQ(unicode::NfdFirst('e'), uint32_t('e'));
  EXPECT_EQ(unicode::NfdFirst(0xE9), uint32_t('e'));    // é
  EXPECT_EQ(unicode::NfdFirst(0x1D5), uint32_t('U'));   // Ǖ = U + 0308 + 0304, fully decomposed
  EXPECT_EQ(unicode::NfdFirst(0x212B), uint32_t('A'));  // ANGSTROM SIGN -> Å -> A
  EXPECT_EQ(unicode::NfdFirst(0x1EE9), uint32_t('u'));  // ứ
  EXPECT_EQ(unicode::NfdFirst(0xD55C), 0x1112u);        // 한 -> leading jamo ᄒ only
  EXPECT_EQ(unicode::NfdFirst(0xFB01), 0xFB01u);        // ﬁ: compatibility decomposition only
}

TEST(WpmUnicode, Classes) {
  EXPECT_EQ(unicode::WpmClassOf('a'), unicode::kWpmKeep);
  EXPECT_EQ(unicode::WpmClassOf('7'), unicode::kWpmKeep);
  EXPECT_EQ(unicode::WpmClassOf(','), unicode::kWpmPunct);
  EXPECT_EQ(unicode::WpmClassOf('$'), unicode::kWpmSymbol);
  EXPECT_EQ(unicode::WpmClassOf(0x20AC), unicode::kWpmSymbol);  // €
  EXPECT_EQ(unicode::WpmClassOf(0x301), unicode::kWpmMark);
  EXPECT_EQ(unicode::WpmClassOf(0x7F), unicode::kWpmControl);
  EXPECT_EQ(unicode::WpmClassOf(0x200B), unicode::kWpmControl);  // ZERO WIDTH SPACE is Cf
  EXPECT_EQ(unicode::WpmClassOf(0xE000), unicode::kWpmControl);  // private use
  EXPECT_EQ(unicode::WpmClassOf(0x378), unicode::kWpmKeep);      // unassigned
  EXPECT_EQ(unicode::WpmClassOf(0x10FFFF), unicode::kWpmKeep);   // noncharacter, unassigned
  EXPECT_TRUE(unicode::IsWhiteSpace(0x3000));
  EXPECT_TRUE(unicode::IsWhiteSpace('\v'));
  EXPECT_FALSE(unicode::IsWhiteSpace(0x200B));
  EXPECT_FALSE(unicode::IsWhiteSpace(0x1C));  // Python's isspace() says yes; White_Space says no
  EXPECT_TRUE(unicode::IsCjkIdeograph(0x6211));
  EXPECT_TRUE(unicode::IsCjkIdeograph(0x2B920));
  EXPECT_FALSE(unicode::IsCjkIdeograph(0x2B820));  // the range gap llama.cpp keeps from Hugging Face
  EXPECT_FALSE(unicode::IsCjkIdeograph(0x30A2));   // katakana
}

// ---------------------------------------------------------------------------------------------------------
// The basic pre-tokenizer.

TEST(WpmSplit, WhitespaceAndPunctuation) {
  EXPECT_EQ(Split("Hello, WORLD!"), (Words{"hello", ",", "world", "!"}));
  EXPECT_EQ(Split("  a\tb\nc\xE3\x80\x80"
                  "d  "),
            (Words{"a", "b", "c", "d"}));  // U+3000 is a space
  EXPECT_EQ(Split("y'all...?"), (Words{"y", "'", "all", ".", ".", ".", "?"}));
  EXPECT_EQ(Split("a\xE2\x80\x94"
                  "b"),
            (Words{"a", "\xE2\x80\x94", "b"}));  // em dash (Pd)
  EXPECT_EQ(Split("\xC2\xBF"
                  "qu\xC3\xA9?"),
            (Words{"\xC2\xBF", "que", "?"}));  // ¿qué?
  EXPECT_EQ(Split(""), Words{});
  EXPECT_EQ(Split(" \t\n "), Words{});
}

TEST(WpmSplit, OnlyAsciiSymbolsSplit) {
  EXPECT_EQ(Split("$5+3=8^2"), (Words{"$", "5", "+", "3", "=", "8", "^", "2"}));
  EXPECT_EQ(Split("5\xE2\x82\xAC 3\xC2\xA3"), (Words{"5\xE2\x82\xAC", "3\xC2\xA3"}));  // 5€ 3£ stay whole
  // U+2581 in the input is a symbol above U+007F: it stays inside the word.
  EXPECT_EQ(Split("a\xE2\x96\x81"
                  "b"),
            (Words{"a\xE2\x96\x81"
                   "b"}));
  // Fullwidth tilde (Sm) after an ideograph: its own word only because the ideograph closed the previous one.
  EXPECT_EQ(Split("\xE5\xA4\xA9\xEF\xBD\x9E"), (Words{"\xE5\xA4\xA9", "\xEF\xBD\x9E"}));
  EXPECT_EQ(Split("a\xEF\xBD\x9E"
                  "b"),
            (Words{"a\xEF\xBD\x9E"
                   "b"}));
}

TEST(WpmSplit, CjkIdeographsAreWordsKanaAreNot) {
  // 我想在apple工作
  EXPECT_EQ(Split("\xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8"
                  "apple\xE5\xB7\xA5\xE4\xBD\x9C"),
            (Words{"\xE6\x88\x91", "\xE6\x83\xB3", "\xE5\x9C\xA8", "apple", "\xE5\xB7\xA5", "\xE4\xBD\x9C"}));
  // ひらがな: letters outside the CJK ranges, one word.
  EXPECT_EQ(Split("\xE3\x81\xB2\xE3\x82\x89\xE3\x81\x8C\xE3\x81\xAA"),
            (Words{"\xE3\x81\xB2\xE3\x82\x89\xE3\x81\x8B\xE3\x81\xAA"}));  // が -> か: its dakuten is a mark
}

TEST(WpmSplit, LowerCasing) {
  EXPECT_EQ(Split("HeLLo WORLD"), (Words{"hello", "world"}));
  // ΣΑΣ -> σασ (simple mapping, no final sigma), İ -> i, Ǆ -> ǆ.
  EXPECT_EQ(Split("\xCE\xA3\xCE\x91\xCE\xA3 \xC4\xB0 \xC7\x84"),
            (Words{"\xCF\x83\xCE\xB1\xCF\x83", "i", "\xC7\x86"}));
  EXPECT_EQ(Split("HeLLo", /*lowercase=*/false, /*strip_accents=*/false), (Words{"HeLLo"}));
}

TEST(WpmSplit, AccentsAreStripped) {
  // Café naïve Ångström, and a decomposed é (e + U+0301).
  EXPECT_EQ(Split("Caf\xC3\xA9 na\xC3\xAFve \xC3\x85ngstr\xC3\xB6m e\xCC\x81"),
            (Words{"cafe", "naive", "angstrom", "e"}));
  // Cửa Việt
  EXPECT_EQ(Split("C\xE1\xBB\xAD"
                  "a Vi\xE1\xBB\x87t"),
            (Words{"cua", "viet"}));
  // Without stripping, precomposed letters and combining marks stay.
  EXPECT_EQ(Split("Caf\xC3\xA9 e\xCC\x81", /*lowercase=*/true, /*strip_accents=*/false),
            (Words{"caf\xC3\xA9", "e\xCC\x81"}));
  EXPECT_EQ(Split("Caf\xC3\xA9", /*lowercase=*/false, /*strip_accents=*/true), (Words{"Cafe"}));
  // llama.cpp's NFD keeps one code point: a Hangul syllable loses its vowel and final consonant (한국어).
  EXPECT_EQ(Split("\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4"), (Words{"\xE1\x84\x92\xE1\x84\x80\xE1\x84\x8B"}));
}

TEST(WpmSplit, ControlsAndInvalidBytesAreDropped) {
  EXPECT_EQ(Split(std::string("a\0b", 3)), (Words{"ab"}));
  EXPECT_EQ(Split("a\x7F"
                  "b\xE2\x80\x8B"
                  "c\xC2\xAD"
                  "d"),
            (Words{"abcd"}));  // DEL, ZWSP, soft hyphen
  EXPECT_EQ(Split("a\xFF"
                  "b\xC3"),
            (Words{"ab"}));  // invalid UTF-8 -> U+FFFD, dropped
  EXPECT_EQ(Split("a\xEF\xBF\xBD"
                  "b"),
            (Words{"ab"}));  // a real U+FFFD too
  EXPECT_EQ(Split("a\xCD\xB8"
                  "b"),
            (Words{"a\xCD\xB8"
                   "b"}));  // unassigned U+0378 stays
}

// ---------------------------------------------------------------------------------------------------------
// Shared vocabularies: BGE (30522 tokens) and the 10,000-token bert-tiny / bert-rerank-tiny.

TEST(WpmShared, FramingBertTiny) {
  REQUIRE_SHARED_FILE(kTiny);
  const Tokenizer* tok = SharedTokenizer(kTiny);
  ASSERT_NE(tok, nullptr);
  ASSERT_EQ(tok->TokenText(101), "[CLS]");
  ASSERT_EQ(tok->TokenText(102), "[SEP]");
  // No add_* keys: llama.cpp's WPM defaults.
  EXPECT_EQ(tok->bos(), 101);
  EXPECT_EQ(tok->eos(), -1);
  EXPECT_EQ(tok->sep(), 102);
  EXPECT_TRUE(tok->add_bos());
  EXPECT_FALSE(tok->add_eos());
  EXPECT_TRUE(tok->add_sep());
  const Ids body = {IdOf(*tok, Start("hello")), IdOf(*tok, Start("world"))};
  ASSERT_GE(body[0], 0);
  ASSERT_GE(body[1], 0);
  EXPECT_EQ(MustTokenize(*tok, "Hello world", false, false), body);
  EXPECT_EQ(MustTokenize(*tok, "Hello world", true, false), (Ids{101, body[0], body[1], 102}));
  EXPECT_EQ(MustTokenize(*tok, "", true, false), (Ids{101, 102}));
  EXPECT_EQ(MustTokenize(*tok, "", false, false), Ids{});
}

TEST(WpmShared, FramingRerankHasOneSep) {
  REQUIRE_SHARED_FILE(kRerank);
  const Tokenizer* tok = SharedTokenizer(kRerank);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->bos(), 101);
  EXPECT_EQ(tok->eos(), 102);
  EXPECT_EQ(tok->sep(), 102);
  EXPECT_TRUE(tok->add_bos());
  EXPECT_TRUE(tok->add_eos());
  EXPECT_FALSE(tok->add_sep());
  const Ids body = MustTokenize(*tok, "what is a panda?", false, false);
  ASSERT_FALSE(body.empty());
  EXPECT_EQ(body.front(), IdOf(*tok, Start("what")));
  EXPECT_EQ(body.back(), IdOf(*tok, Start("?")));
  Ids want = {101};
  want.insert(want.end(), body.begin(), body.end());
  want.push_back(102);  // add_eos is true, yet llama.cpp's WPM closes with one SEP and nothing else
  EXPECT_EQ(MustTokenize(*tok, "what is a panda?", true, false), want);
}

TEST(WpmShared, SpecialTokensInText) {
  REQUIRE_SHARED_FILE(kTiny);
  const Tokenizer* tok = SharedTokenizer(kTiny);
  ASSERT_NE(tok, nullptr);
  const TokenId hi = IdOf(*tok, Start("hi"));
  EXPECT_EQ(MustTokenize(*tok, "[CLS]hi [SEP]", false, true), (Ids{101, hi, 102}));
  // Not parsed: "[", "cls", "]" are ordinary words ("cls" = ▁c + ls in the 10k vocab).
  EXPECT_EQ(MustTokenize(*tok, "[CLS]hi", false, false), (Ids{IdOf(*tok, Start("[")), IdOf(*tok, Start("c")),
                                                              IdOf(*tok, "ls"), IdOf(*tok, Start("]")), hi}));
  EXPECT_TRUE(tok->IsControl(101));
  EXPECT_TRUE(tok->IsControl(100));
}

TEST(WpmShared, LowerCaseAccentsAndPunctuation) {
  REQUIRE_SHARED_FILE(kBge);
  const Tokenizer* tok = SharedTokenizer(kBge);
  ASSERT_NE(tok, nullptr);
  const TokenId hello = IdOf(*tok, Start("hello")), world = IdOf(*tok, Start("world"));
  EXPECT_EQ(MustTokenize(*tok, "HELLO WoRlD", false, false), (Ids{hello, world}));
  EXPECT_EQ(MustTokenize(*tok, "Hello,world!", false, false),
            (Ids{hello, IdOf(*tok, Start(",")), world, IdOf(*tok, Start("!"))}));
  EXPECT_EQ(MustTokenize(*tok, "CAF\xC3\x89", false, false), (Ids{IdOf(*tok, Start("cafe"))}));
  // llama.cpp's vector: Äpfel -> ▁ap fe l.
  EXPECT_EQ(MustTokenize(*tok, "\xC3\x84pfel", false, false),
            (Ids{IdOf(*tok, Start("ap")), IdOf(*tok, "fe"), IdOf(*tok, "l")}));
}

TEST(WpmShared, CjkIdeographsAreSeparateWords) {
  REQUIRE_SHARED_FILE(kBge);
  const Tokenizer* tok = SharedTokenizer(kBge);
  ASSERT_NE(tok, nullptr);
  const TokenId wo = IdOf(*tok, Start("\xE6\x88\x91"));  // ▁我
  ASSERT_GE(wo, 0);
  ASSERT_GE(IdOf(*tok, "\xE6\x88\x91"), 0);  // a continuation 我 exists, but ideographs never continue
  EXPECT_EQ(MustTokenize(*tok, "\xE6\x88\x91\xE6\x88\x91", false, false), (Ids{wo, wo}));
  // Katakana アア is one word: a start piece and a continuation.
  EXPECT_EQ(MustTokenize(*tok, "\xE3\x82\xA2\xE3\x82\xA2", false, false),
            (Ids{IdOf(*tok, Start("\xE3\x82\xA2")), IdOf(*tok, "\xE3\x82\xA2")}));
}

TEST(WpmShared, UnknownWordIsOneUnk) {
  REQUIRE_SHARED_FILE(kBge);
  const Tokenizer* tok = SharedTokenizer(kBge);
  ASSERT_NE(tok, nullptr);
  ASSERT_EQ(tok->TokenText(100), "[UNK]");
  const TokenId hello = IdOf(*tok, Start("hello"));
  // 🦙 has no piece: the whole word "hello🦙" becomes one [UNK], not ▁hello + [UNK].
  EXPECT_EQ(MustTokenize(*tok, "hello\xF0\x9F\xA6\x99", false, false), (Ids{100}));
  EXPECT_EQ(MustTokenize(*tok, "\xF0\x9F\xA6\x99 hello", false, false), (Ids{100, hello}));
  // llama.cpp's 10k vector: every Cyrillic word of "нещо на Български" is [UNK] there.
  REQUIRE_SHARED_FILE(kTiny);
  const Tokenizer* tiny = SharedTokenizer(kTiny);
  ASSERT_NE(tiny, nullptr);
  EXPECT_EQ(MustTokenize(*tiny,
                         "\xD0\xBD\xD0\xB5\xD1\x89\xD0\xBE \xD0\xBD\xD0\xB0 "
                         "\xD0\x91\xD1\x8A\xD0\xBB\xD0\xB3\xD0\xB0\xD1\x80\xD1\x81\xD0\xBA\xD0\xB8",
                         false, false),
            (Ids{100, 100, 100}));
}

TEST(WpmShared, Detokenize) {
  REQUIRE_SHARED_FILE(kTiny);
  REQUIRE_SHARED_FILE(kRerank);
  REQUIRE_SHARED_FILE(kBge);
  const Tokenizer* tiny = SharedTokenizer(kTiny);
  const Tokenizer* rerank = SharedTokenizer(kRerank);
  const Tokenizer* bge = SharedTokenizer(kBge);
  ASSERT_NE(tiny, nullptr);
  ASSERT_NE(rerank, nullptr);
  ASSERT_NE(bge, nullptr);
  // Word starts render with their space, continuations without; no prefix space is stripped (WPM has
  // add_space_prefix false); clean_spaces joins " ," and " !".
  const TokenId disc = IdOf(*bge, Start("disc")), ards = IdOf(*bge, "ards");
  EXPECT_EQ(bge->TokenToPiece(disc, false), " disc");
  EXPECT_EQ(bge->TokenToPiece(ards, false), "ards");
  EXPECT_EQ(bge->Detokenize(Ids{disc, ards}, false, false), " discards");
  EXPECT_EQ(bge->TokenToPiece(101, false), "");
  EXPECT_EQ(bge->TokenToPiece(101, true), "[CLS]");
  EXPECT_EQ(bge->TokenToPiece(100, false), "");

  const Ids framed = MustTokenize(*tiny, "Hello, world!", true, false);
  ASSERT_EQ(framed.size(), 6u);
  EXPECT_EQ(tiny->Detokenize(framed, false, false), " hello, world!");
  EXPECT_EQ(tiny->Detokenize(framed, false, true), "[CLS] hello, world![SEP]");
  // remove_special drops a leading BOS; a trailing EOS only where add_eos is set (rerank: EOS = SEP).
  EXPECT_EQ(tiny->Detokenize(framed, true, true), " hello, world![SEP]");
  EXPECT_EQ(rerank->Detokenize(MustTokenize(*rerank, "Hello, world!", true, false), true, true),
            " hello, world!");
  // The other clean-up rules: " ' " joins, " 's" loses its space.
  EXPECT_EQ(bge->Detokenize(MustTokenize(*bge, "y'all it's", false, false), false, false), " y'all it's");
}

// ---------------------------------------------------------------------------------------------------------
// Hand-made vocabularies: 0 [PAD], 1..99 [unusedN], 100 [UNK], 101 [CLS], 102 [SEP], 103 [MASK], then pieces.

Result<std::unique_ptr<Tokenizer>> Build(const gguf::Writer& w) {
  static std::atomic<int> counter{0};
  const std::string path = ::testing::TempDir() + "/tok_wpm_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter++) + ".gguf";
  LS_RETURN_IF_ERROR(w.Write(path));
  auto file = gguf::File::Open(path);
  std::filesystem::remove(path);
  if (!file.ok()) return file.status();
  return Tokenizer::FromGguf(**file);
}

struct WpmVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  explicit WpmVocab(bool bert_specials = true) {
    if (!bert_specials) return;
    for (int i = 0; i < 104; ++i) {
      std::string t = "[unused" + std::to_string(i) + "]";
      int32_t type = 1;
      if (i == 0 || i >= 100) type = 3;
      if (i == 0) t = "[PAD]";
      if (i == 100) t = "[UNK]";
      if (i == 101) t = "[CLS]";
      if (i == 102) t = "[SEP]";
      if (i == 103) t = "[MASK]";
      tokens.push_back(t);
      types.push_back(type);
    }
  }
  TokenId Add(const std::string& text) {
    tokens.push_back(text);
    types.push_back(1);
    return static_cast<TokenId>(tokens.size() - 1);
  }
  gguf::Writer Writer() const {
    gguf::Writer w;
    w.SetString("general.architecture", "bert");
    w.SetString("tokenizer.ggml.model", "bert");
    w.SetArrayString("tokenizer.ggml.tokens", tokens);
    w.SetArrayI32("tokenizer.ggml.token_type", types);
    return w;
  }
};

TEST(WpmSynthetic, GreedyLongestMatchWithoutBacktracking) {
  WpmVocab v;
  const TokenId a = v.Add(Start("a")), ab = v.Add(Start("ab")), bc = v.Add("bc"), d = v.Add("d");
  const TokenId abcd = v.Add(Start("abcd"));
  auto tok = Build(v.Writer());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(MustTokenize(**tok, "abcd", false, false), (Ids{abcd}));
  EXPECT_EQ(MustTokenize(**tok, "abd", false, false), (Ids{ab, d}));
  // ▁ab is the longest start, then "c" has no piece: the word is [UNK] although ▁a + bc would cover it.
  EXPECT_EQ(MustTokenize(**tok, "abc", false, false), (Ids{100}));
  EXPECT_EQ(MustTokenize(**tok, "a abd", false, false), (Ids{a, ab, d}));
  (void)bc;
}

TEST(WpmSynthetic, ContinuationsNeverUseWordStarts) {
  WpmVocab v;
  const TokenId a = v.Add(Start("a"));
  v.Add(Start("b"));
  const TokenId b = v.Add("b");
  auto tok = Build(v.Writer());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(MustTokenize(**tok, "ab", false, false), (Ids{a, b}));
  // A word cannot start with a continuation piece.
  WpmVocab w;
  w.Add("x");
  auto tok2 = Build(w.Writer());
  ASSERT_TRUE(tok2.ok()) << tok2.status().ToString();
  EXPECT_EQ(MustTokenize(**tok2, "x", false, false), (Ids{100}));
}

TEST(WpmSynthetic, LongWordsUseTheLongestTokenBound) {
  WpmVocab v;
  const TokenId start = v.Add(Start("x"));
  const TokenId xs = v.Add("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");  // 30 bytes, the longest token
  const TokenId x = v.Add("x");
  auto tok = Build(v.Writer());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // ▁x, then 70 x: two 30-byte pieces and ten single ones.
  Ids want = {start, xs, xs};
  want.insert(want.end(), 10, x);
  EXPECT_EQ(MustTokenize(**tok, std::string(71, 'x'), false, false), want);
}

TEST(WpmSynthetic, NormalizerKeys) {
  WpmVocab v;
  const TokenId upper = v.Add(Start("Hello")), lower = v.Add(Start("hello"));
  const TokenId cafe_accent = v.Add(Start("caf\xC3\xA9")), cafe = v.Add(Start("cafe"));
  {
    auto tok = Build(v.Writer());
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    EXPECT_EQ(MustTokenize(**tok, "Hello caf\xC3\xA9", false, false), (Ids{lower, cafe}));
  }
  {
    gguf::Writer w = v.Writer();
    w.SetBool("tokenizer.ggml.normalizer.lowercase", false);  // strip_accents follows: false
    auto tok = Build(w);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    EXPECT_EQ(MustTokenize(**tok, "Hello caf\xC3\xA9", false, false), (Ids{upper, cafe_accent}));
  }
  {
    gguf::Writer w = v.Writer();
    w.SetBool("tokenizer.ggml.normalizer.lowercase", false);
    w.SetBool("tokenizer.ggml.normalizer.strip_accents", true);
    auto tok = Build(w);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    EXPECT_EQ(MustTokenize(**tok, "Hello caf\xC3\xA9", false, false), (Ids{upper, cafe}));
  }
  {
    gguf::Writer w = v.Writer();
    w.SetBool("tokenizer.ggml.normalizer.strip_accents", false);  // lower-case, keep accents
    auto tok = Build(w);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    EXPECT_EQ(MustTokenize(**tok, "HELLO CAF\xC3\x89", false, false), (Ids{lower, cafe_accent}));
  }
}

TEST(WpmSynthetic, SpecialIdKeysAndFlags) {
  WpmVocab v;
  const TokenId x = v.Add(Start("x"));
  gguf::Writer w = v.Writer();
  w.SetU32("tokenizer.ggml.bos_token_id", 5);
  w.SetU32("tokenizer.ggml.seperator_token_id", 6);
  w.SetU32("tokenizer.ggml.eos_token_id", 7);
  w.SetU32("tokenizer.ggml.cls_token_id", 8);  // not read by llama.cpp: [CLS] is the BOS
  w.SetBool("tokenizer.ggml.add_bos_token", false);
  w.SetBool("tokenizer.ggml.add_eos_token", true);
  w.SetBool("tokenizer.ggml.add_sep_token", false);
  auto tok = Build(w);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->bos(), 5);
  EXPECT_EQ((*tok)->sep(), 6);
  EXPECT_EQ((*tok)->eos(), 7);
  EXPECT_FALSE((*tok)->add_bos());
  EXPECT_TRUE((*tok)->add_eos());
  EXPECT_FALSE((*tok)->add_sep());
  // Framing ignores the add_* flags: BOS first, SEP (not EOS) last.
  EXPECT_EQ(MustTokenize(**tok, "x", true, false), (Ids{5, x, 6}));
}

TEST(WpmSynthetic, SmallVocabularyHasNoDefaultSpecials) {
  WpmVocab v(/*bert_specials=*/false);
  const TokenId x = v.Add(Start("x"));
  auto tok = Build(v.Writer());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();  // defaults 100..102 are outside: disabled, not an error
  EXPECT_EQ((*tok)->bos(), -1);
  EXPECT_EQ((*tok)->sep(), -1);
  EXPECT_EQ(MustTokenize(**tok, "x x", false, false), (Ids{x, x}));
  EXPECT_FALSE((*tok)->Tokenize("x", /*add_special=*/true, false).ok());
  EXPECT_FALSE((*tok)->Tokenize("y", false, false).ok());  // needs [UNK], which does not exist
}

}  // namespace
}  // namespace lazyslot
