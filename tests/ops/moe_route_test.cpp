// RouteTopK: softmax over the router logits, the k largest best first (ties to the lower expert), weights
// renormalised to sum to 1 or left as probabilities.
#include "ops/moe_route.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace lazyslot {
namespace {

struct Route {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

Route Routed(const std::vector<float>& logits, int k, bool normalize) {
  Route r;
  r.ids.resize(k);
  r.weights.resize(k);
  std::vector<float> probs(logits.size());
  RouteTopK(logits.data(), static_cast<int>(logits.size()), k, normalize, r.ids.data(), r.weights.data(),
            probs.data());
  return r;
}

TEST(MoeRoute, TheLargestBestFirstWithTheirProbabilities) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 1.0f, 3.0f, 0.0f};
  const Route r = Routed(logits, 3, false);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{4, 1, 3}));
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l));
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(r.weights[j], std::exp(double(logits[r.ids[j]])) / sum, 1e-6);
}

TEST(MoeRoute, RenormalisedWeightsSumToOneInTheSameRatio) {
  const Route r = Routed({0.1f, 1.7f, 1.2f, -0.4f, 0.9f, 1.69f, -3.0f, 0.0f}, 2, true);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 5}));
  EXPECT_NEAR(r.weights[0] + r.weights[1], 1.0f, 1e-6f);
  EXPECT_NEAR(r.weights[0] / r.weights[1], std::exp(0.01), 1e-5);
}

TEST(MoeRoute, TiesGoToTheLowerExpertAndAllExpertsMayBeUsed) {
  const Route r = Routed({1.0f, 2.0f, 2.0f, 1.0f}, 4, true);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 2, 0, 3}));
  EXPECT_FLOAT_EQ(r.weights[0], r.weights[1]);
  EXPECT_NEAR(r.weights[0] + r.weights[1] + r.weights[2] + r.weights[3], 1.0f, 1e-6f);
}

TEST(MoeRoute, ExtremeLogitsStayFinite) {
  // exp(-1000) and exp(-2000) both underflow to 0: a tie, which goes to the lower expert.
  const Route r = Routed({1000.0f, -1000.0f, 0.0f}, 2, true);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 1}));
  EXPECT_FLOAT_EQ(r.weights[0], 1.0f);
  EXPECT_FLOAT_EQ(r.weights[1], 0.0f);
}

}  // namespace
}  // namespace lazyslot
