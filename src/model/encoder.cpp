// The encoder pass (encoder.h): input embeddings, the arch's encoder layers (arch_bert.cpp,
// arch_nomic_bert.cpp) and the blocks they are written in, bidirectional attention within each sequence among
// them. Shapes: n = tokens in the batch, n_q = n_head * head_dim.
#include "model/encoder.h"

#include <atomic>
#include <cmath>
#include <string>

#include "ops/elementwise.h"

namespace lazyslot {
namespace {

// Tokens of a sequence attended together: each of a head's K/V rows is read once for all of them.
constexpr int64_t kAttnTile = 8;
// Rows per thread before a row-wise step is split over the pool.
constexpr int64_t kRowGrain = 4;

template <typename T>
void Grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

Encoder::Encoder(const Model& model, ThreadPool& pool) : model_(model), pool_(pool) {
  attn_scratch_.resize(pool.n_threads());
}

Status Encoder::Split(const Batch& b) {
  const HParams& hp = model_.hparams();
  const int64_t n = b.size();
  LS_RETURN_IF_ERROR(CheckBatch(b, hp.n_vocab, "encoder"));
  seqs_.clear();
  std::vector<int32_t> seen;
  for (int64_t i = 0; i < n; ++i) {
    if (b.output[i] & Batch::kLogits) {
      return InvalidArgument("encoder: " + hp.arch + " computes hidden states only, not logits");
    }
    const bool starts = i == 0 || b.slot[i] != b.slot[i - 1];
    if (starts) {
      for (int32_t s : seen) {
        if (s == b.slot[i]) {
          return InvalidArgument("encoder: slot " + std::to_string(s) + " appears twice in one batch");
        }
      }
      seen.push_back(b.slot[i]);
      seqs_.push_back({i, i});
    }
    const int64_t want = i - seqs_.back().begin;
    if (b.pos[i] != want) {
      return InvalidArgument("encoder: slot " + std::to_string(b.slot[i]) + " expects position " +
                             std::to_string(want) + ", got " + std::to_string(b.pos[i]) +
                             " (an encoder takes whole sequences)");
    }
    if (b.pos[i] >= hp.n_ctx_train) {
      return OutOfRange("encoder: position " + std::to_string(b.pos[i]) + " is past the model's " +
                        std::to_string(hp.n_ctx_train) + " trained positions");
    }
    seqs_.back().end = i + 1;
  }
  return Status::Ok();
}

Status Encoder::Run(const Batch& b, ForwardOutput* out) {
  LS_RETURN_IF_ERROR(Split(b));
  const HParams& hp = model_.hparams();
  const int64_t n = b.size(), n_embd = hp.n_embd;
  n_rows_ = n;
  Grow(x_, n * n_embd);
  Grow(q_, n * hp.n_embd_q());
  Grow(k_, n * hp.n_embd_kv());
  Grow(v_, n * hp.n_embd_kv());
  Grow(attn_, n * hp.n_embd_q());
  Grow(o_, n * n_embd);
  Grow(up_, n * hp.n_ff);

  Embed(b);
  for (int il = 0; il < hp.n_layer; ++il) model_.arch().encoder_layer(*this, il, b);

  out->logit_rows.clear();
  out->logits.clear();
  out->hidden_rows.clear();
  for (int64_t i = 0; i < n; ++i) {
    if (b.output[i] & Batch::kHidden) out->hidden_rows.push_back(static_cast<int32_t>(i));
  }
  out->hidden.resize(out->hidden_rows.size() * n_embd);
  for (size_t r = 0; r < out->hidden_rows.size(); ++r) {
    const float* x = x_.data() + out->hidden_rows[r] * n_embd;
    std::copy(x, x + n_embd, out->hidden.begin() + r * n_embd);
  }
  return Status::Ok();
}

void Encoder::Embed(const Batch& b) {
  const HParams& hp = model_.hparams();
  const int64_t n = b.size(), n_embd = hp.n_embd;
  // Every token has type 0, as llama.cpp feeds bert (a pair is told apart by its SEP alone).
  std::vector<float> type0(n_embd, 0.0f), pos(n_embd);
  if (model_.token_types().data) GetRow(model_.token_types(), 0, type0.data());
  const bool learned_positions = model_.position_embd().data != nullptr;  // bert; nomic-bert rotates q, k
  for (int64_t i = 0; i < n; ++i) {
    float* x = x_.data() + i * n_embd;
    GetRow(model_.token_embd(), b.tokens[i], x);
    AddInPlace(x, type0.data(), n_embd);
    if (learned_positions) {
      GetRow(model_.position_embd(), b.pos[i], pos.data());
      AddInPlace(x, pos.data(), n_embd);
    }
    LayerNorm(x, model_.token_embd_norm().data(), model_.token_embd_norm_b().data(), x, n_embd, hp.norm_eps);
  }
}

void Encoder::ProjectQkv(const LayerWeights& L) {
  const HParams& hp = model_.hparams();
  const int64_t n = n_rows_;
  const MatMulTarget qkv[3] = {{&L.wq, q_.data(), hp.n_embd_q()},
                               {&L.wk, k_.data(), hp.n_embd_kv()},
                               {&L.wv, v_.data(), hp.n_embd_kv()}};
  MatMulMulti(pool_, qkv, 3, x_.data(), n, mm_);
  AddBiasRows(q_.data(), L.bq, n);
  AddBiasRows(k_.data(), L.bk, n);
  AddBiasRows(v_.data(), L.bv, n);
}

void Encoder::RopeQk(const Batch& b) {
  const HParams& hp = model_.hparams();
  const int64_t hd = hp.head_dim, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
  RopeParams rope;
  rope.style = model_.arch().rope_style;
  rope.n_rot = hp.n_rot;
  rope.freq_base = hp.rope_freq_base;
  rope.freq_scale = hp.rope_freq_scale;
  pool_.ParallelFor(n_rows_, kRowGrain, [&](int64_t begin, int64_t end) {
    std::vector<float> cos_t(hp.n_rot / 2), sin_t(hp.n_rot / 2);
    for (int64_t i = begin; i < end; ++i) {
      RopeAngles(rope, b.pos[i], cos_t.data(), sin_t.data());
      RopeApply(rope, cos_t.data(), sin_t.data(), q_.data() + i * n_q, hp.n_head, static_cast<int>(hd));
      RopeApply(rope, cos_t.data(), sin_t.data(), k_.data() + i * n_kv, hp.n_head_kv, static_cast<int>(hd));
    }
  });
}

void Encoder::ProjectOut(const LayerWeights& L) {
  MatMul(pool_, L.wo, attn_.data(), n_rows_, o_.data(), model_.hparams().n_embd, mm_);
  AddBiasRows(o_.data(), L.bo, n_rows_);
}

void Encoder::AddResidualLayerNorm(const std::vector<float>& w, const std::vector<float>& bias) {
  const HParams& hp = model_.hparams();
  const int64_t n_embd = hp.n_embd;
  pool_.ParallelFor(n_rows_, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* x = x_.data() + i * n_embd;
      AddInPlace(x, o_.data() + i * n_embd, n_embd);
      LayerNorm(x, w.data(), bias.data(), x, n_embd, hp.norm_eps);
    }
  });
}

void Encoder::FfnGelu(const LayerWeights& L) {
  const HParams& hp = model_.hparams();
  const int64_t n = n_rows_, n_ff = hp.n_ff;
  MatMul(pool_, L.w_up, x_.data(), n, up_.data(), n_ff, mm_);
  pool_.ParallelFor(n, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* u = up_.data() + i * n_ff;
      if (!L.b_up.empty()) AddInPlace(u, L.b_up.data(), n_ff);
      Gelu(u, n_ff);
    }
  });
  MatMul(pool_, L.w_down, up_.data(), n, o_.data(), hp.n_embd, mm_);
  AddBiasRows(o_.data(), L.b_down, n);
}

void Encoder::FfnSwiGlu(const LayerWeights& L) {
  const HParams& hp = model_.hparams();
  const int64_t n = n_rows_, n_ff = hp.n_ff;
  Grow(gate_, n * n_ff);
  const MatMulTarget gate_up[2] = {{&L.w_gate, gate_.data(), n_ff}, {&L.w_up, up_.data(), n_ff}};
  MatMulMulti(pool_, gate_up, 2, x_.data(), n, mm_);
  pool_.ParallelFor(n, kRowGrain, [&](int64_t begin, int64_t end) {
    SwiGlu(gate_.data() + begin * n_ff, up_.data() + begin * n_ff, (end - begin) * n_ff);
  });
  MatMul(pool_, L.w_down, gate_.data(), n, o_.data(), hp.n_embd, mm_);
}

void Encoder::Attend() {
  const int64_t n = n_rows_;
  const HParams& hp = model_.hparams();
  const int64_t hd = hp.head_dim, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
  const int group = hp.n_head / hp.n_head_kv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Each sequence's K, transposed per kv head (DenseKv): [n_head_kv][hd][ld] floats at kt_off[s].
  std::vector<int64_t> kt_off(seqs_.size() + 1, 0);
  for (size_t s = 0; s < seqs_.size(); ++s) {
    const int64_t ld = (seqs_[s].end - seqs_[s].begin + 7) / 8 * 8;
    kt_off[s + 1] = kt_off[s] + n_kv * ld;
  }
  Grow(kt_, kt_off.back());
  pool_.ParallelFor(static_cast<int64_t>(seqs_.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const int32_t len = static_cast<int32_t>(seqs_[s].end - seqs_[s].begin);
      TransposeKeys(k_.data() + seqs_[s].begin * n_kv, n_kv, len, hp.n_head_kv, static_cast<int>(hd),
                    kt_.data() + kt_off[s], (len + 7) / 8 * 8);
    }
  });
  // Tasks: (tile of up to kAttnTile tokens of one sequence) x kv head, taken from a shared counter.
  std::vector<int64_t> tiles;  // first row of each tile; each tile lies in one sequence
  std::vector<int32_t> tile_seq;
  for (size_t s = 0; s < seqs_.size(); ++s) {
    for (int64_t i = seqs_[s].begin; i < seqs_[s].end; i += kAttnTile) {
      tiles.push_back(i);
      tile_seq.push_back(static_cast<int32_t>(s));
    }
  }
  const int64_t n_tiles = static_cast<int64_t>(tiles.size());
  const int64_t n_tasks = n_tiles * hp.n_head_kv;
  std::atomic<int64_t> next{0};
  auto attend = [&](int ith, int) {
    AttentionScratch& scratch = attn_scratch_[ith];
    for (int64_t t; (t = next.fetch_add(1, std::memory_order_relaxed)) < n_tasks;) {
      const int g = static_cast<int>(t / n_tiles);
      const int64_t tile = t % n_tiles;
      const int32_t si = tile_seq[tile];
      const Seq& seq = seqs_[si];
      const int64_t i0 = tiles[tile], i1 = std::min(i0 + kAttnTile, seq.end);
      DenseKv kv;  // the sequence's own K/V, f32: no rounding, as llama.cpp without a KV cache
      kv.n_kv = static_cast<int32_t>(seq.end - seq.begin);
      kv.ld = (kv.n_kv + 7) / 8 * 8;
      kv.kt = kt_.data() + kt_off[si];
      kv.v = v_.data() + seq.begin * n_kv;
      kv.v_stride = n_kv;
      const int64_t off = i0 * n_q + static_cast<int64_t>(g) * group * hd;
      AttendBatch a;
      a.q = q_.data() + off;
      a.q_tok_stride = a.out_tok_stride = n_q;
      a.q_stride = a.out_stride = hd;
      a.n_q = group;
      a.n_kv_heads = 1;
      a.n_tok = static_cast<int>(i1 - i0);
      a.out = attn_.data() + off;
      AttendDenseF32(a, kv, g, static_cast<int>(hd), scale, scratch);
    }
  };
  if (n * n_kv < 4096) {
    attend(0, 1);
  } else {
    pool_.Run(attend);
  }
}

void Encoder::ReleaseScratch() {
  for (auto* v : {&x_, &q_, &k_, &v_, &kt_, &attn_, &o_, &gate_, &up_}) std::vector<float>().swap(*v);
  for (auto& s : attn_scratch_) s = AttentionScratch{};
  mm_.Release();
}

size_t Encoder::scratch_bytes() const {
  size_t total = mm_.encoded.capacity() + mm_.prepared.capacity();
  for (const auto* v : {&x_, &q_, &k_, &v_, &kt_, &attn_, &o_, &gate_, &up_}) {
    total += v->capacity() * sizeof(float);
  }
  for (const auto& s : attn_scratch_) {
    total += (s.scores.capacity() + s.v_row.capacity() + s.q_f.capacity() + s.acc.capacity() +
              s.state.capacity()) *
                 sizeof(float) +
             s.q_enc.capacity();
  }
  return total;
}

}  // namespace lazyslot
