// Byte layouts of the ggml block formats (FORMATS.md section 2), shared by the scalar and SIMD kernels.
// Internal to src/quant: other layers see only quant.h. All fields are little-endian, blocks are packed (no
// alignment beyond 2 bytes can be assumed: rows of 34-byte Q8_0 blocks put most blocks at odd addresses).
#pragma once

#include <cstdint>

namespace lazyslot::quant {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK_K = 256;      // super-block of the K-quants
inline constexpr int kKScaleBytes = 12;  // 8 six-bit scales + 8 six-bit mins, packed

#pragma pack(push, 1)
struct BlockQ4_0 {
  uint16_t d;             // f16 scale
  uint8_t qs[kQK4_0 / 2];  // value e < 16 in the low nibble of qs[e], e >= 16 in the high nibble of qs[e-16]
};
struct BlockQ8_0 {
  uint16_t d;  // f16 scale
  int8_t qs[kQK8_0];
};
struct BlockQ4_K {
  uint16_t d;     // f16 super-scale for the 6-bit sub-block scales
  uint16_t dmin;  // f16 super-scale for the 6-bit sub-block mins
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];  // sub-blocks 2i (low nibbles) and 2i+1 (high nibbles) share qs[32i .. 32i+31]
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];  // bit j of qh[l] is the fifth bit of value 32j + l
  uint8_t qs[kQK_K / 2];  // as Q4_K
};
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];     // low 4 bits
  uint8_t qh[kQK_K / 4];     // high 2 bits
  int8_t scales[kQK_K / 16];  // signed 8-bit scale per 16 values
  uint16_t d;                // f16 super-scale, stored last
};
struct BlockQ8_K {
  float d;  // may be negative (see QuantizeQ8_K)
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];  // bsums[g] = sum of qs[16g .. 16g+15]
};
#pragma pack(pop)

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// The 6-bit scale and min of K-quant sub-block j (0..7) from the packed 12 bytes `s`:
// bytes 0-3 hold sc0-3 (low 6 bits) and the top 2 bits of sc4-7, bytes 4-7 the same for the mins,
// bytes 8-11 hold the low 4 bits of sc4-7 (low nibble) and m4-7 (high nibble).
inline void KScaleMin(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Round to nearest, ties to even, for |x| < 2^22 (the default FP rounding mode, as SIMD rounding uses).
inline int NearestInt(float x) {
  float v = x + 12582912.0f;  // 1.5 * 2^23: the sum's low mantissa bits hold round(x)
  int32_t i;
  __builtin_memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}

}  // namespace lazyslot::quant
