// Scalar reference kernels for the K-quants: Q4_K, Q5_K, Q6_K weights (256-value super-blocks) and Q8_K, their
// activation format. Decoding is bit-exact to ggml; the quantizers are simpler than llama-quantize's search
// (min/max per sub-block, 6- or 8-bit scales) but produce valid blocks with bounded error.
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernels.h"

namespace lazyslot::quant::scalar {
namespace {

inline int Clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Q4_K and Q5_K share their layout up to the high bits: x = d*sc_j*q - dmin*m_j per 32-value sub-block j.
// Fills d, dmin, scales[12] and q[256] (0..nmax).
// d_out/dmin_out are plain locals of the caller: block fields are packed and may sit at odd addresses.
void QuantizeKMinMax(const float* x, int nmax, uint16_t* d_out, uint16_t* dmin_out, uint8_t* scales,
                     uint8_t* q) {
  float scale[8], min[8], top[8];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    float lo = 0.0f, hi = -INFINITY;  // the offset is subtracted, so the range always includes 0 from below
    for (int l = 0; l < 32; ++l) {
      lo = std::fmin(lo, x[32 * j + l]);
      hi = std::fmax(hi, x[32 * j + l]);
    }
    min[j] = -lo;
    top[j] = hi;
    scale[j] = (hi - lo) / nmax;
    max_scale = std::fmax(max_scale, scale[j]);
    max_min = std::fmax(max_min, min[j]);
  }
  *d_out = F32ToF16(max_scale / 63.0f);
  *dmin_out = F32ToF16(max_min / 63.0f);
  const float d = F16ToF32(*d_out), dmin = F16ToF32(*dmin_out);
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    m[j] = dmin > 0.0f ? Clamp(NearestInt(min[j] / dmin), 0, 63) : 0;
    // Re-fit the scale to the offset actually stored, so the top of the range is still reached.
    const float need = (top[j] + dmin * m[j]) / nmax;
    sc[j] = d > 0.0f ? Clamp(NearestInt(need / d), 0, 63) : 0;
  }
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
    scales[j + 4] = static_cast<uint8_t>(m[j] | (m[j + 4] >> 4) << 6);
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
  }
  for (int j = 0; j < 8; ++j) {
    const float ds = d * sc[j], dm = dmin * m[j];
    for (int l = 0; l < 32; ++l) {
      q[32 * j + l] =
          static_cast<uint8_t>(ds > 0.0f ? Clamp(NearestInt((x[32 * j + l] + dm) / ds), 0, nmax) : 0);
    }
  }
}

}  // namespace

void DequantizeQ4_K(const void* src, float* dst, int64_t n) {
  const BlockQ4_K* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, dst += kQK_K) {
    const float d = F16ToF32(b[ib].d), dmin = F16ToF32(b[ib].dmin);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      KScaleMin(b[ib].scales, j, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      const uint8_t* qs = b[ib].qs + 32 * (j / 2);
      const int shift = (j & 1) * 4;
      for (int l = 0; l < 32; ++l) dst[32 * j + l] = d1 * ((qs[l] >> shift) & 15) - m1;
    }
  }
}

void DequantizeQ5_K(const void* src, float* dst, int64_t n) {
  const BlockQ5_K* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, dst += kQK_K) {
    const float d = F16ToF32(b[ib].d), dmin = F16ToF32(b[ib].dmin);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      KScaleMin(b[ib].scales, j, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      const uint8_t* qs = b[ib].qs + 32 * (j / 2);
      const int shift = (j & 1) * 4;
      for (int l = 0; l < 32; ++l) {
        const int q = ((qs[l] >> shift) & 15) | ((b[ib].qh[l] >> j) & 1) << 4;
        dst[32 * j + l] = d1 * q - m1;
      }
    }
  }
}

void DequantizeQ6_K(const void* src, float* dst, int64_t n) {
  const BlockQ6_K* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, dst += kQK_K) {
    const float d = F16ToF32(b[ib].d);
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const uint8_t lo_byte = b[ib].ql[64 * h + 32 * (k & 1) + l];
      const int lo = k < 2 ? (lo_byte & 15) : (lo_byte >> 4);
      const int hi = (b[ib].qh[32 * h + l] >> (2 * k)) & 3;
      dst[e] = d * b[ib].scales[e / 16] * ((lo | hi << 4) - 32);
    }
  }
}

void DequantizeQ8_K(const void* src, float* dst, int64_t n) {
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    for (int e = 0; e < kQK_K; ++e) dst[ib * kQK_K + e] = b[ib].d * b[ib].qs[e];
  }
}

void QuantizeQ4_K(const float* src, void* dst, int64_t n) {
  BlockQ4_K* b = static_cast<BlockQ4_K*>(dst);
  uint8_t q[kQK_K];
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    uint16_t d, dmin;
    QuantizeKMinMax(src + ib * kQK_K, 15, &d, &dmin, b[ib].scales, q);
    b[ib].d = d;
    b[ib].dmin = dmin;
    for (int i = 0; i < 4; ++i) {  // sub-blocks 2i (low nibble) and 2i+1 (high nibble) share 32 bytes
      for (int l = 0; l < 32; ++l) {
        b[ib].qs[32 * i + l] = static_cast<uint8_t>(q[64 * i + l] | q[64 * i + 32 + l] << 4);
      }
    }
  }
}

void QuantizeQ5_K(const float* src, void* dst, int64_t n) {
  BlockQ5_K* b = static_cast<BlockQ5_K*>(dst);
  uint8_t q[kQK_K];
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    uint16_t d, dmin;
    QuantizeKMinMax(src + ib * kQK_K, 31, &d, &dmin, b[ib].scales, q);
    b[ib].d = d;
    b[ib].dmin = dmin;
    std::memset(b[ib].qh, 0, sizeof(b[ib].qh));
    for (int i = 0; i < 4; ++i) {
      for (int l = 0; l < 32; ++l) {
        const int q0 = q[64 * i + l], q1 = q[64 * i + 32 + l];
        b[ib].qs[32 * i + l] = static_cast<uint8_t>((q0 & 15) | (q1 & 15) << 4);
        b[ib].qh[l] |= static_cast<uint8_t>((q0 >> 4) << (2 * i) | (q1 >> 4) << (2 * i + 1));
      }
    }
  }
}

// Q6_K: per 16 values, the signed value of largest magnitude maps to -32; the 16 group scales are then
// quantized to int8 against a super-scale d, the largest-magnitude one mapping to -128.
void QuantizeQ6_K(const float* src, void* dst, int64_t n) {
  BlockQ6_K* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    const float* x = src + ib * kQK_K;
    float scale[16];
    float max_abs_scale = 0.0f, max_scale = 0.0f;
    for (int g = 0; g < 16; ++g) {
      float amax = 0.0f, max = 0.0f;
      for (int l = 0; l < 16; ++l) {
        if (std::fabs(x[16 * g + l]) > amax) {
          amax = std::fabs(x[16 * g + l]);
          max = x[16 * g + l];
        }
      }
      scale[g] = max / -32.0f;
      if (std::fabs(scale[g]) > max_abs_scale) {
        max_abs_scale = std::fabs(scale[g]);
        max_scale = scale[g];
      }
    }
    b[ib].d = F32ToF16(max_scale / -128.0f);
    const float d = F16ToF32(b[ib].d);
    std::memset(b[ib].ql, 0, sizeof(b[ib].ql));
    std::memset(b[ib].qh, 0, sizeof(b[ib].qh));
    for (int g = 0; g < 16; ++g) {
      const int sc = d != 0.0f ? Clamp(NearestInt(scale[g] / d), -128, 127) : 0;
      b[ib].scales[g] = static_cast<int8_t>(sc);
      const float ds = d * sc;
      for (int l16 = 0; l16 < 16; ++l16) {
        const int e = 16 * g + l16;
        const int q = (ds != 0.0f ? Clamp(NearestInt(x[e] / ds), -32, 31) : 0) + 32;
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        b[ib].ql[64 * h + 32 * (k & 1) + l] |= static_cast<uint8_t>((q & 15) << (k < 2 ? 0 : 4));
        b[ib].qh[32 * h + l] |= static_cast<uint8_t>((q >> 4) << (2 * k));
      }
    }
  }
}

// Q8_K as llama.cpp quantizes activations for K-quant dots: the signed value of largest magnitude maps to
// -127 (so d = 1/iscale is negative when that value is positive), q = min(127, round-half-even(iscale*x)).
// An all-zero (or vanishingly small) block stores d = 0 and zeros.
void QuantizeQ8_K(const float* src, void* dst, int64_t n) {
  BlockQ8_K* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    const float* x = src + ib * kQK_K;
    float amax = 0.0f, max = 0.0f;
    for (int e = 0; e < kQK_K; ++e) {
      if (std::fabs(x[e]) > amax) {
        amax = std::fabs(x[e]);
        max = x[e];
      }
    }
    const float iscale = -127.0f / max;
    // amax = 0, or so small (< 127/FLT_MAX) that iscale overflows: llama.cpp would store d = -0 and garbage
    // q; any dot with the block is 0 either way, so store a clean all-zero block.
    if (amax == 0.0f || std::isinf(iscale)) {
      std::memset(&b[ib], 0, sizeof(BlockQ8_K));
      continue;
    }
    for (int e = 0; e < kQK_K; ++e) {
      const int v = NearestInt(iscale * x[e]);
      b[ib].qs[e] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b[ib].qs[16 * g + l];
      b[ib].bsums[g] = static_cast<int16_t>(sum);
    }
    b[ib].d = 1.0f / iscale;
  }
}

float DotQ4_K(const void* w, const void* x, int64_t n) {
  const BlockQ4_K* a = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  float sum = 0.0f;
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    int32_t isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      KScaleMin(a[ib].scales, j, &sc, &m);
      const uint8_t* qs = a[ib].qs + 32 * (j / 2);
      const int shift = (j & 1) * 4;
      int32_t s = 0;
      for (int l = 0; l < 32; ++l) s += ((qs[l] >> shift) & 15) * b[ib].qs[32 * j + l];
      isum += sc * s;
      msum += m * (b[ib].bsums[2 * j] + b[ib].bsums[2 * j + 1]);
    }
    sum += b[ib].d * F16ToF32(a[ib].d) * isum - b[ib].d * F16ToF32(a[ib].dmin) * msum;
  }
  return sum;
}

float DotQ5_K(const void* w, const void* x, int64_t n) {
  const BlockQ5_K* a = static_cast<const BlockQ5_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  float sum = 0.0f;
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    int32_t isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      KScaleMin(a[ib].scales, j, &sc, &m);
      const uint8_t* qs = a[ib].qs + 32 * (j / 2);
      const int shift = (j & 1) * 4;
      int32_t s = 0;
      for (int l = 0; l < 32; ++l) {
        const int q = ((qs[l] >> shift) & 15) | ((a[ib].qh[l] >> j) & 1) << 4;
        s += q * b[ib].qs[32 * j + l];
      }
      isum += sc * s;
      msum += m * (b[ib].bsums[2 * j] + b[ib].bsums[2 * j + 1]);
    }
    sum += b[ib].d * F16ToF32(a[ib].d) * isum - b[ib].d * F16ToF32(a[ib].dmin) * msum;
  }
  return sum;
}

float DotQ6_K(const void* w, const void* x, int64_t n) {
  const BlockQ6_K* a = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  float sum = 0.0f;
  for (int64_t ib = 0; ib < n / kQK_K; ++ib) {
    int32_t isum = 0;
    for (int g = 0; g < 16; ++g) {
      int32_t s = 0;
      for (int l16 = 0; l16 < 16; ++l16) {
        const int e = 16 * g + l16;
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        const uint8_t lo_byte = a[ib].ql[64 * h + 32 * (k & 1) + l];
        const int lo = k < 2 ? (lo_byte & 15) : (lo_byte >> 4);
        const int hi = (a[ib].qh[32 * h + l] >> (2 * k)) & 3;
        s += ((lo | hi << 4) - 32) * b[ib].qs[e];
      }
      isum += a[ib].scales[g] * s;
    }
    sum += b[ib].d * F16ToF32(a[ib].d) * isum;
  }
  return sum;
}

}  // namespace lazyslot::quant::scalar
