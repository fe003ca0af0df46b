// phi3 (Phi-3, Phi-3.5-mini, Phi-4-mini): a llama-style pre-norm layer with one fused attn_qkv (q, then k,
// then v rows) and one ffn_up holding gate then up, both viewed in place as row ranges (nothing is copied
// apart); NEOX RoPE on the first rope.dimension_count dims of each head (partial rotary), with LongRoPE:
// rope_factors_short / rope_factors_long divide the frequencies (long when a slot holds more cells than
// rope.scaling.original_context_length, as llama.cpp chooses by its per-sequence context) and
// rope.scaling.attn_factor multiplies the rotated dims' cos and sin. The sliding_window key is ignored, as
// llama.cpp ignores it for phi3: every layer attends to all earlier keys.
#include <cmath>
#include <string>

#include "model/arch.h"
#include "model/bind.h"
#include "model/forward.h"

namespace lazyslot {
namespace {

Status ReadPhi3HParams(const gguf::File& f, HParams* hp) {
  const std::string a = hp->arch + ".";
  LS_ASSIGN_OR_RETURN(uint32_t n_orig, f.GetU32Or(a + "rope.scaling.original_context_length",
                                                  static_cast<uint32_t>(hp->n_ctx_train)));
  LS_ASSIGN_OR_RETURN(hp->rope_attn_factor, f.GetF32Or(a + "rope.scaling.attn_factor", 1.0f));
  if (!(hp->rope_attn_factor > 0) || !std::isfinite(hp->rope_attn_factor)) {
    return Corrupt("model: " + f.path() + ": " + a + "rope.scaling.attn_factor must be positive");
  }
  hp->n_ctx_orig = static_cast<int32_t>(std::min<uint32_t>(n_orig, 1u << 30));
  return Status::Ok();
}

Status BindPhi3Layer(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  auto name = [il](const char* s) { return tn::Blk(il, s); };
  LS_ASSIGN_OR_RETURN(l->attn_norm, BindVector(f, name(tn::kAttnNorm), hp.n_embd, false));
  LS_ASSIGN_OR_RETURN(auto qkv, BindFusedRows(f, name(tn::kAttnQkv), hp.n_embd,
                                              {hp.n_embd_q(), hp.n_embd_kv(), hp.n_embd_kv()}));
  l->wq = qkv[0];
  l->wk = qkv[1];
  l->wv = qkv[2];
  LS_ASSIGN_OR_RETURN(l->wo, BindMatrix(f, name(tn::kAttnOutput), hp.n_embd_q(), hp.n_embd));
  LS_ASSIGN_OR_RETURN(l->ffn_norm, BindVector(f, name(tn::kFfnNorm), hp.n_embd, false));
  LS_ASSIGN_OR_RETURN(auto gate_up, BindFusedRows(f, name(tn::kFfnUp), hp.n_embd, {hp.n_ff, hp.n_ff}));
  l->w_gate = gate_up[0];
  l->w_up = gate_up[1];
  LS_ASSIGN_OR_RETURN(l->w_down, BindMatrix(f, name(tn::kFfnDown), hp.n_ff, hp.n_embd));
  return Status::Ok();
}

// llama's layer over fused projections, with LongRoPE on the first n_rot dims:
//   h = RmsNorm(x) * attn_norm;  q, k, v = row ranges of h . W_qkv             [n, n_q], [n, n_kv] x2
//   RoPE(q, k) with the factors for this slot size, cos/sin * attn_factor;  k, v -> cells
//   x += softmax(q.K^T / sqrt(hd)) . V . Wo
//   h = RmsNorm(x) * ffn_norm;  g, u = halves of h . W_up;  x += W_down . (silu(g) * u)
void Phi3Layer(Forward& f, int il, const Batch& b) {
  const HParams& hp = f.model().hparams();
  const LayerWeights& L = f.model().layer(il);
  f.NormInput(L.attn_norm);
  f.ProjectQkv(L);
  RopeParams rope = f.Rope(hp.rope_freq_base, hp.rope_freq_scale);
  const std::vector<float>& factors = f.model().rope_factors(f.n_ctx_slot() > hp.n_ctx_orig);
  if (!factors.empty()) rope.freq_factors = factors.data();
  rope.attn_factor = hp.rope_attn_factor;
  f.RopeAndStore(il, b, rope, nullptr);
  f.Attend(il, b, 1.0f / std::sqrt(static_cast<float>(hp.head_dim)), 0);
  f.ProjectOut(L);
  f.AddResidualNormInput(L.ffn_norm);
  f.FfnSwiGlu(L);
  f.AddResidual();
}

}  // namespace

const ArchSpec& Phi3Arch() {
  static const ArchSpec spec{
      .name = "phi3",
      .rope_style = RopeStyle::kNeox,
      .q_width_is_n_embd = false,
      .long_rope = true,
      .read_hparams = ReadPhi3HParams,
      .bind_layer = BindPhi3Layer,
      .layer = Phi3Layer,
  };
  return spec;
}

}  // namespace lazyslot
