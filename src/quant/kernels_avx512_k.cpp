// AVX-512 dots of K-quant weights (Q4_K, Q5_K, Q6_K) with Q8_K activations, and their tiles (one activation
// row goes 4 weight rows at a time through kernels_avx512_gemv_k.cpp, the last few here). A whole super-block
// is decoded into 4 registers of 64 values (avx512_kdecode.h); maddubs gives the int16 pair products and
// vpdpwssd applies the sub-block scales. The integer sums per block are the same exact integers and the float
// operations are the same, in the same order, as the AVX2 dots: both sets give the same bits, and dispatch
// times both and may take each family from either (on the Ice Lake VM the Q4_K and Q5_K single-row dots tie
// with AVX2's; the Q6_K one is ~1.3x faster). GCC 12 warns about its own AVX-512 headers (_mm512_undefined_*
// self-initialisation, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "quant/avx512_gemv.h"
#include "quant/avx512_kdecode.h"
#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant {
namespace {

using simd::HalfToFloat;
using simd::HsumI32PairToFloat;

// As kernels_avx2_k.cpp: K-quant lines are asked for 4 KiB ahead.
constexpr int kPrefetchBytes = 4096;

// isum = sum_j sc_j * (q_j . x_j) and msum = sum_j m_j * (bsums[2j] + bsums[2j+1]) of one block and one
// activation row, then acc += (dx * d) * isum - (dx * dmin) * msum as the AVX2 dot does it.
LS_TARGET_AVX512 inline float AccumulateQ45(const avx512::DecodedQ45& b, const BlockQ8_K& x, float acc) {
  const int8_t* xq = x.qs;
  __m512i isum = _mm512_setzero_si512();
  for (int p = 0; p < 4; ++p) {
    isum = _mm512_dpwssd_epi32(isum, _mm512_maddubs_epi16(b.q[p], _mm512_loadu_si512(xq + 64 * p)), b.sc[p]);
  }
  const __m256i i8 = _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1));
  const __m256i msum =
      _mm256_madd_epi16(b.mins, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums)));
  const __m128 sums = HsumI32PairToFloat(i8, msum);  // f32(isum), f32(msum): exact sums, one rounding each
  acc = __builtin_fmaf(x.d * b.d, _mm_cvtss_f32(sums), acc);
  return __builtin_fmaf(-(x.d * b.dmin), _mm_cvtss_f32(_mm_movehdup_ps(sums)), acc);
}

template <int R, bool kFive>
LS_TARGET_AVX512 inline void DotQ45KRows(const uint8_t* w, const BlockQ8_K* const* x, int64_t nb,
                                         float* out) {
  const size_t stride = kFive ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  float acc[R];
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
  for (int64_t ib = 0; ib < nb; ++ib) {
    const uint8_t* base = w + ib * stride;
    for (size_t off = 0; off < stride; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(base) + kPrefetchBytes + off, _MM_HINT_T0);
    }
    const avx512::DecodedQ45 b = avx512::DecodeQ45<kFive>(base);
    for (int r = 0; r < R; ++r) acc[r] = AccumulateQ45(b, x[r][ib], acc[r]);
  }
  for (int r = 0; r < R; ++r) out[r] = acc[r];
}

// ---- Q6_K: the values of 64 consecutive positions per register (q = lo | hi << 4, 0..63), so the
// activations are read in place; scales per 16 values by word permutes; the -32 offset through the bsums.
// Block sum = sum_g sc_g * (q_g . x_g) - 32 * sum_g sc_g * bsums_g (exact), then acc += (dx * d) * sum.
LS_TARGET_AVX512 inline int32_t SumQ6(const BlockQ8_K& x, const __m512i* q, const __m512i* sc, __m256i sc16) {
  __m512i isum = _mm512_setzero_si512();
  for (int m = 0; m < 4; ++m) {
    const __m512i xq = _mm512_loadu_si512(x.qs + 64 * m);
    isum = _mm512_dpwssd_epi32(isum, _mm512_maddubs_epi16(q[m], xq), sc[m]);
  }
  const __m256i off = _mm256_madd_epi16(sc16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums)));
  const __m256i i8 =
      _mm256_sub_epi32(_mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1)),
                       _mm256_slli_epi32(off, 5));
  return simd::HsumI32(i8);
}

template <int R>
LS_TARGET_AVX512 inline void DotQ6KRows(const BlockQ6_K* w, const BlockQ8_K* const* x, int64_t nb,
                                        float* out) {
  float acc[R];
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
  for (int64_t ib = 0; ib < nb; ++ib) {
    const BlockQ6_K& b = w[ib];
    for (size_t off = 0; off < sizeof(BlockQ6_K); off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(&b) + kPrefetchBytes + off, _MM_HINT_T0);
    }
    __m512i q[4];
    avx512::DecodeQ6(b, q);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    const __m512i s = _mm512_castsi256_si512(sc16);
    // Register m: words 8g..8g+7 = sc[4m + g] (values 16 (4m + g) ..), one word permute each.
    const __m512i groups = _mm512_setr_epi32(0, 0, 0, 0, 0x10001, 0x10001, 0x10001, 0x10001, 0x20002, 0x20002,
                                             0x20002, 0x20002, 0x30003, 0x30003, 0x30003, 0x30003);
    __m512i sc[4];
    for (int m = 0; m < 4; ++m) {
      sc[m] =
          _mm512_permutexvar_epi16(_mm512_add_epi16(groups, _mm512_set1_epi16(static_cast<short>(4 * m))), s);
    }
    const float dw = HalfToFloat(b.d);
    for (int r = 0; r < R; ++r) {
      const int32_t total = SumQ6(x[r][ib], q, sc, sc16);
      acc[r] = __builtin_fmaf(x[r][ib].d * dw, static_cast<float>(total), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = acc[r];
}

template <int R>
struct Q4KKernel {
  LS_TARGET_AVX512 static void Run(const void* w, const BlockQ8_K* const* x, int64_t nb, float* out) {
    DotQ45KRows<R, false>(static_cast<const uint8_t*>(w), x, nb, out);
  }
};
template <int R>
struct Q5KKernel {
  LS_TARGET_AVX512 static void Run(const void* w, const BlockQ8_K* const* x, int64_t nb, float* out) {
    DotQ45KRows<R, true>(static_cast<const uint8_t*>(w), x, nb, out);
  }
};
template <int R>
struct Q6KKernel {
  LS_TARGET_AVX512 static void Run(const void* w, const BlockQ8_K* const* x, int64_t nb, float* out) {
    DotQ6KRows<R>(static_cast<const BlockQ6_K*>(w), x, nb, out);
  }
};

template <template <int> class Kernel>
LS_TARGET_AVX512 float DotK(const void* w, const void* x, int64_t n) {
  const BlockQ8_K* xs[1] = {static_cast<const BlockQ8_K*>(x)};
  float out;
  Kernel<1>::Run(w, xs, n / kQK_K, &out);
  return out;
}

// Activation rows 4 at a time against each weight row; one activation row (generation) keeps the single-row
// kernel inlined in the loop over weight rows.
template <template <int> class Kernel>
__attribute__((flatten)) LS_TARGET_AVX512 void TileK(const void* w, size_t w_stride, int64_t n_w,
                                                     const void* x, size_t x_stride, int64_t n_x, int64_t n,
                                                     float* out, int64_t out_stride) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < n_x; i += 4) {
    const int rows = static_cast<int>(n_x - i < 4 ? n_x - i : 4);
    const BlockQ8_K* xs[4];
    for (int k = 0; k < rows; ++k) xs[k] = reinterpret_cast<const BlockQ8_K*>(xb + (i + k) * x_stride);
    for (int64_t r = 0; r < n_w; ++r) {
      const void* wr = wb + r * w_stride;
      float res[4];
      switch (rows) {
        case 4:
          Kernel<4>::Run(wr, xs, nb, res);
          break;
        case 3:
          Kernel<3>::Run(wr, xs, nb, res);
          break;
        case 2:
          Kernel<2>::Run(wr, xs, nb, res);
          break;
        default:
          Kernel<1>::Run(wr, xs, nb, res);
          break;
      }
      for (int k = 0; k < rows; ++k) out[(i + k) * out_stride + r] = res[k];
    }
  }
}

// K-quants: one activation row (generation) takes weight rows 4 at a time (avx512_gemv.h), the rest as TileK.
template <template <int> class Kernel,
          int64_t (*Gemv)(const void*, size_t, int64_t, const void*, int64_t, float*)>
__attribute__((flatten)) LS_TARGET_AVX512 void TileRows4(const void* w, size_t w_stride, int64_t n_w,
                                                         const void* x, size_t x_stride, int64_t n_x,
                                                         int64_t n, float* out, int64_t out_stride) {
  if (n_x == 1) {
    const int64_t done = Gemv(w, w_stride, n_w, x, n, out);
    const BlockQ8_K* xs[1] = {static_cast<const BlockQ8_K*>(x)};
    for (int64_t r = done; r < n_w; ++r) {
      Kernel<1>::Run(static_cast<const uint8_t*>(w) + r * w_stride, xs, n / kQK_K, out + r);
    }
    return;
  }
  TileK<Kernel>(w, w_stride, n_w, x, x_stride, n_x, n, out, out_stride);
}

}  // namespace

void FillAvx512KQuantKernels(KernelSet* set) {
  set->vec_dot[kQ4_K] = DotK<Q4KKernel>;
  set->vec_dot[kQ5_K] = DotK<Q5KKernel>;
  set->vec_dot[kQ6_K] = DotK<Q6KKernel>;
  set->vec_dot_tile[kQ4_K] = TileRows4<Q4KKernel, avx512::GemvQ4K>;
  set->vec_dot_tile[kQ5_K] = TileRows4<Q5KKernel, avx512::GemvQ5K>;
  set->vec_dot_tile[kQ6_K] = TileRows4<Q6KKernel, avx512::GemvQ6K>;
}

}  // namespace lazyslot::quant
