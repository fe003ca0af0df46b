// AVX2 dots of K-quant weights (Q4_K, Q5_K, Q6_K) with Q8_K activations, and their tile variants.
// Integer sums per 32 values come from maddubs (unsigned weight nibbles x signed activations), weighted by
// the 6/8-bit sub-block scales with madd; K-quant mins and Q6_K's -32 offset use the activations' bsums.
#include <type_traits>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant {
namespace {

using simd::HalfToFloat;
using simd::HsumI32PairToFloat;

// Weight lines asked for ahead of use, as in kernels_avx2.cpp (Q4_K tg on qwen3-0.6b: 20.1 t/s without, 27.4
// with 1 KiB). A K-quant block costs more arithmetic per byte, so the lines are asked for further ahead: one
// thread streaming a DRAM-sized Q4_K matrix, 9.2 GB/s at 1 KiB, 12.0 at 2 KiB, 11.9 at 4 KiB; tg 4 KiB +6%.
constexpr int kPrefetchBytes = 4096;
constexpr int kFourPrefetchBytes = 8192;  // the 4-row Q4_K gemv's linear stream (DotQ4KFour)

LS_TARGET_AVX2 inline __m256i LoadQ(const int8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Byte-shuffle control that broadcasts int16 element j of each 128-bit lane to the whole lane.
LS_TARGET_AVX2 inline __m256i BroadcastWordMask(int j) {
  return _mm256_set1_epi16(static_cast<short>((2 * j) | (2 * j + 1) << 8));
}

// Bit j of each byte of qh moved to bit 4 (the fifth bit of Q5_K sub-block j).
template <int J>
LS_TARGET_AVX2 inline __m256i FifthBit(__m256i qh) {
  const __m256i m10 = _mm256_set1_epi8(0x10);
  if constexpr (J < 4) return _mm256_and_si256(_mm256_slli_epi16(qh, 4 - J), m10);
  if constexpr (J == 4) return _mm256_and_si256(qh, m10);
  return _mm256_and_si256(_mm256_srli_epi16(qh, J - 4), m10);
}

// Sub-blocks 2I and 2I+1 of a Q4_K/Q5_K block against one activation row, added to isum.
template <int I, bool kFive>
LS_TARGET_AVX2 inline __m256i SubBlockPair(const uint8_t* qs, __m256i qh, __m256i scales, const int8_t* xq,
                                           __m256i isum) {
  const __m256i m4 = _mm256_set1_epi8(15);
  const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * I));
  __m256i q0 = _mm256_and_si256(bytes, m4), q1 = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
  if (kFive) {
    q0 = _mm256_or_si256(q0, FifthBit<2 * I>(qh));
    q1 = _mm256_or_si256(q1, FifthBit<2 * I + 1>(qh));
  }
  const __m256i p0 = _mm256_maddubs_epi16(q0, LoadQ(xq + 64 * I));
  const __m256i p1 = _mm256_maddubs_epi16(q1, LoadQ(xq + 64 * I + 32));
  isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p0, _mm256_shuffle_epi8(scales, BroadcastWordMask(2 * I))));
  return _mm256_add_epi32(isum,
                          _mm256_madd_epi16(p1, _mm256_shuffle_epi8(scales, BroadcastWordMask(2 * I + 1))));
}

// The single-row case of DotQ45KRows (generation): the same integer sums and float operations, with each
// pair of sub-blocks decoded right before use so that nothing is spilled (decoding all 8 first, as the
// multi-row tile does, kept the accumulator in memory: a store-to-load trip per block on its FMA chain).
template <bool kFive>
LS_TARGET_AVX2 inline float DotQ45KOne(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  const size_t stride = kFive ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  float acc = 0.0f;
  for (int64_t ib = 0; ib < nb; ++ib) {
    const uint8_t* base = w + ib * stride;
    for (size_t off = 0; off < stride; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(base) + kPrefetchBytes + off, _MM_HINT_T0);
    }
    uint16_t d16, dmin16;
    __builtin_memcpy(&d16, base, 2);
    __builtin_memcpy(&dmin16, base + 2, 2);
    const uint8_t* qs = kFive ? base + 48 : base + 16;
    const __m256i qh =
        kFive ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + 16)) : _mm256_setzero_si256();
    const __m128i sm = simd::UnpackKScales(base + 4);
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
    __m256i isum = _mm256_setzero_si256();
    isum = SubBlockPair<0, kFive>(qs, qh, scales, x[ib].qs, isum);
    isum = SubBlockPair<1, kFive>(qs, qh, scales, x[ib].qs, isum);
    isum = SubBlockPair<2, kFive>(qs, qh, scales, x[ib].qs, isum);
    isum = SubBlockPair<3, kFive>(qs, qh, scales, x[ib].qs, isum);
    const __m256i msum =
        _mm256_madd_epi16(mins, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[ib].bsums)));
    const __m128 sums = HsumI32PairToFloat(isum, msum);
    const float dx = x[ib].d;
    acc = __builtin_fmaf(dx * HalfToFloat(d16), _mm_cvtss_f32(sums), acc);
    acc = __builtin_fmaf(-(dx * HalfToFloat(dmin16)), _mm_cvtss_f32(_mm_movehdup_ps(sums)), acc);
  }
  return acc;
}

// Q4_K/Q5_K: R activation rows per weight block; weights and scales decoded once for all rows.
// isum = sum_j sc_j * (q_j . x_j) and msum = sum_j m_j * (bsums[2j] + bsums[2j+1]) are summed exactly as
// integers per block, then acc += (dx * d) * isum - (dx * dmin) * msum with two FMAs: the order the packed
// kernel (kernels_avx2_packed.cpp) follows in its lanes, so both give the same bits.
template <int R, bool kFive>
LS_TARGET_AVX2 inline void DotQ45KRows(const void* wv, const BlockQ8_K* const* x, int64_t nb, float* out) {
  if constexpr (R == 1) {
    out[0] = DotQ45KOne<kFive>(static_cast<const uint8_t*>(wv), x[0], nb);
    return;
  }
  const __m256i m4 = _mm256_set1_epi8(15);
  float acc[R];
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
  const size_t stride = kFive ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  for (int64_t ib = 0; ib < nb; ++ib) {
    // Q5_K is Q4_K with qh[32] inserted before qs: d, dmin and scales sit at the same offsets.
    const uint8_t* base = static_cast<const uint8_t*>(wv) + ib * stride;
    for (size_t off = 0; off < stride; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(base) + kPrefetchBytes + off, _MM_HINT_T0);
    }
    uint16_t d16, dmin16;
    __builtin_memcpy(&d16, base, 2);
    __builtin_memcpy(&dmin16, base + 2, 2);
    const uint8_t* qh = base + 16;
    const uint8_t* qs = kFive ? base + 48 : base + 16;
    const __m128i sm = simd::UnpackKScales(base + 4);
    // Scales as int16 in both lanes (for per-j broadcasts); mins as int16 pairs m0 m0 m1 m1 ... m7 m7.
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));

    const __m256i hbits =
        kFive ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh)) : _mm256_setzero_si256();
    __m256i q[8];  // unsigned weights of sub-block j, 0..15 (0..31 for Q5_K)
    for (int i = 0; i < 4; ++i) {
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * i));
      q[2 * i] = _mm256_and_si256(bytes, m4);
      q[2 * i + 1] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
    }
    if (kFive) {  // bit j of qh[l] is the fifth bit of sub-block j
      q[0] = _mm256_or_si256(q[0], FifthBit<0>(hbits));
      q[1] = _mm256_or_si256(q[1], FifthBit<1>(hbits));
      q[2] = _mm256_or_si256(q[2], FifthBit<2>(hbits));
      q[3] = _mm256_or_si256(q[3], FifthBit<3>(hbits));
      q[4] = _mm256_or_si256(q[4], FifthBit<4>(hbits));
      q[5] = _mm256_or_si256(q[5], FifthBit<5>(hbits));
      q[6] = _mm256_or_si256(q[6], FifthBit<6>(hbits));
      q[7] = _mm256_or_si256(q[7], FifthBit<7>(hbits));
    }
    __m256i sc[8];
    for (int j = 0; j < 8; ++j) sc[j] = _mm256_shuffle_epi8(scales, BroadcastWordMask(j));
    const float dw = HalfToFloat(d16), dminw = HalfToFloat(dmin16);
    for (int r = 0; r < R; ++r) {
      __m256i isum = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i p16 = _mm256_maddubs_epi16(q[j], LoadQ(x[r][ib].qs + 32 * j));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, sc[j]));
      }
      const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][ib].bsums));
      const __m256i msum = _mm256_madd_epi16(mins, bsums);
      const __m128 sums = HsumI32PairToFloat(isum, msum);  // f32(isum), f32(msum) (exact sums, one rounding)
      const float dx = x[r][ib].d;
      acc[r] = __builtin_fmaf(dx * dw, _mm_cvtss_f32(sums), acc[r]);
      acc[r] = __builtin_fmaf(-(dx * dminw), _mm_cvtss_f32(_mm_movehdup_ps(sums)), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = acc[r];
}

// Byte-shuffle control for Q6_K chunk c (32 values): int16 lanes 0-7 = scale word 2(c % 4) of a 128-bit half,
// lanes 8-15 = the word after it.
LS_TARGET_AVX2 inline __m256i Q6ScaleControl(int c) {
  const char w = static_cast<char>(4 * (c % 4));  // byte of sc[2c]'s int16 within its half
  const __m128i lo = _mm_set1_epi16(static_cast<short>(w | (w + 1) << 8));
  const __m128i hi = _mm_set1_epi16(static_cast<short>((w + 2) | (w + 3) << 8));
  return _mm256_set_m128i(hi, lo);
}

// The single-row case of DotQ6KRows: each chunk decoded right before use (as DotQ45KOne), the same sums
// and float operations.
LS_TARGET_AVX2 inline float DotQ6KOne(const BlockQ6_K* w, const BlockQ8_K* x, int64_t nb) {
  float acc = 0.0f;
  __m256i pending = _mm256_setzero_si256();
  for (int64_t ib = 0; ib < nb; ++ib) {
    const BlockQ6_K& b = w[ib];
    for (size_t off = 0; off < sizeof(BlockQ6_K); off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(&b) + kPrefetchBytes + off, _MM_HINT_T0);
    }
    const __m128i sv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m256i sc16 = _mm256_cvtepi8_epi16(sv);
    const __m256i halves[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00),
                               _mm256_permute2x128_si256(sc16, sc16, 0x11)};
    __m256i isum = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i half = halves[h];
      __m256i q[4];
      simd::DecodeQ6Half(b.ql, b.qh, h, q);
      for (int k = 0; k < 4; ++k) {
        const __m256i p16 = _mm256_maddubs_epi16(q[k], LoadQ(x[ib].qs + 128 * h + 32 * k));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, _mm256_shuffle_epi8(half, Q6ScaleControl(k))));
      }
    }
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[ib].bsums));
    isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(_mm256_madd_epi16(sc16, bsums), 5));
    if ((ib & 1) == 0) {
      pending = isum;
      continue;
    }
    const __m128 sums = HsumI32PairToFloat(pending, isum);
    acc = __builtin_fmaf(x[ib - 1].d * HalfToFloat(w[ib - 1].d), _mm_cvtss_f32(sums), acc);
    acc = __builtin_fmaf(x[ib].d * HalfToFloat(b.d), _mm_cvtss_f32(_mm_movehdup_ps(sums)), acc);
  }
  if (nb & 1) {  // the last block waited alone
    const float total = _mm_cvtss_f32(HsumI32PairToFloat(pending, _mm256_setzero_si256()));
    acc = __builtin_fmaf(x[nb - 1].d * HalfToFloat(w[nb - 1].d), total, acc);
  }
  return acc;
}

// Q6_K: q = lo | hi << 4 (0..63) per value; sum_g sc_g * sum (q - 32) x = sum_g sc_g * (sum q x - 32 bsum_g),
// summed exactly per block, then acc += (dx * d) * sum with one FMA. The 8-lane sums of two blocks are
// reduced together (an even block waits in `pending` for the next one).
template <int R>
LS_TARGET_AVX2 inline void DotQ6KRows(const BlockQ6_K* w, const BlockQ8_K* const* x, int64_t nb, float* out) {
  if constexpr (R == 1) {
    out[0] = DotQ6KOne(w, x[0], nb);
    return;
  }
  float acc[R];
  __m256i pending[R];
  for (int r = 0; r < R; ++r) pending[r] = _mm256_setzero_si256();
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
  for (int64_t ib = 0; ib < nb; ++ib) {
    const BlockQ6_K& b = w[ib];
    for (size_t off = 0; off < sizeof(BlockQ6_K); off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(&b) + kPrefetchBytes + off, _MM_HINT_T0);
    }
    __m256i q[8];  // 32 values each, chunk 4h + k covers values 128h + 32k + l
    for (int h = 0; h < 2; ++h) simd::DecodeQ6Half(b.ql, b.qh, h, q + 4 * h);
    // Per chunk c: int16 lanes 0-7 = sc[2c] (values 0-15 of the chunk), lanes 8-15 = sc[2c+1]: the scales as
    // int16, the 128-bit half holding sc[2c] and sc[2c+1] in both halves, then one word shuffle per chunk.
    const __m128i sv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m256i sc16 = _mm256_cvtepi8_epi16(sv);
    const __m256i halves[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00),
                               _mm256_permute2x128_si256(sc16, sc16, 0x11)};
    __m256i scv[8];
    for (int c = 0; c < 8; ++c) scv[c] = _mm256_shuffle_epi8(halves[c / 4], Q6ScaleControl(c));
    const float dw = HalfToFloat(b.d);
    for (int r = 0; r < R; ++r) {
      __m256i isum = _mm256_setzero_si256();
      for (int c = 0; c < 8; ++c) {
        const __m256i p16 = _mm256_maddubs_epi16(q[c], LoadQ(x[r][ib].qs + 32 * c));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, scv[c]));
      }
      // The -32 offset: 32 * sum_g sc_g * bsums_g, in the same 8 lanes.
      const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][ib].bsums));
      isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(_mm256_madd_epi16(sc16, bsums), 5));
      // The block's exact sum, then one FMA: the packed Q6_K kernel's order (kernels_avx2_packed.cpp).
      if ((ib & 1) == 0) {
        pending[r] = isum;
        continue;
      }
      const __m128 sums = HsumI32PairToFloat(pending[r], isum);
      acc[r] = __builtin_fmaf(x[r][ib - 1].d * HalfToFloat(w[ib - 1].d), _mm_cvtss_f32(sums), acc[r]);
      acc[r] = __builtin_fmaf(x[r][ib].d * dw, _mm_cvtss_f32(_mm_movehdup_ps(sums)), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    if (nb & 1) {  // the last block waited alone
      const float total = _mm_cvtss_f32(HsumI32PairToFloat(pending[r], _mm256_setzero_si256()));
      acc[r] = __builtin_fmaf(x[r][nb - 1].d * HalfToFloat(w[nb - 1].d), total, acc[r]);
    }
    out[r] = acc[r];
  }
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

// One activation row (generation) against n_w weight rows, the single-row kernel inlined in the loop: a call
// per weight row costs ~4% of tg128 on qwen3-0.6b Q4_K (4 blocks per row).
template <template <int> class Kernel>
__attribute__((flatten)) LS_TARGET_AVX2 void OneRowK(const uint8_t* wb, size_t w_stride, int64_t n_w,
                                                     const BlockQ8_K* x, int64_t nb, float* out) {
  const BlockQ8_K* xs[1] = {x};
  for (int64_t r = 0; r < n_w; ++r) Kernel<1>::Run(wb + r * w_stride, xs, nb, out + r);
}

// ---- Q4_K generation, four weight rows per pass: the rows' 6-bit scales are unpacked two per register,
// their integer sums reduced together by one transpose (8 vectors -> isum and msum of the 4 rows), and the
// float tail runs on 4 lanes. Per row the integers and, lane by lane, the float operations are DotQ45KOne's,
// in its order: the same bits (about 20% fewer instructions per block).

// UnpackKScales for two blocks: 128-bit lane k = sc0..sc7, m0..m7 of the block at s[k] (its 12 scale bytes).
LS_TARGET_AVX2 inline __m256i UnpackKScales2(const uint8_t* s0, const uint8_t* s1) {
  const __m256i v = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s0))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(s1)), 1);  // a b c (junk) per lane
  const __m256i lo = _mm256_and_si256(v, _mm256_set1_epi8(0x3f));
  const __m256i cc =
      _mm256_srlv_epi32(_mm256_shuffle_epi32(v, 0x0a), _mm256_setr_epi32(0, 4, 0, 0, 0, 4, 0, 0));
  const __m256i hi = _mm256_or_si256(_mm256_and_si256(cc, _mm256_set1_epi8(0x0f)),
                                     _mm256_and_si256(_mm256_srli_epi32(v, 2), _mm256_set1_epi8(0x30)));
  return _mm256_unpacklo_epi32(lo, hi);
}

// Lane k of the result = the sum of the 8 lanes of v[k] (exact): unpack/add levels, then the 128-bit halves.
LS_TARGET_AVX2 inline __m256i Sums8(const __m256i* v) {
  __m256i t[4], u[2];
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm256_add_epi32(_mm256_unpacklo_epi32(v[2 * k], v[2 * k + 1]),
                            _mm256_unpackhi_epi32(v[2 * k], v[2 * k + 1]));
  }
  for (int k = 0; k < 2; ++k) {
    u[k] = _mm256_add_epi32(_mm256_unpacklo_epi64(t[2 * k], t[2 * k + 1]),
                            _mm256_unpackhi_epi64(t[2 * k], t[2 * k + 1]));
  }
  return _mm256_add_epi32(_mm256_permute2x128_si256(u[0], u[1], 0x20),
                          _mm256_permute2x128_si256(u[0], u[1], 0x31));
}

// out[0..4) = DotQ45KOne of rows[0..4) (Q4_K) with x.
LS_TARGET_AVX2 inline void DotQ4KFour(const uint8_t* const* rows, const BlockQ8_K* x, int64_t nb,
                                      float* out) {
  __m128 acc = _mm_setzero_ps();
  const __m128i dd_order = _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  for (int64_t ib = 0; ib < nb; ++ib) {
    const size_t off = static_cast<size_t>(ib) * sizeof(BlockQ4_K);
    // The four rows are contiguous: their lines are asked for as one linear stream, kFourPrefetchBytes ahead
    // of the first row, four blocks per step (per-row streams 4 KiB ahead make Zen 5's Q4_K tg 16% slower:
    // they lose its hardware prefetcher; docs/bench.md).
    simd::PrefetchLines(rows[0] + kFourPrefetchBytes + 4 * off, 4 * sizeof(BlockQ4_K));
    __m256i v[8];     // isum of rows 0-3, then their msum
    int32_t head[4];  // d, dmin of each row
    for (int h = 0; h < 2; ++h) {
      const uint8_t* b0 = rows[2 * h] + off;
      const uint8_t* b1 = rows[2 * h + 1] + off;
      const __m256i sm2 = UnpackKScales2(b0 + 4, b1 + 4);
      for (int e = 0; e < 2; ++e) {
        const int k = 2 * h + e;
        const uint8_t* base = e ? b1 : b0;
        __builtin_memcpy(&head[k], base, 4);
        const __m128i sm = e ? _mm256_extracti128_si256(sm2, 1) : _mm256_castsi256_si128(sm2);
        const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
        const uint8_t* qs = base + 16;
        const __m256i none = _mm256_setzero_si256();
        __m256i isum = _mm256_setzero_si256();
        isum = SubBlockPair<0, false>(qs, none, scales, x[ib].qs, isum);
        isum = SubBlockPair<1, false>(qs, none, scales, x[ib].qs, isum);
        isum = SubBlockPair<2, false>(qs, none, scales, x[ib].qs, isum);
        v[k] = SubBlockPair<3, false>(qs, none, scales, x[ib].qs, isum);
        v[4 + k] = _mm256_madd_epi16(mins, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[ib].bsums)));
      }
    }
    const __m256 sums = _mm256_cvtepi32_ps(Sums8(v));  // isum of rows 0-3, msum of rows 0-3
    // d of rows 0-3, dmin of rows 0-3, times dx (dx * d as DotQ45KOne rounds it).
    const __m128i dd = _mm_setr_epi32(head[0], head[1], head[2], head[3]);
    const __m256 f = _mm256_mul_ps(_mm256_cvtph_ps(_mm_shuffle_epi8(dd, dd_order)), _mm256_set1_ps(x[ib].d));
    acc = _mm_fmadd_ps(_mm256_castps256_ps128(f), _mm256_castps256_ps128(sums), acc);
    acc = _mm_fnmadd_ps(_mm256_extractf128_ps(f, 1), _mm256_extractf128_ps(sums, 1), acc);
  }
  _mm_storeu_ps(out, acc);
}

__attribute__((flatten)) LS_TARGET_AVX2 void OneRowQ4K(const uint8_t* wb, size_t w_stride, int64_t n_w,
                                                       const BlockQ8_K* x, int64_t nb, float* out) {
  int64_t r = 0;
  for (; r + 4 <= n_w; r += 4) {
    const uint8_t* rows[4] = {wb + r * w_stride, wb + (r + 1) * w_stride, wb + (r + 2) * w_stride,
                              wb + (r + 3) * w_stride};
    DotQ4KFour(rows, x, nb, out + r);
  }
  for (; r < n_w; ++r) out[r] = DotQ45KOne<false>(wb + r * w_stride, x, nb);
}

template <template <int> class Kernel>
void TileK(const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride, int64_t n_x,
           int64_t n, float* out, int64_t out_stride) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  if (n_x == 1) {
    if constexpr (std::is_same_v<Kernel<1>, Q4KKernel<1>>) {
      OneRowQ4K(wb, w_stride, n_w, static_cast<const BlockQ8_K*>(x), n / kQK_K, out);
    } else {
      OneRowK<Kernel>(wb, w_stride, n_w, static_cast<const BlockQ8_K*>(x), n / kQK_K, out);
    }
    return;
  }
  for (int64_t r = 0; r < n_w; ++r) {
    for (int64_t i = 0; i < n_x; i += 8) {
      const int rows = static_cast<int>(n_x - i < 8 ? n_x - i : 8);
      const BlockQ8_K* xs[8];
      for (int k = 0; k < rows; ++k) xs[k] = reinterpret_cast<const BlockQ8_K*>(xb + (i + k) * x_stride);
      float res[8];
      const void* wr = wb + r * w_stride;
      switch (rows) {
        case 8:
          Kernel<8>::Run(wr, xs, n / kQK_K, res);
          break;
        case 7:
          Kernel<7>::Run(wr, xs, n / kQK_K, res);
          break;
        case 6:
          Kernel<6>::Run(wr, xs, n / kQK_K, res);
          break;
        case 5:
          Kernel<5>::Run(wr, xs, n / kQK_K, res);
          break;
        case 4:
          Kernel<4>::Run(wr, xs, n / kQK_K, res);
          break;
        case 3:
          Kernel<3>::Run(wr, xs, n / kQK_K, res);
          break;
        case 2:
          Kernel<2>::Run(wr, xs, n / kQK_K, res);
          break;
        default:
          Kernel<1>::Run(wr, xs, n / kQK_K, res);
          break;
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
  FillAvx2PackedKernels(set);
}

}  // namespace lazyslot::quant
