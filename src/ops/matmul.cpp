// MatMul: encode the activations once, then split the weight rows into chunks over the pool: generation gives
// each thread a contiguous range of chunks to stream in order (ThreadPool::ParallelForRanges), prompt batches
// hand chunks out one at a time to whichever thread asks (ParallelForDynamic), tiny products run inline.
// Within a chunk the activation rows go eight at a time through the kernel's tile (a K-quant weight block is
// decoded once per eight rows), and the chunk's weights (<= 16 KiB) stay in L1 while the batch streams by.
// Prompt-sized batches of a format with a packed kernel (Q4_K, Q5_K, Q6_K, Q8_0, Q4_0) first interleave the
// chunk's rows in groups of eight (AVX2) or sixteen (AVX-512) into a per-thread buffer (quant::PackedKernel),
// so one instruction serves a whole group; results are the same bits either way.
#include "ops/matmul.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/status.h"
#include "quant/gemv_confirm.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace lazyslot {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxTargets = kMatMulMaxTargets;
constexpr int64_t kTileRows =
    8;  // activation rows per kernel call (the K-quant tiles decode a block once for 8)
constexpr int64_t kDecodeRows = 4;  // batches up to this size stream the weights like a single token
// Packing a chunk costs about as much as a few activation rows through the plain tile, so small batches
// (several slots decoding together) keep the plain tile. 16 is a cautious guess: at 5 the measured difference
// is within the noise (docs/bench.md).
constexpr int64_t kPackMinRows = 16;

// Weight rows per work chunk. Generation (m <= 4) streams the weights from memory: each thread runs its own
// contiguous range of ~128 KiB chunks in order (ThreadPool::ParallelForRanges), so its reads stay one stream
// (handing chunks out in turn costs ~1 us of cold stream per chunk: 32 KiB chunks in turn give 0.75x the tg
// of 128 KiB ones, docs/bench.md), and every thread still has at least kMinChunksPerThread chunks of a matrix
// that the others can take over from its end. Prompt batches reuse each chunk m / 4 times: <= 16 KiB keeps
// it in L1 next to the current activation tile, and they take chunks from one shared counter.
constexpr int64_t kDecodeChunkBytes = 131072;
constexpr int64_t kMinChunksPerThread = 4;
// Interleaved weights (group > 0) take whole groups of `group` rows.
int64_t ChunkRows(size_t row_bytes, int64_t m, int pack_rows, int64_t n_out, int n_threads, int group) {
  const int64_t rb = static_cast<int64_t>(std::max<size_t>(row_bytes, 1));
  if (group > 0 && (m <= kDecodeRows || pack_rows == 0)) {
    const int64_t bytes = m <= kDecodeRows ? kDecodeChunkBytes : 16384;
    int64_t rows = bytes / rb;
    if (m <= kDecodeRows) rows = std::min(rows, n_out / (kMinChunksPerThread * n_threads));
    return std::max<int64_t>(rows / group, 1) * group;
  }
  if (m <= kDecodeRows) {
    const int64_t rows = std::min(kDecodeChunkBytes / rb, n_out / (kMinChunksPerThread * n_threads));
    return std::max<int64_t>(rows, 4) & ~int64_t{1};  // an even count: the batch tiles take rows in pairs
  }
  const int64_t rows = 16384 / rb;
  // Whole groups for a packed kernel (pack_rows > 0); else an even count.
  if (pack_rows > 0) return std::clamp<int64_t>(rows, pack_rows, 64) / pack_rows * pack_rows;
  return std::clamp<int64_t>(rows, 4, 64) & ~int64_t{1};
}

struct Plan {
  const WeightView* w = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
  quant::VecDotTileFn tile = nullptr;  // null: the generic loop over `dot`
  quant::VecDotFn dot = nullptr;
  const quant::PackedKernel* packed = nullptr;  // set when this batch goes through the packed kernel
  const uint8_t* act = nullptr;                 // encoded activations [m, act_row_bytes]
  size_t act_row_bytes = 0;
  const uint8_t* prep = nullptr;  // the packed kernel's prepared rows [m, prep_row_bytes], if it has them
  size_t prep_row_bytes = 0;
  int64_t chunk_rows = 0;
  int64_t first_chunk = 0;  // index of this target's first chunk among the pass's chunks (targets in order)
};

// Rows [r0, r0 + 8 * groups) through the packed kernel: interleave them once, then every activation row.
void RunPacked(const Plan& p, int64_t r0, int64_t groups, int64_t m) {
  const WeightView& w = *p.w;
  const size_t group_bytes = p.packed->group_bytes(w.n_in);
  thread_local std::vector<uint8_t> buf;  // grows to one chunk (<= 64 rows), kept for the thread's life
  if (buf.size() < static_cast<size_t>(groups) * group_bytes)
    buf.resize(static_cast<size_t>(groups) * group_bytes);
  for (int64_t g = 0; g < groups; ++g) {
    p.packed->pack(w.row(r0 + g * p.packed->rows), w.row_bytes, w.n_in, buf.data() + g * group_bytes);
  }
  for (int64_t i0 = 0; i0 < m; i0 += kTileRows) {
    const int64_t nx = std::min(kTileRows, m - i0);
    if (p.prep) {
      p.packed->tile_prepared(buf.data(), groups, p.prep + static_cast<size_t>(i0) * p.prep_row_bytes,
                              p.prep_row_bytes, nx, w.n_in, p.y + i0 * p.ldy + r0, p.ldy);
      continue;
    }
    p.packed->tile(buf.data(), groups, p.act + static_cast<size_t>(i0) * p.act_row_bytes, p.act_row_bytes, nx,
                   w.n_in, p.y + i0 * p.ldy + r0, p.ldy);
  }
}

// y rows [r0, r1) of one target for all m activation rows.
void RunChunk(const Plan& p, int64_t r0, int64_t r1, int64_t m) {
  const WeightView& w = *p.w;
  if (p.packed) {
    const int64_t groups = (r1 - r0) / p.packed->rows;
    RunPacked(p, r0, groups, m);
    r0 += groups * p.packed->rows;  // a ragged tail of the matrix goes through the plain tile
  }
  if (r0 >= r1) return;
  for (int64_t i0 = 0; i0 < m; i0 += kTileRows) {
    const int64_t nx = std::min(kTileRows, m - i0);
    const uint8_t* a = p.act + static_cast<size_t>(i0) * p.act_row_bytes;
    float* out = p.y + i0 * p.ldy + r0;
    if (p.tile) {
      p.tile(w.row(r0), w.row_bytes, r1 - r0, a, p.act_row_bytes, nx, w.n_in, out, p.ldy);
    } else {
      quant::VecDotTileGeneric(p.dot, w.row(r0), w.row_bytes, r1 - r0, a, p.act_row_bytes, nx, w.n_in, out,
                               p.ldy);
    }
  }
}

}  // namespace

void MatMulMulti(ThreadPool& pool, const MatMulTarget* targets, int n_targets, const float* x, int64_t m,
                 MatMulScratch& scratch) {
  if (n_targets <= 0 || m <= 0) return;
  if (n_targets > kMaxTargets) {
    for (int j = 0; j < n_targets; j += kMaxTargets) {
      MatMulMulti(pool, targets + j, std::min(kMaxTargets, n_targets - j), x, m, scratch);
    }
    return;
  }
  const quant::KernelSet& ks = quant::ActiveKernels();
  const int64_t n_in = targets[0].w->n_in;

  // One activation row (generation) takes the gemv as decode confirms it (quant/gemv_confirm.h): the start-up
  // choice, or, while the confirmation takes samples, the candidate whose turn it is for these matrices (all
  // candidates give the same bits). A product is a sample when its targets share one format and the call's
  // activations; it is timed whole and keyed by its first matrix. A mixture of experts' passes (targets with
  // their own activations) are not: their matrices change with every token's choice, so they would key a new
  // matrix nearly every time and keep the confirmation from settling.
  quant::GemvPick picks[kMaxTargets];
  const void* sample_key = nullptr;
  Clock::time_point t0;
  bool any_interleaved = false, own_x = false;
  for (int j = 0; j < n_targets; ++j) {
    any_interleaved = any_interleaved || targets[j].w->interleaved;
    own_x = own_x || targets[j].x != nullptr;
  }
  if (m == 1 && !any_interleaved) {  // interleaved weights have one product; nothing to confirm
    bool same = !own_x;
    for (int j = 1; j < n_targets; ++j) same = same && targets[j].w->type == targets[0].w->type;
    for (int j = 0; j < n_targets; ++j) {
      picks[j] = same && j > 0 ? picks[0]
                               : quant::PickGemv(quant::FormatIndex(targets[j].w->type),
                                                 same ? targets[0].w->row(0) : nullptr);
    }
    if (picks[0].candidate >= 0) {
      sample_key = targets[0].w->row(0);
      t0 = Clock::now();
    }
  }

  // Distinct activation encodings, one per (activations, vec-dot type) (q, k and v usually share one), laid
  // out one after the other.
  TensorType act_types[kMaxTargets];
  const float* act_x[kMaxTargets];
  size_t act_offset[kMaxTargets];
  int act_of[kMaxTargets];
  int n_act = 0;
  size_t total = 0;
  for (int j = 0; j < n_targets; ++j) {
    LS_CHECK(targets[j].w->n_in == n_in);
    const TensorType at = quant::VecDotType(targets[j].w->type);
    const float* tx = targets[j].x ? targets[j].x : x;
    int k = 0;
    while (k < n_act && (act_types[k] != at || act_x[k] != tx)) ++k;
    if (k == n_act) {
      act_types[k] = at;
      act_x[k] = tx;
      act_offset[k] = total;
      total += RowBytes(at, n_in) * static_cast<size_t>(m);
      ++n_act;
    }
    act_of[j] = k;
  }
  if (scratch.encoded.size() < total) scratch.encoded.resize(total);
  uint8_t* enc = scratch.encoded.data();
  auto encode = [&](int64_t begin, int64_t end) {
    for (int k = 0; k < n_act; ++k) {
      const int f = quant::FormatIndex(act_types[k]);
      LS_CHECK(f >= 0 && ks.quantize[f] != nullptr);
      const size_t rb = RowBytes(act_types[k], n_in);
      for (int64_t i = begin; i < end; ++i) {
        ks.quantize[f](act_x[k] + i * n_in, enc + act_offset[k] + i * rb, n_in);
      }
    }
  };
  // ~32K values per thread before the pool is worth waking (a token's row is encoded inline).
  pool.ParallelFor(m, std::max<int64_t>(1, (int64_t{1} << 15) / (n_in * n_act)), encode);

  Plan plans[kMaxTargets];
  int64_t n_chunks = 0;
  for (int j = 0; j < n_targets; ++j) {
    Plan& p = plans[j];
    p.w = targets[j].w;
    p.y = targets[j].y;
    p.ldy = targets[j].ldy;
    const int f = quant::FormatIndex(p.w->type);
    LS_CHECK(f >= 0 && ks.vec_dot[f] != nullptr);
    // One activation row (generation) takes the set's gemv, chosen at load with vec_dot (quant/select.cpp);
    // a null gemv is the generic loop over vec_dot, as a null tile is.
    p.tile = m == 1 ? ks.gemv[f] : ks.vec_dot_tile[f];
    p.dot = ks.vec_dot[f];
    if (picks[j].dot) p.tile = picks[j].tile, p.dot = picks[j].dot;
    if (m >= kPackMinRows && ks.packed[f].pack != nullptr) p.packed = &ks.packed[f];
    if (p.w->interleaved) {  // the layout's own products, for every m (the model interleaved it for them)
      const quant::InterleavedKernel& ik = ks.interleaved[f];
      LS_CHECK(ik.tile != nullptr && p.w->n_out % quant::kInterleaveRows == 0);
      p.tile = ik.tile;
      p.packed = m >= kPackMinRows ? &ik.packed : nullptr;
    }
    p.act = enc + act_offset[act_of[j]];
    p.act_row_bytes = RowBytes(act_types[act_of[j]], n_in);
    p.chunk_rows = ChunkRows(p.w->row_bytes, m, p.packed ? p.packed->rows : 0, p.w->n_out, pool.n_threads(),
                             p.w->interleaved ? quant::kInterleaveRows : 0);
    p.first_chunk = n_chunks;
    n_chunks += (p.w->n_out + p.chunk_rows - 1) / p.chunk_rows;
  }
  // Packed kernels with a per-row preparation get it once per activation row here, not once per chunk of
  // weight rows; targets with the same encoding and preparation (q, k and v) share one.
  int prep_owner[kMaxTargets];  // the target whose prepared rows target j reads; -1: none
  size_t prep_offset[kMaxTargets];
  size_t prep_total = 0;
  for (int j = 0; j < n_targets; ++j) {
    Plan& p = plans[j];
    prep_owner[j] = -1;
    if (!p.packed || !p.packed->prepare) continue;
    p.prep_row_bytes = p.packed->prepared_bytes(n_in);
    int k = 0;
    while (k < j &&
           !(prep_owner[k] == k && act_of[k] == act_of[j] && plans[k].packed->prepare == p.packed->prepare)) {
      ++k;
    }
    prep_owner[j] = k;
    if (k == j) {
      prep_offset[j] = prep_total;
      prep_total += p.prep_row_bytes * static_cast<size_t>(m);
    }
  }
  if (prep_total > 0 && scratch.prepared.size() < prep_total) scratch.prepared.resize(prep_total);
  for (int j = 0; j < n_targets; ++j) {
    if (prep_owner[j] < 0) continue;
    Plan& p = plans[j];
    uint8_t* dst = scratch.prepared.data() + prep_offset[prep_owner[j]];
    p.prep = dst;
    if (prep_owner[j] != j) continue;
    pool.ParallelFor(m, 8, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        p.packed->prepare(p.act + i * p.act_row_bytes, n_in, dst + i * p.prep_row_bytes);
      }
    });
  }
  auto run = [&](int64_t begin, int64_t end) {
    int j = 0;
    for (int64_t c = begin; c < end; ++c) {
      while (j + 1 < n_targets && c >= plans[j + 1].first_chunk) ++j;
      const Plan& p = plans[j];
      const int64_t r0 = (c - p.first_chunk) * p.chunk_rows;
      RunChunk(p, r0, std::min(p.w->n_out, r0 + p.chunk_rows), m);
    }
  };
  // Tiny products (a few thousand multiply-adds) run inline; generation's chunks go by ranges (above), a
  // prompt's one at a time from a shared counter.
  int64_t work = 0;
  for (int j = 0; j < n_targets; ++j) work += plans[j].w->n_out * n_in * m;
  if (work < (int64_t{1} << 15)) {
    run(0, n_chunks);
  } else if (m <= kDecodeRows) {
    pool.ParallelForRanges(n_chunks, [&](int64_t c) { run(c, c + 1); });
  } else {
    pool.ParallelForDynamic(n_chunks, 1, run);
  }
  if (sample_key) {
    double bytes = 0;
    for (int j = 0; j < n_targets; ++j)
      bytes += static_cast<double>(plans[j].w->row_bytes * plans[j].w->n_out);
    quant::ReportGemv(quant::FormatIndex(targets[0].w->type), sample_key, picks[0].candidate,
                      std::chrono::duration<double>(Clock::now() - t0).count(), bytes);
  }
}

void MatMul(ThreadPool& pool, const WeightView& w, const float* x, int64_t m, float* y, int64_t ldy,
            MatMulScratch& scratch) {
  const MatMulTarget t{&w, y, ldy};
  MatMulMulti(pool, &t, 1, x, m, scratch);
}

void GetRow(const WeightView& w, int64_t r, float* out) {
  if (!w.interleaved) {
    quant::DequantizeRow(w.type, w.row(r), out, w.n_in);
    return;
  }
  // The row's GGUF bytes gathered from its group first.
  const quant::InterleavedKernel& ik = quant::ActiveKernels().interleaved[quant::FormatIndex(w.type)];
  LS_CHECK(ik.extract_row != nullptr);
  thread_local std::vector<uint8_t> row;
  row.resize(w.row_bytes);
  const int in_group = static_cast<int>(r % quant::kInterleaveRows);
  ik.extract_row(w.row(r - in_group), in_group, w.n_in, row.data());
  quant::DequantizeRow(w.type, row.data(), out, w.n_in);
}

}  // namespace lazyslot
