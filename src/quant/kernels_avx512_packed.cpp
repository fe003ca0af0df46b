// AVX-512 VNNI packed kernels for prompt-sized batches, 16 weight rows per group interleaved 4 values at a
// time, so one vpdpbusd multiplies 4 values of each of the 16 rows by the same 4 activation bytes (broadcast)
// and adds them into the rows' int32 sums. Q8_0/Q4_0 (Q8_0 activations): 8 instructions per 16 rows x 32
// values, where the AVX2 packed kernel (kernels_avx2_packed.cpp) needs 4 per 8 rows x 4 values for Q8_0; the
// weights stored unsigned and the activation rows prepared once per product (avx512_rows.h,
// PackedKernel::prepare). Q4_K/Q5_K/Q6_K (Q8_K activations): vpdpbusd per sub-block, then one vpmulld by the
// rows' scales. Every output follows the AVX2 dot's arithmetic (the same exact block sums and FMAs), so the
// results equal the AVX2 kernels' bit for bit.
// GCC 12 warns about its own AVX-512 headers (_mm512_undefined_* self-initialisation, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstring>
#include <vector>

#include "quant/avx512_kdecode.h"
#include "quant/avx512_rows.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/interleaved.h"
#include "quant/kernels.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant {
namespace {

constexpr int kRows = 16;  // weight rows per group
constexpr size_t kPackPrefetchBytes = 4096;  // how far ahead Pack32x16 asks for its rows' linear stream

// One 32-value block of 16 rows.
struct Packed32x16 {
  float d[kRows];    // row r's f16 block scale, as float
  uint8_t q[8][64];  // step s: bytes 4r..4r+3 = row r's values 4s..4s+3, unsigned (Q8_0: w ^ 0x80; Q4_0:
                     // the nibbles)
};
static_assert(sizeof(Packed32x16) == 576);

// Q8_0 rows kept interleaved (docs/decisions/0012): the same group with the f16 scales as stored, in the
// bytes of the 16 GGUF blocks.
struct InterleavedQ8_0x16 {
  uint16_t d[kRows];  // row r's f16 block scale
  uint8_t q[8][64];   // as Packed32x16::q (w ^ 0x80)
};
static_assert(sizeof(InterleavedQ8_0x16) == kRows * sizeof(BlockQ8_0));

// The 16 rows' scales of a group block as floats (f16 -> f32 is exact).
LS_TARGET_AVX512 inline __m512 Scales(const Packed32x16& b) { return _mm512_loadu_ps(b.d); }
LS_TARGET_AVX512 inline __m512 Scales(const InterleavedQ8_0x16& b) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.d)));
}

// Sixteen rows' 32-byte runs (row k in v[k]) interleaved 4 bytes at a time into 8 steps of 64 bytes: step s
// = bytes 4s..4s+3 of rows 0..15. Rows k and k + 8 share a register, the unpacks of simd::Interleave8x32 work
// within its 128-bit lanes, and one two-source permute per step puts the four quarters (rows 0-3, 4-7, 8-11,
// 12-15) in order. Everything stays in registers: two 8-row interleaves through the stack would make
// Pack32x16 7.4% of a Zen 5 pp512 Q8_0 profile against 3.6% (before the prefetch below), most of which is
// the first touch of the weights.
LS_TARGET_AVX512 inline void Interleave16x32(const __m256i* v, uint8_t (*dst)[64]) {
  __m512i r[8], t[8], u[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm512_inserti64x4(_mm512_castsi256_si512(v[k]), v[k + 8], 1);
  for (int k = 0; k < 8; k += 2) {  // per lane: t[k] = units 0, 1 of rows k, k + 1; t[k + 1] = units 2, 3
    t[k] = _mm512_unpacklo_epi32(r[k], r[k + 1]);
    t[k + 1] = _mm512_unpackhi_epi32(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {  // u[k + j], lane L: unit j (L even) or j + 4 (L odd) of rows k..k+3 (+8)
    u[k] = _mm512_unpacklo_epi64(t[k], t[k + 2]);
    u[k + 1] = _mm512_unpackhi_epi64(t[k], t[k + 2]);
    u[k + 2] = _mm512_unpacklo_epi64(t[k + 1], t[k + 3]);
    u[k + 3] = _mm512_unpackhi_epi64(t[k + 1], t[k + 3]);
  }
  const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);     // lanes 0, 2 of u[j], u[4 + j]
  const __m512i second = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);  // lanes 1, 3
  for (int j = 0; j < 4; ++j) {
    _mm512_storeu_si512(dst[j], _mm512_permutex2var_epi64(u[j], first, u[4 + j]));
    _mm512_storeu_si512(dst[4 + j], _mm512_permutex2var_epi64(u[j], second, u[4 + j]));
  }
}
LS_TARGET_AVX512 inline void Interleave16x32(const uint8_t* const* src, uint8_t (*dst)[64]) {
  __m256i v[16];
  for (int k = 0; k < 16; ++k) v[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src[k]));
  Interleave16x32(v, dst);
}

template <class Block>
LS_TARGET_AVX512 void Pack32x16(const void* w, size_t w_stride, int64_t n, void* dst) {
  const int64_t nb = n / kQK8_0;
  Packed32x16* out = static_cast<Packed32x16*>(dst);
  const uint8_t* base = static_cast<const uint8_t*>(w);
  // The group's 16 rows are contiguous: their span is asked for as one linear stream 4 KiB ahead, a block of
  // each row's worth per step (16 row streams lose the hardware prefetcher: Pack32x16 takes 2.4% of a Zen 5
  // pp512 Q8_0 profile with the one stream, 3.6% without it).
  const size_t step = kRows * sizeof(Block);
  for (int64_t ib = 0; ib < nb; ++ib) {
    simd::PrefetchLines(base + kPackPrefetchBytes + ib * step, step);
    __m256i v[kRows];
    alignas(32) uint16_t d[kRows];
    for (int r = 0; r < kRows; ++r) {
      const Block& b = reinterpret_cast<const Block*>(base + static_cast<size_t>(r) * w_stride)[ib];
      d[r] = b.d;
      if constexpr (sizeof(Block) == sizeof(BlockQ8_0)) {
        v[r] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)),
                                _mm256_set1_epi8(static_cast<char>(0x80)));
      } else {
        v[r] = simd::UnpackNibbles(b.qs);
      }
    }
    // f16 -> f32 is exact, so the conversion instruction gives F16ToF32's values (as the dots' scales do).
    _mm512_storeu_ps(out[ib].d, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d))));
    Interleave16x32(v, out[ib].q);
  }
}

LS_TARGET_AVX512 inline __m512i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// acc + vpdpbusd(q, the 4 bytes at p in every lane), the bytes read by the instruction's own broadcast
// operand ({1to16}), which GCC 12 does not fold from _mm512_set1_epi32: no separate vpbroadcastd.
LS_TARGET_AVX512 inline __m512i DpbusdBroadcast(__m512i acc, __m512i q, const int8_t* p) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(q), "m"(*reinterpret_cast<const int32_t*>(p)));
  return acc;
}

// R prepared activation rows against one group; out[i * out_stride + r] for the group's 16 rows r.
template <int R, class Group>
LS_TARGET_AVX512 void GroupRows(const Group* w, const avx512::PreparedRow* x, int64_t nb, float* out,
                                int64_t out_stride) {
  alignas(64) float acc[R][8][kRows];  // [activation row][phase][weight row]: simd_x86.h's PhaseStart
  for (int64_t ib = 0; ib < nb; ++ib) {
    const Group& b = w[ib];
    __m512i isum[R];
    for (int i = 0; i < R; ++i) isum[i] = _mm512_setzero_si512();
    for (int s = 0; s < 8; ++s) {
      const __m512i q = _mm512_loadu_si512(b.q[s]);
      for (int i = 0; i < R; ++i) {
        isum[i] = DpbusdBroadcast(isum[i], q, x[i].qs + ib * kQK8_0 + 4 * s);
      }
    }
    const __m512 d = Scales(b);
    for (int i = 0; i < R; ++i) {
      const __m512i t = _mm512_sub_epi32(isum[i], _mm512_set1_epi32(x[i].csum[ib]));
      const __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(x[i].dx[ib]));
      float* a = acc[i][ib % 8];
      const __m512 prev = ib < 8 ? _mm512_setzero_ps() : _mm512_load_ps(a);
      _mm512_store_ps(a, _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(t), prev));
    }
  }
  for (int i = 0; i < R; ++i) {
    __m512 a[8];
    for (int k = 0; k < 8; ++k) a[k] = k < nb ? _mm512_load_ps(acc[i][k]) : _mm512_setzero_ps();
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                                     _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
    _mm512_storeu_ps(out + i * out_stride, sum);
  }
}

constexpr int kRowsPerPass = 8;  // activation rows per pass over a group: 8 sums + 1 weight register

// Prepared activation rows (avx512_rows.h, x_stride apart) kRowsPerPass at a time against every group.
template <class Group = Packed32x16>
LS_TARGET_AVX512 void PackedTilePrepared32(const void* packed, int64_t n_groups, const void* x,
                                           size_t x_stride, int64_t n_x, int64_t n, float* out,
                                           int64_t out_stride) {
  const int64_t nb = n / kQK8_0;
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < n_x; i += kRowsPerPass) {
    const int rows = static_cast<int>(n_x - i < kRowsPerPass ? n_x - i : kRowsPerPass);
    avx512::PreparedRow xs[kRowsPerPass];
    for (int k = 0; k < rows; ++k) xs[k] = avx512::RowAt(xb + (i + k) * x_stride, nb);
    for (int64_t g = 0; g < n_groups; ++g) {
      const Group* w = static_cast<const Group*>(packed) + g * nb;
      float* o = out + i * out_stride + g * kRows;
      switch (rows) {
        case 8:
          GroupRows<8>(w, xs, nb, o, out_stride);
          break;
        case 7:
          GroupRows<7>(w, xs, nb, o, out_stride);
          break;
        case 6:
          GroupRows<6>(w, xs, nb, o, out_stride);
          break;
        case 5:
          GroupRows<5>(w, xs, nb, o, out_stride);
          break;
        case 4:
          GroupRows<4>(w, xs, nb, o, out_stride);
          break;
        case 3:
          GroupRows<3>(w, xs, nb, o, out_stride);
          break;
        case 2:
          GroupRows<2>(w, xs, nb, o, out_stride);
          break;
        default:
          GroupRows<1>(w, xs, nb, o, out_stride);
          break;
      }
    }
  }
}

template <class Block>
LS_TARGET_AVX512 void PrepareRow32(const void* x, int64_t n, void* dst) {
  avx512::Prepare(static_cast<const BlockQ8_0*>(x), n / kQK8_0, avx512::kOffset<Block>,
                  static_cast<uint8_t*>(dst));
}
size_t PreparedBytes32(int64_t n) { return avx512::PreparedBytes(n / kQK8_0); }

// Encoded activation rows: prepared kRowsPerPass at a time into a per-thread buffer, then as above.
template <class Block, class Group = Packed32x16>
LS_TARGET_AVX512 void PackedTile32(const void* packed, int64_t n_groups, const void* x, size_t x_stride,
                                   int64_t n_x, int64_t n, float* out, int64_t out_stride) {
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  const size_t pb = PreparedBytes32(n);
  uint8_t* mem = avx512::PrepareBuffer(n / kQK8_0, kRowsPerPass);
  for (int64_t i = 0; i < n_x; i += kRowsPerPass) {
    const int rows = static_cast<int>(n_x - i < kRowsPerPass ? n_x - i : kRowsPerPass);
    for (int k = 0; k < rows; ++k) PrepareRow32<Block>(xb + (i + k) * x_stride, n, mem + k * pb);
    PackedTilePrepared32<Group>(packed, n_groups, mem, pb, rows, n, out + i * out_stride, out_stride);
  }
}

// ---- K-quants (Q8_K activations), 16 rows per group: each sub-block's (Q4_K, Q5_K: 32 values; Q6_K: 16)
// exact sum of products comes from vpdpbusd, then one vpmulld by the rows' scales. The same exact integer
// sums per block and the same FMAs as kernels_avx2_k.cpp's dots and kernels_avx2_packed.cpp's kernels.

// One super-block (256 values) of 16 Q4_K or Q5_K rows.
template <int kQBytes>
struct PackedQ45Kx16 {
  float d[kRows];            // row r's f16 super-scale, as float
  float dmin[kRows];         // row r's f16 super-min, as float
  int32_t sc[8][kRows];      // sub-block j: lane r = row r's 6-bit scale
  int16_t mn[4][2 * kRows];  // sub-blocks 2p, 2p+1: lanes 2r, 2r+1 = row r's mins m_2p, m_2p+1
  // Q4_K (kQBytes 32): [p][s], bytes 4r..4r+3 = row r's qs[32p + 4s .. + 3] (low nibbles: sub-block 2p,
  // high: 2p + 1). Q5_K (kQBytes 64): [j][s], bytes 4r..4r+3 = row r's values 4s..4s+3 of sub-block j, whole.
  uint8_t q[kQBytes / 8][8][64];
};
using PackedQ4Kx16 = PackedQ45Kx16<32>;
using PackedQ5Kx16 = PackedQ45Kx16<64>;
static_assert(sizeof(PackedQ4Kx16) == 2944 && sizeof(PackedQ5Kx16) == 4992);

template <class Block>
const Block* RowBlocks(const void* w, size_t w_stride, int r) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * w_stride);
}

// d, dmin, scales and mins of Q4_K/Q5_K block `b` (same header layout) into row r's lanes; the 6-bit fields
// unpacked in a vector register (scalar KScaleMin calls would take ~1% of pp512).
template <class Packed>
LS_TARGET_AVX512 void PackHeader16(const uint8_t* b, int r, Packed& p) {
  uint16_t d, dmin;
  std::memcpy(&d, b, 2);
  std::memcpy(&dmin, b + 2, 2);
  p.d[r] = F16ToF32(d);
  p.dmin[r] = F16ToF32(dmin);
  alignas(16) uint8_t sm[16];  // sc0..sc7, m0..m7
  _mm_store_si128(reinterpret_cast<__m128i*>(sm), simd::UnpackKScales(b + 4));
  for (int j = 0; j < 8; ++j) {
    p.sc[j][r] = sm[j];
    p.mn[j / 2][2 * r + (j & 1)] = static_cast<int16_t>(sm[8 + j]);
  }
}

LS_TARGET_AVX512 void PackQ4_K16(const void* w, size_t w_stride, int64_t n, void* dst) {
  PackedQ4Kx16* out = static_cast<PackedQ4Kx16*>(dst);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    PackedQ4Kx16& p = out[ib];
    const uint8_t* src[kRows];
    for (int r = 0; r < kRows; ++r) {
      const BlockQ4_K& b = RowBlocks<BlockQ4_K>(w, w_stride, r)[ib];
      PackHeader16(reinterpret_cast<const uint8_t*>(&b), r, p);
    }
    for (int q = 0; q < 4; ++q) {
      for (int r = 0; r < kRows; ++r) src[r] = RowBlocks<BlockQ4_K>(w, w_stride, r)[ib].qs + 32 * q;
      Interleave16x32(src, p.q[q]);
    }
  }
}

// The same group from Q4_K rows kept interleaved (interleaved.h): the 16 rows' scales decoded at once
// and widened into their lanes (f16 -> f32 is exact, as F16ToF32), the nibbles moved from step-major [s][p]
// to [p][s] order.
LS_TARGET_AVX512 void PackQ4_K16FromInterleaved(const void* w, int64_t n, void* dst) {
  const InterleavedQ4Kx16* in = static_cast<const InterleavedQ4Kx16*>(w);
  PackedQ4Kx16* out = static_cast<PackedQ4Kx16*>(dst);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    const InterleavedQ4Kx16& g = in[ib];
    PackedQ4Kx16& p = out[ib];
    _mm512_storeu_ps(p.d, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.d))));
    _mm512_storeu_ps(p.dmin, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.dmin))));
    InterleavedScalesQ4K sm;
    DecodeScales(g, &sm);
    for (int j = 0; j < 8; ++j) {
      _mm512_storeu_si512(p.sc[j],
                          _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sm.sc[j]))));
    }
    for (int q = 0; q < 4; ++q) {  // words 2r, 2r + 1 = row r's mins of sub-blocks 2q, 2q + 1
      const __m128i a = _mm_load_si128(reinterpret_cast<const __m128i*>(sm.mn[2 * q]));
      const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(sm.mn[2 * q + 1]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.mn[q]), _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.mn[q] + kRows),
                          _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, b)));
    }
    for (int q = 0; q < 4; ++q) {
      for (int s = 0; s < 8; ++s) _mm512_storeu_si512(p.q[q][s], _mm512_loadu_si512(g.q[s][q]));
    }
  }
}

// Rows decoded whole (avx512_kdecode.h), then interleaved sub-block by sub-block.
LS_TARGET_AVX512 void PackQ5_K16(const void* w, size_t w_stride, int64_t n, void* dst) {
  PackedQ5Kx16* out = static_cast<PackedQ5Kx16*>(dst);
  alignas(64) uint8_t vals[kRows][kQK_K];
  const uint8_t* src[kRows];
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    PackedQ5Kx16& p = out[ib];
    for (int r = 0; r < kRows; ++r) {
      const uint8_t* b = reinterpret_cast<const uint8_t*>(&RowBlocks<BlockQ5_K>(w, w_stride, r)[ib]);
      PackHeader16(b, r, p);
      const avx512::DecodedQ45 d = avx512::DecodeQ45<true>(b);
      for (int p = 0; p < 4; ++p) _mm512_store_si512(vals[r] + 64 * p, d.q[p]);  // values 64p..64p+63
    }
    for (int j = 0; j < 8; ++j) {
      for (int r = 0; r < kRows; ++r) src[r] = vals[r] + 32 * j;
      Interleave16x32(src, p.q[j]);
    }
  }
}

// Unsigned weights of sub-block j, step s (4 values of each of the 16 rows).
LS_TARGET_AVX512 inline __m512i StepWeights(const PackedQ4Kx16& b, int j, int s) {
  const __m512i bytes = _mm512_loadu_si512(b.q[j / 2][s]);
  const __m512i m4 = _mm512_set1_epi8(15);
  return (j & 1) ? _mm512_and_si512(_mm512_srli_epi16(bytes, 4), m4) : _mm512_and_si512(bytes, m4);
}
LS_TARGET_AVX512 inline __m512i StepWeights(const PackedQ5Kx16& b, int j, int s) {
  return _mm512_loadu_si512(b.q[j][s]);
}

// Sub-block sums of one activation block, B_j = bsums[2j] + bsums[2j + 1] (|B_j| <= 32 * 128, exact as
// int16), as 4 dwords (B_2p, B_2p+1) in a 128-bit register.
LS_TARGET_AVX2 inline __m128i SubBlockSums(const BlockQ8_K& x) {
  const __m256i b32 =
      _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums)), _mm256_set1_epi16(1));
  return _mm_packs_epi32(_mm256_castsi256_si128(b32), _mm256_extracti128_si256(b32, 1));
}

// R activation rows against one Q4_K/Q5_K group: isum = sum_j sc_j * (q_j . x_j), msum = sum_j m_j * B_j,
// exact per block, then acc += (dx * d) * isum - (dx * dmin) * msum.
template <int R, class Packed>
LS_TARGET_AVX512 void GroupRowsQ45(const Packed* w, const BlockQ8_K* const* x, int64_t nb, float* out,
                                   int64_t out_stride) {
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t ib = 0; ib < nb; ++ib) {
    const Packed& b = w[ib];
    __m512i isum[R];
    for (int i = 0; i < R; ++i) isum[i] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      __m512i s32[R];
      for (int i = 0; i < R; ++i) s32[i] = _mm512_setzero_si512();
      for (int s = 0; s < 8; ++s) {
        const __m512i q = StepWeights(b, j, s);
        for (int i = 0; i < R; ++i) {
          s32[i] = _mm512_dpbusd_epi32(s32[i], q, Broadcast4(x[i][ib].qs + 32 * j + 4 * s));
        }
      }
      const __m512i sc = _mm512_loadu_si512(b.sc[j]);
      for (int i = 0; i < R; ++i) isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(s32[i], sc));
    }
    const __m512 d = _mm512_loadu_ps(b.d), dmin = _mm512_loadu_ps(b.dmin);
    for (int i = 0; i < R; ++i) {
      const __m512i bb = _mm512_castsi128_si512(SubBlockSums(x[i][ib]));
      __m512i msum = _mm512_setzero_si512();
      for (int p = 0; p < 4; ++p) {
        msum = _mm512_dpwssd_epi32(msum, _mm512_loadu_si512(b.mn[p]),
                                   _mm512_permutexvar_epi32(_mm512_set1_epi32(p), bb));
      }
      const __m512 dx = _mm512_set1_ps(x[i][ib].d);
      acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(dx, d), _mm512_cvtepi32_ps(isum[i]), acc[i]);
      acc[i] = _mm512_fnmadd_ps(_mm512_mul_ps(dx, dmin), _mm512_cvtepi32_ps(msum), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) _mm512_storeu_ps(out + i * out_stride, acc[i]);
}

// ---- Q6_K: values 0..63 whole, a signed scale per 16 values, the -32 offset through the bsums.
struct PackedQ6Kx16 {
  float d[kRows];
  int32_t sc[16][kRows];      // group g (values 16g..16g+15): lane r = row r's scale
  int16_t scp[8][2 * kRows];  // groups 2p, 2p+1: lanes 2r, 2r+1 = row r's scales (for the offset)
  uint8_t q[64][64];          // step s: bytes 4r..4r+3 = row r's values 4s..4s+3
};
static_assert(sizeof(PackedQ6Kx16) == 5696);

LS_TARGET_AVX512 void PackQ6_K16(const void* w, size_t w_stride, int64_t n, void* dst) {
  PackedQ6Kx16* out = static_cast<PackedQ6Kx16*>(dst);
  alignas(64) uint8_t vals[kRows][kQK_K];
  const uint8_t* src[kRows];
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    PackedQ6Kx16& p = out[ib];
    for (int r = 0; r < kRows; ++r) {
      const BlockQ6_K& b = RowBlocks<BlockQ6_K>(w, w_stride, r)[ib];
      p.d[r] = F16ToF32(b.d);
      for (int g = 0; g < 16; ++g) {
        p.sc[g][r] = b.scales[g];
        p.scp[g / 2][2 * r + (g & 1)] = b.scales[g];
      }
      __m512i q[4];
      avx512::DecodeQ6(b, q);
      for (int m = 0; m < 4; ++m) _mm512_store_si512(vals[r] + 64 * m, q[m]);
    }
    for (int c = 0; c < 8; ++c) {  // values 32c..32c+31: steps 8c..8c+7
      for (int r = 0; r < kRows; ++r) src[r] = vals[r] + 32 * c;
      Interleave16x32(src, p.q + 8 * c);
    }
  }
}

template <int R>
LS_TARGET_AVX512 void GroupRowsQ6(const PackedQ6Kx16* w, const BlockQ8_K* const* x, int64_t nb, float* out,
                                  int64_t out_stride) {
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t ib = 0; ib < nb; ++ib) {
    const PackedQ6Kx16& b = w[ib];
    __m512i isum[R];
    for (int i = 0; i < R; ++i) isum[i] = _mm512_setzero_si512();
    for (int g = 0; g < 16; ++g) {
      __m512i s32[R];
      for (int i = 0; i < R; ++i) s32[i] = _mm512_setzero_si512();
      for (int s = 4 * g; s < 4 * g + 4; ++s) {
        const __m512i q = _mm512_loadu_si512(b.q[s]);
        for (int i = 0; i < R; ++i) s32[i] = _mm512_dpbusd_epi32(s32[i], q, Broadcast4(x[i][ib].qs + 4 * s));
      }
      const __m512i sc = _mm512_loadu_si512(b.sc[g]);
      for (int i = 0; i < R; ++i) isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(s32[i], sc));
    }
    const __m512 d = _mm512_loadu_ps(b.d);
    for (int i = 0; i < R; ++i) {
      // The -32 offset: 32 * sum_g sc_g * bsums_g per row, the group sums taken two at a time.
      const int8_t* bs = reinterpret_cast<const int8_t*>(x[i][ib].bsums);
      __m512i off = _mm512_setzero_si512();
      for (int p = 0; p < 8; ++p)
        off = _mm512_dpwssd_epi32(off, _mm512_loadu_si512(b.scp[p]), Broadcast4(bs + 4 * p));
      isum[i] = _mm512_sub_epi32(isum[i], _mm512_slli_epi32(off, 5));
      acc[i] =
          _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(x[i][ib].d), d), _mm512_cvtepi32_ps(isum[i]), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) _mm512_storeu_ps(out + i * out_stride, acc[i]);
}

// The K-quant driver: groups one after another, activation rows kRowsPerPassK at a time.
constexpr int kRowsPerPassK = 8;

template <class Packed, template <int> class Kernel>
void PackedTileK(const void* packed, int64_t n_groups, const void* x, size_t x_stride, int64_t n_x, int64_t n,
                 float* out, int64_t out_stride) {
  const int64_t nb = n / kQK_K;
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (int64_t g = 0; g < n_groups; ++g) {
    const Packed* w = static_cast<const Packed*>(packed) + g * nb;
    for (int64_t i = 0; i < n_x; i += kRowsPerPassK) {
      const int rows = static_cast<int>(n_x - i < kRowsPerPassK ? n_x - i : kRowsPerPassK);
      const BlockQ8_K* xs[kRowsPerPassK];
      for (int k = 0; k < rows; ++k) xs[k] = reinterpret_cast<const BlockQ8_K*>(xb + (i + k) * x_stride);
      float* o = out + i * out_stride + g * kRows;
      switch (rows) {
        case 8:
          Kernel<8>::Run(w, xs, nb, o, out_stride);
          break;
        case 7:
          Kernel<7>::Run(w, xs, nb, o, out_stride);
          break;
        case 6:
          Kernel<6>::Run(w, xs, nb, o, out_stride);
          break;
        case 5:
          Kernel<5>::Run(w, xs, nb, o, out_stride);
          break;
        case 4:
          Kernel<4>::Run(w, xs, nb, o, out_stride);
          break;
        case 3:
          Kernel<3>::Run(w, xs, nb, o, out_stride);
          break;
        case 2:
          Kernel<2>::Run(w, xs, nb, o, out_stride);
          break;
        default:
          Kernel<1>::Run(w, xs, nb, o, out_stride);
          break;
      }
    }
  }
}

template <int R>
struct Q4KRows {
  static void Run(const PackedQ4Kx16* w, const BlockQ8_K* const* x, int64_t nb, float* o, int64_t s) {
    GroupRowsQ45<R, PackedQ4Kx16>(w, x, nb, o, s);
  }
};
template <int R>
struct Q5KRows {
  static void Run(const PackedQ5Kx16* w, const BlockQ8_K* const* x, int64_t nb, float* o, int64_t s) {
    GroupRowsQ45<R, PackedQ5Kx16>(w, x, nb, o, s);
  }
};
template <int R>
struct Q6KRows {
  static void Run(const PackedQ6Kx16* w, const BlockQ8_K* const* x, int64_t nb, float* o, int64_t s) {
    GroupRowsQ6<R>(w, x, nb, o, s);
  }
};

template <class Packed>
size_t GroupBytesK(int64_t n) {
  return static_cast<size_t>(n / kQK_K) * sizeof(Packed);
}

size_t GroupBytes32(int64_t n) { return static_cast<size_t>(n / kQK8_0) * sizeof(Packed32x16); }

}  // namespace

// ---- Q8_0 rows kept interleaved (InterleavedQ8_0x16): one group rewritten through a copy of its rows.
static LS_TARGET_AVX512 void InterleaveQ8_0Rows(void* rows, int64_t n_rows, int64_t n) {
  const int64_t nb = n / kQK8_0;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(BlockQ8_0);
  std::vector<uint8_t> tmp;
  for (int64_t g = 0; g < n_rows / kRows; ++g) {
    uint8_t* group = static_cast<uint8_t*>(rows) + g * kRows * row_bytes;
    tmp.assign(group, group + kRows * row_bytes);
    InterleavedQ8_0x16* out = reinterpret_cast<InterleavedQ8_0x16*>(group);
    for (int64_t ib = 0; ib < nb; ++ib) {
      __m256i v[kRows];
      for (int r = 0; r < kRows; ++r) {
        const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(tmp.data() + r * row_bytes)[ib];
        out[ib].d[r] = b.d;
        v[r] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)),
                                _mm256_set1_epi8(static_cast<char>(0x80)));
      }
      Interleave16x32(v, out[ib].q);
    }
  }
}

void avx512::InterleaveQ8_0(void* rows, int64_t n_rows, int64_t n) { InterleaveQ8_0Rows(rows, n_rows, n); }

void avx512::ExtractRowQ8_0(const void* group, int r, int64_t n, void* dst) {
  const InterleavedQ8_0x16* g = static_cast<const InterleavedQ8_0x16*>(group);
  BlockQ8_0* out = static_cast<BlockQ8_0*>(dst);
  for (int64_t ib = 0; ib < n / kQK8_0; ++ib) {
    out[ib].d = g[ib].d[r];
    for (int s = 0; s < 8; ++s) {
      for (int k = 0; k < 4; ++k) out[ib].qs[4 * s + k] = static_cast<int8_t>(g[ib].q[s][4 * r + k] ^ 0x80);
    }
  }
}

void avx512::DeinterleaveQ8_0(void* rows, int64_t n_rows, int64_t n) {
  const size_t row_bytes = static_cast<size_t>(n / kQK8_0) * sizeof(BlockQ8_0);
  std::vector<uint8_t> tmp;
  for (int64_t g = 0; g < n_rows / kRows; ++g) {
    uint8_t* group = static_cast<uint8_t*>(rows) + g * kRows * row_bytes;
    tmp.assign(group, group + kRows * row_bytes);
    for (int r = 0; r < kRows; ++r) ExtractRowQ8_0(tmp.data(), r, n, group + r * row_bytes);
  }
}

void avx512::TileInterleavedQ8_0(const void* w, size_t, int64_t n_w, const void* x, size_t x_stride,
                                 int64_t n_x, int64_t n, float* out, int64_t out_stride) {
  PackedTile32<BlockQ8_0, InterleavedQ8_0x16>(w, n_w / kRows, x, x_stride, n_x, n, out, out_stride);
}

// PackFn over one interleaved Q8_0 group: the scales widened, the values as they are.
static LS_TARGET_AVX512 void PackQ8_0FromInterleaved(const void* w, int64_t n, void* dst) {
  const InterleavedQ8_0x16* in = static_cast<const InterleavedQ8_0x16*>(w);
  Packed32x16* out = static_cast<Packed32x16*>(dst);
  for (int64_t ib = 0; ib < n / kQK8_0; ++ib) {
    _mm512_storeu_ps(out[ib].d, Scales(in[ib]));
    std::memcpy(out[ib].q, in[ib].q, sizeof(in[ib].q));
  }
}
void avx512::PackQ8_0_16Interleaved(const void* w, size_t, int64_t n, void* dst) {
  PackQ8_0FromInterleaved(w, n, dst);
}

void avx512::PackQ4_K16Interleaved(const void* w, size_t, int64_t n, void* dst) {
  PackQ4_K16FromInterleaved(w, n, dst);
}

void FillAvx512PackedKernels(KernelSet* set) {
  set->packed[kQ8_0] =
      PackedKernel{Pack32x16<BlockQ8_0>,    PackedTile32<BlockQ8_0>, GroupBytes32,        kRows,
                   PrepareRow32<BlockQ8_0>, PreparedBytes32,         PackedTilePrepared32};
  set->packed[kQ4_0] =
      PackedKernel{Pack32x16<BlockQ4_0>,    PackedTile32<BlockQ4_0>, GroupBytes32,        kRows,
                   PrepareRow32<BlockQ4_0>, PreparedBytes32,         PackedTilePrepared32};
  set->packed[kQ4_K] =
      PackedKernel{PackQ4_K16, PackedTileK<PackedQ4Kx16, Q4KRows>, GroupBytesK<PackedQ4Kx16>, kRows};
  set->packed[kQ5_K] =
      PackedKernel{PackQ5_K16, PackedTileK<PackedQ5Kx16, Q5KRows>, GroupBytesK<PackedQ5Kx16>, kRows};
  set->packed[kQ6_K] =
      PackedKernel{PackQ6_K16, PackedTileK<PackedQ6Kx16, Q6KRows>, GroupBytesK<PackedQ6Kx16>, kRows};
}

}  // namespace lazyslot::quant
