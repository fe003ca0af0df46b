// Helpers for the quant tests: deterministic random rows and encode/decode wrappers over byte vectors.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gguf/tensor_type.h"
#include "quant/quant.h"

namespace lazyslot::quant::testing {

// The weight formats with a dot product, and every format QuantizeRow accepts.
inline const std::vector<TensorType>& WeightTypes() {
  static const std::vector<TensorType> t = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16,
                                            TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K,
                                            TensorType::kQ5_K, TensorType::kQ6_K};
  return t;
}
inline std::vector<TensorType> AllTypes() {
  std::vector<TensorType> t = WeightTypes();
  t.push_back(TensorType::kQ8_K);
  return t;
}

inline int64_t BlockSize(TensorType t) { return Traits(t).block_size; }

// Gaussian values scaled by `scale`, with a few outliers (as real activations have).
inline std::vector<float> RandomRow(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  for (int64_t i = 0; i < n; i += 97) v[i] *= 6.0f;
  return v;
}

inline std::vector<uint8_t> Encode(TensorType t, const std::vector<float>& x, bool reference = true) {
  std::vector<uint8_t> out(RowBytes(t, static_cast<int64_t>(x.size())));
  if (reference) {
    ref::QuantizeRow(t, x.data(), out.data(), static_cast<int64_t>(x.size()));
  } else {
    QuantizeRow(t, x.data(), out.data(), static_cast<int64_t>(x.size()));
  }
  return out;
}

inline std::vector<float> Decode(TensorType t, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(n);
  ref::DequantizeRow(t, bytes.data(), out.data(), n);
  return out;
}

inline float MaxAbs(const std::vector<float>& x) {
  float m = 0;
  for (float v : x) m = std::fmax(m, std::fabs(v));
  return m;
}

}  // namespace lazyslot::quant::testing
