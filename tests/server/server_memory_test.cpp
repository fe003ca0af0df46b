// KV memory through the real server: /slots reports each slot's reserved and committed KV and the process's
// RSS and resident weights; --kv-budget holds under concurrent requests (the cache's own peak and the
// kernel's mincore count, polled during the run, never pass it), the requests that wait still give the same
// greedy text, and a request that could never fit gets an immediate 503 that gives the numbers.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kTinyLlama[] = "models/TinyLLama-v0-Q4_0.gguf";

// Distinct prompts of roughly equal length (no shared prefix, so no slot reuses another's KV).
std::string Prompt(int i, int sentences) {
  static const char* kNames[] = {"Lily", "Tom", "Sue", "Ben", "Max", "Ann", "Tim", "Zoe", "Sam", "Mia"};
  std::string p = kNames[i % 10];
  p += " had a story number ";
  p += std::to_string(i);
  p += ".";
  for (int k = 0; k < sentences; ++k) {
    p += ' ';
    p += kNames[(i + k) % 10];
    p += " went to the park.";
  }
  return p;
}

std::string Complete(ServerProcess& srv, const std::string& prompt, int max_tokens, int* status) {
  HttpResult r =
      srv.Post("/v1/completions", {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}});
  *status = r.status;
  if (r.status != 200) return r.body;
  return r.Json()["choices"][0]["text"].get<std::string>();
}

TEST(ServerMemory, SlotsReportKvAndProcessMemory) {
  REQUIRE_SHARED_FILE(kTinyLlama);
  START_SERVER(srv, {"-m", SharedPath(kTinyLlama), "-np", "2", "-c", "2048"});
  json slots = srv->Get("/slots").Json();
  ASSERT_EQ(slots.size(), 2u) << slots.dump();
  for (const json& s : slots) {
    const json& m = s["memory"];
    EXPECT_GT(m["kv_reserved_bytes"].get<uint64_t>(), 0u) << m.dump();
    EXPECT_EQ(m["kv_committed_bytes"], 0) << "nothing is committed at start: " << m.dump();
    EXPECT_EQ(m["kv_committed_total_bytes"], 0) << m.dump();
    EXPECT_EQ(m["kv_resident_total_bytes"], 0) << "mincore: " << m.dump();
    EXPECT_EQ(m["n_cells"], 0);
    EXPECT_GT(m["process_rss_bytes"].get<uint64_t>(), 0u);
    EXPECT_GT(m["weights_resident_bytes"].get<uint64_t>(), 0u) << "the warm-up pages the weights in";
  }
  int status = 0;
  Complete(*srv, Prompt(0, 10), 8, &status);
  ASSERT_EQ(status, 200);
  slots = srv->Get("/slots").Json();
  uint64_t sum = 0;
  int holding = 0;
  for (const json& s : slots) {
    const json& m = s["memory"];
    EXPECT_EQ(m["n_cells"], s["n_tokens"]);
    sum += m["kv_committed_bytes"].get<uint64_t>();
    if (s["n_tokens"].get<int>() > 0) {
      ++holding;
      EXPECT_GT(m["kv_committed_bytes"].get<uint64_t>(), 0u) << m.dump();
      EXPECT_LT(m["kv_committed_bytes"].get<uint64_t>(), m["kv_reserved_bytes"].get<uint64_t>()) << m.dump();
    }
  }
  EXPECT_EQ(holding, 1) << slots.dump();
  EXPECT_EQ(sum, slots[0]["memory"]["kv_committed_total_bytes"].get<uint64_t>());
  EXPECT_EQ(sum, slots[0]["memory"]["kv_resident_total_bytes"].get<uint64_t>()) << "tracking == mincore";
}

TEST(ServerMemory, BudgetHoldsUnderConcurrentRequests) {
  REQUIRE_SHARED_FILE(kTinyLlama);
  constexpr int kRequests = 6, kSentences = 12, kMaxTokens = 24;
  // Unbudgeted run first: each request's greedy text alone, and the KV one request commits.
  std::vector<std::string> alone(kRequests);
  uint64_t one_request = 0;
  {
    START_SERVER(srv, {"-m", SharedPath(kTinyLlama), "-np", "1", "-c", "1024"});
    for (int i = 0; i < kRequests; ++i) {
      int status = 0;
      alone[i] = Complete(*srv, Prompt(i, kSentences), kMaxTokens, &status);
      ASSERT_EQ(status, 200) << alone[i];
      const json slot = srv->Get("/slots").Json()[0];
      one_request = std::max(one_request, slot["memory"]["kv_committed_bytes"].get<uint64_t>());
    }
  }
  ASSERT_GT(one_request, 0u);
  // Room for two requests (each reserves prompt + max_tokens cells up front) but not three, over 4 slots.
  const uint64_t budget = one_request * 5 / 2;
  START_SERVER(srv, {"-m", SharedPath(kTinyLlama), "-np", "4", "-c", "4096", "--kv-budget",
                     std::to_string(budget), "-b", "16"});
  std::atomic<bool> done{false};
  std::atomic<uint64_t> max_resident{0};
  std::atomic<int> polls{0};
  std::thread poller([&] {
    while (!done.load()) {
      const std::string body = srv->Get("/metrics").body;
      const auto resident = static_cast<uint64_t>(Metric(body, "lazyslot:kv_resident_bytes"));
      if (resident > max_resident.load()) max_resident = resident;
      ++polls;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  std::vector<std::string> together(kRequests);
  std::vector<int> status(kRequests);
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back(
        [&, i] { together[i] = Complete(*srv, Prompt(i, kSentences), kMaxTokens, &status[i]); });
  }
  for (std::thread& t : clients) t.join();
  done = true;
  poller.join();
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(status[i], 200) << together[i];
    EXPECT_EQ(together[i], alone[i]) << "request " << i << " waited for the budget and must not change";
  }
  const std::string metrics = srv->Get("/metrics").body;
  const double peak = Metric(metrics, "lazyslot:kv_peak_committed_bytes");
  EXPECT_GT(peak, static_cast<double>(one_request)) << "two requests should have run at once";
  EXPECT_LE(peak, static_cast<double>(budget)) << "the cache's own peak passed --kv-budget";
  EXPECT_LE(max_resident.load(), budget)
      << "mincore saw more KV than --kv-budget (" << polls.load() << " polls)";
  EXPECT_GT(polls.load(), 0);

  // Needs more cells than the whole budget holds, though it fits a slot's context: refused at once.
  int refused = 0;
  const std::string body = Complete(*srv, Prompt(7, 100), 4, &refused);
  EXPECT_EQ(refused, 503) << body;
  EXPECT_NE(body.find("--kv-budget is " + std::to_string(budget) + " bytes"), std::string::npos) << body;
  // The server is still fine afterwards.
  int again = 0;
  EXPECT_EQ(Complete(*srv, Prompt(0, kSentences), kMaxTokens, &again), alone[0]);
  EXPECT_EQ(again, 200);
}

}  // namespace
}  // namespace lazyslot::testing
