// Sampler: logit_bias, greedy and random draws, the draw and the default chain against llama-server's
// algorithm written out in the test (same seed, same tokens), each of llama-server's samplers on hand-made
// logits, the chain order, mirostat, TopCandidates and the stage names. DRY has its own file
// (sampler_dry_test.cpp).
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

namespace lazyslot {
namespace {

constexpr float kBan = -std::numeric_limits<float>::infinity();
constexpr int kAll = std::numeric_limits<int>::max();

// Every stage off but temperature 1: the draw sees the softmax of the logits.
SamplingParams Plain() {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

std::vector<float> LogProbs(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

// Survivors of one Sample() call, with their probabilities.
std::map<int32_t, float> Survivors(Sampler& s, const std::vector<float>& logits) {
  s.Sample(logits.data(), static_cast<int32_t>(logits.size()));
  std::vector<std::pair<int32_t, float>> top;
  s.TopCandidates(kAll, &top);
  return {top.begin(), top.end()};
}

std::set<int32_t> Ids(const std::map<int32_t, float>& m) {
  std::set<int32_t> ids;
  for (const auto& [id, p] : m) ids.insert(id);
  return ids;
}

TEST(Sampler, LogitBiasBansAndForcesGreedy) {
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.0f};
  SamplingParams p;
  p.temperature = 0;
  EXPECT_EQ(Sampler(p).Sample(logits.data(), 4), 1);
  p.logit_bias = {{1, kBan}};
  EXPECT_EQ(Sampler(p).Sample(logits.data(), 4), 3);
  p.logit_bias = {{1, -100.0f}, {0, 100.0f}};
  EXPECT_EQ(Sampler(p).Sample(logits.data(), 4), 0);
  p.logit_bias = {{7, 100.0f}, {-1, 5.0f}};  // ids outside the vocabulary are ignored here (checked upstream)
  EXPECT_EQ(Sampler(p).Sample(logits.data(), 4), 1);
}

TEST(Sampler, BannedTokenIsNeverDrawn) {
  const std::vector<float> logits = {1.0f, 1.0f, 1.0f};
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.logit_bias = {{0, kBan}, {2, kBan}};
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    p.seed = seed;
    EXPECT_EQ(Sampler(p).Sample(logits.data(), 3), 1);
  }
  p.logit_bias = {{0, kBan}, {1, kBan}, {2, kBan}};  // nothing left: some token, no crash
  const int32_t t = Sampler(p).Sample(logits.data(), 3);
  EXPECT_TRUE(t >= 0 && t < 3);
}

// llama-server's draw as its source describes it, written out here apart from the Sampler: a std::mt19937
// seeded with the seed; per step one std::uniform_real_distribution<double> number u, none when a single
// candidate is left; weights e^(l - max) in float, summed in double; the first candidate, in the order the
// chain left them, whose running sum reaches u times the total.
class ReferenceDraw {
 public:
  explicit ReferenceDraw(uint32_t seed) : gen_(seed) {}
  int32_t Pick(const std::vector<std::pair<int32_t, float>>& cands) {  // (id, logit)
    if (cands.size() == 1) return cands[0].first;
    float max = cands[0].second;
    for (const auto& c : cands) max = std::max(max, c.second);
    std::vector<float> w;
    double total = 0;
    for (const auto& c : cands) {
      w.push_back(std::exp(c.second - max));
      total += w.back();
    }
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(gen_);
    double run = 0;
    for (size_t i = 0; i < cands.size(); ++i) {
      run += w[i];
      if (run >= total * u) return cands[i].first;
    }
    return cands.back().first;
  }

 private:
  std::mt19937 gen_;
};

// llama-server's default chain with every other stage off (no penalties, no bias): top-k sorts by logit and
// keeps k; top-p takes a float softmax and keeps the shortest prefix whose float running sum reaches top_p;
// min-p keeps logits >= top + ln(min_p); temperature divides the logits; then the draw above.
std::vector<std::pair<int32_t, float>> ReferenceDefaultChain(const std::vector<float>& logits,
                                                             const SamplingParams& p) {
  std::vector<std::pair<int32_t, float>> c;
  for (size_t i = 0; i < logits.size(); ++i) c.emplace_back(static_cast<int32_t>(i), logits[i]);
  std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  c.resize(std::min(c.size(), static_cast<size_t>(p.top_k)));
  std::vector<float> prob;
  float sum = 0;
  for (const auto& x : c) {
    prob.push_back(std::exp(x.second - c[0].second));
    sum += prob.back();
  }
  float cum = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    cum += prob[i] / sum;
    if (cum >= p.top_p) {
      c.resize(i + 1);
      break;
    }
  }
  const float floor = c[0].second + std::log(p.min_p);
  size_t keep = 1;
  while (keep < c.size() && c[keep].second >= floor) ++keep;
  c.resize(keep);
  for (auto& x : c) x.second /= p.temperature;
  return c;
}

// Temperature 1 and nothing else: the candidates stay in id order and the draw walks them in that order.
TEST(Sampler, DrawIsLlamaServersOnAFixedSet) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 1.5f, 0.0f, 1.9f};
  SamplingParams p = Plain();
  p.seed = 42;
  Sampler s(p);
  ReferenceDraw ref(42);
  std::vector<std::pair<int32_t, float>> cands;
  for (size_t i = 0; i < logits.size(); ++i) cands.emplace_back(static_cast<int32_t>(i), logits[i]);
  std::vector<int32_t> got, want;
  std::map<int32_t, int> count;
  for (int i = 0; i < 400; ++i) {
    got.push_back(s.Sample(logits.data(), static_cast<int32_t>(logits.size())));
    want.push_back(ref.Pick(cands));
    ++count[got.back()];
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(count.size(), logits.size());  // real draws, every token now and then
  EXPECT_GT(count[1], count[0]);
  // The seed is a uint32 in llama-server: only its low 32 bits count.
  p.seed = (uint64_t{1} << 32) + 42;
  Sampler high(p);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(high.Sample(logits.data(), 6), got[i]) << i;
  p.seed = 43;
  Sampler other(p);
  std::vector<int32_t> other_draws;
  for (int i = 0; i < 50; ++i) other_draws.push_back(other.Sample(logits.data(), 6));
  EXPECT_NE(other_draws, std::vector<int32_t>(got.begin(), got.begin() + 50));
}

// The default chain against the reference above, on random logits, with steps where one token dominates
// so much that it alone survives (no random number used then: the later draws stay in step).
TEST(Sampler, DefaultChainDrawsAsLlamaServer) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  int distinct = 0, singles = 0;
  for (const uint32_t seed : {42u, 7u, 123456789u, 0xFFFFFFFEu}) {
    for (const int32_t n_vocab : {512, 5000}) {
      SamplingParams p;  // llama-server's defaults: top-k 40, top-p 0.95, min-p 0.05, temperature 0.8
      p.seed = seed;
      Sampler s(p);
      ReferenceDraw ref(seed);
      std::set<int32_t> seen;
      for (int step = 0; step < 40; ++step) {
        std::vector<float> logits(n_vocab);
        for (float& l : logits) l = normal(gen);
        if (step % 5 == 3) logits[step] += 40.0f;  // this token alone passes min-p
        const auto chain = ReferenceDefaultChain(logits, p);
        singles += chain.size() == 1;
        const int32_t want = ref.Pick(chain);
        ASSERT_EQ(s.Sample(logits.data(), n_vocab), want) << "seed " << seed << " step " << step;
        seen.insert(want);
      }
      distinct += static_cast<int>(seen.size());
    }
  }
  EXPECT_GE(singles, 4 * 2 * 8);
  EXPECT_GT(distinct, 8 * 20);  // real draws, not one token over and over
}

// Min-p on an unsorted array (top-k and top-p off) keeps the survivors in id order, and the draw walks
// them in that order: the cumulative sums, and so the picks, differ from a walk in logit order.
TEST(Sampler, MinPOnAnUnsortedArrayKeepsIdOrder) {
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  SamplingParams p = Plain();
  p.min_p = 0.2f;
  p.seed = 42;
  Sampler s(p);
  ReferenceDraw ref(42);
  int sizes = 0;
  for (int step = 0; step < 200; ++step) {
    std::vector<float> logits(64);
    for (float& l : logits) l = normal(gen);
    float max = logits[0];
    for (float l : logits) max = std::max(max, l);
    std::vector<std::pair<int32_t, float>> kept;
    for (int32_t i = 0; i < 64; ++i) {
      if (logits[i] >= max + std::log(p.min_p)) kept.emplace_back(i, logits[i]);
    }
    sizes += static_cast<int>(kept.size());
    ASSERT_EQ(s.Sample(logits.data(), 64), ref.Pick(kept)) << "step " << step;
  }
  EXPECT_GT(sizes, 200 * 3);
}

// Top-p alone on a large unsorted vocabulary: probabilities from a float softmax summed in id order, then
// the shortest prefix in logit order whose float running sum reaches top_p; flat logits need more than the
// first few hundred tokens, peaked ones fewer.
TEST(Sampler, TopPOnAnUnsortedVocabulary) {
  std::mt19937 gen(5);
  for (const float spread : {3.0f, 0.3f}) {
    std::normal_distribution<float> normal(0.0f, spread);
    SamplingParams p = Plain();
    p.top_p = 0.9f;
    p.seed = 42;
    Sampler s(p);
    ReferenceDraw ref(42);
    size_t longest = 0;
    for (int step = 0; step < 30; ++step) {
      std::vector<float> logits(3000);
      for (float& l : logits) l = normal(gen);
      float max = logits[0], sum = 0;
      for (float l : logits) max = std::max(max, l);
      std::vector<float> prob;
      for (float l : logits) {
        prob.push_back(std::exp(l - max));
        sum += prob.back();
      }
      std::vector<int32_t> order(logits.size());
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
      std::vector<std::pair<int32_t, float>> kept;
      float cum = 0;
      for (int32_t id : order) {
        kept.emplace_back(id, logits[id]);
        cum += prob[id] / sum;
        if (cum >= p.top_p) break;
      }
      longest = std::max(longest, kept.size());
      ASSERT_EQ(s.Sample(logits.data(), 3000), ref.Pick(kept)) << "spread " << spread << " step " << step;
    }
    if (spread < 1.0f) EXPECT_GT(longest, 256u);  // the walk went past the first sorted block
  }
}

TEST(Sampler, TopCandidatesGivesTheDrawsDistribution) {
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f, -1.0f, -9.0f};
  SamplingParams p = Plain();
  p.temperature = 0.5f;
  p.top_k = 3;
  Sampler s(p);
  const auto got = Survivors(s, logits);
  ASSERT_EQ(Ids(got), (std::set<int32_t>{0, 1, 2}));
  const double z = std::exp(4.0) + std::exp(2.0) + 1.0;  // logits / 0.5 over the top 3
  EXPECT_NEAR(got.at(0), std::exp(4.0) / z, 1e-6);
  EXPECT_NEAR(got.at(1), std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(got.at(2), 1.0 / z, 1e-6);
  std::vector<std::pair<int32_t, float>> top2;
  s.TopCandidates(2, &top2);
  ASSERT_EQ(top2.size(), 2u);
  EXPECT_EQ(top2[0].first, 0);
  EXPECT_EQ(top2[1].first, 1);

  p.temperature = 0;  // greedy: llama-server reports the pick with probability 1
  Sampler g(p);
  EXPECT_EQ(g.Sample(logits.data(), 5), 0);
  g.TopCandidates(5, &top2);
  ASSERT_EQ(top2.size(), 1u);
  EXPECT_EQ(top2[0], (std::pair<int32_t, float>{0, 1.0f}));

  p = Plain();
  p.logit_bias = {{0, kBan}};
  Sampler b(p);
  EXPECT_EQ(Ids(Survivors(b, logits)), (std::set<int32_t>{1, 2, 3, 4}));  // probability 0 is left out
}

// probs 0.5, 0.2, 0.2, 0.1: entropy 1.2206 nats; |surprise - entropy| = 0.527, 0.389, 0.389, 1.082, so the
// typical order is 1, 2, 0, 3 with cumulative mass 0.2, 0.4, 0.9, 1.
TEST(Sampler, TypicalKeepsTokensNearTheEntropy) {
  const auto logits = LogProbs({0.5, 0.2, 0.2, 0.1});
  SamplingParams p = Plain();
  p.typical_p = 0.3f;
  Sampler s(p);
  const auto got = Survivors(s, logits);
  EXPECT_EQ(Ids(got), (std::set<int32_t>{1, 2}));  // the most likely token is not typical
  EXPECT_NEAR(got.at(1), 0.5, 1e-6);
  p.typical_p = 0.5f;
  Sampler s2(p);
  EXPECT_EQ(Ids(Survivors(s2, logits)), (std::set<int32_t>{0, 1, 2}));
  p.typical_p = 1.0f;  // off
  Sampler s3(p);
  EXPECT_EQ(Ids(Survivors(s3, logits)).size(), 4u);
  // Greedy picks within the chain's survivors, as llama-server does: not token 0 here.
  p.typical_p = 0.3f;
  p.temperature = 0;
  EXPECT_EQ(Sampler(p).Sample(logits.data(), 4), 1);
}

// logits 4, 3, 0 x 6: mean 0.875, sigma 1.536.
TEST(Sampler, TopNSigmaKeepsLogitsWithinNSigmaOfTheTop) {
  std::vector<float> logits = {4, 3, 0, 0, 0, 0, 0, 0};
  SamplingParams p = Plain();
  p.top_n_sigma = 1.0f;  // floor 2.46
  Sampler a(p);
  EXPECT_EQ(Ids(Survivors(a, logits)), (std::set<int32_t>{0, 1}));
  p.top_n_sigma = 0.5f;  // floor 3.23
  Sampler b(p);
  EXPECT_EQ(Ids(Survivors(b, logits)), (std::set<int32_t>{0}));
  p.top_n_sigma = 3.0f;  // floor -0.61
  Sampler c(p);
  EXPECT_EQ(Ids(Survivors(c, logits)).size(), 8u);
  // A banned token counts neither for the mean nor for sigma.
  logits.push_back(-1000.0f);
  p.top_n_sigma = 1.0f;
  p.logit_bias = {{8, kBan}};
  Sampler d(p);
  EXPECT_EQ(Ids(Survivors(d, logits)), (std::set<int32_t>{0, 1}));
  p.top_n_sigma = -1.0f;  // off
  Sampler e(p);
  EXPECT_EQ(Ids(Survivors(e, logits)).size(), 8u);
}

TEST(Sampler, XtcRemovesTopTokensButTheLeastLikelyOfThem) {
  const auto logits = LogProbs({0.4, 0.3, 0.2, 0.06, 0.04});
  SamplingParams p = Plain();
  p.xtc_probability = 1.0f;
  p.xtc_threshold = 0.1f;
  Sampler a(p);
  const auto got = Survivors(a, logits);
  EXPECT_EQ(Ids(got), (std::set<int32_t>{2, 3, 4}));
  EXPECT_NEAR(got.at(2), 0.2 / 0.3, 1e-5);
  p.xtc_threshold = 0.25f;  // 0.4 and 0.3 are above: 0 goes
  Sampler b(p);
  EXPECT_EQ(Ids(Survivors(b, logits)), (std::set<int32_t>{1, 2, 3, 4}));
  p.xtc_threshold = 0.35f;  // only one token above: nothing goes
  Sampler c(p);
  EXPECT_EQ(Ids(Survivors(c, logits)).size(), 5u);
  p.xtc_threshold = 0.6f;  // > 0.5: off
  Sampler d(p);
  EXPECT_EQ(Ids(Survivors(d, logits)).size(), 5u);
  // With probability 0.5 some steps cut and some do not.
  p.xtc_threshold = 0.1f;
  p.xtc_probability = 0.5f;
  Sampler e(p);
  int cut = 0;
  for (int i = 0; i < 200; ++i) cut += Survivors(e, logits).size() == 3;
  EXPECT_GT(cut, 60);
  EXPECT_LT(cut, 140);
}

TEST(Sampler, OrderOfTheChainMatters) {
  const auto logits = LogProbs({0.4, 0.3, 0.2, 0.06, 0.04});
  SamplingParams p = Plain();
  p.xtc_probability = 1.0f;
  p.xtc_threshold = 0.1f;
  p.top_k = 2;
  p.samplers = {SamplerStage::kTopK, SamplerStage::kXtc, SamplerStage::kTemperature};
  Sampler a(p);  // top-k keeps 0, 1 (0.57, 0.43: both above 0.1), then XTC leaves 1
  EXPECT_EQ(Ids(Survivors(a, logits)), (std::set<int32_t>{1}));
  p.samplers = {SamplerStage::kXtc, SamplerStage::kTopK, SamplerStage::kTemperature};
  Sampler b(p);  // XTC leaves 2, 3, 4, then top-k keeps 2, 3
  EXPECT_EQ(Ids(Survivors(b, logits)), (std::set<int32_t>{2, 3}));

  // Temperature before min-p flattens what min-p sees: 0.5 of the top keeps {0, 1} untempered, all at T = 4.
  const auto three = LogProbs({0.5, 0.3, 0.2});
  SamplingParams q = Plain();
  q.min_p = 0.5f;
  q.temperature = 4.0f;
  q.samplers = {SamplerStage::kMinP, SamplerStage::kTemperature};
  Sampler c(q);
  EXPECT_EQ(Ids(Survivors(c, three)), (std::set<int32_t>{0, 1}));
  q.samplers = {SamplerStage::kTemperature, SamplerStage::kMinP};
  Sampler d(q);
  const auto got = Survivors(d, three);
  EXPECT_EQ(Ids(got), (std::set<int32_t>{0, 1, 2}));
  const double z = std::pow(0.5, 0.25) + std::pow(0.3, 0.25) + std::pow(0.2, 0.25);
  EXPECT_NEAR(got.at(0), std::pow(0.5, 0.25) / z, 1e-5);

  // A stage left out of the list does not run; without "temperature" the draw is at temperature 1.
  q.samplers = {SamplerStage::kTemperature};
  Sampler e(q);
  EXPECT_EQ(Ids(Survivors(e, three)).size(), 3u);
  q.samplers = {};
  q.temperature = 0;
  Sampler f(q);
  const auto untempered = Survivors(f, three);
  EXPECT_NEAR(untempered.at(2), 0.2, 1e-5);
}

TEST(Sampler, SameSeedSameTokensEveryStageOn) {
  SamplingParams p;
  p.top_k = 50;
  p.typical_p = 0.95f;
  p.top_n_sigma = 2.5f;
  p.xtc_probability = 0.5f;
  p.xtc_threshold = 0.05f;
  p.dry_multiplier = 0.8f;
  p.repeat_penalty = 1.1f;
  auto run = [&p](uint64_t seed) {
    SamplingParams q = p;
    q.seed = seed;
    Sampler s(q);
    std::mt19937 gen(3);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<int32_t> out;
    std::vector<float> logits(500);
    for (int i = 0; i < 60; ++i) {
      for (float& l : logits) l = normal(gen);
      out.push_back(s.Sample(logits.data(), 500));
      s.Accept(out.back());
    }
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

// Mirostat 2 with tau 1: mu starts at 2, so only tokens with -log2 p <= 2 (p >= 0.25) stay: {0, 1} of
// 0.5, 0.3, 0.15, 0.05, renormalised to 0.625, 0.375; mu then moves by -eta * (surprise - tau).
TEST(Sampler, Mirostat2KeepsTokensWithinTheSurpriseBound) {
  const auto logits = LogProbs({0.5, 0.3, 0.15, 0.05});
  SamplingParams p = Plain();
  p.mirostat = 2;
  p.mirostat_tau = 1.0f;
  p.mirostat_eta = 0.1f;
  p.top_k = 1;              // ignored under mirostat, as in llama.cpp
  p.repeat_penalty = 5.0f;  // so are the penalties
  std::set<int32_t> picks;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    p.seed = seed;
    Sampler s(p);
    s.Accept(0);
    EXPECT_FLOAT_EQ(s.mirostat_mu(), 2.0f);
    const auto got = Survivors(s, logits);
    ASSERT_EQ(Ids(got), (std::set<int32_t>{0, 1}));
    EXPECT_NEAR(got.at(0), 0.625, 1e-6);
    std::vector<std::pair<int32_t, float>> top;
    s.TopCandidates(kAll, &top);
    // Which token was drawn: the one whose surprise explains the new mu.
    const double mu0 = 2.0 - 0.1 * (-std::log2(0.625) - 1.0);
    const double mu1 = 2.0 - 0.1 * (-std::log2(0.375) - 1.0);
    const double mu = s.mirostat_mu();
    ASSERT_TRUE(std::fabs(mu - mu0) < 1e-5 || std::fabs(mu - mu1) < 1e-5) << mu;
    picks.insert(std::fabs(mu - mu0) < 1e-5 ? 0 : 1);
  }
  EXPECT_EQ(picks, (std::set<int32_t>{0, 1}));

  // A low bound keeps only the top token; mu carries over to the next step of the same request.
  p.mirostat_tau = 0.1f;  // mu = 0.2: only p >= 0.87 would pass, so the top token alone
  Sampler s(p);
  EXPECT_EQ(s.Sample(logits.data(), 4), 0);
  const float mu_after = s.mirostat_mu();
  EXPECT_NEAR(mu_after, 0.2f - 0.1f * (0.0f - 0.1f), 1e-6);  // surprise of a sole survivor is 0
  s.Sample(logits.data(), 4);
  EXPECT_NEAR(s.mirostat_mu(), mu_after + 0.01f, 1e-6);
}

// Zipf logits (p_i ~ (i+1)^-1.5) make the fitted exponent exactly 1.5; the kept count follows
// k = (eps * 2^mu / (1 - N^-eps))^(1/s) with eps = s - 1 and mu = 2 tau.
TEST(Sampler, Mirostat1TruncatesToTheZipfEstimate) {
  const int32_t n = 1000;
  const double s_exp = 1.5;
  std::vector<float> logits(n);
  for (int32_t i = 0; i < n; ++i) logits[i] = static_cast<float>(-s_exp * std::log(i + 1.0));
  SamplingParams p = Plain();
  p.mirostat = 1;
  p.mirostat_tau = 5.0f;
  Sampler s(p);
  const auto got = Survivors(s, logits);
  const double eps = s_exp - 1, mu = 10.0;
  const double k = std::pow(eps * std::pow(2.0, mu) / (1 - std::pow(n, -eps)), 1 / s_exp);
  EXPECT_NEAR(static_cast<double>(got.size()), std::floor(k), 1.0);
  EXPECT_EQ(*Ids(got).rbegin(), static_cast<int32_t>(got.size()) - 1);  // the top k, nothing else
  // mu moved by the drawn token's surprise (over the kept tokens).
  double lo = 1e9, hi = -1e9;
  for (const auto& [id, q] : got) {
    const double m = mu - 0.1 * (-std::log2(q) - 5.0);
    lo = std::min(lo, m);
    hi = std::max(hi, m);
  }
  EXPECT_GE(s.mirostat_mu(), lo - 1e-4);
  EXPECT_LE(s.mirostat_mu(), hi + 1e-4);
  EXPECT_NE(s.mirostat_mu(), 10.0f);
}

TEST(Sampler, StageNamesAndCodesAreLlamaServers) {
  EXPECT_EQ(SamplerStageFromName("top_k"), SamplerStage::kTopK);
  EXPECT_EQ(SamplerStageFromName("Top-K"), SamplerStage::kTopK);
  EXPECT_EQ(SamplerStageFromName("topk"), SamplerStage::kTopK);
  EXPECT_EQ(SamplerStageFromName("nucleus"), SamplerStage::kTopP);
  EXPECT_EQ(SamplerStageFromName("typ"), SamplerStage::kTypicalP);
  EXPECT_EQ(SamplerStageFromName("typ-p"), SamplerStage::kTypicalP);
  EXPECT_EQ(SamplerStageFromName("temp"), SamplerStage::kTemperature);
  EXPECT_EQ(SamplerStageFromName("top-n-sigma"), SamplerStage::kTopNSigma);
  EXPECT_EQ(SamplerStageFromName("PENALTIES"), SamplerStage::kPenalties);
  EXPECT_EQ(SamplerStageFromName("typical_p"), std::nullopt);
  EXPECT_EQ(SamplerStageFromName("infill"), std::nullopt);
  std::string codes, names;
  for (SamplerStage s : SamplingParams().samplers) {
    codes += SamplerStageChar(s);
    names += std::string(SamplerStageName(s)) + ";";
    EXPECT_EQ(SamplerStageFromChar(SamplerStageChar(s)), s);
  }
  EXPECT_EQ(codes, "edskypmxt");  // llama-server's --sampling-seq default
  EXPECT_EQ(names, "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature;");
  EXPECT_EQ(SamplerStageFromChar('q'), std::nullopt);
}

}  // namespace
}  // namespace lazyslot
