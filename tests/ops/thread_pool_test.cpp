// ThreadPool: Run reaches every thread once; ParallelFor, ParallelForDynamic and ParallelForRanges cover each
// index exactly once; ParallelForRanges runs a thread's own range in order and lets a fast thread take the
// chunks a slow one has not reached.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "ops/thread_pool.h"

namespace lazyslot {
namespace {

TEST(ThreadPool, RunCallsEveryThreadOnce) {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    for (int rep = 0; rep < 200; ++rep) {
      std::vector<std::atomic<int>> hits(n);
      pool.Run([&](int ith, int nth) {
        ASSERT_EQ(nth, n);
        hits[ith].fetch_add(1);
      });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads=" << n << " rep=" << rep;
    }
  }
}

TEST(ThreadPool, ParallelForsCoverEachIndexOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 7, 64, 1001}) {
      for (int64_t grain : {1, 3, 16, 5000}) {
        std::vector<std::atomic<int>> a(n), b(n);
        pool.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) a[i].fetch_add(1);
        });
        pool.ParallelForDynamic(n, grain, [&](int64_t begin, int64_t end) {
          if (threads > 1 && n > grain) {
            ASSERT_LE(end - begin, grain);
          }
          for (int64_t i = begin; i < end; ++i) b[i].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(a[i].load(), 1) << "ParallelFor n=" << n << " grain=" << grain << " threads=" << threads;
          ASSERT_EQ(b[i].load(), 1) << "Dynamic n=" << n << " grain=" << grain << " threads=" << threads;
        }
      }
    }
  }
}

TEST(ThreadPool, ParallelForRangesRunsEachChunkOnce) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 5, 64, 1001}) {
      for (int rep = 0; rep < 20; ++rep) {
        std::vector<std::atomic<int>> hits(n);
        pool.ParallelForRanges(n, [&](int64_t c) { hits[c].fetch_add(1); });
        for (int64_t c = 0; c < n; ++c) {
          ASSERT_EQ(hits[c].load(), 1) << "chunk " << c << " n=" << n << " threads=" << threads;
        }
      }
    }
  }
}

// Two threads, the worker 5 ms per chunk and the caller instant: the caller runs its own range front to
// back, then the chunks of the worker's range that the worker has not reached, from the back.
TEST(ThreadPool, ParallelForRangesLetsAFastThreadTakeASlowOnesChunks) {
  ThreadPool pool(2);
  constexpr int64_t kN = 32;
  const std::thread::id caller = std::this_thread::get_id();
  std::mutex mu;
  std::vector<int64_t> by_caller;
  int64_t by_worker = 0;
  pool.ParallelForRanges(kN, [&](int64_t c) {
    if (std::this_thread::get_id() != caller) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::lock_guard<std::mutex> lock(mu);
      ++by_worker;
      return;
    }
    std::lock_guard<std::mutex> lock(mu);
    by_caller.push_back(c);
  });
  ASSERT_EQ(static_cast<int64_t>(by_caller.size()) + by_worker, kN);
  ASSERT_LT(by_worker, kN / 2) << "the caller took none of the slow thread's chunks";
  // The caller's chunks: one range in order (its own, or both when the worker joined late) ...
  size_t i = 1;
  while (i < by_caller.size() && by_caller[i] == by_caller[i - 1] + 1) ++i;
  EXPECT_TRUE(by_caller[0] == 0 || by_caller[0] == kN / 2) << by_caller[0];
  EXPECT_EQ(i, static_cast<size_t>(kN / 2));
  // ... then the other range's remaining chunks from its back.
  for (size_t j = i + 1; j < by_caller.size(); ++j) EXPECT_EQ(by_caller[j], by_caller[j - 1] - 1) << j;
}

}  // namespace
}  // namespace lazyslot
