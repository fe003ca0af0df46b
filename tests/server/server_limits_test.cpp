// Server limits through the real server: --request-timeout (plain and streamed requests are cancelled, the
// slot frees, the answer names the limit), --max-connections (the excess gets a fast 503 with an OpenAI
// body), --max-queue (503 naming the numbers), -to/--timeout and -t spellings, -n/--n-predict; after each
// limit is hit a normal request still works.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";

using Clock = std::chrono::steady_clock;

bool AnyBusy(const json& slots) {
  if (!slots.is_array()) return true;
  for (const json& s : slots) {
    if (s.value("is_processing", true)) return true;
  }
  return false;
}

// Polls /slots until no slot is processing or `timeout` passes; returns the last answer.
json WaitAllIdle(ServerProcess& srv, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  json slots = srv.Get("/slots").Json();
  while (AnyBusy(slots) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    slots = srv.Get("/slots").Json();
  }
  return slots;
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

void ExpectNormalRequestWorks(ServerProcess& srv) {
  HttpResult r = srv.Post("/v1/completions", {{"prompt", "The cat"}, {"max_tokens", 4}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.Json().contains("choices")) << r.body;
}

// A generation far longer than any test: one slot of 32k cells, no EOS, one compute thread.
const json kEndless = {{"prompt", "Once upon a time"}, {"max_tokens", -1}, {"ignore_eos", true}};

TEST(ServerLimits, RequestTimeoutCancelsPlainAndStreamedRequests) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(
      srv, {"-m", SharedPath(kStories), "-np", "1", "-c", "32768", "-t", "1", "--request-timeout", "1.5"});
  // Plain: 504 with an OpenAI error naming the flag, after about the limit, and the slot is free again.
  auto t0 = Clock::now();
  HttpResult plain = srv->Post("/v1/completions", kEndless);
  const double took = Seconds(t0);
  EXPECT_EQ(plain.status, 504) << plain.body;
  const json err = plain.Json();
  ASSERT_TRUE(err.contains("error")) << plain.body;
  EXPECT_EQ(err["error"]["code"], 504);
  const std::string msg = err["error"]["message"];
  EXPECT_NE(msg.find("--request-timeout"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1.5 s"), std::string::npos) << msg;
  EXPECT_GE(took, 1.4);
  EXPECT_LT(took, 10.0);
  EXPECT_FALSE(AnyBusy(WaitAllIdle(*srv, std::chrono::seconds(5)))) << "slot still busy after the timeout";
  ExpectNormalRequestWorks(*srv);

  // Streamed: tokens first, then one SSE error event, then the stream ends (no [DONE]).
  json streamed = kEndless;
  streamed["stream"] = true;
  for (const char* route : {"/v1/completions", "/v1/chat/completions"}) {
    SCOPED_TRACE(route);
    json body = streamed;
    if (std::string(route) == "/v1/chat/completions") {
      body.erase("prompt");
      body["messages"] = {{{"role", "user"}, {"content", "Tell a story"}}};
    }
    t0 = Clock::now();
    HttpResult r = srv->Post(route, body);
    EXPECT_LT(Seconds(t0), 10.0);
    EXPECT_EQ(r.status, 200);  // the status line went out with the first chunk
    const std::vector<std::string> data = SseData(r.body);
    ASSERT_GE(data.size(), 2u) << r.body.substr(0, 500);
    const json last = json::parse(data.back(), nullptr, false);
    ASSERT_TRUE(last.is_object() && last.contains("error")) << data.back();
    EXPECT_EQ(last["error"]["code"], 504);
    EXPECT_NE(last["error"]["message"].get<std::string>().find("--request-timeout"), std::string::npos);
    EXPECT_EQ(std::find(data.begin(), data.end(), "[DONE]"), data.end());
    EXPECT_FALSE(AnyBusy(WaitAllIdle(*srv, std::chrono::seconds(5))));
    ExpectNormalRequestWorks(*srv);
  }
  // Short requests are untouched by the limit.
  for (int i = 0; i < 3; ++i) ExpectNormalRequestWorks(*srv);
}

TEST(ServerLimits, RequestTimeoutCountsTheQueueWait) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv,
               {"-m", SharedPath(kStories), "-np", "1", "-c", "32768", "-t", "1", "--request-timeout", "3"});
  // The first request holds the only slot until its limit (3 s); the second, sent 0.3 s later, waits in
  // the queue and then runs: counted from its arrival it ends near 3 s, counted from its start in the
  // slot it would run until about 6 s.
  HttpResult first, second;
  std::thread a([&] { first = srv->Post("/v1/completions", kEndless); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t0 = Clock::now();
  second = srv->Post("/v1/completions", kEndless);
  const double waited = Seconds(t0);
  a.join();
  EXPECT_EQ(first.status, 504) << first.body;
  EXPECT_EQ(second.status, 504) << second.body;
  EXPECT_GE(waited, 2.5);
  EXPECT_LT(waited, 4.5);
  EXPECT_NE(srv->Get("/metrics").body.find("\nlazyslot:requests_timed_out_total 2\n"), std::string::npos);
  EXPECT_FALSE(AnyBusy(WaitAllIdle(*srv, std::chrono::seconds(5))));
  ExpectNormalRequestWorks(*srv);
}

TEST(ServerLimits, ConnectionsOverTheLimitGetA503AtOnce) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "--max-connections", "2"});
  // Two idle connections take both places (each holds an HTTP thread until it closes). The place of a
  // connection that has just ended (START_SERVER's last health check) frees only once the server has read
  // its close, so a pair sent before that can find one place: the second idle connection then waits in the
  // reject lane and a probe gets a 200. Such a pair asks /health on each connection (a 503 there is one
  // rejection counted by /metrics), closes and is tried again.
  std::vector<int> held;
  int rejected = 0;  // every 503 of this test, checked against /metrics at the end
  const auto accepted_by = Clock::now() + std::chrono::seconds(20);
  for (int status = 0; status != 503 && Clock::now() < accepted_by;) {
    for (int s : held) {
      const std::string ask = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
      ASSERT_EQ(send(s, ask.data(), ask.size(), MSG_NOSIGNAL), static_cast<ssize_t>(ask.size()));
      const std::string got = ReadUntil(s, "\r\n\r\n", std::chrono::seconds(10));
      ASSERT_EQ(got.rfind("HTTP/1.1 ", 0), 0u) << got;
      if (std::atoi(got.c_str() + 9) == 503) ++rejected;
      close(s);
    }
    held.clear();
    for (int i = 0; i < 2; ++i) {
      const int s = ConnectLoopback(srv->port());
      ASSERT_GE(s, 0) << std::strerror(errno);
      held.push_back(s);
    }
    // The probe is behind both in the accept queue, so it is answered only after both have been queued:
    // anything but a 503 means this pair met a place still held.
    status = srv->Get("/health").status;
    if (status == 503) ++rejected;
    if (status != 503) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(rejected, 1) << "no pair of idle connections took both places";
  for (const std::string path : {"/health", "/v1/models"}) {
    const auto t0 = Clock::now();
    HttpResult r = srv->Get(path);
    EXPECT_LT(Seconds(t0), 2.0) << path;
    EXPECT_EQ(r.status, 503) << path << " " << r.body;
    const json err = r.Json();
    ASSERT_TRUE(err.contains("error")) << r.body;
    EXPECT_EQ(err["error"]["code"], 503);
    const std::string msg = err["error"]["message"];
    EXPECT_NE(msg.find("--max-connections"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2"), std::string::npos) << msg;
  }
  HttpResult post = srv->Post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}});
  EXPECT_EQ(post.status, 503) << post.body;
  for (int s : held) close(s);
  // The places free as soon as the idle clients leave.
  rejected += 3;  // the three above; any 503 below is counted as it comes
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  int status = 0;
  while (status != 200 && Clock::now() < deadline) {
    status = srv->Get("/health").status;
    if (status == 503) ++rejected;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(status, 200);
  ExpectNormalRequestWorks(*srv);
  // Both places can be in use at once. The server frees a place once it has seen the client close, a moment
  // after the client has its reply (long under TSan): a pair that meets the previous request's place still
  // held gets a 503 and is tried again.
  bool both_served = false;
  for (int attempt = 0; attempt < 20 && !both_served; ++attempt) {
    HttpResult r1, r2;
    std::thread t1([&] { r1 = srv->Post("/v1/completions", {{"prompt", "A"}, {"max_tokens", 8}}); });
    std::thread t2([&] { r2 = srv->Post("/v1/completions", {{"prompt", "B"}, {"max_tokens", 8}}); });
    t1.join();
    t2.join();
    for (const HttpResult* r : {&r1, &r2}) {
      if (r->status == 503) {
        ++rejected;
        EXPECT_NE(r->body.find("--max-connections"), std::string::npos) << r->body;
      } else {
        EXPECT_EQ(r->status, 200) << r->body;
      }
    }
    both_served = r1.status == 200 && r2.status == 200;
    if (!both_served) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(both_served);
  // /metrics counts every rejected connection.
  const std::string metrics = srv->Get("/metrics").body;
  const std::string line = "\nlazyslot:connections_rejected_total " + std::to_string(rejected) + "\n";
  EXPECT_NE(metrics.find(line), std::string::npos) << line << metrics;
}

TEST(ServerLimits, FullQueueGets503NamingTheNumbers) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-np", "1", "-c", "32768", "-t", "1", "--max-queue", "1"});
  json streamed = kEndless;
  streamed["stream"] = true;
  // One request in the slot, one in the queue (both hang up later), then the third is refused.
  const int busy = OpenRawRequest(srv->port(), "/v1/completions", streamed.dump());
  ASSERT_GE(busy, 0);
  ASSERT_NE(ReadUntil(busy, "data: {", std::chrono::seconds(30)).find("data: {"), std::string::npos);
  const int queued = OpenRawRequest(srv->port(), "/v1/completions", streamed.dump());
  ASSERT_GE(queued, 0);
  HttpResult r;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  do {  // the queued request reaches the engine's queue a moment after it is sent
    r = srv->Post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}});
  } while (r.status != 503 && Clock::now() < deadline);
  EXPECT_EQ(r.status, 503) << r.body;
  const std::string msg = r.Json()["error"]["message"];
  EXPECT_NE(msg.find("--max-queue 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 requests are already waiting"), std::string::npos) << msg;
  close(busy);
  close(queued);
  EXPECT_FALSE(AnyBusy(WaitAllIdle(*srv, std::chrono::seconds(5))));
  ExpectNormalRequestWorks(*srv);
}

TEST(ServerLimits, LlamaServerSpellingsOfTimeoutAndThreads) {
  REQUIRE_SHARED_FILE(kStories);
  for (const std::vector<std::string>& flags : std::vector<std::vector<std::string>>{
           {"-to", "30", "-t", "1"}, {"--timeout", "30", "-t2"}, {"-t", "1", "-to", "7"}}) {
    START_SERVER(srv, [&] {
      std::vector<std::string> args = {"-m", SharedPath(kStories)};
      args.insert(args.end(), flags.begin(), flags.end());
      return args;
    }());
    ExpectNormalRequestWorks(*srv);
    srv->Stop();
    const std::string log = srv->Log();
    EXPECT_NE(log.find("socket timeout " + std::string(flags[0] == "-t" ? "7" : "30") + " s"),
              std::string::npos)
        << log;
  }
  // Bad values stop start-up (`timeout` guards against a server that would start anyway).
  const std::string bin = std::string("timeout 30 ") + LAZYSLOT_BINARY + " serve --port " +
                          std::to_string(FreePort()) + " -m " + SharedPath(kStories);
  for (const char* bad : {" -to", " -to x", " -to -5", " --timeout abc", " --request-timeout -1",
                          " --max-connections -3", " -t"}) {
    const int rc = WEXITSTATUS(std::system((bin + bad + " >/dev/null 2>&1").c_str()));
    EXPECT_NE(rc, 0) << bad;
    EXPECT_NE(rc, 124) << bad << ": the server started";
  }
}

// -n/--n-predict: the generation limit of a request that sets none, and the most any request may ask for
// (larger max_tokens are lowered to it, as llama-server does); /props reports it; bad values stop start-up.
// As llama-server: -n is the default for requests that name no limit (max_tokens wins when given, and
// n_predict -1 means "the default"); --max-tokens-cap is a hard cap on top.
TEST(ServerLimits, NPredictIsTheDefaultAndMaxTokensCapTheCap) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-n", "5", "-np", "3"});  // -np is not "-n p"
  const json props = srv->Get("/props").Json();
  EXPECT_EQ(props["default_generation_settings"]["n_predict"], 5);
  EXPECT_EQ(props["total_slots"], 3);
  struct Case {
    json body;
    int expect;
  };
  const std::vector<Case> cases = {
      {{{"prompt", "Once upon a time"}}, 5},
      {{{"prompt", "Once upon a time"}, {"max_tokens", 3}}, 3},
      {{{"prompt", "Once upon a time"}, {"max_tokens", 50}}, 50},
      {{{"prompt", "Once upon a time"}, {"n_predict", -1}}, 5},
  };
  for (const Case& c : cases) {
    json body = c.body;
    body["temperature"] = 0;
    body["ignore_eos"] = true;
    const HttpResult r = srv->Post("/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.Json()["usage"]["completion_tokens"], c.expect) << body.dump();
    EXPECT_EQ(r.Json()["choices"][0]["finish_reason"], "length") << body.dump();
  }
  const HttpResult chat = srv->Post(
      "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"ignore_eos", true}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(chat.Json()["usage"]["completion_tokens"], 5) << chat.body;
  srv->Stop();

  START_SERVER(capped, {"-m", SharedPath(kStories), "-n", "5", "--max-tokens-cap", "4"});
  for (const json& limit : {json(nullptr), json(3), json(50)}) {
    json body = {{"prompt", "Once upon a time"}, {"temperature", 0}, {"ignore_eos", true}};
    if (!limit.is_null()) body["max_tokens"] = limit;
    const HttpResult r = capped->Post("/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.Json()["usage"]["completion_tokens"], limit == json(3) ? 3 : 4) << body.dump();
  }
  capped->Stop();

  const std::string bin = std::string("timeout 30 ") + LAZYSLOT_BINARY + " serve --port " +
                          std::to_string(FreePort()) + " -m " + SharedPath(kStories);
  for (const char* bad : {" -n -2", " -n x", " -n", " --n-predict -7"}) {
    const int rc = WEXITSTATUS(std::system((bin + bad + " >/dev/null 2>&1").c_str()));
    EXPECT_NE(rc, 0) << bad;
    EXPECT_NE(rc, 124) << bad << ": the server started";
  }
}

}  // namespace
}  // namespace lazyslot::testing
