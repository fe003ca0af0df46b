// Pooling of hidden states.
#include "engine/pooling.h"

namespace lazyslot {

std::vector<float> PoolEmbedding(PoolingType pooling, const float* hidden, int64_t n_tokens, int64_t n_embd) {
  std::vector<float> out(n_embd, 0.0f);
  if (n_tokens <= 0) return out;
  switch (pooling) {
    case PoolingType::kCls:
      out.assign(hidden, hidden + n_embd);
      break;
    case PoolingType::kLast:
    case PoolingType::kRank:
    case PoolingType::kNone:
      out.assign(hidden + (n_tokens - 1) * n_embd, hidden + n_tokens * n_embd);
      break;
    case PoolingType::kMean: {
      std::vector<double> acc(n_embd, 0.0);
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t d = 0; d < n_embd; ++d) acc[d] += hidden[t * n_embd + d];
      }
      for (int64_t d = 0; d < n_embd; ++d) out[d] = static_cast<float>(acc[d] / static_cast<double>(n_tokens));
      break;
    }
  }
  return out;
}

}  // namespace lazyslot
