// TokenLogprobs: log-softmax of the chosen token and a top-n selection kept sorted by insertion (n <= 20,
// so insertion into a short sorted list beats a heap or a partial sort of the whole vocabulary).
#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lazyslot {
namespace {

float FiniteLog(double log_value) {
  return std::isfinite(log_value) ? static_cast<float>(log_value) : std::numeric_limits<float>::lowest();
}

}  // namespace

void TokenLogprobs(const float* logits, int32_t n_vocab, TokenId chosen, int32_t n_top, float* chosen_logprob,
                   std::vector<TokenLogprob>* top) {
  float max = -std::numeric_limits<float>::infinity();
  for (int32_t i = 0; i < n_vocab; ++i) max = std::max(max, logits[i]);
  double sum = 0;
  for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  const double log_z = max + std::log(sum);
  if (chosen >= 0 && chosen < n_vocab) *chosen_logprob = FiniteLog(logits[chosen] - log_z);
  top->clear();
  n_top = std::min(n_top, n_vocab);
  if (n_top <= 0) return;
  // (logit, id), best first; a candidate enters when it beats the current last.
  std::vector<std::pair<float, TokenId>> best;
  best.reserve(n_top + 1);
  for (int32_t i = 0; i < n_vocab; ++i) {
    const float l = logits[i];
    if (static_cast<int32_t>(best.size()) == n_top && !(l > best.back().first)) continue;
    auto at = std::upper_bound(best.begin(), best.end(), l,
                               [](float v, const std::pair<float, TokenId>& e) { return v > e.first; });
    best.insert(at, {l, i});
    if (static_cast<int32_t>(best.size()) > n_top) best.pop_back();
  }
  top->reserve(best.size());
  for (const auto& [l, id] : best) top->push_back({id, FiniteLog(l - log_z)});
}

void SamplerProbs(const Sampler& sampler, TokenId chosen, int32_t n_top, float* chosen_logprob,
                  std::vector<TokenLogprob>* top) {
  std::vector<std::pair<int32_t, float>> cands;
  sampler.TopCandidates(std::max<int32_t>(n_top, 1), &cands);
  auto find = [&](const std::vector<std::pair<int32_t, float>>& list) {
    for (const auto& [id, p] : list) {
      if (id == chosen) return p;
    }
    return -1.0f;
  };
  float p = find(cands);
  if (p < 0) {  // drawn from outside the top n: look through every survivor (rare, and only here)
    std::vector<std::pair<int32_t, float>> all;
    sampler.TopCandidates(std::numeric_limits<int>::max(), &all);
    p = std::max(0.0f, find(all));
  }
  *chosen_logprob = FiniteLog(std::log(static_cast<double>(p)));
  top->clear();
  for (int32_t i = 0; i < n_top && i < static_cast<int32_t>(cands.size()); ++i) {
    top->push_back({cands[i].first, FiniteLog(std::log(static_cast<double>(cands[i].second)))});
  }
}

}  // namespace lazyslot
