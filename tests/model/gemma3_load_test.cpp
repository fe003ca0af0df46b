// gemma3 at load: the layer pattern and window the file gives (or llama.cpp's defaults), and files a user
// might hold that are broken in a gemma3-specific way, each refused with a message naming the key or tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "model_variant.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using testing::ExpectModelRefused;

constexpr char kGemma[] = "models/gemma3-tiny-f32.gguf";

// gemma3-tiny-f32 with `edit` applied to its metadata, without tensor `drop` and key `drop_key`.
std::string WriteVariant(const std::string& name, const std::function<void(gguf::Writer&)>& edit,
                         const std::string& drop = "", const std::string& drop_key = "") {
  return testing::WriteModelVariant(kGemma, "gemma3_" + name,
                                    {.edit = edit, .drop_tensor = drop, .drop_key = drop_key});
}

gguf::Value BoolArray(const std::vector<bool>& v) {
  gguf::Value a;
  a.type = gguf::ValueType::kArray;
  a.elem_type = gguf::ValueType::kBool;
  for (bool b : v) a.uints.push_back(b ? 1 : 0);
  return a;
}

TEST(Gemma3Load, DefaultPatternIsFiveLocalLayersThenAGlobalOne) {
  REQUIRE_SHARED_FILE(kGemma);
  auto m = Model::Load(testing::SharedPath(kGemma), {.huge_pages = false});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const HParams& hp = (*m)->hparams();
  EXPECT_EQ(hp.layer_window, (std::vector<int32_t>{64, 64, 64, 64, 64, 0}));
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 1e6f);
  EXPECT_FLOAT_EQ(hp.rope_freq_base_swa, 1e4f);
  EXPECT_FLOAT_EQ(hp.embd_scale, std::sqrt(128.0f));
  EXPECT_FLOAT_EQ(hp.attn_q_scale, 0.125f);
  EXPECT_EQ(hp.final_logit_softcap, 0.0f);
}

TEST(Gemma3Load, ThePatternKeyAsAPeriodOrOneBoolPerLayer) {
  REQUIRE_SHARED_FILE(kGemma);
  auto period = Model::Load(
      WriteVariant("period2",
                   [](gguf::Writer& w) { w.SetU32("gemma3.attention.sliding_window_pattern", 2); }),
      {.huge_pages = false});
  ASSERT_TRUE(period.ok()) << period.status().ToString();
  EXPECT_EQ((*period)->hparams().layer_window, (std::vector<int32_t>{64, 0, 64, 0, 64, 0}));
  auto bools =
      Model::Load(WriteVariant("bools",
                               [](gguf::Writer& w) {
                                 ASSERT_TRUE(w.SetValue("gemma3.attention.sliding_window_pattern",
                                                        BoolArray({false, true, true, false, true, true}))
                                                 .ok());
                                 w.SetF32("gemma3.final_logit_softcapping", 30.0f);
                               }),
                  {.huge_pages = false});
  ASSERT_TRUE(bools.ok()) << bools.status().ToString();
  EXPECT_EQ((*bools)->hparams().layer_window, (std::vector<int32_t>{0, 64, 64, 0, 64, 64}));
  EXPECT_FLOAT_EQ((*bools)->hparams().final_logit_softcap, 30.0f);
}

TEST(Gemma3Load, BrokenFilesAreRefusedNamingTheKeyOrTensor) {
  REQUIRE_SHARED_FILE(kGemma);
  ExpectModelRefused(WriteVariant(
                         "no_post_norm", [](gguf::Writer&) {}, "blk.2.post_ffw_norm.weight"),
                     "blk.2.post_ffw_norm.weight");
  ExpectModelRefused(WriteVariant(
                         "no_attn_post_norm", [](gguf::Writer&) {}, "blk.0.post_attention_norm.weight"),
                     "blk.0.post_attention_norm.weight");
  ExpectModelRefused(WriteVariant(
                         "no_k_norm", [](gguf::Writer&) {}, "blk.5.attn_k_norm.weight"),
                     "blk.5.attn_k_norm.weight");
  ExpectModelRefused(WriteVariant(
                         "no_window", [](gguf::Writer&) {}, "", "gemma3.attention.sliding_window"),
                     "gemma3.attention.sliding_window");
  ExpectModelRefused(
      WriteVariant("window0", [](gguf::Writer& w) { w.SetU32("gemma3.attention.sliding_window", 0); }),
      "gemma3.attention.sliding_window");
  ExpectModelRefused(WriteVariant("window_past_ctx",
                                  [](gguf::Writer& w) { w.SetU32("gemma3.attention.sliding_window", 8193); }),
                     "gemma3.attention.sliding_window");
  ExpectModelRefused(
      WriteVariant(
          "pattern_short",
          [](gguf::Writer& w) {
            ASSERT_TRUE(
                w.SetValue("gemma3.attention.sliding_window_pattern", BoolArray({true, true, false})).ok());
          }),
      "gemma3.attention.sliding_window_pattern");
  ExpectModelRefused(
      WriteVariant("period0",
                   [](gguf::Writer& w) { w.SetU32("gemma3.attention.sliding_window_pattern", 0); }),
      "gemma3.attention.sliding_window_pattern");
  ExpectModelRefused(
      WriteVariant("period7",
                   [](gguf::Writer& w) { w.SetU32("gemma3.attention.sliding_window_pattern", 7); }),
      "gemma3.attention.sliding_window_pattern");
  ExpectModelRefused(
      WriteVariant("softcap", [](gguf::Writer& w) { w.SetF32("gemma3.final_logit_softcapping", -1.0f); }),
      "final_logit_softcapping");
}

}  // namespace
}  // namespace lazyslot
