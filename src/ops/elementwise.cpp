// Row-wise transformer operations: plain loops, with AVX2 forms of the hot ones (RMS norm, SwiGLU, GELU)
// that compute exactly what the loops do.
#include "ops/elementwise.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/exp_simd.h"
#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/simd_x86.h"

namespace lazyslot {

namespace {

// The process's level (quant::ActiveIsa: the CPU's, capped by LAZYSLOT_ISA).
bool HaveAvx2() {
  static const bool have = quant::ActiveIsa() >= quant::Isa::kAvx2;
  return have;
}

// sum of x[i]^2 in double over 8 lanes (lane i % 8, in order of i), then ((l0 + l4) + (l2 + l6)) + ((l1 + l5)
// + (l3 + l7)). Each square of a float is exact in double, so the AVX2 form below gives the same bits.
double SumSquaresLanes(const double* lane) {
  return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

double SumSquares(const float* x, int64_t n) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 0; i < n; ++i) lane[i % 8] += static_cast<double>(x[i]) * x[i];
  return SumSquaresLanes(lane);
}

LS_TARGET_AVX2 double SumSquaresAvx2(const float* x, int64_t n) {
  __m256d a = _mm256_setzero_pd(), b = _mm256_setzero_pd();  // lanes 0-3, 4-7
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256d lo = _mm256_cvtps_pd(_mm_loadu_ps(x + i)), hi = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    a = _mm256_add_pd(a, _mm256_mul_pd(lo, lo));
    b = _mm256_add_pd(b, _mm256_mul_pd(hi, hi));
  }
  alignas(32) double lane[8];
  _mm256_store_pd(lane, a);
  _mm256_store_pd(lane + 4, b);
  for (; i < n; ++i) lane[i % 8] += static_cast<double>(x[i]) * x[i];
  return SumSquaresLanes(lane);
}

// y[i] = x[i] * scale (* w[i]), eight at a time: the same two roundings per value as the scalar loop.
LS_TARGET_AVX2 int64_t ScaleRowAvx2(const float* x, const float* w, float* y, int64_t n, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), s);
    if (w) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
    _mm256_storeu_ps(y + i, v);
  }
  return i;
}

}  // namespace

void RmsNorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  const bool avx2 = HaveAvx2();
  const double sum = avx2 ? SumSquaresAvx2(x, n) : SumSquares(x, n);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  const int64_t done = avx2 ? ScaleRowAvx2(x, w, y, n, scale) : 0;
  if (w) {
    for (int64_t i = done; i < n; ++i) y[i] = x[i] * scale * w[i];
  } else {
    for (int64_t i = done; i < n; ++i) y[i] = x[i] * scale;
  }
}

void LayerNorm(const float* x, const float* w, const float* b, float* y, int64_t n, float eps) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  double sum2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = x[i] - mean;
    y[i] = d;
    sum2 += static_cast<double>(d) * d;
  }
  const float var = static_cast<float>(sum2 / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(var + eps);
  for (int64_t i = 0; i < n; ++i) y[i] *= scale;
  if (w) {
    for (int64_t i = 0; i < n; ++i) y[i] *= w[i];
  }
  if (b) {
    for (int64_t i = 0; i < n; ++i) y[i] += b[i];
  }
}

void RopeAngles(const RopeParams& p, int32_t pos, float* cos_out, float* sin_out) {
  // theta_i = pos * base^(-2i/n_rot), built by repeated multiplication in f32 like ggml.
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
  float theta_base = static_cast<float>(pos);
  for (int i = 0; i < p.n_rot / 2; ++i) {
    float theta = theta_base * p.freq_scale;
    if (p.freq_factors) theta /= p.freq_factors[i];
    cos_out[i] = std::cos(theta) * p.attn_factor;
    sin_out[i] = std::sin(theta) * p.attn_factor;
    theta_base *= theta_scale;
  }
}

void RopeApply(const RopeParams& p, const float* cos_t, const float* sin_t, float* x, int n_heads, int head_dim) {
  const int half = p.n_rot / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const int ia = p.style == RopeStyle::kNormal ? 2 * i : i;
      const int ib = p.style == RopeStyle::kNormal ? 2 * i + 1 : i + half;
      const float a = v[ia], b = v[ib];
      v[ia] = a * cos_t[i] - b * sin_t[i];
      v[ib] = a * sin_t[i] + b * cos_t[i];
    }
  }
}

namespace {

// Eight at a time with ExpF8, which equals ExpF lane by lane; the division and the product round as the
// scalar loop's.
LS_TARGET_AVX2 int64_t SwiGluAvx2(float* gate, const float* up, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = ops_internal::ExpF8(_mm256_sub_ps(_mm256_setzero_ps(), g));
    _mm256_storeu_ps(gate + i,
                     _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
  return i;
}

}  // namespace

void SwiGlu(float* gate, const float* up, int64_t n) {
  const int64_t done = HaveAvx2() ? SwiGluAvx2(gate, up, n) : 0;
  for (int64_t i = done; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + ops_internal::ExpF(-g)) * up[i];
  }
}

namespace {

float GeluExact(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
}

// gelu of every F16 value, rounded to F16 and held as f32 (256 KiB, built on first use), so the vector path
// gathers it directly.
const std::vector<float>& GeluTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) {
      t[h] = F16ToF32(F32ToF16(GeluExact(F16ToF32(static_cast<uint16_t>(h)))));
    }
    return t;
  }();
  return table;
}

float GeluFromTable(const float* table, float v) {
  if (v <= -10.0f) return 0.0f;
  if (v >= 10.0f) return v;
  return table[F32ToF16(v)];
}

// Eight at a time: F16C rounds to nearest even as F32ToF16 does, so the same table entry is read.
LS_TARGET_AVX2 int64_t GeluAvx2(const float* table, float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256i idx = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    __m256 g = _mm256_i32gather_ps(table, idx, 4);
    g = _mm256_blendv_ps(g, _mm256_setzero_ps(), _mm256_cmp_ps(v, _mm256_set1_ps(-10.0f), _CMP_LE_OQ));
    g = _mm256_blendv_ps(g, v, _mm256_cmp_ps(v, _mm256_set1_ps(10.0f), _CMP_GE_OQ));
    _mm256_storeu_ps(x + i, g);
  }
  return i;
}

}  // namespace

void Gelu(float* x, int64_t n) {
  const bool avx2 = HaveAvx2();
  const float* table = GeluTable().data();
  const int64_t done = avx2 ? GeluAvx2(table, x, n) : 0;
  for (int64_t i = done; i < n; ++i) x[i] = GeluFromTable(table, x[i]);
}

void AddInPlace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void AddBiasRows(float* y, const std::vector<float>& b, int64_t n_rows) {
  if (b.empty()) return;
  const int64_t w = static_cast<int64_t>(b.size());
  for (int64_t i = 0; i < n_rows; ++i) AddInPlace(y + i * w, b.data(), w);
}

void L2Normalize(float* x, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  if (sum <= 0) return;
  const float inv = static_cast<float>(1.0 / std::sqrt(sum));
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace lazyslot
