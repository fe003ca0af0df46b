// qwen3: NEOX RoPE, per-head RMS norms of q and k (attn_q_norm/attn_k_norm, [head_dim]) applied before RoPE,
// head_dim from key_length (may exceed n_embd / n_head), no biases, usually a tied output.
#include <cmath>

#include "model/arch.h"
#include "model/bind.h"
#include "model/forward.h"

namespace lazyslot {
namespace {

Status BindQwen3Layer(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  LS_RETURN_IF_ERROR(BindLlamaLayer(f, hp, il, l));
  return BindQkNorms(f, hp, il, l);
}

// llama's layer with q and k normed per head before RoPE (the attention in Qwen3Attention):
//   x += attention(x);  h = RmsNorm(x) * ffn_norm;  x += W_down . (silu(W_gate . h) * (W_up . h))
void Qwen3Layer(Forward& f, int il, const Batch& b) {
  Qwen3Attention(f, il, b);
  f.FfnSwiGlu(f.model().layer(il));
  f.AddResidual();
}

}  // namespace

//   h = RmsNorm(x) * attn_norm;  q, k, v = h . Wq, Wk, Wv          [n, n_q], [n, n_kv] x2
//   q, k = RmsNorm per head * q_norm, k_norm;  RoPE;  k, v -> cells
//   x += softmax(q.K^T / sqrt(hd)) . V . Wo;  h = RmsNorm(x) * ffn_norm
void Qwen3Attention(Forward& f, int il, const Batch& b) {
  const HParams& hp = f.model().hparams();
  const LayerWeights& L = f.model().layer(il);
  f.NormInput(L.attn_norm);
  f.ProjectQkv(L);
  f.RopeAndStore(il, b, f.Rope(hp.rope_freq_base, hp.rope_freq_scale), &L);
  f.Attend(il, b, 1.0f / std::sqrt(static_cast<float>(hp.head_dim)), 0);
  f.ProjectOut(L);
  f.AddResidualNormInput(L.ffn_norm);
}

const ArchSpec& Qwen3Arch() {
  static const ArchSpec spec{
      .name = "qwen3",
      .rope_style = RopeStyle::kNeox,
      .q_width_is_n_embd = false,
      .bind_layer = BindQwen3Layer,
      .layer = Qwen3Layer,
  };
  return spec;
}

}  // namespace lazyslot
