// The prefix index: blocks of held tokens found from a prompt's first blocks, kept in step with each slot's
// tokens as they grow, are trimmed and are replaced.
#include "engine/prefix_index.h"

#include <gtest/gtest.h>

#include <vector>

namespace lazyslot {
namespace {

std::vector<TokenId> Seq(int n, int salt) {
  std::vector<TokenId> t;
  for (int i = 0; i < n; ++i) t.push_back((i * 7 + salt * 131) % 1000);
  return t;
}

TEST(PrefixIndex, FindsTheSlotsHoldingTheLongestBlockPrefix) {
  constexpr int B = PrefixIndex::kBlock;
  PrefixIndex index(3);
  const std::vector<TokenId> a = Seq(5 * B + 3, 1);
  std::vector<TokenId> b(a.begin(), a.begin() + 2 * B);  // a's first two blocks, then its own
  for (TokenId t : Seq(2 * B, 2)) b.push_back(t);
  index.Extend(0, a, 0);
  index.Extend(1, b, 0);
  EXPECT_EQ(index.blocks(0), 5u);
  EXPECT_EQ(index.blocks(1), 4u);
  int32_t blocks = 0;
  std::vector<TokenId> prompt(a.begin(), a.begin() + 4 * B + 10);
  EXPECT_EQ(index.Longest(prompt, 1 << 20, 0, &blocks), std::vector<int>{0});
  EXPECT_EQ(blocks, 4);
  EXPECT_EQ(index.Longest(prompt, 3 * B, 0, &blocks), (std::vector<int>{0}));  // the limit caps the walk
  EXPECT_EQ(blocks, 3);
  EXPECT_EQ(index.Longest(a, 2 * B + 5, 0, &blocks), (std::vector<int>{0, 1}));
  EXPECT_EQ(blocks, 2);
  // A different first block matches nothing; so does a prompt shorter than a block.
  EXPECT_TRUE(index.Longest(Seq(3 * B, 9), 1 << 20, 0, &blocks).empty());
  EXPECT_EQ(blocks, 0);
  EXPECT_TRUE(index.Longest(std::vector<TokenId>(a.begin(), a.begin() + B - 1), 1 << 20, 0, &blocks).empty());
}

TEST(PrefixIndex, FollowsTrimsAndReplacements) {
  constexpr int B = PrefixIndex::kBlock;
  PrefixIndex index(2);
  std::vector<TokenId> a = Seq(4 * B, 1);
  index.Extend(0, a, 0);
  index.Truncate(0, 2 * B + 5);  // keeps two whole blocks
  EXPECT_EQ(index.blocks(0), 2u);
  int32_t blocks = 0;
  EXPECT_EQ(index.Longest(a, 1 << 20, 0, &blocks), std::vector<int>{0});
  EXPECT_EQ(blocks, 2);
  // The slot goes on with other tokens: its new blocks are indexed, the old third block is not.
  a.resize(2 * B + 5);
  for (TokenId t : Seq(2 * B, 5)) a.push_back(t);
  index.Extend(0, a, 0);
  EXPECT_EQ(index.Longest(a, 1 << 20, 0, &blocks), std::vector<int>{0});
  EXPECT_EQ(blocks, 4);
  EXPECT_EQ(index.Longest(Seq(4 * B, 1), 1 << 20, 0, &blocks), std::vector<int>{0});
  EXPECT_EQ(blocks, 2);
  index.Truncate(0, 0);
  EXPECT_EQ(index.blocks(0), 0u);
  EXPECT_TRUE(index.Longest(a, 1 << 20, 0, &blocks).empty());
  // Growing one token at a time indexes each block once it is whole.
  std::vector<TokenId> g;
  for (TokenId t : Seq(3 * B, 4)) {
    g.push_back(t);
    index.Extend(1, g, 0);
  }
  EXPECT_EQ(index.blocks(1), 3u);
  EXPECT_EQ(index.Longest(g, 1 << 20, 0, &blocks), std::vector<int>{1});
  EXPECT_EQ(blocks, 3);
}

// Two cache scopes (cache_salt) holding the same tokens never find each other's slots.
TEST(PrefixIndex, ScopesNeverMeet) {
  PrefixIndex index(3);
  const std::vector<TokenId> a = Seq(4 * PrefixIndex::kBlock, 3);
  index.Extend(0, a, 0);
  index.Extend(1, a, 77);
  index.Extend(2, a, 78);
  int32_t blocks = 0;
  EXPECT_EQ(index.Longest(a, 1 << 20, 0, &blocks), std::vector<int>{0});
  EXPECT_EQ(index.Longest(a, 1 << 20, 77, &blocks), std::vector<int>{1});
  EXPECT_EQ(index.Longest(a, 1 << 20, 78, &blocks), std::vector<int>{2});
  EXPECT_EQ(blocks, 4);
  EXPECT_TRUE(index.Longest(a, 1 << 20, 79, &blocks).empty());
  EXPECT_EQ(blocks, 0);
}

}  // namespace
}  // namespace lazyslot
