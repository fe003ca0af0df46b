// The pass of an encoder-only model (bert): every sequence of a batch is whole, attention is bidirectional
// within it, and nothing survives the pass (no KV cache): a slot is a range of batch rows. Its memory is the
// activations of the batch, grown to the batch and released by ReleaseScratch.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "model/batch.h"
#include "model/model.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/thread_pool.h"

namespace lazyslot {

class Encoder {
 public:
  Encoder(const Model& model, ThreadPool& pool);

  // Each slot's tokens in `batch` must be one whole sequence, contiguous, at positions 0, 1, ... (a slot
  // appears once). Hidden rows are the last layer's output (bert has no output_norm); logits are refused.
  Status Run(const Batch& batch, ForwardOutput* out);

  void ReleaseScratch();
  size_t scratch_bytes() const;

 private:
  struct Seq {
    int64_t begin, end;  // batch rows
  };
  Status Split(const Batch& batch);  // fills seqs_
  void Embed(const Batch& batch);    // x = LN(token + type 0 + position)
  void BertLayer(int il, int64_t n);
  // attn_ = softmax(q k^T / sqrt(head_dim)) v within each sequence, over every head.
  void Attend(int64_t n);

  const Model& model_;
  ThreadPool& pool_;
  std::vector<Seq> seqs_;
  // Activations, [n_tokens, width] row-major.
  std::vector<float> x_, q_, k_, v_, kt_, attn_, o_, up_;  // kt_: K transposed per sequence (DenseKv)
  std::vector<AttentionScratch> attn_scratch_;  // one per thread
  MatMulScratch mm_;
};

}  // namespace lazyslot
