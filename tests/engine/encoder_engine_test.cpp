// The engine with an encoder model (bert): embedding and rank requests of many clients packed into shared
// passes beyond --parallel, each result equal to the model's own pass on that input alone, no KV, and the
// scratch released once the work is done.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "drain.h"
#include "engine/engine.h"
#include "engine/pooling.h"
#include "model/encoder.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using namespace std::chrono_literals;
using testing::Collected;
using testing::Drain;

std::unique_ptr<Engine> MakeEncoderEngine(const std::string& model, PoolingType pooling, int n_parallel = 2) {
  EngineConfig cfg;
  cfg.model_path = testing::SharedPath(model);
  cfg.n_parallel = n_parallel;
  cfg.n_ctx = 4096;
  cfg.n_threads = 2;
  cfg.embeddings = true;
  cfg.pooling = pooling;
  auto e = Engine::Create(cfg);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(e).value() : nullptr;
}

std::vector<TokenId> Input(int i, int len) {
  std::vector<TokenId> t = {101};
  for (int j = 0; j < len; ++j) t.push_back(999 + (i * 131 + j * 17) % 9000);
  t.push_back(102);
  return t;
}

TEST(EncoderEngineTest, ManyInputsShareStepsAndMatchTheirOwnPass) {
  REQUIRE_SHARED_FILE("models/bert-tiny-f32.gguf");
  auto engine = MakeEncoderEngine("models/bert-tiny-f32.gguf", PoolingType::kMean);
  ASSERT_TRUE(engine);
  const EngineStats before = engine->Stats();
  EXPECT_EQ(before.kv_committed_bytes, 0u);
  // More inputs at once than --parallel 2: an encoder slot is only a batch row range.
  ASSERT_GE(before.slots.size(), 16u);
  constexpr int kInputs = 24;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < kInputs; ++i) {
    GenerationRequest r;
    r.prompt = Input(i, 5 + i % 7 * 5);
    r.embedding = true;
    auto s = engine->Submit(r);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    streams.push_back(*s);
  }
  ThreadPool pool(1);
  Encoder alone(engine->model(), pool);
  const int64_t n_embd = engine->model().hparams().n_embd;
  for (int i = 0; i < kInputs; ++i) {
    Collected got = Drain(*streams[i]);
    ASSERT_FALSE(got.error) << got.done.error.ToString();
    const std::vector<TokenId> in = Input(i, 5 + i % 7 * 5);
    Batch b;
    for (size_t j = 0; j < in.size(); ++j) b.Add(in[j], static_cast<int32_t>(j), 0, Batch::kHidden);
    ForwardOutput out;
    ASSERT_TRUE(alone.Run(b, &out).ok());
    const auto want =
        PoolEmbedding(PoolingType::kMean, out.hidden.data(), static_cast<int64_t>(in.size()), n_embd);
    ASSERT_EQ(got.done.embedding.size(), want.size());
    float max_diff = 0;
    for (size_t d = 0; d < want.size(); ++d)
      max_diff = std::max(max_diff, std::fabs(got.done.embedding[d] - want[d]));
    EXPECT_LE(max_diff, 1e-5f) << "input " << i;
    EXPECT_EQ(got.done.n_prompt, static_cast<int32_t>(in.size()));
  }
  // Nothing kept: no KV, and the activations go back once no work is left.
  EngineStats after;
  for (int i = 0; i < 200; ++i) {
    after = engine->Stats();
    if (after.scratch_bytes == 0) break;
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(after.scratch_bytes, 0u);
  EXPECT_EQ(after.kv_committed_bytes, 0u);
  EXPECT_EQ(after.prompt_tokens_total - before.prompt_tokens_total, [] {
    uint64_t n = 0;
    for (int i = 0; i < kInputs; ++i) n += Input(i, 5 + i % 7 * 5).size();
    return n;
  }());
}

TEST(EncoderEngineTest, RankUnpooledAndRefusals) {
  REQUIRE_SHARED_FILE("models/bert-rerank-tiny-f32.gguf");
  REQUIRE_SHARED_FILE("reference/bert-rerank-tiny-f32.json");
  auto engine = MakeEncoderEngine("models/bert-rerank-tiny-f32.gguf", PoolingType::kRank);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->n_cls_out(), 1);
  std::ifstream in(testing::SharedPath("reference/bert-rerank-tiny-f32.json"));
  const nlohmann::json ref = nlohmann::json::parse(in);
  for (const auto& r : ref["rank"]) {
    GenerationRequest g;
    g.prompt = r["tokens"].get<std::vector<TokenId>>();
    g.embedding = true;
    auto s = engine->Submit(g);
    ASSERT_TRUE(s.ok());
    Collected got = Drain(**s);
    ASSERT_FALSE(got.error);
    ASSERT_EQ(got.done.embedding.size(), 1u);
    EXPECT_NEAR(got.done.embedding[0], r["score"].get<double>(), 1e-3);
  }
  // Every token's row, unpooled.
  GenerationRequest u;
  u.prompt = Input(0, 6);
  u.embedding = true;
  u.unpooled = true;
  auto us = engine->Submit(u);
  ASSERT_TRUE(us.ok());
  Collected rows = Drain(**us);
  ASSERT_FALSE(rows.error);
  EXPECT_EQ(rows.done.embedding.size(), u.prompt.size() * engine->model().hparams().n_embd);
  // An encoder does not generate, and its inputs end at the learned positions.
  GenerationRequest text;
  text.prompt = {101, 2054};
  auto refused = engine->Submit(text);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kUnimplemented);
  EXPECT_EQ(engine->n_ctx_slot(), engine->model().hparams().n_ctx_train);
  GenerationRequest long_input;
  long_input.prompt = Input(1, engine->model().hparams().n_ctx_train);
  long_input.embedding = true;
  auto too_long = engine->Submit(long_input);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), Code::kOutOfRange);
}

TEST(EncoderEngineTest, RerankNeedsAClassifierHead) {
  REQUIRE_SHARED_FILE("models/bert-tiny-f32.gguf");
  EngineConfig cfg;
  cfg.model_path = testing::SharedPath("models/bert-tiny-f32.gguf");
  cfg.embeddings = true;
  cfg.pooling = PoolingType::kRank;
  cfg.n_threads = 1;
  auto e = Engine::Create(cfg);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("classifier head"), std::string::npos) << e.status().message();
}

}  // namespace
}  // namespace lazyslot
