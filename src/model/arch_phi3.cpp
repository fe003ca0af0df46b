// phi3 (Phi-3, Phi-3.5-mini, Phi-4-mini): llama's layer (LlamaLayer) over one fused attn_qkv (q, then k, then
// v rows) and one ffn_up holding gate then up, both viewed in place as row ranges (nothing is copied apart);
// NEOX RoPE on the first rope.dimension_count dims of each head (partial rotary), with LongRoPE:
// rope_factors_short / rope_factors_long divide the frequencies (long when a slot holds more cells than
// rope.scaling.original_context_length, as llama.cpp chooses by its per-sequence context) and
// rope.scaling.attn_factor multiplies the rotated dims' cos and sin (Forward::Rope applies both). The
// sliding_window key is ignored, as llama.cpp ignores it for phi3: every layer attends to all earlier keys.
#include <algorithm>
#include <cmath>
#include <string>

#include "gguf/keys.h"
#include "model/arch.h"
#include "model/bind.h"

namespace lazyslot {
namespace {

Status ReadPhi3HParams(const gguf::File& f, HParams* hp) {
  const std::string orig_key = gguf::keys::ArchKey(hp->arch, gguf::keys::kRopeScalingOriginalContextLength);
  const std::string attn_factor_key = gguf::keys::ArchKey(hp->arch, gguf::keys::kRopeScalingAttnFactor);
  LS_ASSIGN_OR_RETURN(uint32_t n_orig, f.GetU32Or(orig_key, static_cast<uint32_t>(hp->n_ctx_train)));
  LS_ASSIGN_OR_RETURN(hp->rope_attn_factor, f.GetF32Or(attn_factor_key, 1.0f));
  if (!(hp->rope_attn_factor > 0) || !std::isfinite(hp->rope_attn_factor)) {
    return Corrupt("model: " + f.path() + ": " + attn_factor_key + " must be positive");
  }
  hp->n_ctx_orig = static_cast<int32_t>(std::min<uint32_t>(n_orig, 1u << 30));
  return Status::Ok();
}

Status BindPhi3Layer(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  auto name = [il](const char* s) { return tn::Blk(il, s); };
  LS_ASSIGN_OR_RETURN(l->attn_norm, BindVector(f, name(tn::kAttnNorm), hp.n_embd, false));
  LS_RETURN_IF_ERROR(BindFusedQkv(f, hp, il, l));
  LS_ASSIGN_OR_RETURN(l->wo, BindMatrix(f, name(tn::kAttnOutput), hp.n_embd_q(), hp.n_embd));
  LS_ASSIGN_OR_RETURN(l->ffn_norm, BindVector(f, name(tn::kFfnNorm), hp.n_embd, false));
  LS_ASSIGN_OR_RETURN(auto gate_up, BindFusedRows(f, name(tn::kFfnUp), hp.n_embd, {hp.n_ff, hp.n_ff}));
  l->w_gate = gate_up[0];
  l->w_up = gate_up[1];
  LS_ASSIGN_OR_RETURN(l->w_down, BindMatrix(f, name(tn::kFfnDown), hp.n_ff, hp.n_embd));
  return Status::Ok();
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
      .layer = LlamaLayer,
  };
  return spec;
}

}  // namespace lazyslot
