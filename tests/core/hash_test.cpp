// Checksum64 (core/hash.h): a stream fed in any pieces sums as the whole, and any one flipped bit, a missing
// byte or a swapped pair of words changes the sum.
#include "core/hash.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <vector>

namespace lazyslot {
namespace {

std::vector<uint8_t> Bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n);
  for (uint8_t& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

uint64_t Sum(const std::vector<uint8_t>& b, uint64_t seed = 0) {
  Checksum64 c(seed);
  c.Update(b.data(), b.size());
  return c.Digest();
}

TEST(Checksum64, PiecesSumAsTheWhole) {
  std::mt19937 rng(3);
  for (size_t n : {0u, 1u, 7u, 8u, 31u, 32u, 33u, 63u, 64u, 100u, 4097u}) {
    const std::vector<uint8_t> b = Bytes(n, static_cast<uint32_t>(n));
    const uint64_t whole = Sum(b);
    for (int trial = 0; trial < 20; ++trial) {
      Checksum64 c;
      size_t at = 0;
      while (at < n) {
        const size_t take = std::min<size_t>(n - at, rng() % 40);
        c.Update(b.data() + at, take);
        at += take;
      }
      EXPECT_EQ(c.Digest(), whole) << n << " bytes, trial " << trial;
    }
  }
}

TEST(Checksum64, EveryFlippedBitChangesTheSum) {
  const std::vector<uint8_t> b = Bytes(200, 9);
  const uint64_t base = Sum(b);
  std::set<uint64_t> seen = {base};
  for (size_t i = 0; i < b.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> c = b;
      c[i] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_TRUE(seen.insert(Sum(c)).second) << "byte " << i << " bit " << bit;
    }
  }
}

TEST(Checksum64, LengthOrderAndSeedMatter) {
  const std::vector<uint8_t> b = Bytes(96, 11);
  std::vector<uint8_t> shorter(b.begin(), b.end() - 1), zero_tail = b, swapped = b;
  zero_tail.push_back(0);
  std::memcpy(swapped.data(), b.data() + 8, 8);
  std::memcpy(swapped.data() + 8, b.data(), 8);
  EXPECT_NE(Sum(b), Sum(shorter));
  EXPECT_NE(Sum(b), Sum(zero_tail));
  EXPECT_NE(Sum(b), Sum(swapped));
  EXPECT_NE(Sum(b, 0), Sum(b, 1));
  EXPECT_NE(Sum({}), Sum(std::vector<uint8_t>(1, 0)));
}

}  // namespace
}  // namespace lazyslot
