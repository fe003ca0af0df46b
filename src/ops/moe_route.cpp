// RouteTopK (ops/moe_route.h): softmax over the router logits, top k, renormalised weights.
#include "ops/moe_route.h"

#include <algorithm>

#include "ops/exp_simd.h"

namespace lazyslot {

void RouteTopK(const float* logits, int n_expert, int k, bool normalize, int32_t* ids, float* weights,
               float* probs) {
  float max = logits[0];
  for (int e = 1; e < n_expert; ++e) max = std::max(max, logits[e]);
  double sum = 0;
  for (int e = 0; e < n_expert; ++e) {
    probs[e] = ops_internal::ExpF(logits[e] - max);
    sum += probs[e];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int e = 0; e < n_expert; ++e) probs[e] *= inv;
  // Selection of the k largest, each pass taking the first maximum among those left (k is small: 8 of 128).
  for (int j = 0; j < k; ++j) {
    int best = -1;
    for (int e = 0; e < n_expert; ++e) {
      bool taken = false;
      for (int i = 0; i < j && !taken; ++i) taken = ids[i] == e;
      if (!taken && (best < 0 || probs[e] > probs[best])) best = e;
    }
    ids[j] = best;
    weights[j] = probs[best];
  }
  if (!normalize) return;
  double chosen = 0;
  for (int j = 0; j < k; ++j) chosen += weights[j];
  const float denom = std::max(static_cast<float>(chosen), 6.103515625e-5f);
  for (int j = 0; j < k; ++j) weights[j] /= denom;
}

}  // namespace lazyslot
