// Sampler: logit_bias (added before everything else; -inf bans), greedy and random draws.
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace lazyslot {
namespace {

constexpr float kBan = -std::numeric_limits<float>::infinity();

TEST(Sampler, LogitBiasBansAndForcesGreedy) {
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.0f};
  SamplingParams p;
  p.temperature = 0;
  EXPECT_EQ(Sampler(p).Sample(logits.data(), 4), 1);
  p.logit_bias = {{1, kBan}};
  EXPECT_EQ(Sampler(p).Sample(logits.data(), 4), 3);
  p.logit_bias = {{1, -100.0f}, {0, 100.0f}};
  EXPECT_EQ(Sampler(p).Sample(logits.data(), 4), 0);
  p.logit_bias = {{7, 100.0f}, {-1, 5.0f}};  // ids outside the vocabulary are ignored here (checked upstream)
  EXPECT_EQ(Sampler(p).Sample(logits.data(), 4), 1);
}

TEST(Sampler, BannedTokenIsNeverDrawn) {
  const std::vector<float> logits = {1.0f, 1.0f, 1.0f};
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.logit_bias = {{0, kBan}, {2, kBan}};
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    p.seed = seed;
    EXPECT_EQ(Sampler(p).Sample(logits.data(), 3), 1);
  }
  p.logit_bias = {{0, kBan}, {1, kBan}, {2, kBan}};  // nothing left: some token, no crash
  const int32_t t = Sampler(p).Sample(logits.data(), 3);
  EXPECT_TRUE(t >= 0 && t < 3);
}

}  // namespace
}  // namespace lazyslot
