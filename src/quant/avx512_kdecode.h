// Shared by the AVX-512 K-quant kernels (kernels_avx512_k.cpp) and their packers (kernels_avx512_packed.cpp):
// a Q4_K/Q5_K/Q6_K super-block decoded into 4 registers of 64 unsigned values.
#pragma once

#include <cstdint>

#include "quant/blocks.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant::avx512 {

// Words 0-15 = a, words 16-31 = b: per-half word permute indices or shift counts.
LS_TARGET_AVX512 inline __m512i WordPattern(int a, int b) {
  return _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(a)),
                            _mm256_set1_epi16(static_cast<short>(b)), 1);
}

// A decoded Q4_K/Q5_K block: q[p] holds the unsigned values of sub-blocks 2p (bytes 0-31) and 2p + 1 (bytes
// 32-63), i.e. values 64p..64p+63 in order; sc[p] their scales as int16 (words 0-15 and 16-31); mins as int16
// pairs m0 m0 .. m7 m7.
struct DecodedQ45 {
  __m512i q[4];
  __m512i sc[4];
  __m256i mins;
  float d, dmin;
};

template <bool kFive>
LS_TARGET_AVX512 inline DecodedQ45 DecodeQ45(const uint8_t* base) {
  DecodedQ45 b;
  uint16_t d16, dmin16;
  __builtin_memcpy(&d16, base, 2);
  __builtin_memcpy(&dmin16, base + 2, 2);
  b.d = simd::HalfToFloat(d16);
  b.dmin = simd::HalfToFloat(dmin16);
  const uint8_t* qs = kFive ? base + 48 : base + 16;
  const __m512i m4 = _mm512_set1_epi8(15);
  const __m512i nibble = WordPattern(0, 4);  // the low nibbles in bytes 0-31, the high ones in 32-63
  for (int p = 0; p < 4; ++p) {
    const __m512i v =
        _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * p)));
    b.q[p] = _mm512_and_si512(_mm512_srlv_epi16(v, nibble), m4);
  }
  if constexpr (kFive) {  // bit j of qh[l] is the fifth bit of value l of sub-block j, moved to bit 4
    const __m512i qh =
        _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + 16)));
    const __m512i m10 = _mm512_set1_epi8(0x10);
    b.q[0] = _mm512_or_si512(b.q[0], _mm512_and_si512(_mm512_sllv_epi16(qh, WordPattern(4, 3)), m10));
    b.q[1] = _mm512_or_si512(b.q[1], _mm512_and_si512(_mm512_sllv_epi16(qh, WordPattern(2, 1)), m10));
    b.q[2] = _mm512_or_si512(b.q[2], _mm512_and_si512(_mm512_srlv_epi16(qh, WordPattern(0, 1)), m10));
    b.q[3] = _mm512_or_si512(b.q[3], _mm512_and_si512(_mm512_srlv_epi16(qh, WordPattern(2, 3)), m10));
  }
  const __m128i sm = simd::UnpackKScales(base + 4);  // sc0..sc7, m0..m7
  // The 8 scales as words in every 128-bit lane; register p takes word 2p into lanes 0-1, 2p + 1 into 2-3.
  const __m512i s16 = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(sm));
  for (int p = 0; p < 4; ++p) {
    const short a = static_cast<short>(4 * p | (4 * p + 1) << 8),
                c = static_cast<short>((4 * p + 2) | (4 * p + 3) << 8);
    b.sc[p] = _mm512_shuffle_epi8(s16, WordPattern(a, c));
  }
  b.mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
  return b;
}

// Q6_K: register m holds values 64m..64m+63 (q = lo | hi << 4, 0..63): the low nibbles of ql[64h ..] and
// bits 2k, 2k+1 of qh[32h + l] (FORMATS.md section 2), two registers per half h.
LS_TARGET_AVX512 inline void DecodeQ6(const BlockQ6_K& b, __m512i* q) {
  const __m512i m4 = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
  const __m512i shl_lo = WordPattern(4, 2);  // values 128h + 0..31 take qh << 4, 32..63 take qh << 2
  const __m512i shr_hi = WordPattern(0, 2);  // 64..95 take qh, 96..127 take qh >> 2
  for (int h = 0; h < 2; ++h) {
    const __m512i l = _mm512_loadu_si512(b.ql + 64 * h);
    const __m512i hv =
        _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h)));
    q[2 * h] = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_and_si512(_mm512_sllv_epi16(hv, shl_lo), m30));
    q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                   _mm512_and_si512(_mm512_srlv_epi16(hv, shr_hi), m30));
  }
}

}  // namespace lazyslot::quant::avx512
