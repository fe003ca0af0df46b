// Context shift's KV move (KvCache::DropCells, then Forward::ShiftKeys): cells dropped from a slot's middle,
// the later rows moved down and their keys re-rotated for their new positions. A layer-0 key depends only on
// its token and position, so after the shift each moved row must equal the row the same token computes at
// its new position in a slot that never held the dropped tokens; the values, which carry no position, must
// be the same bytes. Checked on llama's RoPE (adjacent pairs), qwen3's (halves, after a per-head norm) and
// phi3's (partial rotation, LongRoPE factors and an attention factor, which a shift must not apply again).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "quant/quant.h"
#include "test_util.h"

namespace lazyslot {
namespace {

struct ShiftCase {
  const char* model;
  TensorType type_k;
  float tolerance;  // of |shifted - direct| / (largest |direct|) over a row
};

class ContextShiftKeys : public ::testing::TestWithParam<ShiftCase> {};

// Slot 0 holds 24 tokens, drops cells [5, 14) and re-rotates the moved keys; slot 1 computes the remaining
// 15 tokens directly. Layer 0's K rows (within the tolerance) and V rows (exactly) must agree cell by cell.
TEST_P(ContextShiftKeys, MovedKeysEqualKeysComputedAtTheirNewPositions) {
  const ShiftCase& c = GetParam();
  REQUIRE_SHARED_FILE(c.model);
  auto m = Model::Load(testing::SharedPath(c.model), {.huge_pages = false});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Model& model = **m;
  const HParams& hp = model.hparams();
  KvConfig kc;
  kc.n_layer = hp.n_layer;
  kc.n_slot = 2;
  kc.n_ctx_slot = 64;
  kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
  kc.head_dim = hp.head_dim;
  kc.type_k = c.type_k;
  auto kv = KvCache::Create(kc);
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  ThreadPool pool(2);
  Forward fwd(model, **kv, pool);

  std::vector<int32_t> tokens;
  for (int i = 0; i < 24; ++i) tokens.push_back(1 + (i * 37 + 11) % (hp.n_vocab - 1));
  constexpr int32_t kBegin = 5, kCount = 9;
  std::vector<int32_t> kept(tokens.begin(), tokens.begin() + kBegin);
  kept.insert(kept.end(), tokens.begin() + kBegin + kCount, tokens.end());
  Batch b;
  for (size_t i = 0; i < tokens.size(); ++i) b.Add(tokens[i], static_cast<int32_t>(i), 0, Batch::kNone);
  for (size_t i = 0; i < kept.size(); ++i) b.Add(kept[i], static_cast<int32_t>(i), 1, Batch::kNone);
  ForwardOutput out;
  ASSERT_TRUE(fwd.Run(b, &out).ok());

  ASSERT_TRUE((*kv)->DropCells(0, kBegin, kCount).ok());
  fwd.ShiftKeys(0, kBegin, static_cast<int32_t>(tokens.size()) - kCount, kCount);
  ASSERT_EQ((*kv)->n_cells(0), static_cast<int32_t>(kept.size()));

  const int64_t n = hp.n_embd_kv();
  std::vector<float> shifted(n), direct(n);
  for (int32_t cell = 0; cell < static_cast<int32_t>(kept.size()); ++cell) {
    quant::DequantizeRow(c.type_k, (*kv)->KRow(0, 0, cell), shifted.data(), n);
    quant::DequantizeRow(c.type_k, (*kv)->KRow(0, 1, cell), direct.data(), n);
    float scale = 0, worst = 0;
    for (int64_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(direct[i]));
    for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(shifted[i] - direct[i]));
    ASSERT_GT(scale, 0) << "cell " << cell;
    EXPECT_LE(worst / scale, c.tolerance) << "K of cell " << cell << (cell < kBegin ? " (kept)" : " (moved)");
    EXPECT_EQ(std::memcmp((*kv)->VRow(0, 0, cell), (*kv)->VRow(0, 1, cell), (*kv)->v_row_bytes()), 0)
        << "V of cell " << cell;
  }
  // Not rotated back: the moved keys differ from the direct ones (the check above can fail).
  quant::DequantizeRow(c.type_k, (*kv)->KRow(0, 1, kBegin), direct.data(), n);
  fwd.ShiftKeys(0, kBegin, kBegin + 1, -kCount);  // undo the shift of one row
  quant::DequantizeRow(c.type_k, (*kv)->KRow(0, 0, kBegin), shifted.data(), n);
  float diff = 0;
  for (int64_t i = 0; i < n; ++i) diff = std::max(diff, std::fabs(shifted[i] - direct[i]));
  EXPECT_GT(diff, 10 * c.tolerance);
}

INSTANTIATE_TEST_SUITE_P(Models, ContextShiftKeys,
                         ::testing::Values(ShiftCase{"models/stories260K.gguf", TensorType::kF32, 1e-5f},
                                           ShiftCase{"models/stories260K.gguf", TensorType::kF16, 2e-3f},
                                           ShiftCase{"models/qwen3-tiny-q8_0.gguf", TensorType::kF32, 1e-5f},
                                           ShiftCase{"models/phi3-tiny-q8_0.gguf", TensorType::kF32, 1e-5f},
                                           ShiftCase{"models/phi3-tiny-q8_0.gguf", TensorType::kQ8_0, 2e-2f}),
                         [](const ::testing::TestParamInfo<ShiftCase>& info) {
                           std::string name = info.param.model;
                           name = name.substr(name.find('/') + 1);
                           name = name.substr(0, name.find('.')) + "_" + TypeName(info.param.type_k);
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace lazyslot
