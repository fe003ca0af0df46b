// A persistent thread pool for data-parallel kernels: the caller and n-1 workers split an index range.
// Workers spin briefly on a generation counter before sleeping, so back-to-back matmuls in one forward pass
// do not pay a futex wake each (the per-step cost is measured in bench/thread_pool_bench.cpp).
// Shares are handed out from a counter and a worker joins a step only while the caller is still working on
// it: on a busy machine a descheduled worker is simply skipped instead of stalling every step.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace lazyslot {

class ThreadPool {
 public:
  // n_threads counts the calling thread; 0 means the number of physical cores.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Calls fn(ith, nth) once for each share ith < nth (nth = n_threads()) and returns when all have returned.
  // Shares go to whichever threads ask first (the caller and the workers that wake in time), so one thread
  // may run several shares, one after the other; no share runs twice or on two threads at once.
  // Not reentrant: only one thread may call Run at a time.
  void Run(const std::function<void(int ith, int nth)>& fn);

  // Splits [0, n) into contiguous chunks of at least `grain`, one per thread.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

  // Hands out the chunks [k * chunk, (k + 1) * chunk) of [0, n) to whichever thread asks next (one atomic
  // counter): on a shared machine a descheduled thread then delays at most one chunk, not half the work.
  // Runs inline, as one call fn(0, n), with a single thread or a single chunk.
  void ParallelForDynamic(int64_t n, int64_t chunk, const std::function<void(int64_t begin, int64_t end)>& fn);

  // Splits the chunks [0, n) into one contiguous range per thread; each thread runs its range's chunks
  // in order, front to back, then takes the chunks left in the other ranges from their backs. A generating
  // step streams the weights: a thread's next chunk then starts where its last one ended, so the hardware
  // prefetcher keeps its stream (with chunks handed out in turn, each new chunk pays a cold start), while a
  // descheduled or slower thread still leaves its last chunks to the others. fn(c) runs each chunk once.
  // Runs inline, in order, with a single thread or a single chunk.
  void ParallelForRanges(int64_t n, const std::function<void(int64_t chunk)>& fn);

  static int DefaultThreads();

 private:
  void WorkerLoop(int ith);

  int n_threads_;
  std::vector<std::thread> workers_;
  // Runs shares of the current job until none are left.
  void TakeShares();

  static constexpr uint64_t kClosed = uint64_t{1} << 31;
  const std::function<void(int, int)>* job_ = nullptr;  // written only while no worker is joined
  std::atomic<int> next_share_{0};
  std::atomic<uint64_t> generation_{0};
  // (generation & 0xffffffff) << 32 | kClosed once the caller finished its shares | workers joined.
  std::atomic<uint64_t> join_{0};
  std::atomic<uint32_t> done_{0};  // joined workers that have finished
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> sleeping_{0};
  // ParallelForRanges: per thread's range, (back << 32 | front) of the chunks not yet taken, one cache
  // line each.
  struct alignas(64) Range {
    std::atomic<uint64_t> bounds{0};
  };
  std::unique_ptr<Range[]> ranges_;
};

}  // namespace lazyslot
