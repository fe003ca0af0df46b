// Prefix sharing in the KV cache (KvCache::ShareCells): a slot maps another's whole pages of a common prefix
// instead of copying them, reads the same rows, and the arena's memory file holds each page once. Writes,
// trims, rewinds, dropped cells (a context shift) and releases of either side never change what the other
// reads: checked against a shadow of every slot's cells over random sequences of operations, with the
// file's allocation equal to the cache's distinct committed bytes after every step.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/vm.h"
#include "kv/kv_cache.h"
#include "kv/kv_state.h"

namespace lazyslot {
namespace {

// Row sizes chosen so page boundaries fall inside rows: K f16 1,024 bytes (4 rows a page), V q8_0 544 bytes.
KvConfig ShareConfig(std::vector<int32_t> layer_window = {}) {
  KvConfig c;
  c.n_layer = 3;
  c.n_slot = 4;
  c.n_ctx_slot = 96;
  c.n_embd_k = 512;
  c.n_embd_v = 512;
  c.type_k = TensorType::kF16;
  c.type_v = TensorType::kQ8_0;
  c.layer_window = std::move(layer_window);
  c.max_step = 8;
  return c;
}

std::unique_ptr<KvCache> Make(const KvConfig& c) {
  auto kv = KvCache::Create(c);
  EXPECT_TRUE(kv.ok()) << kv.status().ToString();
  return kv.ok() ? std::move(kv).value() : nullptr;
}

// The byte pattern of one row: a function of the cell's stamp, its layer and K|V, never all zero.
void Fill(uint8_t* row, size_t bytes, uint32_t stamp, int il, int kv) {
  uint32_t x = stamp * 2654435761u + static_cast<uint32_t>(il) * 97u + static_cast<uint32_t>(kv) * 13u + 1;
  for (size_t i = 0; i < bytes; ++i) {
    x = x * 1664525u + 1013904223u;
    row[i] = static_cast<uint8_t>(x >> 24) | 1;
  }
}

// Every slot's cells, as stamps: what its rows must read.
struct Shadow {
  std::vector<std::vector<uint32_t>> cells;
  uint32_t next = 1;
};

// Writes m new cells after slot s's last, as a forward pass does, then records them.
void Append(KvCache& kv, Shadow& sh, int s, int32_t m) {
  const int32_t n = kv.n_cells(s);
  for (int32_t c = n; c < n + m; ++c) {
    const uint32_t stamp = sh.next++;
    for (int il = 0; il < kv.config().n_layer; ++il) {
      Fill(kv.KRow(il, s, c), kv.k_row_bytes(), stamp, il, 0);
      Fill(kv.VRow(il, s, c), kv.v_row_bytes(), stamp, il, 1);
    }
    sh.cells[s].push_back(stamp);
  }
  kv.SetCells(s, n + m);
}

// Every held row of every slot against the shadow (local layers: from the slot's floor).
void Verify(const KvCache& kv, const Shadow& sh, const char* after) {
  std::vector<uint8_t> want(std::max(kv.k_row_bytes(), kv.v_row_bytes()));
  for (int s = 0; s < kv.config().n_slot; ++s) {
    ASSERT_EQ(kv.n_cells(s), static_cast<int32_t>(sh.cells[s].size())) << "slot " << s << " after " << after;
    for (int il = 0; il < kv.config().n_layer; ++il) {
      const int32_t first = kv.is_local(il) ? kv.local_floor(s) : 0;
      for (int32_t c = first; c < kv.n_cells(s); ++c) {
        Fill(want.data(), kv.k_row_bytes(), sh.cells[s][c], il, 0);
        ASSERT_EQ(std::memcmp(kv.KRow(il, s, c), want.data(), kv.k_row_bytes()), 0)
            << "K of slot " << s << " layer " << il << " cell " << c << " after " << after;
        Fill(want.data(), kv.v_row_bytes(), sh.cells[s][c], il, 1);
        ASSERT_EQ(std::memcmp(kv.VRow(il, s, c), want.data(), kv.v_row_bytes()), 0)
            << "V of slot " << s << " layer " << il << " cell " << c << " after " << after;
      }
    }
  }
  // The memory file holds each page once: exactly the distinct committed bytes.
  Result<uint64_t> held = kv.ResidentBytes();
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(*held, kv.committed_bytes()) << "after " << after;
  uint64_t sum = 0;
  for (int s = 0; s < kv.config().n_slot; ++s) sum += kv.committed_bytes(s);
  EXPECT_EQ(kv.committed_bytes(), sum - kv.shared_bytes()) << "after " << after;
}

TEST(KvShare, TheSharerMapsTheWholePagesAndCopiesOnlyTheBoundary) {
  auto kv = Make(ShareConfig());
  ASSERT_TRUE(kv);
  ASSERT_TRUE(kv->shares_pages()) << "memfd_create is available on Debian 12";
  Shadow sh;
  sh.cells.resize(4);
  Append(*kv, sh, 0, 50);
  const uint64_t one = kv->committed_bytes();
  kv->ShareCells(0, 1, 42);
  sh.cells[1].assign(sh.cells[0].begin(), sh.cells[0].begin() + 42);
  Verify(*kv, sh, "share");
  // 42 K rows of 1,024 bytes: 10 whole pages mapped and the 11th (2 rows) copied; 42 V rows of 544 bytes:
  // 5 whole pages mapped and the 6th copied, per layer.
  const uint64_t page = vm::PageSize();
  ASSERT_EQ(page, 4096u);
  EXPECT_EQ(kv->shared_bytes(1), 3 * (10 + 5) * page);
  EXPECT_EQ(kv->MappedBytesForCells(42), kv->shared_bytes(1));  // what the budget admission counts on
  EXPECT_EQ(kv->lent_bytes(0), kv->shared_bytes(1));
  EXPECT_EQ(kv->lent_bytes(1), 0u);
  EXPECT_EQ(kv->committed_bytes(), one + 3 * 2 * page);
  EXPECT_EQ(kv->committed_bytes(1), 3 * (11 + 6) * page);
  // Both go on on their own: the sharer from inside a page, the source past it.
  Append(*kv, sh, 1, 9);
  Append(*kv, sh, 0, 13);
  Verify(*kv, sh, "both continue");
}

TEST(KvShare, AnOwnerThatLeavesHandsItsPagesToASharer) {
  auto kv = Make(ShareConfig());
  ASSERT_TRUE(kv);
  Shadow sh;
  sh.cells.resize(4);
  Append(*kv, sh, 0, 64);
  kv->ShareCells(0, 1, 64);
  kv->ShareCells(1, 2, 40);  // maps slot 0's pages through slot 1
  sh.cells[1] = sh.cells[0];
  sh.cells[2].assign(sh.cells[0].begin(), sh.cells[0].begin() + 40);
  Verify(*kv, sh, "two sharers");
  ASSERT_TRUE(kv->Trim(0, 0).ok());  // the owner goes: slot 1 gets the pages, slot 2 maps slot 1's
  sh.cells[0].clear();
  Verify(*kv, sh, "owner trimmed");
  EXPECT_EQ(kv->shared_bytes(1), 0u);
  EXPECT_GT(kv->shared_bytes(2), 0u);
  Append(*kv, sh, 0, 30);  // the old owner's pages are its own again
  Verify(*kv, sh, "owner refilled");
  ASSERT_TRUE(kv->Trim(1, 21).ok());  // a rewind inside what slot 2 maps: slot 2 keeps reading its rows
  sh.cells[1].resize(21);
  Append(*kv, sh, 1, 25);
  Verify(*kv, sh, "holder rewound and diverged");
  ASSERT_TRUE(kv->ReleaseAll().ok());
  for (auto& c : sh.cells) c.clear();
  Verify(*kv, sh, "release all");
  EXPECT_EQ(*kv->ResidentBytes(), 0u);
}

TEST(KvShare, ASharedSlotSavesAndRestoresItsRows) {
  auto kv = Make(ShareConfig());
  ASSERT_TRUE(kv);
  Shadow sh;
  sh.cells.resize(4);
  Append(*kv, sh, 0, 37);
  kv->ShareCells(0, 1, 37);
  sh.cells[1] = sh.cells[0];
  std::vector<int32_t> tokens(37, 5);
  const std::string path = ::testing::TempDir() + "kv_share_slot.bin";
  ASSERT_TRUE(SaveSlotState(*kv, 1, tokens, 7, path).ok());
  ASSERT_TRUE(kv->Trim(0, 0).ok());
  sh.cells[0].clear();
  Result<SlotStateInfo> info = RestoreSlotState(*kv, 3, 7, path);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  sh.cells[3] = sh.cells[1];
  Verify(*kv, sh, "restore");
  ASSERT_TRUE(RestoreSlotState(*kv, 1, 7, path).ok());  // over itself: its own copy now
  Verify(*kv, sh, "restore over the sharer");
}

// Random sequences of appends, shares, trims, rewinds and releases over four slots, every row checked after
// every step; with and without sliding-window layers (whose rows are copied, not shared).
void RandomOperations(const KvConfig& c, uint32_t seed, int steps) {
  auto kv = Make(c);
  ASSERT_TRUE(kv);
  Shadow sh;
  sh.cells.resize(c.n_slot);
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  for (int step = 0; step < steps; ++step) {
    const int s = pick(c.n_slot);
    const int op = pick(10);
    const int32_t n = kv->n_cells(s);
    std::string what;
    if (op < 4) {
      const int32_t m = std::min<int32_t>(1 + pick(c.max_step), c.n_ctx_slot - n);
      if (m <= 0) continue;
      Append(*kv, sh, s, m);
      what = "append " + std::to_string(m) + " to " + std::to_string(s);
    } else if (op < 7) {
      const int from = pick(c.n_slot);
      if (from == s || kv->n_cells(from) == 0) continue;
      const int32_t k = kv->ReusableCells(from, 1 + pick(kv->n_cells(from)));
      if (k == 0) continue;
      kv->ShareCells(from, s, k);
      sh.cells[s].assign(sh.cells[from].begin(), sh.cells[from].begin() + k);
      // The engine's budget admission counts on this figure before it shares.
      EXPECT_EQ(kv->shared_bytes(s), kv->MappedBytesForCells(k)) << "share " << k << " of " << from;
      what = "share " + std::to_string(k) + " of " + std::to_string(from) + " to " + std::to_string(s);
    } else if (op < 8 && pick(3) == 0) {
      // A restore's emptying: the slot keeps its own pages for up to `cells` cells, then writes from cell 0.
      const int32_t cells = pick(c.n_ctx_slot + 1);
      const uint64_t own_before = kv->committed_bytes(s) - kv->shared_bytes(s);
      ASSERT_TRUE(kv->Rewrite(s, cells).ok());
      sh.cells[s].clear();
      EXPECT_LE(kv->committed_bytes(s), std::min(own_before, kv->BytesForCells(cells))) << "rewrite " << s;
      what = "rewrite " + std::to_string(s) + " keeping pages for " + std::to_string(cells);
    } else if (op < 8 && kv->window() == 0 && n > 1) {
      // A context shift's move: cells [b, b + m) go, the rows after them move down.
      const int32_t b = pick(n - 1), m = 1 + pick(n - b - 1);
      ASSERT_TRUE(kv->DropCells(s, b, m).ok());
      sh.cells[s].erase(sh.cells[s].begin() + b, sh.cells[s].begin() + b + m);
      what = "drop " + std::to_string(m) + " cells at " + std::to_string(b) + " of " + std::to_string(s);
    } else if (op < 9) {
      const int32_t keep = n > 0 ? pick(n + 1) : 0;
      // The other slots' own pages grow by at most what s lent (the pages handed to its borrowers): the
      // budget admission adds lent_bytes to what a reassigned slot's trim leaves behind.
      auto others_own = [&] {
        uint64_t own = 0;
        for (int x = 0; x < c.n_slot; ++x) own += x == s ? 0 : kv->committed_bytes(x) - kv->shared_bytes(x);
        return own;
      };
      const uint64_t own_before = others_own(), lent = kv->lent_bytes(s);
      ASSERT_TRUE(kv->Trim(s, keep).ok());
      EXPECT_LE(others_own(), own_before + lent) << "trim " << s;
      sh.cells[s].resize(kv->n_cells(s));
      what = "trim " + std::to_string(s) + " to " + std::to_string(kv->n_cells(s));
    } else if (pick(4) == 0) {
      ASSERT_TRUE(kv->ReleaseAll().ok());
      for (auto& v : sh.cells) v.clear();
      what = "release all";
    } else {
      continue;
    }
    Verify(*kv, sh, what.c_str());
    if (::testing::Test::HasFatalFailure()) return;
  }
  ASSERT_TRUE(kv->ReleaseAll().ok());
  EXPECT_EQ(*kv->ResidentBytes(), 0u);
}

// Context shift (KvCache::DropCells) in a slot that maps another's pages and in the slot that lends them:
// the rows after the dropped cells move down in the one that drops, the other reads what it read before.
TEST(KvShare, DroppedCellsMoveOnlyTheDroppingSlotsRows) {
  auto kv = Make(ShareConfig());
  ASSERT_TRUE(kv);
  Shadow sh;
  sh.cells.resize(4);
  Append(*kv, sh, 0, 64);
  kv->ShareCells(0, 1, 64);
  sh.cells[1] = sh.cells[0];
  ASSERT_TRUE(kv->DropCells(1, 5, 20).ok());  // the sharer: its mapped pages past cell 5 become its own
  sh.cells[1].erase(sh.cells[1].begin() + 5, sh.cells[1].begin() + 25);
  Verify(*kv, sh, "the sharer drops");
  kv->ShareCells(0, 2, 48);
  sh.cells[2].assign(sh.cells[0].begin(), sh.cells[0].begin() + 48);
  ASSERT_TRUE(kv->DropCells(0, 0, 10).ok());  // the owner: slot 2 keeps reading the old rows
  sh.cells[0].erase(sh.cells[0].begin(), sh.cells[0].begin() + 10);
  Verify(*kv, sh, "the owner drops");
  Append(*kv, sh, 0, 7);
  Append(*kv, sh, 1, 7);
  Append(*kv, sh, 2, 7);
  Verify(*kv, sh, "all continue");
  EXPECT_EQ(kv->DropCells(0, 50, 20).code(), Code::kInvalidArgument) << "past the slot's cells";
  EXPECT_EQ(kv->DropCells(0, 3, 0).code(), Code::kInvalidArgument);
  auto windowed = Make(ShareConfig({0, 12, 0}));
  ASSERT_TRUE(windowed);
  Shadow wsh;
  wsh.cells.resize(4);
  Append(*windowed, wsh, 0, 20);
  EXPECT_EQ(windowed->DropCells(0, 2, 5).code(), Code::kUnimplemented) << "a local run holds only its window";
}

TEST(KvShare, RandomOperationsKeepEveryRowAndCountEachPageOnce) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    RandomOperations(ShareConfig(), seed, 300);
  }
}

TEST(KvShare, RandomOperationsWithSlidingWindowLayers) {
  for (uint32_t seed = 11; seed <= 14; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    RandomOperations(ShareConfig({0, 12, 0}), seed, 300);
  }
}

TEST(KvShare, EagerModeCopies) {
  KvConfig c = ShareConfig();
  c.eager = true;
  auto kv = Make(c);
  ASSERT_TRUE(kv);
  EXPECT_FALSE(kv->shares_pages());
  std::vector<uint8_t> row(kv->k_row_bytes());
  Fill(row.data(), row.size(), 9, 0, 0);
  std::memcpy(kv->KRow(0, 0, 0), row.data(), row.size());
  kv->SetCells(0, 1);
  kv->ShareCells(0, 1, 1);
  EXPECT_EQ(std::memcmp(kv->KRow(0, 1, 0), row.data(), row.size()), 0);
  EXPECT_EQ(kv->shared_bytes(), 0u);
}

}  // namespace
}  // namespace lazyslot
