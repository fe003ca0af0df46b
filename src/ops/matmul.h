// Matrix multiplication of activations by GGUF weights: y[m, n_out] = x[m, n_in] . W^T, W stored as n_out rows
// of n_in values in any supported block format. Activations are encoded once per call into the weight's
// vec-dot type (quant::VecDotType), exactly as llama.cpp's CPU backend does, then split by weight rows
// over the thread pool.
#pragma once

#include <cstdint>
#include <vector>

#include "gguf/tensor_type.h"
#include "ops/thread_pool.h"

namespace lazyslot {

// A weight matrix inside the mapped GGUF file: n_out rows of n_in values, row_bytes apart.
struct WeightView {
  TensorType type = TensorType::kF32;
  const uint8_t* data = nullptr;
  int64_t n_in = 0;   // ne[0]
  int64_t n_out = 0;  // ne[1]
  size_t row_bytes = 0;
  // The rows are kept in the format's interleaved layout (quant::InterleavedKernel, docs/decisions/0012),
  // quant::kInterleaveRows at a time: row(r) is then meaningful only as a group's start (r a multiple of it),
  // and only MatMul and GetRow read the data.
  bool interleaved = false;
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
};

// Reusable buffer for encoded activations (grows to the largest batch; the cost is one allocation).
struct MatMulScratch {
  std::vector<uint8_t> encoded;
  std::vector<uint8_t> prepared;  // packed kernels' per-row layouts of the encoded rows (PackedKernel::prepare)
  void Release() {
    std::vector<uint8_t>().swap(encoded);
    std::vector<uint8_t>().swap(prepared);
  }
};

// y[i * ldy + r] = W.row(r) . x[i * n_in ...] for i < m, r < n_out. Results are bit-identical to
// quant::VecDot on the encoded rows, whatever m, the thread count or the tiling.
void MatMul(ThreadPool& pool, const WeightView& w, const float* x, int64_t m, float* y, int64_t ldy,
            MatMulScratch& scratch);

// One output of MatMulMulti: y[i * ldy + r] = w.row(r) . x_i.
struct MatMulTarget {
  const WeightView* w = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
  const float* x = nullptr;  // its own activations [m, n_in]; nullptr: the call's x
};

// The most targets one MatMulMulti pass takes; more go in passes of this many.
inline constexpr int kMatMulMaxTargets = 16;

// Several matrices applied to activations in one pass over the pool (q/k/v or gate/up on the same x; the
// experts a token is routed to, each on its own x): each distinct x is encoded once per vec-dot type and the
// chunks of every matrix's rows are split over the pool as one piece of work, so the threads synchronise once
// instead of once per matrix. All w must have the same n_in; every target's activations have m rows.
void MatMulMulti(ThreadPool& pool, const MatMulTarget* targets, int n_targets, const float* x, int64_t m,
                 MatMulScratch& scratch);

// Decodes row `r` of W into out[n_in] (embedding lookup; exact dequantization).
void GetRow(const WeightView& w, int64_t r, float* out);

}  // namespace lazyslot
