// The pass of an encoder-only model (bert, nomic-bert): every sequence of a batch is whole, attention is
// bidirectional within it, and nothing survives the pass (no KV cache): a slot is a range of batch rows. It
// runs the input embeddings, then the architecture's encoder layer function for each layer (arch_bert.cpp,
// arch_nomic_bert.cpp), written in the blocks below. Its memory is the activations of the batch, grown to the
// batch and released by ReleaseScratch.
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
  // appears once). Hidden rows are the last layer's output (an encoder has no output_norm); logits are
  // refused.
  Status Run(const Batch& batch, ForwardOutput* out);

  void ReleaseScratch();
  size_t scratch_bytes() const;

  // Blocks the encoder layer functions are written in, each over the batch's n rows. Buffers are [n, width]
  // row-major: x the residual stream [n_embd]; q [n_q], k and v [n_kv] (n_q = n_head * head_dim,
  // n_kv = n_head_kv * head_dim); attn [n_q]; o a sublayer's output [n_embd]; gate and up [n_ff].
  const Model& model() const { return model_; }
  // q, k, v = x . Wq, Wk, Wv (+ their biases): a post-norm layer projects the residual stream itself.
  void ProjectQkv(const LayerWeights& L);
  // RoPE on q and k at each token's position in its sequence (the model's style, n_rot and base).
  void RopeQk(const Batch& b);
  // attn = softmax(q k^T / sqrt(head_dim)) v within each sequence, over every head.
  void Attend();
  // o = attn . Wo (+ bias)
  void ProjectOut(const LayerWeights& L);
  // x = LayerNorm(x + o) * w + bias (a post-norm)
  void AddResidualLayerNorm(const std::vector<float>& w, const std::vector<float>& bias);
  // o = W_down . gelu(W_up . x + bu) + bd (bert's FFN, GELU in its tanh form)
  void FfnGelu(const LayerWeights& L);
  // o = W_down . (silu(W_gate . x) * (W_up . x)) (nomic-bert's FFN)
  void FfnSwiGlu(const LayerWeights& L);

 private:
  struct Seq {
    int64_t begin, end;  // batch rows
  };
  Status Split(const Batch& batch);  // fills seqs_
  void Embed(const Batch& batch);    // x = LN(token + type 0 [+ learned position])

  const Model& model_;
  ThreadPool& pool_;
  std::vector<Seq> seqs_;
  int64_t n_rows_ = 0;  // tokens of the batch in flight
  // Activations, [n_tokens, width] row-major.
  std::vector<float> x_, q_, k_, v_, kt_, attn_, o_, gate_, up_;  // kt_: K transposed per sequence (DenseKv)
  std::vector<AttentionScratch> attn_scratch_;                    // one per thread
  MatMulScratch mm_;
};

}  // namespace lazyslot
