// The classifier head of a reranker (rank pooling), as llama.cpp applies it to a sequence's pooled row.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"
#include "ops/thread_pool.h"

namespace lazyslot {

// Whether rank pooling reads the last token (qwen3: Qwen3-Reranker, whose head is softmaxed) rather than the
// first ([CLS]), as llama.cpp decides it.
bool LastTokenRanks(const Model& model);

// pooled: [n_rows, n_embd] (bert: the [CLS] row; a decoder: the last token's row after output_norm).
// Returns [n_rows, n_cls_out]: cls.output(tanh(cls(h))), or cls.output(h) without `cls`; for qwen3
// (Qwen3-Reranker: the "yes"/"no" rows of its lm_head) a softmax over them follows.
std::vector<float> ClassifierScores(const Model& model, ThreadPool& pool, const float* pooled,
                                    int64_t n_rows);

}  // namespace lazyslot
