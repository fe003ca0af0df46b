// Engines sharing one SharedCompute (the router's models): two models generating at once interleave their
// steps on one pool and give exactly what each gives alone; ReleaseIdle gives back an idle engine's KV,
// scratch and weight pages, and the next request pages the weights back in.
#include <gtest/gtest.h>

#include <thread>

#include "drain.h"
#include "engine/engine.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using testing::Collected;
using testing::Drain;

std::unique_ptr<Engine> Make(const std::string& model, std::shared_ptr<SharedCompute> compute) {
  EngineConfig cfg;
  cfg.model_path = testing::SharedPath(model);
  cfg.n_parallel = 2;
  cfg.n_ctx = 512;
  cfg.n_threads = 2;
  cfg.compute = std::move(compute);
  auto e = Engine::Create(cfg);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(e).value() : nullptr;
}

GenerationRequest Greedy(std::vector<TokenId> prompt, int32_t n) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.n_predict = n;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  return r;
}

TEST(SharedComputeTest, TwoModelsInterleaveAndMatchTheirSoloRuns) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  const GenerationRequest a = Greedy({1, 20, 30, 40}, 48), b = Greedy({1, 71, 294, 436}, 48);
  std::vector<TokenId> solo_a, solo_b;
  {
    auto ea = Make("models/stories260K.gguf", nullptr);
    auto eb = Make("models/qwen3-tiny-f32.gguf", nullptr);
    ASSERT_TRUE(ea && eb);
    solo_a = Drain(**ea->Submit(a)).tokens;
    solo_b = Drain(**eb->Submit(b)).tokens;
  }
  auto compute = std::make_shared<SharedCompute>(2);
  auto ea = Make("models/stories260K.gguf", compute);
  auto eb = Make("models/qwen3-tiny-f32.gguf", compute);
  ASSERT_TRUE(ea && eb);
  auto sa = ea->Submit(a);
  auto sb = eb->Submit(b);
  ASSERT_TRUE(sa.ok() && sb.ok());
  Collected ga, gb;
  std::thread ta([&] { ga = Drain(**sa); });
  std::thread tb([&] { gb = Drain(**sb); });
  ta.join();
  tb.join();
  EXPECT_EQ(ga.tokens, solo_a);
  EXPECT_EQ(gb.tokens, solo_b);
  EXPECT_EQ(ga.tokens.size(), 48u);
}

TEST(SharedComputeTest, ReleaseIdleGivesBackKvScratchAndWeights) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  auto e = Make("models/qwen3-tiny-f32.gguf", std::make_shared<SharedCompute>(2));
  ASSERT_TRUE(e);
  const std::vector<TokenId> want = Drain(**e->Submit(Greedy({1, 71, 294, 436}, 16))).tokens;
  ASSERT_GT(e->Stats().kv_committed_bytes, 0u);  // the finished request's KV is kept for reuse
  ASSERT_GT(e->Memory().weights_resident, 0u);
  Result<uint64_t> released = e->ReleaseIdle(/*weights=*/true);
  ASSERT_TRUE(released.ok()) << released.status().ToString();
  EXPECT_GT(*released, 0u);
  EXPECT_EQ(e->Stats().kv_committed_bytes, 0u);
  EXPECT_EQ(e->Stats().scratch_bytes, 0u);
  EXPECT_TRUE(e->Stats().weights_released);
  EXPECT_LT(e->Memory().weights_resident, 64u * 1024);
  // The next request pages the weights back and answers the same.
  EXPECT_EQ(Drain(**e->Submit(Greedy({1, 71, 294, 436}, 16))).tokens, want);
  EXPECT_GT(e->Memory().weights_resident, 64u * 1024);
}

}  // namespace
}  // namespace lazyslot
