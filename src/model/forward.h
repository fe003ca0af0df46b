// The forward pass of a decoder-only transformer over a batch of tokens from any number of slots: the
// embedding lookup, the architecture's layer function for each layer (arch_*.cpp, in the blocks below), the
// final norm and the logits. Matmuls run over all rows together, attention per token over its own slot's
// KV cells (on a sliding-window layer, only the cells of its window).
#pragma once

#include <functional>
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

  // Blocks the layer functions are written in, each over the batch's n rows. Buffers are [n, width]
  // row-major: x the residual stream [n_embd]; h a sublayer's normed input [n_embd]; q [n_q], k and v
  // [n_kv] (n_q = n_head * head_dim, n_kv = n_head_kv * head_dim); attn [n_q]; o a sublayer's output
  // [n_embd]; gate and up [n_ff].
  const Model& model() const { return model_; }
  // h = RmsNorm(x) * w
  void NormInput(const std::vector<float>& w);
  // q, k, v = h . Wq, Wk, Wv (+ their biases)
  void ProjectQkv(const LayerWeights& L);
  // Per-head RMS norms of q and k (with `norms`' q_norm/k_norm; nullptr: none), RoPE at each token's
  // position, then k and v go into the slot's cells of layer il (converted to the cache type: this write is
  // what commits the KV pages).
  void RopeAndStore(int il, const Batch& b, const RopeParams& rope, const LayerWeights* norms);
  // q *= s
  void ScaleQ(float s);
  // attn = softmax(scale * q . K^T) . V per token and head over its slot's cells of layer il: all of [0, p]
  // for a token at position p, or [p - window + 1, p] when window > 0.
  void Attend(int il, const Batch& b, float scale, int32_t window);
  // o = attn . Wo (+ bias)
  void ProjectOut(const LayerWeights& L);
  // x += o
  void AddResidual();
  // x += o, then h = RmsNorm(x) * w (one pass over the rows)
  void AddResidualNormInput(const std::vector<float>& w);
  // x += RmsNorm(o) * w (a norm on the sublayer's output: gemma's post-norms)
  void AddNormedResidual(const std::vector<float>& w);
  // o = W_down . (silu(W_gate . h + bg) * (W_up . h + bu)) + bd
  void FfnSwiGlu(const LayerWeights& L);
  // o = W_down . (gelu(W_gate . h) * (W_up . h)), GELU in its tanh form
  void FfnGeGlu(const LayerWeights& L);
  // A mixture-of-experts FFN (forward_moe.cpp): each token is routed to n_expert_used experts (softmax over
  // h . W_router, the largest, renormalised: ops/moe_route.h), and
  // o = sum over its experts e of w_e * W_down[e] . (silu(W_gate[e] . h) * (W_up[e] . h)). The batch's tokens
  // are grouped by expert, so each chosen expert's rows stream once for all the tokens that chose it. il: the
  // layer whose experts (LayerWeights::router, gate_exps, ...) serve.
  void FfnMoe(int il);
  // Called for each token FfnMoe routes, with its layer, its row in the batch and its router logits
  // [n_expert], after its choice: it may change that choice (ids and weights [n_expert_used], best first).
  // The reference tests replay a near tie of two experts the other way with it; nullptr: none.
  using RouteHook = std::function<void(int il, int64_t row, const float* logits, int32_t* ids, float* weights)>;
  void SetRouteHook(RouteHook hook) { route_hook_ = std::move(hook); }
  // The model's RoPE for a layer of the given base and scale: its frequency factors (rope_freqs, or LongRoPE's
  // for this cache's slot size) and attention factor.
  RopeParams Rope(float freq_base, float freq_scale) const;
  // Context shift, after KvCache::DropCells: the K rows of a slot's cells [begin, end) in every layer,
  // rotated for positions `delta` beyond where they now are (delta > 0: they moved down by delta), are
  // rotated back by -delta. Rotations of one frequency compose, RoPE(p - d) = RoPE(-d) RoPE(p), so this is the position
  // change alone (no attention factor); the rows go through f32 and back to the cache type. Each layer uses
  // its own RoPE base and scale (a sliding-window layer's: gemma's). Runs on the thread pool.
  void ShiftKeys(int slot, int32_t begin, int32_t end, int32_t delta);

 private:
  Status Validate(const Batch& batch) const;
  // gate, up = h . W_gate, W_up (+ biases), then o = W_down . gate (+ bias) after `act` fused gate and up.
  template <typename Act>
  void GatedFfn(const LayerWeights& L, Act act);

  const Model& model_;
  KvCache& kv_;
  ThreadPool& pool_;
  AttentionMode mode_;
  // Activations, [n_tokens, width] row-major.
  std::vector<float> x_, h_, q_, k_, v_, attn_, o_, gate_, up_;
  int64_t n_rows_ = 0;                          // tokens of the batch in flight
  std::vector<AttentionScratch> attn_scratch_;  // one per thread
  std::vector<int64_t> tiles_;                  // first token of each attention tile of the batch
  std::vector<int32_t> kv_end_, kv_begin_;      // per token: the cells it attends to
  MatMulScratch mm_;
  // FfnMoe: router logits [n, n_expert]; per (token, rank) pair p = i * n_expert_used + r its expert and
  // weight, and its row in the expert-grouped buffers, where expert e's rows are [expert_begin_[e],
  // expert_begin_[e + 1]): inputs [pairs, n_embd], gate and up [pairs, n_ff_exp], outputs [pairs, n_embd].
  std::vector<float> moe_logits_, moe_weights_, moe_x_, moe_gate_, moe_up_, moe_y_;
  std::vector<int32_t> moe_ids_;
  std::vector<int64_t> moe_row_, expert_begin_;
  RouteHook route_hook_;
};

}  // namespace lazyslot
