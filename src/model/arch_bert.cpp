// bert (BGE, MiniLM, E5, GTE and their rerankers): learned absolute positions, post-norm layers with
// LayerNorm and biases, GELU FFN without a gate, bidirectional attention. Its pass is model/encoder.cpp.
#include "model/arch.h"
#include "model/encoder.h"
#include "ops/elementwise.h"

namespace lazyslot {

const ArchSpec& BertArch() {
  static const ArchSpec spec{
      .name = "bert",
      .rope_style = RopeStyle::kNormal,  // unused: positions are learned embeddings
      .q_width_is_n_embd = true,
      .encoder = true,
  };
  return spec;
}

namespace {

// Rows per thread before a row-wise step is split over the pool.
constexpr int64_t kRowGrain = 4;

}  // namespace

// One post-norm layer over x_ [n, n_embd]:
//   q, k, v = x . Wq/Wk/Wv + b              [n, n_q], [n, n_kv] x2
//   x = LN(x + (attn(q, k, v) . Wo + bo))    attn_output_norm
//   x = LN(x + (gelu(x . Wup + bup) . Wdown + bdown))   layer_output_norm
void Encoder::BertLayer(int il, int64_t n) {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.layer(il);
  const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();

  const MatMulTarget qkv[3] = {{&L.wq, q_.data(), n_q}, {&L.wk, k_.data(), n_kv}, {&L.wv, v_.data(), n_kv}};
  MatMulMulti(pool_, qkv, 3, x_.data(), n, mm_);
  AddBiasRows(q_.data(), L.bq, n);
  AddBiasRows(k_.data(), L.bk, n);
  AddBiasRows(v_.data(), L.bv, n);
  Attend(n);
  MatMul(pool_, L.wo, attn_.data(), n, o_.data(), n_embd, mm_);
  AddBiasRows(o_.data(), L.bo, n);
  pool_.ParallelFor(n, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* x = x_.data() + i * n_embd;
      AddInPlace(x, o_.data() + i * n_embd, n_embd);
      LayerNorm(x, L.attn_out_norm.data(), L.attn_out_norm_b.data(), x, n_embd, hp.norm_eps);
    }
  });

  MatMul(pool_, L.w_up, x_.data(), n, up_.data(), hp.n_ff, mm_);
  pool_.ParallelFor(n, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* u = up_.data() + i * hp.n_ff;
      if (!L.b_up.empty()) AddInPlace(u, L.b_up.data(), hp.n_ff);
      Gelu(u, hp.n_ff);
    }
  });
  MatMul(pool_, L.w_down, up_.data(), n, o_.data(), n_embd, mm_);
  AddBiasRows(o_.data(), L.b_down, n);
  pool_.ParallelFor(n, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* x = x_.data() + i * n_embd;
      AddInPlace(x, o_.data() + i * n_embd, n_embd);
      LayerNorm(x, L.out_norm.data(), L.out_norm_b.data(), x, n_embd, hp.norm_eps);
    }
  });
}

}  // namespace lazyslot
