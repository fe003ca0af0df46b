// Block number formats: dequantize, quantize and dot products for F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K
// (and Q8_K, the activation format for K-quants). Facts: ../shared/FORMATS.md section 2.
//
// A matmul row y[n] = W[n] . x is computed as llama.cpp does on the CPU, so that logits agree with the
// reference to rounding: x is first converted once to VecDotType(W.type) (F16 for F16 weights, Q8_0 for
// Q4_0/Q8_0, Q8_K for K-quants, F32/BF16 unchanged) and then VecDot works on the two encoded rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/tensor_type.h"

namespace lazyslot::quant {

// Alignment: rows of block formats may start at any byte (their blocks are packed, 18/34/144... bytes);
// F32 rows must be 4-byte and F16/BF16 rows 2-byte aligned, as in any GGUF file and any float buffer.

// True for the types this engine can compute with (dequantize + dot).
bool IsSupported(TensorType type);
// True for the types QuantizeRow can produce.
bool CanQuantize(TensorType type);

// The encoding activations are converted to before a dot product with weights of `weight_type`.
TensorType VecDotType(TensorType weight_type);

// dst[0..n) = decoded src row. n is a multiple of the block size.
void DequantizeRow(TensorType type, const void* src, float* dst, int64_t n);

// Encodes n floats into `dst` (RowBytes(type, n) bytes). Supported: F32, F16, BF16, Q8_0, Q4_0, Q8_K
// (and Q4_K, Q5_K, Q6_K where CanQuantize says so).
void QuantizeRow(TensorType type, const float* src, void* dst, int64_t n);

// Dot product of a weight row of `weight_type` with an activation row already in VecDotType(weight_type).
float VecDot(TensorType weight_type, const void* w, const void* x, int64_t n);

// Dot products of n_w weight rows with n_x activation rows (a tile of a matmul):
//   out[i * out_stride + r] = VecDot(weight_type, w + r * w_stride, x + i * x_stride, n)
// for r < n_w, i < n_x (strides in bytes for w and x, in floats for out). Each result is bit-identical to the
// single VecDot call, so batching never changes numerics; kernels may read each weight block once for all
// activation rows (prompt processing, several slots decoding together) and amortize the decoding of the
// weights. Any n_w, n_x >= 0 are accepted; tiles of up to 4 activation rows are the fast case.
void VecDotTile(TensorType weight_type, const void* w, size_t w_stride, int64_t n_w, const void* x,
                size_t x_stride, int64_t n_x, int64_t n, float* out, int64_t out_stride);

// A weight matrix a model multiplies by: n_out rows of n_in values of `type`.
struct MatrixShape {
  TensorType type;
  int64_t n_in;
  int64_t n_out;
};

// Dispatch by measurement (select.cpp). For each weight format of `shapes` not chosen before in this process,
// checks every SIMD variant of each kernel family (the generation dot "gemv", the tile for 2..15 activation
// rows, the packed prompt kernel) against the scalar reference on the format's own row lengths, times the
// correct ones there, and installs the fastest into ActiveKernels(); a format chosen before keeps its
// kernels. LAZYSLOT_ISA=scalar|avx2|avx512 forces a level instead (still checked, no timing). Returns one
// line naming the choices of every format of `shapes`, with their figures and the selection's time, for the
// log. Shapes of unsupported types or with rows that do not fit the type's blocks are ignored. Thread-safe.
// The gemv variants that timed within 20% of the winner and give its bits start a confirmation that the first
// decode steps settle (gemv_confirm.h).
// `threads`: the threads the model's generation runs with; the gemv is timed with that many (at most the
// hardware's threads and kMaxSelectThreads) streaming their shares of a matrix at once.
constexpr int kMaxSelectThreads = 8;
std::string SelectKernels(const std::vector<MatrixShape>& shapes, int threads = 1);
// The same kind of line for every format selected so far in this process, with the settled decode
// confirmations (for `lazyslot bench`).
std::string KernelChoices();

// Scalar reference versions (never vectorized by hand); every fast kernel is tested against these.
namespace ref {
void DequantizeRow(TensorType type, const void* src, float* dst, int64_t n);
void QuantizeRow(TensorType type, const float* src, void* dst, int64_t n);
float VecDot(TensorType weight_type, const void* w, const void* x, int64_t n);
}  // namespace ref

}  // namespace lazyslot::quant
