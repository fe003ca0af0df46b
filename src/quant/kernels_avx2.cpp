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
// The arithmetic every AVX2 path for Q8_0/Q4_0 weights follows (the dot, the tile and the packed kernel in
// kernels_avx2_packed.cpp), for one weight row and one activation row: block b's 32 products are summed
// exactly as an integer T_b, scaled by s_b = f32(d_w) * f32(d_x) into one of 8 phase accumulators,
//   acc[b % 8] = fma(s_b, f32(T_b), acc[b % 8]),
// and the result is ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7)), Hsum's order. The dot
// keeps the phases in the lanes of one register (8 blocks per step); the tile and the packed kernel keep a
// register per phase with (weight row, activation row) pairs in the lanes, so all three agree bit for bit.
// Here signed products come from maddubs(|w|, sign(x, w)); weight blocks are unpacked to signed bytes by
// Unpack (Q4_0: nibbles - 8). The packed kernels reach the same exact sums from unsigned weights (Q8_0:
// w + 128 in two nibbles; Q4_0: the nibbles) with the offset taken off through the activations' block sums.

LS_TARGET_AVX2 inline __m256i UnpackQ8_0(const BlockQ8_0& b) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
}
LS_TARGET_AVX2 inline __m256i UnpackQ4_0(const BlockQ4_0& b) {
  return _mm256_sub_epi8(simd::UnpackNibbles(b.qs), _mm256_set1_epi8(8));
}

// Weight rows are streamed once per token from DRAM; the hardware prefetcher alone keeps too few lines in
// flight on these VMs, so each step asks for the lines 2 KiB ahead (tg on qwen3-0.6b Q8_0, 2 threads: 12.7
// t/s without, 13.9 with 512 B, 15.2 with 1 KiB; 2 KiB +5% over 1 KiB and 4 KiB no more, medians of 4
// alternating runs on a quieter machine; docs/bench.md).
constexpr int kPrefetchBytes = 2048;

// Activation scales converted once per tile call for rows of up to this many blocks (n <= 16,384); longer
// rows go through the single-row path one activation row at a time.
constexpr int64_t kMaxScaleBlocks = 512;

// 8 int32 lanes of products of one block pair; |w| and w come from the weight block (shared across rows).
LS_TARGET_AVX2 inline __m256i BlockProducts(__m256i aw, __m256i wq, const int8_t* xq) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
  return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(x, wq)), _mm256_set1_epi16(1));
}

// Lane j = the sum of v[j]'s 8 lanes (exact), for 8 vectors at once.
LS_TARGET_AVX2 inline __m256i Reduce8(const __m256i* v) {
  const __m256i g0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i g1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  // g0: sums of lanes 0-3 of v0..v3 | sums of lanes 4-7 of v0..v3 (g1 likewise for v4..v7)
  return _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20), _mm256_permute2x128_si256(g0, g1, 0x31));
}

// The f16 scales of blocks b0..b0+7 (zero past nb) as 8 floats.
template <typename Block>
LS_TARGET_AVX2 inline __m256 Scales8(const Block* b, int64_t b0, int64_t nb) {
  if (b0 + 8 <= nb) {
    return _mm256_cvtph_ps(_mm_setr_epi16(static_cast<short>(b[b0].d), static_cast<short>(b[b0 + 1].d),
                                          static_cast<short>(b[b0 + 2].d), static_cast<short>(b[b0 + 3].d),
                                          static_cast<short>(b[b0 + 4].d), static_cast<short>(b[b0 + 5].d),
                                          static_cast<short>(b[b0 + 6].d), static_cast<short>(b[b0 + 7].d)));
  }
  alignas(16) uint16_t h[8] = {};
  for (int64_t j = 0; b0 + j < nb; ++j) h[j] = b[b0 + j].d;
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
}

// One weight row against one activation row, 8 blocks per step (phase j in lane j). dx: the activation
// row's scales as floats, zero-padded to a multiple of 8 blocks, or null to convert them from the blocks.
template <typename WBlock, __m256i (*Unpack)(const WBlock&)>
LS_TARGET_AVX2 inline float DotRow(const WBlock* w, const BlockQ8_0* x, const float* dx, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b0 = 0; b0 < nb; b0 += 8) {
    const char* ahead = reinterpret_cast<const char*>(w + b0) + kPrefetchBytes;
    for (size_t off = 0; off < 8 * sizeof(WBlock); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
    __m256i t[8];
    for (int j = 0; j < 8; ++j) {
      if (b0 + j < nb) {
        const __m256i wq = Unpack(w[b0 + j]);
        t[j] = BlockProducts(_mm256_sign_epi8(wq, wq), wq, x[b0 + j].qs);
      } else {
        t[j] = _mm256_setzero_si256();
      }
    }
    const __m256 sx = dx ? _mm256_loadu_ps(dx + b0) : Scales8(x, b0, nb);
    acc = _mm256_fmadd_ps(_mm256_mul_ps(Scales8(w, b0, nb), sx), _mm256_cvtepi32_ps(Reduce8(t)), acc);
  }
  return Hsum(acc);
}

template <typename WBlock, __m256i (*Unpack)(const WBlock&)>
LS_TARGET_AVX2 float DotQ8(const void* w, const void* x, int64_t n) {
  return DotRow<WBlock, Unpack>(static_cast<const WBlock*>(w), static_cast<const BlockQ8_0*>(x), nullptr,
                                n / kQK8_0);
}

// W weight rows (1 or 2) x R activation rows (<= 4): lane p = r * W + k holds the pair (w[k], x[r]).
// dx[ib][r]: the activation rows' scales by block. out[r * W + k] = dot(w[k], x[r]).
template <int W, int R, typename WBlock, __m256i (*Unpack)(const WBlock&)>
LS_TARGET_AVX2 inline void DotQ8Tile(const WBlock* const* w, const BlockQ8_0* const* x, const float (*dx)[4],
                                     int64_t nb, float* out) {
  alignas(32) float acc[8][8] = {};
  for (int64_t ib = 0; ib < nb; ++ib) {
    __m256i t[8];
    __m256i wq[W], aw[W];
    float dw[W];
    for (int k = 0; k < W; ++k) {
      _mm_prefetch(reinterpret_cast<const char*>(w[k] + ib) + kPrefetchBytes, _MM_HINT_T0);
      wq[k] = Unpack(w[k][ib]);
      aw[k] = _mm256_sign_epi8(wq[k], wq[k]);
      dw[k] = HalfToFloat(w[k][ib].d);
    }
    for (int r = 0; r < R; ++r) {
      for (int k = 0; k < W; ++k) t[r * W + k] = BlockProducts(aw[k], wq[k], x[r][ib].qs);
    }
    for (int p = W * R; p < 8; ++p) t[p] = _mm256_setzero_si256();
    // Scales per lane: f32(d_w) of the lane's weight row times f32(d_x) of its activation row (0 past R).
    const __m128 sx = _mm_loadu_ps(dx[ib]);
    __m256 s;
    if (W == 1) {
      s = _mm256_mul_ps(_mm256_set1_ps(dw[0]), _mm256_castps128_ps256(sx));
      s = _mm256_blend_ps(_mm256_setzero_ps(), s, 0x0f);
    } else {
      const __m256 sxx = _mm256_set_m128(_mm_unpackhi_ps(sx, sx), _mm_unpacklo_ps(sx, sx));  // x0 x0 x1 x1 ..
      s = _mm256_mul_ps(_mm256_blend_ps(_mm256_set1_ps(dw[0]), _mm256_set1_ps(dw[W - 1]), 0xaa), sxx);
    }
    float* a = acc[ib % 8];
    _mm256_store_ps(a, _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(Reduce8(t)), _mm256_load_ps(a)));
  }
  alignas(32) float res[8];
  _mm256_store_ps(res, simd::PhaseSum(acc));
  for (int p = 0; p < W * R; ++p) out[p] = res[p];
}

// W weight rows (at w[0..W)) against R activation rows.
template <int W, typename WBlock, __m256i (*Unpack)(const WBlock&)>
LS_TARGET_AVX2 void TileRows(const WBlock* const* w, const BlockQ8_0* const* x, const float (*dx)[4],
                             int rows, int64_t nb, float* res) {
  switch (rows) {
    case 4:
      DotQ8Tile<W, 4, WBlock, Unpack>(w, x, dx, nb, res);
      break;
    case 3:
      DotQ8Tile<W, 3, WBlock, Unpack>(w, x, dx, nb, res);
      break;
    default:
      DotQ8Tile<W, 2, WBlock, Unpack>(w, x, dx, nb, res);
      break;
  }
}

// Tile driver. One activation row (generation): DotRow per weight row, the row's scales converted once.
// Several: activation rows four at a time (scales converted once, by block), weight rows in pairs.
template <typename WBlock, __m256i (*Unpack)(const WBlock&)>
LS_TARGET_AVX2 void TileQ(const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride,
                          int64_t n_x, int64_t n, float* out, int64_t out_stride) {
  const int64_t nb = n / kQK8_0;
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  if (nb > kMaxScaleBlocks || n_x == 1) {
    alignas(32) float sx[kMaxScaleBlocks];
    for (int64_t i = 0; i < n_x; ++i) {
      const BlockQ8_0* xr = reinterpret_cast<const BlockQ8_0*>(xb + i * x_stride);
      const float* dx = nullptr;
      if (nb <= kMaxScaleBlocks) {
        for (int64_t ib = 0; ib < (nb + 7) / 8 * 8; ++ib) sx[ib] = ib < nb ? HalfToFloat(xr[ib].d) : 0.0f;
        dx = sx;
      }
      for (int64_t r = 0; r < n_w; ++r) {
        out[i * out_stride + r] =
            DotRow<WBlock, Unpack>(reinterpret_cast<const WBlock*>(wb + r * w_stride), xr, dx, nb);
      }
    }
    return;
  }
  alignas(16) float scales[kMaxScaleBlocks][4];
  for (int64_t i = 0; i < n_x; i += 4) {
    const int rows = static_cast<int>(n_x - i < 4 ? n_x - i : 4);
    const BlockQ8_0* xs[4];
    for (int k = 0; k < rows; ++k) xs[k] = reinterpret_cast<const BlockQ8_0*>(xb + (i + k) * x_stride);
    for (int64_t ib = 0; ib < nb; ++ib) {
      for (int k = 0; k < 4; ++k) scales[ib][k] = k < rows ? HalfToFloat(xs[k][ib].d) : 0.0f;
    }
    if (rows == 1) {  // a ragged last row
      for (int64_t r = 0; r < n_w; ++r) {
        out[i * out_stride + r] =
            DotRow<WBlock, Unpack>(reinterpret_cast<const WBlock*>(wb + r * w_stride), xs[0], nullptr, nb);
      }
      continue;
    }
    for (int64_t r = 0; r < n_w; r += 2) {
      const bool pair = r + 1 < n_w;
      const WBlock* ws[2] = {reinterpret_cast<const WBlock*>(wb + r * w_stride),
                             reinterpret_cast<const WBlock*>(wb + (pair ? r + 1 : r) * w_stride)};
      float res[8] = {};
      if (pair) {
        TileRows<2, WBlock, Unpack>(ws, xs, scales, rows, nb, res);
        for (int k = 0; k < rows; ++k) {
          out[(i + k) * out_stride + r] = res[2 * k];
          out[(i + k) * out_stride + r + 1] = res[2 * k + 1];
        }
      } else {
        TileRows<1, WBlock, Unpack>(ws, xs, scales, rows, nb, res);
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
// largest magnitude; a vector pass finds the magnitude, a second one the first position holding it.
LS_TARGET_AVX2 void QuantizeQ8_K(const float* src, void* dst, int64_t n) {
  BlockQ8_K* b = static_cast<BlockQ8_K*>(dst);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    const float* x = src + ib * kQK_K;
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < kQK_K; k += 8) m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask));
    const float amax = simd::Hmax(m);
    // The first position holding the magnitude, 8 at a time (a scalar scan takes ~2% of pp512).
    int imax = kQK_K - 1;
    const __m256 va = _mm256_set1_ps(amax);
    for (int k = 0; k < kQK_K; k += 8) {
      const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask);
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(a, va, _CMP_EQ_OQ));
      if (hit != 0) {
        imax = k + __builtin_ctz(static_cast<unsigned>(hit));
        break;
      }
    }
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
