// Log-probabilities of generated tokens (OpenAI's logprobs / llama-server's n_probs): the model's
// distribution before any sampler touched it, log-softmax over the raw logits.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/sampler.h"
#include "tokenizer/tokenizer.h"

namespace lazyslot {

struct TokenLogprob {
  TokenId id = -1;
  float logprob = 0;  // natural log; never -inf (a probability of 0 gives the lowest finite float)
};

// logits[n_vocab] -> the log-probability of `chosen` and the `n_top` most probable tokens, most probable
// first (ties: lower id first). One pass for the normaliser and one for the top set; nothing allocated
// beyond `top` (n_top is small, at most 20 on the wire).
void TokenLogprobs(const float* logits, int32_t n_vocab, TokenId chosen, int32_t n_top, float* chosen_logprob,
                   std::vector<TokenLogprob>* top);

// After `sampler` drew `chosen`: log(probability) of `chosen` and of the `n_top` most probable tokens in the
// sampler's final distribution (the candidates that survived its chain, as the draw weighed them).
void SamplerProbs(const Sampler& sampler, TokenId chosen, int32_t n_top, float* chosen_logprob,
                  std::vector<TokenLogprob>* top);

}  // namespace lazyslot
