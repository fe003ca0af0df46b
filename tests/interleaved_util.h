// Test helper: installs a kernel set's interleaved layout of one format (quant::InterleavedKernel,
// docs/decisions/0012) into the active kernels for the helper's lifetime, whatever the load's selection
// chose, and puts the entry back however the test ends.
#pragma once

#include "quant/kernels.h"

namespace lazyslot::testing {

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
