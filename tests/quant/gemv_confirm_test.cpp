// GemvConfirmation (quant/gemv_confirm.h): the decode-time confirmation of the gemv choice, fed with timings
// chosen by the test: which candidate each visit of a matrix runs, when and how it settles, the margin that
// keeps the start-up choice, the cap on samples, and its summary line.
#include "quant/gemv_confirm.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace lazyslot::quant {
namespace {

float DotA(const void*, const void*, int64_t) { return 1.0f; }
float DotB(const void*, const void*, int64_t) { return 2.0f; }
float DotC(const void*, const void*, int64_t) { return 3.0f; }
void TileA(const void*, size_t, int64_t, const void*, size_t, int64_t, int64_t, float*, int64_t) {}

std::vector<GemvCandidate> ThreeCandidates() {
  return {{"avx512", DotA, TileA, 30.0}, {"avx2 1-row", DotB, nullptr, 29.0}, {"avx2", DotC, nullptr, 25.0}};
}

// One decode step: every matrix of `keys` once, candidate k taking seconds[k] per product.
int Step(GemvConfirmation& c, const std::vector<int>& keys, const std::vector<double>& seconds,
         std::vector<std::vector<int>>* ran = nullptr) {
  int settled_at = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const GemvPick p = c.Pick(&keys[i]);
    if (p.candidate < 0) continue;
    if (ran) (*ran)[i].push_back(p.candidate);
    if (c.Report(&keys[i], p.candidate, seconds[p.candidate], 1e10)) ++settled_at;
  }
  return settled_at;
}

TEST(GemvConfirmation, CandidatesTakeWholeStepsInTurnAndTheShortestPassWins) {
  GemvConfirmation c("q6_K", ThreeCandidates());
  const std::vector<int> keys(5);
  std::vector<std::vector<int>> ran(keys.size());
  int steps = 0, settles = 0;
  while (!c.settled() && steps < 100) {
    settles += Step(c, keys, {3.0, 2.0, 4.0}, &ran);
    ++steps;
  }
  ASSERT_TRUE(c.settled());
  EXPECT_EQ(settles, 1);
  // One warm-up step on the start-up choice, then kVisits rounds of the three candidates.
  EXPECT_EQ(steps, 1 + 3 * GemvConfirmation::kVisits);
  for (const std::vector<int>& r : ran) {
    ASSERT_EQ(r.size(), static_cast<size_t>(steps));
    EXPECT_EQ(r[0], 0);
    for (int s = 1; s < steps; ++s) EXPECT_EQ(r[s], (s - 1) % 3) << "step " << s;
  }
  EXPECT_EQ(c.winner(), 1);
  const GemvPick p = c.Pick(&keys[0]);
  EXPECT_EQ(p.dot, &DotB);
  EXPECT_EQ(p.tile, nullptr);
  EXPECT_EQ(p.candidate, -1);
  // 5 matrices of 10 GB in 2 s each: 5 GB/s, the others 3.3 and 2.5.
  EXPECT_EQ(c.Summary(), "q6_K gemv in decode avx2 1-row 5.0 GB/s (avx512 3.3, avx2 2.5) over 5 matrices, " +
                             std::to_string(GemvConfirmation::kVisits) + " passes each, replacing avx512");
}

TEST(GemvConfirmation, TheStartUpChoiceStaysUnlessBeatenByTheMargin) {
  GemvConfirmation c("q4_K", ThreeCandidates());
  const std::vector<int> keys(3);
  const double close = 1.0 * (1.0 - GemvConfirmation::kMargin / 2);
  for (int s = 0; s < 50 && !c.settled(); ++s) Step(c, keys, {1.0, close, 1.5});
  ASSERT_TRUE(c.settled());
  EXPECT_EQ(c.winner(), 0);
  EXPECT_EQ(c.Pick(&keys[0]).dot, &DotA);
  EXPECT_EQ(c.Pick(&keys[0]).tile, &TileA);
  EXPECT_EQ(c.Summary().find("replacing"), std::string::npos) << c.Summary();
}

TEST(GemvConfirmation, ProductsWithoutAKeyAreNotSamples) {
  GemvConfirmation c("q8_0", ThreeCandidates());
  for (int i = 0; i < 100; ++i) {
    const GemvPick p = c.Pick(nullptr);
    EXPECT_EQ(p.dot, &DotA);
    EXPECT_EQ(p.candidate, -1);
  }
  EXPECT_FALSE(c.settled());
  // A report for a matrix Pick never saw, or of a candidate out of range, is ignored.
  int key = 0;
  EXPECT_FALSE(c.Report(&key, 0, 1.0, 1.0));
  const GemvPick p = c.Pick(&key);
  EXPECT_FALSE(c.Report(&key, 7, 1.0, 1.0));
  EXPECT_FALSE(c.Report(&key, p.candidate, 1.0, 1.0));  // the warm-up visit
  EXPECT_FALSE(c.settled());
}

TEST(GemvConfirmation, AMatrixThatStopsComingSettlesAfterTheCap) {
  GemvConfirmation c("q4_K", ThreeCandidates());
  int gone = 0;
  const GemvPick g = c.Pick(&gone);
  c.Report(&gone, g.candidate, 1.0, 1.0);  // warm-up only, then never again (an unloaded model)
  const std::vector<int> keys(1);
  int64_t products = 0;
  while (!c.settled() && products < 2 * GemvConfirmation::kMaxSamples) {
    Step(c, keys, {2.0, 3.0, 1.0});
    ++products;
  }
  ASSERT_TRUE(c.settled());
  EXPECT_EQ(products, GemvConfirmation::kMaxSamples + 1);  // + the warm-up visit
  EXPECT_EQ(c.winner(), 2);
  EXPECT_NE(c.Summary().find("over 1 matrices"), std::string::npos) << c.Summary();
}

TEST(GemvConfirmation, OneCandidateIsSettledFromTheStart) {
  GemvConfirmation c("q8_0", {{"avx512", DotA, TileA, 30.0}});
  EXPECT_TRUE(c.settled());
  int key = 0;
  const GemvPick p = c.Pick(&key);
  EXPECT_EQ(p.dot, &DotA);
  EXPECT_EQ(p.candidate, -1);
}

// The process-wide confirmation of one format, fed by four threads at once (several models decoding): it
// settles once, and every product after that takes the winner without being a sample. The threads start
// together and each decodes until it has seen the settled pick and then 20 steps more (a cap of 100000 steps
// fails the test if it never settles), so a thread that the scheduler runs late or alone still sees both.
TEST(GemvConfirmation, ThreadsDecodingAtOnceSettleItOnce) {
  const int f = kQ5_K;
  EXPECT_FALSE(GemvConfirmationPending());
  BeginGemvConfirmation(f, ThreeCandidates());
  BeginGemvConfirmation(f, {{"other", DotC, nullptr, 1.0}, {"other 1-row", DotB, nullptr, 1.0}});  // ignored
  EXPECT_TRUE(GemvConfirmationPending());
  std::vector<std::thread> threads;
  std::vector<int> keys(4 * 8);
  std::vector<int> after_settled(4, 0), samples_after(4, 0), steps(4, 0);
  std::atomic<int> ready{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < 4) std::this_thread::yield();
      int left = -1;  // steps still to run once the settled pick was seen
      for (int step = 0; step < 100000 && left != 0; ++step, ++steps[t]) {
        if (left > 0) --left;
        for (int k = 0; k < 8; ++k) {
          const void* key = &keys[8 * t + k];
          const GemvPick p = PickGemv(f, key);
          if (p.candidate < 0) {
            after_settled[t] += p.dot == &DotC ? 1 : 0;
            if (left < 0) left = 20;
            continue;
          }
          if (left >= 0) ++samples_after[t];
          ReportGemv(f, key, p.candidate, p.candidate == 2 ? 1e-3 : 2e-3, 1e6);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_FALSE(GemvConfirmationPending());
  const std::string summary = GemvConfirmationSummary(f);
  EXPECT_EQ(summary.rfind("q5_K gemv in decode avx2 ", 0), 0u) << summary;
  for (int t = 0; t < 4; ++t) {
    EXPECT_GE(after_settled[t], 20 * 8) << "thread " << t << " after " << steps[t] << " steps";
    EXPECT_EQ(samples_after[t], 0) << "thread " << t;
    EXPECT_LT(steps[t], 100000) << "thread " << t;
  }
  const GemvPick p = PickGemv(f, &keys[0]);
  EXPECT_EQ(p.dot, &DotC);
  EXPECT_EQ(p.candidate, -1);
  EXPECT_EQ(GemvConfirmationSummary(kQ4_K), "");
}

}  // namespace
}  // namespace lazyslot::quant
