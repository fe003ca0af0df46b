// nomic-bert at load and in its pass: the fused attn_qkv viewed in place, RoPE on q and k as the only
// positions (an encoder without them would pool a sequence and its reverse alike), and files broken in a
// nomic-bert way refused naming the tensor or key. Its numerics against llama.cpp are in
// encoder_reference_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/pooling.h"
#include "gguf/writer.h"
#include "model/encoder.h"
#include "model/model.h"
#include "model_variant.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using testing::ExpectModelRefused;

constexpr char kNomic[] = "models/nomic-bert-tiny-q8_0.gguf";

TEST(NomicBertLoad, FusedQkvIsRowRangesOfOneTensorAndPositionsAreRotary) {
  REQUIRE_SHARED_FILE(kNomic);
  auto m = Model::Load(testing::SharedPath(kNomic), {.huge_pages = false});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Model& model = **m;
  const HParams& hp = model.hparams();
  EXPECT_TRUE(model.arch().encoder);
  EXPECT_EQ(model.arch().rope_style, RopeStyle::kNeox);
  EXPECT_FALSE(hp.causal);
  EXPECT_EQ(hp.n_rot, 32);
  EXPECT_EQ(hp.head_dim, 32);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 1000.0f);
  EXPECT_FLOAT_EQ(hp.norm_eps, 1e-12f);
  EXPECT_EQ(hp.pooling, PoolingType::kMean);
  EXPECT_EQ(model.position_embd().data, nullptr);
  ASSERT_NE(model.token_types().data, nullptr);
  const gguf::File& f = model.file();
  const gguf::TensorInfo* qkv = f.FindTensor("blk.1.attn_qkv.weight");
  ASSERT_NE(qkv, nullptr);
  const LayerWeights& l = model.layer(1);
  const uint8_t* base = f.TensorData(*qkv);
  EXPECT_EQ(l.wq.data, base);
  EXPECT_EQ(l.wk.data, base + 128 * qkv->row_bytes());
  EXPECT_EQ(l.wv.data, base + 256 * qkv->row_bytes());
  EXPECT_EQ(l.wv.n_out, 128);
  EXPECT_NE(l.w_gate.data, nullptr);
  EXPECT_TRUE(l.bq.empty() && l.bo.empty() && l.b_up.empty());
  EXPECT_EQ(l.attn_out_norm_b.size(), 128u);
}

std::vector<float> MeanEmbedding(const Model& model, const std::vector<int32_t>& tokens) {
  ThreadPool pool(2);
  Encoder enc(model, pool);
  Batch b;
  for (size_t i = 0; i < tokens.size(); ++i) b.Add(tokens[i], static_cast<int32_t>(i), 0, Batch::kHidden);
  ForwardOutput out;
  const Status st = enc.Run(b, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return {};
  return PoolEmbedding(PoolingType::kMean, out.hidden.data(), static_cast<int64_t>(tokens.size()),
                       model.hparams().n_embd);
}

TEST(NomicBertPass, OrderMattersThroughRope) {
  REQUIRE_SHARED_FILE(kNomic);
  auto m = Model::Load(testing::SharedPath(kNomic), {.huge_pages = false});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::vector<int32_t> fwd = {101, 4451, 3738, 9858, 9566, 8403, 102};
  const std::vector<int32_t> rev(fwd.rbegin(), fwd.rend());
  const std::vector<float> a = MeanEmbedding(**m, fwd), b = MeanEmbedding(**m, rev);
  ASSERT_EQ(a.size(), 128u);
  ASSERT_EQ(b.size(), 128u);
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff += std::abs(a[i] - b[i]);
  EXPECT_GT(diff, 1e-3) << "a sequence and its reverse pool alike: q and k were not rotated";
  EXPECT_EQ(MeanEmbedding(**m, fwd), a) << "the same sequence again gives the same numbers";
}

TEST(NomicBertLoad, BrokenFilesAreRefusedNamingTheTensorOrKey) {
  REQUIRE_SHARED_FILE(kNomic);
  auto variant = [](const std::string& name, testing::ModelVariant v) {
    return testing::WriteModelVariant(kNomic, "nomic_" + name, v);
  };
  ExpectModelRefused(variant("qkv320", {.reshape_tensor = "blk.0.attn_qkv.weight", .reshape_ne = {128, 320}}),
                     "blk.0.attn_qkv.weight");
  ExpectModelRefused(variant("no_qkv", {.drop_tensor = "blk.1.attn_qkv.weight"}), "blk.1.attn_qkv.weight");
  ExpectModelRefused(variant("no_gate", {.drop_tensor = "blk.1.ffn_gate.weight"}), "blk.1.ffn_gate.weight");
  ExpectModelRefused(variant("up256", {.reshape_tensor = "blk.0.ffn_up.weight", .reshape_ne = {128, 256}}),
                     "blk.0.ffn_up.weight");
  ExpectModelRefused(
      variant("rot31", {.edit = [](gguf::Writer& w) { w.SetU32("nomic-bert.rope.dimension_count", 31); }}),
      "nomic-bert.rope.dimension_count");
  ExpectModelRefused(
      variant("rot34", {.edit = [](gguf::Writer& w) { w.SetU32("nomic-bert.rope.dimension_count", 34); }}),
      "nomic-bert.rope.dimension_count");
  ExpectModelRefused(variant("no_norm_b", {.drop_tensor = "blk.0.layer_output_norm.bias"}),
                     "blk.0.layer_output_norm.bias");
  // Learned positions are bert's; in a nomic-bert file they would be ignored, so they are refused.
  ExpectModelRefused(
      variant(
          "position_embd",
          {.add_tensors =
               [](gguf::Writer& w) {
                 std::vector<uint8_t> zeros(128 * 16 * 4, 0);
                 ASSERT_TRUE(w.AddTensor("position_embd.weight", TensorType::kF32, {128, 16}, zeros).ok());
               }}),
      "position_embd.weight");
  ExpectModelRefused(
      variant("causal", {.edit = [](gguf::Writer& w) { w.SetBool("nomic-bert.attention.causal", true); }}),
      "attention.causal");
}

}  // namespace
}  // namespace lazyslot
