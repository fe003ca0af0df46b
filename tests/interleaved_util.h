// Test helpers: the kernel sets the process may use, and one that installs a kernel set's interleaved
// layout of one format (quant::InterleavedKernel, docs/decisions/0012) into the active kernels for the
// helper's lifetime, whatever the load's selection chose, and puts the entry back however the test ends.
#pragma once

#include <vector>

#include "quant/kernels.h"

namespace lazyslot::testing {

// The kernel sets this process may run: those at or below the active level (LAZYSLOT_ISA=avx2 or scalar
// leaves out the higher ones, whose bits the active set's dots need not share).
inline std::vector<quant::KernelSet> UsableKernels() {
  std::vector<quant::KernelSet> sets = quant::AvailableKernels();
  std::erase_if(sets, [](const quant::KernelSet& s) { return s.isa > quant::ActiveKernels().isa; });
  return sets;
}

class ScopedInterleaved {
 public:
  ScopedInterleaved(const quant::KernelSet& from, int format)
      : entry_(quant::MutableActiveKernels().interleaved[format]), saved_(entry_) {
    entry_ = from.interleaved[format];
  }
  ~ScopedInterleaved() { entry_ = saved_; }
  ScopedInterleaved(const ScopedInterleaved&) = delete;
  ScopedInterleaved& operator=(const ScopedInterleaved&) = delete;

 private:
  quant::InterleavedKernel& entry_;
  quant::InterleavedKernel saved_;
};

}  // namespace lazyslot::testing
