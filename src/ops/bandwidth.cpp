// Streaming-read bandwidth: an anonymous mapping (on huge pages where possible) filled once, then read by
// every pool thread in parallel.
#include "ops/bandwidth.h"

#include <immintrin.h>
#include <sys/mman.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "quant/kernels.h"

namespace lazyslot {
namespace {

constexpr size_t kPage = 4096;

// Sums 64-bit lanes of [p, p + n) (n a multiple of 128): four independent accumulators keep enough loads
// in flight; the adds are cheaper than the loads, so this measures the memory system, not the core.
__attribute__((target("avx2"))) uint64_t ReadAvx2(const uint8_t* p, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 128) {
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

uint64_t ReadSse2(const uint8_t* p, size_t n) {
  __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 64) {
    a0 = _mm_add_epi64(a0, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i)));
    a1 = _mm_add_epi64(a1, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 16)));
    a2 = _mm_add_epi64(a2, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 32)));
    a3 = _mm_add_epi64(a3, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 48)));
  }
  const __m128i s = _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3));
  alignas(16) uint64_t lanes[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), s);
  return lanes[0] + lanes[1];
}

}  // namespace

ReadBuffer::ReadBuffer(size_t bytes) {
  bytes_ = (bytes + kPage - 1) / kPage * kPage;
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    bytes_ = 0;
    return;
  }
  data_ = static_cast<uint8_t*>(p);
  // On huge pages where the kernel offers them, as the weights are (decision 0010): with 4 KiB pages the pass
  // also measures a TLB miss per page, and on a Zen 4 VM generation then read faster than the "bandwidth".
  madvise(p, bytes_, MADV_HUGEPAGE);  // advice only: on failure the pass runs on small pages
  std::memset(data_, 0x5a, bytes_);
}

ReadBuffer::~ReadBuffer() {
  if (data_) munmap(data_, bytes_);
}

double ReadPassBytesPerSecond(ThreadPool& pool, const ReadBuffer& buf, uint64_t* checksum) {
  static const bool avx2 = quant::ActiveIsa() >= quant::Isa::kAvx2;
  const size_t units = buf.size() / kPage;  // split on page boundaries: every share stays 128-byte aligned
  std::vector<uint64_t> sums(pool.n_threads(), 0);
  const auto t0 = std::chrono::steady_clock::now();
  pool.Run([&](int ith, int nth) {
    const size_t begin = units * ith / nth * kPage, end = units * (ith + 1) / nth * kPage;
    sums[ith] = avx2 ? ReadAvx2(buf.data() + begin, end - begin) : ReadSse2(buf.data() + begin, end - begin);
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t total = 0;
  for (uint64_t s : sums) total += s;
  if (checksum) *checksum = total;
  return static_cast<double>(buf.size()) / seconds;
}

}  // namespace lazyslot
