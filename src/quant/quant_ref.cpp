// Scalar reference kernels for the plain and 32-value block formats: F32, F16, BF16, Q8_0, Q4_0.
// These define the results: SIMD kernels must decode and quantize bit-identically and differ in dot
// products only by float summation order. Facts: FORMATS.md section 2.
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernels.h"

namespace lazyslot::quant::scalar {
namespace {

// x86's round-then-convert: RNE rounding, "integer indefinite" (INT32_MIN) for NaN and values outside int32,
// then signed saturation to int8. The SIMD Q8_0 quantizers get this behaviour from cvtps2dq + packs, so the
// reference spells it out to stay bit-identical even for degenerate input (amax so small that 127/amax = inf).
inline int8_t RoundToInt8Like(float v) {
  if (!(v > -2147483648.0f && v < 2147483648.0f)) return -128;
  if (v >= 4194304.0f) return 127;
  if (v <= -4194304.0f) return -128;
  int r = NearestInt(v);
  return static_cast<int8_t>(r > 127 ? 127 : (r < -128 ? -128 : r));
}

}  // namespace

void DequantizeF32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, n * sizeof(float)); }

void DequantizeF16(const void* src, float* dst, int64_t n) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = F16ToF32(s[i]);
}

void DequantizeBF16(const void* src, float* dst, int64_t n) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = BF16ToF32(s[i]);
}

void DequantizeQ8_0(const void* src, float* dst, int64_t n) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t ib = 0; ib < n / kQK8_0; ++ib) {
    const float d = F16ToF32(b[ib].d);
    for (int e = 0; e < kQK8_0; ++e) dst[ib * kQK8_0 + e] = d * b[ib].qs[e];
  }
}

void DequantizeQ4_0(const void* src, float* dst, int64_t n) {
  const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t ib = 0; ib < n / kQK4_0; ++ib) {
    const float d = F16ToF32(b[ib].d);
    float* y = dst + ib * kQK4_0;
    for (int e = 0; e < kQK4_0 / 2; ++e) {
      y[e] = d * ((b[ib].qs[e] & 15) - 8);
      y[e + kQK4_0 / 2] = d * ((b[ib].qs[e] >> 4) - 8);
    }
  }
}

void QuantizeF32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, n * sizeof(float)); }

void QuantizeF16(const float* src, void* dst, int64_t n) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = F32ToF16(src[i]);
}

void QuantizeBF16(const float* src, void* dst, int64_t n) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = F32ToBF16(src[i]);
}

// Q8_0 as llama.cpp's x86 SIMD activation quantizer: the multiplier is the unrounded 127/amax (not the
// reciprocal of the stored f16 scale) and rounding is half-to-even.
void QuantizeQ8_0(const float* src, void* dst, int64_t n) {
  BlockQ8_0* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t ib = 0; ib < n / kQK8_0; ++ib) {
    const float* x = src + ib * kQK8_0;
    float amax = 0.0f;
    for (int e = 0; e < kQK8_0; ++e) amax = std::fmax(amax, std::fabs(x[e]));
    b[ib].d = F32ToF16(amax / 127.0f);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int e = 0; e < kQK8_0; ++e) b[ib].qs[e] = RoundToInt8Like(x[e] * id);
  }
}

// Q4_0 as llama.cpp's reference quantizer: the signed value of largest magnitude maps to -8, the scale is
// max/-8, and q = min(15, trunc(x/d + 8.5)).
void QuantizeQ4_0(const float* src, void* dst, int64_t n) {
  BlockQ4_0* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t ib = 0; ib < n / kQK4_0; ++ib) {
    const float* x = src + ib * kQK4_0;
    float amax = 0.0f, max = 0.0f;
    for (int e = 0; e < kQK4_0; ++e) {
      if (amax < std::fabs(x[e])) {
        amax = std::fabs(x[e]);
        max = x[e];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[ib].d = F32ToF16(d);
    for (int e = 0; e < kQK4_0 / 2; ++e) {
      // x*id + 8.5 lies in [0.5, 16.5] for finite input; truncation is the floor there.
      const int q0 = static_cast<int>(x[e] * id + 8.5f);
      const int q1 = static_cast<int>(x[e + kQK4_0 / 2] * id + 8.5f);
      b[ib].qs[e] = static_cast<uint8_t>((q0 < 15 ? q0 : 15) | (q1 < 15 ? q1 : 15) << 4);
    }
  }
}

float DotF32(const void* w, const void* x, int64_t n) {
  const float* a = static_cast<const float*>(w);
  const float* b = static_cast<const float*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

float DotF16(const void* w, const void* x, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += F16ToF32(a[i]) * F16ToF32(b[i]);
  return sum;
}

float DotBF16(const void* w, const void* x, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += BF16ToF32(a[i]) * BF16ToF32(b[i]);
  return sum;
}

float DotQ8_0(const void* w, const void* x, int64_t n) {
  const BlockQ8_0* a = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(x);
  float sum = 0.0f;
  for (int64_t ib = 0; ib < n / kQK8_0; ++ib) {
    int32_t isum = 0;
    for (int e = 0; e < kQK8_0; ++e) isum += a[ib].qs[e] * b[ib].qs[e];
    sum += static_cast<float>(isum) * (F16ToF32(a[ib].d) * F16ToF32(b[ib].d));
  }
  return sum;
}

float DotQ4_0(const void* w, const void* x, int64_t n) {
  const BlockQ4_0* a = static_cast<const BlockQ4_0*>(w);
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(x);
  float sum = 0.0f;
  for (int64_t ib = 0; ib < n / kQK4_0; ++ib) {
    int32_t isum = 0;
    for (int e = 0; e < kQK4_0 / 2; ++e) {
      isum += ((a[ib].qs[e] & 15) - 8) * b[ib].qs[e];
      isum += ((a[ib].qs[e] >> 4) - 8) * b[ib].qs[e + kQK4_0 / 2];
    }
    sum += static_cast<float>(isum) * (F16ToF32(a[ib].d) * F16ToF32(b[ib].d));
  }
  return sum;
}

}  // namespace lazyslot::quant::scalar
