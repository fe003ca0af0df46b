// A mixture-of-experts model (qwen3moe-tiny: 8 experts, 2 used per token) through the real server: greedy
// continuations equal llama.cpp's for every weight type, and two requests decoded together in one batch give
// the tokens each gives alone (routing never depends on the batch).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kMoeQ8[] = "models/qwen3moe-tiny-q8_0.gguf";

TEST(ServerMoe, GreedyEqualsLlamaCppF32) {
  ExpectServerGreedyMatchesReference("models/qwen3moe-tiny-f32.gguf", "qwen3moe-tiny-f32");
}
TEST(ServerMoe, GreedyEqualsLlamaCppQ8) { ExpectServerGreedyMatchesReference(kMoeQ8, "qwen3moe-tiny-q8_0"); }
TEST(ServerMoe, GreedyEqualsLlamaCppQ4KM) {
  ExpectServerGreedyMatchesReference("models/qwen3moe-tiny-q4_k_m.gguf", "qwen3moe-tiny-q4_k_m");
}

std::vector<int> Tokens(int n, int salt) {
  std::vector<int> t = {1};
  for (int i = 1; i < n; ++i) t.push_back(3 + (i * 53 + salt * 17) % 500);
  return t;
}

std::vector<int> Greedy(ServerProcess& srv, const std::vector<int>& prompt) {
  HttpResult r = srv.Post("/completion", {{"prompt", prompt},
                                          {"n_predict", 24},
                                          {"temperature", 0},
                                          {"ignore_eos", true},
                                          {"return_tokens", true},
                                          {"cache_prompt", false}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.Json()["tokens"].get<std::vector<int>>() : std::vector<int>{};
}

TEST(ServerMoe, RequestsDecodedTogetherGiveWhatEachGivesAlone) {
  REQUIRE_SHARED_FILE(kMoeQ8);
  START_SERVER(srv, {"-m", SharedPath(kMoeQ8), "-np", "2", "-c", "2048"});
  const std::vector<int> a = Tokens(40, 1), b = Tokens(90, 2);
  const std::vector<int> alone_a = Greedy(*srv, a), alone_b = Greedy(*srv, b);
  ASSERT_EQ(alone_a.size(), 24u);
  std::vector<int> together_a, together_b;
  std::thread ta([&] { together_a = Greedy(*srv, a); });
  std::thread tb([&] { together_b = Greedy(*srv, b); });
  ta.join();
  tb.join();
  EXPECT_EQ(together_a, alone_a);
  EXPECT_EQ(together_b, alone_b);
}

}  // namespace
}  // namespace lazyslot::testing
