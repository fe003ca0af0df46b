// AVX2 + FMA + F16C kernels (placeholder until the SIMD versions land).
#include "quant/kernels.h"

namespace lazyslot::quant {
void FillAvx2Kernels(KernelSet* set) {}
void FillAvx512Kernels(KernelSet* set, const CpuFeatures& cpu) {}
}  // namespace lazyslot::quant
