// qwen3moe: the expert keys and tensors at load (and files broken in a mixture-of-experts way, refused naming
// the key or tensor), the bytes a token reads, routing that never depends on the batch (a token alone and in
// a batch of 64 give the same bits), and experts that stay on the file mapping while the rest is copied onto
// huge pages.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/vm.h"
#include "gguf/writer.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "model_variant.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using testing::ExpectModelRefused;

constexpr char kMoe[] = "models/qwen3moe-tiny-q8_0.gguf";
const char* kMoeFiles[] = {"models/qwen3moe-tiny-f32.gguf", "models/qwen3moe-tiny-q8_0.gguf",
                           "models/qwen3moe-tiny-q4_k_m.gguf"};

TEST(Qwen3MoeLoad, ExpertKeysAndTheBytesATokenReads) {
  REQUIRE_SHARED_FILE(kMoe);
  auto m = Model::Load(testing::SharedPath(kMoe), {.huge_pages = false});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Model& model = **m;
  const HParams& hp = model.hparams();
  EXPECT_EQ(hp.n_expert, 8);
  EXPECT_EQ(hp.n_expert_used, 2);
  EXPECT_EQ(hp.n_ff_exp, 256);
  const LayerWeights& l = model.layer(1);
  ASSERT_EQ(l.gate_exps.size(), 8u);
  EXPECT_EQ(l.router.type, TensorType::kF32);
  EXPECT_EQ(l.router.n_out, 8);
  // Expert e's rows start e slices into the 3-D tensor.
  const gguf::TensorInfo* down = model.file().FindTensor("blk.1.ffn_down_exps.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(l.down_exps[5].data, model.file().TensorData(*down) + 5 * down->nbytes / 8);
  // A token reads every dense matrix and the output, the router, and 2 of the 8 experts of each tensor.
  uint64_t dense = 0, experts = 0;
  for (const gguf::TensorInfo& t : model.file().tensors()) {
    if (t.n_dims < 2 || t.name == "token_embd.weight") continue;
    (t.ne[2] > 1 ? experts : dense) += t.nbytes;
  }
  EXPECT_EQ(model.weight_bytes_per_token(), dense + experts * 2 / 8);
}

TEST(Qwen3MoeLoad, BrokenExpertsAreRefusedNamingTheKeyOrTensor) {
  REQUIRE_SHARED_FILE(kMoe);
  auto variant = [](const std::string& name, testing::ModelVariant v) {
    return testing::WriteModelVariant(kMoe, "qwen3moe_" + name, v);
  };
  ExpectModelRefused(
      variant("experts0", {.edit = [](gguf::Writer& w) { w.SetU32("qwen3moe.expert_count", 0); }}),
      "qwen3moe.expert_count");
  ExpectModelRefused(
      variant("used9", {.edit = [](gguf::Writer& w) { w.SetU32("qwen3moe.expert_used_count", 9); }}),
      "qwen3moe.expert_used_count");
  ExpectModelRefused(
      variant("used0", {.edit = [](gguf::Writer& w) { w.SetU32("qwen3moe.expert_used_count", 0); }}),
      "qwen3moe.expert_used_count");
  ExpectModelRefused(variant("no_used", {.drop_key = "qwen3moe.expert_used_count"}),
                     "qwen3moe.expert_used_count");
  ExpectModelRefused(variant("no_width", {.drop_key = "qwen3moe.expert_feed_forward_length"}),
                     "qwen3moe.expert_feed_forward_length");
  // The file's experts are 256 wide: a key that says otherwise meets tensors of the wrong shape.
  ExpectModelRefused(
      variant("width128",
              {.edit = [](gguf::Writer& w) { w.SetU32("qwen3moe.expert_feed_forward_length", 128); }}),
      "blk.0.ffn_gate_exps.weight");
  ExpectModelRefused(
      variant("seven_experts", {.reshape_tensor = "blk.1.ffn_up_exps.weight", .reshape_ne = {256, 256, 7}}),
      "blk.1.ffn_up_exps.weight");
  ExpectModelRefused(
      variant("flat_down", {.reshape_tensor = "blk.0.ffn_down_exps.weight", .reshape_ne = {256, 2048}}),
      "blk.0.ffn_down_exps.weight");
  ExpectModelRefused(
      variant("router7", {.reshape_tensor = "blk.1.ffn_gate_inp.weight", .reshape_ne = {256, 7}}),
      "blk.1.ffn_gate_inp.weight");
  ExpectModelRefused(variant("no_router", {.drop_tensor = "blk.0.ffn_gate_inp.weight"}),
                     "blk.0.ffn_gate_inp.weight");
  ExpectModelRefused(variant("no_down", {.drop_tensor = "blk.1.ffn_down_exps.weight"}),
                     "blk.1.ffn_down_exps.weight");
}

// Logits of `tokens` (one slot from position 0), run in batches of `step` tokens, every position's row.
std::vector<float> RunInSteps(const Model& model, const std::vector<int32_t>& tokens, size_t step,
                              ThreadPool& pool) {
  const HParams& hp = model.hparams();
  KvConfig kc;
  kc.n_layer = hp.n_layer;
  kc.n_ctx_slot = static_cast<int32_t>(tokens.size());
  kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
  auto kv = KvCache::Create(kc);
  EXPECT_TRUE(kv.ok());
  Forward fwd(model, **kv, pool);
  std::vector<float> logits;
  for (size_t i0 = 0; i0 < tokens.size(); i0 += step) {
    Batch b;
    for (size_t i = i0; i < std::min(tokens.size(), i0 + step); ++i) {
      b.Add(tokens[i], static_cast<int32_t>(i), 0, Batch::kLogits);
    }
    ForwardOutput out;
    const Status st = fwd.Run(b, &out);
    EXPECT_TRUE(st.ok()) << st.ToString();
    logits.insert(logits.end(), out.logits.begin(), out.logits.end());
  }
  return logits;
}

TEST(Qwen3MoeForward, ATokenGivesTheSameBitsAloneAndInABatchOf64) {
  for (const char* file : kMoeFiles) {
    REQUIRE_SHARED_FILE(file);
    auto m = Model::Load(testing::SharedPath(file), {.threads = 2});
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    std::vector<int32_t> tokens;
    for (int i = 0; i < 64; ++i) tokens.push_back(1 + (i * 37 + 11) % 500);
    ThreadPool pool(2);
    const std::vector<float> batched = RunInSteps(**m, tokens, 64, pool);
    EXPECT_EQ(RunInSteps(**m, tokens, 1, pool), batched) << file << ": one token at a time";
    EXPECT_EQ(RunInSteps(**m, tokens, 5, pool), batched) << file << ": five at a time";
    ThreadPool one(1);
    EXPECT_EQ(RunInSteps(**m, tokens, 64, one), batched) << file << ": on one thread";
  }
}

TEST(Qwen3MoeMemory, ExpertsStayOnTheFileMappingAndTheRestOnTheCopy) {
  REQUIRE_SHARED_FILE(kMoe);
  auto m = Model::Load(testing::SharedPath(kMoe));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const gguf::File& f = (*m)->file();
  if (!f.on_huge_pages())
    GTEST_SKIP() << "SKIPPED: no huge-page copy on this machine (transparent huge pages off)";
  const gguf::TensorInfo* up = f.FindTensor("blk.0.ffn_up_exps.weight");
  ASSERT_NE(up, nullptr);
  const uint8_t* expert_mid = f.TensorData(*up) + up->nbytes / 2;
  Result<uint64_t> anon = vm::MappingFieldBytes(expert_mid, "Anonymous");
  ASSERT_TRUE(anon.ok()) << anon.status().ToString();
  EXPECT_EQ(*anon, 0u) << "an expert's pages are the file's";
  const gguf::TensorInfo* q = f.FindTensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  Result<uint64_t> q_anon = vm::MappingFieldBytes(f.TensorData(*q), "Anonymous");
  ASSERT_TRUE(q_anon.ok());
  EXPECT_GT(*q_anon, 0u) << "the attention's weights are on the copy";
  // The weights' resident bytes cover every part of the mapping: one token's forward pass maps the 2 x 3
  // expert slices it chose in each of 2 layers (each 17 pages, at least 16 of them whole inside the slice).
  Result<uint64_t> before = f.ResidentBytes();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  const std::vector<int32_t> one = {1};
  ThreadPool pool(2);
  RunInSteps(**m, one, 1, pool);
  Result<uint64_t> after = f.ResidentBytes();
  ASSERT_TRUE(after.ok());
  const uint64_t slice = up->nbytes / 8;
  EXPECT_GE(*after, *before + 2 * 3 * 2 * (slice - 4096)) << "before " << *before;
}

}  // namespace
}  // namespace lazyslot
