// A persistent thread pool for data-parallel kernels: the caller and n-1 workers split an index range.
// Workers spin briefly on a generation counter before sleeping, so back-to-back matmuls in one forward pass
// do not pay a futex wake each (the per-step cost is measured in bench/).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
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

  // Calls fn(ith, nth) once on each of the nth threads (ith = 0 is the caller) and waits for all.
  // Not reentrant: only one thread may call Run at a time.
  void Run(const std::function<void(int ith, int nth)>& fn);

  // Splits [0, n) into contiguous chunks of at least `grain`, one per thread.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

  // Hands out the chunks [k * chunk, (k + 1) * chunk) of [0, n) to whichever thread asks next (one atomic
  // counter): on a shared machine a descheduled thread then delays at most one chunk, not half the work.
  // Runs inline, as one call fn(0, n), with a single thread or a single chunk.
  void ParallelForDynamic(int64_t n, int64_t chunk, const std::function<void(int64_t begin, int64_t end)>& fn);

  static int DefaultThreads();

 private:
  void WorkerLoop(int ith);

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> sleeping_{0};
};

}  // namespace lazyslot
