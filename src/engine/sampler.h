// Token sampling from logits, in llama.cpp's default order: logit bias -> repetition penalties -> top-k ->
// top-p -> min-p -> temperature -> random draw. temperature <= 0 means greedy (argmax, first index on ties).
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lazyslot {

struct SamplingParams {
  float temperature = 0.8f;
  int32_t top_k = 40;        // <= 0: off
  float top_p = 0.95f;       // >= 1: off
  float min_p = 0.05f;       // <= 0: off
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  uint64_t seed = 0xFFFFFFFF;  // fixed default so runs are reproducible unless the caller picks one
  // Added to a token's logit before everything else (llama.cpp's order); -inf bans the token.
  std::vector<std::pair<int32_t, float>> logit_bias;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // Picks the next token from logits[n_vocab] (not modified).
  int32_t Sample(const float* logits, int32_t n_vocab);
  // Records a token (prompt or generated) for the repetition penalties.
  void Accept(int32_t token);

  static int32_t Argmax(const float* logits, int32_t n_vocab);

  // Adds logit_bias to logits[n_vocab], for callers that rank tokens themselves.
  void ApplyBias(float* logits, int32_t n_vocab) const;

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
  std::deque<int32_t> recent_;                  // last repeat_last_n tokens
  std::unordered_map<int32_t, int32_t> counts_;  // occurrences within recent_
  std::vector<std::pair<float, int32_t>> cand_;  // scratch: (logit, id)
};

}  // namespace lazyslot
