// Sliding-window (local) layers in the KV cache, asserting pages: a local run keeps only its window's pages
// as the sequence grows (mincore), the tracking equals the kernel's count, the budget's bytes bound every
// peak, and reuse, copies and trims follow the window (only the end of a sequence can be continued).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/vm.h"
#include "kv/kv_cache.h"

namespace lazyslot {
namespace {

constexpr int32_t kWindow = 64;

// Gemma 3's pattern in small: five local layers, then a global one; one 64-wide f16 KV head per row (128
// bytes: a window is two pages).
KvConfig WindowConfig(int n_slot = 2, int32_t n_ctx = 4096, int32_t step = 512) {
  KvConfig c;
  c.n_layer = 6;
  c.n_slot = n_slot;
  c.n_ctx_slot = n_ctx;
  c.n_embd_k = c.n_embd_v = 64;
  c.head_dim = 64;
  c.layer_window = {kWindow, kWindow, kWindow, kWindow, kWindow, 0};
  c.max_step = step;
  return c;
}

std::unique_ptr<KvCache> Make(const KvConfig& c) {
  auto kv = KvCache::Create(c);
  EXPECT_TRUE(kv.ok()) << kv.status().ToString();
  return kv.ok() ? std::move(kv).value() : nullptr;
}

// A row's bytes name its (layer, K|V, cell): what a copy or restore must bring back.
uint8_t Tag(int il, int k, int32_t cell) { return static_cast<uint8_t>(1 + (il * 2 + k + cell * 7) % 251); }

void Write(KvCache& kv, int slot, int32_t from, int32_t to) {
  for (int32_t cell = from; cell < to; ++cell) {
    for (int il = 0; il < kv.config().n_layer; ++il) {
      std::memset(kv.KRow(il, slot, cell), Tag(il, 0, cell), kv.k_row_bytes());
      std::memset(kv.VRow(il, slot, cell), Tag(il, 1, cell), kv.v_row_bytes());
    }
  }
  kv.SetCells(slot, to);
}

size_t Pages(size_t bytes) { return (bytes + vm::PageSize() - 1) / vm::PageSize(); }

// Each run of `slot` holds what its layer's group holds, and the totals equal mincore.
void ExpectWindowPages(const KvCache& kv, int slot, int32_t n) {
  for (int il = 0; il < kv.config().n_layer; ++il) {
    for (int k = 0; k < 2; ++k) {
      const size_t row = k == 0 ? kv.k_row_bytes() : kv.v_row_bytes();
      auto got = kv.ResidentPagesOfRun(il, k, slot);
      ASSERT_TRUE(got.ok());
      if (kv.is_local(il)) {
        EXPECT_LE(*got, Pages(kWindow * row) + 2) << "local layer " << il << " at " << n << " tokens";
      } else {
        EXPECT_EQ(*got, Pages(n * row)) << "global layer " << il << " at " << n << " tokens";
      }
    }
  }
  auto resident = kv.ResidentBytes();
  ASSERT_TRUE(resident.ok());
  EXPECT_EQ(kv.committed_bytes(), *resident) << "tracking == mincore at " << n << " tokens";
}

TEST(KvWindowTest, LocalRunsKeepOnlyTheirWindowAsTheSequenceGrows) {
  auto kv = Make(WindowConfig());
  ASSERT_TRUE(kv);
  // A prompt in steps of 512, then generation token by token.
  for (int32_t n = 0; n < 4096 - 64;) {
    const int32_t next = std::min(n + 512, 4096 - 64);
    Write(*kv, 0, n, next);
    ExpectWindowPages(*kv, 0, next);
    n = next;
  }
  for (int32_t n = 4096 - 64; n < 4096; ++n) {
    Write(*kv, 0, n, n + 1);
    ExpectWindowPages(*kv, 0, n + 1);
  }
  EXPECT_EQ(kv->local_floor(0), 4096 - kWindow);
  // The window's rows are intact.
  for (int32_t cell = 4096 - kWindow; cell < 4096; ++cell) {
    ASSERT_EQ(kv->KRow(2, 0, cell)[5], Tag(2, 0, cell));
    ASSERT_EQ(kv->VRow(4, 0, cell)[0], Tag(4, 1, cell));
  }
  // The budget's bytes for a full slot bound the peak, and are well under what six global layers cost.
  EXPECT_LE(kv->peak_committed_bytes(), kv->BytesForCells(4096));
  const uint64_t full = 6 * 2 * Pages(4096 * kv->k_row_bytes()) * vm::PageSize();
  EXPECT_LT(kv->BytesForCells(4096), full / 3) << "five of six layers hold window + step rows";
}

TEST(KvWindowTest, OnlyTheEndOfASlidSequenceCanBeContinued) {
  auto kv = Make(WindowConfig());
  ASSERT_TRUE(kv);
  Write(*kv, 0, 0, 50);
  // Nothing has slid out yet: any point can be continued.
  EXPECT_EQ(kv->ReusableCells(0, 10), 10);
  EXPECT_EQ(kv->ReusableCells(0, 50), 50);
  Write(*kv, 0, 50, 300);
  EXPECT_EQ(kv->ReusableCells(0, 300), 300);
  EXPECT_EQ(kv->ReusableCells(0, 299), 299) << "the window keeps one cell more than a query needs";
  EXPECT_EQ(kv->ReusableCells(0, 298), 0);
  EXPECT_EQ(kv->ReusableCells(0, 100), 0);
  EXPECT_EQ(kv->ReusableCells(0, 400), 300) << "never past what the slot holds";
  // A trim to a point the window has left keeps nothing, and gives back every page.
  auto released = kv->Trim(0, 200);
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(kv->n_cells(0), 0);
  EXPECT_EQ(kv->committed_bytes(0), 0u);
  ExpectWindowPages(*kv, 0, 0);
  // A trim to the last cell keeps the window.
  Write(*kv, 0, 0, 300);
  ASSERT_TRUE(kv->Trim(0, 299).ok());
  EXPECT_EQ(kv->n_cells(0), 299);
  ExpectWindowPages(*kv, 0, 299);
  Write(*kv, 0, 299, 310);
  ExpectWindowPages(*kv, 0, 310);
}

TEST(KvWindowTest, CopiesAndRestoresCarryTheWindow) {
  auto kv = Make(WindowConfig());
  ASSERT_TRUE(kv);
  Write(*kv, 0, 0, 1000);
  ASSERT_EQ(kv->ReusableCells(0, 999), 999);
  kv->CopyCells(0, 1, 999);
  EXPECT_EQ(kv->n_cells(1), 999);
  EXPECT_EQ(kv->ReusableCells(1, 999), 999);
  for (int32_t cell = 999 - kWindow + 1; cell < 999; ++cell) {
    ASSERT_EQ(kv->KRow(0, 1, cell)[1], Tag(0, 0, cell)) << cell;
    ASSERT_EQ(kv->VRow(3, 1, cell)[1], Tag(3, 1, cell)) << cell;
  }
  for (int32_t cell : {0, 500, 998}) ASSERT_EQ(kv->KRow(5, 1, cell)[0], Tag(5, 0, cell)) << "global layer";
  ExpectWindowPages(*kv, 1, 999);
  // A slot restored from a file: the caller wrote the window's rows, the floor says where they start.
  ASSERT_TRUE(kv->Trim(1, 0).ok());
  kv->SetRestored(1, 999, 999 - kWindow);
  EXPECT_EQ(kv->local_floor(1), 999 - kWindow);
  EXPECT_EQ(kv->ReusableCells(1, 999), 999);
  ASSERT_TRUE(kv->ReleaseAll().ok());
  EXPECT_EQ(kv->local_floor(0), 0);
  EXPECT_EQ(kv->committed_bytes(), 0u);
}

TEST(KvWindowTest, BudgetBytesCountALocalLayerAtWindowPlusStep) {
  auto kv = Make(WindowConfig(1, 16384, 512));
  ASSERT_TRUE(kv);
  const uint64_t page = vm::PageSize();
  const uint64_t row = kv->k_row_bytes();
  // Short sequences: every layer holds every cell.
  EXPECT_EQ(kv->BytesForCells(100), 6 * 2 * Pages(100 * row) * page);
  // Long ones: the global layer all of them, each local one window + step rows and the page its start
  // straddles.
  const uint64_t local = 2 * (Pages((kWindow + 512) * row) + 1) * page;
  EXPECT_EQ(kv->BytesForCells(16384), 2 * Pages(16384 * row) * page + 5 * local);
  const int32_t fit = kv->CellsForBytes(kv->BytesForCells(9000));  // up to the pages' last whole row
  EXPECT_GE(fit, 9000);
  EXPECT_EQ(kv->BytesForCells(fit), kv->BytesForCells(9000));
  // Bad layouts are refused.
  KvConfig c = WindowConfig();
  c.layer_window = {64, 32, 0, 0, 0, 0};
  EXPECT_FALSE(KvCache::Create(c).ok());
  c.layer_window = {64, 0};
  EXPECT_FALSE(KvCache::Create(c).ok());
}

}  // namespace
}  // namespace lazyslot
