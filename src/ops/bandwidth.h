// Memory read bandwidth of this machine, measured the way a decoding step reads weights: every thread of the
// pool streams its share of one buffer much larger than the caches. The roofline for generation is
// bandwidth / (weight bytes read per token).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/thread_pool.h"

namespace lazyslot {

// A page-aligned buffer of `bytes` (rounded up to 4 KiB) filled with non-zero data, so every page is
// really committed (zero pages of an untouched mapping would all read one shared physical page).
class ReadBuffer {
 public:
  explicit ReadBuffer(size_t bytes);
  ~ReadBuffer();
  ReadBuffer(const ReadBuffer&) = delete;
  ReadBuffer& operator=(const ReadBuffer&) = delete;
  bool ok() const { return data_ != nullptr; }
  size_t size() const { return bytes_; }
  const uint8_t* data() const { return data_; }

 private:
  uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
};

// One timed pass: the pool's threads each read a contiguous 1/nth of `buf` with 32-byte loads (AVX2 where
// the process's level, quant::ActiveIsa, is AVX2 or above: the CPU has it and LAZYSLOT_ISA allows it), else
// with 16-byte SSE2 loads. Returns bytes per second. `checksum` receives a value derived from
// the data, so the reads cannot be optimised away.
double ReadPassBytesPerSecond(ThreadPool& pool, const ReadBuffer& buf, uint64_t* checksum);

}  // namespace lazyslot
