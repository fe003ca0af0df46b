// Routing of a mixture-of-experts layer: which experts a token goes to, and with what weights.
#pragma once

#include <cstdint>

namespace lazyslot {

// For one token's router logits [n_expert]: p = softmax(logits), then the k experts of largest p (ties to the
// lower index) in descending order into ids[k], and their weights p[id] into weights[k], divided by their sum
// when `normalize` (Qwen3-MoE's norm_topk_prob). The arithmetic is llama.cpp's, because a near tie of two
// experts flips on a rounding: the softmax in F32 with its vector exp and the sum in double, scaled by the
// sum's reciprocal; the chosen weights summed in double and divided by that sum, floored at 2^-14.
// probs: scratch of n_expert floats. 1 <= k <= n_expert.
void RouteTopK(const float* logits, int n_expert, int k, bool normalize, int32_t* ids, float* weights,
               float* probs);

}  // namespace lazyslot
