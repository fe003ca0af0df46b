// Token sampling from logits with llama-server's samplers and its order. Logit bias comes first and the
// draw last; in between runs `SamplingParams::samplers`, by default penalties -> DRY -> top-n-sigma ->
// top-k -> typical-p -> top-p -> min-p -> XTC -> temperature. temperature <= 0 means greedy (argmax, first
// index on ties). With mirostat 1 or 2 the chain is logit bias -> temperature -> mirostat instead.
//
// Every stage treats the candidate array as llama-server's does: which stages sort it and which keep its
// order, the float arithmetic of their softmax and cut-offs. The draw too: a std::mt19937 seeded with the
// low 32 bits of `seed` when the Sampler is made (once per request), one
// std::uniform_real_distribution<double> number u per draw (none when one candidate is left), and the
// first candidate, in array order, at which the running sum of e^(logit - max) reaches u times their total.
// So the same seed and the same logits give the same tokens as llama-server.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lazyslot {

class Tokenizer;
class DryPenalty;

// One step of the sampler chain. The names and one-letter codes are llama-server's.
enum class SamplerStage : uint8_t {
  kPenalties,    // "penalties", 'e': repeat, frequency and presence penalties
  kDry,          // "dry", 'd'
  kTopNSigma,    // "top_n_sigma", 's'
  kTopK,         // "top_k", 'k'
  kTypicalP,     // "typ_p", 'y'
  kTopP,         // "top_p", 'p'
  kMinP,         // "min_p", 'm'
  kXtc,          // "xtc", 'x'
  kTemperature,  // "temperature", 't'
};

std::string_view SamplerStageName(SamplerStage stage);
char SamplerStageChar(SamplerStage stage);
// Case-insensitive, with llama-server's aliases: "top-k", "topk", "nucleus", "typ", "temp", ...
std::optional<SamplerStage> SamplerStageFromName(std::string_view name);
std::optional<SamplerStage> SamplerStageFromChar(char c);

struct SamplingParams {
  float temperature = 0.8f;
  int32_t top_k = 40;            // <= 0: off
  float top_p = 0.95f;           // >= 1: off
  float min_p = 0.05f;           // <= 0: off
  float typical_p = 1.0f;        // >= 1: off (locally typical sampling)
  float top_n_sigma = -1.0f;     // <= 0: off (keep logits within n standard deviations of the top one)
  float xtc_probability = 0.0f;  // <= 0: off (chance that XTC removes the top tokens at a step)
  float xtc_threshold = 0.1f;    // > 0.5: off (probability a token needs to count as a top token)
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  // DRY: a token that would extend a repeat of length L >= dry_allowed_length loses
  // dry_multiplier * dry_base^(L - dry_allowed_length) from its logit; a sequence breaker ends a match.
  float dry_multiplier = 0.0f;  // 0: off
  float dry_base = 1.75f;       // < 1: off
  int32_t dry_allowed_length = 2;
  int32_t dry_penalty_last_n = 64;  // tokens scanned for repeats; 0: off; -1: every token seen (the context)
  std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};
  int32_t mirostat = 0;       // 0: off, 1: Mirostat, 2: Mirostat 2.0 (both replace the chain below)
  float mirostat_tau = 5.0f;  // target surprise, in bits
  float mirostat_eta = 0.1f;  // learning rate
  std::vector<SamplerStage> samplers = {
      SamplerStage::kPenalties, SamplerStage::kDry,      SamplerStage::kTopNSigma,
      SamplerStage::kTopK,      SamplerStage::kTypicalP, SamplerStage::kTopP,
      SamplerStage::kMinP,      SamplerStage::kXtc,      SamplerStage::kTemperature,
  };
  uint64_t seed = 0xFFFFFFFF;  // fixed default so runs are reproducible unless the caller picks one; the
                               // RNG takes its low 32 bits, as llama-server's uint32 seed
  // Added to a token's logit before everything else (llama.cpp's order); -inf bans the token.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // dry_sequence_breakers as token sequences, resolved before the request reaches the scheduler (a scan of
  // the vocabulary); null: the Sampler resolves them itself when given a tokenizer.
  std::shared_ptr<const std::unordered_map<int32_t, std::vector<std::vector<int32_t>>>> dry_breakers;
};

// Whether a Sampler for `p` runs DRY (on, in the chain, and no mirostat replacing the chain).
bool UsesDry(const SamplingParams& p);

class Sampler {
 public:
  // `tokenizer` is needed only by DRY, to find the tokens of the sequence breakers (a scan of the
  // vocabulary, done here when DRY is on); without one DRY runs with no sequence breakers.
  explicit Sampler(const SamplingParams& params, const Tokenizer* tokenizer = nullptr);
  ~Sampler();
  Sampler(Sampler&&) noexcept;
  Sampler& operator=(Sampler&&) noexcept;

  // Picks the next token from logits[n_vocab] (not modified).
  int32_t Sample(const float* logits, int32_t n_vocab);
  // Records a token (prompt or generated) for the repetition penalties and DRY.
  void Accept(int32_t token);

  // After Sample(): the n most probable (token, probability) among the tokens that survived the chain, most
  // probable first (ties: lower id first), with the probabilities the draw used (normalised over the
  // survivors, after temperature); tokens of probability 0 are left out. A greedy pick is {token, 1}, as
  // llama-server reports it. Computed from what Sample() kept, so it costs nothing unless called.
  void TopCandidates(int n, std::vector<std::pair<int32_t, float>>* out) const;

  // Mirostat's running surprise bound (2 * tau at the start), for tests.
  float mirostat_mu() const { return mu_; }

  static int32_t Argmax(const float* logits, int32_t n_vocab);

  // Adds logit_bias to logits[n_vocab], for callers that rank tokens themselves.
  void ApplyBias(float* logits, int32_t n_vocab) const;

 private:
  struct Cand {
    int32_t id;
    float logit;
    float p;  // probability, valid only where a stage has just computed it
  };
  enum class Kept : uint8_t { kNone, kSingle, kProbs };  // what TopCandidates reads

  void Fill(const float* logits, int32_t n_vocab);
  // Runs one stage; returns false when the chain has ended with *pick chosen (greedy, all tokens banned).
  bool RunStage(SamplerStage stage, int32_t* pick);
  void Penalize();
  void ApplyDry();
  void TopNSigma();
  void TopK();
  bool Typical(int32_t* pick);
  bool TopP(int32_t* pick);
  bool MinP(int32_t* pick);
  bool Xtc(int32_t* pick);
  int32_t Draw();
  int32_t SampleMirostat(const float* logits, int32_t n_vocab);
  int32_t PickSingle(int32_t token);

  // Sorts the first `k` candidates into place (by logit, descending; ties in the standard library's order).
  void SortTop(size_t k);
  // p = softmax of the current candidates (sorted first when `sort`). False if every candidate is banned.
  bool Softmax(bool sort);
  float MaxLogit() const;
  bool AllBanned() const;
  size_t BestIndex() const;  // most likely candidate, lower id on ties (the greedy pick)
  void DropFront(size_t k);

  SamplingParams p_;
  std::mt19937 rng_;  // the draw's and mirostat's (llama-server's engine, seeded with the low 32 bits)
  std::mt19937 xtc_rng_;
  std::deque<int32_t> recent_;                   // last repeat_last_n tokens
  std::unordered_map<int32_t, int32_t> counts_;  // occurrences within recent_
  std::unique_ptr<DryPenalty> dry_;              // null unless DRY is in the chain and on
  std::vector<SamplerStage> stages_;             // the chain's stages that are on, in order
  std::vector<SamplerStage> greedy_stages_;      // what can change the argmax before the first temperature
  bool has_temperature_ = false;
  float mu_ = 0;  // mirostat

  // Per-Sample state, kept for TopCandidates.
  std::vector<Cand> cand_;  // candidates [0, n_)
  size_t n_ = 0;
  bool identity_ = false;  // cand_[i].id == i for every token of the vocabulary
  bool sorted_ = false;    // by logit, descending
  Kept kept_ = Kept::kNone;
  int32_t kept_pick_ = 0;

  // Scratch.
  std::vector<float> score_;
  std::vector<size_t> order_;
  std::vector<Cand> cand_tmp_;
  std::vector<float> weights_;
  std::vector<std::pair<int32_t, float>> dry_pen_;
};

}  // namespace lazyslot
