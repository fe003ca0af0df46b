// bert (BGE, MiniLM, E5, GTE and their rerankers): learned absolute positions, post-norm layers with
// LayerNorm and biases, GELU FFN without a gate, bidirectional attention. Its pass is model/encoder.cpp.
#include <cmath>

#include "model/arch.h"
#include "model/bind.h"
#include "model/encoder.h"

namespace lazyslot {
namespace {

Status BindBertLayer(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
  auto name = [il](const char* s) { return tn::Blk(il, s); };
  if (f.FindTensor(name(tn::kAttnQkv))) {
    return Unimplemented("model: " + f.path() + ": a fused '" + name(tn::kAttnQkv) + "' in a bert file");
  }
  LS_RETURN_IF_ERROR(BindAttention(f, hp, il, l));
  LS_RETURN_IF_ERROR(BindPostNorms(f, hp, il, l));
  if (f.FindTensor(name(tn::kFfnGate))) {
    return Unimplemented("model: " + f.path() + ": a bert FFN with a gate (" + name(tn::kFfnGate) +
                         ") is not supported");
  }
  LS_ASSIGN_OR_RETURN(l->w_up, BindMatrix(f, name(tn::kFfnUp), n_embd, n_ff));
  LS_ASSIGN_OR_RETURN(l->w_down, BindMatrix(f, name(tn::kFfnDown), n_ff, n_embd));
  LS_ASSIGN_OR_RETURN(l->b_up, BindVector(f, name(tn::kFfnUpBias), n_ff, true));
  LS_ASSIGN_OR_RETURN(l->b_down, BindVector(f, name(tn::kFfnDownBias), n_embd, true));
  return Status::Ok();
}

// One post-norm layer over x [n, n_embd]:
//   q, k, v = x . Wq/Wk/Wv + b              [n, n_q], [n, n_kv] x2
//   x = LN(x + (attn(q, k, v) . Wo + bo))    attn_output_norm
//   x = LN(x + (gelu(x . Wup + bup) . Wdown + bdown))   layer_output_norm
void BertLayer(Encoder& e, int il, const Batch&) {
  const LayerWeights& L = e.model().layer(il);
  e.ProjectQkv(L);
  e.Attend();
  e.ProjectOut(L);
  e.AddResidualLayerNorm(L.attn_out_norm, L.attn_out_norm_b);
  e.FfnGelu(L);
  e.AddResidualLayerNorm(L.out_norm, L.out_norm_b);
}

}  // namespace

const ArchSpec& BertArch() {
  static const ArchSpec spec{
      .name = "bert",
      .rope_style = RopeStyle::kNormal,  // unused: positions are learned embeddings
      .q_width_is_n_embd = true,
      .encoder = true,
      .learned_positions = true,
      .bind_layer = BindBertLayer,
      .encoder_layer = BertLayer,
  };
  return spec;
}

}  // namespace lazyslot
