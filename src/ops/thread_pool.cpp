// Thread pool implementation: generation counter + spin-then-sleep workers.
#include "ops/thread_pool.h"

#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace lazyslot {
namespace {
constexpr int kSpinIterations = 1 << 14;  // ~ tens of microseconds before a worker sleeps
}

int ThreadPool::DefaultThreads() {
  // Physical cores: distinct (physical id, core id) pairs in /proc/cpuinfo; fall back to hardware_concurrency.
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, phys = "0";
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "physical id") phys = value;
    if (key == "core id") cores.insert({phys, value});
  }
  int n = static_cast<int>(cores.size());
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  return n > 0 ? n : 1;
}

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads > 0 ? n_threads : DefaultThreads()), ranges_(new Range[n_threads_]) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::TakeShares() {
  for (int k; (k = next_share_.fetch_add(1, std::memory_order_relaxed)) < n_threads_;) (*job_)(k, n_threads_);
}

void ThreadPool::WorkerLoop(int) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen) {
      if (++spins < kSpinIterations) {
        _mm_pause();
        continue;
      }
      std::unique_lock<std::mutex> lock(mu_);
      sleeping_.fetch_add(1);
      cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      sleeping_.fetch_sub(1);
      break;
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    // Join step `seen` only if it is still the open one; a late worker skips it (the caller did its shares).
    const uint64_t tag = (seen & 0xffffffffu) << 32;
    uint64_t w = join_.load(std::memory_order_acquire);
    bool joined = false;
    while ((w & ~(kClosed | 0xffffffffu)) == tag && (w & kClosed) == 0) {
      if (join_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel)) {
        joined = true;
        break;
      }
    }
    if (!joined) continue;
    TakeShares();  // job_ stays valid: the caller waits for every joined worker before it returns
    done_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::Run(const std::function<void(int, int)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  next_share_.store(0, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  const uint64_t next_gen = generation_.load(std::memory_order_relaxed) + 1;
  join_.store((next_gen & 0xffffffffu) << 32, std::memory_order_release);
  {
    // Publishing under the mutex pairs with the sleepers' predicate check, so no wake-up is lost.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.store(next_gen, std::memory_order_release);
  }
  if (sleeping_.load() > 0) cv_.notify_all();
  TakeShares();
  // Close the step: workers that have not joined by now never will; wait for those that did.
  const uint32_t joined = static_cast<uint32_t>(join_.fetch_or(kClosed, std::memory_order_acq_rel) & 0xffffffffu);
  // Spin briefly, then yield: on a loaded machine a descheduled worker must not cost us a whole time slice.
  for (int spins = 0; done_.load(std::memory_order_acquire) != joined; ++spins) {
    if (spins < 4096) {
      _mm_pause();
    } else {
      std::this_thread::yield();
    }
  }
  job_ = nullptr;
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int64_t max_chunks = (n + grain - 1) / grain;
  if (n_threads_ == 1 || max_chunks == 1) {
    fn(0, n);
    return;
  }
  Run([&](int ith, int nth) {
    int64_t chunks = std::min<int64_t>(nth, max_chunks);
    if (ith >= chunks) return;
    int64_t begin = n * ith / chunks;
    int64_t end = n * (ith + 1) / chunks;
    if (begin < end) fn(begin, end);
  });
}

void ThreadPool::ParallelForDynamic(int64_t n, int64_t chunk,
                                    const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (chunk < 1) chunk = 1;
  const int64_t n_chunks = (n + chunk - 1) / chunk;
  if (n_threads_ == 1 || n_chunks == 1) {
    fn(0, n);
    return;
  }
  std::atomic<int64_t> next{0};
  Run([&](int, int) {
    for (int64_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < n_chunks;) {
      fn(c * chunk, std::min(n, (c + 1) * chunk));
    }
  });
}

namespace {

// Takes one chunk of a range: from the front (its owner) or the back (another thread); -1 when it is empty.
int64_t TakeChunk(std::atomic<uint64_t>& bounds, bool front) {
  uint64_t b = bounds.load(std::memory_order_relaxed);
  for (;;) {
    const uint32_t lo = static_cast<uint32_t>(b), hi = static_cast<uint32_t>(b >> 32);
    if (lo >= hi) return -1;
    const uint64_t next = front ? b + 1 : b - (uint64_t{1} << 32);
    if (bounds.compare_exchange_weak(b, next, std::memory_order_relaxed)) return front ? lo : hi - 1;
  }
}

}  // namespace

void ThreadPool::ParallelForRanges(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n == 1 || n > int64_t{0xffffffff}) {
    for (int64_t c = 0; c < n; ++c) fn(c);
    return;
  }
  const int nth = n_threads_;
  for (int t = 0; t < nth; ++t) {
    const uint64_t lo = static_cast<uint64_t>(n * t / nth), hi = static_cast<uint64_t>(n * (t + 1) / nth);
    ranges_[t].bounds.store(hi << 32 | lo, std::memory_order_relaxed);
  }
  Run([&](int ith, int) {  // Run's start publishes the stores above (release/acquire on generation_)
    for (int64_t c; (c = TakeChunk(ranges_[ith].bounds, true)) >= 0;) fn(c);
    for (int k = 1; k < nth; ++k) {
      std::atomic<uint64_t>& other = ranges_[(ith + k) % nth].bounds;
      for (int64_t c; (c = TakeChunk(other, false)) >= 0;) fn(c);
    }
  });
}

}  // namespace lazyslot
