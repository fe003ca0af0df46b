// Sampler: logit_bias, greedy and random draws, the default chain against the sampler it replaced (same
// draws, bit for bit), each of llama-server's samplers on hand-made logits, the chain order, mirostat,
// TopCandidates and the stage names. DRY has its own file (sampler_dry_test.cpp).
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <unordered_map>
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

// The sampler as it was before the chain became configurable (logit bias -> penalties -> top-k -> top-p ->
// min-p -> temperature -> draw), kept here as the reference the default chain must reproduce exactly.
class OldSampler {
 public:
  explicit OldSampler(const SamplingParams& params) : p_(params), rng_(params.seed) {}
  void Accept(int32_t token) {
    if (p_.repeat_last_n == 0) return;
    recent_.push_back(token);
    ++counts_[token];
    if (p_.repeat_last_n > 0 && static_cast<int32_t>(recent_.size()) > p_.repeat_last_n) {
      const int32_t old = recent_.front();
      recent_.pop_front();
      if (--counts_[old] == 0) counts_.erase(old);
    }
  }
  int32_t Sample(const float* logits, int32_t n_vocab) {
    const bool penalize = !counts_.empty() && (p_.repeat_penalty != 1.0f || p_.frequency_penalty != 0.0f ||
                                               p_.presence_penalty != 0.0f);
    if (p_.temperature <= 0.0f && !penalize && p_.logit_bias.empty()) return Sampler::Argmax(logits, n_vocab);
    cand_.resize(n_vocab);
    for (int32_t i = 0; i < n_vocab; ++i) cand_[i] = {logits[i], i};
    for (const auto& [tok, bias] : p_.logit_bias) {
      if (tok >= 0 && tok < n_vocab) cand_[tok].first += bias;
    }
    if (penalize) {
      for (const auto& [tok, count] : counts_) {
        if (tok < 0 || tok >= n_vocab) continue;
        float& l = cand_[tok].first;
        l = l <= 0 ? l * p_.repeat_penalty : l / p_.repeat_penalty;
        l -= static_cast<float>(count) * p_.frequency_penalty + p_.presence_penalty;
      }
    }
    auto by_logit = [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    if (p_.temperature <= 0.0f) return std::min_element(cand_.begin(), cand_.end(), by_logit)->second;
    size_t n = cand_.size();
    if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < n) {
      std::partial_sort(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), by_logit);
      n = p_.top_k;
    } else {
      std::sort(cand_.begin(), cand_.end(), by_logit);
    }
    if (std::isinf(cand_[0].first) && cand_[0].first < 0) return cand_[0].second;
    std::vector<float> prob(n);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += prob[i] = std::exp(cand_[i].first - cand_[0].first);
    for (auto& q : prob) q = static_cast<float>(q / sum);
    if (p_.top_p < 1.0f) {
      double cum = 0;
      size_t keep = n;
      for (size_t i = 0; i < n; ++i) {
        cum += prob[i];
        if (cum >= p_.top_p) {
          keep = i + 1;
          break;
        }
      }
      n = std::max<size_t>(1, keep);
    }
    if (p_.min_p > 0.0f) {
      const float threshold = prob[0] * p_.min_p;
      size_t keep = 1;
      while (keep < n && prob[keep] >= threshold) ++keep;
      n = keep;
    }
    std::vector<double> w(n);
    for (size_t i = 0; i < n; ++i) w[i] = std::exp((cand_[i].first - cand_[0].first) / p_.temperature);
    std::discrete_distribution<size_t> dist(w.begin(), w.end());
    return cand_[dist(rng_)].second;
  }

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
  std::deque<int32_t> recent_;
  std::unordered_map<int32_t, int32_t> counts_;
  std::vector<std::pair<float, int32_t>> cand_;
};

TEST(Sampler, DefaultChainDrawsExactlyAsBefore) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int32_t kTopK[] = {0, 1, 5, 40, 100000};
  const float kTopP[] = {1.0f, 0.95f, 0.5f};
  const float kMinP[] = {0.0f, 0.05f, 0.3f};
  const float kTemp[] = {0.0f, 0.5f, 0.8f, 1.7f};
  int cases = 0, distinct_tokens = 0;
  for (int c = 0; c < 120; ++c) {
    SamplingParams p;  // new fields at their defaults: off
    p.top_k = kTopK[c % 5];
    p.top_p = kTopP[(c / 5) % 3];
    p.min_p = kMinP[(c / 15) % 3];
    p.temperature = kTemp[(c / 45 + c) % 4];
    p.seed = 1000 + c;
    if (c % 3 == 1) p.repeat_penalty = 1.3f;
    if (c % 4 == 2) p.frequency_penalty = 0.4f, p.presence_penalty = 0.2f;
    if (c % 7 == 3) p.repeat_last_n = 0;
    if (c % 5 == 4) p.logit_bias = {{3, kBan}, {10, 2.5f}};
    if (c % 11 == 5) p.logit_bias = {{0, kBan}, {1, kBan}};
    const int32_t n_vocab = c % 2 ? 300 : 2000;
    Sampler now(p);
    OldSampler before(p);
    std::set<int32_t> seen;
    for (int step = 0; step < 24; ++step) {
      std::vector<float> logits(n_vocab);
      for (float& l : logits) l = normal(gen);
      const int32_t a = now.Sample(logits.data(), n_vocab);
      const int32_t b = before.Sample(logits.data(), n_vocab);
      ASSERT_EQ(a, b) << "case " << c << " step " << step;
      seen.insert(a);
      now.Accept(a);
      before.Accept(b);
    }
    distinct_tokens += static_cast<int>(seen.size());
    ++cases;
  }
  EXPECT_EQ(cases, 120);
  EXPECT_GT(distinct_tokens, 120 * 3);  // the comparison covered real draws, not one token over and over
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
