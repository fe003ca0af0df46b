// A model whose Q4_K (or Q8_0) matrices are kept interleaved (docs/decisions/0012) gives the logits of the
// same model on GGUF rows bit for bit: a prompt of two sequences in one batch, then single-token decode
// steps, and again after its weights were released and copied back (the copy re-applies the layout). The
// layout is installed into the active kernels by hand, so the test does not depend on the load's timing. Runs
// where a kernel set has the layout (AVX-512) and the weights can go onto huge pages; skipped where not.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "interleaved_util.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "quant/kernels.h"
#include "test_util.h"

namespace lazyslot {
namespace {

// Logits of two 19-token sequences prompted together, then 3 decode steps of one of them, all concatenated.
std::vector<float> Logits(const Model& model) {
  const HParams& hp = model.hparams();
  KvConfig kc;
  kc.n_layer = hp.n_layer;
  kc.n_slot = 2;
  kc.n_ctx_slot = 32;
  kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
  kc.layer_window = hp.layer_window;
  auto kv = KvCache::Create(kc);
  EXPECT_TRUE(kv.ok()) << kv.status().ToString();
  if (!kv.ok()) return {};
  ThreadPool pool(2);
  Forward fwd(model, **kv, pool);
  std::vector<float> all;
  Batch b;
  for (int32_t i = 0; i < 19; ++i) {
    for (int32_t s = 0; s < 2; ++s) b.Add((7 + 13 * i + 31 * s) % hp.n_vocab, i, s, Batch::kLogits);
  }
  for (int32_t step = 0; step <= 3; ++step) {
    ForwardOutput out;
    const Status st = fwd.Run(b, &out);
    EXPECT_TRUE(st.ok()) << st.ToString();
    all.insert(all.end(), out.logits.begin(), out.logits.end());
    b.Clear();
    b.Add((5 + 11 * step) % hp.n_vocab, 19 + step, 0, Batch::kLogits);
  }
  return all;
}

int InterleavedMatrices(const Model& m) {
  int n = m.output().interleaved ? 1 : 0;
  for (int il = 0; il < m.hparams().n_layer; ++il) {
    const LayerWeights& l = m.layer(il);
    for (const WeightView* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      n += w->interleaved;
  }
  return n;
}

class InterleavedWeights : public ::testing::TestWithParam<std::pair<const char*, TensorType>> {};

TEST_P(InterleavedWeights, LogitsEqualTheGgufRowsBeforeAndAfterARelease) {
  const std::string rel = std::string("models/") + GetParam().first + ".gguf";
  REQUIRE_SHARED_FILE(rel);
  const std::string path = testing::SharedPath(rel);
  const int f = quant::FormatIndex(GetParam().second);
  const quant::KernelSet* with = nullptr;
  static const std::vector<quant::KernelSet> sets = testing::UsableKernels();
  for (const quant::KernelSet& s : sets) {
    if (s.interleaved[f].interleave) with = &s;
  }
  if (!with) {
    GTEST_SKIP() << "no kernel set that this CPU and LAZYSLOT_ISA allow has an interleaved layout: nothing to "
                    "compare";
  }
  // The plain model first: its load selects the process's kernels for the format; then the layout is
  // installed.
  auto plain = Model::Load(path, {.threads = 2, .huge_pages = false});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  ASSERT_EQ(InterleavedMatrices(**plain), 0);
  const testing::ScopedInterleaved installed(*with, f);

  auto inter = Model::Load(path, {.threads = 2, .huge_pages = true});
  ASSERT_TRUE(inter.ok()) << inter.status().ToString();
  if (!(*inter)->file().on_huge_pages()) {
    GTEST_SKIP() << "the weights could not go onto huge pages here: the layout needs that copy; nothing to "
                    "compare";
  }
  EXPECT_GT(InterleavedMatrices(**inter), 0);
  const std::vector<float> want = Logits(**plain);
  ASSERT_FALSE(want.empty());
  std::vector<float> got = Logits(**inter);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);

  ASSERT_TRUE((*inter)->file().ReleaseResidentPages().ok());
  ASSERT_TRUE((*inter)->RestoreWeights().ok());
  ASSERT_TRUE((*inter)->file().on_huge_pages());
  EXPECT_GT(InterleavedMatrices(**inter), 0);
  got = Logits(**inter);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << "after a release";
}

INSTANTIATE_TEST_SUITE_P(Formats, InterleavedWeights,
                         ::testing::Values(std::make_pair("qwen3-tiny-q4_k_m", TensorType::kQ4_K),
                                           std::make_pair("qwen3-tiny-q8_0", TensorType::kQ8_0)),
                         [](const auto& info) { return std::string(TypeName(info.param.second)); });

}  // namespace
}  // namespace lazyslot
