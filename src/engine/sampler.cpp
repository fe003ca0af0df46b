// Sampler implementation. Candidates are (id, logit, p) and narrowed stage by stage, each stage doing what
// llama-server's does to its candidate array: top-k, typical, XTC and a min-p or top-p that finds the array
// unsorted sort it (descending logit); penalties and DRY mark it unsorted; min-p on an unsorted array keeps
// the survivors in their order; softmaxes are in float; temperature divides every logit at once. The draw
// walks the array in its order (see sampler.h). Greedy picks the most likely survivor, lower id on ties.
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

constexpr size_t kSmallSort = 128;  // up to this many candidates a full sort is a partial_sort (tie order)
constexpr size_t kTopPFirst = 256;  // top-p on more than kTopPLarge unsorted candidates sorts these first
constexpr size_t kTopPLarge = 1024;

// Function objects rather than functions, so that the sorts inline them. The greedy pick breaks ties by id;
// the sorts of the chain compare logits only, as llama-server's do: a partial_sort (top-k, arrays of up to
// kSmallSort) leaves equal logits where llama-server's leaves them; a larger full sort may order them
// differently (llama-server buckets the logits first).
template <typename C>
struct ByLogitThenIdT {
  bool operator()(const C& a, const C& b) const {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  }
};
template <typename C>
struct ByLogitT {
  bool operator()(const C& a, const C& b) const { return a.logit > b.logit; }
};

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
    : p_(params), rng_(static_cast<uint32_t>(params.seed)), xtc_rng_(static_cast<uint32_t>(params.seed)) {
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
  for (int32_t i = 0; i < n_vocab; ++i) cand_[i] = {i, logits[i], 0.0f};
  for (const auto& [tok, bias] : p_.logit_bias) {
    if (tok >= 0 && tok < n_vocab) cand_[tok].logit += bias;
  }
  n_ = cand_.size();
  identity_ = true;
  sorted_ = false;
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
  if (greedy) return PickSingle(cand_[BestIndex()].id);
  return Draw();
}

bool Sampler::RunStage(SamplerStage stage, int32_t* pick) {
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
      if (p_.temperature <= 0.0f) {  // greedy: the chain ends with the most likely token
        *pick = PickSingle(cand_[BestIndex()].id);
        return false;
      }
      for (size_t i = 0; i < n_; ++i) cand_[i].logit /= p_.temperature;  // keeps the order
      return true;
  }
  return true;
}

void Sampler::SortTop(size_t k) {
  const auto first = cand_.begin(), last = cand_.begin() + static_cast<std::ptrdiff_t>(n_);
  if (k < n_ || n_ <= kSmallSort) {
    std::partial_sort(first, first + static_cast<std::ptrdiff_t>(k), last, ByLogitT<Cand>());
  } else {
    std::sort(first, last, ByLogitT<Cand>());
  }
}

float Sampler::MaxLogit() const {
  float max = cand_[0].logit;
  if (!sorted_) {
    for (size_t i = 1; i < n_; ++i) max = std::max(max, cand_[i].logit);
  }
  return max;
}

bool Sampler::Softmax(bool sort) {
  if (sort && !sorted_) {
    SortTop(n_);
    sorted_ = true;
    identity_ = false;
  }
  const float max = MaxLogit();
  if (IsBanned(max)) return false;
  float sum = 0;
  for (size_t i = 0; i < n_; ++i) {
    cand_[i].p = std::exp(cand_[i].logit - max);
    sum += cand_[i].p;
  }
  for (size_t i = 0; i < n_; ++i) cand_[i].p /= sum;
  return true;
}

bool Sampler::AllBanned() const { return IsBanned(MaxLogit()); }

size_t Sampler::BestIndex() const {
  return std::min_element(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(n_),
                          ByLogitThenIdT<Cand>()) -
         cand_.begin();
}

void Sampler::DropFront(size_t k) {
  std::move(cand_.begin() + static_cast<std::ptrdiff_t>(k), cand_.begin() + static_cast<std::ptrdiff_t>(n_),
            cand_.begin());
  n_ -= k;
  identity_ = false;
}

void Sampler::Penalize() {
  // Any run of the stage leaves the array unsorted, even with nothing to penalise (a later stage's sort
  // decides the order the draw walks).
  sorted_ = false;
  if (counts_.empty()) return;
  auto penalize = [this](float& l, int32_t count) {
    l = l <= 0 ? l * p_.repeat_penalty : l / p_.repeat_penalty;
    l -= static_cast<float>(count) * p_.frequency_penalty + p_.presence_penalty;
  };
  if (identity_) {
    for (const auto& [tok, count] : counts_) {
      if (tok >= 0 && static_cast<size_t>(tok) < n_) penalize(cand_[tok].logit, count);
    }
  } else {
    for (size_t i = 0; i < n_; ++i) {
      auto it = counts_.find(cand_[i].id);
      if (it != counts_.end()) penalize(cand_[i].logit, it->second);
    }
  }
}

void Sampler::ApplyDry() {
  if (!dry_->Compute(&dry_pen_)) return;  // too little history: the array is left as it was
  sorted_ = false;
  if (dry_pen_.empty()) return;
  if (identity_) {
    for (const auto& [tok, pen] : dry_pen_) {
      if (tok >= 0 && static_cast<size_t>(tok) < n_) cand_[tok].logit -= pen;
    }
  } else {
    for (size_t i = 0; i < n_; ++i) {
      auto it = std::lower_bound(dry_pen_.begin(), dry_pen_.end(), cand_[i].id,
                                 [](const auto& e, int32_t tok) { return e.first < tok; });
      if (it != dry_pen_.end() && it->first == cand_[i].id) cand_[i].logit -= it->second;
    }
  }
}

void Sampler::TopNSigma() {
  if (n_ <= 1) return;
  // Mean and standard deviation of the logits that are not banned; drop those below max - n * sigma (the
  // order of the rest is kept). The squares are summed as double terms into a float, as llama-server does.
  float max = cand_[0].logit, sum = 0;
  size_t valid = 0;
  for (size_t i = 0; i < n_; ++i) {
    if (IsBanned(cand_[i].logit)) continue;
    max = std::max(max, cand_[i].logit);
    sum += cand_[i].logit;
    ++valid;
  }
  const float mean = valid > 0 ? sum / static_cast<float>(valid) : 0;
  float acc = 0;
  for (size_t i = 0; i < n_; ++i) {
    if (IsBanned(cand_[i].logit)) continue;
    const double d = cand_[i].logit - mean;
    acc = static_cast<float>(acc + d * d);
  }
  const float sigma = valid > 0 ? std::sqrt(acc / static_cast<float>(valid)) : 0;
  const float floor = max - p_.top_n_sigma * sigma;
  size_t kept = 0;
  for (size_t i = 0; i < n_; ++i) {
    if (!(cand_[i].logit < floor)) cand_[kept++] = cand_[i];
  }
  if (kept == n_) return;
  n_ = kept;
  identity_ = false;
}

void Sampler::TopK() {
  // Sorts even when it keeps every candidate.
  const size_t k = std::min(static_cast<size_t>(p_.top_k), n_);
  if (!sorted_) SortTop(k);
  n_ = k;
  sorted_ = true;
  identity_ = false;
}

bool Sampler::Typical(int32_t* pick) {
  if (!Softmax(true)) {
    *pick = PickSingle(cand_[0].id);
    return false;
  }
  // Keep the tokens whose surprise -log p is closest to the entropy, until their mass exceeds typical_p.
  float entropy = 0;
  for (size_t i = 0; i < n_; ++i) {
    if (cand_[i].p > 0) entropy += -cand_[i].p * std::log(cand_[i].p);
  }
  score_.resize(n_);
  order_.resize(n_);
  for (size_t i = 0; i < n_; ++i) {
    score_[i] =
        cand_[i].p > 0 ? std::fabs(-std::log(cand_[i].p) - entropy) : std::numeric_limits<float>::infinity();
  }
  std::iota(order_.begin(), order_.end(), size_t{0});
  std::sort(order_.begin(), order_.end(), [this](size_t a, size_t b) { return score_[a] < score_[b]; });
  float cum = 0;
  size_t keep = n_;
  for (size_t i = 0; i < n_; ++i) {
    cum += cand_[order_[i]].p;
    if (cum > p_.typical_p) {
      keep = i + 1;
      break;
    }
  }
  cand_tmp_.resize(keep);
  for (size_t i = 0; i < keep; ++i) cand_tmp_[i] = cand_[order_[i]];
  std::copy(cand_tmp_.begin(), cand_tmp_.end(), cand_.begin());
  n_ = keep;
  sorted_ = false;  // in typicality order now
  identity_ = false;
  return true;
}

bool Sampler::TopP(int32_t* pick) {
  if (!Softmax(false)) {
    *pick = PickSingle(cand_[0].id);
    return false;
  }
  // An unsorted array is sorted as far as the walk needs: with many candidates the top kTopPFirst first,
  // the rest only if their mass is not enough.
  size_t sorted_upto = n_;
  if (!sorted_) {
    sorted_upto = n_ > kTopPLarge ? std::min(kTopPFirst, n_) : n_;
    SortTop(sorted_upto);
  }
  float cum = 0;
  size_t keep = n_;
  for (size_t i = 0; i < n_; ++i) {
    if (i == sorted_upto) {
      std::sort(cand_.begin() + static_cast<std::ptrdiff_t>(i),
                cand_.begin() + static_cast<std::ptrdiff_t>(n_), ByLogitT<Cand>());
      sorted_upto = n_;
    }
    cum += cand_[i].p;
    if (cum >= p_.top_p) {
      keep = i + 1;
      break;
    }
  }
  n_ = keep;
  sorted_ = true;
  identity_ = false;
  return true;
}

bool Sampler::MinP(int32_t* pick) {
  if (AllBanned()) {
    *pick = PickSingle(cand_[0].id);
    return false;
  }
  // Keep logits >= max + ln(min_p), i.e. p >= min_p * p_max; an unsorted array keeps its order.
  const float log_min_p = std::log(p_.min_p);
  if (!sorted_) {
    const float floor = MaxLogit() + log_min_p;
    size_t kept = 0;
    for (size_t i = 0; i < n_; ++i) {
      if (cand_[i].logit >= floor) cand_[kept++] = cand_[i];
    }
    if (kept > 0) {
      if (kept < n_) identity_ = false;
      n_ = kept;
      return true;
    }
    // Nothing passed (min_p > 1): the array is untouched; sort it and keep the top token below.
    SortTop(n_);
    sorted_ = true;
  }
  const float floor = cand_[0].logit + log_min_p;
  size_t keep = 1;
  while (keep < n_ && !(cand_[keep].logit < floor)) ++keep;
  if (keep < n_) identity_ = false;
  n_ = keep;
  return true;
}

bool Sampler::Xtc(int32_t* pick) {
  if (n_ < 2) return true;
  std::uniform_real_distribution<float> chance(0.0f, 1.0f);
  if (chance(xtc_rng_) > p_.xtc_probability) return true;
  if (!Softmax(true)) {
    *pick = PickSingle(cand_[0].id);
    return false;
  }
  // Remove every token at or above the threshold except the least likely of them.
  size_t last = 0;
  for (size_t i = 0; i < n_ && cand_[i].p >= p_.xtc_threshold; ++i) last = i;
  if (last > 0) DropFront(last);
  return true;
}

int32_t Sampler::Draw() {
  kept_ = Kept::kProbs;
  if (n_ == 1) {  // nothing to draw: no random number is used
    cand_[0].p = 1.0f;
    return cand_[0].id;
  }
  const float max = MaxLogit();
  if (IsBanned(max)) return PickSingle(cand_[0].id);  // nothing left to draw from
  double total = 0;
  for (size_t i = 0; i < n_; ++i) {
    cand_[i].p = std::exp(cand_[i].logit - max);
    total += cand_[i].p;
  }
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double target = total * unit(rng_);
  size_t pick = n_ - 1;
  double run = 0;
  for (size_t i = 0; i < n_; ++i) {
    run += cand_[i].p;
    if (run >= target) {
      pick = i;
      break;
    }
  }
  for (size_t i = 0; i < n_; ++i) cand_[i].p = static_cast<float>(cand_[i].p / total);
  return cand_[pick].id;
}

int32_t Sampler::SampleMirostat(const float* logits, int32_t n_vocab) {
  Fill(logits, n_vocab);
  const size_t best = BestIndex();
  const float tau = p_.mirostat_tau, eta = p_.mirostat_eta;
  if (p_.temperature <= 0.0f || IsBanned(cand_[best].logit) || n_ == 1) {
    // One token left (greedy, or nothing else allowed): its probability is 1, its surprise 0.
    mu_ -= eta * (0.0f - tau);
    return PickSingle(cand_[best].id);
  }
  for (size_t i = 0; i < n_; ++i) cand_[i].logit /= p_.temperature;
  Softmax(true);
  size_t keep = 1;
  if (p_.mirostat == 2) {
    // Keep the tokens whose surprise -log2 p is at most mu (at least the most likely one).
    keep = 0;
    while (keep < n_ && !(-std::log2(cand_[keep].p) > mu_)) ++keep;
    keep = std::max<size_t>(keep, 1);
  } else {
    // Fit the Zipf exponent s on the top m tokens, then keep the k tokens that make the expected surprise
    // mu: k = (eps * 2^mu / (1 - N^-eps))^(1/s), eps = s - 1.
    float sum_tb = 0, sum_tt = 0;
    for (size_t i = 0; i + 1 < static_cast<size_t>(kMirostatM) && i + 1 < n_; ++i) {
      const float t = std::log(static_cast<float>(i + 2) / static_cast<float>(i + 1));
      const float b = std::log(cand_[i].p / cand_[i + 1].p);
      sum_tb += t * b;
      sum_tt += t * t;
    }
    const float s_hat = sum_tb / sum_tt;
    const float eps = s_hat - 1;
    const float k =
        std::pow((eps * std::pow(2.0f, mu_)) / (1 - std::pow(static_cast<float>(n_vocab), -eps)), 1 / s_hat);
    if (k >= static_cast<float>(n_)) {
      keep = n_;
    } else if (k >= 1) {
      keep = static_cast<size_t>(k);
    }
  }
  n_ = keep;
  identity_ = false;
  Softmax(true);
  weights_.resize(n_);
  for (size_t i = 0; i < n_; ++i) weights_[i] = cand_[i].p;
  std::discrete_distribution<int> dist(weights_.begin(), weights_.end());
  const size_t idx = static_cast<size_t>(dist(rng_));
  mu_ -= eta * (-std::log2(cand_[idx].p) - tau);
  kept_ = Kept::kProbs;
  return cand_[idx].id;
}

void Sampler::TopCandidates(int n, std::vector<std::pair<int32_t, float>>* out) const {
  out->clear();
  if (n <= 0 || kept_ == Kept::kNone) return;
  if (kept_ == Kept::kSingle) {
    out->emplace_back(kept_pick_, 1.0f);
    return;
  }
  out->resize(n_);
  for (size_t i = 0; i < n_; ++i) (*out)[i] = {cand_[i].id, cand_[i].p};
  const auto by_prob = [](const auto& a, const auto& b) {
    return a.second > b.second || (a.second == b.second && a.first < b.first);
  };
  const size_t keep = std::min(out->size(), static_cast<size_t>(n));
  std::partial_sort(out->begin(), out->begin() + keep, out->end(), by_prob);
  out->resize(keep);
  while (!out->empty() && !(out->back().second > 0)) out->pop_back();
}

}  // namespace lazyslot
