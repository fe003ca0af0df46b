// The router under --memory-budget (decision 0007) and --sleep-idle-seconds: three models generating at
// once under a budget that fits only some of them never pass it (the budget's figure and the process RSS
// sampled every few ms) and every request succeeds; what could never fit is refused at once with the
// figures; a load under a full budget releases the least recently used idle model's weights, or unloads it;
// a model idle for sleep_idle_s is destroyed, listed as sleeping, and answers the same when next acquired.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "core/vm.h"
#include "router/router.h"
#include "router_test_util.h"

namespace lazyslot {
namespace {

using namespace std::chrono_literals;
using testing::Generate;
using testing::MakeRouter;
using testing::StatusOf;
using testing::TempModelsDir;

// What one model of `base` charges before any request.
BudgetCharge FixedCost(const std::string& path, EngineConfig base) {
  base.model_path = path;
  Result<BudgetCharge> c = Engine::EstimateCharge(base);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : BudgetCharge{};
}

uint64_t VmRssBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

constexpr uint64_t kMiB = 1 << 20;

TEST(RouterBudgetTest, ThreeModelsGeneratingAtOnceNeverPassTheBudget) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  REQUIRE_SHARED_FILE("models/qwen2-tiny-f32.gguf");
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  TempModelsDir dir;
  dir.Link("qwen3-tiny-f32.gguf", "a.gguf");
  dir.Link("qwen2-tiny-f32.gguf", "b.gguf");
  dir.Link("stories260K.gguf", "c.gguf");
  RouterConfig cfg = testing::DirConfig(dir.path());
  cfg.base.n_batch = 64;
  const BudgetCharge fa = FixedCost(dir.Path("a.gguf"), cfg.base);
  const BudgetCharge fb = FixedCost(dir.Path("b.gguf"), cfg.base);
  const BudgetCharge fc = FixedCost(dir.Path("c.gguf"), cfg.base);
  // Two of the models with room for their KV, never all three at once.
  cfg.memory_budget = fa.total() + fb.total() + fc.total() / 2;
  cfg.max_wait_s = 120;

  // The baseline before any model exists: this process's own memory (test binary, libraries).
  malloc_trim(0);
  const uint64_t rss0 = VmRssBytes();
  auto router = MakeRouter(cfg);
  ASSERT_TRUE(router);
  const uint64_t limit = router->budget().limit;
  ASSERT_EQ(limit, cfg.memory_budget);

  std::atomic<bool> stop{false};
  uint64_t max_used = 0, max_rss = 0, samples = 0;
  bool over = false;
  std::thread sampler([&] {
    while (!stop.load()) {
      const uint64_t used = router->budget().used;
      const uint64_t rss = VmRssBytes();
      max_used = std::max(max_used, used);
      max_rss = std::max(max_rss, rss > rss0 ? rss - rss0 : 0);
      if (used > limit) over = true;
      ++samples;
      std::this_thread::sleep_for(2ms);
    }
  });
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (const char* id : {"a", "b", "c"}) {
    clients.emplace_back([&, id = std::string(id)] {
      for (int round = 0; round < 3; ++round) {
        Result<ModelLease> lease = router->Acquire(id);
        ASSERT_TRUE(lease.ok()) << id << ": " << lease.status().ToString();
        if (Generate(*lease, 24).size() == 24u) ++ok;
      }
    });
  }
  for (auto& t : clients) t.join();
  stop = true;
  sampler.join();
  EXPECT_EQ(ok.load(), 9);
  EXPECT_FALSE(over) << "budget used passed " << limit;
  EXPECT_LE(max_used, limit);
  EXPECT_LE(router->memory_budget()->peak(), limit);
  // RSS above the baseline stays within the budget, plus what the budget does not cover (thread stacks
  // and malloc's per-thread arenas of the clients and schedulers).
  // Not under a sanitizer, whose shadow memory and quarantine grow with every allocation.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_LE(max_rss, limit + 16 * kMiB) << "max RSS above baseline " << max_rss / kMiB << " MiB";
#endif
  EXPECT_GT(samples, 10u);
  std::printf("budget %.1f MiB: max used %.1f MiB, max RSS above baseline %.1f MiB, %llu samples\n",
              limit / 1048576.0, max_used / 1048576.0, max_rss / 1048576.0,
              static_cast<unsigned long long>(samples));
}

TEST(RouterBudgetTest, WhatCanNeverFitIsRefusedAtOnceWithTheFigures) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  TempModelsDir dir;
  dir.Link("qwen3-tiny-f32.gguf", "a.gguf");
  RouterConfig cfg = testing::DirConfig(dir.path());
  const BudgetCharge f = FixedCost(dir.Path("a.gguf"), cfg.base);
  {
    // The model alone does not fit: the load is refused without waiting.
    RouterConfig small = cfg;
    small.memory_budget = f.total() - 1;
    auto router = MakeRouter(small);
    ASSERT_TRUE(router);
    const auto t0 = std::chrono::steady_clock::now();
    Result<ModelLease> lease = router->Acquire("a");
    ASSERT_FALSE(lease.ok());
    EXPECT_EQ(lease.status().code(), Code::kResourceExhausted);
    EXPECT_NE(lease.status().message().find(std::to_string(f.total())), std::string::npos)
        << lease.status().message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_EQ(router->budget().used, 0u);
  }
  // The model fits with 64 cells of KV (1 KiB each, in 4 page-aligned runs); a 200-token prompt never will.
  RouterConfig c2 = cfg;
  c2.memory_budget = f.total() + 64 * 1024;
  auto router = MakeRouter(c2);
  ASSERT_TRUE(router);
  Result<ModelLease> lease = router->Acquire("a");
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  std::vector<TokenId> prompt(200, 5);
  auto stream = lease->engine().Submit(testing::Greedy(prompt, 4));
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.status().code(), Code::kResourceExhausted);
  const std::string msg = stream.status().message();
  EXPECT_NE(msg.find("--memory-budget " + std::to_string(c2.memory_budget)), std::string::npos) << msg;
  EXPECT_NE(msg.find("bytes of KV"), std::string::npos) << msg;
  // A request that fits still runs.
  EXPECT_EQ(Generate(*lease, 4).size(), 4u);
  EXPECT_LE(router->memory_budget()->peak(), c2.memory_budget);
}

TEST(RouterBudgetTest, ALoadUnderAFullBudgetReleasesOrUnloadsTheLeastRecentlyUsedIdleModel) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  TempModelsDir dir;
  for (const char* id : {"a", "b", "c"}) dir.Link("qwen3-tiny-f32.gguf", std::string(id) + ".gguf");
  RouterConfig cfg = testing::DirConfig(dir.path());
  cfg.base.n_batch = 16;  // a small scratch, so the weights must go
  const BudgetCharge f = FixedCost(dir.Path("a.gguf"), cfg.base);
  ASSERT_GT(f.weights, 2 * f.scratch + 2 * kMiB);
  {
    // Two models and a third's overhead: loading c releases the weights of a (used before b), not b's.
    RouterConfig two = cfg;
    two.memory_budget = 2 * f.total() + f.overhead + kMiB;
    auto router = MakeRouter(two);
    ASSERT_TRUE(router);
    std::vector<TokenId> want_a;
    {
      Result<ModelLease> a = router->Acquire("a");
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      want_a = Generate(*a, 8);
    }
    {
      Result<ModelLease> b = router->Acquire("b");
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      Generate(*b, 8);
    }
    Result<ModelLease> c = router->Acquire("c");
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(Generate(*c, 8).size(), 8u);
    Result<ModelInfo> ia = router->Info("a"), ib = router->Info("b");
    ASSERT_TRUE(ia.ok() && ib.ok());
    EXPECT_EQ(ia->status, ModelStatus::kSleeping);
    EXPECT_EQ(ia->budget_charge.weights, 0u);
    EXPECT_EQ(ib->status, ModelStatus::kLoaded);
    EXPECT_EQ(ib->budget_charge.weights, f.weights);
    EXPECT_LE(router->memory_budget()->peak(), two.memory_budget);
    c->Release();
    // a wakes (its weights charged again, b's released now) and answers the same.
    Result<ModelLease> a = router->Acquire("a");
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(Generate(*a, 8), want_a);
    EXPECT_EQ(router->Info("a")->loads, 1u);
    EXPECT_EQ(router->Info("b")->budget_charge.weights, 0u);
    EXPECT_LE(router->memory_budget()->peak(), two.memory_budget);
  }
  {
    // Room for one model only: loading b unloads a.
    RouterConfig one = cfg;
    one.memory_budget = f.total() + f.overhead / 2;
    auto router = MakeRouter(one);
    ASSERT_TRUE(router);
    {
      Result<ModelLease> a = router->Acquire("a");
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      Generate(*a, 8);
    }
    Result<ModelLease> b = router->Acquire("b");
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(Generate(*b, 8).size(), 8u);
    EXPECT_EQ(StatusOf(*router, "a"), ModelStatus::kUnloaded);
    EXPECT_EQ(router->Info("a")->budget_charged_bytes, 0u);
    EXPECT_LE(router->memory_budget()->peak(), one.memory_budget);
  }
}

TEST(RouterBudgetTest, SleepIdleDestroysTheEngineAndTheNextAcquireLoadsItAgain) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "story.gguf");
  RouterConfig cfg = testing::DirConfig(dir.path());
  cfg.sleep_idle_s = 0.3;
  cfg.memory_budget = 256 * kMiB;
  cfg.autoload = false;  // a sleeping model wakes anyway
  auto router = MakeRouter(cfg);
  ASSERT_TRUE(router);
  ASSERT_TRUE(router->Load("story").ok());
  std::vector<TokenId> want;
  {
    Result<ModelLease> s = router->Acquire("story");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    want = Generate(*s, 16);
    EXPECT_GT(router->Info("story")->budget_charged_bytes, 0u);
  }
  bool slept = false;
  for (int i = 0; i < 300 && !slept; ++i) {
    Result<ModelInfo> m = router->Info("story");
    // The status turns to sleeping when the engine is let go; its account is refunded once it is destroyed.
    slept = m.ok() && m->status == ModelStatus::kSleeping && m->weights_mapped_bytes == 0 &&
            router->budget().used == 0;
    if (!slept) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(slept);
  EXPECT_FALSE(router->Info("story")->failed);
  EXPECT_EQ(router->Info("story")->budget_charged_bytes, 0u);
  EXPECT_EQ(router->budget().used, 0u);
  Result<ModelLease> s = router->Acquire("story");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Generate(*s, 16), want);
  EXPECT_EQ(router->Info("story")->loads, 2u);
}

}  // namespace
}  // namespace lazyslot
