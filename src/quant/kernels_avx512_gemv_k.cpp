// AVX-512 generation kernels of Q4_K, Q5_K and Q6_K weights: one Q8_K activation row against many weight
// rows, four weight rows per pass. Generation is this product (a decode step reads every weight once), and
// the single-row dot (kernels_avx512_k.cpp) spends about 80 instructions per block, most of them on work a
// block does alone: decoding its 6-bit scales, reducing its sums horizontally and its scalar float tail. Here
// four rows share that work, one 128-bit lane (or float lane) per row:
//   - the four 16-byte block headers (d, dmin, 12 scale bytes) sit in one register and are decoded together;
//   - values are multiplied by vpdpbusd into int32 sums of 4 products (at most 4 * 15 * 128 in magnitude),
//     packed exactly to int16 and weighted by their sub-block scales with vpmaddwd/vpdpwssd;
//   - the activation row is laid out once per call so that a plain 64-byte load of 128 nibbles multiplies
//     in place: the low nibbles of bytes 0-63 are values 0-31 and 64-95, the high ones 32-63 and 96-127;
//   - the four rows' sums are reduced by one transpose, and the float tail runs on 4 lanes.
// Per row and block the integers (isum = sum_j sc_j * (q_j . x_j), msum = sum_j m_j * (bsums of j)) are the
// exact ones of the other Q4_K dots, and lane r runs the very float operations of the single-row dot in the
// same order (acc = fma(dx * d, isum, acc), then acc = fma(-(dx * dmin), msum, acc)), so every result equals
// vec_dot's bit for bit; rows past a multiple of 4 go through that dot. Q5_K adds each value's fifth bit
// (from qh) before the multiply, as the single-row decode does; Q6_K (below) shares the reduce and the tail.
// GCC 12 warns about its own AVX-512 headers (_mm512_undefined_* self-initialisation, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstring>
#include <vector>

#include "quant/avx512_gemv.h"
#include "quant/avx512_kdecode.h"
#include "quant/blocks.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant::avx512 {
namespace {

// The four rows of a pass are contiguous (a matrix's rows are), so their lines are asked for as one linear
// stream this far ahead of the pass's first row, four blocks' worth per block step. Asking for each row's
// lines 4 KiB ahead of that row, as the single-row dot does, leaves Zen 5 streaming Q4_K from DRAM at 0.86x
// and Q6_K at 0.81-0.93x of the linear stream (four interleaved row streams lose its hardware prefetcher;
// docs/bench.md).
constexpr int kPrefetchBytes = 8192;

// Asks for the lines of block step ib of the pass whose first row starts at `first`: bytes [4 ib, 4 ib + 4)
// block_bytes of the linear stream, kPrefetchBytes ahead.
inline void PrefetchStep(const void* first, int64_t ib, size_t block_bytes) {
  simd::PrefetchLines(static_cast<const uint8_t*>(first) + kPrefetchBytes + 4 * ib * block_bytes,
                      4 * block_bytes);
}

// One Q8_K activation block laid out for the 4-row kernel (320 bytes, 64-byte aligned):
//   q[64p .. 64p + 64): the values the nibbles of load p/2 meet: p = 0: x[0, 32) x[64, 96) (low nibbles of
//   qs[0, 64)), p = 1: x[32, 64) x[96, 128) (their high nibbles), p = 2, 3: the same for x[128, 256);
//   b2[j] = bsums[2j] + bsums[2j + 1] (the sum of sub-block j's 32 values, |b2| <= 4096), d = the block's
//   scale.
struct alignas(64) PreparedQ8K {
  int8_t q[kQK_K];
  int16_t b2[8];
  float d;
  uint8_t pad[44];
};
static_assert(sizeof(PreparedQ8K) == 320);

LS_TARGET_AVX512 void PrepareQ8K(const BlockQ8_K* x, int64_t nb, PreparedQ8K* out) {
  for (int64_t ib = 0; ib < nb; ++ib) {
    const int8_t* q = x[ib].qs;
    PreparedQ8K& p = out[ib];
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 2;
           ++k) {  // part 2h + k: values 128h + 32k + [0, 32) then 128h + 64 + 32k + [0, 32)
        const int8_t* src = q + 128 * h + 32 * k;
        std::memcpy(p.q + 64 * (2 * h + k), src, 32);
        std::memcpy(p.q + 64 * (2 * h + k) + 32, src + 64, 32);
      }
    }
    for (int j = 0; j < 8; ++j) {
      p.b2[j] = static_cast<int16_t>(x[ib].bsums[2 * j] + x[ib].bsums[2 * j + 1]);
    }
    p.d = x[ib].d;
  }
}

// Word w of 128-bit lane L of the register that weights the packed sums of sub-blocks (j0, j0 + 1) (lanes
// 0-1) and (j0 + 2, j0 + 3) (lanes 2-3) of row k: words 0-3 hold the first sub-block's four sums, 4-7 the
// second's. As vpermw indices into the scales-as-words register (row k's 8 scales in words 8k .. 8k + 7).
LS_TARGET_AVX512 __m512i ScaleIndex(int k, int j0) {
  alignas(64) int16_t idx[32];
  for (int w = 0; w < 32; ++w) {
    const int lane = w / 8, j = j0 + (lane >= 2 ? 2 : 0) + ((w % 8) >= 4 ? 1 : 0);
    idx[w] = static_cast<int16_t>(8 * k + j);
  }
  return _mm512_load_si512(idx);
}

// Per-word shift counts: a in words 0-15 (bytes 0-31), b in words 16-31.
LS_TARGET_AVX512 inline __m512i WordShifts(int a, int b) {
  return _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(a)),
                            _mm256_set1_epi16(static_cast<short>(b)), 1);
}

struct Constants {
  __m512i scale_index[4][2];  // [row][sub-blocks 0-3 / 4-7]
  __m512i sc_words, min_words;
  __m512i header_words;  // vpermw indices: d of rows 0-3, then dmin of rows 0-3 (words 0-7)
};

LS_TARGET_AVX512 Constants MakeConstants() {
  Constants c;
  for (int k = 0; k < 4; ++k) {
    c.scale_index[k][0] = ScaleIndex(k, 0);
    c.scale_index[k][1] = ScaleIndex(k, 4);
  }
  // Bytes 0-7 (scales) or 8-15 (mins) of each lane zero-extended to words (index -1: zero).
  alignas(64) int8_t sc[64], mn[64];
  for (int b = 0; b < 64; ++b) {
    const int w = (b % 16) / 2;  // pshufb indices are lane-relative
    sc[b] = (b % 2) ? -1 : static_cast<int8_t>(w);
    mn[b] = (b % 2) ? -1 : static_cast<int8_t>(8 + w);
  }
  c.sc_words = _mm512_load_si512(sc);
  c.min_words = _mm512_load_si512(mn);
  alignas(64) int16_t hw[32] = {};
  for (int k = 0; k < 4; ++k) {
    hw[k] = static_cast<int16_t>(8 * k);
    hw[4 + k] = static_cast<int16_t>(8 * k + 1);
  }
  c.header_words = _mm512_load_si512(hw);
  return c;
}

// Lane r = the sum of the 16 dwords of t[r] (exact), for r < 4: a transpose by unpack/add levels gives lane L
// = (row 0, row 1, row 2, row 3) sums of 128-bit lane L, then the four lanes are added.
LS_TARGET_AVX512 inline __m128i RowSums4(const __m512i* t) {
  const __m512i a = _mm512_add_epi32(_mm512_unpacklo_epi32(t[0], t[1]), _mm512_unpackhi_epi32(t[0], t[1]));
  const __m512i b = _mm512_add_epi32(_mm512_unpacklo_epi32(t[2], t[3]), _mm512_unpackhi_epi32(t[2], t[3]));
  const __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
  const __m256i u2 = _mm256_add_epi32(_mm512_castsi512_si256(u), _mm512_extracti64x4_epi64(u, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(u2), _mm256_extracti128_si256(u2, 1));
}

// acc lane r += the dot of block ib of weight row r (rows: 4 pointers to Q4_K or, kFive, Q5_K rows) with
// prepared block x.
template <bool kFive>
LS_TARGET_AVX512 inline __m128 Block4(const uint8_t* const* rows, int64_t ib, const PreparedQ8K& x,
                                      const Constants& c, __m128 acc) {
  const size_t off = static_cast<size_t>(ib) * (kFive ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
  // Headers: lane k = row k's d, dmin (dword 0) and scale bytes a, b, c (dwords 1-3).
  __m512i h = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[0] + off)));
  h = _mm512_inserti32x4(h, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[1] + off)), 1);
  h = _mm512_inserti32x4(h, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2] + off)), 2);
  h = _mm512_inserti32x4(h, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[3] + off)), 3);
  // 6-bit scales (FORMATS.md section 2): sc0-3 = a & 63, m0-3 = b & 63, sc4-7 = (c & 15) | (a >> 6) << 4,
  // m4-7 = (c >> 4) | (b >> 6) << 4, byte by byte; lane k becomes sc0..sc7 m0..m7 of row k.
  const __m512i ab = _mm512_shuffle_epi32(h, _MM_PERM_CBCB);  // a b a b
  const __m512i cc = _mm512_srlv_epi32(_mm512_shuffle_epi32(h, _MM_PERM_DDDD),
                                       _mm512_set4_epi32(4, 0, 4, 0));  // c, c >> 4, ..
  const __m512i lo = _mm512_and_si512(ab, _mm512_set1_epi8(0x3f));
  const __m512i hi = _mm512_ternarylogic_epi32(_mm512_and_si512(cc, _mm512_set1_epi8(0x0f)),
                                               _mm512_srli_epi32(ab, 2), _mm512_set1_epi8(0x30), 0xf8);
  const __m512i sm = _mm512_unpacklo_epi32(lo, hi);
  const __m512i scw = _mm512_shuffle_epi8(sm, c.sc_words);  // lane k: row k's scales as words
  // msum of row k in every dword of lane k: m_j * b2_j summed.
  __m512i m =
      _mm512_madd_epi16(_mm512_shuffle_epi8(sm, c.min_words),
                        _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(x.b2))));
  m = _mm512_add_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_BADC));
  m = _mm512_add_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_CDAB));

  const __m512i m4 = _mm512_set1_epi8(15);
  const __m512i x0 = _mm512_load_si512(x.q), x1 = _mm512_load_si512(x.q + 64);
  const __m512i x2 = _mm512_load_si512(x.q + 128), x3 = _mm512_load_si512(x.q + 192);
  __m512i t[4];
  for (int k = 0; k < 4; ++k) {
    const uint8_t* qs = rows[k] + off + (kFive ? 48 : 16);
    const __m512i v0 = _mm512_loadu_si512(qs), v1 = _mm512_loadu_si512(qs + 64);
    // Register p holds sub-blocks (j, j + 2) = (0, 2), (1, 3), (4, 6), (5, 7) in its 32-byte halves.
    __m512i q0 = _mm512_and_si512(v0, m4), q1 = _mm512_and_si512(_mm512_srli_epi16(v0, 4), m4);
    __m512i q2 = _mm512_and_si512(v1, m4), q3 = _mm512_and_si512(_mm512_srli_epi16(v1, 4), m4);
    if constexpr (kFive) {  // bit j of qh[l] (value l of sub-block j) moved to bit 4, qh in both halves
      const __m512i qh =
          _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[k] + off + 16)));
      const __m512i m10 = _mm512_set1_epi8(0x10);
      q0 = _mm512_or_si512(q0, _mm512_and_si512(_mm512_sllv_epi16(qh, WordShifts(4, 2)), m10));
      q1 = _mm512_or_si512(q1, _mm512_and_si512(_mm512_sllv_epi16(qh, WordShifts(3, 1)), m10));
      q2 = _mm512_or_si512(q2, _mm512_and_si512(_mm512_srlv_epi16(qh, WordShifts(0, 2)), m10));
      q3 = _mm512_or_si512(q3, _mm512_and_si512(_mm512_srlv_epi16(qh, WordShifts(1, 3)), m10));
    }
    const __m512i z = _mm512_setzero_si512();
    // Sums of 4 products: lanes 0-1 of p0 = sub-block 0, lanes 2-3 = sub-block 2; p1: 1, 3; p2: 4, 6; p3:
    // 5, 7.
    const __m512i p0 = _mm512_dpbusd_epi32(z, q0, x0);
    const __m512i p1 = _mm512_dpbusd_epi32(z, q1, x1);
    const __m512i p2 = _mm512_dpbusd_epi32(z, q2, x2);
    const __m512i p3 = _mm512_dpbusd_epi32(z, q3, x3);
    // Per lane, words 0-3 = the first register's 4 sums, 4-7 the second's (exact: |sum| <= 4 * 31 * 128).
    const __m512i w01 = _mm512_packs_epi32(p0, p1), w23 = _mm512_packs_epi32(p2, p3);
    t[k] = _mm512_dpwssd_epi32(_mm512_madd_epi16(w01, _mm512_permutexvar_epi16(c.scale_index[k][0], scw)),
                               w23, _mm512_permutexvar_epi16(c.scale_index[k][1], scw));
  }
  const __m128i isum = RowSums4(t);
  const __m128i msum = _mm512_castsi512_si128(
      _mm512_permutexvar_epi32(_mm512_zextsi128_si512(_mm_setr_epi32(0, 4, 8, 12)), m));
  const __m256 sums = _mm256_cvtepi32_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(isum), msum, 1));
  // d of rows 0-3, dmin of rows 0-3, times the activation's scale (dx * d as the single-row dot rounds it).
  const __m256 dd =
      _mm256_mul_ps(_mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutexvar_epi16(c.header_words, h))),
                    _mm256_set1_ps(x.d));
  acc = _mm_fmadd_ps(_mm256_castps256_ps128(dd), _mm256_castps256_ps128(sums), acc);
  return _mm_fnmadd_ps(_mm256_extractf128_ps(dd, 1), _mm256_extractf128_ps(sums, 1), acc);
}

template <bool kFive>
LS_TARGET_AVX512 int64_t Gemv(const void* w, size_t w_stride, int64_t n_w, const void* x, int64_t n,
                              float* out) {
  const int64_t nb = n / kQK_K;
  if (n_w < 4 || nb == 0) return 0;
  thread_local std::vector<PreparedQ8K> prepared;
  if (static_cast<int64_t>(prepared.size()) < nb) prepared.resize(nb);
  PrepareQ8K(static_cast<const BlockQ8_K*>(x), nb, prepared.data());
  static const Constants c = MakeConstants();
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  int64_t r = 0;
  for (; r + 4 <= n_w; r += 4) {
    const uint8_t* rows[4] = {wb + r * w_stride, wb + (r + 1) * w_stride, wb + (r + 2) * w_stride,
                              wb + (r + 3) * w_stride};
    __m128 acc = _mm_setzero_ps();
    for (int64_t ib = 0; ib < nb; ++ib) {
      PrefetchStep(rows[0], ib, kFive ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
      acc = Block4<kFive>(rows, ib, prepared[ib], c, acc);
    }
    _mm_storeu_ps(out + r, acc);
  }
  return r;
}

// ---- Q6_K: the values decoded as the single-row dot does (avx512_kdecode.h: register m = values 64m ..
// 64m + 63, 0..63), the activation read in place. vpdpbusd gives sums of 4 products (|sum| <= 4 * 63 * 128),
// 128-bit lane L of register m = group 4m + L of 16 values; packed to int16 two registers at a time and
// weighted by the signed group scales. Per row the exact block sum is sum_g sc_g * (q_g . x_g) - 32 *
// sum_g sc_g * bsums_g, and acc = fma(dx * d, f32(sum), acc): DotQ6KRows' integers and float operations.

// vpermw indices for the scales (words 0-15 of the register = sc_0 .. sc_15): word w of lane L weights
// group L (w < 4) or 4 + L of the first packed pair, 8 + L or 12 + L of the second (j0 = 0 or 8).
LS_TARGET_AVX512 __m512i Q6ScaleIndex(int j0) {
  alignas(64) int16_t idx[32];
  for (int w = 0; w < 32; ++w) idx[w] = static_cast<int16_t>(j0 + w / 8 + ((w % 8) >= 4 ? 4 : 0));
  return _mm512_load_si512(idx);
}

LS_TARGET_AVX512 inline __m128 Q6Block4(const BlockQ6_K* const* rows, int64_t ib, const BlockQ8_K& x,
                                        const __m512i* scale_index, __m128 acc) {
  const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums));
  __m512i t[4];
  alignas(16) uint16_t d16[8] = {};
  for (int k = 0; k < 4; ++k) {
    const BlockQ6_K& b = rows[k][ib];
    d16[k] = b.d;
    __m512i q[4];
    DecodeQ6(b, q);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    const __m512i sc = _mm512_castsi256_si512(sc16);
    const __m512i z = _mm512_setzero_si512();
    __m512i p[4];
    for (int m = 0; m < 4; ++m) p[m] = _mm512_dpbusd_epi32(z, q[m], _mm512_loadu_si512(x.qs + 64 * m));
    const __m512i w01 = _mm512_packs_epi32(p[0], p[1]), w23 = _mm512_packs_epi32(p[2], p[3]);
    const __m512i s =
        _mm512_dpwssd_epi32(_mm512_madd_epi16(w01, _mm512_permutexvar_epi16(scale_index[0], sc)), w23,
                            _mm512_permutexvar_epi16(scale_index[1], sc));
    const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(sc16, bsums), 5);  // 32 * sc_g * bsums_g
    t[k] = _mm512_sub_epi32(s, _mm512_zextsi256_si512(off));
  }
  const __m128i total = RowSums4(t);
  const __m128 dw =
      _mm_mul_ps(_mm_set1_ps(x.d), _mm_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d16))));
  return _mm_fmadd_ps(dw, _mm_cvtepi32_ps(total), acc);
}

}  // namespace

LS_TARGET_AVX512 int64_t GemvQ6K(const void* w, size_t w_stride, int64_t n_w, const void* x, int64_t n,
                                 float* out) {
  const int64_t nb = n / kQK_K;
  if (n_w < 4 || nb == 0) return 0;
  static const __m512i scale_index[2] = {Q6ScaleIndex(0), Q6ScaleIndex(8)};
  const BlockQ8_K* xb = static_cast<const BlockQ8_K*>(x);
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  int64_t r = 0;
  for (; r + 4 <= n_w; r += 4) {
    const BlockQ6_K* rows[4];
    for (int k = 0; k < 4; ++k) rows[k] = reinterpret_cast<const BlockQ6_K*>(wb + (r + k) * w_stride);
    __m128 acc = _mm_setzero_ps();
    for (int64_t ib = 0; ib < nb; ++ib) {
      PrefetchStep(rows[0], ib, sizeof(BlockQ6_K));
      acc = Q6Block4(rows, ib, xb[ib], scale_index, acc);
    }
    _mm_storeu_ps(out + r, acc);
  }
  return r;
}

int64_t GemvQ4K(const void* w, size_t w_stride, int64_t n_w, const void* x, int64_t n, float* out) {
  return Gemv<false>(w, w_stride, n_w, x, n, out);
}
int64_t GemvQ5K(const void* w, size_t w_stride, int64_t n_w, const void* x, int64_t n, float* out) {
  return Gemv<true>(w, w_stride, n_w, x, n, out);
}

}  // namespace lazyslot::quant::avx512
