// Per-step synchronisation cost of ThreadPool: ns per Run with an empty job, per ParallelForDynamic over a
// few chunks, and per ParallelFor too small to leave the caller (inline). A decoding step issues ~5 Runs per
// layer, so a few microseconds each would be visible next to a ~30 ms token.
// Build: the `thread_pool_bench` target; run: ./thread_pool_bench [max_threads].
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ops/thread_pool.h"

using namespace lazyslot;

namespace {

template <typename F>
double MedianNsPerCall(F&& f, int calls, int reps) {
  std::vector<double> ns;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls);
  }
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int max_threads = argc > 1 ? std::atoi(argv[1]) : ThreadPool::DefaultThreads();
  std::printf("%-8s %16s %22s %20s\n", "threads", "Run ns (median)", "Dynamic 8 chunks ns", "inline ParallelFor ns");
  for (int t = 1; t <= std::max(1, max_threads); ++t) {
    ThreadPool pool(t);
    std::atomic<int64_t> sink{0};
    const double run = MedianNsPerCall([&] { pool.Run([&](int ith, int) { sink.fetch_add(ith); }); }, 20000, 9);
    const double dyn = MedianNsPerCall(
        [&] { pool.ParallelForDynamic(8, 1, [&](int64_t b, int64_t e) { sink.fetch_add(e - b); }); }, 20000, 9);
    const double inl = MedianNsPerCall(
        [&] { pool.ParallelFor(8, 8, [&](int64_t b, int64_t e) { sink.fetch_add(e - b); }); }, 200000, 9);
    std::printf("%-8d %16.0f %22.0f %20.1f\n", t, run, dyn, inl);
  }
  return 0;
}
