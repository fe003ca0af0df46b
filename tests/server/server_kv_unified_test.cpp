// --kv-unified (llama-server's -kvu) through the real server: one pool of --ctx-size cells for all slots. A slot
// may hold a prompt longer than --ctx-size / --parallel; llama-server's own unified-cache cases (four requests
// whose n_predict add up past the pool) all answer in full, each request waiting for room rather than failing;
// requests without n_predict grow into what the pool has free and end as a full context does when it has none;
// the cache never holds more than the pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kQwen[] = "models/qwen3-tiny-q8_0.gguf";

std::vector<int> Tokens(int n, int salt) {
  std::vector<int> t;
  for (int i = 0; i < n; ++i) t.push_back(3 + (i * 31 + salt * 7) % 400);
  return t;
}

// qwen3-tiny's KV: 4 runs (2 layers, K and V) of 256-byte rows, 16 rows a page; the pool of n cells is
// ceil(n / 16) pages a run plus a page a run for each slot beyond the first (their rounding).
uint64_t PoolBytes(int n_ctx, int n_slots) { return (n_ctx + 15) / 16 * 4 * 4096ull + (n_slots - 1) * 4 * 4096ull; }

TEST(ServerKvUnified, OneSlotMayHoldMoreThanItsShare) {
  REQUIRE_SHARED_FILE(kQwen);
  START_SERVER(unified, {"-m", SharedPath(kQwen), "-np", "4", "-c", "1024", "--kv-unified", "--metrics"});
  START_SERVER(split, {"-m", SharedPath(kQwen), "-np", "4", "-c", "1024"});
  const json props = unified->Get("/props").Json();
  EXPECT_EQ(props["kv_unified"], true);
  EXPECT_EQ(props["n_ctx_slot"], 1024);
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 1024);
  const std::string metrics = unified->Get("/metrics").body;
  EXPECT_EQ(Metric(metrics, "lazyslot:kv_committed_bytes"), 0.0) << "nothing committed at start";
  EXPECT_EQ(Metric(metrics, "lazyslot:kv_budget_bytes"), static_cast<double>(PoolBytes(1024, 4)));
  const json body = {{"prompt", Tokens(700, 1)}, {"n_predict", 16}, {"temperature", 0}};
  HttpResult a = unified->Post("/completion", body);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.Json()["timings"]["predicted_n"], 16);
  HttpResult b = split->Post("/completion", body);
  EXPECT_EQ(b.status, 400) << "a 700-token prompt exceeds a 256-cell slot: " << b.body;
  // The same answer as a server whose one slot holds the whole context.
  START_SERVER(one, {"-m", SharedPath(kQwen), "-np", "1", "-c", "1024"});
  EXPECT_EQ(a.Json()["content"], one->Post("/completion", body).Json()["content"]);
}

// llama.cpp's test_completion_unified cases (n_ctx 256, 4 slots, prompt "A"): llama-server answers the cases
// whose peak fits and may fail the others; here each request waits until its worst case fits, so every
// request gets all its tokens, and the pool is never exceeded.
TEST(ServerKvUnified, LlamaServerUnifiedCasesAllAnswerInFull) {
  REQUIRE_SHARED_FILE(kQwen);
  for (const std::vector<int>& n_predict :
       {std::vector<int>{80, 40, 80, 80}, {70, 70, 70, 70}, {90, 90, 40, 90}, {90, 90, 40, 75}}) {
    START_SERVER(srv, {"-m", SharedPath(kQwen), "-np", "4", "-c", "256", "-kvu", "--metrics"});
    std::vector<json> results(n_predict.size());
    std::vector<std::thread> clients;
    for (size_t i = 0; i < n_predict.size(); ++i) {
      clients.emplace_back([&, i] {
        HttpResult r = srv->Post("/completion", {{"prompt", "A"}, {"n_predict", n_predict[i]}, {"ignore_eos", true}});
        results[i] = r.status == 200 ? r.Json() : json{{"status", r.status}, {"body", r.body}};
      });
    }
    for (std::thread& t : clients) t.join();
    for (size_t i = 0; i < n_predict.size(); ++i) {
      EXPECT_EQ(results[i]["timings"]["predicted_n"], n_predict[i]) << i << ": " << results[i].dump().substr(0, 300);
    }
    const std::string metrics = srv->Get("/metrics").body;
    EXPECT_LE(Metric(metrics, "lazyslot:kv_peak_committed_bytes"), static_cast<double>(PoolBytes(256, 4)));
  }
}

// Requests without n_predict: each starts with a slot's share of the pool (1,024 cells here) and grows into
// what is free, so one alone fills the whole context, as a one-slot server's would. Two at once start with
// the two shares, which fill the pool: the first to reach its share cannot grow and ends as a full context
// does (finish_reason "length"), and the other grows into the room it leaves. The pool is never exceeded.
TEST(ServerKvUnified, RequestsWithoutALimitGrowIntoThePool) {
  REQUIRE_SHARED_FILE(kQwen);
  START_SERVER(srv, {"-m", SharedPath(kQwen), "-np", "2", "-c", "2048", "-kvu", "--metrics"});
  START_SERVER(one, {"-m", SharedPath(kQwen), "-np", "1", "-c", "2048"});
  const json body = {{"prompt", Tokens(40, 2)}, {"ignore_eos", true}, {"temperature", 0}};
  HttpResult alone = srv->Post("/completion", body);
  ASSERT_EQ(alone.status, 200) << alone.body;
  const json a = alone.Json(), b = one->Post("/completion", body).Json();
  EXPECT_GT(a["timings"]["predicted_n"].get<int>(), 1024) << "past its share";
  EXPECT_EQ(a["timings"]["predicted_n"], b["timings"]["predicted_n"]) << "the whole context, as one slot of 2,048";
  EXPECT_EQ(a["content"], b["content"]);
  EXPECT_EQ(a["stop_type"], "limit");
  std::vector<json> two(2);
  std::thread t0([&] { two[0] = srv->Post("/completion", {{"prompt", Tokens(40, 3)}, {"ignore_eos", true}}).Json(); });
  std::thread t1([&] { two[1] = srv->Post("/completion", {{"prompt", Tokens(40, 4)}, {"ignore_eos", true}}).Json(); });
  t0.join();
  t1.join();
  std::vector<int> predicted;
  for (const json& r : two) {
    ASSERT_TRUE(r.contains("timings")) << r.dump().substr(0, 300);
    EXPECT_EQ(r["stop_type"], "limit");
    predicted.push_back(r["timings"]["predicted_n"].get<int>());
  }
  std::sort(predicted.begin(), predicted.end());
  EXPECT_GE(predicted[0], 1024 - 40 - 1) << "each got at least its share";
  EXPECT_GT(predicted[1], 1024) << "one grew into the room the other left";
  const std::string metrics = srv->Get("/metrics").body;
  EXPECT_LE(Metric(metrics, "lazyslot:kv_peak_committed_bytes"), static_cast<double>(PoolBytes(2048, 2)));
}

TEST(ServerKvUnified, EagerModeIsAStartupError) {
  REQUIRE_SHARED_FILE(kQwen);
  auto srv = ServerProcess::Launch({"-m", SharedPath(kQwen), "-np", "2", "-c", "512", "--kv-unified", "--kv-eager"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (srv->Running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(srv->Running());
  EXPECT_NE(srv->exit_status(), 0);
  EXPECT_NE(srv->Log().find("--kv-unified"), std::string::npos) << srv->Log();
}

}  // namespace
}  // namespace lazyslot::testing
