// Weights interleaved 16 rows at a time (docs/decisions/0012). Q4_K: the block layout and its scale decode,
// shared by its AVX-512 kernels (kernels_avx512_interleaved.cpp) and the packer that feeds prompts from it
// (kernels_avx512_packed.cpp). Q8_0: the functions of its layout, which is the packed prompt kernel's group
// with f16 scales (kernels_avx512_packed.cpp). FillAvx512InterleavedKernels installs both.
#pragma once

#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant {

// One super-block (256 values) of 16 interleaved Q4_K rows, in exactly the bytes the 16 GGUF blocks held.
struct InterleavedQ4Kx16 {
  uint16_t d[kInterleaveRows];                // row r's f16 super-scale
  uint16_t dmin[kInterleaveRows];             // row r's f16 super-min
  uint8_t sc[kKScaleBytes][kInterleaveRows];  // [k][r] = row r's scale byte k
  uint8_t q[8][4][4 * kInterleaveRows];       // [s][p], bytes 4r .. 4r + 3 = row r's qs[32p + 4s .. + 3]
};
static_assert(sizeof(InterleavedQ4Kx16) == kInterleaveRows * sizeof(BlockQ4_K));

// The 6-bit scales and mins of a block's 16 rows as bytes, [j][r] = sub-block j of row r (FORMATS.md section
// 2: sc0-3 = a & 63, m0-3 = b & 63, sc4-7 = (c & 15) | (a >> 6) << 4, m4-7 = (c >> 4) | (b >> 6) << 4, with
// a, b, c the scale bytes 0-3, 4-7, 8-11; here 16 rows of each byte k at once).
struct InterleavedScalesQ4K {
  alignas(64) uint8_t sc[8][kInterleaveRows];
  alignas(64) uint8_t mn[8][kInterleaveRows];
};

LS_TARGET_AVX512 inline void DecodeScales(const InterleavedQ4Kx16& b, InterleavedScalesQ4K* out) {
  const __m512i a = _mm512_loadu_si512(b.sc[0]), bb = _mm512_loadu_si512(b.sc[4]);
  const __m512i c = _mm512_loadu_si512(b.sc[8]);
  const __m512i m63 = _mm512_set1_epi8(63), m0f = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
  // ternarylogic 0xf8: x | (y & z)
  _mm512_store_si512(out->sc[0], _mm512_and_si512(a, m63));
  _mm512_store_si512(out->sc[4],
                     _mm512_ternarylogic_epi32(_mm512_and_si512(c, m0f), _mm512_srli_epi16(a, 2), m30, 0xf8));
  _mm512_store_si512(out->mn[0], _mm512_and_si512(bb, m63));
  _mm512_store_si512(out->mn[4], _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(c, 4), m0f),
                                                           _mm512_srli_epi16(bb, 2), m30, 0xf8));
}

// In place: n_rows (a multiple of 16) contiguous Q4_K rows of n values to the interleaved layout and back.
void InterleaveQ4K(void* rows, int64_t n_rows, int64_t n);
void DeinterleaveQ4K(void* rows, int64_t n_rows, int64_t n);
// Row r of an interleaved group as its GGUF blocks (n / 256 of them at dst).
void ExtractRowQ4K(const void* group, int r, int64_t n, void* dst);

namespace avx512 {
// PackFn over one interleaved group (w_stride: the rows' GGUF row bytes): the AVX-512 packed Q4_K group.
void PackQ4_K16Interleaved(const void* w, size_t w_stride, int64_t n, void* dst);

// Q8_0: InterleavedKernel's functions (quant/kernels.h).
void InterleaveQ8_0(void* rows, int64_t n_rows, int64_t n);
void DeinterleaveQ8_0(void* rows, int64_t n_rows, int64_t n);
void ExtractRowQ8_0(const void* group, int r, int64_t n, void* dst);
void TileInterleavedQ8_0(const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride,
                         int64_t n_x, int64_t n, float* out, int64_t out_stride);
void PackQ8_0_16Interleaved(const void* w, size_t w_stride, int64_t n, void* dst);
}  // namespace avx512

}  // namespace lazyslot::quant
