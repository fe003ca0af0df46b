// 4,096 tokens through gemma3-tiny (window 64) with the real forward pass, asserting pages (mincore): each
// local (layer, K|V) run keeps at most its window's pages, each global run all of them, and the cache's
// committed bytes equal the kernel's count, after every prompt batch and every generated token.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "core/vm.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "ops/attention.h"
#include "quant/quant.h"
#include "test_util.h"

namespace lazyslot {
namespace {

constexpr char kGemma[] = "models/gemma3-tiny-q8_0.gguf";

size_t Pages(size_t bytes) { return (bytes + vm::PageSize() - 1) / vm::PageSize(); }

void ExpectWindowPages(const KvCache& kv, int32_t n) {
  const int32_t window = kv.window();
  ASSERT_EQ(window, 64);
  for (int il = 0; il < kv.config().n_layer; ++il) {
    for (int k = 0; k < 2; ++k) {
      const size_t row = k == 0 ? kv.k_row_bytes() : kv.v_row_bytes();
      auto got = kv.ResidentPagesOfRun(il, k, 0);
      ASSERT_TRUE(got.ok());
      if (kv.is_local(il)) {
        EXPECT_LE(*got, Pages(window * row) + 2) << "local layer " << il << (k ? " V" : " K") << " at " << n;
      } else {
        EXPECT_EQ(*got, Pages(n * row)) << "global layer " << il << (k ? " V" : " K") << " at " << n;
      }
    }
  }
  auto resident = kv.ResidentBytes();
  ASSERT_TRUE(resident.ok());
  EXPECT_EQ(kv.committed_bytes(), *resident) << "tracking == mincore at " << n << " tokens";
}

TEST(Gemma3Window, FourThousandTokensKeepOnlyTheWindowOnLocalLayers) {
  REQUIRE_SHARED_FILE(kGemma);
  auto model = Model::Load(testing::SharedPath(kGemma), {.huge_pages = false});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const HParams& hp = (*model)->hparams();
  KvConfig kc;
  kc.n_layer = hp.n_layer;
  kc.n_ctx_slot = 4096;
  kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
  kc.layer_window = hp.layer_window;
  kc.max_step = 512;
  auto kv = KvCache::Create(kc);
  ASSERT_TRUE(kv.ok());
  ThreadPool pool(2);
  Forward fwd(**model, **kv, pool, AttentionMode::kFlash);
  Batch b;
  ForwardOutput out;
  std::vector<float> last_prompt_logits;
  // A prompt of 4,032 tokens in batches of 512, then 64 generated one by one.
  int32_t pos = 0;
  while (pos < 4032) {
    b.Clear();
    const int32_t n = std::min(512, 4032 - pos);
    for (int32_t i = 0; i < n; ++i) b.Add(1 + (pos + i) * 7 % 500, pos + i, 0, i + 1 == n ? Batch::kLogits : Batch::kNone);
    ASSERT_TRUE(fwd.Run(b, &out).ok());
    pos += n;
    ExpectWindowPages(**kv, pos);
  }
  for (; pos < 4096; ++pos) {
    b.Clear();
    b.Add(1 + pos * 7 % 500, pos, 0, Batch::kLogits);
    ASSERT_TRUE(fwd.Run(b, &out).ok());
    ExpectWindowPages(**kv, pos + 1);
  }
  EXPECT_EQ((*kv)->local_floor(0), 4096 - 64);
  EXPECT_LE((*kv)->peak_committed_bytes(), (*kv)->BytesForCells(4096)) << "the budget's bound holds";
}

// A prompt tile whose windows start in the second page of a key block (rows of 256 bytes: a block of 32
// keys spans two pages) must not read the block's first page, which the window gave back: a read maps it
// again, and mincore would count a page the cache says it does not hold.
TEST(Gemma3Window, AttentionNeverReadsPagesBehindTheWindow) {
  KvConfig kc;
  kc.n_layer = 2;
  kc.n_ctx_slot = 2048;
  kc.n_embd_k = kc.n_embd_v = 128;  // two kv heads of 64, f16: 256-byte rows, 16 per page
  kc.head_dim = 64;
  kc.layer_window = {64, 0};
  auto made = KvCache::Create(kc);
  ASSERT_TRUE(made.ok());
  KvCache& kv = **made;
  std::vector<float> row(128);
  auto write = [&](int32_t from, int32_t to) {
    for (int32_t c = from; c < to; ++c) {
      for (int64_t i = 0; i < 128; ++i) row[i] = std::sin(0.1f * static_cast<float>(c * 128 + i));
      for (int il = 0; il < 2; ++il) {
        quant::QuantizeRow(kc.type_k, row.data(), kv.KRow(il, 0, c), 128);
        quant::QuantizeRow(kc.type_v, row.data(), kv.VRow(il, 0, c), 128);
      }
    }
  };
  write(0, 1014);
  kv.SetCells(0, 1014);  // floor 950: the block of cells 928..959 keeps only its second page
  ASSERT_EQ(kv.local_floor(0), 950);
  write(1014, 1026);  // a tile of 12 prompt tokens, as the forward pass writes them before attending
  std::vector<int32_t> end(12), begin(12);
  for (int t = 0; t < 12; ++t) {
    end[t] = 1014 + t + 1;
    begin[t] = end[t] - 64;
  }
  std::vector<float> q(12 * 2 * 64, 0.5f), out(12 * 2 * 64);
  KvRows rows;
  rows.k = kv.KRow(0, 0, 0);
  rows.v = kv.VRow(0, 0, 0);
  rows.k_row_bytes = kv.k_row_bytes();
  rows.v_row_bytes = kv.v_row_bytes();
  AttendBatch a;
  a.q = q.data();
  a.q_tok_stride = a.out_tok_stride = 128;
  a.q_stride = a.out_stride = 64;
  a.n_kv_heads = 2;
  a.n_tok = 12;
  a.n_kv = end.data();
  a.kv_begin = begin.data();
  a.out = out.data();
  AttentionScratch scratch;
  AttendTokens(AttentionMode::kFlash, a, rows, 0, 64, 0.125f, scratch);
  kv.SetCells(0, 1026);
  auto resident = kv.ResidentBytes();
  ASSERT_TRUE(resident.ok());
  EXPECT_EQ(kv.committed_bytes(), *resident) << "a page behind the window was read again";
}

}  // namespace
}  // namespace lazyslot
