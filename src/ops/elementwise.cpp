// Row-wise transformer operations. Written as plain loops the compiler vectorizes.
#include "ops/elementwise.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "quant/fp16.h"

namespace lazyslot {

void RmsNorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (w) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
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
    cos_out[i] = std::cos(theta);
    sin_out[i] = std::sin(theta);
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

void SwiGlu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

namespace {

float GeluExact(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
}

// gelu of every F16 value, rounded to F16 (128 KiB, built on first use).
const std::vector<uint16_t>& GeluTable() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = F32ToF16(GeluExact(F16ToF32(static_cast<uint16_t>(h))));
    return t;
  }();
  return table;
}

}  // namespace

void Gelu(float* x, int64_t n) {
  const uint16_t* table = GeluTable().data();
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (v <= -10.0f) {
      x[i] = 0.0f;
    } else if (v < 10.0f) {
      x[i] = F16ToF32(table[F32ToF16(v)]);
    }
  }
}

void AddInPlace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void L2Normalize(float* x, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  if (sum <= 0) return;
  const float inv = static_cast<float>(1.0 / std::sqrt(sum));
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace lazyslot
