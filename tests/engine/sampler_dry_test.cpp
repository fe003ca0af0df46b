// DRY in the Sampler: the penalty multiplier * base^(repeat length - allowed length) on the token that would
// extend a repeat, the scan window, sequence breakers (whole-token and multi-token, found in a small fake
// vocabulary and in Qwen3's) and a greedy pick that DRY turns away from a repeat.
#include "engine/sampler_dry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "gguf/gguf.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace lazyslot {
namespace {

// A vocabulary of fixed strings; Tokenize is greedy longest match.
class FakeTokenizer : public Tokenizer {
 public:
  explicit FakeTokenizer(std::vector<std::string> vocab) : vocab_(std::move(vocab)) {}
  Result<std::vector<TokenId>> Tokenize(std::string_view text, bool, bool) const override {
    std::vector<TokenId> out;
    size_t at = 0;
    while (at < text.size()) {
      TokenId best = -1;
      size_t best_len = 0;
      for (size_t id = 0; id < vocab_.size(); ++id) {
        const std::string& v = vocab_[id];
        if (v.size() > best_len && text.substr(at, v.size()) == v) {
          best = static_cast<TokenId>(id);
          best_len = v.size();
        }
      }
      if (best < 0) return InvalidArgument("no token for the text");
      out.push_back(best);
      at += best_len;
    }
    return out;
  }
  std::string TokenToPiece(TokenId id, bool) const override { return vocab_[id]; }
  std::string Detokenize(const std::vector<TokenId>& ids, bool, bool) const override {
    std::string s;
    for (TokenId id : ids) s += vocab_[id];
    return s;
  }
  int32_t n_vocab() const override { return static_cast<int32_t>(vocab_.size()); }
  TokenId bos() const override { return -1; }
  TokenId eos() const override { return -1; }
  bool add_bos() const override { return false; }
  bool add_eos() const override { return false; }
  TokenId sep() const override { return -1; }
  bool add_sep() const override { return false; }
  bool IsEog(TokenId) const override { return false; }
  bool IsControl(TokenId) const override { return false; }
  const std::string& TokenText(TokenId id) const override { return vocab_[id]; }

 private:
  std::vector<std::string> vocab_;
};

const FakeTokenizer& Vocab() {
  static const FakeTokenizer tok({"a", "b", "c", "d", "e", "\n", ":", "x:", "f", "g"});
  return tok;
}

SamplingParams Dry(float multiplier = 1.0f) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.dry_multiplier = multiplier;
  p.dry_penalty_last_n = -1;
  return p;
}

// How much DRY took from each token's logit, read back from the draw's distribution over equal logits:
// p_t / p_max = exp(-penalty_t).
std::map<int32_t, double> Penalties(const SamplingParams& p, const std::vector<int32_t>& history,
                                    const Tokenizer* tok = nullptr) {
  Sampler s(p, tok);
  for (int32_t t : history) s.Accept(t);
  const std::vector<float> logits(10, 0.0f);
  s.Sample(logits.data(), 10);
  std::vector<std::pair<int32_t, float>> all;
  s.TopCandidates(100, &all);
  std::map<int32_t, double> pen;
  for (const auto& [id, q] : all) {
    const double d = std::log(all[0].second / q);
    if (d > 1e-6) pen[id] = d;
  }
  return pen;
}

using Pen = std::map<int32_t, double>;

TEST(SamplerDry, PenalisesTheTokenThatExtendsARepeat) {
  // "1 2 3" ends the history and occurred before, followed by 4: emitting 4 would make a repeat of 4.
  const std::vector<int32_t> h = {1, 2, 3, 4, 1, 2, 3};
  auto pen = Penalties(Dry(), h);
  ASSERT_EQ(pen.size(), 1u);
  EXPECT_NEAR(pen[4], 1.75, 1e-4);  // 1 * 1.75^(3 - 2)
  pen = Penalties(Dry(0.5f), h);
  EXPECT_NEAR(pen[4], 0.875, 1e-4);
  SamplingParams p = Dry();
  p.dry_allowed_length = 3;
  EXPECT_NEAR(Penalties(p, h)[4], 1.0, 1e-4);  // 1.75^0
  p.dry_allowed_length = 4;
  EXPECT_TRUE(Penalties(p, h).empty());  // a repeat of 3 is allowed
  p = Dry();
  p.dry_base = 2.0f;
  // Two earlier matches (lengths 7 and 3): the longest sets the penalty, 2^(7 - 2).
  EXPECT_NEAR(Penalties(p, {1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3})[4], 32.0, 1e-3);
  p.dry_multiplier = 0;  // off
  EXPECT_TRUE(Penalties(p, h).empty());
}

TEST(SamplerDry, ScansOnlyTheLastNTokens) {
  const std::vector<int32_t> h = {1, 2, 3, 4, 1, 2, 3};
  SamplingParams p = Dry();
  p.dry_penalty_last_n = 4;  // sees 4 1 2 3: no repeat
  EXPECT_TRUE(Penalties(p, h).empty());
  p.dry_penalty_last_n = 7;
  EXPECT_EQ(Penalties(p, h).size(), 1u);
  p.dry_penalty_last_n = 0;  // off
  EXPECT_TRUE(Penalties(p, h).empty());
}

TEST(SamplerDry, ResolvesBreakersFromTheVocabulary) {
  const DryBreakers b = ResolveDryBreakers(Vocab(), {"\n", ":", "ab", ""});
  // "\n" is token 5; ":" is inside tokens 6 and 7; "ab" starts with token 0 ("a") and goes on with "b".
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b.at(5), (std::vector<std::vector<int32_t>>{{}}));
  EXPECT_EQ(b.at(6), (std::vector<std::vector<int32_t>>{{}}));
  EXPECT_EQ(b.at(7), (std::vector<std::vector<int32_t>>{{}}));
  EXPECT_EQ(b.at(0), (std::vector<std::vector<int32_t>>{{1}}));
}

TEST(SamplerDry, SequenceBreakersCapTheMatch) {
  // "0 5 2 3" ends the history and occurred before, followed by 9: a repeat of 4 without breakers.
  const std::vector<int32_t> h = {0, 5, 2, 3, 9, 0, 5, 2, 3};
  EXPECT_NEAR(Penalties(Dry(), h)[9], 1.75 * 1.75, 1e-3);
  // Token 5 is "\n", a default breaker: the match may not reach back past it, so it counts 2 ("2 3").
  EXPECT_NEAR(Penalties(Dry(), h, &Vocab())[9], 1.0, 1e-4);
  // A breaker (6, ":") as the latest token: nothing to match at all.
  EXPECT_NEAR(Penalties(Dry(), {1, 2, 6, 3, 1, 2, 6})[3], 1.75, 1e-4);
  EXPECT_TRUE(Penalties(Dry(), {1, 2, 6, 3, 1, 2, 6}, &Vocab()).empty());
  // Breakers replaced: "\n" no longer breaks.
  SamplingParams p = Dry();
  p.dry_sequence_breakers = {"*"};
  EXPECT_NEAR(Penalties(p, h, &Vocab())[9], 1.75 * 1.75, 1e-3);
  // A two-token breaker "ab" (tokens 0 then 1) breaks only when both appear.
  p.dry_sequence_breakers = {"ab"};
  EXPECT_NEAR(Penalties(p, {0, 1, 2, 3, 4, 0, 1, 2, 3}, &Vocab())[4], 1.0, 1e-4);  // caps at "2 3"
  EXPECT_NEAR(Penalties(p, {0, 2, 3, 4, 9, 0, 2, 3, 4}, &Vocab())[9], 1.75 * 1.75, 1e-3);
}

TEST(SamplerDry, ABreakerTokenIsNeverPenalised) {
  // "1 2" repeats and was followed by 5 ("\n"): without breakers 5 is penalised, with them it is not.
  const std::vector<int32_t> h = {1, 2, 5, 4, 1, 2};
  EXPECT_EQ(Penalties(Dry(), h).count(5), 1u);
  EXPECT_EQ(Penalties(Dry(), h, &Vocab()).count(5), 0u);
}

TEST(SamplerDry, TurnsAGreedyPickAwayFromARepeat) {
  SamplingParams p = Dry();
  p.temperature = 0;
  std::vector<float> logits(10, 0.0f);
  logits[4] = 1.0f;  // the model prefers to repeat
  Sampler s(p);
  for (int32_t t : {1, 2, 3, 4, 1, 2, 3}) s.Accept(t);
  EXPECT_EQ(s.Sample(logits.data(), 10), 0);  // 4 lost 1.75: token 0 (lowest id among the rest) wins
  SamplingParams g;
  g.temperature = 0;
  EXPECT_EQ(Sampler(g).Sample(logits.data(), 10), 4);
}

// The real Qwen3 vocabulary (151936 tokens): "\n" (198, "Ċ") and ":" (25) are whole breakers, and so is
// every token whose text holds a newline; the scan is what a DRY request pays once at its start.
TEST(SamplerDry, BreakersOverARealVocabulary) {
  REQUIRE_SHARED_FILE("models/qwen3-vocab-tiny-q8_0.gguf");
  auto file = gguf::File::Open(testing::SharedPath("models/qwen3-vocab-tiny-q8_0.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const auto t0 = std::chrono::steady_clock::now();
  const DryBreakers b = ResolveDryBreakers(**tok, SamplingParams().dry_sequence_breakers);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("ResolveDryBreakers over %d tokens: %.1f ms, %zu head tokens\n", (*tok)->n_vocab(), ms,
              b.size());
  auto whole = [&b](int32_t id) {
    auto it = b.find(id);
    return it != b.end() &&
           std::find(it->second.begin(), it->second.end(), std::vector<int32_t>{}) != it->second.end();
  };
  const auto nl = (*tok)->Tokenize("\n", false, false);
  ASSERT_TRUE(nl.ok());
  ASSERT_EQ(nl->size(), 1u);
  EXPECT_TRUE(whole((*nl)[0]));
  const auto two_nl = (*tok)->Tokenize("\n\n", false, false);
  ASSERT_TRUE(two_nl.ok());
  EXPECT_TRUE(whole((*two_nl)[0]));
  const auto colon = (*tok)->Tokenize(":", false, false);
  ASSERT_TRUE(colon.ok());
  EXPECT_TRUE(whole((*colon)[0]));
  const auto word = (*tok)->Tokenize("hello", false, false);
  ASSERT_TRUE(word.ok());
  EXPECT_EQ(b.count((*word)[0]), 0u);
  EXPECT_GT(b.size(), 100u);
  EXPECT_LT(b.size(), 20000u);
}

}  // namespace
}  // namespace lazyslot
