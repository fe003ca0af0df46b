// Q4_K weights interleaved 16 rows at a time (docs/decisions/0012): the block layout, shared by the AVX-512
// interleaved kernels (kernels_avx512_interleaved.cpp) and the packer that feeds prompts from it
// (kernels_avx512_packed.cpp).
#pragma once

#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace lazyslot::quant {

// One super-block (256 values) of 16 interleaved Q4_K rows, in exactly the bytes the 16 GGUF blocks held.
struct InterleavedQ4Kx16 {
  uint16_t d[kInterleaveRows];                // row r's f16 super-scale
  uint16_t dmin[kInterleaveRows];             // row r's f16 super-min
  uint8_t sc[kKScaleBytes][kInterleaveRows];  // [k][r] = row r's scale byte k
  uint8_t q[8][4][4 * kInterleaveRows];       // [s][p], bytes 4r .. 4r + 3 = row r's qs[32p + 4s .. + 3]
};
static_assert(sizeof(InterleavedQ4Kx16) == kInterleaveRows * sizeof(BlockQ4_K));

// In place: n_rows (a multiple of 16) contiguous Q4_K rows of n values to the interleaved layout and back.
void InterleaveQ4K(void* rows, int64_t n_rows, int64_t n);
void DeinterleaveQ4K(void* rows, int64_t n_rows, int64_t n);

namespace avx512 {
// PackFn over one interleaved group (w_stride: the rows' GGUF row bytes): the AVX-512 packed Q4_K group.
void PackQ4_K16Interleaved(const void* w, size_t w_stride, int64_t n, void* dst);
}  // namespace avx512

}  // namespace lazyslot::quant
