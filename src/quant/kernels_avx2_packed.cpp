// AVX2 packed kernels for prompt-sized batches (Q4_K, Q5_K, Q6_K, Q8_0, Q4_0 weights): 8 weight rows
// interleaved 4 values at a time, so one maddubs multiplies 4 values of each of the 8 rows with the same 4
// activation bytes (broadcast). For the small-value formats the int16 products of several steps are summed
// before ONE madd applies the 8 rows' scales: Q4_K sums all 8 steps of a 32-value sub-block (|sum| <= 8 * 2 *
// 15 * 128 = 30,720), 9 multiply instructions per 8 rows x 32 values where the row-at-a-time tile
// (kernels_avx2_k.cpp) needs 16; Q5_K's 5-bit values allow 4 steps (31,744), 10 multiplies; Q6_K 2 steps, 12.
// Q8_0 stores each weight plus 128 as two nibbles, so its two int16 sums also run a whole block (below).
// Multiplies are what bounds those tiles on AVX2. Every kernel gives the same bits as the single-row dot of
// its format (same exact integer sums per block, same float operations in the same order), so batching never
// changes a result.
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant {
namespace {

// One super-block (256 values) of 8 Q4_K rows.
struct PackedQ4Kx8 {
  float d[8];            // row r's f16 super-scale, as float
  float dmin[8];         // row r's f16 super-min, as float
  int16_t sc[8][16];     // sub-block j: int16 lanes 2r and 2r+1 = row r's 6-bit scale (one madd pair per row)
  int16_t mn[4][16];     // sub-blocks 2p, 2p+1: lanes 2r, 2r+1 = row r's mins m_2p, m_2p+1
  uint8_t qs[4][8][32];  // sub-blocks 2p (low nibbles), 2p+1 (high): step s, bytes 4r..4r+3 = row r's
                         // qs[32p + 4s .. 32p + 4s + 3], i.e. values 4s..4s+3 of both sub-blocks
};
static_assert(sizeof(PackedQ4Kx8) == 1472);

// The same for Q5_K, the 5-bit values whole: sub-block j, step s, bytes 4r..4r+3 = row r's values 4s..4s+3.
struct PackedQ5Kx8 {
  float d[8];
  float dmin[8];
  int16_t sc[8][16];
  int16_t mn[4][16];
  uint8_t q[8][8][32];
};
static_assert(sizeof(PackedQ5Kx8) == 2496);

// The kPackRows weight rows a group is packed from, as arrays of blocks.
template <class Block>
void RowStarts(const void* w, size_t w_stride, const Block** rows) {
  for (int r = 0; r < kPackRows; ++r) {
    rows[r] =
        reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * w_stride);
  }
}

// Scales, mins and super-scales of block `b` (Q4_K or Q5_K: same header) into row r's lanes of `p`; the
// 6-bit fields unpacked in a vector register (scalar KScaleMin calls would take 8.5% of an AVX2 pp512 Q4_K
// profile).
template <class Packed>
LS_TARGET_AVX2 void PackHeader(const uint8_t* b, int r, Packed& p) {
  uint16_t d, dmin;
  std::memcpy(&d, b, 2);
  std::memcpy(&dmin, b + 2, 2);
  p.d[r] = F16ToF32(d);
  p.dmin[r] = F16ToF32(dmin);
  alignas(16) uint8_t sm[16];  // sc0..sc7, m0..m7
  _mm_store_si128(reinterpret_cast<__m128i*>(sm), simd::UnpackKScales(b + 4));
  for (int j = 0; j < 8; ++j) {
    p.sc[j][2 * r] = p.sc[j][2 * r + 1] = sm[j];
    p.mn[j / 2][2 * r + (j & 1)] = sm[8 + j];
  }
}

LS_TARGET_AVX2 void PackQ4_K(const void* w, size_t w_stride, int64_t n, void* dst) {
  const int64_t nb = n / kQK_K;
  PackedQ4Kx8* out = static_cast<PackedQ4Kx8*>(dst);
  const BlockQ4_K* rows[kPackRows];
  RowStarts(w, w_stride, rows);
  for (int64_t ib = 0; ib < nb; ++ib) {
    PackedQ4Kx8& p = out[ib];
    for (int r = 0; r < kPackRows; ++r) PackHeader(reinterpret_cast<const uint8_t*>(&rows[r][ib]), r, p);
    for (int q = 0; q < 4; ++q) {
      const uint8_t* src[kPackRows];
      for (int r = 0; r < kPackRows; ++r) src[r] = rows[r][ib].qs + 32 * q;
      simd::Interleave8x32(src, p.qs[q]);
    }
  }
}

// Q5_K values of sub-block j (32 of them, 0..31) into vals[32j ..]: nibble j & 1 of qs[32 (j / 2) + l] and
// bit j of qh[l] as bit 4.
LS_TARGET_AVX2 inline void DecodeQ5(const BlockQ5_K& b, uint8_t* vals) {
  const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
  for (int j = 0; j < 8; ++j) {
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * (j / 2)));
    const __m256i lo = _mm256_and_si256((j & 1) ? _mm256_srli_epi16(bytes, 4) : bytes, m4);
    const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(j)), one);  // bit j, per byte
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(vals + 32 * j),
                        _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)));
  }
}

// Rows decoded whole, then interleaved sub-block by sub-block.
LS_TARGET_AVX2 void PackQ5_K(const void* w, size_t w_stride, int64_t n, void* dst) {
  const int64_t nb = n / kQK_K;
  PackedQ5Kx8* out = static_cast<PackedQ5Kx8*>(dst);
  const BlockQ5_K* rows[kPackRows];
  RowStarts(w, w_stride, rows);
  alignas(32) uint8_t vals[kPackRows][kQK_K];
  const uint8_t* src[kPackRows];
  for (int64_t ib = 0; ib < nb; ++ib) {
    PackedQ5Kx8& p = out[ib];
    for (int r = 0; r < kPackRows; ++r) {
      PackHeader(reinterpret_cast<const uint8_t*>(&rows[r][ib]), r, p);
      DecodeQ5(rows[r][ib], vals[r]);
    }
    for (int j = 0; j < 8; ++j) {
      for (int r = 0; r < kPackRows; ++r) src[r] = vals[r] + 32 * j;
      simd::Interleave8x32(src, p.q[j]);
    }
  }
}

LS_TARGET_AVX2 inline __m256i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Unsigned weights of sub-block j, step s (4 values of each of the 8 rows).
LS_TARGET_AVX2 inline __m256i StepWeights(const PackedQ4Kx8& b, int j, int s) {
  const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs[j / 2][s]));
  const __m256i m4 = _mm256_set1_epi8(15);
  return (j & 1) ? _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4) : _mm256_and_si256(bytes, m4);
}
LS_TARGET_AVX2 inline __m256i StepWeights(const PackedQ5Kx8& b, int j, int s) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.q[j][s]));
}

// R activation rows against one packed group; out[i * out_stride + r] for the group's 8 rows r.
// kSteps: steps of 4 values summed in int16 before a scale madd (8 for Q4_K, 4 for Q5_K).
template <int R, class Packed, int kSteps>
LS_TARGET_AVX2 void GroupRows(const Packed* w, const BlockQ8_K* const* x, int64_t nb, float* out,
                              int64_t out_stride) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < nb; ++ib) {
    const Packed& b = w[ib];
    __m256i isum[R];
    for (int i = 0; i < R; ++i) isum[i] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i sc = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.sc[j]));
      for (int s0 = 0; s0 < 8; s0 += kSteps) {
        __m256i s16[R];
        for (int i = 0; i < R; ++i) s16[i] = _mm256_setzero_si256();
        for (int s = s0; s < s0 + kSteps; ++s) {
          const __m256i q = StepWeights(b, j, s);
          for (int i = 0; i < R; ++i) {
            s16[i] =
                _mm256_add_epi16(s16[i], _mm256_maddubs_epi16(q, Broadcast4(x[i][ib].qs + 32 * j + 4 * s)));
            simd::KeepInRegister(s16[i]);
          }
        }
        for (int i = 0; i < R; ++i) isum[i] = _mm256_add_epi32(isum[i], _mm256_madd_epi16(s16[i], sc));
      }
    }
    const __m256 d = _mm256_loadu_ps(b.d), dmin = _mm256_loadu_ps(b.dmin);
    for (int i = 0; i < R; ++i) {
      // Sub-block sums of the activations (bsums hold 16-value sums), as int16: B0..B7 in both lanes.
      const __m256i b32 =
          _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i][ib].bsums)), ones);
      const __m128i b16 = _mm_packs_epi32(_mm256_castsi256_si128(b32), _mm256_extracti128_si256(b32, 1));
      const __m256i bb = _mm256_broadcastsi128_si256(b16);
      __m256i msum = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.mn[0])),
                                       _mm256_shuffle_epi32(bb, 0x00));
      msum = _mm256_add_epi32(msum,
                              _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.mn[1])),
                                                _mm256_shuffle_epi32(bb, 0x55)));
      msum = _mm256_add_epi32(msum,
                              _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.mn[2])),
                                                _mm256_shuffle_epi32(bb, 0xaa)));
      msum = _mm256_add_epi32(msum,
                              _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.mn[3])),
                                                _mm256_shuffle_epi32(bb, 0xff)));
      const __m256 dx = _mm256_set1_ps(x[i][ib].d);
      acc[i] = _mm256_fmadd_ps(_mm256_mul_ps(dx, d), _mm256_cvtepi32_ps(isum[i]), acc[i]);
      acc[i] = _mm256_fnmadd_ps(_mm256_mul_ps(dx, dmin), _mm256_cvtepi32_ps(msum), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) _mm256_storeu_ps(out + i * out_stride, acc[i]);
}

constexpr int kRowsPerPass = 4;  // activation rows per pass over a group: 4 x 3 accumulators fit 16 registers

// ---- Q6_K: 6-bit values 0..63 whole, a signed 8-bit scale per 16 values, the -32 offset through the bsums.
// A pair of products reaches 2 * 63 * 128 = 16,128, so two steps (8 values) are summed in int16 per madd:
// 12 multiplies per 256 products against the row tile's 16.
struct PackedQ6Kx8 {
  float d[8];
  int16_t sc[16][16];  // group g (values 16g..16g+15): lanes 2r, 2r+1 = row r's scale
  int16_t scp[8][16];  // groups 2p, 2p+1: lanes 2r, 2r+1 = row r's scales sc_2p, sc_2p+1 (for the offset)
  uint8_t q[64][32];   // step s: bytes 4r..4r+3 = row r's values 4s..4s+3
};
static_assert(sizeof(PackedQ6Kx8) == 2848);

LS_TARGET_AVX2 void PackQ6_K(const void* w, size_t w_stride, int64_t n, void* dst) {
  const int64_t nb = n / kQK_K;
  PackedQ6Kx8* out = static_cast<PackedQ6Kx8*>(dst);
  const BlockQ6_K* rows[kPackRows];
  RowStarts(w, w_stride, rows);
  alignas(32) uint8_t vals[kPackRows][kQK_K];
  const uint8_t* src[kPackRows];
  for (int64_t ib = 0; ib < nb; ++ib) {
    PackedQ6Kx8& p = out[ib];
    for (int r = 0; r < kPackRows; ++r) {
      const BlockQ6_K& b = rows[r][ib];
      p.d[r] = F16ToF32(b.d);
      for (int g = 0; g < 16; ++g) {
        p.sc[g][2 * r] = p.sc[g][2 * r + 1] = b.scales[g];
        p.scp[g / 2][2 * r + (g & 1)] = b.scales[g];
      }
      for (int h = 0; h < 2; ++h) {
        __m256i q[4];
        simd::DecodeQ6Half(b.ql, b.qh, h, q);
        for (int k = 0; k < 4; ++k) {
          _mm256_store_si256(reinterpret_cast<__m256i*>(vals[r] + 128 * h + 32 * k), q[k]);
        }
      }
    }
    for (int c = 0; c < 8; ++c) {  // values 32c..32c+31: steps 8c..8c+7
      for (int r = 0; r < kPackRows; ++r) src[r] = vals[r] + 32 * c;
      simd::Interleave8x32(src, p.q[8 * c]);
    }
  }
}

// R activation rows against one packed Q6_K group: per block the exact sum, then acc += (dx * d) * sum.
template <int R>
LS_TARGET_AVX2 void GroupRowsQ6(const PackedQ6Kx8* w, const BlockQ8_K* const* x, int64_t nb, float* out,
                                int64_t out_stride) {
  __m256 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < nb; ++ib) {
    const PackedQ6Kx8& b = w[ib];
    __m256i isum[R];
    for (int i = 0; i < R; ++i) isum[i] = _mm256_setzero_si256();
    for (int s = 0; s < 64; s += 2) {
      const __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.q[s]));
      const __m256i q1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.q[s + 1]));
      const __m256i sc = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.sc[s / 4]));
      for (int i = 0; i < R; ++i) {
        const __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(q0, Broadcast4(x[i][ib].qs + 4 * s)),
                                             _mm256_maddubs_epi16(q1, Broadcast4(x[i][ib].qs + 4 * s + 4)));
        isum[i] = _mm256_add_epi32(isum[i], _mm256_madd_epi16(s16, sc));
      }
    }
    const __m256 d = _mm256_loadu_ps(b.d);
    for (int i = 0; i < R; ++i) {
      // The -32 offset: 32 * sum_g sc_g * bsums_g per row, the group sums taken two at a time.
      const int8_t* bs = reinterpret_cast<const int8_t*>(x[i][ib].bsums);
      __m256i off = _mm256_setzero_si256();
      for (int p = 0; p < 8; ++p) {
        off = _mm256_add_epi32(
            off, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.scp[p])),
                                   Broadcast4(bs + 4 * p)));
      }
      isum[i] = _mm256_sub_epi32(isum[i], _mm256_slli_epi32(off, 5));
      acc[i] =
          _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(x[i][ib].d), d), _mm256_cvtepi32_ps(isum[i]), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) _mm256_storeu_ps(out + i * out_stride, acc[i]);
}

// ---- Q4_0 weights (Q8_0 activations): 8 rows interleaved 4 values at a time, one 32-value block of 8 rows
// per Packed32x8, the nibbles stored as bytes 0..15 and the -8 taken off the exact block sum.
struct Packed32x8 {
  float d[8];        // row r's f16 block scale, as float
  int8_t qs[8][32];  // step s: bytes 4r..4r+3 = row r's nibbles for values 4s..4s+3
};
static_assert(sizeof(Packed32x8) == 288);

LS_TARGET_AVX2 void PackQ4_0(const void* w, size_t w_stride, int64_t n, void* dst) {
  const int64_t nb = n / kQK8_0;
  Packed32x8* out = static_cast<Packed32x8*>(dst);
  const BlockQ4_0* rows[kPackRows];
  RowStarts(w, w_stride, rows);
  for (int64_t ib = 0; ib < nb; ++ib) {
    const uint8_t* src[kPackRows];
    alignas(32) uint8_t nibbles[kPackRows][kQK8_0];
    for (int r = 0; r < kPackRows; ++r) {
      out[ib].d[r] = F16ToF32(rows[r][ib].d);
      // value e < 16 in the low nibble of qs[e], e >= 16 in the high nibble of qs[e - 16]
      _mm256_store_si256(reinterpret_cast<__m256i*>(nibbles[r]), simd::UnpackNibbles(rows[r][ib].qs));
      src[r] = nibbles[r];
    }
    simd::Interleave8x32(src, out[ib].qs);
  }
}

// The sum of a Q8_0 activation block's 32 values in every int32 lane.
LS_TARGET_AVX2 inline __m256i BlockSumAll(const int8_t* qs) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
  __m256i t = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), a), _mm256_set1_epi16(1));
  t = _mm256_add_epi32(t, _mm256_shuffle_epi32(t, 0x4e));
  t = _mm256_add_epi32(t, _mm256_shuffle_epi32(t, 0xb1));
  return _mm256_add_epi32(t, _mm256_permute2x128_si256(t, t, 0x01));
}

// R activation rows against one packed group, in the arithmetic of kernels_avx2.cpp's Q8_0/Q4_0 dot: exact
// block sums, acc[b % 8] = fma(f32(d_w) * f32(d_x), f32(sum), acc[b % 8]), then the phases in Hsum's order.
// The unsigned nibbles let the int16 products of all 8 steps add up (|sum| <= 8 * 2 * 15 * 128) before one
// madd.
template <int R>
LS_TARGET_AVX2 void GroupRowsQ4_0(const Packed32x8* w, const BlockQ8_0* const* x, int64_t nb, float* out,
                                  int64_t out_stride) {
  const __m256i ones = _mm256_set1_epi16(1);
  alignas(32) float acc[R][8][8];  // [activation row][phase][weight row]; a phase starts at its first block
  for (int64_t ib = 0; ib < nb; ++ib) {
    const Packed32x8& b = w[ib];
    __m256i isum[R];
    for (int i = 0; i < R; ++i) isum[i] = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs[s]));
      for (int i = 0; i < R; ++i) {
        isum[i] = _mm256_add_epi16(isum[i], _mm256_maddubs_epi16(q, Broadcast4(x[i][ib].qs + 4 * s)));
        simd::KeepInRegister(isum[i]);
      }
    }
    const __m256 d = _mm256_loadu_ps(b.d);
    for (int i = 0; i < R; ++i) {
      // sum (q - 8) x = sum q x - 8 sum x
      const __m256i t =
          _mm256_sub_epi32(_mm256_madd_epi16(isum[i], ones), _mm256_slli_epi32(BlockSumAll(x[i][ib].qs), 3));
      float* a = acc[i][ib % 8];
      const __m256 scale = _mm256_mul_ps(d, _mm256_set1_ps(simd::HalfToFloat(x[i][ib].d)));
      _mm256_store_ps(a, _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(t), simd::PhaseStart(a, ib)));
    }
  }
  for (int i = 0; i < R; ++i) _mm256_storeu_ps(out + i * out_stride, simd::PhaseSum(acc[i], nb));
}

// ---- Q8_0 weights without the sign trick: u = w + 128 (0..255) is split at pack time into nibbles,
// u = 16 h + l, so both halves are unsigned and maddubs multiplies them by the signed activation bytes as
// they are. A pair of products is at most 2 * 15 * 128 = 3,840, so a block's 8 steps add up in int16 for
// each half (30,720), and T_b = madd(L, 1) + madd(H, 16) - 128 * sum(x) is the block's exact sum: 2
// multiplies and 2 adds per step and activation row where the sign trick needs a sign, 2 multiplies and an
// add (the multiply ports are what bound this kernel). The activation rows are prepared once per product
// with their block sums and scales (PreparedQ8).
struct PackedQ8x8 {
  float d[8];         // row r's f16 block scale, as float
  uint8_t lo[8][32];  // step s: bytes 4r..4r+3 = low nibbles of row r's u for values 4s..4s+3
  uint8_t hi[8][32];  // the same, high nibbles
};
static_assert(sizeof(PackedQ8x8) == 544);

LS_TARGET_AVX2 void PackQ8_0(const void* w, size_t w_stride, int64_t n, void* dst) {
  const int64_t nb = n / kQK8_0;
  PackedQ8x8* out = static_cast<PackedQ8x8*>(dst);
  const BlockQ8_0* rows[kPackRows];
  RowStarts(w, w_stride, rows);
  const __m256i m4 = _mm256_set1_epi8(15), bias = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t ib = 0; ib < nb; ++ib) {
    const uint8_t* src[kPackRows];
    for (int r = 0; r < kPackRows; ++r) {
      out[ib].d[r] = F16ToF32(rows[r][ib].d);
      src[r] = reinterpret_cast<const uint8_t*>(rows[r][ib].qs);
    }
    simd::Interleave8x32(src, out[ib].lo);  // the bytes w, then split in place
    for (int s = 0; s < 8; ++s) {
      const __m256i u =
          _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(out[ib].lo[s])), bias);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[ib].lo[s]), _mm256_and_si256(u, m4));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[ib].hi[s]),
                          _mm256_and_si256(_mm256_srli_epi16(u, 4), m4));
    }
  }
}

// One prepared Q8_0 activation block: its values, f32(d_x) and 128 * (sum of its values).
struct PreparedQ8 {
  int8_t qs[kQK8_0];
  float dx;
  int32_t csum;
};
static_assert(sizeof(PreparedQ8) == 40);

LS_TARGET_AVX2 void PrepareQ8_0(const void* x, int64_t n, void* dst) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(x);
  PreparedQ8* p = static_cast<PreparedQ8*>(dst);
  for (int64_t ib = 0; ib < n / kQK8_0; ++ib) {
    std::memcpy(p[ib].qs, b[ib].qs, kQK8_0);
    p[ib].dx = simd::HalfToFloat(b[ib].d);
    p[ib].csum = 128 * _mm256_cvtsi256_si32(BlockSumAll(b[ib].qs));
  }
}
size_t PreparedBytesQ8_0(int64_t n) { return static_cast<size_t>(n / kQK8_0) * sizeof(PreparedQ8); }

// R prepared activation rows against one packed Q8_0 group, in the arithmetic of kernels_avx2.cpp's dot.
template <int R>
LS_TARGET_AVX2 void GroupRowsQ8(const PackedQ8x8* w, const PreparedQ8* const* x, int64_t nb, float* out,
                                int64_t out_stride) {
  const __m256i ones = _mm256_set1_epi16(1), sixteen = _mm256_set1_epi16(16);
  alignas(32) float acc[R][8][8];  // [activation row][phase][weight row]; a phase starts at its first block
  for (int64_t ib = 0; ib < nb; ++ib) {
    const PackedQ8x8& b = w[ib];
    __m256i sl[R], sh[R];
    for (int i = 0; i < R; ++i) sl[i] = sh[i] = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s) {
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.lo[s]));
      const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hi[s]));
      for (int i = 0; i < R; ++i) {
        const __m256i xb = Broadcast4(x[i][ib].qs + 4 * s);
        sl[i] = _mm256_add_epi16(sl[i], _mm256_maddubs_epi16(lo, xb));
        sh[i] = _mm256_add_epi16(sh[i], _mm256_maddubs_epi16(hi, xb));
        simd::KeepInRegister(sl[i]);
        simd::KeepInRegister(sh[i]);
      }
    }
    const __m256 d = _mm256_loadu_ps(b.d);
    for (int i = 0; i < R; ++i) {
      const __m256i t = _mm256_sub_epi32(
          _mm256_add_epi32(_mm256_madd_epi16(sl[i], ones), _mm256_madd_epi16(sh[i], sixteen)),
          _mm256_set1_epi32(x[i][ib].csum));
      float* a = acc[i][ib % 8];
      const __m256 scale = _mm256_mul_ps(d, _mm256_set1_ps(x[i][ib].dx));
      _mm256_store_ps(a, _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(t), simd::PhaseStart(a, ib)));
    }
  }
  for (int i = 0; i < R; ++i) _mm256_storeu_ps(out + i * out_stride, simd::PhaseSum(acc[i], nb));
}

// ---- The driver: groups one after another, activation rows kRowsPerPass at a time. Kernel::Rows<R> runs R
// activation rows (Kernel::XBlock blocks) against one group of Kernel::Packed blocks.
template <class Kernel>
void PackedTile(const void* packed, int64_t n_groups, const void* x, size_t x_stride, int64_t n_x, int64_t n,
                float* out, int64_t out_stride) {
  using Packed = typename Kernel::Packed;
  using XBlock = typename Kernel::XBlock;
  const int64_t nb = n / Kernel::kBlockValues;
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (int64_t g = 0; g < n_groups; ++g) {
    const Packed* w = static_cast<const Packed*>(packed) + g * nb;
    for (int64_t i = 0; i < n_x; i += kRowsPerPass) {
      const int rows = static_cast<int>(n_x - i < kRowsPerPass ? n_x - i : kRowsPerPass);
      const XBlock* xs[kRowsPerPass];
      for (int k = 0; k < rows; ++k) xs[k] = reinterpret_cast<const XBlock*>(xb + (i + k) * x_stride);
      float* o = out + i * out_stride + g * kPackRows;
      switch (rows) {
        case 4:
          Kernel::template Rows<4>(w, xs, nb, o, out_stride);
          break;
        case 3:
          Kernel::template Rows<3>(w, xs, nb, o, out_stride);
          break;
        case 2:
          Kernel::template Rows<2>(w, xs, nb, o, out_stride);
          break;
        default:
          Kernel::template Rows<1>(w, xs, nb, o, out_stride);
          break;
      }
    }
  }
}

template <class Kernel>
size_t GroupBytes(int64_t n) {
  return static_cast<size_t>(n / Kernel::kBlockValues) * sizeof(typename Kernel::Packed);
}

// The kernels as the driver sees them.
#define LS_PACKED_KERNEL(Name, PackedT, XBlockT, kValues, call)                                    \
  struct Name {                                                                                    \
    using Packed = PackedT;                                                                        \
    using XBlock = XBlockT;                                                                        \
    static constexpr int kBlockValues = kValues;                                                   \
    template <int R>                                                                               \
    static void Rows(const Packed* w, const XBlock* const* x, int64_t nb, float* out, int64_t s) { \
      call(w, x, nb, out, s);                                                                      \
    }                                                                                              \
  };
LS_PACKED_KERNEL(Q4KPacked, PackedQ4Kx8, BlockQ8_K, kQK_K, (GroupRows<R, PackedQ4Kx8, 8>))
LS_PACKED_KERNEL(Q5KPacked, PackedQ5Kx8, BlockQ8_K, kQK_K, (GroupRows<R, PackedQ5Kx8, 4>))
LS_PACKED_KERNEL(Q6KPacked, PackedQ6Kx8, BlockQ8_K, kQK_K, GroupRowsQ6<R>)
LS_PACKED_KERNEL(Q8_0Packed, PackedQ8x8, PreparedQ8, kQK8_0, GroupRowsQ8<R>)
LS_PACKED_KERNEL(Q4_0Packed, Packed32x8, BlockQ8_0, kQK8_0, GroupRowsQ4_0<R>)
#undef LS_PACKED_KERNEL

// Encoded Q8_0 activation rows: prepared kRowsPerPass at a time into a per-thread buffer, then as above.
void PackedTileQ8_0(const void* packed, int64_t n_groups, const void* x, size_t x_stride, int64_t n_x,
                    int64_t n, float* out, int64_t out_stride) {
  const size_t pb = PreparedBytesQ8_0(n);
  thread_local std::vector<uint8_t> buf;
  if (buf.size() < pb * kRowsPerPass) buf.resize(pb * kRowsPerPass);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < n_x; i += kRowsPerPass) {
    const int64_t rows = n_x - i < kRowsPerPass ? n_x - i : kRowsPerPass;
    for (int64_t k = 0; k < rows; ++k) PrepareQ8_0(xb + (i + k) * x_stride, n, buf.data() + k * pb);
    PackedTile<Q8_0Packed>(packed, n_groups, buf.data(), pb, rows, n, out + i * out_stride, out_stride);
  }
}

}  // namespace

void FillAvx2PackedKernels(KernelSet* set) {
  set->packed[kQ4_K] = PackedKernel{PackQ4_K, PackedTile<Q4KPacked>, GroupBytes<Q4KPacked>};
  set->packed[kQ5_K] = PackedKernel{PackQ5_K, PackedTile<Q5KPacked>, GroupBytes<Q5KPacked>};
  set->packed[kQ6_K] = PackedKernel{PackQ6_K, PackedTile<Q6KPacked>, GroupBytes<Q6KPacked>};
  set->packed[kQ8_0] = PackedKernel{PackQ8_0,    PackedTileQ8_0,    GroupBytes<Q8_0Packed>, kPackRows,
                                    PrepareQ8_0, PreparedBytesQ8_0, PackedTile<Q8_0Packed>};
  set->packed[kQ4_0] = PackedKernel{PackQ4_0, PackedTile<Q4_0Packed>, GroupBytes<Q4_0Packed>};
}

}  // namespace lazyslot::quant
