// Shared by the AVX-512 Q8_0/Q4_0 kernels (kernels_avx512.cpp, kernels_avx512_packed.cpp): Q8_0 activation
// rows laid out for vpdpbusd, which multiplies unsigned by signed bytes. The weights are made unsigned,
// u = w + 128 (Q8_0: w ^ 0x80) or the Q4_0 nibble itself (q = w + 8), and the offset comes off each block's
// exact sum: T_b = sum u * x - c * sum x, with c = 128 or 8 and sum x computed once per activation row.
// Everything here is exact integer work or f16 -> f32 conversion, so the kernels built on it keep the float
// arithmetic of the AVX2 kernels (kernels_avx2.cpp) and give the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/blocks.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant::avx512 {

// Blocks are handled 16 at a time; prepared arrays are zero-padded to a multiple of this.
inline constexpr int64_t kBlockStep = 16;
inline int64_t PaddedBlocks(int64_t nb) { return (nb + kBlockStep - 1) / kBlockStep * kBlockStep; }

// One activation row: qs[32 * b + k] = value k of block b (contiguous, zero past nb), dx[b] = f32(d_x),
// csum[b] = c * (sum of block b's values); dx and csum are zero past nb up to PaddedBlocks(nb).
struct PreparedRow {
  const int8_t* qs = nullptr;
  const float* dx = nullptr;
  const int32_t* csum = nullptr;
};

// c of a weight block type: 128 for Q8_0 (u = w ^ 0x80), 8 for Q4_0 (the nibbles).
template <class WBlock>
inline constexpr int32_t kOffset = sizeof(WBlock) == sizeof(BlockQ8_0) ? 128 : 8;

inline size_t PreparedBytes(int64_t nb) { return static_cast<size_t>(PaddedBlocks(nb)) * (kQK8_0 + 8); }

// A per-thread buffer for `rows` prepared rows of nb blocks (grown on demand, kept for the thread's life).
inline uint8_t* PrepareBuffer(int64_t nb, int rows) {
  thread_local std::vector<uint8_t> buf;
  const size_t want = PreparedBytes(nb) * static_cast<size_t>(rows) + 64;
  if (buf.size() < want) buf.resize(want);
  const uintptr_t p = reinterpret_cast<uintptr_t>(buf.data());
  return reinterpret_cast<uint8_t*>((p + 63) / 64 * 64);
}

// The row laid out at mem by Prepare.
inline PreparedRow RowAt(const uint8_t* mem, int64_t nb) {
  const int64_t nbp = PaddedBlocks(nb);
  const float* dx = reinterpret_cast<const float*>(mem + nbp * kQK8_0);
  return PreparedRow{reinterpret_cast<const int8_t*>(mem), dx, reinterpret_cast<const int32_t*>(dx + nbp)};
}

// Lays out activation row x (nb Q8_0 blocks) at mem (PreparedBytes(nb) bytes; 4-byte aligned, 64 for the
// tiles' aligned loads).
LS_TARGET_AVX512 inline PreparedRow Prepare(const BlockQ8_0* x, int64_t nb, int32_t c, uint8_t* mem) {
  const int64_t nbp = PaddedBlocks(nb);
  int8_t* qs = reinterpret_cast<int8_t*>(mem);
  float* dx = reinterpret_cast<float*>(mem + nbp * kQK8_0);
  int32_t* cs = reinterpret_cast<int32_t*>(dx + nbp);
  const __m256i ones8 = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * kQK8_0), v);
    dx[b] = simd::HalfToFloat(x[b].d);
    cs[b] = c * simd::HsumI32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ones8, v));
  }
  for (int64_t b = nb; b < nbp; ++b) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * kQK8_0), _mm256_setzero_si256());
    dx[b] = 0.0f;
    cs[b] = 0;
  }
  return PreparedRow{qs, dx, cs};
}

}  // namespace lazyslot::quant::avx512
