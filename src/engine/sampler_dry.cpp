// DRY repetition penalty: breaker tokens from the vocabulary, and per step a Z-function over the recent
// tokens (newest first) that gives, for every earlier position, how long the text ending there matches the
// text ending now; the token that followed such a position would extend that repeat.
#include "engine/sampler_dry.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/tokenizer.h"

namespace lazyslot {
namespace {

constexpr size_t kMaxBreakerBytes = 40;
constexpr size_t kMaxBreakerTail = 20;
constexpr float kLogFloatMax = 88.7228391f;  // ln(FLT_MAX): bounds the exponent so base^e stays finite

void AddUnique(std::vector<std::vector<int32_t>>* tails, std::vector<int32_t> tail) {
  if (std::find(tails->begin(), tails->end(), tail) == tails->end()) tails->push_back(std::move(tail));
}

}  // namespace

DryBreakers ResolveDryBreakers(const Tokenizer& tok, const std::vector<std::string>& breakers) {
  DryBreakers out;
  std::vector<std::string> strs;
  for (const std::string& b : breakers) {
    if (b.empty()) continue;
    strs.push_back(b.substr(0, kMaxBreakerBytes));
  }
  if (strs.empty()) return out;
  // Tokens of each breaker's remainder after its first `k` bytes, computed on first use.
  std::vector<std::vector<std::vector<int32_t>>> rest(strs.size());
  std::vector<std::vector<bool>> rest_done(strs.size());
  for (size_t s = 0; s < strs.size(); ++s) {
    rest[s].resize(strs[s].size());
    rest_done[s].assign(strs[s].size(), false);
  }
  std::vector<int32_t> one(1);
  const int32_t n_vocab = tok.n_vocab();
  for (int32_t id = 0; id < n_vocab; ++id) {
    one[0] = id;
    const std::string text = tok.Detokenize(one, /*remove_special=*/false, /*render_special=*/true);
    if (text.empty()) continue;
    for (size_t s = 0; s < strs.size(); ++s) {
      const std::string& b = strs[s];
      if (text.find(b) != std::string::npos) {
        AddUnique(&out[id], {});
        continue;
      }
      // Every suffix of the token's text that is a proper prefix of the breaker.
      const size_t max_k = std::min(text.size(), b.size() - 1);
      for (size_t k = 1; k <= max_k; ++k) {
        if (text.compare(text.size() - k, k, b, 0, k) != 0) continue;
        if (!rest_done[s][k]) {
          rest_done[s][k] = true;
          Result<std::vector<int32_t>> ids = tok.Tokenize(b.substr(k), /*add_special=*/false,
                                                          /*parse_special=*/false);
          if (ids.ok()) {
            rest[s][k] = std::move(*ids);
            if (rest[s][k].size() > kMaxBreakerTail) rest[s][k].resize(kMaxBreakerTail);
          }
        }
        if (!rest[s][k].empty()) AddUnique(&out[id], rest[s][k]);
      }
    }
  }
  return out;
}

DryPenalty::DryPenalty(float multiplier, float base, int32_t allowed_length, int32_t last_n,
                       DryBreakers breakers)
    : multiplier_(multiplier),
      base_(base),
      allowed_(allowed_length),
      last_n_(last_n),
      breakers_(std::move(breakers)) {}

void DryPenalty::Accept(int32_t token) {
  hist_.push_back(token);
  if (last_n_ > 0 && hist_.size() > 2 * static_cast<size_t>(last_n_) + 64) {
    hist_.erase(hist_.begin(), hist_.end() - last_n_);
  }
}

bool DryPenalty::IsWholeBreaker(int32_t token) const {
  auto it = breakers_.find(token);
  if (it == breakers_.end()) return false;
  for (const auto& tail : it->second) {
    if (tail.empty()) return true;
  }
  return false;
}

bool DryPenalty::Compute(std::vector<std::pair<int32_t, float>>* out) {
  out->clear();
  const size_t n = last_n_ < 0 ? hist_.size() : std::min(hist_.size(), static_cast<size_t>(last_n_));
  if (n <= static_cast<size_t>(std::max(allowed_, 0))) return false;
  rev_.resize(n);
  for (size_t j = 0; j < n; ++j) rev_[j] = hist_[hist_.size() - 1 - j];

  // The most recent breaker (rev_[i] its head, its tail the tokens after it, i.e. rev_[i-1], rev_[i-2],
  // ...) bounds every match to the tokens after it.
  size_t limit = n;
  for (size_t i = 0; i < n; ++i) {
    auto it = breakers_.find(rev_[i]);
    if (it == breakers_.end()) continue;
    int64_t longest = -1;
    for (const auto& tail : it->second) {
      const int64_t len = static_cast<int64_t>(tail.size());
      if (len <= longest || tail.size() > i) continue;
      bool match = true;
      for (size_t o = 0; o < tail.size() && match; ++o) match = tail[o] == rev_[i - 1 - o];
      if (match) longest = len;
    }
    if (longest >= 0) {
      limit = i - static_cast<size_t>(longest);
      break;
    }
  }
  if (static_cast<int64_t>(limit) < allowed_) return false;

  // Z-function of rev_: the window [box_l, box_r) is the rightmost known match of a prefix.
  z_.assign(n, 0);
  z_[0] = static_cast<int32_t>(n);
  size_t box_l = 0, box_r = 0;
  for (size_t k = 1; k < n; ++k) {
    size_t len = 0;
    if (k < box_r) len = std::min(box_r - k, static_cast<size_t>(z_[k - box_l]));
    while (k + len < n && rev_[len] == rev_[k + len]) ++len;
    z_[k] = static_cast<int32_t>(len);
    if (k + len > box_r) {
      box_l = k;
      box_r = k + len;
    }
  }

  // rev_[k..k+z) equals the newest z tokens, so rev_[k-1], which followed it, would make the repeat longer.
  ends_.clear();
  for (size_t k = 1; k < n; ++k) {
    const int32_t len = static_cast<int32_t>(std::min(static_cast<size_t>(z_[k]), limit));
    if (len >= allowed_) ends_.emplace_back(rev_[k - 1], len);
  }
  if (ends_.empty()) return true;
  std::sort(ends_.begin(), ends_.end(), [](const auto& a, const auto& b) {
    return a.first < b.first || (a.first == b.first && a.second > b.second);
  });

  int max_exponent = 0;
  if (base_ > 1.000001f) max_exponent = static_cast<int>(kLogFloatMax / std::log(base_));
  for (size_t i = 0; i < ends_.size(); ++i) {
    if (i > 0 && ends_[i].first == ends_[i - 1].first) continue;  // the longest repeat comes first
    if (IsWholeBreaker(ends_[i].first)) continue;
    int exponent = ends_[i].second - allowed_;
    if (max_exponent > 0 && exponent > max_exponent) exponent = max_exponent;
    const float penalty = static_cast<float>(multiplier_ * std::pow(base_, exponent));
    out->emplace_back(ends_[i].first, penalty);
  }
  return true;
}

}  // namespace lazyslot
