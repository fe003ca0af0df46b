// llama-server's greedy continuations (reference/server-greedy/*.json) as a test expects them: each step
// holds the top-5 log-probabilities, and where the top two are within kTieMargin a correct engine may pick
// either (reference/README.md), so a continuation is compared up to the first such step and, at that step,
// must pick one of the two.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace lazyslot::testing {

constexpr double kTieMargin = 0.05;

// The number of leading steps of reference case `c` whose top-2 gap is at least kTieMargin.
inline size_t ClearGreedySteps(const nlohmann::json& c) {
  const nlohmann::json& steps = c["steps"];
  size_t k = 0;
  while (k < steps.size() && steps[k]["top"].size() >= 2 &&
         steps[k]["top"][0][2].get<double>() - steps[k]["top"][1][2].get<double>() >= kTieMargin) {
    ++k;
  }
  return k;
}

// The text of the first `k` reference tokens.
inline std::string GreedyPrefixText(const nlohmann::json& c, size_t k) {
  std::string text;
  for (size_t i = 0; i < k && i < c["steps"].size(); ++i) text += c["steps"][i]["text"].get<std::string>();
  return text;
}

// True when `token` is one of the two best at step k (a near tie).
inline bool IsTopTwo(const nlohmann::json& c, size_t k, int64_t token) {
  const nlohmann::json& top = c["steps"][k]["top"];
  return top[0][0].get<int64_t>() == token || (top.size() > 1 && top[1][0].get<int64_t>() == token);
}

}  // namespace lazyslot::testing
