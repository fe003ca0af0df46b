// Row-wise operations of the transformer: RMS norm, LayerNorm, RoPE, SwiGLU, GELU, vector add. All work on
// f32 rows.
#pragma once

#include <cstdint>
#include <vector>

namespace lazyslot {

// y[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]   (w may be null). Sum of squares in double (as ggml does), over
// 8 lanes in a fixed order.
void RmsNorm(const float* x, const float* w, float* y, int64_t n, float eps);

// y[i] = (x[i] - mean) / sqrt(var + eps) * w[i] + b[i] (w, b may be null). Mean and variance in double, as
// ggml's norm.
void LayerNorm(const float* x, const float* w, const float* b, float* y, int64_t n, float eps);

enum class RopeStyle {
  kNormal,  // llama: rotate adjacent pairs (2i, 2i+1)
  kNeox,    // qwen2/qwen3: rotate (i, i + n_rot/2)
};

struct RopeParams {
  RopeStyle style = RopeStyle::kNormal;
  int n_rot = 0;            // rotated dims per head (<= head_dim)
  float freq_base = 10000;  // theta_i = pos * base^(-2i/n_rot)
  float freq_scale = 1;     // linear scaling: theta *= freq_scale
  const float* freq_factors = nullptr;  // optional [n_rot/2]: theta_i /= factor[i]
  float attn_factor = 1;                // cos and sin are multiplied by it (LongRoPE's attention factor)
};

// cos/sin of theta_i for one position: [n_rot/2] each.
void RopeAngles(const RopeParams& p, int32_t pos, float* cos_out, float* sin_out);
// Rotates the first n_rot dims of each of n_heads heads (head_dim apart) in place.
void RopeApply(const RopeParams& p, const float* cos_t, const float* sin_t, float* x, int n_heads, int head_dim);

// gate[i] = silu(gate[i]) * up[i], silu(z) = z / (1 + e^-z), e^-z from the softmax's exp (ops/exp_simd.h,
// ~1e-7 relative error, as ggml uses its own vector exp here).
void SwiGlu(float* gate, const float* up, int64_t n);

// x[i] = gelu(x[i]) in tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as llama.cpp's CPU
// computes it: the input rounded to F16 and the result read from an F16 table (exact outside [-10, 10]).
void Gelu(float* x, int64_t n);

// x[i] += y[i]
void AddInPlace(float* x, const float* y, int64_t n);

// y[i * w + e] += b[e] for each of n_rows rows, w = b.size(); nothing when b is empty (an absent bias).
void AddBiasRows(float* y, const std::vector<float>& b, int64_t n_rows);

// L2-normalises x in place (no-op for the zero vector).
void L2Normalize(float* x, int64_t n);

}  // namespace lazyslot
