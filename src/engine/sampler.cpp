// Sampler implementation. Candidates are kept as (logit, id) and narrowed step by step.
#include "engine/sampler.h"

#include <algorithm>
#include <cmath>

namespace lazyslot {

Sampler::Sampler(const SamplingParams& params) : p_(params), rng_(params.seed) {}

int32_t Sampler::Argmax(const float* logits, int32_t n_vocab) {
  int32_t best = 0;
  for (int32_t i = 1; i < n_vocab; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

void Sampler::ApplyBias(float* logits, int32_t n_vocab) const {
  for (const auto& [tok, bias] : p_.logit_bias) {
    if (tok >= 0 && tok < n_vocab) logits[tok] += bias;
  }
}

void Sampler::Accept(int32_t token) {
  if (p_.repeat_last_n == 0) return;
  recent_.push_back(token);
  ++counts_[token];
  if (p_.repeat_last_n > 0 && static_cast<int32_t>(recent_.size()) > p_.repeat_last_n) {
    const int32_t old = recent_.front();
    recent_.pop_front();
    if (--counts_[old] == 0) counts_.erase(old);
  }
}

int32_t Sampler::Sample(const float* logits, int32_t n_vocab) {
  const bool penalize = !counts_.empty() && (p_.repeat_penalty != 1.0f || p_.frequency_penalty != 0.0f ||
                                             p_.presence_penalty != 0.0f);
  if (p_.temperature <= 0.0f && !penalize && p_.logit_bias.empty()) return Argmax(logits, n_vocab);

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
  auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  if (p_.temperature <= 0.0f) {
    return std::min_element(cand_.begin(), cand_.end(), by_logit)->second;
  }

  size_t n = cand_.size();
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < n) {
    std::partial_sort(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), by_logit);
    n = p_.top_k;
  } else {
    std::sort(cand_.begin(), cand_.end(), by_logit);
  }
  // Every token banned by logit_bias: there is nothing to draw from, so the least banned one is taken.
  if (std::isinf(cand_[0].first) && cand_[0].first < 0) return cand_[0].second;
  // Softmax over the remaining candidates (sorted, so cand_[0] is the max).
  std::vector<float> prob(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += prob[i] = std::exp(cand_[i].first - cand_[0].first);
  for (auto& p : prob) p = static_cast<float>(p / sum);
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
  // Temperature on the surviving logits, then draw.
  std::vector<double> w(n);
  for (size_t i = 0; i < n; ++i) w[i] = std::exp((cand_[i].first - cand_[0].first) / p_.temperature);
  std::discrete_distribution<size_t> dist(w.begin(), w.end());
  return cand_[dist(rng_)].second;
}

}  // namespace lazyslot
