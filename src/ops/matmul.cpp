// MatMul: encode activations once, then each thread takes a contiguous block of weight rows and, for each
// weight row, dots it with every activation row (the weight row stays in L1 while the batch streams by).
#include "ops/matmul.h"

#include <algorithm>

#include "quant/quant.h"

namespace lazyslot {

void MatMul(ThreadPool& pool, const WeightView& w, const float* x, int64_t m, float* y, int64_t ldy,
            MatMulScratch& scratch) {
  const TensorType act_type = quant::VecDotType(w.type);
  const size_t act_row_bytes = RowBytes(act_type, w.n_in);
  const size_t need = act_row_bytes * static_cast<size_t>(m);
  if (scratch.encoded.size() < need) scratch.encoded.resize(need);
  uint8_t* enc = scratch.encoded.data();

  pool.ParallelFor(m, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      quant::QuantizeRow(act_type, x + i * w.n_in, enc + static_cast<size_t>(i) * act_row_bytes, w.n_in);
    }
  });

  // Grain: enough rows per chunk (~256K multiply-adds) that a thread's share is worth waking it for.
  const int64_t grain = std::max<int64_t>(16, (int64_t{1} << 18) / std::max<int64_t>(1, w.n_in * m));
  pool.ParallelFor(w.n_out, grain, [&](int64_t begin, int64_t end) {
    constexpr int64_t kRowTile = 16;  // weight rows per tile, reused across the activation rows
    for (int64_t r0 = begin; r0 < end; r0 += kRowTile) {
      const int64_t r1 = std::min(end, r0 + kRowTile);
      for (int64_t i = 0; i < m; ++i) {
        const uint8_t* a = enc + static_cast<size_t>(i) * act_row_bytes;
        float* yi = y + i * ldy;
        for (int64_t r = r0; r < r1; ++r) yi[r] = quant::VecDot(w.type, w.row(r), a, w.n_in);
      }
    }
  });
}

void GetRow(const WeightView& w, int64_t r, float* out) { quant::DequantizeRow(w.type, w.row(r), out, w.n_in); }

}  // namespace lazyslot
