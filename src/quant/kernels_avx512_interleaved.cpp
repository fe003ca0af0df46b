// AVX-512 kernels of Q4_K weights kept interleaved 16 rows at a time (docs/decisions/0012): the layout, the
// in-place rewrite between it and the GGUF rows, and the products that read it. (Q8_0's interleaved layout
// is the packed prompt group's, in kernels_avx512_packed.cpp; FillAvx512InterleavedKernels installs both.)
//
// A group of 16 rows is rewritten super-block by super-block, in the 16 * 144 bytes the rows held, into
//   d[16], dmin[16]      (f16, row r in lane r)
//   sc[12][16]           (byte k of row r's 12 scale bytes at sc[k][r])
//   q[8][4][64]          (step s, part p: bytes 4r .. 4r + 3 = row r's qs[32p + 4s .. 32p + 4s + 3])
// so one 64-byte load holds 8 nibbles of each of the 16 rows: low nibbles of sub-block 2p, high ones of
// 2p + 1, each lane one row. vpdpbusd with the activation's 4 bytes broadcast adds them into the rows' int32
// sums, one register per sub-block: no horizontal sums, no per-row scale shuffles, and the 6-bit scales of
// all 16 rows are decoded by a handful of byte operations per block. The block is read front to back (the
// steps in order), one linear stream the hardware prefetcher follows without software prefetches.
//
// Per row and block the integers are the exact ones of every Q4_K dot (isum = sum_j sc_j * (q_j . x_j), msum
// = sum_j m_j * (bsums of j)) and lane r runs the single-row dot's float operations in its order (acc =
// fma(dx * d, isum, acc), then acc = fma(-(dx * dmin), msum, acc)), so each result equals vec_dot's on the
// GGUF row bit for bit. GCC 12 warns about its own AVX-512 headers (_mm512_undefined_* self-initialisation,
// GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/interleaved.h"
#include "quant/kernels.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant {
namespace {

constexpr int kRows = kInterleaveRows;

// One group's rows (kRows of them, row_bytes apart) to the interleaved layout, through a copy of the group.
void InterleaveGroup(uint8_t* group, int64_t nb, std::vector<uint8_t>& tmp) {
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(BlockQ4_K);
  tmp.assign(group, group + kRows * row_bytes);
  InterleavedQ4Kx16* out = reinterpret_cast<InterleavedQ4Kx16*>(group);
  for (int64_t ib = 0; ib < nb; ++ib) {
    InterleavedQ4Kx16& o = out[ib];
    for (int r = 0; r < kRows; ++r) {
      const BlockQ4_K& b = reinterpret_cast<const BlockQ4_K*>(tmp.data() + r * row_bytes)[ib];
      o.d[r] = b.d;
      o.dmin[r] = b.dmin;
      for (int k = 0; k < kKScaleBytes; ++k) o.sc[k][r] = b.scales[k];
      for (int s = 0; s < 8; ++s) {
        for (int p = 0; p < 4; ++p) std::memcpy(&o.q[s][p][4 * r], b.qs + 32 * p + 4 * s, 4);
      }
    }
  }
}

// Row r of one interleaved group's blocks as GGUF blocks.
void ExtractRow(const InterleavedQ4Kx16* g, int r, int64_t nb, BlockQ4_K* out) {
  for (int64_t ib = 0; ib < nb; ++ib) {
    BlockQ4_K& b = out[ib];
    b.d = g[ib].d[r];
    b.dmin = g[ib].dmin[r];
    for (int k = 0; k < kKScaleBytes; ++k) b.scales[k] = g[ib].sc[k][r];
    for (int s = 0; s < 8; ++s) {
      for (int p = 0; p < 4; ++p) std::memcpy(b.qs + 32 * p + 4 * s, &g[ib].q[s][p][4 * r], 4);
    }
  }
}

void DeinterleaveGroup(uint8_t* group, int64_t nb, std::vector<uint8_t>& tmp) {
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(BlockQ4_K);
  tmp.assign(group, group + kRows * row_bytes);
  const InterleavedQ4Kx16* in = reinterpret_cast<const InterleavedQ4Kx16*>(tmp.data());
  for (int r = 0; r < kRows; ++r) ExtractRow(in, r, nb, reinterpret_cast<BlockQ4_K*>(group + r * row_bytes));
}

LS_TARGET_AVX512 inline __m512i Bytes16ToI32(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(p)));
}

// out[i * out_stride + r] for R activation rows x[i] against one group (nb blocks from w), r < 16.
template <int R>
LS_TARGET_AVX512 void GroupRows(const InterleavedQ4Kx16* w, const BlockQ8_K* const* x, int64_t nb, float* out,
                                int64_t out_stride) {
  const __m512i m4 = _mm512_set1_epi8(15);
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t ib = 0; ib < nb; ++ib) {
    const InterleavedQ4Kx16& b = w[ib];
    InterleavedScalesQ4K sm;
    DecodeScales(b, &sm);
    // s[i][j]: lane r = row r's sub-block j dot with activation row i (|.| <= 32 * 15 * 128).
    __m512i s[R][8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      for (int i = 0; i < R; ++i) s[i][j] = _mm512_setzero_si512();
    }
#pragma GCC unroll 8
    for (int st = 0; st < 8; ++st) {
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        const __m512i v = _mm512_loadu_si512(b.q[st][p]);
        const __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        for (int i = 0; i < R; ++i) {
          int32_t a0, a1;  // activation values 64p + 4st .. + 3 (sub-block 2p) and 32 further on (2p + 1)
          std::memcpy(&a0, x[i][ib].qs + 64 * p + 4 * st, 4);
          std::memcpy(&a1, x[i][ib].qs + 64 * p + 32 + 4 * st, 4);
          s[i][2 * p] = _mm512_dpbusd_epi32(s[i][2 * p], lo, _mm512_set1_epi32(a0));
          s[i][2 * p + 1] = _mm512_dpbusd_epi32(s[i][2 * p + 1], hi, _mm512_set1_epi32(a1));
        }
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.d)));
    const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.dmin)));
    for (int i = 0; i < R; ++i) {
      const BlockQ8_K& xb = x[i][ib];
      __m512i isum = _mm512_setzero_si512(), msum = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(s[i][j], Bytes16ToI32(sm.sc[j])));
        const int32_t bj = xb.bsums[2 * j] + xb.bsums[2 * j + 1];  // sub-block j's activation sum
        msum = _mm512_add_epi32(msum, _mm512_mullo_epi32(Bytes16ToI32(sm.mn[j]), _mm512_set1_epi32(bj)));
      }
      const __m512 dx = _mm512_set1_ps(xb.d);
      acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(dx, d), _mm512_cvtepi32_ps(isum), acc[i]);
      acc[i] = _mm512_fnmadd_ps(_mm512_mul_ps(dx, dmin), _mm512_cvtepi32_ps(msum), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) _mm512_storeu_ps(out + i * out_stride, acc[i]);
}

// The tile over interleaved groups: n_w (a multiple of 16) rows from w, row_bytes = w_stride, so group g
// starts 16 * g * w_stride bytes in; activation rows up to 4 at a time.
LS_TARGET_AVX512 void TileInterleaved(const void* w, size_t w_stride, int64_t n_w, const void* x,
                                      size_t x_stride, int64_t n_x, int64_t n, float* out,
                                      int64_t out_stride) {
  const int64_t nb = n / kQK_K;
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (int64_t g = 0; g < n_w / kRows; ++g) {
    const auto* gw =
        reinterpret_cast<const InterleavedQ4Kx16*>(static_cast<const uint8_t*>(w) + g * kRows * w_stride);
    for (int64_t i0 = 0; i0 < n_x; i0 += 4) {
      const BlockQ8_K* xr[4];
      const int rows = static_cast<int>(std::min<int64_t>(4, n_x - i0));
      for (int i = 0; i < rows; ++i) xr[i] = reinterpret_cast<const BlockQ8_K*>(xb + (i0 + i) * x_stride);
      float* o = out + i0 * out_stride + g * kRows;
      switch (rows) {
        case 1:
          GroupRows<1>(gw, xr, nb, o, out_stride);
          break;
        case 2:
          GroupRows<2>(gw, xr, nb, o, out_stride);
          break;
        case 3:
          GroupRows<3>(gw, xr, nb, o, out_stride);
          break;
        default:
          GroupRows<4>(gw, xr, nb, o, out_stride);
          break;
      }
    }
  }
}

}  // namespace

void InterleaveQ4K(void* rows, int64_t n_rows, int64_t n) {
  std::vector<uint8_t> tmp;
  const size_t group_bytes = kRows * static_cast<size_t>(n / kQK_K) * sizeof(BlockQ4_K);
  for (int64_t g = 0; g < n_rows / kRows; ++g) {
    InterleaveGroup(static_cast<uint8_t*>(rows) + g * group_bytes, n / kQK_K, tmp);
  }
}

void DeinterleaveQ4K(void* rows, int64_t n_rows, int64_t n) {
  std::vector<uint8_t> tmp;
  const size_t group_bytes = kRows * static_cast<size_t>(n / kQK_K) * sizeof(BlockQ4_K);
  for (int64_t g = 0; g < n_rows / kRows; ++g) {
    DeinterleaveGroup(static_cast<uint8_t*>(rows) + g * group_bytes, n / kQK_K, tmp);
  }
}

void ExtractRowQ4K(const void* group, int r, int64_t n, void* dst) {
  ExtractRow(static_cast<const InterleavedQ4Kx16*>(group), r, n / kQK_K, static_cast<BlockQ4_K*>(dst));
}

void FillAvx512InterleavedKernels(KernelSet* set) {
  InterleavedKernel& k = set->interleaved[kQ4_K];
  k.interleave = InterleaveQ4K;
  k.deinterleave = DeinterleaveQ4K;
  k.extract_row = ExtractRowQ4K;
  k.tile = TileInterleaved;
  k.packed = set->packed[kQ4_K];
  k.packed.pack = avx512::PackQ4_K16Interleaved;

  InterleavedKernel& q8 = set->interleaved[kQ8_0];
  q8.interleave = avx512::InterleaveQ8_0;
  q8.deinterleave = avx512::DeinterleaveQ8_0;
  q8.extract_row = avx512::ExtractRowQ8_0;
  q8.tile = avx512::TileInterleavedQ8_0;
  q8.packed = set->packed[kQ8_0];
  q8.packed.pack = avx512::PackQ8_0_16Interleaved;
}

}  // namespace lazyslot::quant
