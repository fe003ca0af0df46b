// KV cache types and slot files at the level of logits: a q8_0 (or f32) cache stays within the reference
// tolerances of ../shared/reference, and a slot restored from a file gives the same logits, bit for bit,
// as the slot it was saved from.
#include "kv/kv_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "test_util.h"

namespace lazyslot {
namespace {

std::unique_ptr<KvCache> MakeCache(const Model& m, int n_slot, int32_t n_ctx, TensorType k, TensorType v) {
  const HParams& hp = m.hparams();
  KvConfig kc;
  kc.n_layer = hp.n_layer;
  kc.n_slot = n_slot;
  kc.n_ctx_slot = n_ctx;
  kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
  kc.layer_window = hp.layer_window;
  kc.head_dim = hp.head_dim;
  kc.type_k = k;
  kc.type_v = v;
  auto kv = KvCache::Create(kc);
  EXPECT_TRUE(kv.ok()) << kv.status().ToString();
  return kv.ok() ? std::move(kv).value() : nullptr;
}

// Runs `tokens` in `slot` from position `from` (one batch); returns the logits of every token.
std::vector<float> RunTokens(Forward& fwd, int slot, int32_t from, const std::vector<int32_t>& tokens) {
  Batch b;
  for (size_t i = 0; i < tokens.size(); ++i)
    b.Add(tokens[i], from + static_cast<int32_t>(i), slot, Batch::kLogits);
  ForwardOutput out;
  Status st = fwd.Run(b, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out.logits;
}

struct TypeCase {
  const char* model;
  TensorType cache;
  double tol;  // of the logit range, per ../shared/reference/README.md for the model's weights
};

class CacheTypeTest : public ::testing::TestWithParam<TypeCase> {};

TEST_P(CacheTypeTest, LogitsStayWithinTheReferenceTolerance) {
  const TypeCase& c = GetParam();
  REQUIRE_SHARED_FILE(std::string("models/") + c.model + ".gguf");
  REQUIRE_SHARED_FILE(std::string("reference/") + c.model + ".json");
  auto m = Model::Load(testing::SharedPath(std::string("models/") + c.model + ".gguf"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::ifstream in(testing::SharedPath(std::string("reference/") + c.model + ".json"));
  const auto ref = nlohmann::json::parse(in);
  const int32_t n_vocab = (*m)->hparams().n_vocab;
  for (const char* key : {"short", "long"}) {
    const auto tokens = ref[key]["tokens"].get<std::vector<int32_t>>();
    auto kv = MakeCache(**m, 1, static_cast<int32_t>(tokens.size()), c.cache, c.cache);
    ASSERT_TRUE(kv);
    ThreadPool pool(2);
    Forward fwd(**m, *kv, pool);
    const std::vector<float> ours = RunTokens(fwd, 0, 0, tokens);
    const auto& rows = ref[key]["logits"];
    ASSERT_EQ(ours.size(), rows.size() * n_vocab);
    double worst = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      const auto want = rows[r].get<std::vector<float>>();
      const auto [mn, mx] = std::minmax_element(want.begin(), want.end());
      double err = 0;
      for (int32_t v = 0; v < n_vocab; ++v)
        err = std::max(err, std::abs(double(ours[r * n_vocab + v]) - want[v]));
      worst = std::max(worst, err / (*mx - *mn));
    }
    EXPECT_LE(worst, c.tol) << c.model << " " << key << " with a " << TypeName(c.cache) << " cache";
    std::printf("[ kv type ] %-18s %-5s %-4s cache: worst error %.3g of range (tolerance %.0e)\n", c.model,
                key, TypeName(c.cache), worst, c.tol);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, CacheTypeTest,
                         ::testing::Values(TypeCase{"qwen3-tiny-q8_0", TensorType::kQ8_0, 3e-2},
                                           TypeCase{"qwen3-hd128-q8_0", TensorType::kQ8_0, 3e-2},
                                           TypeCase{"qwen2-tiny-q8_0", TensorType::kQ8_0, 3e-2},
                                           TypeCase{"qwen3-tiny-f32", TensorType::kF32, 1e-3},
                                           TypeCase{"qwen3-tiny-f32", TensorType::kF16, 1e-3}),
                         [](const auto& info) {
                           std::string n = std::string(info.param.model) + "_" + TypeName(info.param.cache);
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(SlotStateTest, RestoredSlotGivesBitIdenticalLogits) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-q8_0.gguf");
  auto m = Model::Load(testing::SharedPath("models/qwen3-tiny-q8_0.gguf"));
  ASSERT_TRUE(m.ok());
  const std::string path =
      (std::filesystem::temp_directory_path() / ("lazyslot_kvstate_" + std::to_string(::getpid()))).string();
  for (TensorType type : {TensorType::kF16, TensorType::kQ8_0}) {
    std::vector<int32_t> prompt;
    for (int i = 0; i < 77; ++i) prompt.push_back(1 + (i * 53) % 500);
    auto a = MakeCache(**m, 2, 256, type, type);
    ASSERT_TRUE(a);
    ThreadPool pool(2);
    Forward fa(**m, *a, pool);
    RunTokens(fa, 1, 0, prompt);
    auto saved = SaveSlotState(*a, 1, prompt, 1234, path);
    ASSERT_TRUE(saved.ok()) << saved.status().ToString();
    const std::vector<float> want = RunTokens(fa, 1, 77, {5, 9, 11});

    // Into another slot of a fresh cache: only the file's pages are committed, and the logits match.
    auto b = MakeCache(**m, 3, 256, type, type);
    ASSERT_TRUE(b);
    auto info = RestoreSlotState(*b, 2, 1234, path);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->tokens, prompt);
    EXPECT_EQ(b->n_cells(2), 77);
    auto resident = b->ResidentBytes();
    ASSERT_TRUE(resident.ok());
    EXPECT_EQ(*resident, b->BytesForCells(77));
    EXPECT_EQ(b->committed_bytes(), b->BytesForCells(77));
    Forward fb(**m, *b, pool);
    EXPECT_EQ(RunTokens(fb, 2, 77, {5, 9, 11}), want) << TypeName(type);

    // Another model id or cache type is refused without touching the slot.
    auto other = RestoreSlotState(*b, 2, 999, path);
    ASSERT_FALSE(other.ok());
    EXPECT_EQ(other.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(b->n_cells(2), 80);
    auto c = MakeCache(**m, 1, 256, TensorType::kF32, TensorType::kF32);
    ASSERT_TRUE(c);
    auto wrong_type = RestoreSlotState(*c, 0, 1234, path);
    ASSERT_FALSE(wrong_type.ok());
    EXPECT_NE(wrong_type.status().message().find("cache types"), std::string::npos)
        << wrong_type.status().message();
    // A file longer than the slot is refused with both numbers.
    auto small = MakeCache(**m, 1, 50, type, type);
    ASSERT_TRUE(small);
    auto too_long = RestoreSlotState(*small, 0, 1234, path);
    ASSERT_FALSE(too_long.ok());
    EXPECT_NE(too_long.status().message().find("77 tokens"), std::string::npos)
        << too_long.status().message();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace lazyslot
