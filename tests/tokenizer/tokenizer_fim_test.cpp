// Tokenizer::fim(): the fill-in-the-middle tokens /infill lays its prompt out with. From the shared Qwen3
// vocabulary (found by their texts), from none (llama SPM, BERT), and from small hand-made vocabularies
// (gguf::Writer): tokenizer.ggml.fim_*_token_id wins over the texts, an unusable key falls back to them, and
// of several usual texts the lowest id wins.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "gguf/keys.h"
#include "gguf/writer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace lazyslot {
namespace {

namespace keys = gguf::keys;
using testing::SharedTokenizer;

void ExpectFim(const FimTokens& got, const FimTokens& want) {
  EXPECT_EQ(got.pre, want.pre);
  EXPECT_EQ(got.suf, want.suf);
  EXPECT_EQ(got.mid, want.mid);
  EXPECT_EQ(got.pad, want.pad);
  EXPECT_EQ(got.rep, want.rep);
  EXPECT_EQ(got.sep, want.sep);
}

TEST(TokenizerFim, Qwen3FoundByText) {
  const std::string rel = "models/vocab/ggml-vocab-qwen3-derived.gguf";
  REQUIRE_SHARED_FILE(rel);
  const Tokenizer* tok = SharedTokenizer(rel);
  ASSERT_NE(tok, nullptr);
  // The file has no fim_* keys: <|fim_prefix|> <|fim_middle|> <|fim_suffix|> <|fim_pad|> <|repo_name|>
  // <|file_sep|> by their texts.
  ExpectFim(tok->fim(), FimTokens{151659, 151661, 151660, 151662, 151663, 151664});
  EXPECT_EQ(tok->TokenText(tok->fim().pre), "<|fim_prefix|>");
  EXPECT_EQ(tok->TokenText(tok->fim().sep), "<|file_sep|>");
}

TEST(TokenizerFim, NoneInLlamaSpmOrBert) {
  for (const char* rel : {"models/vocab/ggml-vocab-llama-spm.gguf", "models/bert-tiny-f32.gguf"}) {
    SCOPED_TRACE(rel);
    REQUIRE_SHARED_FILE(rel);
    const Tokenizer* tok = SharedTokenizer(rel);
    ASSERT_NE(tok, nullptr);
    ExpectFim(tok->fim(), FimTokens{});  // BERT's [PAD] is no FIM pad
  }
}

// A byte-level BPE vocabulary of the printable ASCII bytes, then `extra` (typed control).
gguf::Writer BpeWriter(const std::vector<std::string>& extra) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (char c = '!'; c <= '~'; ++c) tokens.emplace_back(1, c), types.push_back(1);
  for (const std::string& t : extra) tokens.push_back(t), types.push_back(3);
  gguf::Writer w;
  w.SetString(keys::kGeneralArchitecture, "qwen2");
  w.SetString(keys::kTokenizerModel, "gpt2");
  w.SetString(keys::kTokenizerPre, "qwen2");
  w.SetArrayString(keys::kTokenizerTokens, tokens);
  w.SetArrayI32(keys::kTokenizerTokenType, types);
  w.SetArrayString(keys::kTokenizerMerges, {});
  w.SetU32(keys::kTokenizerEosId, 0);
  return w;
}

Result<std::unique_ptr<Tokenizer>> Build(const gguf::Writer& w) {
  static std::atomic<int> counter{0};
  const std::string path = ::testing::TempDir() + "/tok_fim_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter++) + ".gguf";
  LS_RETURN_IF_ERROR(w.Write(path));
  auto file = gguf::File::Open(path);
  std::filesystem::remove(path);
  if (!file.ok()) return file.status();
  return Tokenizer::FromGguf(**file);
}

constexpr TokenId kFirst = '~' - '!' + 1;  // the id of extra[0]

TEST(TokenizerFim, KeysWinOverTexts) {
  gguf::Writer w = BpeWriter({"<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<PRE>", "<SUF>", "<MID>",
                              "<fim_pad>", "<reponame>", "<filename>"});
  w.SetU32(keys::kTokenizerFimPreId, kFirst + 3);
  w.SetU32(keys::kTokenizerFimSufId, kFirst + 4);
  w.SetU32(keys::kTokenizerFimMidId, kFirst + 5);
  w.SetU32(keys::kTokenizerFimPadId, 7);  // any token the key names
  auto tok = Build(w);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  ExpectFim((*tok)->fim(), FimTokens{kFirst + 3, kFirst + 4, kFirst + 5, 7, kFirst + 7, kFirst + 8});
}

TEST(TokenizerFim, UnusableKeysFallBackToTheLowestIdWithAUsualText) {
  // "<|fim_prefix|>" is listed first but "[PREFIX]" has the lower id: the lowest id wins, as /infill's scan.
  gguf::Writer w =
      BpeWriter({"[PREFIX]", "<|fim_prefix|>", "<fim-suffix>", "<|fim_middle|>", "<|repo_name|>"});
  w.SetU32(keys::kTokenizerFimPreId, 4294967295u);  // "none": outside the vocabulary
  w.SetI32(keys::kTokenizerFimSufId, 3);            // not a u32: ignored
  auto tok = Build(w);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  ExpectFim((*tok)->fim(), FimTokens{kFirst, kFirst + 2, kFirst + 3, -1, kFirst + 4, -1});
}

}  // namespace
}  // namespace lazyslot
