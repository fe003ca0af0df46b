// A Qwen3-Reranker-style model: a decoder whose classifier head cls.output holds two rows of its output
// matrix (llama.cpp converts Qwen3-Reranker so: the "yes" and "no" rows). Rank pooling scores the last token
// as softmax over those two logits, so the engine's score must equal what the plain model's own logits give.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "drain.h"
#include "engine/engine.h"
#include "gguf/writer.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using testing::Collected;
using testing::Drain;

constexpr TokenId kYes = 100, kNo = 200;

// qwen3-tiny-f32 plus cls.output.weight = token_embd rows kYes and kNo (the tied output) and rank pooling.
std::string WriteReranker(const std::string& dir) {
  auto src = gguf::File::Open(testing::SharedPath("models/qwen3-tiny-f32.gguf"));
  EXPECT_TRUE(src.ok()) << src.status().ToString();
  if (!src.ok()) return "";
  const gguf::File& f = **src;
  gguf::Writer w;
  for (const gguf::KeyValue& kv : f.metadata()) EXPECT_TRUE(w.CopyKv(kv.value, kv.key).ok());
  w.SetU32("qwen3.pooling_type", 4);
  w.SetArrayString("qwen3.classifier.output_labels", {"yes", "no"});
  const gguf::TensorInfo* embd = nullptr;
  for (const gguf::TensorInfo& t : f.tensors()) {
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    const uint8_t* data = f.TensorData(t);
    EXPECT_TRUE(w.AddTensor(t.name, t.type, ne, std::vector<uint8_t>(data, data + t.nbytes)).ok());
    if (t.name == "token_embd.weight") embd = &t;
  }
  EXPECT_TRUE(embd && embd->type == TensorType::kF32);
  if (!embd) return "";
  const size_t row = embd->ne[0] * sizeof(float);
  std::vector<uint8_t> head(2 * row);
  std::memcpy(head.data(), f.TensorData(*embd) + kYes * row, row);
  std::memcpy(head.data() + row, f.TensorData(*embd) + kNo * row, row);
  EXPECT_TRUE(w.AddTensor("cls.output.weight", TensorType::kF32, {embd->ne[0], 2}, std::move(head)).ok());
  const std::string path = dir + "/qwen3-tiny-reranker.gguf";
  EXPECT_TRUE(w.Write(path).ok());
  return path;
}

TEST(DecoderRerankTest, ScoreIsTheSoftmaxOfTheYesAndNoLogits) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  const std::string dir = ::testing::TempDir() + "/decoder_rerank_test";
  std::filesystem::create_directories(dir);
  const std::string path = WriteReranker(dir);
  ASSERT_FALSE(path.empty());
  EngineConfig cfg;
  cfg.model_path = path;
  cfg.n_parallel = 2;
  cfg.n_ctx = 512;
  cfg.n_threads = 2;
  cfg.embeddings = true;
  cfg.pooling = PoolingType::kRank;
  auto engine = Engine::Create(cfg);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ASSERT_EQ((*engine)->n_cls_out(), 2);

  const Model& model = (*engine)->model();
  const HParams& hp = model.hparams();
  for (const std::vector<TokenId>& prompt :
       {std::vector<TokenId>{1, 71, 294, 436, 413, 9, 33}, std::vector<TokenId>{1, 5, 6, 7}}) {
    GenerationRequest r;
    r.prompt = prompt;
    r.embedding = true;
    auto s = (*engine)->Submit(r);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Collected got = Drain(**s);
    ASSERT_FALSE(got.error) << got.done.error.ToString();
    ASSERT_EQ(got.done.embedding.size(), 2u);

    // The same model's logits for the last prompt token.
    KvConfig kc;
    kc.n_layer = hp.n_layer;
    kc.n_ctx_slot = static_cast<int32_t>(prompt.size());
    kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
    kc.layer_window = hp.layer_window;
    auto kv = KvCache::Create(kc);
    ASSERT_TRUE(kv.ok());
    ThreadPool pool(2);
    Forward fwd(model, **kv, pool, AttentionMode::kFlash);
    Batch b;
    for (size_t i = 0; i < prompt.size(); ++i) {
      b.Add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size() ? Batch::kLogits : Batch::kNone);
    }
    ForwardOutput out;
    ASSERT_TRUE(fwd.Run(b, &out).ok());
    const double yes = out.logits[kYes], no = out.logits[kNo];
    const double want = 1.0 / (1.0 + std::exp(no - yes));
    EXPECT_NEAR(got.done.embedding[0], want, 1e-5);
    EXPECT_NEAR(got.done.embedding[0] + got.done.embedding[1], 1.0, 1e-6);
  }
}

}  // namespace
}  // namespace lazyslot
