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
    for (int k = 0; k < 4; ++k) acc[k] = _mm256_fmadd_ps(LoadF16(a + i + 8 * k), LoadF16(b + i + 8 * k), acc[k]);
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
// R activation rows share each weight block (R = 1 is the plain dot). Two accumulators per row take the even
// and the odd blocks (FMA latency); the tile and the single dot run this same code, so their results agree
// bit for bit. Weight blocks are unpacked to signed bytes by Unpack (Q4_0: nibbles - 8).

LS_TARGET_AVX2 inline __m256i UnpackQ8_0(const BlockQ8_0& b) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
}
LS_TARGET_AVX2 inline __m256i UnpackQ4_0(const BlockQ4_0& b) {
  return _mm256_sub_epi8(simd::UnpackNibbles(b.qs), _mm256_set1_epi8(8));
}

template <int R, typename WBlock, __m256i (*Unpack)(const WBlock&)>
LS_TARGET_AVX2 inline void StepQ8(const WBlock& w, const BlockQ8_0* const* x, int64_t ib, __m256* acc) {
  const __m256i wq = Unpack(w);
  const __m256i aw = _mm256_sign_epi8(wq, wq);
  const float dw = HalfToFloat(w.d);
  for (int r = 0; r < R; ++r) {
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][ib].qs));
    const __m256i p =
        _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xq, wq)), _mm256_set1_epi16(1));
    acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * HalfToFloat(x[r][ib].d)), _mm256_cvtepi32_ps(p), acc[r]);
  }
}

// Weight rows are streamed once per token from DRAM; the hardware prefetcher alone keeps too few lines in
// flight on these VMs, so each step asks for the lines 2 KiB ahead (tg: 12.7 -> 15.2 t/s on qwen3-0.6b Q8_0,
// 2 threads, with 1 KiB; 512 B gave 13.9; 2 KiB +5% over 1 KiB and 4 KiB none, medians of 4 alternating runs
// on a quieter machine; docs/bench.md).
constexpr int kPrefetchBytes = 2048;

template <int R, typename WBlock, __m256i (*Unpack)(const WBlock&)>
LS_TARGET_AVX2 inline void DotQ8Rows(const WBlock* w, const BlockQ8_0* const* x, int64_t nb, float* out) {
  __m256 acc0[R], acc1[R];
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
  int64_t ib = 0;
  for (; ib + 2 <= nb; ib += 2) {
    const char* ahead = reinterpret_cast<const char*>(w + ib) + kPrefetchBytes;
    _mm_prefetch(ahead, _MM_HINT_T0);  // two blocks are 68 (Q8_0) or 36 (Q4_0) bytes: two lines cover them
    _mm_prefetch(ahead + 64, _MM_HINT_T0);
    StepQ8<R, WBlock, Unpack>(w[ib], x, ib, acc0);
    StepQ8<R, WBlock, Unpack>(w[ib + 1], x, ib + 1, acc1);
  }
  if (ib < nb) StepQ8<R, WBlock, Unpack>(w[ib], x, ib, acc0);
  for (int r = 0; r < R; ++r) out[r] = Hsum(_mm256_add_ps(acc0[r], acc1[r]));
}

template <int R>
LS_TARGET_AVX2 inline void DotQ8_0Rows(const BlockQ8_0* w, const BlockQ8_0* const* x, int64_t nb, float* out) {
  DotQ8Rows<R, BlockQ8_0, UnpackQ8_0>(w, x, nb, out);
}
template <int R>
LS_TARGET_AVX2 inline void DotQ4_0Rows(const BlockQ4_0* w, const BlockQ8_0* const* x, int64_t nb, float* out) {
  DotQ8Rows<R, BlockQ4_0, UnpackQ4_0>(w, x, nb, out);
}

LS_TARGET_AVX2 float DotQ8_0(const void* w, const void* x, int64_t n) {
  const BlockQ8_0* xs[1] = {static_cast<const BlockQ8_0*>(x)};
  float out;
  DotQ8_0Rows<1>(static_cast<const BlockQ8_0*>(w), xs, n / kQK8_0, &out);
  return out;
}

LS_TARGET_AVX2 float DotQ4_0(const void* w, const void* x, int64_t n) {
  const BlockQ8_0* xs[1] = {static_cast<const BlockQ8_0*>(x)};
  float out;
  DotQ4_0Rows<1>(static_cast<const BlockQ4_0*>(w), xs, n / kQK4_0, &out);
  return out;
}

// Tile driver: each weight row against the activation rows four at a time.
template <typename WBlock, template <int> class Kernel>
void TileQ(const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride, int64_t n_x,
           int64_t n, float* out, int64_t out_stride) {
  const int64_t nb = n / kQK8_0;
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (int64_t r = 0; r < n_w; ++r) {
    const WBlock* wr = reinterpret_cast<const WBlock*>(wb + r * w_stride);
    for (int64_t i = 0; i < n_x; i += 4) {
      const int rows = static_cast<int>(n_x - i < 4 ? n_x - i : 4);
      const BlockQ8_0* xs[4];
      for (int k = 0; k < rows; ++k) xs[k] = reinterpret_cast<const BlockQ8_0*>(xb + (i + k) * x_stride);
      float res[4];
      switch (rows) {
        case 4: Kernel<4>::Run(wr, xs, nb, res); break;
        case 3: Kernel<3>::Run(wr, xs, nb, res); break;
        case 2: Kernel<2>::Run(wr, xs, nb, res); break;
        default: Kernel<1>::Run(wr, xs, nb, res); break;
      }
      for (int k = 0; k < rows; ++k) out[(i + k) * out_stride + r] = res[k];
    }
  }
}

template <int R>
struct Q8_0Kernel {
  LS_TARGET_AVX2 static void Run(const BlockQ8_0* w, const BlockQ8_0* const* x, int64_t nb, float* out) {
    DotQ8_0Rows<R>(w, x, nb, out);
  }
};
template <int R>
struct Q4_0Kernel {
  LS_TARGET_AVX2 static void Run(const BlockQ4_0* w, const BlockQ8_0* const* x, int64_t nb, float* out) {
    DotQ4_0Rows<R>(w, x, nb, out);
  }
};

void TileQ8_0(const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride, int64_t n_x,
              int64_t n, float* out, int64_t out_stride) {
  TileQ<BlockQ8_0, Q8_0Kernel>(w, w_stride, n_w, x, x_stride, n_x, n, out, out_stride);
}
void TileQ4_0(const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride, int64_t n_x,
              int64_t n, float* out, int64_t out_stride) {
  TileQ<BlockQ4_0, Q4_0Kernel>(w, w_stride, n_w, x, x_stride, n_x, n, out, out_stride);
}

// Q8_0 activation quantizer, the same rule as scalar::QuantizeQ8_0 (unrounded 127/amax, half-to-even).
LS_TARGET_AVX2 void QuantizeQ8_0(const float* src, void* dst, int64_t n) {
  BlockQ8_0* b = static_cast<BlockQ8_0*>(dst);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t ib = 0; ib < n / kQK8_0; ++ib) {
    const float* x = src + ib * kQK8_0;
    __m256 v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + 8 * k);
    const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
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
      const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b[ib].qs + 8 * k)));
      _mm256_storeu_ps(dst + ib * kQK8_0 + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
    }
  }
}

}  // namespace

void FillAvx2Kernels(KernelSet* set) {
  set->vec_dot[kF32] = DotF32;
  set->vec_dot[kF16] = DotF16;
  set->vec_dot[kBF16] = DotBF16;
  set->vec_dot[kQ8_0] = DotQ8_0;
  set->vec_dot[kQ4_0] = DotQ4_0;
  set->vec_dot_tile[kQ8_0] = TileQ8_0;
  set->vec_dot_tile[kQ4_0] = TileQ4_0;
  set->quantize[kF16] = QuantizeF16;
  set->quantize[kQ8_0] = QuantizeQ8_0;
  set->quantize[kQ8_K] = QuantizeQ8_K;
  set->dequantize[kF16] = DequantizeF16;
  set->dequantize[kQ8_0] = DequantizeQ8_0;
  FillAvx2KQuantKernels(set);
}

}  // namespace lazyslot::quant
