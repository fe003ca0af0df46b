// KV cache memory tests: they assert pages, not time. Committed bytes from the cache's own tracking are
// checked against the kernel (mincore on the arena) after creation, after n tokens, after trims and
// releases, and in eager mode.
#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/vm.h"
#include "quant/quant.h"

namespace lazyslot {
namespace {

KvConfig SmallConfig(TensorType type, int n_slot = 2, int32_t n_ctx = 700) {
  KvConfig c;
  c.n_layer = 3;
  c.n_slot = n_slot;
  c.n_ctx_slot = n_ctx;
  c.n_embd_k = c.n_embd_v = 1024;  // Qwen3-0.6B's width: 8 KV heads x 128
  c.head_dim = 128;
  c.type_k = c.type_v = type;
  return c;
}

std::unique_ptr<KvCache> Make(const KvConfig& c) {
  auto kv = KvCache::Create(c);
  EXPECT_TRUE(kv.ok()) << kv.status().ToString();
  return kv.ok() ? std::move(kv).value() : nullptr;
}

// A deterministic K or V row for (layer, kv, slot, cell).
std::vector<float> RowValues(int il, int kv, int slot, int32_t cell, int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = std::sin(0.01f * (i + 1) * (cell + 1) + il * 0.3f + kv * 0.7f + slot);
  return v;
}

// Writes cells [from, to) of `slot` the way the forward pass does: each token's K and V rows quantized
// straight into the cache, then the cell count updated.
void WriteTokens(KvCache& kv, int slot, int32_t from, int32_t to) {
  const KvConfig& c = kv.config();
  for (int32_t cell = from; cell < to; ++cell) {
    for (int il = 0; il < c.n_layer; ++il) {
      quant::QuantizeRow(c.type_k, RowValues(il, 0, slot, cell, c.n_embd_k).data(), kv.KRow(il, slot, cell),
                         c.n_embd_k);
      quant::QuantizeRow(c.type_v, RowValues(il, 1, slot, cell, c.n_embd_v).data(), kv.VRow(il, slot, cell),
                         c.n_embd_v);
    }
  }
  kv.SetCells(slot, to);
}

size_t PagesFor(size_t bytes) { return (bytes + vm::PageSize() - 1) / vm::PageSize(); }

// Every run of every slot has exactly the pages its tokens need, and the totals agree with mincore.
void ExpectResidentMatchesCells(const KvCache& kv, const std::vector<int32_t>& cells_per_slot) {
  const KvConfig& c = kv.config();
  uint64_t expect_total = 0;
  for (int s = 0; s < c.n_slot; ++s) {
    for (int il = 0; il < c.n_layer; ++il) {
      for (int k = 0; k < 2; ++k) {
        const size_t row = k == 0 ? kv.k_row_bytes() : kv.v_row_bytes();
        const size_t expect = PagesFor(static_cast<size_t>(cells_per_slot[s]) * row);
        auto got = kv.ResidentPagesOfRun(il, k, s);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(*got, expect) << "slot " << s << " layer " << il << (k ? " V" : " K") << " with "
                                << cells_per_slot[s] << " cells of " << row << " bytes";
        expect_total += expect * vm::PageSize();
      }
    }
  }
  auto resident = kv.ResidentBytes();
  ASSERT_TRUE(resident.ok());
  EXPECT_EQ(*resident, expect_total);
  EXPECT_EQ(kv.committed_bytes(), expect_total) << "the cache's own tracking disagrees with mincore";
}

class KvTypeTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(KvTypeTest, NothingResidentAfterCreation) {
  auto kv = Make(SmallConfig(GetParam()));
  ASSERT_TRUE(kv);
  EXPECT_GT(kv->reserved_bytes(), 0u);
  EXPECT_EQ(kv->reserved_bytes(), kv->reserved_bytes_k() + kv->reserved_bytes_v());
  EXPECT_EQ(kv->committed_bytes(), 0u);
  ExpectResidentMatchesCells(*kv, {0, 0});
}

TEST_P(KvTypeTest, ResidentPagesPerRunAreCeilOfTokenBytes) {
  auto kv = Make(SmallConfig(GetParam()));
  ASSERT_TRUE(kv);
  // Grow slot 1 token by token through counts that end inside, at, and past page boundaries.
  int32_t n = 0;
  for (int32_t target : {1, 2, 3, 4, 37, 64, 65, 301, 700}) {
    WriteTokens(*kv, 1, n, target);
    n = target;
    ExpectResidentMatchesCells(*kv, {0, n});
    EXPECT_EQ(kv->committed_bytes(1), kv->BytesForCells(n));
  }
  // The other slot commits independently.
  WriteTokens(*kv, 0, 0, 5);
  ExpectResidentMatchesCells(*kv, {5, 700});
}

TEST_P(KvTypeTest, TrimReleasesTheTailAndKeepsTheRows) {
  auto kv = Make(SmallConfig(GetParam()));
  ASSERT_TRUE(kv);
  WriteTokens(*kv, 0, 0, 500);
  WriteTokens(*kv, 1, 0, 40);
  // Copy of the rows that stay, to check a trim never touches them.
  std::vector<uint8_t> keep_k(kv->KRow(2, 0, 0), kv->KRow(2, 0, 0) + 123 * kv->k_row_bytes());
  auto released = kv->Trim(0, 123);
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, kv->BytesForCells(500) - kv->BytesForCells(123));
  EXPECT_EQ(kv->n_cells(0), 123);
  ExpectResidentMatchesCells(*kv, {123, 40});
  EXPECT_EQ(0, std::memcmp(keep_k.data(), kv->KRow(2, 0, 0), keep_k.size()));
  // Grow again after a trim: the released pages commit again as they are written.
  WriteTokens(*kv, 0, 123, 200);
  ExpectResidentMatchesCells(*kv, {200, 40});
  // A trim to zero returns everything of that slot.
  released = kv->Trim(0, 0);
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, kv->BytesForCells(200));
  ExpectResidentMatchesCells(*kv, {0, 40});
  // Trimming above the high-water mark releases nothing.
  released = kv->Trim(1, 600);
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, 0u);
  EXPECT_EQ(kv->n_cells(1), 40);
}

TEST_P(KvTypeTest, ReleaseAllLeavesNothingResident) {
  auto kv = Make(SmallConfig(GetParam()));
  ASSERT_TRUE(kv);
  WriteTokens(*kv, 0, 0, 333);
  WriteTokens(*kv, 1, 0, 700);
  auto released = kv->ReleaseAll();
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, kv->BytesForCells(333) + kv->BytesForCells(700));
  EXPECT_EQ(kv->n_cells(0), 0);
  EXPECT_EQ(kv->n_cells(1), 0);
  ExpectResidentMatchesCells(*kv, {0, 0});
}

TEST_P(KvTypeTest, EagerModeHasEveryPageResident) {
  KvConfig c = SmallConfig(GetParam());
  c.eager = true;
  auto kv = Make(c);
  ASSERT_TRUE(kv);
  auto resident = kv->ResidentBytes();
  ASSERT_TRUE(resident.ok());
  EXPECT_EQ(*resident, kv->reserved_bytes());
  EXPECT_EQ(kv->committed_bytes(), kv->reserved_bytes());
  // As llama.cpp, eager mode never gives pages back: a trim only moves the cell count.
  WriteTokens(*kv, 0, 0, 10);
  ASSERT_TRUE(kv->Trim(0, 0).ok());
  ASSERT_TRUE(kv->ReleaseAll().ok());
  resident = kv->ResidentBytes();
  ASSERT_TRUE(resident.ok());
  EXPECT_EQ(*resident, kv->reserved_bytes());
  EXPECT_EQ(kv->n_cells(0), 0);
}

TEST_P(KvTypeTest, BytesForCellsAndCellsForBytesAgree) {
  auto kv = Make(SmallConfig(GetParam()));
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->BytesForCells(0), 0u);
  for (int32_t n : {1, 2, 63, 64, 65, 699, 700}) {
    const uint64_t b = kv->BytesForCells(n);
    EXPECT_GE(kv->CellsForBytes(b), n);
    EXPECT_LT(kv->CellsForBytes(b - 1), n);
  }
  EXPECT_EQ(kv->CellsForBytes(~uint64_t{0}), 700);
}

INSTANTIATE_TEST_SUITE_P(Types, KvTypeTest,
                         ::testing::Values(TensorType::kF16, TensorType::kQ8_0, TensorType::kF32),
                         [](const auto& info) { return std::string(TypeName(info.param)); });

TEST(KvCacheTest, Qwen3ShapedCacheReservesEverythingAndCommitsNothing) {
  // --parallel 2 --ctx-size 16384 on Qwen3-0.6B: 28 layers, 1024-wide rows, f16 -> 1,792 MiB reserved.
  KvConfig c;
  c.n_layer = 28;
  c.n_slot = 2;
  c.n_ctx_slot = 8192;
  c.n_embd_k = c.n_embd_v = 1024;
  c.head_dim = 128;
  auto kv = Make(c);
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->reserved_bytes(), 1792ull << 20);
  EXPECT_EQ(kv->BytesForCells(1), 28ull * 2 * vm::PageSize());
  auto resident = kv->ResidentBytes();
  ASSERT_TRUE(resident.ok());
  EXPECT_EQ(*resident, 0u);
  // 1,064 tokens hold 1,064 x 112 KiB, rounded up to pages per run.
  WriteTokens(*kv, 0, 0, 1064);
  EXPECT_EQ(kv->committed_bytes(), 1064ull * 112 * 1024);
  ExpectResidentMatchesCells(*kv, {1064, 0});
}

TEST(KvCacheTest, BlockTypeNeedsWholeBlocksPerHead) {
  KvConfig c = SmallConfig(TensorType::kQ8_0);
  c.n_embd_k = c.n_embd_v = 32;  // stories260K: 4 KV heads x head_dim 8
  c.head_dim = 8;
  auto kv = KvCache::Create(c);
  ASSERT_FALSE(kv.ok());
  EXPECT_EQ(kv.status().code(), Code::kInvalidArgument);
  EXPECT_NE(kv.status().message().find("head_dim is 8"), std::string::npos) << kv.status().message();
  EXPECT_NE(kv.status().message().find("q8_0"), std::string::npos);
  c.type_k = c.type_v = TensorType::kF16;
  EXPECT_TRUE(KvCache::Create(c).ok());
}

TEST(KvCacheTest, ParsesTheUserFacingTypes) {
  TensorType t;
  ASSERT_TRUE(ParseKvCacheType("q8_0", &t));
  EXPECT_EQ(t, TensorType::kQ8_0);
  ASSERT_TRUE(ParseKvCacheType("f32", &t));
  EXPECT_EQ(t, TensorType::kF32);
  ASSERT_TRUE(ParseKvCacheType("f16", &t));
  EXPECT_EQ(t, TensorType::kF16);
  EXPECT_FALSE(ParseKvCacheType("q4_0", &t));
  EXPECT_FALSE(ParseKvCacheType("F16", &t));
}

}  // namespace
}  // namespace lazyslot
