// Concurrency through the real server: greedy results do not depend on batching (8 requests over 2 slots,
// small prompt chunks), and a client that disconnects mid-request frees its slot at once.
#include <gtest/gtest.h>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kTinyLlama[] = "models/TinyLLama-v0-Q4_0.gguf";
constexpr char kStories[] = "models/stories260K.gguf";

const std::vector<std::string> kPrompts = {
    "Once upon a time",  "Lily and Tom went to the park.", "The cat",
    " Hello world! 123", "One day, a little bird",         "Tim had a red ball.",
    "The sun",           "She said, \"Let's play!\""};

std::vector<std::string> RunAll(ServerProcess& srv, bool concurrent, const std::string& route) {
  std::vector<std::string> out(kPrompts.size());
  auto one = [&](size_t i) {
    json body = {{"max_tokens", 32}, {"temperature", 0}};
    if (route == "/v1/chat/completions") {
      body["messages"] = {{{"role", "user"}, {"content", kPrompts[i]}}};
    } else {
      body["prompt"] = kPrompts[i];
    }
    HttpResult r = srv.Post(route, body);
    const json j = r.Json();
    out[i] = r.status != 200                   ? "HTTP " + std::to_string(r.status) + " " + r.body
             : route == "/v1/chat/completions" ? j["choices"][0]["message"]["content"].get<std::string>()
                                               : j["choices"][0]["text"].get<std::string>();
  };
  if (!concurrent) {
    for (size_t i = 0; i < kPrompts.size(); ++i) one(i);
    return out;
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kPrompts.size(); ++i) threads.emplace_back(one, i);
  for (std::thread& t : threads) t.join();
  return out;
}

TEST(ServerConcurrency, GreedyResultsDoNotDependOnBatching) {
  REQUIRE_SHARED_FILE(kTinyLlama);
  START_SERVER(srv, {"-m", SharedPath(kTinyLlama), "-np", "2", "-c", "2048"});
  for (const std::string route : {"/v1/completions", "/v1/chat/completions"}) {
    SCOPED_TRACE(route);
    const std::vector<std::string> alone = RunAll(*srv, false, route);
    const std::vector<std::string> together = RunAll(*srv, true, route);
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      EXPECT_EQ(together[i], alone[i]) << "prompt " << i << ": " << kPrompts[i];
      EXPECT_EQ(alone[i].rfind("HTTP ", 0), std::string::npos) << alone[i];
    }
  }
  // Prompts processed in chunks of 3 tokens, interleaved with other slots' generation, give the same text.
  START_SERVER(small, {"-m", SharedPath(kTinyLlama), "-np", "2", "-c", "2048", "-b", "3"});
  const std::vector<std::string> chunked = RunAll(*small, true, "/v1/completions");
  const std::vector<std::string> alone = RunAll(*srv, false, "/v1/completions");
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(chunked[i], alone[i]) << kPrompts[i];
}

// Polls /slots until every slot is idle, up to `deadline`; returns the last /slots body.
json WaitAllIdle(ServerProcess& srv, std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  json slots;
  while (std::chrono::steady_clock::now() < end) {
    slots = srv.Get("/slots").Json();
    bool idle = slots.is_array();
    for (const json& s : slots) idle = idle && s["state"] == "idle";
    if (idle) return slots;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return slots;
}

bool AnyBusy(const json& slots) {
  for (const json& s : slots) {
    if (s["state"] == "processing") return true;
  }
  return false;
}

double Metric(ServerProcess& srv, const std::string& name) {
  const std::string body = srv.Get("/metrics").body;
  const size_t at = body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(body.substr(at + name.size() + 2));
}

TEST(ServerConcurrency, DisconnectMidStreamFreesTheSlot) {
  REQUIRE_SHARED_FILE(kStories);
  // One slot with room for a generation far longer than the test (32k tokens, no EOS), on one thread.
  START_SERVER(srv, {"-m", SharedPath(kStories), "-np", "1", "-c", "32768", "-t", "1"});
  const json body = {
      {"prompt", "Once upon a time"}, {"max_tokens", -1}, {"ignore_eos", true}, {"stream", true}};
  for (int round = 0; round < 2; ++round) {
    const int fd = OpenRawRequest(srv->port(), "/v1/completions", body.dump());
    ASSERT_GE(fd, 0);
    const std::string got = ReadUntil(fd, "\"text\"", std::chrono::seconds(30));
    ASSERT_NE(got.find("200 OK"), std::string::npos) << got;
    ASSERT_NE(got.find("data: {"), std::string::npos) << got;
    ASSERT_TRUE(AnyBusy(srv->Get("/slots").Json())) << "the generation ended before the disconnect";
    const auto t0 = std::chrono::steady_clock::now();
    close(fd);
    const json slots = WaitAllIdle(*srv, std::chrono::seconds(5));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(AnyBusy(slots)) << "slot still busy 5 s after the client left: " << slots.dump();
    std::fprintf(stderr, "slot freed %.0f ms after the disconnect\n", ms);
    EXPECT_GE(Metric(*srv, "lazyslot:requests_cancelled_total"), round + 1);
  }
  // The server goes on serving.
  EXPECT_EQ(srv->Post("/v1/completions", {{"prompt", "The cat"}, {"max_tokens", 4}}).status, 200);
}

TEST(ServerConcurrency, DisconnectWhilePlainRequestWaitsFreesTheSlot) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-np", "1", "-c", "32768", "-t", "1"});
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", -1}, {"ignore_eos", true}};
  const int fd = OpenRawRequest(srv->port(), "/v1/completions", body.dump());
  ASSERT_GE(fd, 0);
  // Also queue a second (streamed) request behind it, then drop both.
  json streamed = body;
  streamed["stream"] = true;
  const int fd2 = OpenRawRequest(srv->port(), "/v1/completions", streamed.dump());
  ASSERT_GE(fd2, 0);
  const auto busy_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!AnyBusy(srv->Get("/slots").Json()) && std::chrono::steady_clock::now() < busy_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(AnyBusy(srv->Get("/slots").Json()));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  close(fd);
  close(fd2);
  const json slots = WaitAllIdle(*srv, std::chrono::seconds(5));
  ASSERT_FALSE(AnyBusy(slots)) << slots.dump();
  // Give the queued one a moment to be dropped too: nothing may start afterwards.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(AnyBusy(srv->Get("/slots").Json()));
  EXPECT_EQ(Metric(*srv, "lazyslot:requests_deferred"), 0);
}

}  // namespace
}  // namespace lazyslot::testing
