// AVX2 dots of K-quant weights (Q4_K, Q5_K, Q6_K) with Q8_K activations, and their tile variants.
// Integer sums per 32 values come from maddubs (unsigned weight nibbles x signed activations), weighted by
// the 6/8-bit sub-block scales with madd; K-quant mins and Q6_K's -32 offset use the activations' bsums.
#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant {
namespace {

using simd::HalfToFloat;
using simd::Hsum;

// The 8 scales and 8 mins of a Q4_K/Q5_K block.
inline void UnpackKScales(const uint8_t* s, int16_t sc[8], int16_t m[8]) {
  for (int j = 0; j < 8; ++j) {
    int a, b;
    KScaleMin(s, j, &a, &b);
    sc[j] = static_cast<int16_t>(a);
    m[j] = static_cast<int16_t>(b);
  }
}

// sum_j m_j * (bsums[2j] + bsums[2j+1])
inline int32_t MinsDot(const int16_t m[8], const int16_t* bsums) {
  int32_t s = 0;
  for (int j = 0; j < 8; ++j) s += m[j] * (bsums[2 * j] + bsums[2 * j + 1]);
  return s;
}

LS_TARGET_AVX2 inline __m256i LoadQ(const int8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Q4_K/Q5_K: R activation rows per weight block; q4/q5 weights decoded once for all rows.
template <int R, bool kFive>
LS_TARGET_AVX2 inline void DotQ45KRows(const void* wv, const BlockQ8_K* const* x, int64_t nb, float* out) {
  const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
  __m256 acc[R];
  float mins[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    mins[r] = 0.0f;
  }
  const size_t stride = kFive ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  for (int64_t ib = 0; ib < nb; ++ib) {
    // Q5_K is Q4_K with qh[32] inserted before qs: read the shared fields through the Q5_K layout.
    const uint8_t* base = static_cast<const uint8_t*>(wv) + ib * stride;
    uint16_t d16, dmin16;
    __builtin_memcpy(&d16, base, 2);
    __builtin_memcpy(&dmin16, base + 2, 2);
    const uint8_t* scales = base + 4;
    const uint8_t* qh = base + 16;
    const uint8_t* qs = kFive ? base + 48 : base + 16;
    int16_t sc[8], m[8];
    UnpackKScales(scales, sc, m);
    __m256i hbits = kFive ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh)) : _mm256_setzero_si256();
    __m256i q[8];  // unsigned weights of sub-block j, 0..15 (0..31 for Q5_K)
    for (int i = 0; i < 4; ++i) {
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * i));
      q[2 * i] = _mm256_and_si256(bytes, m4);
      q[2 * i + 1] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
      if (kFive) {
        // bit j of qh[l] is the fifth bit of sub-block j: shift it to bit 4 of each byte
        q[2 * i] = _mm256_or_si256(q[2 * i], _mm256_slli_epi16(_mm256_and_si256(hbits, one), 4));
        hbits = _mm256_srli_epi16(hbits, 1);
        q[2 * i + 1] = _mm256_or_si256(q[2 * i + 1], _mm256_slli_epi16(_mm256_and_si256(hbits, one), 4));
        hbits = _mm256_srli_epi16(hbits, 1);
      }
    }
    const float dw = HalfToFloat(d16), dminw = HalfToFloat(dmin16);
    for (int r = 0; r < R; ++r) {
      __m256i isum = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i p16 = _mm256_maddubs_epi16(q[j], LoadQ(x[r][ib].qs + 32 * j));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, _mm256_set1_epi16(sc[j])));
      }
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(x[r][ib].d * dw), _mm256_cvtepi32_ps(isum), acc[r]);
      mins[r] += x[r][ib].d * dminw * static_cast<float>(MinsDot(m, x[r][ib].bsums));
    }
  }
  for (int r = 0; r < R; ++r) out[r] = Hsum(acc[r]) - mins[r];
}

// Q6_K: q = lo | hi << 4 (0..63) per value; sum_g sc_g * sum (q - 32) x = sum_g sc_g * (sum q x - 32 bsum_g).
template <int R>
LS_TARGET_AVX2 inline void DotQ6KRows(const BlockQ6_K* w, const BlockQ8_K* const* x, int64_t nb, float* out) {
  const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < nb; ++ib) {
    const BlockQ6_K& b = w[ib];
    __m256i q[8];  // 32 values each, chunk 4h + k covers values 128h + 32k + l
    for (int h = 0; h < 2; ++h) {
      const __m256i la = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h));
      const __m256i lb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32));
      const __m256i hv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
      const __m256i lo[4] = {_mm256_and_si256(la, m4), _mm256_and_si256(lb, m4),
                             _mm256_and_si256(_mm256_srli_epi16(la, 4), m4),
                             _mm256_and_si256(_mm256_srli_epi16(lb, 4), m4)};
      for (int k = 0; k < 4; ++k) {
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hv, 2 * k), m2);
        q[4 * h + k] = _mm256_or_si256(lo[k], _mm256_slli_epi16(hi, 4));
      }
    }
    // Scale pairs per chunk: int16 lanes 0-7 get sc[2c] (values 0-15), lanes 8-15 sc[2c+1].
    __m256i scv[8];
    for (int c = 0; c < 8; ++c) {
      scv[c] = _mm256_set_m128i(_mm_set1_epi16(b.scales[2 * c + 1]), _mm_set1_epi16(b.scales[2 * c]));
    }
    const float dw = HalfToFloat(b.d);
    for (int r = 0; r < R; ++r) {
      __m256i isum = _mm256_setzero_si256();
      for (int c = 0; c < 8; ++c) {
        const __m256i p16 = _mm256_maddubs_epi16(q[c], LoadQ(x[r][ib].qs + 32 * c));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, scv[c]));
      }
      int32_t off = 0;
      for (int g = 0; g < 16; ++g) off += b.scales[g] * x[r][ib].bsums[g];
      // 32*off is folded into one lane so the whole block's sum goes through the one float multiply.
      isum = _mm256_sub_epi32(isum, _mm256_setr_epi32(32 * off, 0, 0, 0, 0, 0, 0, 0));
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(x[r][ib].d * dw), _mm256_cvtepi32_ps(isum), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = Hsum(acc[r]);
}

template <int R>
struct Q4KKernel {
  LS_TARGET_AVX2 static void Run(const void* w, const BlockQ8_K* const* x, int64_t nb, float* out) {
    DotQ45KRows<R, false>(w, x, nb, out);
  }
};
template <int R>
struct Q5KKernel {
  LS_TARGET_AVX2 static void Run(const void* w, const BlockQ8_K* const* x, int64_t nb, float* out) {
    DotQ45KRows<R, true>(w, x, nb, out);
  }
};
template <int R>
struct Q6KKernel {
  LS_TARGET_AVX2 static void Run(const void* w, const BlockQ8_K* const* x, int64_t nb, float* out) {
    DotQ6KRows<R>(static_cast<const BlockQ6_K*>(w), x, nb, out);
  }
};

template <template <int> class Kernel>
float DotK(const void* w, const void* x, int64_t n) {
  const BlockQ8_K* xs[1] = {static_cast<const BlockQ8_K*>(x)};
  float out;
  Kernel<1>::Run(w, xs, n / kQK_K, &out);
  return out;
}

template <template <int> class Kernel>
void TileK(const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride, int64_t n_x, int64_t n,
           float* out, int64_t out_stride) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (int64_t r = 0; r < n_w; ++r) {
    for (int64_t i = 0; i < n_x; i += 4) {
      const int rows = static_cast<int>(n_x - i < 4 ? n_x - i : 4);
      const BlockQ8_K* xs[4];
      for (int k = 0; k < rows; ++k) xs[k] = reinterpret_cast<const BlockQ8_K*>(xb + (i + k) * x_stride);
      float res[4];
      const void* wr = wb + r * w_stride;
      switch (rows) {
        case 4: Kernel<4>::Run(wr, xs, n / kQK_K, res); break;
        case 3: Kernel<3>::Run(wr, xs, n / kQK_K, res); break;
        case 2: Kernel<2>::Run(wr, xs, n / kQK_K, res); break;
        default: Kernel<1>::Run(wr, xs, n / kQK_K, res); break;
      }
      for (int k = 0; k < rows; ++k) out[(i + k) * out_stride + r] = res[k];
    }
  }
}

}  // namespace

void FillAvx2KQuantKernels(KernelSet* set) {
  set->vec_dot[kQ4_K] = DotK<Q4KKernel>;
  set->vec_dot[kQ5_K] = DotK<Q5KKernel>;
  set->vec_dot[kQ6_K] = DotK<Q6KKernel>;
  set->vec_dot_tile[kQ4_K] = TileK<Q4KKernel>;
  set->vec_dot_tile[kQ5_K] = TileK<Q5KKernel>;
  set->vec_dot_tile[kQ6_K] = TileK<Q6KKernel>;
}

}  // namespace lazyslot::quant
