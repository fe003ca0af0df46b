// Sampler implementation. Candidates are kept as (logit, id) and narrowed stage by stage; probabilities are
// computed only when a stage needs them, and a temperature is divided into the logits only when a later
// stage reads them (the draw folds it into its weights). The default chain does the same float operations,
// in the same order, as the sampler before the chain became configurable, so its draws are unchanged.
#include "engine/sampler.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/sampler_dry.h"
#include "tokenizer/tokenizer.h"

namespace lazyslot {
namespace {

constexpr int kMirostatM = 100;  // tokens Mirostat 1 fits its Zipf exponent on (llama.cpp's m)

// A function object rather than a function, so that the sorts inline it.
struct ByLogitT {
  bool operator()(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) const {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  }
};
constexpr ByLogitT ByLogit;

bool IsBanned(float logit) { return std::isinf(logit) && logit < 0; }

struct StageInfo {
  SamplerStage stage;
  std::string_view name;
  char code;
};

constexpr StageInfo kStages[] = {
    {SamplerStage::kPenalties, "penalties", 'e'},
    {SamplerStage::kDry, "dry", 'd'},
    {SamplerStage::kTopNSigma, "top_n_sigma", 's'},
    {SamplerStage::kTopK, "top_k", 'k'},
    {SamplerStage::kTypicalP, "typ_p", 'y'},
    {SamplerStage::kTopP, "top_p", 'p'},
    {SamplerStage::kMinP, "min_p", 'm'},
    {SamplerStage::kXtc, "xtc", 'x'},
    {SamplerStage::kTemperature, "temperature", 't'},
};

// Whether a stage does anything with these parameters (an off stage is dropped from the chain).
bool StageOn(SamplerStage s, const SamplingParams& p) {
  switch (s) {
    case SamplerStage::kPenalties:
      return p.repeat_last_n != 0 &&
             (p.repeat_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f);
    case SamplerStage::kDry:
      return p.dry_multiplier != 0.0f && p.dry_base >= 1.0f && p.dry_penalty_last_n != 0;
    case SamplerStage::kTopNSigma:
      return p.top_n_sigma > 0.0f;
    case SamplerStage::kTopK:
      return p.top_k > 0;
    case SamplerStage::kTypicalP:
      return p.typical_p < 1.0f;
    case SamplerStage::kTopP:
      return p.top_p < 1.0f;
    case SamplerStage::kMinP:
      return p.min_p > 0.0f;
    case SamplerStage::kXtc:
      return p.xtc_probability > 0.0f && p.xtc_threshold <= 0.5f;
    case SamplerStage::kTemperature:
      return true;
  }
  return false;
}

// Filters that always keep the most likely token: before a greedy pick they cannot change it.
bool KeepsArgmax(SamplerStage s) {
  return s == SamplerStage::kTopNSigma || s == SamplerStage::kTopK || s == SamplerStage::kTopP ||
         s == SamplerStage::kMinP;
}

}  // namespace

std::string_view SamplerStageName(SamplerStage stage) {
  for (const StageInfo& s : kStages) {
    if (s.stage == stage) return s.name;
  }
  return "";
}

char SamplerStageChar(SamplerStage stage) {
  for (const StageInfo& s : kStages) {
    if (s.stage == stage) return s.code;
  }
  return '?';
}

std::optional<SamplerStage> SamplerStageFromName(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "nucleus") return SamplerStage::kTopP;
  if (lower == "temp") return SamplerStage::kTemperature;
  if (lower == "typ") return SamplerStage::kTypicalP;
  for (const StageInfo& s : kStages) {
    std::string canon(s.name);
    if (lower == canon) return s.stage;
    if (canon.find('_') == std::string::npos) continue;
    std::string kebab = canon, joined;
    std::replace(kebab.begin(), kebab.end(), '_', '-');
    for (char c : canon) {
      if (c != '_') joined += c;
    }
    if (lower == kebab || lower == joined) return s.stage;
  }
  return std::nullopt;
}

std::optional<SamplerStage> SamplerStageFromChar(char c) {
  for (const StageInfo& s : kStages) {
    if (s.code == c) return s.stage;
  }
  return std::nullopt;
}

bool UsesDry(const SamplingParams& p) {
  return p.mirostat == 0 && StageOn(SamplerStage::kDry, p) &&
         std::find(p.samplers.begin(), p.samplers.end(), SamplerStage::kDry) != p.samplers.end();
}

Sampler::Sampler(const SamplingParams& params, const Tokenizer* tokenizer)
    : p_(params), rng_(params.seed), xtc_rng_(static_cast<uint32_t>(params.seed)) {
  mu_ = 2.0f * p_.mirostat_tau;
  if (p_.mirostat != 0) return;  // mirostat: logit bias -> temperature -> mirostat, nothing else
  for (SamplerStage s : p_.samplers) {
    if (StageOn(s, p_)) stages_.push_back(s);
  }
  bool narrows = false;  // a stage before the first temperature may drop the most likely token
  for (SamplerStage s : stages_) {
    if (s == SamplerStage::kTemperature) {
      has_temperature_ = true;
      break;
    }
    if (s == SamplerStage::kTypicalP || s == SamplerStage::kXtc) narrows = true;
    greedy_stages_.push_back(s);
  }
  if (!narrows) {
    greedy_stages_.erase(std::remove_if(greedy_stages_.begin(), greedy_stages_.end(), KeepsArgmax),
                         greedy_stages_.end());
  }
  if (std::find(stages_.begin(), stages_.end(), SamplerStage::kDry) != stages_.end()) {
    DryBreakers breakers;
    if (p_.dry_breakers) {
      breakers = *p_.dry_breakers;
    } else if (tokenizer != nullptr) {
      breakers = ResolveDryBreakers(*tokenizer, p_.dry_sequence_breakers);
    }
    dry_ = std::make_unique<DryPenalty>(p_.dry_multiplier, p_.dry_base, p_.dry_allowed_length,
                                        p_.dry_penalty_last_n, std::move(breakers));
  }
}

Sampler::~Sampler() = default;
Sampler::Sampler(Sampler&&) noexcept = default;
Sampler& Sampler::operator=(Sampler&&) noexcept = default;

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
  if (dry_) dry_->Accept(token);
  if (p_.repeat_last_n == 0) return;
  recent_.push_back(token);
  ++counts_[token];
  if (p_.repeat_last_n > 0 && static_cast<int32_t>(recent_.size()) > p_.repeat_last_n) {
    const int32_t old = recent_.front();
    recent_.pop_front();
    if (--counts_[old] == 0) counts_.erase(old);
  }
}

int32_t Sampler::PickSingle(int32_t token) {
  kept_ = Kept::kSingle;
  kept_pick_ = token;
  return token;
}

void Sampler::Fill(const float* logits, int32_t n_vocab) {
  cand_.resize(n_vocab);
  for (int32_t i = 0; i < n_vocab; ++i) cand_[i] = {logits[i], i};
  for (const auto& [tok, bias] : p_.logit_bias) {
    if (tok >= 0 && tok < n_vocab) cand_[tok].first += bias;
  }
  if (prob_.size() < cand_.size()) prob_.resize(cand_.size());
  n_ = cand_.size();
  identity_ = true;
  sorted_ = false;
  probs_ = Probs::kNone;
  pending_temp_ = 0;
}

int32_t Sampler::Sample(const float* logits, int32_t n_vocab) {
  kept_ = Kept::kNone;
  if (n_vocab <= 0) return PickSingle(0);
  if (p_.mirostat == 1 || p_.mirostat == 2) return SampleMirostat(logits, n_vocab);
  const bool greedy = has_temperature_ && p_.temperature <= 0.0f;
  if (greedy && p_.logit_bias.empty()) {
    bool changes = false;  // can a stage before the pick change the argmax this step?
    for (SamplerStage s : greedy_stages_) changes |= s != SamplerStage::kPenalties || !counts_.empty();
    if (!changes) return PickSingle(Argmax(logits, n_vocab));
  }
  Fill(logits, n_vocab);
  int32_t pick = 0;
  for (SamplerStage s : greedy ? greedy_stages_ : stages_) {
    if (!RunStage(s, &pick)) return pick;
  }
  if (greedy) return PickSingle(cand_[BestIndex()].second);
  return Draw();
}

bool Sampler::RunStage(SamplerStage stage, int32_t* pick) {
  if (stage == SamplerStage::kTemperature) {
    if (p_.temperature <= 0.0f) {  // greedy: the chain ends with the most likely token
      *pick = PickSingle(cand_[BestIndex()].second);
      return false;
    }
    pending_temp_ = pending_temp_ > 0 ? pending_temp_ * p_.temperature : p_.temperature;
    probs_ = Probs::kNone;
    return true;
  }
  FlushTemperature();
  switch (stage) {
    case SamplerStage::kPenalties:
      Penalize();
      return true;
    case SamplerStage::kDry:
      ApplyDry();
      return true;
    case SamplerStage::kTopNSigma:
      TopNSigma();
      return true;
    case SamplerStage::kTopK:
      TopK();
      return true;
    case SamplerStage::kTypicalP:
      return Typical(pick);
    case SamplerStage::kTopP:
      return TopP(pick);
    case SamplerStage::kMinP:
      return MinP(pick);
    case SamplerStage::kXtc:
      return Xtc(pick);
    case SamplerStage::kTemperature:
      break;
  }
  return true;
}

void Sampler::FlushTemperature() {
  if (pending_temp_ <= 0) return;
  for (size_t i = 0; i < n_; ++i) cand_[i].first /= pending_temp_;
  pending_temp_ = 0;
  probs_ = Probs::kNone;
}

void Sampler::EnsureSorted() {
  if (sorted_) return;
  std::sort(cand_.begin(), cand_.begin() + n_, ByLogit);
  sorted_ = true;
  identity_ = false;
  probs_ = Probs::kNone;
}

bool Sampler::AllBanned() const {
  if (sorted_) return IsBanned(cand_[0].first);
  for (size_t i = 0; i < n_; ++i) {
    if (!IsBanned(cand_[i].first)) return false;
  }
  return true;
}

size_t Sampler::BestIndex() const {
  if (sorted_) return 0;
  return std::min_element(cand_.begin(), cand_.begin() + n_, ByLogit) - cand_.begin();
}

bool Sampler::EnsureProbs(bool normalized) {
  EnsureSorted();
  if (probs_ == Probs::kNormalized || (!normalized && probs_ == Probs::kRelative)) return true;
  if (IsBanned(cand_[0].first)) return false;
  double sum = 0;
  for (size_t i = 0; i < n_; ++i) sum += prob_[i] = std::exp(cand_[i].first - cand_[0].first);
  for (size_t i = 0; i < n_; ++i) prob_[i] = static_cast<float>(prob_[i] / sum);
  probs_ = Probs::kNormalized;
  return true;
}

void Sampler::DropFront(size_t k) {
  std::move(cand_.begin() + k, cand_.begin() + n_, cand_.begin());
  if (probs_ != Probs::kNone) std::move(prob_.begin() + k, prob_.begin() + n_, prob_.begin());
  n_ -= k;
  identity_ = false;
  if (probs_ == Probs::kNormalized) probs_ = Probs::kRelative;
}

void Sampler::Penalize() {
  if (counts_.empty()) return;
  auto penalize = [this](float& l, int32_t count) {
    l = l <= 0 ? l * p_.repeat_penalty : l / p_.repeat_penalty;
    l -= static_cast<float>(count) * p_.frequency_penalty + p_.presence_penalty;
  };
  if (identity_) {
    for (const auto& [tok, count] : counts_) {
      if (tok >= 0 && static_cast<size_t>(tok) < n_) penalize(cand_[tok].first, count);
    }
  } else {
    for (size_t i = 0; i < n_; ++i) {
      auto it = counts_.find(cand_[i].second);
      if (it != counts_.end()) penalize(cand_[i].first, it->second);
    }
  }
  sorted_ = false;
  probs_ = Probs::kNone;
}

void Sampler::ApplyDry() {
  dry_->Compute(&dry_pen_);
  if (dry_pen_.empty()) return;
  if (identity_) {
    for (const auto& [tok, pen] : dry_pen_) {
      if (tok >= 0 && static_cast<size_t>(tok) < n_) cand_[tok].first -= pen;
    }
  } else {
    for (size_t i = 0; i < n_; ++i) {
      auto it = std::lower_bound(dry_pen_.begin(), dry_pen_.end(), cand_[i].second,
                                 [](const auto& e, int32_t tok) { return e.first < tok; });
      if (it != dry_pen_.end() && it->first == cand_[i].second) cand_[i].first -= it->second;
    }
  }
  sorted_ = false;
  probs_ = Probs::kNone;
}

void Sampler::TopNSigma() {
  if (n_ <= 1) return;
  // Mean and standard deviation of the logits that are not banned; drop those below max - n * sigma.
  float max = cand_[0].first, sum = 0;
  size_t valid = 0;
  for (size_t i = 0; i < n_; ++i) {
    if (IsBanned(cand_[i].first)) continue;
    max = std::max(max, cand_[i].first);
    sum += cand_[i].first;
    ++valid;
  }
  const float mean = valid > 0 ? sum / valid : 0;
  float acc = 0;
  for (size_t i = 0; i < n_; ++i) {
    if (!IsBanned(cand_[i].first)) acc += (cand_[i].first - mean) * (cand_[i].first - mean);
  }
  const float sigma = valid > 0 ? std::sqrt(acc / valid) : 0;
  const float floor = max - p_.top_n_sigma * sigma;
  size_t kept = 0;
  for (size_t i = 0; i < n_; ++i) {
    if (!(cand_[i].first < floor)) cand_[kept++] = cand_[i];
  }
  if (kept == n_) return;
  n_ = kept;
  identity_ = false;
  probs_ = Probs::kNone;
}

void Sampler::TopK() {
  const size_t k = static_cast<size_t>(p_.top_k);
  if (k >= n_) return;
  if (!sorted_) std::partial_sort(cand_.begin(), cand_.begin() + k, cand_.begin() + n_, ByLogit);
  n_ = k;
  sorted_ = true;
  identity_ = false;
  probs_ = Probs::kNone;
}

bool Sampler::Typical(int32_t* pick) {
  if (!EnsureProbs(true)) {
    *pick = PickSingle(cand_[0].second);
    return false;
  }
  // Keep the tokens whose surprise -log p is closest to the entropy, until their mass exceeds typical_p.
  float entropy = 0;
  for (size_t i = 0; i < n_; ++i) {
    if (prob_[i] > 0) entropy -= prob_[i] * std::log(prob_[i]);
  }
  score_.resize(n_);
  order_.resize(n_);
  for (size_t i = 0; i < n_; ++i) {
    score_[i] =
        prob_[i] > 0 ? std::fabs(-std::log(prob_[i]) - entropy) : std::numeric_limits<float>::infinity();
  }
  std::iota(order_.begin(), order_.end(), 0u);
  std::stable_sort(order_.begin(), order_.end(),
                   [this](uint32_t a, uint32_t b) { return score_[a] < score_[b]; });
  float cum = 0;
  size_t keep = n_;
  for (size_t i = 0; i < n_; ++i) {
    cum += prob_[order_[i]];
    if (cum > p_.typical_p) {
      keep = i + 1;
      break;
    }
  }
  cand_tmp_.resize(keep);
  prob_tmp_.resize(keep);
  for (size_t i = 0; i < keep; ++i) {
    cand_tmp_[i] = cand_[order_[i]];
    prob_tmp_[i] = prob_[order_[i]];
  }
  std::copy(cand_tmp_.begin(), cand_tmp_.end(), cand_.begin());
  std::copy(prob_tmp_.begin(), prob_tmp_.end(), prob_.begin());
  n_ = keep;
  sorted_ = false;  // in typicality order now
  identity_ = false;
  probs_ = Probs::kRelative;
  return true;
}

bool Sampler::TopP(int32_t* pick) {
  if (!EnsureProbs(true)) {
    *pick = PickSingle(cand_[0].second);
    return false;
  }
  double cum = 0;
  size_t keep = n_;
  for (size_t i = 0; i < n_; ++i) {
    cum += prob_[i];
    if (cum >= p_.top_p) {
      keep = i + 1;
      break;
    }
  }
  keep = std::max<size_t>(1, keep);
  if (keep < n_) {
    n_ = keep;
    identity_ = false;
    probs_ = Probs::kRelative;
  }
  return true;
}

bool Sampler::MinP(int32_t* pick) {
  if (!EnsureProbs(false)) {
    *pick = PickSingle(cand_[0].second);
    return false;
  }
  const float threshold = prob_[0] * p_.min_p;
  size_t keep = 1;
  while (keep < n_ && prob_[keep] >= threshold) ++keep;
  if (keep < n_) {
    n_ = keep;
    identity_ = false;
    if (probs_ == Probs::kNormalized) probs_ = Probs::kRelative;
  }
  return true;
}

bool Sampler::Xtc(int32_t* pick) {
  if (n_ < 2) return true;
  std::uniform_real_distribution<float> chance(0.0f, 1.0f);
  if (chance(xtc_rng_) > p_.xtc_probability) return true;
  if (!EnsureProbs(true)) {
    *pick = PickSingle(cand_[0].second);
    return false;
  }
  // Remove every token at or above the threshold except the least likely of them.
  size_t last = 0;
  for (size_t i = 0; i < n_ && prob_[i] >= p_.xtc_threshold; ++i) last = i;
  if (last > 0) DropFront(last);
  return true;
}

int32_t Sampler::Draw() {
  EnsureSorted();  // the draw walks the candidates in logit order
  if (IsBanned(cand_[0].first)) return PickSingle(cand_[0].second);  // nothing left to draw from
  const float top = cand_[0].first;
  if (w_.size() < n_) w_.resize(n_);
  if (pending_temp_ > 0) {
    for (size_t i = 0; i < n_; ++i) w_[i] = std::exp((cand_[i].first - top) / pending_temp_);
  } else {
    for (size_t i = 0; i < n_; ++i) w_[i] = std::exp(cand_[i].first - top);
  }
  std::discrete_distribution<size_t> dist(w_.begin(), w_.begin() + n_);
  kept_ = Kept::kWeights;
  return cand_[dist(rng_)].second;
}

int32_t Sampler::SampleMirostat(const float* logits, int32_t n_vocab) {
  Fill(logits, n_vocab);
  const size_t best = BestIndex();
  const float tau = p_.mirostat_tau, eta = p_.mirostat_eta;
  if (p_.temperature <= 0.0f || IsBanned(cand_[best].first) || n_ == 1) {
    // One token left (greedy, or nothing else allowed): its probability is 1, its surprise 0.
    mu_ -= eta * (0.0f - tau);
    return PickSingle(cand_[best].second);
  }
  for (size_t i = 0; i < n_; ++i) cand_[i].first /= p_.temperature;
  const float top = cand_[best].first;

  if (p_.mirostat == 2) {
    // Keep the tokens whose surprise -log2 p is at most mu (at least the most likely one): with
    // p = exp(l - top) / sum, that is l >= top + ln(sum) - mu * ln 2.
    double sum = 0;
    for (size_t i = 0; i < n_; ++i) sum += std::exp(cand_[i].first - top);
    const double floor = top + std::log(sum) - static_cast<double>(mu_) * std::log(2.0);
    const Cand top_cand = cand_[best];
    size_t kept = 0;
    for (size_t i = 0; i < n_; ++i) {
      if (cand_[i].first >= floor) cand_[kept++] = cand_[i];
    }
    if (kept == 0) cand_[kept++] = top_cand;
    n_ = kept;
    std::sort(cand_.begin(), cand_.begin() + n_, ByLogit);
  } else {
    // Fit the Zipf exponent s on the top m tokens, then keep the k tokens that make the expected surprise
    // mu: k = (eps * 2^mu / (1 - N^-eps))^(1/s), eps = s - 1.
    const size_t m = std::min<size_t>(kMirostatM, n_);
    std::partial_sort(cand_.begin(), cand_.begin() + m, cand_.begin() + n_, ByLogit);
    float sum_tb = 0, sum_tt = 0;
    for (size_t i = 0; i + 1 < m; ++i) {
      const float t = std::log(static_cast<float>(i + 2) / static_cast<float>(i + 1));
      const float b = cand_[i].first - cand_[i + 1].first;  // ln(p_i / p_i+1)
      sum_tb += t * b;
      sum_tt += t * t;
    }
    const float s_hat = sum_tb / sum_tt;
    const float eps = s_hat - 1;
    const float k =
        std::pow((eps * std::pow(2.0f, mu_)) / (1 - std::pow(static_cast<float>(n_vocab), -eps)), 1 / s_hat);
    size_t keep = 1;
    if (k >= static_cast<float>(n_)) {
      keep = n_;
    } else if (k >= 1) {
      keep = static_cast<size_t>(k);
    }
    if (keep > m) std::partial_sort(cand_.begin() + m, cand_.begin() + keep, cand_.begin() + n_, ByLogit);
    n_ = keep;
  }
  sorted_ = true;
  identity_ = false;
  probs_ = Probs::kNone;
  EnsureProbs(true);
  std::discrete_distribution<size_t> dist(prob_.begin(), prob_.begin() + n_);
  const size_t idx = dist(rng_);
  mu_ -= eta * (-std::log2(prob_[idx]) - tau);
  kept_ = Kept::kProbs;
  return cand_[idx].second;
}

void Sampler::TopCandidates(int n, std::vector<std::pair<int32_t, float>>* out) const {
  out->clear();
  if (n <= 0 || kept_ == Kept::kNone) return;
  if (kept_ == Kept::kSingle) {
    out->emplace_back(kept_pick_, 1.0f);
    return;
  }
  out->resize(n_);
  if (kept_ == Kept::kWeights) {
    double sum = 0;
    for (size_t i = 0; i < n_; ++i) sum += w_[i];
    for (size_t i = 0; i < n_; ++i) (*out)[i] = {cand_[i].second, static_cast<float>(w_[i] / sum)};
  } else {
    for (size_t i = 0; i < n_; ++i) (*out)[i] = {cand_[i].second, prob_[i]};
  }
  const auto by_prob = [](const auto& a, const auto& b) {
    return a.second > b.second || (a.second == b.second && a.first < b.first);
  };
  const size_t keep = std::min(out->size(), static_cast<size_t>(n));
  std::partial_sort(out->begin(), out->begin() + keep, out->end(), by_prob);
  out->resize(keep);
  while (!out->empty() && !(out->back().second > 0)) out->pop_back();
}

}  // namespace lazyslot
