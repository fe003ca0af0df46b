// phi3 at load and in its RoPE: the fused projections viewed in place (no copy), partial rotary, LongRoPE's
// keys, the factors a slot's size chooses, and files broken in a phi3 way refused naming the tensor or key.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "model_variant.h"
#include "ops/elementwise.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using testing::ExpectModelRefused;

constexpr char kPhi3[] = "models/phi3-tiny-q8_0.gguf";

TEST(Phi3Load, FusedProjectionsAreRowRangesOfOneTensor) {
  REQUIRE_SHARED_FILE(kPhi3);
  auto m = Model::Load(testing::SharedPath(kPhi3), {.huge_pages = false});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Model& model = **m;
  const HParams& hp = model.hparams();
  EXPECT_EQ(hp.n_rot, 48);
  EXPECT_EQ(hp.head_dim, 64);
  EXPECT_EQ(hp.n_ctx_orig, 4096);
  EXPECT_FLOAT_EQ(hp.rope_attn_factor, 1.0801234f);
  EXPECT_TRUE(hp.layer_window.empty()) << "the sliding_window key is ignored, as llama.cpp ignores it for phi3";
  EXPECT_EQ(model.rope_factors(false).size(), 24u);
  EXPECT_EQ(model.rope_factors(true).size(), 24u);
  const gguf::File& f = model.file();
  const gguf::TensorInfo* qkv = f.FindTensor("blk.1.attn_qkv.weight");
  const gguf::TensorInfo* up = f.FindTensor("blk.1.ffn_up.weight");
  ASSERT_NE(qkv, nullptr);
  ASSERT_NE(up, nullptr);
  const LayerWeights& l = model.layer(1);
  const uint8_t* base = f.TensorData(*qkv);
  EXPECT_EQ(l.wq.data, base);
  EXPECT_EQ(l.wk.data, base + 256 * qkv->row_bytes());
  EXPECT_EQ(l.wv.data, base + 384 * qkv->row_bytes());
  EXPECT_EQ(l.wv.n_out, 128);
  EXPECT_EQ(l.w_gate.data, f.TensorData(*up));
  EXPECT_EQ(l.w_up.data, f.TensorData(*up) + 512 * up->row_bytes());
}

TEST(Phi3Load, BrokenFilesAreRefusedNamingTheTensorOrKey) {
  REQUIRE_SHARED_FILE(kPhi3);
  auto variant = [](const std::string& name, testing::ModelVariant v) {
    return testing::WriteModelVariant(kPhi3, "phi3_" + name, v);
  };
  ExpectModelRefused(variant("factors20", {.reshape_tensor = "rope_factors_long.weight", .reshape_ne = {20}}),
                     "rope_factors_long.weight");
  ExpectModelRefused(variant("no_long", {.drop_tensor = "rope_factors_long.weight"}), "rope_factors_long.weight");
  ExpectModelRefused(variant("qkv448", {.reshape_tensor = "blk.0.attn_qkv.weight", .reshape_ne = {256, 448}}),
                     "blk.0.attn_qkv.weight");
  ExpectModelRefused(variant("rot47", {.edit = [](gguf::Writer& w) { w.SetU32("phi3.rope.dimension_count", 47); }}),
                     "phi3.rope.dimension_count");
  ExpectModelRefused(variant("rot80", {.edit = [](gguf::Writer& w) { w.SetU32("phi3.rope.dimension_count", 80); }}),
                     "phi3.rope.dimension_count");
  ExpectModelRefused(variant("up768", {.reshape_tensor = "blk.1.ffn_up.weight", .reshape_ne = {256, 768}}),
                     "blk.1.ffn_up.weight");
  ExpectModelRefused(
      variant("attn_factor", {.edit = [](gguf::Writer& w) { w.SetF32("phi3.rope.scaling.attn_factor", -1.0f); }}),
      "phi3.rope.scaling.attn_factor");
}

// LongRoPE's factors are phi3's: in another architecture's file they would change nothing it computes, so
// they are refused rather than ignored.
TEST(Phi3Load, LongRopeFactorsInAnotherArchitectureAreRefused) {
  constexpr char kQwen3[] = "models/qwen3-tiny-q8_0.gguf";
  REQUIRE_SHARED_FILE(kQwen3);
  const std::string path = testing::WriteModelVariant(
      kQwen3, "qwen3_long_rope", {.add_tensors = [](gguf::Writer& w) {
        for (const char* name : {"rope_factors_short.weight", "rope_factors_long.weight"}) {
          std::vector<float> ones(16, 1.0f);
          const auto* p = reinterpret_cast<const uint8_t*>(ones.data());
          ASSERT_TRUE(w.AddTensor(name, TensorType::kF32, {16}, std::vector<uint8_t>(p, p + 64)).ok());
        }
      }});
  ExpectModelRefused(path, "rope_factors_short.weight");
  ExpectModelRefused(path, "qwen3");
}

// LongRoPE against its formula in double: the first n_rot dims of each head rotate in NEOX pairs (i, i + n_rot/2)
// by pos * base^(-2i/n_rot) / factor[i], cos and sin times attn_factor; the other dims pass through.
TEST(Phi3Rope, PartialRotaryWithFactorsAndAttnFactorFollowsTheFormula) {
  const int head_dim = 64, n_rot = 48, half = n_rot / 2;
  std::vector<float> factors(half), x(2 * head_dim);
  for (int i = 0; i < half; ++i) factors[i] = 1.0f + 0.37f * static_cast<float>(i);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.3f * static_cast<float>(i) + 0.1f);
  RopeParams p;
  p.style = RopeStyle::kNeox;
  p.n_rot = n_rot;
  p.freq_base = 10000.0f;
  p.freq_factors = factors.data();
  p.attn_factor = 1.0801234f;
  for (int32_t pos : {0, 7, 5000, 16000}) {
    std::vector<float> cos_t(half), sin_t(half), y = x;
    RopeAngles(p, pos, cos_t.data(), sin_t.data());
    RopeApply(p, cos_t.data(), sin_t.data(), y.data(), 2, head_dim);
    for (int h = 0; h < 2; ++h) {
      const float* in = x.data() + h * head_dim;
      const float* out = y.data() + h * head_dim;
      for (int i = 0; i < half; ++i) {
        const double theta = pos * std::pow(10000.0, -2.0 * i / n_rot) / factors[i];
        const double c = std::cos(theta) * p.attn_factor, s = std::sin(theta) * p.attn_factor;
        EXPECT_NEAR(out[i], in[i] * c - in[i + half] * s, 2e-3) << "pos " << pos << " i " << i;
        EXPECT_NEAR(out[i + half], in[i] * s + in[i + half] * c, 2e-3) << "pos " << pos << " i " << i;
      }
      for (int d = n_rot; d < head_dim; ++d) EXPECT_EQ(out[d], in[d]) << "dim " << d << " does not rotate";
    }
  }
}

// Logits of `tokens` in a slot of `cells` cells.
std::vector<float> Logits(const Model& model, const std::vector<int32_t>& tokens, int32_t cells) {
  const HParams& hp = model.hparams();
  KvConfig kc;
  kc.n_layer = hp.n_layer;
  kc.n_ctx_slot = cells;
  kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
  auto kv = KvCache::Create(kc);
  EXPECT_TRUE(kv.ok());
  ThreadPool pool(2);
  Forward fwd(model, **kv, pool);
  Batch b;
  for (size_t i = 0; i < tokens.size(); ++i) b.Add(tokens[i], static_cast<int32_t>(i), 0, Batch::kLogits);
  ForwardOutput out;
  EXPECT_TRUE(fwd.Run(b, &out).ok());
  return out.logits;
}

// A slot of more cells than original_context_length rotates with the long factors (llama.cpp chooses by its
// per-sequence context); up to it, with the short ones, whatever the size.
TEST(Phi3Rope, TheSlotSizeChoosesTheFactors) {
  REQUIRE_SHARED_FILE(kPhi3);
  auto m = Model::Load(testing::SharedPath(kPhi3), {.huge_pages = false});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::vector<int32_t> tokens = {1, 45, 300, 7, 99, 411, 23, 160};
  const std::vector<float> short_a = Logits(**m, tokens, 64), short_b = Logits(**m, tokens, 4096);
  EXPECT_EQ(short_a, short_b);
  const std::vector<float> long_ctx = Logits(**m, tokens, 4097);
  ASSERT_EQ(long_ctx.size(), short_a.size());
  EXPECT_NE(long_ctx, short_a) << "the long factors differ from the short ones in this file";
}

}  // namespace
}  // namespace lazyslot
