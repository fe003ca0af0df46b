// Test data shared by the start-up checks of kernels (SelfCheck in self_check.cpp, the measured selection in
// select.cpp): deterministic rows and the format facts both need. Implemented in self_check.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "gguf/tensor_type.h"
#include "quant/kernels.h"

namespace lazyslot::quant {

// The TensorType of Format f (f < kFormatCount).
TensorType FormatType(int f);
// The Format activations are encoded in for a dot with weights of Format f (VecDotType as a Format).
int DotActFormat(int f);
// n deterministic values with varied magnitudes and signs, including exact zeros; `seed` picks the row.
std::vector<float> CheckRow(int64_t n, uint32_t seed);
// Whether |got - want| is within SelfCheck's tolerance: relative 1e-4 of `scale` (sum of |w * x|).
bool DotWithinTolerance(float got, float want, double scale);

}  // namespace lazyslot::quant
