// FillMask on the real Qwen3 vocabulary (151,936 byte-level BPE tokens, from ../shared): at states along a
// JSON document it must agree with Allows and with Accept for every token, and every token of the document
// must be allowed where it occurs.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>

#include "grammar/grammar.h"
#include "tokenizer/tokenizer_test_util.h"

namespace lazyslot::grammar {
namespace {

constexpr const char* kVocabFile = "models/qwen3-vocab-tiny-q8_0.gguf";

const VocabIndex* QwenVocab(const Tokenizer** tok_out) {
  static std::unique_ptr<VocabIndex> vocab;
  const Tokenizer* tok = lazyslot::testing::SharedTokenizer(kVocabFile);
  *tok_out = tok;
  if (!tok) return nullptr;
  if (!vocab) {
    std::vector<std::string> pieces(tok->n_vocab());
    for (int32_t id = 0; id < tok->n_vocab(); ++id)
      pieces[id] = tok->IsControl(id) ? "" : tok->TokenToPiece(id, false);
    vocab = std::make_unique<VocabIndex>(std::move(pieces));
  }
  return vocab.get();
}

const char* kSchema = R"({"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 40}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "city": {"type": "string"}, "tags": {"type": "array", "items": {"enum": ["a", "vip", "東京"]}},
  "score": {"type": "number"}, "ok": {"type": "boolean"}}, "required": ["name", "age"]})";

const char* kDocument =
    R"({"name": "Zoë \"Z\" Ōtsuka 😀", "age": 42, "city": "Carreño, España — 東京都\n", "tags": ["vip", "東京"], "score": -12.5e3, "ok": true})";

TEST(Qwen3Vocab, FillMaskAgreesWithAllowsAndAccept) {
  REQUIRE_SHARED_FILE(kVocabFile);
  const Tokenizer* tok = nullptr;
  const VocabIndex* vocab = QwenVocab(&tok);
  ASSERT_NE(vocab, nullptr);
  ASSERT_EQ(vocab->size(), 151936);
  auto text = JsonSchemaToGbnf(nlohmann::ordered_json::parse(kSchema));
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto g = ParseGbnf(*text);
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<TokenId> ids = lazyslot::testing::MustTokenize(*tok, kDocument, false, false);
  ASSERT_GT(ids.size(), 20u);

  Matcher m(*g);
  std::vector<uint8_t> mask;
  double total_ms = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    m.FillMask(*vocab, &mask);
    total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(mask[ids[i]]) << "document token " << i << " '" << vocab->piece(ids[i]) << "' rejected";
    if (i % 7 == 0) {  // the full comparison at every 7th position (inside strings, numbers, between keys)
      size_t allowed = 0;
      for (int32_t t = 0; t < vocab->size(); ++t) {
        bool allows = m.Allows(*vocab, t);
        Matcher copy = m;
        bool accepts = !vocab->piece(t).empty() && copy.Accept(vocab->piece(t));
        ASSERT_EQ(mask[t] != 0, allows)
            << "position " << i << " token " << t << " '" << vocab->piece(t) << "'";
        ASSERT_EQ(allows, accepts) << "position " << i << " token " << t;
        allowed += allows;
      }
      EXPECT_GT(allowed, 0u);
    }
    ASSERT_TRUE(m.Accept(vocab->piece(ids[i])));
  }
  EXPECT_TRUE(m.CanEnd());
  std::printf("FillMask over %zu positions: mean %.3f ms\n", ids.size(), total_ms / ids.size());
}

TEST(Qwen3Vocab, ControlTokensNeverAllowed) {
  REQUIRE_SHARED_FILE(kVocabFile);
  const Tokenizer* tok = nullptr;
  const VocabIndex* vocab = QwenVocab(&tok);
  ASSERT_NE(vocab, nullptr);
  auto g = ParseGbnf("root ::= .*");
  ASSERT_TRUE(g.ok());
  Matcher m(*g);
  std::vector<uint8_t> mask;
  m.FillMask(*vocab, &mask);
  for (int32_t t = 0; t < vocab->size(); ++t) {
    if (tok->IsControl(t)) {
      ASSERT_FALSE(mask[t]) << t;
    }
  }
  EXPECT_FALSE(mask[151645]);  // <|im_end|>
  EXPECT_TRUE(mask[tok->Tokenize("hello", false, false)->at(0)]);
}

// The parser-work allowance must leave room for large real grammars: an enum of 3,000 distinct words (a
// JSON schema's) makes the costliest first mask over the real vocabulary, one new state per prefix the trie
// shares with some word. It used ~0.85 M of the 8.4 M units when measured (session 30).
TEST(Qwen3Vocab, LargeEnumFitsTheParserWorkAllowance) {
  REQUIRE_SHARED_FILE(kVocabFile);
  const Tokenizer* tok = nullptr;
  const VocabIndex* vocab = QwenVocab(&tok);
  ASSERT_NE(vocab, nullptr);
  std::mt19937 rng(1);
  std::set<std::string> words;
  while (words.size() < 3000) {
    std::string w(3 + rng() % 10, 'a');
    for (char& c : w) c = static_cast<char>('a' + rng() % 26);
    words.insert(w);
  }
  nlohmann::ordered_json schema = {{"type", "array"}, {"items", {{"enum", words}}}};
  auto text = JsonSchemaToGbnf(schema);
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto g = ParseGbnf(*text);
  ASSERT_TRUE(g.ok()) << g.status().message();
  Matcher m(*g);
  std::vector<uint8_t> mask;
  const std::string doc = "[\"" + *words.begin() + "\", \"" + *words.rbegin() + "\"]";
  std::vector<TokenId> ids = lazyslot::testing::MustTokenize(*tok, doc, false, false);
  for (size_t i = 0; i < ids.size(); ++i) {
    m.RefillWork();
    m.FillMask(*vocab, &mask);
    ASSERT_FALSE(m.Exhausted()) << "at token " << i;
    ASSERT_TRUE(mask[ids[i]]) << "token " << i << " '" << vocab->piece(ids[i]) << "'";
    ASSERT_TRUE(m.Accept(vocab->piece(ids[i])));
  }
  EXPECT_TRUE(m.CanEnd());
}

}  // namespace
}  // namespace lazyslot::grammar
