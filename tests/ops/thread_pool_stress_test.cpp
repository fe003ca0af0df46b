// ThreadPool under stress, written for the sanitizer suites: shares write plain (non-atomic) memory, so TSan
// reports a share that runs on two threads at once or whose writes the caller reads without a happens-before
// edge, and ASan (detect_stack_use_after_return) reports a share that touches the caller's stack after Run.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "ops/thread_pool.h"

namespace lazyslot {
namespace {

// Per-share scratch like the forward pass's attention scratch: grown inside the share, never shared.
struct ShareScratch {
  std::vector<int64_t> buf;
  int64_t runs = 0;
};

TEST(ThreadPoolStress, PlainShareWritesAreOwnedAndVisibleAfterRun) {
  for (int n : {2, 3}) {
    ThreadPool pool(n);
    std::vector<ShareScratch> scratch(n);
    std::vector<int64_t> result(n, -1);
    std::mt19937 rng(static_cast<uint32_t>(n));
    for (int64_t step = 0; step < 1000; ++step) {
      // Mostly tiny steps (workers arrive late and skip), sometimes longer ones (workers join and take shares).
      const int work = rng() % 8 == 0 ? 5000 : static_cast<int>(rng() % 64);
      pool.Run([&](int ith, int nth) {
        ASSERT_EQ(nth, n);
        ShareScratch& s = scratch[ith];
        s.buf.resize(static_cast<size_t>(work) + 1);
        int64_t acc = step;
        for (int i = 0; i <= work; ++i) acc += (s.buf[i] = i ^ step);
        ++s.runs;
        result[ith] = acc;
      });
      int64_t expect = step;
      for (int i = 0; i <= work; ++i) expect += i ^ step;
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(result[i], expect) << "threads=" << n << " step=" << step << " share=" << i;
        ASSERT_EQ(scratch[i].runs, step + 1) << "threads=" << n << " share=" << i;
      }
    }
  }
}

// Jobs capture counters and arrays on the caller's stack (as MatMulMulti and the attention step do); the
// caller reuses that stack right after Run returns, so a late share would corrupt it or trip ASan.
int64_t StackJob(ThreadPool& pool, int64_t n, int64_t chunk, int salt) {
  int64_t cells[64];
  for (int64_t& c : cells) c = -1;
  pool.ParallelForDynamic(n, chunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) cells[i] = i * 3 + salt;
  });
  int64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += cells[i];
  return sum;
}

TEST(ThreadPoolStress, StackCapturedJobsNeverOutliveRun) {
  ThreadPool pool(2);
  std::mt19937 rng(7);
  for (int rep = 0; rep < 4000; ++rep) {
    const int64_t n = 1 + rng() % 64;
    const int64_t chunk = 1 + rng() % 4;
    const int salt = rep % 5;
    const int64_t got = StackJob(pool, n, chunk, salt);
    ASSERT_EQ(got, 3 * n * (n - 1) / 2 + salt * n) << "rep=" << rep << " n=" << n << " chunk=" << chunk;
    // Now and then let the worker fall asleep, so the next step has to wake it.
    if (rep % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace
}  // namespace lazyslot
