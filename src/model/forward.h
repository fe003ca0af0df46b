// The forward pass of a decoder-only transformer (llama, qwen2, qwen3) over a batch of tokens from any
// number of slots: matmuls over all rows together, attention per token over its own slot's KV cells.
#pragma once

#include <vector>

#include "core/status.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/model.h"
#include "ops/attention.h"
#include "ops/thread_pool.h"

namespace lazyslot {

class Forward {
 public:
  Forward(const Model& model, KvCache& kv, ThreadPool& pool, AttentionMode mode = AttentionMode::kStandard);

  // Runs the batch. Each slot's tokens must continue its sequence: positions n_cells(slot), +1, ... in order.
  // Writes K/V for every token, then updates the slots' cell counts.
  // Output rows follow each token's Batch::OutputFlags.
  Status Run(const Batch& batch, ForwardOutput* out);

  // Frees the activation buffers (they are re-grown on the next Run).
  void ReleaseScratch();
  // Bytes held by the activation buffers.
  size_t scratch_bytes() const;

 private:
  Status Validate(const Batch& batch) const;
  void Layer(int il, const Batch& batch);

  const Model& model_;
  KvCache& kv_;
  ThreadPool& pool_;
  AttentionMode mode_;
  // Activations, [n_tokens, width] row-major.
  std::vector<float> x_, h_, q_, k_, v_, attn_, o_, gate_, up_;
  std::vector<AttentionScratch> attn_scratch_;  // one per thread
  std::vector<int64_t> tiles_;                  // first token of each attention tile of the batch
  MatMulScratch mm_;
};

}  // namespace lazyslot
