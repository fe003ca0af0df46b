// AVX2 + FMA + F16C kernels for the plain and 32-block formats (F32, F16, BF16, Q8_0, Q4_0): dots, the tile
// variant, and the activation quantizers (bit-identical to quant_ref.cpp). K-quants: kernels_avx2_k.cpp.
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant {
namespace {

using simd::DotI8;
using simd::HalfToFloat;
using simd::Hsum;

// ---- float formats: 32 values per step in 4 independent accumulators (FMA latency), scalar tail.

LS_TARGET_AVX2 float DotF32(const void* w, const void* x, int64_t n) {
  const float* a = static_cast<const float*>(w);
  const float* b = static_cast<const float*>(x);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      acc[k] = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8 * k), _mm256_loadu_ps(b + i + 8 * k), acc[k]);
    }
  }
  for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc[0]);
  float sum = Hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

LS_TARGET_AVX2 inline __m256 LoadF16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

LS_TARGET_AVX2 float DotF16(const void* w, const void* x, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k)
      acc[k] = _mm256_fmadd_ps(LoadF16(a + i + 8 * k), LoadF16(b + i + 8 * k), acc[k]);
  }
  for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(LoadF16(a + i), LoadF16(b + i), acc[0]);
  float sum = Hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  for (; i < n; ++i) sum += HalfToFloat(a[i]) * HalfToFloat(b[i]);
  return sum;
}

LS_TARGET_AVX2 inline __m256 LoadBF16(const uint16_t* p) {
  const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

LS_TARGET_AVX2 float DotBF16(const void* w, const void* x, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      acc[k] = _mm256_fmadd_ps(LoadBF16(a + i + 8 * k), LoadBF16(b + i + 8 * k), acc[k]);
    }
  }
  for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(LoadBF16(a + i), LoadBF16(b + i), acc[0]);
  float sum = Hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  for (; i < n; ++i) sum += BF16ToF32(a[i]) * BF16ToF32(b[i]);
  return sum;
}

LS_TARGET_AVX2 void DequantizeF16(const void* src, float* dst, int64_t n) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, LoadF16(s + i));
  for (; i < n; ++i) dst[i] = HalfToFloat(s[i]);
}

// F32 -> F16 with round-to-nearest-even, as llama.cpp converts activations for F16 weights on x86.
LS_TARGET_AVX2 void QuantizeF16(const float* src, void* dst, int64_t n) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) d[i] = F32ToF16(src[i]);
}

// ---- Q8_0 / Q4_0 weights against Q8_0 activations.
// Each (weight row, activation row) pair is two chains in 8 f32 lanes, one over the even blocks and one over
// the odd ones (FMA latency), each step
//   acc = fma(f32(d_w) * f32(d_x), f32(sum of the block's 32 products, as 8 int32 lane pairs), acc)
// and its result is Hsum(acc_even + acc_odd). The tile runs 2 weight rows x up to 4 activation rows at once
// (16 chains: an activation block is loaded once for both weight rows, a weight block unpacked once for all
// the rows), with the activation scales converted to f32 once per call; the single dot runs the same
// arithmetic, so tile and dot agree bit for bit. Weight blocks are unpacked to signed bytes by Unpack (Q4_0:
// nibbles - 8); the signed products come from maddubs(|w|, sign(x, w)).

LS_TARGET_AVX2 inline __m256i UnpackQ8_0(const BlockQ8_0& b) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
}
LS_TARGET_AVX2 inline __m256i UnpackQ4_0(const BlockQ4_0& b) {
  return _mm256_sub_epi8(simd::UnpackNibbles(b.qs), _mm256_set1_epi8(8));
}

// Weight rows are streamed once per token from DRAM; the hardware prefetcher alone keeps too few lines in
// flight on these VMs, so each step asks for the lines 2 KiB ahead (tg: 12.7 -> 15.2 t/s on qwen3-0.6b Q8_0,
// 2 threads, with 1 KiB; 512 B gave 13.9; 2 KiB +5% over 1 KiB and 4 KiB none, medians of 4 alternating runs
// on a quieter machine; docs/bench.md).
constexpr int kPrefetchBytes = 2048;

// Activation scales converted once per tile call for rows of up to this many blocks (n <= 16,384); longer
// rows convert them as they go (the same values).
constexpr int64_t kMaxScaleBlocks = 512;

// One step of W x R chains (those of one parity): block ib of every weight row against every activation row.
template <int W, int R, typename WBlock, __m256i (*Unpack)(const WBlock&)>
LS_TARGET_AVX2 inline void StepQ8(const WBlock* const* w, const BlockQ8_0* const* x, const float* const* dx,
                                  int64_t ib, __m256 (*acc)[R]) {
  __m256i wq[W], aw[W];
  __m256 dw[W];
  for (int k = 0; k < W; ++k) {
    wq[k] = Unpack(w[k][ib]);
    aw[k] = _mm256_sign_epi8(wq[k], wq[k]);
    dw[k] = _mm256_set1_ps(HalfToFloat(w[k][ib].d));
  }
  for (int r = 0; r < R; ++r) {
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][ib].qs));
    const __m256 dxr = dx ? _mm256_broadcast_ss(dx[r] + ib) : _mm256_set1_ps(HalfToFloat(x[r][ib].d));
    for (int k = 0; k < W; ++k) {
      const __m256i p =
          _mm256_madd_epi16(_mm256_maddubs_epi16(aw[k], _mm256_sign_epi8(xq, wq[k])), _mm256_set1_epi16(1));
      acc[k][r] = _mm256_fmadd_ps(_mm256_mul_ps(dw[k], dxr), _mm256_cvtepi32_ps(p), acc[k][r]);
    }
  }
}

// W weight rows x R activation rows; out[r * W + k] = dot(w[k], x[r]). dx[r]: row r's scales as f32, or null
// to convert them from the blocks.
template <int W, int R, typename WBlock, __m256i (*Unpack)(const WBlock&)>
LS_TARGET_AVX2 inline void DotQ8Tile(const WBlock* const* w, const BlockQ8_0* const* x,
                                     const float* const* dx, int64_t nb, float* out) {
  __m256 even[W][R], odd[W][R];
  for (int k = 0; k < W; ++k) {
    for (int r = 0; r < R; ++r) even[k][r] = odd[k][r] = _mm256_setzero_ps();
  }
  int64_t ib = 0;
  for (; ib + 2 <= nb; ib += 2) {
    for (int k = 0; k < W; ++k) {  // two blocks are 68 (Q8_0) or 36 (Q4_0) bytes: two lines cover them
      const char* ahead = reinterpret_cast<const char*>(w[k] + ib) + kPrefetchBytes;
      _mm_prefetch(ahead, _MM_HINT_T0);
      _mm_prefetch(ahead + 64, _MM_HINT_T0);
    }
    StepQ8<W, R, WBlock, Unpack>(w, x, dx, ib, even);
    StepQ8<W, R, WBlock, Unpack>(w, x, dx, ib + 1, odd);
  }
  if (ib < nb) StepQ8<W, R, WBlock, Unpack>(w, x, dx, ib, even);
  for (int k = 0; k < W; ++k) {
    for (int r = 0; r < R; ++r) out[r * W + k] = Hsum(_mm256_add_ps(even[k][r], odd[k][r]));
  }
}

template <typename WBlock, __m256i (*Unpack)(const WBlock&)>
LS_TARGET_AVX2 float DotQ8(const void* w, const void* x, int64_t n) {
  const WBlock* ws[1] = {static_cast<const WBlock*>(w)};
  const BlockQ8_0* xs[1] = {static_cast<const BlockQ8_0*>(x)};
  float out;
  DotQ8Tile<1, 1, WBlock, Unpack>(ws, xs, nullptr, n / kQK8_0, &out);
  return out;
}

// W weight rows (at w[0..W)) against R activation rows.
template <int W, typename WBlock, __m256i (*Unpack)(const WBlock&)>
LS_TARGET_AVX2 void TileRows(const WBlock* const* w, const BlockQ8_0* const* x, const float* const* dx,
                             int rows, int64_t nb, float* res) {
  switch (rows) {
    case 4:
      DotQ8Tile<W, 4, WBlock, Unpack>(w, x, dx, nb, res);
      break;
    case 3:
      DotQ8Tile<W, 3, WBlock, Unpack>(w, x, dx, nb, res);
      break;
    case 2:
      DotQ8Tile<W, 2, WBlock, Unpack>(w, x, dx, nb, res);
      break;
    default:
      DotQ8Tile<W, 1, WBlock, Unpack>(w, x, dx, nb, res);
      break;
  }
}

// Tile driver: activation rows four at a time (their scales converted once), each group against the weight
// rows (two at a time for batches).
template <typename WBlock, __m256i (*Unpack)(const WBlock&)>
LS_TARGET_AVX2 void TileQ(const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride,
                          int64_t n_x, int64_t n, float* out, int64_t out_stride) {
  const int64_t nb = n / kQK8_0;
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  float scales[4][kMaxScaleBlocks];
  for (int64_t i = 0; i < n_x; i += 4) {
    const int rows = static_cast<int>(n_x - i < 4 ? n_x - i : 4);
    const BlockQ8_0* xs[4];
    const float* dxs[4];
    for (int k = 0; k < rows; ++k) {
      xs[k] = reinterpret_cast<const BlockQ8_0*>(xb + (i + k) * x_stride);
      if (nb <= kMaxScaleBlocks) {
        for (int64_t ib = 0; ib < nb; ++ib) scales[k][ib] = HalfToFloat(xs[k][ib].d);
      }
      dxs[k] = scales[k];
    }
    const float* const* dx = nb <= kMaxScaleBlocks ? dxs : nullptr;
    // Weight rows in pairs share each activation block. A single activation row (generation) takes them one
    // at a time: two interleaved weight streams per thread made tg 15% slower on this VM.
    const int64_t step = rows > 1 ? 2 : 1;
    for (int64_t r = 0; r < n_w; r += step) {
      const bool pair = step == 2 && r + 1 < n_w;
      const WBlock* ws[2] = {reinterpret_cast<const WBlock*>(wb + r * w_stride),
                             reinterpret_cast<const WBlock*>(wb + (pair ? r + 1 : r) * w_stride)};
      float res[8] = {};
      if (pair) {
        TileRows<2, WBlock, Unpack>(ws, xs, dx, rows, nb, res);
        for (int k = 0; k < rows; ++k) {
          out[(i + k) * out_stride + r] = res[2 * k];
          out[(i + k) * out_stride + r + 1] = res[2 * k + 1];
        }
      } else {
        TileRows<1, WBlock, Unpack>(ws, xs, dx, rows, nb, res);
        for (int k = 0; k < rows; ++k) out[(i + k) * out_stride + r] = res[k];
      }
    }
  }
}

// Q8_0 activation quantizer, the same rule as scalar::QuantizeQ8_0 (unrounded 127/amax, half-to-even).
LS_TARGET_AVX2 void QuantizeQ8_0(const float* src, void* dst, int64_t n) {
  BlockQ8_0* b = static_cast<BlockQ8_0*>(dst);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t ib = 0; ib < n / kQK8_0; ++ib) {
    const float* x = src + ib * kQK8_0;
    __m256 v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + 8 * k);
    const __m256 m =
        _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
                      _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
    const float amax = simd::Hmax(m);
    b[ib].d = F32ToF16(amax / 127.0f);
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    const __m256i q = simd::RoundPackI8(_mm256_mul_ps(v[0], id), _mm256_mul_ps(v[1], id),
                                        _mm256_mul_ps(v[2], id), _mm256_mul_ps(v[3], id));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[ib].qs), q);
  }
}

// Q8_K activation quantizer, the same rule as scalar::QuantizeQ8_K. The signed max is the first value of
// largest magnitude; a vector pass finds the magnitude, a scalar scan the first position holding it.
LS_TARGET_AVX2 void QuantizeQ8_K(const float* src, void* dst, int64_t n) {
  BlockQ8_K* b = static_cast<BlockQ8_K*>(dst);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    const float* x = src + ib * kQK_K;
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < kQK_K; k += 8) m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask));
    const float amax = simd::Hmax(m);
    int imax = 0;
    while (imax < kQK_K - 1 && !(x[imax] == amax || x[imax] == -amax)) ++imax;
    const float iscale = -127.0f / x[imax];
    if (amax == 0.0f || std::isinf(iscale)) {  // as the reference: a clean all-zero block
      std::memset(&b[ib], 0, sizeof(BlockQ8_K));
      continue;
    }
    const __m256 vs = _mm256_set1_ps(iscale);
    for (int k = 0; k < kQK_K; k += 32) {
      // |iscale*x| <= 127 up to rounding, so the saturating pack also gives min(127, .).
      const __m256i q = simd::RoundPackI8(
          _mm256_mul_ps(vs, _mm256_loadu_ps(x + k)), _mm256_mul_ps(vs, _mm256_loadu_ps(x + k + 8)),
          _mm256_mul_ps(vs, _mm256_loadu_ps(x + k + 16)), _mm256_mul_ps(vs, _mm256_loadu_ps(x + k + 24)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[ib].qs + k), q);
      // bsums of the two 16-value groups: widen to int16 and add pairs down to one sum per group.
      const __m256i lo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(q));
      const __m256i hi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1));
      b[ib].bsums[k / 16] = static_cast<int16_t>(simd::HsumI32(_mm256_madd_epi16(lo, _mm256_set1_epi16(1))));
      b[ib].bsums[k / 16 + 1] =
          static_cast<int16_t>(simd::HsumI32(_mm256_madd_epi16(hi, _mm256_set1_epi16(1))));
    }
    b[ib].d = 1.0f / iscale;
  }
}

LS_TARGET_AVX2 void DequantizeQ8_0(const void* src, float* dst, int64_t n) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t ib = 0; ib < n / kQK8_0; ++ib) {
    const __m256 d = _mm256_set1_ps(HalfToFloat(b[ib].d));
    for (int k = 0; k < 4; ++k) {
      const __m256i q =
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b[ib].qs + 8 * k)));
      _mm256_storeu_ps(dst + ib * kQK8_0 + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
    }
  }
}

}  // namespace

void FillAvx2Kernels(KernelSet* set) {
  set->vec_dot[kF32] = DotF32;
  set->vec_dot[kF16] = DotF16;
  set->vec_dot[kBF16] = DotBF16;
  set->vec_dot[kQ8_0] = DotQ8<BlockQ8_0, UnpackQ8_0>;
  set->vec_dot[kQ4_0] = DotQ8<BlockQ4_0, UnpackQ4_0>;
  set->vec_dot_tile[kQ8_0] = TileQ<BlockQ8_0, UnpackQ8_0>;
  set->vec_dot_tile[kQ4_0] = TileQ<BlockQ4_0, UnpackQ4_0>;
  set->quantize[kF16] = QuantizeF16;
  set->quantize[kQ8_0] = QuantizeQ8_0;
  set->quantize[kQ8_K] = QuantizeQ8_K;
  set->dequantize[kF16] = DequantizeF16;
  set->dequantize[kQ8_0] = DequantizeQ8_0;
  FillAvx2KQuantKernels(set);
}

}  // namespace lazyslot::quant
