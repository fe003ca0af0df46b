// Attention for one (token, kv head group): scores over the slot's cells, softmax, weighted sum of V rows.
// F16 caches take vectorized paths that round exactly as the scalar definition of each mode does (kStandard
// without FMA, kFlash with FMA in a fixed lane order); other cache types use the scalar definitions. The
// flash path's V pass has an AVX2 and an AVX-512 form (the same operations per value), timed once for
// generation's shape and once for a prompt's.
// GCC 12 warns about its own AVX-512 headers (_mm512_undefined_* self-initialisation, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "ops/attention.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ops/exp_simd.h"
#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/quant.h"
#include "quant/simd_x86.h"

namespace lazyslot {

namespace {

using ops_internal::ExpF;
using ops_internal::ExpF8;

constexpr int kKeyBlock = 32;  // scores computed per block of keys before the sequential softmax update
// A block of keys that at least this many tokens of a batch attend to has its V slices (one kv head, 32 x
// head_dim) converted to f32 once instead of once per token and query-head pair: the V pass then spends its
// F16C conversions on the accumulator only. K stays F16: converting it too measured slower (twice the
// block's bytes in L1).
constexpr int kConvertTokens = 3;

// A kv head's slice of a K or V row is a few cache lines out of a row that holds every kv head, so rows
// are kilobytes apart and the hardware prefetcher does not follow them: the lines of the row kPrefetchKeys
// ahead are requested explicitly (tg at 1,024 held tokens: see docs/bench.md). They are asked into L2
// (T1), not L1: a request into L1 holds one of the core's few L1 miss slots until its line arrives, so T0
// caps a task at about 5 GB/s of K/V from memory (on a Zen 4 VM, tg32 at 4,096 held tokens: 16.0 t/s with
// T0, 19.9 with T1; docs/bench.md). 16 keys ahead measures the same as 8.
constexpr int kPrefetchKeys = 8;

inline void Prefetch(const uint8_t* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T1);
  }
}

// The vector paths need AVX2 and F16C: the process's level (quant::ActiveIsa) is AVX2 or above, which
// includes F16C.
bool HaveF16Simd() {
  static const bool have = quant::ActiveIsa() >= quant::Isa::kAvx2;
  return have;
}

// The vector helpers take n % 8 == 0. target("avx2,f16c") without "fma": the compiler cannot fuse the
// multiply and the add, which keeps results bit-identical to the scalar loops below.
// out += p * f32(v)
__attribute__((target("avx2,f16c"))) void MadF32FromF16(float* out, const uint16_t* v, float p, int n) {
  const __m256 vp = _mm256_set1_ps(p);
  for (int d = 0; d < n; d += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + d)));
    _mm256_storeu_ps(out + d, _mm256_add_ps(_mm256_loadu_ps(out + d), _mm256_mul_ps(vp, x)));
  }
}

// ---- kFlash. Keys go by blocks of kKeyBlock: the block's scores first, then one softmax update per block
// (the running max M moves once, rescaling the f32 accumulator and the sum S), then the block's V rows.
// q is rounded as a K row's dot type (F16 for an F16 cache). A score is q.k summed in 8 lanes (lane e % 8,
// fused multiply-adds in order of e) and then ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). V rows are added with
// fused multiply-adds in key order, the accumulator rounded to F16 after each key and each rescale, as
// llama.cpp's F16 accumulator does (an f32 one changes greedy continuations of small models against
// llama-server's). The scalar definition and the AVX2 path do exactly these operations.

inline float RoundF16(float x) { return F16ToF32(F32ToF16(x)); }

LS_TARGET_AVX2 inline __m256 RoundF16x8(__m256 x) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
}

float LaneDot(const float* q, const float* k, int n) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int e = 0; e < n; ++e) lane[e % 8] = std::fma(q[e], k[e], lane[e % 8]);
  return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

// p[jj] = ExpF(score[jj] - m) for jj < nb, eight at a time.
LS_TARGET_AVX2 void BlockExpF8(const float* score, int nb, float m, float* p) {
  int jj = 0;
  for (; jj + 8 <= nb; jj += 8) {
    _mm256_storeu_ps(p + jj, ExpF8(_mm256_sub_ps(_mm256_loadu_ps(score + jj), _mm256_set1_ps(m))));
  }
  for (; jj < nb; ++jj) p[jj] = ExpF(score[jj] - m);
}

// acc[d] = RoundF16(acc[d] * ms) for d < hd (hd % 8 == 0), eight at a time: the F16C conversion rounds to
// nearest even like F32ToF16 (the software conversion would cost ~9% of pp512 when the running max grows).
LS_TARGET_AVX2 void ScaleRoundF16x8(float* acc, int hd, float ms) {
  const __m256 s = _mm256_set1_ps(ms);
  for (int d = 0; d < hd; d += 8) {
    _mm256_storeu_ps(acc + d, RoundF16x8(_mm256_mul_ps(_mm256_loadu_ps(acc + d), s)));
  }
}

// The softmax step of one block for one head: returns the block's probabilities in p[0..nb) and updates
// m and sum; acc[hd] is rescaled when the max grows. `simd`: the exponentials eight at a time and the
// rescale with F16C (hd % 8 == 0; same values).
// max(m, score[0..nb)) eight at a time: max is exact, so any order gives the scalar loop's value (up to the
// sign of a zero maximum, which no later step can tell apart); a NaN score is skipped as std::max skips it.
LS_TARGET_AVX2 float BlockMaxF8(const float* score, int nb, float m) {
  int jj = 0;
  float m_blk = m;
  if (nb >= 8) {
    __m256 v = _mm256_set1_ps(m);
    for (; jj + 8 <= nb; jj += 8) v = _mm256_max_ps(_mm256_loadu_ps(score + jj), v);  // NaN lanes keep v
    m_blk = quant::simd::Hmax(v);
  }
  for (; jj < nb; ++jj) m_blk = std::max(m_blk, score[jj]);
  return m_blk;
}

void FlashSoftmaxBlock(const float* score, int nb, float* p, float& m, float& sum, float* acc, int hd,
                       bool simd) {
  float m_blk = m;
  if (simd) {
    m_blk = BlockMaxF8(score, nb, m);
  } else {
    for (int jj = 0; jj < nb; ++jj) m_blk = std::max(m_blk, score[jj]);
  }
  if (m_blk > m) {
    const float ms = ExpF(m - m_blk);  // 0 on the first block
    if (simd) {
      ScaleRoundF16x8(acc, hd, ms);
    } else {
      for (int d = 0; d < hd; ++d) acc[d] = RoundF16(acc[d] * ms);
    }
    sum *= ms;
    m = m_blk;
  }
  if (simd) {
    BlockExpF8(score, nb, m, p);
  } else {
    for (int jj = 0; jj < nb; ++jj) p[jj] = ExpF(score[jj] - m);
  }
  for (int jj = 0; jj < nb; ++jj) sum += p[jj];
}

// The definition of kFlash for one head. O(head_dim + kKeyBlock) state at any length.
void FlashHeadScalar(const float* q, const KvRows& kv, int g, int head_dim, int32_t begin, int32_t n_kv,
                     float scale, float* out, AttentionScratch& s) {
  const TensorType q_type = quant::VecDotType(kv.type_k);
  const size_t hd = static_cast<size_t>(head_dim);
  if (s.q_enc.size() < RowBytes(q_type, head_dim)) s.q_enc.resize(RowBytes(q_type, head_dim));
  if (s.q_f.size() < 3 * hd) s.q_f.resize(3 * hd);
  if (s.acc.size() < hd) s.acc.resize(hd);
  if (s.scores.size() < 2 * kKeyBlock) s.scores.resize(2 * kKeyBlock);
  float* qr = s.q_f.data();  // q as the dot sees it
  float* krow = qr + hd;     // decoded K slice
  float* vrow = krow + hd;   // decoded V slice
  float* acc = s.acc.data();
  float* score = s.scores.data();  // [kKeyBlock] scores, then [kKeyBlock] probabilities
  quant::QuantizeRow(q_type, q, s.q_enc.data(), head_dim);
  quant::DequantizeRow(q_type, s.q_enc.data(), qr, head_dim);
  const size_t k_off = RowBytes(kv.type_k, static_cast<int64_t>(g) * head_dim);
  const size_t v_off = RowBytes(kv.type_v, static_cast<int64_t>(g) * head_dim);
  std::fill(acc, acc + hd, 0.0f);
  float m = -INFINITY, sum = 0.0f;
  // Blocks end on multiples of kKeyBlock: a window's first block is the partial one.
  for (int32_t j0 = begin, j1; j0 < n_kv; j0 = j1) {
    j1 = std::min<int32_t>((j0 / kKeyBlock + 1) * kKeyBlock, n_kv);
    const int nb = static_cast<int>(j1 - j0);
    for (int jj = 0; jj < nb; ++jj) {
      quant::DequantizeRow(kv.type_k, kv.k + (j0 + jj) * kv.k_row_bytes + k_off, krow, head_dim);
      score[jj] = LaneDot(qr, krow, head_dim) * scale;
    }
    float* p = score + kKeyBlock;
    FlashSoftmaxBlock(score, nb, p, m, sum, acc, head_dim, /*simd=*/false);
    for (int jj = 0; jj < nb; ++jj) {
      quant::DequantizeRow(kv.type_v, kv.v + (j0 + jj) * kv.v_row_bytes + v_off, vrow, head_dim);
      for (size_t d = 0; d < hd; ++d) acc[d] = RoundF16(std::fma(p[jj], vrow[d], acc[d]));
    }
  }
  const float inv = 1.0f / sum;
  for (size_t d = 0; d < hd; ++d) out[d] = acc[d] * inv;
}

LS_TARGET_AVX2 inline __m256 LoadF16x8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Values e .. e + 7 (e .. e + 15) of a V row slice: F16 from the cache, or (kF32) f32 from a block already
// converted (FlashTokensF16). The conversion is exact, so both give the same values.
template <bool kF32>
LS_TARGET_AVX2 inline __m256 LoadRow8(const uint8_t* row, int e) {
  if constexpr (kF32) return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + e);
  return LoadF16x8(row + 2 * e);
}
template <bool kF32>
LS_TARGET_AVX512 inline __m512 LoadRow16(const uint8_t* row, int e) {
  if constexpr (kF32) return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + e);
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * e)));
}

// [l0 + l4, l1 + l5, l2 + l6, l3 + l7] of a | of b.
LS_TARGET_AVX2 inline __m256 HalvesAdded(__m256 a, __m256 b) {
  return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}

// lo[i] = Hsum(v_i) * scale, hi[i] = Hsum(v_{4+i}) * scale for i < 4, the eight sums at once: each is
// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) of its vector, as Hsum adds, so the same bits.
LS_TARGET_AVX2 inline void Hsum8Scores(__m256 v0, __m256 v1, __m256 v2, __m256 v3, __m256 v4, __m256 v5,
                                       __m256 v6, __m256 v7, float scale, float* lo, float* hi) {
  // [l0+l4 .. l3+l7] of two vectors per register: s01 = v0's | v1's, ...
  const __m256 s01 = HalvesAdded(v0, v1), s23 = HalvesAdded(v2, v3), s45 = HalvesAdded(v4, v5),
               s67 = HalvesAdded(v6, v7);
  // (l0+l4) + (l2+l6) and (l1+l5) + (l3+l7): lanes [0, 1] of v0 | v1 and [2, 3] of v2 | v3, ...
  const __m256 t0 = _mm256_add_ps(_mm256_shuffle_ps(s01, s23, 0x44), _mm256_shuffle_ps(s01, s23, 0xee));
  const __m256 t1 = _mm256_add_ps(_mm256_shuffle_ps(s45, s67, 0x44), _mm256_shuffle_ps(s45, s67, 0xee));
  // The final add per vector: [v0 v2 v4 v6 | v1 v3 v5 v7], then into order.
  const __m256 r = _mm256_add_ps(_mm256_shuffle_ps(t0, t1, 0x88), _mm256_shuffle_ps(t0, t1, 0xdd));
  const __m256 o = _mm256_mul_ps(_mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)),
                                 _mm256_set1_ps(scale));
  _mm_storeu_ps(lo, _mm256_castps256_ps128(o));
  _mm_storeu_ps(hi, _mm256_extractf128_ps(o, 1));
}

// Scores of NQ heads (q: [NQ][hd] f32) against KN keys of an F16 cache (k[i]: the kv head's slice of key i).
// Each (key, head) pair is its own chain of fused multiply-adds, KN * NQ chains in flight.
template <int NQ, int KN>
LS_TARGET_AVX2 inline void ScoresF16(const uint8_t* const* k, const float* q, int hd, float scale, float* sc,
                                     int jj) {
  __m256 a[KN][NQ];
  for (int i = 0; i < KN; ++i) {
    for (int h = 0; h < NQ; ++h) a[i][h] = _mm256_setzero_ps();
  }
  for (int e = 0; e < hd; e += 8) {
    for (int i = 0; i < KN; ++i) {
      const __m256 kf = LoadF16x8(k[i] + 2 * e);
      for (int h = 0; h < NQ; ++h) a[i][h] = _mm256_fmadd_ps(_mm256_loadu_ps(q + h * hd + e), kf, a[i][h]);
    }
  }
  if constexpr (NQ == 2 && KN == 4) {
    Hsum8Scores(a[0][0], a[1][0], a[2][0], a[3][0], a[0][1], a[1][1], a[2][1], a[3][1], scale, sc + jj,
                sc + kKeyBlock + jj);
  } else {
    for (int i = 0; i < KN; ++i) {
      for (int h = 0; h < NQ; ++h) sc[h * kKeyBlock + jj + i] = quant::simd::Hsum(a[i][h]) * scale;
    }
  }
}

// acc[h][d0, d0 + 8 DC) += p[h][jj] * v_jj for the block's keys in order (F16-rounded), for NQ rows (heads,
// or a prompt's tokens times heads) that each have their own probabilities p[h] and accumulator acc[h].
// Always inlined: as a call of its own, generation's form (16 accumulators and 8 V registers against
// AVX2's 16) spills worse and takes 0.09-0.10 ns per key, value and row instead of 0.07.
template <int NQ, int DC, bool kF32>
LS_TARGET_AVX2 __attribute__((always_inline)) inline void AccumulateF16(const uint8_t* const* v, int nb,
                                                                        const float* const* p,
                                                                        float* const* acc, int d0) {
  __m256 a[NQ][DC];
  for (int h = 0; h < NQ; ++h) {
    for (int c = 0; c < DC; ++c) a[h][c] = _mm256_loadu_ps(acc[h] + d0 + 8 * c);
  }
  for (int jj = 0; jj < nb; ++jj) {
    __m256 vf[DC];
    for (int c = 0; c < DC; ++c) vf[c] = LoadRow8<kF32>(v[jj], d0 + 8 * c);
    for (int h = 0; h < NQ; ++h) {
      const __m256 ph = _mm256_broadcast_ss(p[h] + jj);
      for (int c = 0; c < DC; ++c) a[h][c] = RoundF16x8(_mm256_fmadd_ps(ph, vf[c], a[h][c]));
    }
  }
  for (int h = 0; h < NQ; ++h) {
    for (int c = 0; c < DC; ++c) _mm256_storeu_ps(acc[h] + d0 + 8 * c, a[h][c]);
  }
}

// AccumulateF16 on 16 lanes (AVX-512 F): the same operations per value, so the same bits.
template <int NQ, int DC, bool kF32>
LS_TARGET_AVX512 inline void AccumulateF16x16(const uint8_t* const* v, int nb, const float* const* p,
                                              float* const* acc, int d0) {
  __m512 a[NQ][DC];
  for (int h = 0; h < NQ; ++h) {
    for (int c = 0; c < DC; ++c) a[h][c] = _mm512_loadu_ps(acc[h] + d0 + 16 * c);
  }
  for (int jj = 0; jj < nb; ++jj) {
    __m512 vf[DC];
    for (int c = 0; c < DC; ++c) vf[c] = LoadRow16<kF32>(v[jj], d0 + 16 * c);
    for (int h = 0; h < NQ; ++h) {
      const __m512 ph = _mm512_set1_ps(p[h][jj]);
      for (int c = 0; c < DC; ++c) {
        a[h][c] =
            _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_fmadd_ps(ph, vf[c], a[h][c]), _MM_FROUND_TO_NEAREST_INT));
      }
    }
  }
  for (int h = 0; h < NQ; ++h) {
    for (int c = 0; c < DC; ++c) _mm512_storeu_ps(acc[h] + d0 + 16 * c, a[h][c]);
  }
}

// The V pass of a block over all hd values (hd % 8 == 0) for NQ rows, in 8-lane (AVX2) or 16-lane (AVX-512)
// registers. Accumulators per row: 8 registers for one or two rows (one token's heads, 6% faster than 4 for
// two), 2 for three to six (a prompt's tokens together: 12 accumulators, the 2 V registers and the
// probability fit AVX2's 16 registers, and six rows share each V load).
template <int NQ>
constexpr int kRowRegs = NQ <= 2 ? 8 : 2;
template <int NQ, bool kF32>
LS_TARGET_AVX2 void VPassF16x8(const uint8_t* const* v, int nb, const float* const* p, float* const* acc,
                               int hd) {
  constexpr int kDC = kRowRegs<NQ>;
  int d0 = 0;
  for (; d0 + 8 * kDC <= hd; d0 += 8 * kDC) AccumulateF16<NQ, kDC, kF32>(v, nb, p, acc, d0);
  for (; d0 < hd; d0 += 8) AccumulateF16<NQ, 1, kF32>(v, nb, p, acc, d0);
}
template <int NQ, bool kF32>
LS_TARGET_AVX512 __attribute__((noinline)) void VPassF16x16(const uint8_t* const* v, int nb,
                                                            const float* const* p, float* const* acc,
                                                            int hd) {
  constexpr int kDC = kRowRegs<NQ>;
  int d0 = 0;
  for (; d0 + 16 * kDC <= hd; d0 += 16 * kDC) AccumulateF16x16<NQ, kDC, kF32>(v, nb, p, acc, d0);
  for (; d0 + 16 <= hd; d0 += 16) AccumulateF16x16<NQ, 1, kF32>(v, nb, p, acc, d0);
  for (; d0 < hd; d0 += 8) AccumulateF16<NQ, 1, kF32>(v, nb, p, acc, d0);
}
// The V pass of generation's heads (F16 rows from the cache, probabilities and accumulators strided).
template <int NQ, bool kWide>
LS_TARGET_AVX2 void VPassHeads(const uint8_t* const* v, int nb, const float* prob, float* acc, int hd) {
  const float* p[NQ];
  float* a[NQ];
  for (int h = 0; h < NQ; ++h) {
    p[h] = prob + h * kKeyBlock;
    a[h] = acc + h * hd;
  }
  if constexpr (kWide) {
    VPassF16x16<NQ, false>(v, nb, p, a, hd);
  } else {
    VPassF16x8<NQ, false>(v, nb, p, a, hd);
  }
}
// The V pass of a prompt's gathered rows (f32 copies of the block's V slices).
template <int NQ, bool kWide>
LS_TARGET_AVX2 void VPassRows(const uint8_t* const* v, int nb, const float* const* prob, float* const* acc,
                              int hd) {
  if constexpr (kWide) {
    VPassF16x16<NQ, true>(v, nb, prob, acc, hd);
  } else {
    VPassF16x8<NQ, true>(v, nb, prob, acc, hd);
  }
}

// Rows of a prompt's tokens that share one V pass (FlashTokensF16), and the passes for 1 .. kGroupRows rows
// of f32 V copies, AVX2 and AVX-512 forms.
constexpr int kGroupRows = 6;
using RowsPass = void (*)(const uint8_t* const*, int, const float* const*, float* const*, int);
template <bool kWide, int... N>
constexpr std::array<RowsPass, sizeof...(N)> RowsPasses(std::integer_sequence<int, N...>) {
  return {VPassRows<N + 1, kWide>...};
}
constexpr auto kRowsX8 = RowsPasses<false>(std::make_integer_sequence<int, kGroupRows>{});
constexpr auto kRowsX16 = RowsPasses<true>(std::make_integer_sequence<int, kGroupRows>{});

// The scores and softmax step of one block of kFlash (nb <= kKeyBlock keys: k[jj]; v[jj] only to prefetch)
// for NQ heads sharing one kv head, F16 K, hd % 8 == 0: FlashHeadScalar's arithmetic up to the V pass, the K
// rows read once for the NQ heads. q: [NQ][hd] rounded f32, acc: [NQ][hd] (rescaled when the max grows),
// sc: [2 NQ][kKeyBlock] (scores, then the probabilities the V pass takes), m and sum: [NQ]. `ahead` > 0:
// the first pass over these rows, which asks for K rows kPrefetchKeys ahead while fewer than `ahead` keys
// follow the block's first key, and for the block's V rows (F16 in the cache).
template <int NQ>
LS_TARGET_AVX2 void FlashScoresF16(const float* q, const uint8_t* const* k, const uint8_t* const* v, int nb,
                                   size_t k_row_bytes, int32_t ahead, int hd, float scale, float* acc,
                                   float* sc, float* m, float* sum) {
  float* prob = sc + NQ * kKeyBlock;
  int jj = 0;
  for (; jj + 4 <= nb; jj += 4) {
    if (ahead > 0) {
      for (int i = 0; i < 4; ++i) {
        if (jj + i + kPrefetchKeys < ahead) Prefetch(k[jj + i] + kPrefetchKeys * k_row_bytes, hd * 2);
        Prefetch(v[jj + i], hd * 2);
      }
    }
    ScoresF16<NQ, 4>(k + jj, q, hd, scale, sc, jj);
  }
  for (; jj < nb; ++jj) {
    if (ahead > 0) Prefetch(v[jj], hd * 2);
    ScoresF16<NQ, 1>(k + jj, q, hd, scale, sc, jj);
  }
  for (int h = 0; h < NQ; ++h) {
    FlashSoftmaxBlock(sc + h * kKeyBlock, nb, prob + h * kKeyBlock, m[h], sum[h], acc + h * hd, hd, true);
  }
}

// One whole block of kFlash for NQ heads (V rows F16 from the cache): the scores and softmax step, then the
// V pass of the NQ heads.
template <int NQ, bool kWide>
LS_TARGET_AVX2 void FlashBlockF16(const float* q, const uint8_t* const* k, const uint8_t* const* v, int nb,
                                  size_t k_row_bytes, int32_t ahead, int hd, float scale, float* acc,
                                  float* sc, float* m, float* sum) {
  FlashScoresF16<NQ>(q, k, v, nb, k_row_bytes, ahead, hd, scale, acc, sc, m, sum);
  VPassHeads<NQ, kWide>(v, nb, sc + NQ * kKeyBlock, acc, hd);
}

// Which V passes the flash path uses, chosen by timing both forms once per shape (they give the same bits):
// a generated token's (two heads over F16 rows) and a prompt's (kGroupRows rows over f32 copies).
// g_flash_forced overrides both for tests (-1: not forced). The AVX-512 form runs only where the process's
// level is AVX-512 (quant::ActiveIsa: the CPU has it and LAZYSLOT_ISA does not force less).
struct FlashChoice {
  bool wide = false, wide_rows = false;
  // ns per key, value and row: generation's pass, then the prompt's; 0: not timed
  double ns_x8 = 0, ns_x16 = 0, ns_rows_x8 = 0, ns_rows_x16 = 0;
};
std::atomic<int> g_flash_forced{-1};

bool WideAvailable() { return quant::ActiveIsa() == quant::Isa::kAvx512; }

// Best of repeated V passes over one synthetic block (32 keys, `rows` rows, hd 128), ~2 ms per variant.
template <class Pass, class Prob, class Acc>
double TimeVPass(Pass pass, const uint8_t* const* v, int rows, Prob prob, Acc acc) {
  constexpr int kHd = 128, kReps = 64;
  double best = 1e30;
  const auto t_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
  for (int round = 0; round < 3 || std::chrono::steady_clock::now() < t_end; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kReps; ++i) pass(v, kKeyBlock, prob, acc, kHd);
    best = std::min(best,
                    std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
    if (round > 1000) break;
  }
  return best / (kReps * kKeyBlock * kHd * rows);
}

FlashChoice MeasureFlash() {
  FlashChoice c;
  if (!HaveF16Simd() || !WideAvailable()) return c;
  constexpr int kHd = 128;
  std::vector<uint16_t> rows(kKeyBlock * kHd);
  std::vector<float> rows_f(kKeyBlock * kHd);
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i] = F32ToF16(static_cast<float>(i % 17) * 0.01f - 0.08f);
    rows_f[i] = F16ToF32(rows[i]);
  }
  const uint8_t* v[kKeyBlock];
  const uint8_t* v_f[kKeyBlock];
  for (int j = 0; j < kKeyBlock; ++j) {
    v[j] = reinterpret_cast<const uint8_t*>(rows.data() + j * kHd);
    v_f[j] = reinterpret_cast<const uint8_t*>(rows_f.data() + j * kHd);
  }
  std::vector<float> probs(kGroupRows * kKeyBlock, 1.0f / kKeyBlock), accs(kGroupRows * kHd, 0.0f);
  const float* prob[kGroupRows];
  float* acc[kGroupRows];
  for (int r = 0; r < kGroupRows; ++r) {
    prob[r] = probs.data() + r * kKeyBlock;
    acc[r] = accs.data() + r * kHd;
  }
  c.ns_x8 = TimeVPass(VPassHeads<2, false>, v, 2, probs.data(), accs.data());
  c.ns_x16 = TimeVPass(VPassHeads<2, true>, v, 2, probs.data(), accs.data());
  c.wide = c.ns_x16 < c.ns_x8;
  c.ns_rows_x8 = TimeVPass(kRowsX8[kGroupRows - 1], v_f, kGroupRows, prob, acc);
  c.ns_rows_x16 = TimeVPass(kRowsX16[kGroupRows - 1], v_f, kGroupRows, prob, acc);
  c.wide_rows = c.ns_rows_x16 < c.ns_rows_x8;
  return c;
}

const FlashChoice& Flash() {
  static const FlashChoice c = MeasureFlash();
  return c;
}

bool FlashWideRows() {
  const int forced = g_flash_forced.load(std::memory_order_relaxed);
  return forced >= 0 ? forced == 1 : Flash().wide_rows;
}

bool FlashWide() {
  const int forced = g_flash_forced.load(std::memory_order_relaxed);
  return forced >= 0 ? forced == 1 : Flash().wide;
}

// kFlash for n_tok tokens of one slot, kv heads g .. g + n_kv_heads - 1 and the n_q query heads of each,
// F16 K and V, head_dim % 8 == 0. Keys go block by block. Each block of a kv head serves every token that
// sees it: its K/V rows come from memory once for all the tokens (the cost of a prompt at depth), then from
// cache; and the kv heads take their slices of the block's rows one after the other, so a generated token
// reads whole stretches of each row instead of one head's 256 bytes per row and task. Each token does
// exactly the blocks of keys, and the operations per block, that it does alone, and pairs of query heads
// share each row's F16 -> f32 conversion: every head's result equals FlashHeadScalar's. A block that
// kConvertTokens or more tokens see is converted to f32 once, and the V passes of up to kGroupRows of its
// rows (tokens times heads) run as one, each V value loaded once for all of them.
void FlashTokensF16(const AttendBatch& a, const KvRows& kv, int g, int hd, float scale, AttentionScratch& s) {
  const quant::KernelSet& ks = quant::ActiveKernels();
  const bool wide = FlashWide();
  auto* const block_pair = wide ? FlashBlockF16<2, true> : FlashBlockF16<2, false>;
  auto* const block_one = wide ? FlashBlockF16<1, true> : FlashBlockF16<1, false>;
  const std::array<RowsPass, kGroupRows>& rows_pass = FlashWideRows() ? kRowsX16 : kRowsX8;
  // Query rows: per_tok per token, in the order of q; row r belongs to token r / per_tok.
  const int per_tok = a.n_kv_heads * a.n_q;
  const size_t n_rows = static_cast<size_t>(a.n_tok) * per_tok;
  if (s.q_enc.size() < static_cast<size_t>(hd) * 2) s.q_enc.resize(static_cast<size_t>(hd) * 2);
  if (s.q_f.size() < n_rows * hd) s.q_f.resize(n_rows * hd);
  if (s.acc.size() < n_rows * hd) s.acc.resize(n_rows * hd);
  if (s.state.size() < 2 * n_rows) s.state.resize(2 * n_rows);
  if (s.scores.size() < 2 * kGroupRows * kKeyBlock) s.scores.resize(2 * kGroupRows * kKeyBlock);
  if (a.n_tok >= kConvertTokens && s.kv_f.size() < kKeyBlock * static_cast<size_t>(hd)) {
    s.kv_f.resize(kKeyBlock * static_cast<size_t>(hd));
  }
  uint16_t* qe = reinterpret_cast<uint16_t*>(s.q_enc.data());
  int32_t n_kv_max = 0, begin_min = INT32_MAX;
  auto begin_of = [&a](int t) { return a.kv_begin ? a.kv_begin[t] : 0; };
  for (int t = 0; t < a.n_tok; ++t) {
    n_kv_max = std::max(n_kv_max, a.n_kv[t]);
    begin_min = std::min(begin_min, begin_of(t));
    for (int h = 0; h < per_tok; ++h) {
      ks.quantize[quant::kF16](a.q + t * a.q_tok_stride + h * a.q_stride, qe, hd);
      ks.dequantize[quant::kF16](qe, s.q_f.data() + (static_cast<size_t>(t) * per_tok + h) * hd, hd);
    }
  }
  std::fill(s.acc.begin(), s.acc.begin() + n_rows * hd, 0.0f);
  float* m = s.state.data();
  float* sum = m + n_rows;
  std::fill(m, m + n_rows, -INFINITY);
  std::fill(sum, sum + n_rows, 0.0f);
  const uint8_t* krows[kKeyBlock];
  const uint8_t* vrows[kKeyBlock];
  const uint8_t* vf_rows[kKeyBlock];
  // Blocks sit on multiples of kKeyBlock whatever the tokens' windows: a token whose window starts inside a
  // block takes the block's rows from its first cell on, as it does alone.
  auto sees = [&](int t, int32_t j0) { return a.n_kv[t] > j0 && begin_of(t) < j0 + kKeyBlock; };
  for (int32_t j0 = begin_min / kKeyBlock * kKeyBlock; j0 < n_kv_max; j0 += kKeyBlock) {
    const int nb_max = static_cast<int>(std::min<int32_t>(kKeyBlock, n_kv_max - j0));
    int n_see = 0;  // tokens that attend to this block
    for (int t = 0; t < a.n_tok; ++t) n_see += sees(t, j0) ? 1 : 0;
    const bool convert = n_see >= kConvertTokens;
    for (int i = 0; i < a.n_kv_heads; ++i) {
      const uint8_t* kbase = kv.k + static_cast<size_t>(g + i) * hd * 2;
      const uint8_t* vbase = kv.v + static_cast<size_t>(g + i) * hd * 2;
      for (int jj = 0; jj < nb_max; ++jj) {
        krows[jj] = kbase + static_cast<size_t>(j0 + jj) * kv.k_row_bytes;
        vrows[jj] = vbase + static_cast<size_t>(j0 + jj) * kv.v_row_bytes;
      }
      if (convert) {  // the block's V slices once to f32 for all its tokens; the next block's rows asked for
        // Rows before every token's window are never read: their pages may be given back, and a read would
        // map them again (mincore would count them).
        float* vf = s.kv_f.data();
        for (int jj = std::max<int32_t>(0, begin_min - j0); jj < nb_max; ++jj) {
          if (j0 + kKeyBlock + jj < n_kv_max) {
            Prefetch(krows[jj] + kKeyBlock * kv.k_row_bytes, hd * 2);
            Prefetch(vrows[jj] + kKeyBlock * kv.v_row_bytes, hd * 2);
          }
          ks.dequantize[quant::kF16](vrows[jj], vf + static_cast<size_t>(jj) * hd, hd);
          vf_rows[jj] = reinterpret_cast<const uint8_t*>(vf + static_cast<size_t>(jj) * hd);
        }
      }
      // A converted block's rows wait for one V pass together, up to kGroupRows rows of equal nb (tokens
      // past the block's end see all of it): each row's scores and softmax step come first, as alone.
      const float* g_prob[kGroupRows];
      float* g_acc[kGroupRows];
      int g_rows = 0, g_nb = 0, g_off = 0;
      auto flush = [&] {
        if (g_rows > 0) rows_pass[g_rows - 1](vf_rows + g_off, g_nb, g_prob, g_acc, hd);
        g_rows = 0;
      };
      bool first = true;  // the first token to read a block prefetches for it and the next one
      for (int t = 0; t < a.n_tok; ++t) {
        if (!sees(t, j0)) continue;
        const int off = static_cast<int>(std::max<int32_t>(0, begin_of(t) - j0));  // window start in block
        const int nb = static_cast<int>(std::min<int32_t>(kKeyBlock, a.n_kv[t] - j0)) - off;
        const int32_t ahead = first ? n_kv_max - j0 - off : 0;
        first = false;
        for (int h = 0; h < a.n_q;) {
          const size_t r = static_cast<size_t>(t) * per_tok + static_cast<size_t>(i) * a.n_q + h;
          const float* q = s.q_f.data() + r * hd;
          float* acc = s.acc.data() + r * hd;
          const int nq = a.n_q - h >= 2 ? 2 : 1;
          h += nq;
          if (!convert) {
            (nq == 2 ? block_pair : block_one)(q, krows + off, vrows + off, nb, kv.k_row_bytes, ahead, hd,
                                               scale, acc, s.scores.data(), m + r, sum + r);
            continue;
          }
          if (g_rows > 0 && (g_nb != nb || g_off != off || g_rows + nq > kGroupRows)) flush();
          float* sc = s.scores.data() + static_cast<size_t>(g_rows) * 2 * kKeyBlock;  // [2 nq][kKeyBlock]
          auto* const scores = nq == 2 ? FlashScoresF16<2> : FlashScoresF16<1>;
          scores(q, krows + off, vf_rows + off, nb, kv.k_row_bytes, 0, hd, scale, acc, sc, m + r, sum + r);
          for (int e = 0; e < nq; ++e) {
            g_prob[g_rows] = sc + (nq + e) * kKeyBlock;
            g_acc[g_rows++] = acc + e * hd;
          }
          g_nb = nb;
          g_off = off;
        }
      }
      flush();
    }
  }
  for (size_t r = 0; r < n_rows; ++r) {
    const float inv = 1.0f / sum[r];
    const int t = static_cast<int>(r) / per_tok, h = static_cast<int>(r) % per_tok;
    float* o = a.out + t * a.out_tok_stride + h * a.out_stride;
    const float* acc = s.acc.data() + r * hd;
    for (int d = 0; d < hd; ++d) o[d] = acc[d] * inv;
  }
}

// kStandard for one head: all scores, softmax with a double sum, probabilities rounded to F16 for an F16
// V cache (the V dot type), V summed in f32.
void StandardHead(const float* q, const KvRows& kv, int g, int head_dim, int32_t begin, int32_t n_kv,
                  float scale, float* out, AttentionScratch& s, bool allow_simd) {
  const TensorType q_type = quant::VecDotType(kv.type_k);
  const size_t q_bytes = RowBytes(q_type, head_dim);
  if (s.q_enc.size() < q_bytes) s.q_enc.resize(q_bytes);
  if (s.scores.size() < static_cast<size_t>(n_kv)) s.scores.resize(n_kv);
  quant::QuantizeRow(q_type, q, s.q_enc.data(), head_dim);

  const size_t k_off = RowBytes(kv.type_k, static_cast<int64_t>(g) * head_dim);
  float max_score = -INFINITY;
  for (int32_t j = begin; j < n_kv; ++j) {
    const float d = quant::VecDot(kv.type_k, kv.k + j * kv.k_row_bytes + k_off, s.q_enc.data(), head_dim);
    s.scores[j] = d * scale;
    max_score = std::max(max_score, s.scores[j]);
  }
  double sum = 0;
  for (int32_t j = begin; j < n_kv; ++j) {
    const float e = std::exp(s.scores[j] - max_score);
    s.scores[j] = e;
    sum += e;
  }
  const float inv = static_cast<float>(1.0 / sum);

  std::fill(out, out + head_dim, 0.0f);
  const size_t v_off = RowBytes(kv.type_v, static_cast<int64_t>(g) * head_dim);
  const bool v_f16 = kv.type_v == TensorType::kF16;
  const bool simd = allow_simd && v_f16 && head_dim % 8 == 0 && HaveF16Simd();
  if (!v_f16 && kv.type_v != TensorType::kF32 && s.v_row.size() < static_cast<size_t>(head_dim)) {
    s.v_row.resize(head_dim);
  }
  for (int32_t j = begin; j < n_kv; ++j) {
    const uint8_t* vrow = kv.v + j * kv.v_row_bytes + v_off;
    if (v_f16) {
      const float p = F16ToF32(F32ToF16(s.scores[j] * inv));
      const uint16_t* v = reinterpret_cast<const uint16_t*>(vrow);
      if (simd) {
        MadF32FromF16(out, v, p, head_dim);
      } else {
        for (int d = 0; d < head_dim; ++d) out[d] += p * F16ToF32(v[d]);
      }
    } else {
      const float p = s.scores[j] * inv;
      const float* v = reinterpret_cast<const float*>(vrow);
      if (kv.type_v != TensorType::kF32) {
        quant::DequantizeRow(kv.type_v, vrow, s.v_row.data(), head_dim);
        v = s.v_row.data();
      }
      for (int d = 0; d < head_dim; ++d) out[d] += p * v[d];
    }
  }
}

}  // namespace

void AttendTokens(AttentionMode mode, const AttendBatch& a, const KvRows& kv, int g, int head_dim,
                  float scale, AttentionScratch& s) {
  if (mode == AttentionMode::kFlash && kv.type_k == TensorType::kF16 && kv.type_v == TensorType::kF16 &&
      head_dim % 8 == 0 && HaveF16Simd()) {
    FlashTokensF16(a, kv, g, head_dim, scale, s);
    return;
  }
  for (int t = 0; t < a.n_tok; ++t) {
    const int32_t begin = a.kv_begin ? a.kv_begin[t] : 0;
    for (int h = 0; h < a.n_kv_heads * a.n_q; ++h) {
      const float* q = a.q + t * a.q_tok_stride + h * a.q_stride;
      float* out = a.out + t * a.out_tok_stride + h * a.out_stride;
      if (mode == AttentionMode::kFlash) {
        FlashHeadScalar(q, kv, g + h / a.n_q, head_dim, begin, a.n_kv[t], scale, out, s);
      } else {
        StandardHead(q, kv, g + h / a.n_q, head_dim, begin, a.n_kv[t], scale, out, s, true);
      }
    }
  }
}

void AttendGroup(AttentionMode mode, const float* q, int64_t q_stride, int n_q, const KvRows& kv, int g,
                 int head_dim, int32_t n_kv, float scale, float* out, int64_t out_stride,
                 AttentionScratch& s) {
  AttendBatch a;
  a.q = q;
  a.q_stride = q_stride;
  a.n_q = n_q;
  a.n_tok = 1;
  a.n_kv = &n_kv;
  a.out = out;
  a.out_stride = out_stride;
  AttendTokens(mode, a, kv, g, head_dim, scale, s);
}

void AttendHead(AttentionMode mode, const float* q, const KvRows& kv, int g, int head_dim, int32_t n_kv,
                float scale, float* out, AttentionScratch& s) {
  AttendGroup(mode, q, head_dim, 1, kv, g, head_dim, n_kv, scale, out, head_dim, s);
}

std::string AttentionKernelChoice() {
  if (!HaveF16Simd()) return "attention f16 scalar";
  const FlashChoice& c = Flash();
  if (c.ns_x8 == 0) return "attention f16 avx2";
  char buf[192];
  std::snprintf(buf, sizeof(buf),
                "attention f16 %s %.3f ns/value (%s %.3f), prompts %s %.3f (%s %.3f), per key and row",
                c.wide ? "avx512" : "avx2", c.wide ? c.ns_x16 : c.ns_x8, c.wide ? "avx2" : "avx512",
                c.wide ? c.ns_x8 : c.ns_x16, c.wide_rows ? "avx512" : "avx2",
                c.wide_rows ? c.ns_rows_x16 : c.ns_rows_x8, c.wide_rows ? "avx2" : "avx512",
                c.wide_rows ? c.ns_rows_x8 : c.ns_rows_x16);
  return buf;
}

bool ForceFlashVPassForTest(int wide) {
  if (wide == 1 && (!HaveF16Simd() || !WideAvailable())) return false;
  g_flash_forced.store(wide, std::memory_order_relaxed);
  return true;
}

void AttendHeadReference(AttentionMode mode, const float* q, const KvRows& kv, int g, int head_dim,
                         int32_t n_kv, float scale, float* out, AttentionScratch& s, int32_t kv_begin) {
  if (mode == AttentionMode::kFlash) {
    FlashHeadScalar(q, kv, g, head_dim, kv_begin, n_kv, scale, out, s);
    return;
  }
  StandardHead(q, kv, g, head_dim, kv_begin, n_kv, scale, out, s, false);
}

}  // namespace lazyslot
