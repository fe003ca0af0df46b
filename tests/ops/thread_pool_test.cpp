// ThreadPool: Run reaches every thread once; ParallelFor and ParallelForDynamic cover each index exactly once.
#include <gtest/gtest.h>

#include <atomic>
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

}  // namespace
}  // namespace lazyslot
