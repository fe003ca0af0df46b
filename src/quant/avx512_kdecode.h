// Shared by the AVX-512 K-quant kernels (kernels_avx512_k.cpp) and their packers (kernels_avx512_packed.cpp):
// a Q4_K/Q5_K/Q6_K super-block decoded into 4 registers of 64 unsigned values.
#pragma once

#include <cstdint>

#include "quant/blocks.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant::avx512 {

// Words 0-15 = a, words 16-31 = b: per-half word permute indices or shift counts.
LS_TARGET_AVX512 inline __m512i WordPattern(int a, int b) {
  return _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(a)), _mm256_set1_epi16(static_cast<short>(b)), 1);
}

// A decoded Q4_K/Q5_K block: q[k] holds sub-blocks (k & 1) + 4 (k / 2) (bytes 0-31) and that + 2 (bytes
// 32-63), unsigned; sc[k] their scales as int16 (words 0-15 and 16-31); mins as int16 pairs m0 m0 .. m7 m7.
struct DecodedQ45 {
  __m512i q[4];
  __m512i sc[4];
  __m256i mins;
  float d, dmin;
};

// The sub-blocks of q[k]: (0, 2), (1, 3), (4, 6), (5, 7).
constexpr int kSubA[4] = {0, 1, 4, 5};

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
  for (int h = 0; h < 2; ++h) {
    const __m512i v = _mm512_loadu_si512(qs + 64 * h);  // sub-blocks 4h..4h+3 in nibbles
    b.q[2 * h] = _mm512_and_si512(v, m4);
    b.q[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  }
  if constexpr (kFive) {  // bit j of qh[l] is the fifth bit of value l of sub-block j
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + 16)));
    const __m512i m10 = _mm512_set1_epi8(0x10);
    const __m512i left0 = WordPattern(4, 2), left1 = WordPattern(3, 1);  // sub-blocks (0, 2), (1, 3)
    const __m512i right2 = WordPattern(0, 2), right3 = WordPattern(1, 3);  // (4, 6), (5, 7)
    b.q[0] = _mm512_or_si512(b.q[0], _mm512_and_si512(_mm512_sllv_epi16(qh, left0), m10));
    b.q[1] = _mm512_or_si512(b.q[1], _mm512_and_si512(_mm512_sllv_epi16(qh, left1), m10));
    b.q[2] = _mm512_or_si512(b.q[2], _mm512_and_si512(_mm512_srlv_epi16(qh, right2), m10));
    b.q[3] = _mm512_or_si512(b.q[3], _mm512_and_si512(_mm512_srlv_epi16(qh, right3), m10));
  }
  const __m128i sm = simd::UnpackKScales(base + 4);  // sc0..sc7, m0..m7
  const __m512i s16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(sm));
  for (int k = 0; k < 4; ++k) b.sc[k] = _mm512_permutexvar_epi16(WordPattern(kSubA[k], kSubA[k] + 2), s16);
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
