// Small x86 SIMD helpers shared by the AVX2 and AVX-512 kernel files. Every function carries its own target
// attribute (the build has no -march flag), so including this header never changes what the rest of a file
// may use; only code that runs after dispatch has checked the CPU calls these.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#define LS_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define LS_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define LS_TARGET_AVX512BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,avx2,fma,f16c")))

namespace lazyslot::quant::simd {

// An empty asm that claims to change v. Placed after each step of a running integer sum, it makes GCC keep
// the sum in one register, added to step by step as written. Without it GCC reassociates an unrolled chain
// of exact integer adds into a tree whose many partial sums spill to the stack (the Q4_K packed kernel ran
// 27% faster with it). Integer sums are exact, so the results do not change.
LS_TARGET_AVX2 inline void KeepInRegister(__m256i& v) { asm("" : "+x"(v)); }

LS_TARGET_AVX2 inline float HalfToFloat(uint16_t h) { return _cvtsh_ss(h); }

// Asks for the cache lines of [p, p + bytes) (into L1). The multi-row kernels read several contiguous rows
// side by side, which the hardware prefetcher does not follow as one stream (Zen 5); they ask for the rows'
// span as one linear stream ahead of use with this.
inline void PrefetchLines(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t l = 0; l < bytes; l += 64) _mm_prefetch(c + l, _MM_HINT_T0);
}

LS_TARGET_AVX2 inline float Hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

LS_TARGET_AVX2 inline float Hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

LS_TARGET_AVX2 inline int32_t HsumI32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// The sums of the 8 lanes of a and of b (exact integer sums), converted to float: lane 0 = sum of a, lane 1 =
// sum of b. No horizontal adds and no trip through general registers (a K-quant dot does this per block).
LS_TARGET_AVX2 inline __m128 HsumI32PairToFloat(__m256i a, __m256i b) {
  const __m128i sa = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  const __m128i sb = _mm_add_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  // a0 b0 a1 b1 + a2 b2 a3 b3, then the upper pair onto the lower one
  const __m128i c = _mm_add_epi32(_mm_unpacklo_epi32(sa, sb), _mm_unpackhi_epi32(sa, sb));
  return _mm_cvtepi32_ps(_mm_add_epi32(c, _mm_shuffle_epi32(c, 0x4e)));
}

// ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)) lane by lane for 8 accumulators a_k = acc[k][0..8): the
// order Hsum adds 8 lanes in, for kernels that keep one accumulator register per phase (kernels_avx2.cpp).
LS_TARGET_AVX2 inline __m256 PhaseSum(const float (*acc)[8]) {
  __m256 a[8];
  for (int k = 0; k < 8; ++k) a[k] = _mm256_loadu_ps(acc[k]);
  return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])),
                       _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7])));
}

// Phase accumulators that are never zeroed (a 1 KiB memset per call would take 8% of the AVX2 Q8_0 prompt
// kernel):
// block ib adds onto PhaseStart(acc[ib % 8], ib), +0 for the first 8 blocks, and PhaseSum(acc, nb) reads the
// phases no block reached (nb < 8) as +0, so the bits are those of zeroed accumulators.
LS_TARGET_AVX2 inline __m256 PhaseStart(const float* a, int64_t ib) {
  return ib < 8 ? _mm256_setzero_ps() : _mm256_load_ps(a);
}
LS_TARGET_AVX2 inline __m256 PhaseSum(const float (*acc)[8], int64_t nb) {
  __m256 a[8];
  for (int k = 0; k < 8; ++k) a[k] = k < nb ? _mm256_loadu_ps(acc[k]) : _mm256_setzero_ps();
  return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])),
                       _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7])));
}

// 32 unsigned nibbles of 16 bytes: low nibbles in bytes 0-15, high nibbles in bytes 16-31 (the Q4_0 order).
LS_TARGET_AVX2 inline __m256i UnpackNibbles(const uint8_t* p) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m256i b = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
  return _mm256_and_si256(b, _mm256_set1_epi8(15));
}

// Signed bytes of 8 floats rounded half-to-even and saturated as cvtps2dq + packs do; `lo` gives bytes
// 0-7 ... `d` bytes 24-31 after the lane fix-up.
LS_TARGET_AVX2 inline __m256i RoundPackI8(__m256 a, __m256 b, __m256 c, __m256 d) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m256i ia = _mm256_cvtps_epi32(_mm256_round_ps(a, kRound));
  const __m256i ib = _mm256_cvtps_epi32(_mm256_round_ps(b, kRound));
  const __m256i ic = _mm256_cvtps_epi32(_mm256_round_ps(c, kRound));
  const __m256i id = _mm256_cvtps_epi32(_mm256_round_ps(d, kRound));
  // packs work per 128-bit lane: the result holds dwords in order a0 b0 c0 d0 a1 b1 c1 d1 (4 bytes each).
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(ia, ib), _mm256_packs_epi32(ic, id));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// The 8 six-bit scales and 8 mins of a Q4_K/Q5_K block as bytes sc0..sc7, m0..m7 of one register, from the
// 12 packed bytes at s (FORMATS.md section 2; 16 bytes are read, the block continues past them). With
// dwords a, b, c = bytes 0-3, 4-7, 8-11, byte by byte: sc0-3 = a & 63, m0-3 = b & 63,
// sc4-7 = (c & 15) | (a >> 6) << 4, m4-7 = (c >> 4) | (b >> 6) << 4. All in vector registers.
LS_TARGET_AVX2 inline __m128i UnpackKScales(const uint8_t* s) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));                     // a b c (junk)
  const __m128i lo = _mm_and_si128(v, _mm_set1_epi8(0x3f));                                   // sc0-3, m0-3
  const __m128i cc = _mm_srlv_epi32(_mm_shuffle_epi32(v, 0x0a), _mm_setr_epi32(0, 4, 0, 0));  // c, c >> 4
  const __m128i hi = _mm_or_si128(_mm_and_si128(cc, _mm_set1_epi8(0x0f)),
                                  _mm_and_si128(_mm_srli_epi32(v, 2), _mm_set1_epi8(0x30)));  // sc4-7, m4-7
  return _mm_unpacklo_epi32(lo, hi);
}

// Q6_K values 128h .. 128h + 127 of a block (ql, qh: the block's arrays; h = 0 or 1) as unsigned bytes 0..63
// in q[0..4), 32 values each: values 128h + 32k + l take the low (k < 2) or high nibble of
// ql[64h + 32 (k & 1) + l] and bits 2k, 2k+1 of qh[32h + l] (FORMATS.md section 2).
LS_TARGET_AVX2 inline void DecodeQ6Half(const uint8_t* ql, const uint8_t* qh, int h, __m256i* q) {
  const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
  const __m256i la = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * h));
  const __m256i lb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * h + 32));
  const __m256i hv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh + 32 * h));
  q[0] = _mm256_or_si256(_mm256_and_si256(la, m4), _mm256_and_si256(_mm256_slli_epi16(hv, 4), m30));
  q[1] = _mm256_or_si256(_mm256_and_si256(lb, m4), _mm256_and_si256(_mm256_slli_epi16(hv, 2), m30));
  q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4), _mm256_and_si256(hv, m30));
  q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
                         _mm256_and_si256(_mm256_srli_epi16(hv, 2), m30));
}

// dst[s] = 4-byte unit s of src[0], of src[1], ..., of src[7]: eight rows' 32-byte runs interleaved 4 bytes
// at a time (an 8 x 8 transpose of 32-bit elements).
LS_TARGET_AVX2 inline void Interleave8x32(const uint8_t* const* src, void* dst_bytes) {
  __m256i r[8], t[8], u[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src[k]));
  for (int k = 0; k < 8; k += 2) {  // t[k] = k0 k+1_0 k1 k+1_1 | k4 .. ; t[k + 1] = units 2, 3 | 6, 7
    t[k] = _mm256_unpacklo_epi32(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_epi32(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {  // u[k + j] = unit j of rows k..k+3 | unit j + 4 of rows k..k+3
    u[k] = _mm256_unpacklo_epi64(t[k], t[k + 2]);
    u[k + 1] = _mm256_unpackhi_epi64(t[k], t[k + 2]);
    u[k + 2] = _mm256_unpacklo_epi64(t[k + 1], t[k + 3]);
    u[k + 3] = _mm256_unpackhi_epi64(t[k + 1], t[k + 3]);
  }
  __m256i* dst = static_cast<__m256i*>(dst_bytes);
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_si256(dst + j, _mm256_permute2x128_si256(u[j], u[4 + j], 0x20));
    _mm256_storeu_si256(dst + 4 + j, _mm256_permute2x128_si256(u[j], u[4 + j], 0x31));
  }
}

}  // namespace lazyslot::quant::simd
