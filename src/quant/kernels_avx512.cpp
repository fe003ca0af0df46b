// AVX-512 kernels (placeholder).
#include "quant/kernels.h"

namespace lazyslot::quant {
void FillAvx512Kernels(KernelSet* set, const CpuFeatures& cpu) {}
void FillAvx512KQuantKernels(KernelSet* set) {}
}  // namespace lazyslot::quant
