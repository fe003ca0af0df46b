// Sequence embeddings from per-token hidden states (after output_norm): mean, first (cls) or last token, as
// llama.cpp pools them (FORMATS.md section 6). Not normalised: the API layer normalises as its request asks.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"

namespace lazyslot {

// hidden: [n_tokens, n_embd] in position order. kNone is not a pooling: callers keep per-token rows.
std::vector<float> PoolEmbedding(PoolingType pooling, const float* hidden, int64_t n_tokens, int64_t n_embd);

}  // namespace lazyslot
