// llama: adjacent-pair RoPE (the converter already permuted Wq/Wk rows for it), optional biases on the
// attention and FFN, optional rope_freqs factors, output.weight optional (tied to token_embd).
#include <cmath>

#include "model/arch.h"
#include "model/bind.h"
#include "model/forward.h"

namespace lazyslot {

Status BindLlamaLayer(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  LS_ASSIGN_OR_RETURN(l->attn_norm, BindVector(f, tn::Blk(il, tn::kAttnNorm), hp.n_embd, false));
  LS_RETURN_IF_ERROR(BindAttention(f, hp, il, l));
  LS_ASSIGN_OR_RETURN(l->ffn_norm, BindVector(f, tn::Blk(il, tn::kFfnNorm), hp.n_embd, false));
  return BindGatedFfn(f, hp, il, l);
}

// A pre-norm layer over x [n, n_embd]:
//   h = RmsNorm(x) * attn_norm;  q, k, v = h . Wq, Wk, Wv (+ b)       [n, n_q], [n, n_kv] x2
//   RoPE(q, k); k, v -> the slot's cells;  attn = softmax(q.K^T / sqrt(hd)) . V
//   x += attn . Wo (+ bo)
//   h = RmsNorm(x) * ffn_norm;  x += W_down . (silu(W_gate . h) * (W_up . h))
void LlamaLayer(Forward& f, int il, const Batch& b) {
  const HParams& hp = f.model().hparams();
  const LayerWeights& L = f.model().layer(il);
  f.NormInput(L.attn_norm);
  f.ProjectQkv(L);
  f.RopeAndStore(il, b, f.Rope(hp.rope_freq_base, hp.rope_freq_scale), nullptr);
  f.Attend(il, b, 1.0f / std::sqrt(static_cast<float>(hp.head_dim)), 0);
  f.ProjectOut(L);
  f.AddResidualNormInput(L.ffn_norm);
  f.FfnSwiGlu(L);
  f.AddResidual();
}

const ArchSpec& LlamaArch() {
  static const ArchSpec spec{
      .name = "llama",
      .rope_style = RopeStyle::kNormal,
      .q_width_is_n_embd = false,
      .bind_layer = BindLlamaLayer,
      .layer = LlamaLayer,
  };
  return spec;
}

}  // namespace lazyslot
