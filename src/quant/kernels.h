// Kernel tables: one KernelSet per instruction-set level (scalar, AVX2, AVX-512), built by dispatch.cpp; the
// active set starts as the best level's and select.cpp installs measured choices per format into it. Tests
// and benchmarks call every set the CPU supports directly through AvailableKernels().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/tensor_type.h"

namespace lazyslot::quant {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };
const char* IsaName(Isa isa);

// Dense index of the formats this layer implements (TensorType ids are sparse).
enum Format : int { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_K, kQ5_K, kQ6_K, kQ8_K, kFormatCount };
// -1 for a type this layer does not implement.
int FormatIndex(TensorType type);

using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t n);
// w: weight row, x: activation row in VecDotType(weight type), both n values.
using VecDotFn = float (*)(const void* w, const void* x, int64_t n);
// out[i * out_stride + r] = dot(weight row r, activation row i) for r < n_w, i < n_x; rows are w_stride and
// x_stride bytes apart. A kernel may share loads across rows (each weight block read once for all n_x rows).
using VecDotTileFn = void (*)(const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride,
                              int64_t n_x, int64_t n, float* out, int64_t out_stride);

// Interleaved weights for prompt-sized batches. A format with a packed kernel can rewrite `rows` weight rows
// (kPackRows = 8 in the AVX2 set, 16 in the AVX-512 one; n values each) into one group of group_bytes(n)
// bytes whose layout lets one multiply instruction serve several weight rows; the matmul packs a chunk of
// rows once and streams many activation rows by. The packed tile gives the same results bit for bit as
// vec_dot on the unpacked rows.
inline constexpr int kPackRows = 8;
inline constexpr int kMaxPackRows = 16;
// Writes rows w, w + w_stride, ... (PackedKernel::rows of them) into `dst` (group_bytes(n) bytes).
using PackFn = void (*)(const void* w, size_t w_stride, int64_t n, void* dst);
// out[i * out_stride + g * rows + r] = dot(row r of group g, activation row i) for g < n_groups,
// r < rows, i < n_x; groups are group_bytes(n) apart from `packed`.
using PackedTileFn = void (*)(const void* packed, int64_t n_groups, const void* x, size_t x_stride,
                              int64_t n_x, int64_t n, float* out, int64_t out_stride);
// Optional per-activation-row work of a packed kernel (null: none): `prepare` lays out one activation row
// (n values) in prepared_bytes(n) bytes at dst, and tile_prepared takes such rows (x_stride apart) where tile
// takes the encoded ones. tile(x) equals tile_prepared(prepared x) bit for bit (tile prepares internally), so
// MatMul prepares each row once per product instead of once per chunk of weight rows.
using PrepareFn = void (*)(const void* x, int64_t n, void* dst);
struct PackedKernel {
  PackFn pack = nullptr;  // null: the format has no packed kernel in this set
  PackedTileFn tile = nullptr;
  size_t (*group_bytes)(int64_t n) = nullptr;
  int rows = kPackRows;  // weight rows per group (<= kMaxPackRows)
  PrepareFn prepare = nullptr;
  size_t (*prepared_bytes)(int64_t n) = nullptr;
  PackedTileFn tile_prepared = nullptr;
};

// Weights kept interleaved kInterleaveRows rows at a time (docs/decisions/0012). A format with an interleaved
// kernel can have a matrix (a multiple of kInterleaveRows rows, contiguous) rewritten in place at load into a
// layout whose products need fewer instructions per weight byte; every product over it gives the bits of
// vec_dot on the GGUF rows.
inline constexpr int kInterleaveRows = 16;
// In place: n_rows (a multiple of kInterleaveRows) contiguous rows of n values.
using InterleaveFn = void (*)(void* rows, int64_t n_rows, int64_t n);
// Row r (< kInterleaveRows) of the interleaved group at `group` (rows of n values), as its GGUF bytes.
using ExtractRowFn = void (*)(const void* group, int r, int64_t n, void* dst);
struct InterleavedKernel {
  InterleaveFn interleave = nullptr;  // null: the format has no interleaved layout in this set
  InterleaveFn deinterleave = nullptr;
  ExtractRowFn extract_row = nullptr;
  // A VecDotTileFn over interleaved rows: w = the first row of a group, n_w a multiple of kInterleaveRows,
  // w_stride the GGUF row bytes (group g starts kInterleaveRows * g * w_stride bytes in); any n_x.
  VecDotTileFn tile = nullptr;
  PackedKernel packed;  // as packed[format], with a pack that reads one interleaved group
};

struct KernelSet {
  Isa isa = Isa::kScalar;
  const char* name = "scalar";
  // Indexed by Format. quantize[kQ8_0] must be bit-identical across sets (see quant.h), and so must
  // quantize[kQ8_K], [kF16] and [kBF16]; dequantize is exact in every set; vec_dot differs from the scalar
  // reference only by float summation order. A null entry falls back to the scalar set.
  DequantizeFn dequantize[kFormatCount] = {};
  QuantizeFn quantize[kFormatCount] = {};
  VecDotFn vec_dot[kFormatCount] = {};           // indexed by the weight's format
  VecDotTileFn vec_dot_tile[kFormatCount] = {};  // null: the generic loop over vec_dot
  // One activation row against n_w weight rows (generation, MatMul with m == 1); null: the generic loop over
  // vec_dot, one weight row after another. Every built set has gemv = vec_dot_tile; the selection may take
  // it, with vec_dot, from another set than the tile, or take the generic loop (a multi-row gemv reads
  // several rows at once, which some CPUs stream from memory more slowly), so the two generation entries
  // always share their arithmetic.
  VecDotTileFn gemv[kFormatCount] = {};
  PackedKernel packed[kFormatCount] = {};  // optional; never filled from the scalar set
  InterleavedKernel interleaved[kFormatCount] = {};  // optional; the AVX-512 set has Q4_K's and Q8_0's
};

// The scalar reference set (always complete).
const KernelSet& ScalarKernels();
// Every set this CPU can run, scalar first, each completed with scalar entries where it has none.
std::vector<KernelSet> AvailableKernels();
// The process-wide set the public functions and MatMul use. It starts as the best available set whose
// SelfCheck passes, or the level LAZYSLOT_ISA=scalar|avx2|avx512 asks for (capped at what the CPU supports;
// an unknown value logs a warning and is ignored); `isa` and `name` stay that level's. SelectKernels
// (quant.h, select.cpp) then overwrites vec_dot, gemv, vec_dot_tile and packed of each format it selects,
// once per process and format, at the format's first SelectKernels call (a model's load, before it runs): a
// format already chosen is never changed again, so a running model never sees its kernels change (MatMul's
// single-row products may still take another gemv with the same bits while decode confirms the choice,
// gemv_confirm.h). quantize and dequantize are never changed. Entries are plain pointers: a format must not
// be used by a kernel call while its first SelectKernels call runs (loading a model happens before that model
// computes).
const KernelSet& ActiveKernels();
// The same object, for select.cpp only (under its mutex).
KernelSet& MutableActiveKernels();
// The level ActiveKernels aims for: `best` when `env` (LAZYSLOT_ISA's value) is null or empty, else the level
// it names capped at `best`; an unknown name logs a warning and gives `best`.
Isa ResolveIsa(const char* env, Isa best);
// True when `env` names a level (scalar, avx2, avx512; no warning otherwise); *level is it, capped at `best`.
bool ForcedIsa(const char* env, Isa best, Isa* level);

// What the CPU (and OS) can run. This is the program's one question to the CPU (__builtin_cpu_supports),
// asked once per process; everything else asks CpuIsa, IsaOverride or ActiveIsa below.
struct CpuFeatures {
  bool f16c = false;        // F16C (half <-> float conversions)
  bool avx2 = false;        // AVX2 + FMA + F16C
  bool avx512 = false;      // AVX-512 F, BW, VL, DQ and VNNI
  bool avx512bf16 = false;  // AVX-512 BF16 (vdpbf16ps)
};
const CpuFeatures& DetectCpu();
// The highest level the CPU runs (the level of the last set AvailableKernels returns).
Isa CpuIsa();

// LAZYSLOT_ISA as this process reads it: once, here and nowhere else. `forced` when it names a level;
// `level` is ResolveIsa(value, CpuIsa()) (an unknown value is warned about once and ignored).
struct IsaRequest {
  bool forced = false;
  Isa level = Isa::kScalar;
  std::string value;  // the variable's text, "" when unset
};
const IsaRequest& IsaOverride();

// The level every SIMD path of the process runs at, the quant kernels' and the ops layer's own loops (ops
// vector code, attention's V pass variants, the bandwidth pass) alike: ActiveKernels().isa, i.e. the CPU's
// best, capped by LAZYSLOT_ISA, lowered where that level's kernels fail their self-check.
Isa ActiveIsa();

// Per-ISA tables filled by kernels_avx2*.cpp / kernels_avx512*.cpp; they overwrite the entries they implement
// and leave the others as they were (AVX-512 is filled on top of AVX2).
void FillAvx2Kernels(KernelSet* set);
void FillAvx512Kernels(KernelSet* set, const CpuFeatures& cpu);
void FillAvx2KQuantKernels(KernelSet* set);    // called by FillAvx2Kernels
void FillAvx2PackedKernels(KernelSet* set);    // called by FillAvx2KQuantKernels
void FillAvx512KQuantKernels(KernelSet* set);  // called by FillAvx512Kernels
void FillAvx512PackedKernels(KernelSet* set);  // called by FillAvx512Kernels
void FillAvx512InterleavedKernels(KernelSet* set);  // called by FillAvx512Kernels, after the packed ones

// Compares every entry of `set` with the scalar set on a few pseudo-random rows (exact for quantize and
// dequantize, relative 1e-4 for dots). Empty string when all agree, else a description of the first mismatch.
// Dispatch runs it once, so a miscompiled or untested kernel path degrades to a lower level instead of
// producing wrong logits.
std::string SelfCheck(const KernelSet& set);

// Generic tile: loops over rows with `dot`.
void VecDotTileGeneric(VecDotFn dot, const void* w, size_t w_stride, int64_t n_w, const void* x,
                       size_t x_stride, int64_t n_x, int64_t n, float* out, int64_t out_stride);

// Scalar kernels, named by format (quant_ref.cpp, quant_k_ref.cpp). SIMD kernels reuse them for tails.
namespace scalar {
void DequantizeF32(const void* src, float* dst, int64_t n);
void DequantizeF16(const void* src, float* dst, int64_t n);
void DequantizeBF16(const void* src, float* dst, int64_t n);
void DequantizeQ8_0(const void* src, float* dst, int64_t n);
void DequantizeQ4_0(const void* src, float* dst, int64_t n);
void DequantizeQ4_K(const void* src, float* dst, int64_t n);
void DequantizeQ5_K(const void* src, float* dst, int64_t n);
void DequantizeQ6_K(const void* src, float* dst, int64_t n);
void DequantizeQ8_K(const void* src, float* dst, int64_t n);

void QuantizeF32(const float* src, void* dst, int64_t n);
void QuantizeF16(const float* src, void* dst, int64_t n);
void QuantizeBF16(const float* src, void* dst, int64_t n);
void QuantizeQ8_0(const float* src, void* dst, int64_t n);
void QuantizeQ4_0(const float* src, void* dst, int64_t n);
void QuantizeQ4_K(const float* src, void* dst, int64_t n);
void QuantizeQ5_K(const float* src, void* dst, int64_t n);
void QuantizeQ6_K(const float* src, void* dst, int64_t n);
void QuantizeQ8_K(const float* src, void* dst, int64_t n);

float DotF32(const void* w, const void* x, int64_t n);
float DotF16(const void* w, const void* x, int64_t n);
float DotBF16(const void* w, const void* x, int64_t n);
float DotQ8_0(const void* w, const void* x, int64_t n);  // x: Q8_0
float DotQ4_0(const void* w, const void* x, int64_t n);  // x: Q8_0
float DotQ4_K(const void* w, const void* x, int64_t n);  // x: Q8_K
float DotQ5_K(const void* w, const void* x, int64_t n);  // x: Q8_K
float DotQ6_K(const void* w, const void* x, int64_t n);  // x: Q8_K
}  // namespace scalar

}  // namespace lazyslot::quant
