// nomic-bert (nomic-embed-text v1 / v1.5): bert's post-norm encoder without position embeddings. Positions
// are NEOX RoPE on q and k; q, k and v come from one fused attn_qkv (q, then k, then v rows) viewed in place
// as row ranges; the FFN is SwiGLU (ffn_gate, ffn_up, ffn_down); no biases on the matrices, LayerNorms with
// biases. Its pass is model/encoder.cpp.
#include "model/arch.h"
#include "model/bind.h"
#include "model/encoder.h"

namespace lazyslot {
namespace {

Status BindNomicBertLayer(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  auto name = [il](const char* s) { return tn::Blk(il, s); };
  LS_RETURN_IF_ERROR(BindFusedQkv(f, hp, il, l));
  LS_ASSIGN_OR_RETURN(l->wo, BindMatrix(f, name(tn::kAttnOutput), hp.n_embd_q(), hp.n_embd));
  LS_RETURN_IF_ERROR(BindPostNorms(f, hp, il, l));
  LS_ASSIGN_OR_RETURN(l->w_gate, BindMatrix(f, name(tn::kFfnGate), hp.n_embd, hp.n_ff));
  LS_ASSIGN_OR_RETURN(l->w_up, BindMatrix(f, name(tn::kFfnUp), hp.n_embd, hp.n_ff));
  LS_ASSIGN_OR_RETURN(l->w_down, BindMatrix(f, name(tn::kFfnDown), hp.n_ff, hp.n_embd));
  return Status::Ok();
}

// One post-norm layer over x [n, n_embd]:
//   q, k, v = x . Wqkv                        [n, n_q], [n, n_kv] x2 (row ranges of one matrix)
//   RoPE(q, k) at each token's position in its sequence
//   x = LN(x + attn(q, k, v) . Wo)           attn_output_norm
//   x = LN(x + Wdown . (silu(Wgate . x) * (Wup . x)))   layer_output_norm
void NomicBertLayer(Encoder& e, int il, const Batch& b) {
  const LayerWeights& L = e.model().layer(il);
  e.ProjectQkv(L);
  e.RopeQk(b);
  e.Attend();
  e.ProjectOut(L);
  e.AddResidualLayerNorm(L.attn_out_norm, L.attn_out_norm_b);
  e.FfnSwiGlu(L);
  e.AddResidualLayerNorm(L.out_norm, L.out_norm_b);
}

}  // namespace

const ArchSpec& NomicBertArch() {
  static const ArchSpec spec{
      .name = "nomic-bert",
      .rope_style = RopeStyle::kNeox,
      .q_width_is_n_embd = true,
      .encoder = true,
      .bind_layer = BindNomicBertLayer,
      .encoder_layer = NomicBertLayer,
  };
  return spec;
}

}  // namespace lazyslot
