// Tokenizers built from small hand-made vocabularies (written with gguf::Writer), to pin down the merge
// order, byte fallback, flag defaults and overrides, auto-detected specials, and metadata errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "gguf/writer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace lazyslot {
namespace {

using Ids = std::vector<TokenId>;

// Writes `w` to a fresh temporary file and builds its tokenizer.
Result<std::unique_ptr<Tokenizer>> Build(const gguf::Writer& w) {
  static std::atomic<int> counter{0};
  const std::string path = ::testing::TempDir() + "/tok_synth_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter++) + ".gguf";
  LS_RETURN_IF_ERROR(w.Write(path));
  auto file = gguf::File::Open(path);
  std::filesystem::remove(path);
  if (!file.ok()) return file.status();
  return Tokenizer::FromGguf(**file);
}

Ids Tok(const Tokenizer& t, const std::string& s, bool add_special = false, bool parse_special = false) {
  auto r = t.Tokenize(s, add_special, parse_special);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Ids{};
}

// SPM vocabulary: <unk> <s> </s>, the 256 byte tokens (ids 3..258), then the pieces below.
struct SpmVocab {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  SpmVocab() {
    static const char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) Add(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">", 0, 6);
  }
  TokenId Add(const std::string& text, float score, int32_t type = 1) {
    tokens.push_back(text);
    scores.push_back(score);
    types.push_back(type);
    return static_cast<TokenId>(tokens.size() - 1);
  }
  gguf::Writer Writer() const {
    gguf::Writer w;
    w.SetString("general.architecture", "llama");
    w.SetString("tokenizer.ggml.model", "llama");
    w.SetArrayString("tokenizer.ggml.tokens", tokens);
    w.SetArrayF32("tokenizer.ggml.scores", scores);
    w.SetArrayI32("tokenizer.ggml.token_type", types);
    return w;
  }
};

TEST(SyntheticSpm, HighestScoreFirstTiesLeftmost) {
  SpmVocab v;
  const TokenId sp = v.Add("\xE2\x96\x81", -10);
  const TokenId a = v.Add("a", -10);
  const TokenId b = v.Add("b", -10);
  v.Add(
      "\xE2\x96\x81"
      "a",
      -5);
  v.Add("ab", -1);
  v.Add("bb", -1);  // same score as "ab": the leftmost pair merges first
  const TokenId sp_ab = v.Add(
      "\xE2\x96\x81"
      "ab",
      -3);
  auto tok = Build(v.Writer());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(Tok(**tok, "abb"), (Ids{sp_ab, b}));
  EXPECT_EQ(Tok(**tok, "abb", /*add_special=*/true), (Ids{1, sp_ab, b}));
  EXPECT_EQ((*tok)->Detokenize(Ids{sp_ab, b}, false, false), "abb");  // prefix space stripped at index 0
  EXPECT_EQ((*tok)->Detokenize(Ids{1, sp_ab, b}, false, false), " abb");
  EXPECT_EQ((*tok)->TokenToPiece(sp, false), " ");
  EXPECT_EQ((*tok)->TokenToPiece(a, false), "a");
}

TEST(SyntheticSpm, ByteFallbackUppercaseHex) {
  SpmVocab v;
  const TokenId sp = v.Add("\xE2\x96\x81", -1);
  auto tok = Build(v.Writer());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // 'é' = C3 A9 is not a token: one <0xXX> per byte (ids 3 + byte).
  EXPECT_EQ(Tok(**tok, "\xC3\xA9"), (Ids{sp, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ((*tok)->TokenToPiece(3 + 'A', false), "A");
  EXPECT_EQ((*tok)->Detokenize(Tok(**tok, "\xC3\xA9 x"), false, false), "\xC3\xA9 x");
  EXPECT_EQ((*tok)->TokenToPiece(0, false), "");  // <unk>: unknown type renders only on request
  EXPECT_EQ((*tok)->TokenToPiece(0, true), "<unk>");
  EXPECT_TRUE((*tok)->IsControl(0));
}

TEST(SyntheticSpm, FlagOverrides) {
  SpmVocab v;
  const TokenId a = v.Add("a", -1);
  const TokenId b = v.Add("b", -1);
  const TokenId ab = v.Add("ab", -0.5f);
  gguf::Writer w = v.Writer();
  w.SetBool("tokenizer.ggml.add_space_prefix", false);
  w.SetBool("tokenizer.ggml.add_bos_token", false);
  w.SetBool("tokenizer.ggml.add_eos_token", true);
  auto tok = Build(w);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_FALSE((*tok)->add_bos());
  EXPECT_EQ(Tok(**tok, "abba", true), (Ids{ab, b, a, 2}));
  EXPECT_EQ((*tok)->Detokenize(Ids{ab, b, a, 2}, /*remove_special=*/true, false), "abba");
}

TEST(SyntheticSpm, PrefixSpaceAfterSpecialFragments) {
  SpmVocab v;
  const TokenId sp = v.Add("\xE2\x96\x81", -1);
  const TokenId x = v.Add("x", -1);
  const TokenId sp_x = v.Add("\xE2\x96\x81x", -0.5f);
  auto tok = Build(v.Writer());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // Every text fragment that follows a special token gets the prefix space again.
  EXPECT_EQ(Tok(**tok, "x</s>x", false, true), (Ids{sp_x, 2, sp_x}));
  EXPECT_EQ(Tok(**tok, "x</s>x", false, false).front(), sp_x);
  (void)sp;
  (void)x;
}

// Byte-level BPE vocabulary: the 256 byte characters (id = byte), then extra tokens and merges.
struct BpeVocab {
  std::vector<std::string> tokens;
  std::vector<std::string> merges;
  BpeVocab() {
    for (int b = 0; b < 256; ++b) tokens.push_back(Enc(std::string(1, static_cast<char>(b))));
  }
  static std::string Enc(const std::string& bytes) {
    std::string s;
    unicode::AppendByteEncoded(bytes, &s);
    return s;
  }
  TokenId Add(const std::string& bytes) {
    tokens.push_back(Enc(bytes));
    return static_cast<TokenId>(tokens.size() - 1);
  }
  gguf::Writer Writer(const char* pre) const {
    gguf::Writer w;
    w.SetString("general.architecture", "qwen2");
    w.SetString("tokenizer.ggml.model", "gpt2");
    if (pre) w.SetString("tokenizer.ggml.pre", pre);
    w.SetArrayString("tokenizer.ggml.tokens", tokens);
    w.SetArrayString("tokenizer.ggml.merges", merges);
    return w;
  }
};

TEST(SyntheticBpe, LowestRankFirstTiesLeftmost) {
  BpeVocab v;
  const TokenId bc = v.Add("bc");
  const TokenId ab = v.Add("ab");
  const TokenId abc = v.Add("abc");
  const TokenId aa = v.Add("aa");
  v.merges = {"b c", "a b", "ab c", "a a"};
  auto tok = Build(v.Writer("qwen2"));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(Tok(**tok, "abc"), (Ids{'a', bc}));  // "b c" (rank 0) beats "a b"; there is no "a bc"
  EXPECT_EQ(Tok(**tok, "ab"), (Ids{ab}));
  EXPECT_EQ(Tok(**tok, "aaa"), (Ids{aa, 'a'}));  // equal ranks: leftmost first
  EXPECT_EQ(Tok(**tok, " a"), (Ids{' ', 'a'}));
  EXPECT_FALSE((*tok)->add_bos());
  (void)abc;
}

TEST(SyntheticBpe, IgnoreMergesTakesWholeWords) {
  BpeVocab v;
  const TokenId bc = v.Add("bc");
  const TokenId abc = v.Add("abc");
  v.merges = {"b c"};
  gguf::Writer w = v.Writer("llama-bpe");
  w.SetU32("tokenizer.ggml.bos_token_id", 'B');
  auto tok = Build(w);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(Tok(**tok, "abc"), (Ids{abc}));  // llama-bpe: a word that is a token is taken whole
  EXPECT_EQ(Tok(**tok, "abcabc"), (Ids{'a', bc, 'a', bc}));
  EXPECT_TRUE((*tok)->add_bos());
  EXPECT_EQ(Tok(**tok, "abc", true), (Ids{'B', abc}));
}

TEST(SyntheticBpe, MergeResultsThatAreNotTokens) {
  BpeVocab v;
  const TokenId xyz = v.Add("xyz");
  v.merges = {"x y", "xy z"};  // "xy" itself is not a token
  auto tok = Build(v.Writer("gpt-2"));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(Tok(**tok, "xyz"), (Ids{xyz}));
  EXPECT_EQ(Tok(**tok, "xy"), (Ids{'x', 'y'}));  // a non-token symbol falls back to its single bytes
}

TEST(SyntheticBpe, MissingOrUnknownPreUsesDefault) {
  BpeVocab v;
  for (const char* pre : {static_cast<const char*>(nullptr), "no-such-pre"}) {
    auto tok = Build(v.Writer(pre));
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    EXPECT_EQ(Tok(**tok, "a+1234"), (Ids{'a', '+', '1', '2', '3', '4'}));
    EXPECT_EQ((*tok)->Detokenize(Tok(**tok, "Hi , you"), false, false), "Hi, you");  // clean_spaces default
  }
}

TEST(SyntheticBpe, AutoDetectedSpecials) {
  BpeVocab v;
  const TokenId im_end = v.Add("<|im_end|>");  // typed normal in the metadata
  v.tokens[im_end] = "<|im_end|>";
  const TokenId eot = v.Add("<|eot_id|>");
  v.tokens[eot] = "<|eot_id|>";
  gguf::Writer w = v.Writer("qwen2");
  w.SetU32("tokenizer.ggml.eos_token_id", 'E');
  w.SetU32("tokenizer.ggml.eot_token_id", 4294967295u);  // "none": ignored
  auto tok = Build(w);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_TRUE((*tok)->IsEog(im_end));
  EXPECT_TRUE((*tok)->IsEog(eot));
  EXPECT_TRUE((*tok)->IsEog('E'));
  EXPECT_FALSE((*tok)->IsEog('F'));
  EXPECT_TRUE((*tok)->IsControl(im_end));  // forced to control, so it is matched only with parse_special
  EXPECT_EQ(Tok(**tok, "<|im_end|>", false, true), (Ids{im_end}));
  EXPECT_NE(Tok(**tok, "<|im_end|>", false, false), (Ids{im_end}));
}

TEST(SyntheticErrors, MetadataProblemsNameTheKey) {
  {
    gguf::Writer w;
    w.SetString("general.architecture", "llama");
    auto tok = Build(w);
    ASSERT_FALSE(tok.ok());
    EXPECT_NE(tok.status().message().find("tokenizer.ggml.model"), std::string::npos)
        << tok.status().message();
  }
  {
    SpmVocab v;
    gguf::Writer w = v.Writer();
    w.SetString("tokenizer.ggml.model", "t5");  // UGM: not implemented (bert is: tokenizer_wpm_test.cpp)
    auto tok = Build(w);
    ASSERT_FALSE(tok.ok());
    EXPECT_EQ(tok.status().code(), Code::kUnimplemented);
  }
  {
    SpmVocab v;
    gguf::Writer w = v.Writer();
    w.SetArrayI32("tokenizer.ggml.tokens", {1, 2, 3});
    auto tok = Build(w);
    ASSERT_FALSE(tok.ok());
    EXPECT_NE(tok.status().message().find("tokenizer.ggml.tokens"), std::string::npos)
        << tok.status().message();
  }
  {
    SpmVocab v;
    v.Add("dup", 0);
    v.Add("dup", 0);
    auto tok = Build(v.Writer());
    ASSERT_FALSE(tok.ok());
    EXPECT_NE(tok.status().message().find("duplicate"), std::string::npos) << tok.status().message();
  }
  {
    SpmVocab v;
    gguf::Writer w = v.Writer();
    w.SetArrayF32("tokenizer.ggml.scores", {0.0f});
    auto tok = Build(w);
    ASSERT_FALSE(tok.ok());
    EXPECT_NE(tok.status().message().find("tokenizer.ggml.scores"), std::string::npos)
        << tok.status().message();
  }
  {
    BpeVocab v;
    gguf::Writer w = v.Writer("qwen2");
    w.SetArrayI32("tokenizer.ggml.merges", {1});
    auto tok = Build(w);
    ASSERT_FALSE(tok.ok());
    EXPECT_NE(tok.status().message().find("tokenizer.ggml.merges"), std::string::npos)
        << tok.status().message();
  }
  {
    // BPE defaults BOS to id 11; with fewer tokens it is disabled, so add_bos_token cannot be honoured.
    gguf::Writer w;
    w.SetString("tokenizer.ggml.model", "gpt2");
    w.SetString("tokenizer.ggml.pre", "qwen2");
    w.SetArrayString("tokenizer.ggml.tokens", {"a", "b"});
    w.SetArrayString("tokenizer.ggml.merges", {"a b"});
    w.SetBool("tokenizer.ggml.add_bos_token", true);
    auto tok = Build(w);
    ASSERT_FALSE(tok.ok());
    EXPECT_NE(tok.status().message().find("add_bos_token"), std::string::npos) << tok.status().message();
  }
}

}  // namespace
}  // namespace lazyslot
