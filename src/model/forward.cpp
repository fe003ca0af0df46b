// Forward pass (FORMATS.md section 4) and the blocks the architectures' layer functions are written in.
// Shapes: n = tokens in the batch, n_q = n_head * head_dim, n_kv = n_head_kv * head_dim.
#include "model/forward.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <string>

#include "ops/moe_route.h"
#include "quant/quant.h"

namespace lazyslot {
namespace {

// Rows per thread before the row-wise steps (norms, residual adds, SwiGLU) are split over the pool: a
// single token's rows (about a microsecond of work each) run inline.
constexpr int64_t kRowGrain = 4;

// Tokens of a prompt attended together: each block of a kv head's K/V rows is read once for all of them,
// and its V passes run six rows at a time (ops/attention.cpp): 12 tokens of 2 query heads per kv head fill
// four such passes exactly, where a tile of 8 would leave a pass of 4 rows (pp512 Q8_0, 5 alternating
// rounds: 12 is 1.07x as fast as 8).
constexpr int64_t kAttnTile = 12;
// Attention tasks per thread, at least, when a task takes several kv heads (dynamic balance on a shared
// machine).
constexpr int64_t kMinAttnTasksPerThread = 2;

template <typename T>
void Grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

Forward::Forward(const Model& model, KvCache& kv, ThreadPool& pool, AttentionMode mode)
    : model_(model), kv_(kv), pool_(pool), mode_(mode) {
  attn_scratch_.resize(pool.n_threads());
}

Status Forward::Validate(const Batch& b) const {
  const HParams& hp = model_.hparams();
  const int n = b.size();
  LS_RETURN_IF_ERROR(CheckBatch(b, hp.n_vocab, "forward"));
  std::vector<int32_t> next(kv_.config().n_slot);
  for (int s = 0; s < kv_.config().n_slot; ++s) next[s] = kv_.n_cells(s);
  for (int i = 0; i < n; ++i) {
    const int32_t s = b.slot[i];
    if (s < 0 || s >= kv_.config().n_slot) {
      return InvalidArgument("forward: slot " + std::to_string(s) + " does not exist");
    }
    if (b.pos[i] != next[s]) {
      return InvalidArgument("forward: slot " + std::to_string(s) + " expects position " +
                             std::to_string(next[s]) + ", got " + std::to_string(b.pos[i]));
    }
    if (b.pos[i] >= kv_.config().n_ctx_slot) {
      return OutOfRange("forward: position " + std::to_string(b.pos[i]) + " does not fit the slot's " +
                        std::to_string(kv_.config().n_ctx_slot) + " cells");
    }
    ++next[s];
  }
  return Status::Ok();
}

Status Forward::Run(const Batch& b, ForwardOutput* out) {
  LS_RETURN_IF_ERROR(Validate(b));
  const HParams& hp = model_.hparams();
  const int64_t n = b.size(), n_embd = hp.n_embd;
  n_rows_ = n;
  Grow(x_, n * n_embd);
  Grow(h_, n * n_embd);
  Grow(q_, n * hp.n_embd_q());
  Grow(k_, n * hp.n_embd_kv());
  Grow(v_, n * hp.n_embd_kv());
  Grow(attn_, n * hp.n_embd_q());
  Grow(o_, n * n_embd);

  // Embedding lookup (exact dequantization of the token's row), scaled where the architecture asks.
  for (int64_t i = 0; i < n; ++i) GetRow(model_.token_embd(), b.tokens[i], x_.data() + i * n_embd);
  if (hp.embd_scale != 1.0f) {
    for (int64_t e = 0; e < n * n_embd; ++e) x_[e] *= hp.embd_scale;
  }

  for (int il = 0; il < hp.n_layer; ++il) model_.arch().layer(*this, il, b);

  // The cells are held now, once per slot (its last token's position: they ascend), after which a
  // sliding-window layer gives back what fell out of every window (KvCache::SetCells).
  std::vector<bool> set(kv_.config().n_slot);
  for (int64_t i = n - 1; i >= 0; --i) {
    if (set[b.slot[i]]) continue;
    set[b.slot[i]] = true;
    kv_.SetCells(b.slot[i], b.pos[i] + 1);
  }

  // Final norm on the output rows only (h_ is free again): hidden rows first, then logits rows.
  out->hidden_rows.clear();
  out->logit_rows.clear();
  for (int64_t i = 0; i < n; ++i) {
    if (b.output[i] & Batch::kHidden) out->hidden_rows.push_back(static_cast<int32_t>(i));
    if (b.output[i] & Batch::kLogits) out->logit_rows.push_back(static_cast<int32_t>(i));
  }
  auto final_norm = [&](const std::vector<int32_t>& rows) {
    for (size_t r = 0; r < rows.size(); ++r) {
      RmsNorm(x_.data() + rows[r] * n_embd, model_.output_norm().data(), h_.data() + r * n_embd, n_embd,
              hp.rms_eps);
    }
  };
  final_norm(out->hidden_rows);
  out->hidden.assign(h_.begin(), h_.begin() + out->hidden_rows.size() * n_embd);
  const int64_t n_logits = static_cast<int64_t>(out->logit_rows.size());
  out->logits.resize(n_logits * hp.n_vocab);
  if (n_logits > 0) {
    final_norm(out->logit_rows);
    MatMul(pool_, model_.output(), h_.data(), n_logits, out->logits.data(), hp.n_vocab, mm_);
    AddBiasRows(out->logits.data(), model_.output_bias(), n_logits);
    if (hp.final_logit_softcap > 0) {
      const float c = hp.final_logit_softcap;
      for (float& l : out->logits) l = c * std::tanh(l / c);
    }
  }
  return Status::Ok();
}

RopeParams Forward::Rope(float freq_base, float freq_scale) const {
  const HParams& hp = model_.hparams();
  RopeParams rope;
  rope.style = model_.arch().rope_style;
  rope.n_rot = hp.n_rot;
  rope.freq_base = freq_base;
  rope.freq_scale = freq_scale;
  // rope_freqs, or LongRoPE's factors (phi3) for this cache's slot size: the long ones for slots of more cells
  // than the original context, as llama.cpp chooses by its per-sequence context. A file has one kind at most.
  const std::vector<float>& factors = !model_.rope_freqs().empty()
                                          ? model_.rope_freqs()
                                          : model_.rope_factors(kv_.config().n_ctx_slot > hp.n_ctx_orig);
  rope.freq_factors = factors.empty() ? nullptr : factors.data();
  rope.attn_factor = hp.rope_attn_factor;
  return rope;
}

void Forward::ShiftKeys(int slot, int32_t begin, int32_t end, int32_t delta) {
  const HParams& hp = model_.hparams();
  const int64_t n_cells = end - begin, n_kv = hp.n_embd_kv();
  if (n_cells <= 0 || delta == 0 || hp.n_rot <= 0) return;
  const TensorType type_k = kv_.config().type_k;
  pool_.ParallelFor(hp.n_layer * n_cells, 16, [&](int64_t first, int64_t last) {
    std::vector<float> row(n_kv), cos_t(hp.n_rot / 2), sin_t(hp.n_rot / 2);
    int layer = -1;
    RopeParams rope;
    for (int64_t t = first; t < last; ++t) {
      const int il = static_cast<int>(t / n_cells);
      if (il != layer) {
        layer = il;
        rope = hp.window(il) > 0 ? Rope(hp.rope_freq_base_swa, hp.rope_freq_scale_swa)
                                 : Rope(hp.rope_freq_base, hp.rope_freq_scale);
        rope.attn_factor = 1;  // applied once already, when the row was stored
        RopeAngles(rope, -delta, cos_t.data(), sin_t.data());
      }
      uint8_t* k = kv_.KRow(il, slot, begin + static_cast<int32_t>(t % n_cells));
      quant::DequantizeRow(type_k, k, row.data(), n_kv);
      RopeApply(rope, cos_t.data(), sin_t.data(), row.data(), hp.n_head_kv, hp.head_dim);
      quant::QuantizeRow(type_k, row.data(), k, n_kv);
    }
  });
}

void Forward::NormInput(const std::vector<float>& w) {
  const HParams& hp = model_.hparams();
  const int64_t n_embd = hp.n_embd;
  pool_.ParallelFor(n_rows_, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      RmsNorm(x_.data() + i * n_embd, w.data(), h_.data() + i * n_embd, n_embd, hp.rms_eps);
    }
  });
}

void Forward::ProjectQkv(const LayerWeights& L) {
  const HParams& hp = model_.hparams();
  const int64_t n = n_rows_, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
  const MatMulTarget qkv[3] = {{&L.wq, q_.data(), n_q}, {&L.wk, k_.data(), n_kv}, {&L.wv, v_.data(), n_kv}};
  MatMulMulti(pool_, qkv, 3, h_.data(), n, mm_);  // one encoding of h, one pass over the pool
  AddBiasRows(q_.data(), L.bq, n);
  AddBiasRows(k_.data(), L.bk, n);
  AddBiasRows(v_.data(), L.bv, n);
}

void Forward::RopeAndStore(int il, const Batch& b, const RopeParams& rope, const LayerWeights* norms) {
  const HParams& hp = model_.hparams();
  const int64_t hd = hp.head_dim, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
  const KvConfig& kc = kv_.config();
  pool_.ParallelFor(n_rows_, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> cos_t(hp.n_rot / 2), sin_t(hp.n_rot / 2);
    for (int64_t i = begin; i < end; ++i) {
      float* q = q_.data() + i * n_q;
      float* k = k_.data() + i * n_kv;
      if (norms) {
        for (int h = 0; h < hp.n_head; ++h) RmsNorm(q + h * hd, norms->q_norm.data(), q + h * hd, hd, hp.rms_eps);
        for (int h = 0; h < hp.n_head_kv; ++h)
          RmsNorm(k + h * hd, norms->k_norm.data(), k + h * hd, hd, hp.rms_eps);
      }
      RopeAngles(rope, b.pos[i], cos_t.data(), sin_t.data());
      RopeApply(rope, cos_t.data(), sin_t.data(), q, hp.n_head, hd);
      RopeApply(rope, cos_t.data(), sin_t.data(), k, hp.n_head_kv, hd);
      quant::QuantizeRow(kc.type_k, k, kv_.KRow(il, b.slot[i], b.pos[i]), n_kv);
      quant::QuantizeRow(kc.type_v, v_.data() + i * n_kv, kv_.VRow(il, b.slot[i], b.pos[i]), n_kv);
    }
  });
}

void Forward::ScaleQ(float s) {
  const int64_t width = model_.hparams().n_embd_q();
  pool_.ParallelFor(n_rows_ * width, kRowGrain * width, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) q_[e] *= s;
  });
}

void Forward::Attend(int il, const Batch& b, float scale, int32_t window) {
  const HParams& hp = model_.hparams();
  const int64_t n = n_rows_, hd = hp.head_dim, n_q = hp.n_embd_q();
  const KvConfig& kc = kv_.config();
  // One task per (tile of up to kAttnTile tokens of one slot, run of kv heads): the tile's tokens and the
  // `group` query heads sharing a kv head read each block of its K/V rows once. A token at position p sees
  // cells [0, p] of its slot, or [p - window + 1, p] on a sliding-window layer.
  const int group = hp.n_head / hp.n_head_kv;
  kv_end_.resize(n);
  kv_begin_.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    kv_end_[i] = b.pos[i] + 1;
    kv_begin_[i] = window > 0 ? std::max<int32_t>(0, b.pos[i] + 1 - window) : 0;
  }
  tiles_.clear();
  for (int64_t i = 0; i < n; ++i) {
    if (tiles_.empty() || i - tiles_.back() == kAttnTile || b.slot[i] != b.slot[i - 1]) tiles_.push_back(i);
  }
  const int64_t n_tiles = static_cast<int64_t>(tiles_.size());
  // kv heads per task: as many as leave kMinAttnTasksPerThread tasks per thread. A task reads its heads'
  // slices of each K/V row one after the other, so few tasks (generation) read long stretches of each row.
  int heads = 1;
  while (hp.n_head_kv % (2 * heads) == 0 &&
         n_tiles * hp.n_head_kv / (2 * heads) >= kMinAttnTasksPerThread * pool_.n_threads()) {
    heads *= 2;
  }
  // Fewer (tile, kv head) pairs than threads (one token of a model with one or two kv heads, as Gemma 3):
  // a kv head's query heads split into parts, each a task that reads the head's rows itself, so every thread
  // attends (each query head's result is the same whichever part computes it).
  int parts = 1;
  while (group % (2 * parts) == 0 && n_tiles * hp.n_head_kv * parts < pool_.n_threads()) parts *= 2;
  const int part_q = group / parts;
  const int64_t n_runs = hp.n_head_kv / heads * parts;
  const int64_t n_tasks = n_tiles * n_runs;
  // Tasks are taken from a shared counter run of heads by run, and within a run last tiles (the longest)
  // first, so causal prompts balance and the tiles of a batch read the run's K/V rows while they are still
  // in cache. At 16,384 held tokens a kv head's rows are 8 MiB, more than the cache: attended token by
  // token, every token would stream them from memory; a tile reads them once per kAttnTile tokens (pp16
  // with 8-token tiles: 7.0-7.1 t/s against 3.6-4.6 token by token).
  std::atomic<int64_t> next{0};
  auto attend = [&](int ith, int) {
    AttentionScratch& scratch = attn_scratch_[ith];
    for (int64_t t; (t = next.fetch_add(1, std::memory_order_relaxed)) < n_tasks;) {
      const int run = static_cast<int>(t / n_tiles);
      const int g = run / parts * heads, part = run % parts;
      const int64_t tile = n_tiles - 1 - t % n_tiles;
      const int64_t i0 = tiles_[tile], i1 = tile + 1 < n_tiles ? tiles_[tile + 1] : n;
      KvRows rows;
      rows.type_k = kc.type_k;
      rows.type_v = kc.type_v;
      rows.k = kv_.KRow(il, b.slot[i0], 0);
      rows.v = kv_.VRow(il, b.slot[i0], 0);
      rows.k_row_bytes = kv_.k_row_bytes();
      rows.v_row_bytes = kv_.v_row_bytes();
      const int64_t off = i0 * n_q + (static_cast<int64_t>(g) * group + part * part_q) * hd;
      AttendBatch a;
      a.q = q_.data() + off;
      a.q_tok_stride = a.out_tok_stride = n_q;
      a.q_stride = a.out_stride = hd;
      a.n_q = part_q;
      a.n_kv_heads = heads;
      a.n_tok = static_cast<int>(i1 - i0);
      a.n_kv = kv_end_.data() + i0;
      a.kv_begin = window > 0 ? kv_begin_.data() + i0 : nullptr;
      a.out = attn_.data() + off;
      AttendTokens(mode_, a, rows, g, static_cast<int>(hd), scale, scratch);
    }
  };
  // Small attention work (short contexts, tiny heads) is not worth waking the pool for.
  const int64_t seen = window > 0 ? std::min<int64_t>(window, b.pos[n - 1] + 1) : b.pos[n - 1] + 1;
  const int64_t work = n * hp.n_head_kv * hd * (kv_.n_cells(b.slot[n - 1]) + seen);
  if (work < (int64_t{1} << 16)) {
    attend(0, 1);
  } else {
    pool_.Run(attend);
  }
}

void Forward::ProjectOut(const LayerWeights& L) {
  MatMul(pool_, L.wo, attn_.data(), n_rows_, o_.data(), model_.hparams().n_embd, mm_);
  AddBiasRows(o_.data(), L.bo, n_rows_);
}

void Forward::AddResidual() {
  const int64_t n_embd = model_.hparams().n_embd;
  pool_.ParallelFor(n_rows_ * n_embd, kRowGrain * n_embd, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) x_[e] += o_[e];
  });
}

void Forward::AddResidualNormInput(const std::vector<float>& w) {
  const HParams& hp = model_.hparams();
  const int64_t n_embd = hp.n_embd;
  // The row-wise steps run on the pool for prompts (on one thread alone they would take ~7% of pp512); a
  // token's rows stay inline (kRowGrain).
  pool_.ParallelFor(n_rows_, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* x = x_.data() + i * n_embd;
      const float* o = o_.data() + i * n_embd;
      for (int64_t e = 0; e < n_embd; ++e) x[e] += o[e];
      RmsNorm(x, w.data(), h_.data() + i * n_embd, n_embd, hp.rms_eps);
    }
  });
}

void Forward::AddNormedResidual(const std::vector<float>& w) {
  const HParams& hp = model_.hparams();
  const int64_t n_embd = hp.n_embd;
  pool_.ParallelFor(n_rows_, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* o = o_.data() + i * n_embd;
      RmsNorm(o, w.data(), o, n_embd, hp.rms_eps);
      AddInPlace(x_.data() + i * n_embd, o, n_embd);
    }
  });
}

template <typename Act>
void Forward::GatedFfn(const LayerWeights& L, Act act) {
  const HParams& hp = model_.hparams();
  const int64_t n = n_rows_;
  Grow(gate_, n * hp.n_ff);
  Grow(up_, n * hp.n_ff);
  const MatMulTarget gate_up[2] = {{&L.w_gate, gate_.data(), hp.n_ff}, {&L.w_up, up_.data(), hp.n_ff}};
  MatMulMulti(pool_, gate_up, 2, h_.data(), n, mm_);
  AddBiasRows(gate_.data(), L.b_gate, n);
  AddBiasRows(up_.data(), L.b_up, n);
  pool_.ParallelFor(n, kRowGrain, [&](int64_t begin, int64_t end) {
    act(gate_.data() + begin * hp.n_ff, up_.data() + begin * hp.n_ff, (end - begin) * hp.n_ff);
  });
  MatMul(pool_, L.w_down, gate_.data(), n, o_.data(), hp.n_embd, mm_);
  AddBiasRows(o_.data(), L.b_down, n);
}

void Forward::FfnSwiGlu(const LayerWeights& L) {
  GatedFfn(L, [](float* gate, const float* up, int64_t count) { SwiGlu(gate, up, count); });
}

void Forward::FfnGeGlu(const LayerWeights& L) {
  GatedFfn(L, [](float* gate, const float* up, int64_t count) {
    Gelu(gate, count);
    for (int64_t e = 0; e < count; ++e) gate[e] *= up[e];
  });
}

void Forward::FfnMoe(int il) {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.layer(il);
  const int64_t n = n_rows_, n_embd = hp.n_embd, n_ff = hp.n_ff_exp;
  const int n_expert = hp.n_expert, k = hp.n_expert_used;
  const int64_t n_pairs = n * k;
  // Routing: logits [n, n_expert] = h . W_router, then per token its k experts and their weights.
  Grow(moe_logits_, n * n_expert);
  moe_ids_.resize(n_pairs);
  Grow(moe_weights_, n_pairs);
  MatMul(pool_, L.router, h_.data(), n, moe_logits_.data(), n_expert, mm_);
  pool_.ParallelFor(n, kRowGrain, [&](int64_t begin, int64_t end) {
    std::vector<float> probs(n_expert);
    for (int64_t i = begin; i < end; ++i) {
      RouteTopK(moe_logits_.data() + i * n_expert, n_expert, k, /*normalize=*/true, moe_ids_.data() + i * k,
                moe_weights_.data() + i * k, probs.data());
    }
  });
  if (route_hook_) {
    for (int64_t i = 0; i < n; ++i) {
      route_hook_(il, i, moe_logits_.data() + i * n_expert, moe_ids_.data() + i * k, moe_weights_.data() + i * k);
    }
  }
  // Grouping: expert e's pairs take rows [expert_begin_[e], expert_begin_[e + 1]) in token order, and each
  // pair's input is its token's h.
  expert_begin_.assign(n_expert + 1, 0);
  for (int64_t p = 0; p < n_pairs; ++p) ++expert_begin_[moe_ids_[p] + 1];
  for (int e = 0; e < n_expert; ++e) expert_begin_[e + 1] += expert_begin_[e];
  moe_row_.resize(n_pairs);
  std::vector<int64_t> fill(expert_begin_.begin(), expert_begin_.end() - 1);
  for (int64_t p = 0; p < n_pairs; ++p) moe_row_[p] = fill[moe_ids_[p]]++;
  Grow(moe_x_, n_pairs * n_embd);
  Grow(moe_gate_, n_pairs * n_ff);
  Grow(moe_up_, n_pairs * n_ff);
  Grow(moe_y_, n_pairs * n_embd);
  pool_.ParallelFor(n_pairs, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      std::copy_n(h_.data() + p / k * n_embd, n_embd, moe_x_.data() + moe_row_[p] * n_embd);
    }
  });
  // The experts with tokens, by token count: experts of equal count share one pass over the pool (a decode
  // step's k experts of one row each take one pass for gate and up and one for down).
  std::vector<int32_t> active;
  for (int e = 0; e < n_expert; ++e) {
    if (expert_begin_[e + 1] > expert_begin_[e]) active.push_back(e);
  }
  auto count = [&](int32_t e) { return expert_begin_[e + 1] - expert_begin_[e]; };
  std::stable_sort(active.begin(), active.end(), [&](int32_t a, int32_t b) { return count(a) < count(b); });
  std::vector<MatMulTarget> targets;
  // Runs `add`'s targets for each group of experts of one count, per_pass experts at a time.
  auto for_groups = [&](int per_pass, const std::function<void(int32_t e)>& add) {
    for (size_t g0 = 0; g0 < active.size();) {
      size_t g1 = g0;
      targets.clear();
      while (g1 < active.size() && g1 - g0 < static_cast<size_t>(per_pass) &&
             count(active[g1]) == count(active[g0])) {
        add(active[g1++]);
      }
      MatMulMulti(pool_, targets.data(), static_cast<int>(targets.size()), nullptr, count(active[g0]), mm_);
      g0 = g1;
    }
  };
  // gate, up = x . W_gate[e], W_up[e] for each expert's rows;  gate = silu(gate) * up
  for_groups(kMatMulMaxTargets / 2, [&](int32_t e) {
    const float* x = moe_x_.data() + expert_begin_[e] * n_embd;
    targets.push_back({&L.gate_exps[e], moe_gate_.data() + expert_begin_[e] * n_ff, n_ff, x});
    targets.push_back({&L.up_exps[e], moe_up_.data() + expert_begin_[e] * n_ff, n_ff, x});
  });
  pool_.ParallelFor(n_pairs, kRowGrain, [&](int64_t begin, int64_t end) {
    SwiGlu(moe_gate_.data() + begin * n_ff, moe_up_.data() + begin * n_ff, (end - begin) * n_ff);
  });
  // y = gate . W_down[e]                                                           [pairs, n_embd]
  for_groups(kMatMulMaxTargets, [&](int32_t e) {
    targets.push_back({&L.down_exps[e], moe_y_.data() + expert_begin_[e] * n_embd, n_embd,
                       moe_gate_.data() + expert_begin_[e] * n_ff});
  });
  // o = w_0 y_0 + w_1 y_1 + ... in rank order (as llama.cpp adds its weighted experts' views).
  pool_.ParallelFor(n, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* o = o_.data() + i * n_embd;
      for (int r = 0; r < k; ++r) {
        const float w = moe_weights_[i * k + r];
        const float* y = moe_y_.data() + moe_row_[i * k + r] * n_embd;
        for (int64_t c = 0; c < n_embd; ++c) o[c] = r == 0 ? w * y[c] : o[c] + w * y[c];
      }
    }
  });
}

void Forward::ReleaseScratch() {
  for (auto* v : {&x_, &h_, &q_, &k_, &v_, &attn_, &o_, &gate_, &up_, &moe_logits_, &moe_weights_, &moe_x_,
                  &moe_gate_, &moe_up_, &moe_y_}) {
    std::vector<float>().swap(*v);
  }
  std::vector<int32_t>().swap(moe_ids_);
  std::vector<int64_t>().swap(moe_row_);
  for (auto& s : attn_scratch_) s = AttentionScratch{};
  mm_.Release();
}

size_t Forward::scratch_bytes() const {
  size_t total = mm_.encoded.capacity();
  for (const auto* v : {&x_, &h_, &q_, &k_, &v_, &attn_, &o_, &gate_, &up_, &moe_logits_, &moe_weights_,
                        &moe_x_, &moe_gate_, &moe_up_, &moe_y_}) {
    total += v->capacity() * sizeof(float);
  }
  total += moe_ids_.capacity() * sizeof(int32_t) + moe_row_.capacity() * sizeof(int64_t);
  return total;
}

}  // namespace lazyslot
