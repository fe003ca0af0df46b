// exp(x) for the attention softmax, shared by the cached and the dense (encoder) paths (internal to ops).
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "quant/simd_x86.h"

namespace lazyslot::ops_internal {

// exp(x) as the softmax uses it, in scalar and 8-lane forms that agree bit for bit: x = n ln2 + r with
// n = round(x log2(e)) and r from a two-step ln2 (FMA), e^r by its degree-6 Taylor polynomial (|r| <= 0.35:
// relative error ~1e-7), times 2^n built in the exponent bits. 0 below -87.3 (2^n would be subnormal).
constexpr float kExpMin = -87.3f, kExpMax = 88.0f, kLog2e = 1.44269504f;
constexpr float kLn2Hi = 0.693145752f, kLn2Lo = 1.42860677e-6f;
constexpr float kExpC[7] = {1.0f, 1.0f, 0.5f, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720};

inline float ExpF(float x) {
  if (std::isnan(x)) return x;
  if (x < kExpMin) return 0.0f;
  if (x > kExpMax) return INFINITY;
  const float n = std::nearbyint(x * kLog2e);
  const float r = std::fma(-n, kLn2Lo, std::fma(-n, kLn2Hi, x));
  float p = kExpC[6];
  for (int i = 5; i >= 0; --i) p = std::fma(p, r, kExpC[i]);
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return p * scale;
}

LS_TARGET_AVX2 inline __m256 ExpF8(__m256 x) {
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpMin)), _mm256_set1_ps(kExpMax));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 nn = _mm256_sub_ps(_mm256_setzero_ps(), n);
  const __m256 r =
      _mm256_fmadd_ps(nn, _mm256_set1_ps(kLn2Lo), _mm256_fmadd_ps(nn, _mm256_set1_ps(kLn2Hi), xc));
  __m256 p = _mm256_set1_ps(kExpC[6]);
  for (int i = 5; i >= 0; --i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC[i]));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(kExpMin), _CMP_LT_OQ));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, _mm256_set1_ps(kExpMax), _CMP_GT_OQ));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN stays NaN
}

}  // namespace lazyslot::ops_internal
