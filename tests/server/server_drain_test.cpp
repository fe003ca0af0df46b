// The drain through real sockets (issue "Drain that any load balancer survives"): after SIGTERM the main
// port refuses new connections while a stream in flight completes; a request that still reaches a connection
// opened before is served with `Connection: close`; an idle kept-alive connection is closed at the drain's end;
// --health-port answers 503 "draining" (and /livez 200) for the drain's duration and is gone once the process
// exited 0.
#include <gtest/gtest.h>
#include <poll.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <future>
#include <thread>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kStories[] = "models/stories260K.gguf";

// A streamed completion long enough (thousands of tokens: seconds here) to be in flight across the signal.
const json kLongStream = {{"prompt", "Once upon a time"},
                          {"max_tokens", 4000},
                          {"ignore_eos", true},
                          {"stream", true},
                          {"stream_options", {{"include_usage", true}}}};

bool WaitExit(ServerProcess& srv, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (!srv.Running()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// Reads from `fd` until the peer closes it (true) or `timeout` passes (false); appends what came to *got.
bool ReadToEof(int fd, std::string* got, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 100};
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
    got->append(buf, static_cast<size_t>(n));
  }
  return false;
}

// True once connecting to `port` is refused (tried every 20 ms for up to 2 s).
bool ConnectionRefused(int port) {
  for (int i = 0; i < 100; ++i) {
    const int s = ConnectLoopback(port);
    if (s < 0 && errno == ECONNREFUSED) return true;
    if (s >= 0) close(s);
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// usage.completion_tokens of the SSE events in raw HTTP text (chunk-size lines are skipped); -1 if none.
int64_t StreamedCompletionTokens(const std::string& raw) {
  std::istringstream in(raw);
  std::string line;
  int64_t tokens = -1;
  while (std::getline(in, line)) {
    if (line.rfind("data: {", 0) != 0) continue;
    const json ev = json::parse(line.substr(6), nullptr, /*allow_exceptions=*/false);
    if (ev.is_object() && ev.contains("usage") && ev["usage"].is_object()) {
      tokens = ev["usage"].value("completion_tokens", int64_t{-1});
    }
  }
  return tokens;
}

// Lower-cased copy, for header checks.
std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST(ServerDrain, NewConnectionsAreRefusedWhileAStreamInFlightCompletes) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-np", "1", "-c", "8192"});
  const int fd = OpenRawRequest(srv->port(), "/v1/completions", kLongStream.dump());
  ASSERT_GE(fd, 0);
  std::string got = ReadUntil(fd, "data: ", 30s);
  ASSERT_NE(got.find("data: "), std::string::npos) << got;
  srv->Signal(SIGTERM);
  EXPECT_TRUE(ConnectionRefused(srv->port())) << "the listener must close at once";
  const bool eof = ReadToEof(fd, &got, 60s);
  close(fd);
  EXPECT_TRUE(eof) << "the server closes the connection after the stream, not waiting for another request";
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos) << got.substr(got.size() > 600 ? got.size() - 600 : 0);
  EXPECT_EQ(StreamedCompletionTokens(got), 4000) << "the stream in flight ran to its end";
  ASSERT_TRUE(WaitExit(*srv, 30s)) << srv->Log();
  EXPECT_EQ(srv->exit_status(), 0) << srv->Log();
  const std::string log = srv->Log();
  EXPECT_NE(log.find("draining: stopped listening on port " + std::to_string(srv->port())), std::string::npos)
      << log;
  EXPECT_NE(log.find("draining: 1 request(s) in flight"), std::string::npos) << log;
  EXPECT_NE(log.find("drain: every request finished"), std::string::npos) << log;
}

// Sends a GET /health on `fd` and reads its answer (up to the body's "status" value).
std::string GetHealthOn(int fd) {
  const std::string get = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  if (send(fd, get.data(), get.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(get.size())) return "";
  return ReadUntil(fd, "\"}", 10s);
}

TEST(ServerDrain, RequestsOnOpenConnectionsAreServedWithConnectionCloseAndIdleOnesCloseAtTheEnd) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-np", "2", "-c", "8192"});
  // Two kept-alive connections left idle after one answer each: one is used during the drain, one never.
  const int used = ConnectLoopback(srv->port());
  const int unused = ConnectLoopback(srv->port());
  ASSERT_GE(used, 0);
  ASSERT_GE(unused, 0);
  for (int c : {used, unused}) {
    const std::string first = GetHealthOn(c);
    ASSERT_NE(first.find("200"), std::string::npos) << first;
    EXPECT_EQ(Lower(first).find("connection: close"), std::string::npos) << first;
  }
  // A stream in flight on a third connection, with the next request already sent behind it (pipelined), so
  // that request reaches an open connection during the drain whatever the timing.
  const int fd = OpenRawRequest(srv->port(), "/v1/completions", kLongStream.dump());
  ASSERT_GE(fd, 0);
  std::string got = ReadUntil(fd, "data: ", 30s);
  ASSERT_NE(got.find("data: "), std::string::npos) << got;
  const std::string next_body = R"({"prompt": "Once", "max_tokens": 4})";
  const std::string next = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                           "Content-Length: " +
                           std::to_string(next_body.size()) + "\r\n\r\n" + next_body;
  ASSERT_EQ(send(fd, next.data(), next.size(), MSG_NOSIGNAL), static_cast<ssize_t>(next.size()));
  srv->Signal(SIGTERM);
  ASSERT_TRUE(ConnectionRefused(srv->port())) << "the listener closes at once";

  // A POST on a connection opened before the drain is served (a balancer that sent it does not retry it
  // elsewhere), and its connection closed after the answer.
  const std::string post = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                           "Content-Length: " +
                           std::to_string(next_body.size()) + "\r\n\r\n" + next_body;
  ASSERT_EQ(send(used, post.data(), post.size(), MSG_NOSIGNAL), static_cast<ssize_t>(post.size()));
  std::string on_used;
  EXPECT_TRUE(ReadToEof(used, &on_used, 30s)) << "closed after its answer";
  close(used);
  EXPECT_EQ(on_used.rfind("HTTP/1.1 200", 0), 0u) << on_used;
  EXPECT_NE(Lower(on_used).find("connection: close"), std::string::npos) << on_used;
  EXPECT_NE(on_used.find("\"completion_tokens\":4"), std::string::npos) << on_used;

  EXPECT_TRUE(ReadToEof(fd, &got, 60s)) << "closed after the pipelined request's answer";
  close(fd);
  const size_t done = got.find("data: [DONE]");
  ASSERT_NE(done, std::string::npos) << "the stream in flight completes";
  EXPECT_EQ(StreamedCompletionTokens(got.substr(0, done)), 4000);
  const size_t second = got.find("HTTP/1.1 ", done);
  ASSERT_NE(second, std::string::npos) << got.substr(done);
  const std::string answer = Lower(got.substr(second));
  EXPECT_EQ(answer.rfind("http/1.1 200", 0), 0u) << "the pipelined request is served: " << answer;
  EXPECT_NE(answer.find("connection: close"), std::string::npos) << answer;
  EXPECT_EQ(got.find("HTTP/1.1", second + 1), std::string::npos) << "nothing after it";

  // The connection never used again is closed without an answer when the drain ends.
  std::string after;
  EXPECT_TRUE(ReadToEof(unused, &after, 10s)) << "an idle kept-alive connection is closed at the drain's end";
  EXPECT_EQ(after, "") << "closed without an answer: no request was sent on it";
  close(unused);
  ASSERT_TRUE(WaitExit(*srv, 30s)) << srv->Log();
  EXPECT_EQ(srv->exit_status(), 0) << srv->Log();
  const std::string log = srv->Log();
  const size_t line = log.find("drain: every request finished in ");
  ASSERT_NE(line, std::string::npos) << log;
  double seconds = -1;
  int idle = -1;
  ASSERT_EQ(std::sscanf(log.c_str() + line, "drain: every request finished in %lf s; %d idle", &seconds, &idle), 2)
      << log.substr(line, 200);
  // cpp-httplib closes a connection idle for 5 s by itself: only a drain shorter than that (the stream takes
  // ~1 s in a Release build, over 20 s under ASan) still finds the unused connection open at its end.
  if (seconds < 4.0) {
    EXPECT_EQ(idle, 1) << log.substr(line, 200);
  } else {
    EXPECT_LE(idle, 1) << log.substr(line, 200);
  }
}

TEST(ServerDrain, HealthPortSaysDrainingUntilTheProcessExitsZero) {
  REQUIRE_SHARED_FILE(kStories);
  const int health_port = FreePort();
  ASSERT_GT(health_port, 0);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-np", "1", "-c", "8192", "--health-port",
                     std::to_string(health_port), "--api-key", "k"});
  const std::string health = "http://127.0.0.1:" + std::to_string(health_port);
  HttpResult h = Curl("GET", health + "/health");
  EXPECT_EQ(h.status, 200) << h.body;
  EXPECT_EQ(h.Json()["status"], "ok") << h.body;
  EXPECT_EQ(Curl("GET", health + "/health?ready=1").status, 200);
  EXPECT_EQ(Curl("GET", health + "/livez").Json()["status"], "ok");
  EXPECT_EQ(Curl("GET", health + "/v1/models").status, 404) << "the health port serves nothing else";

  // A whole (not streamed) answer in flight keeps the drain going, and is the first answer written during it.
  auto plain = std::async(std::launch::async, [&] {
    return srv->Post("/v1/completions", {{"prompt", "Once"}, {"max_tokens", 4000}, {"ignore_eos", true}},
                     {"Authorization: Bearer k"});
  });
  for (int i = 0; i < 300; ++i) {
    const json slots = srv->Get("/slots", {"Authorization: Bearer k"}).Json();
    if (slots.is_array() && !slots.empty() && slots[0]["is_processing"] == true) break;
    std::this_thread::sleep_for(10ms);
  }
  srv->Signal(SIGTERM);
  EXPECT_TRUE(ConnectionRefused(srv->port()));
  h = Curl("GET", health + "/health");
  EXPECT_EQ(h.status, 503) << h.body;
  EXPECT_EQ(h.Json()["status"], "draining") << h.body;
  EXPECT_EQ(h.Header("Retry-After"), "1");
  EXPECT_EQ(Curl("GET", health + "/health?ready=1").status, 503);
  const HttpResult live = Curl("GET", health + "/livez");
  EXPECT_EQ(live.status, 200) << "liveness holds for the whole drain";
  EXPECT_EQ(live.Json()["status"], "draining") << live.body;

  const HttpResult p = plain.get();
  ASSERT_EQ(p.status, 200) << p.body;
  EXPECT_EQ(p.Json()["usage"]["completion_tokens"], 4000);
  EXPECT_EQ(Lower(p.Header("Connection")), "close") << p.headers;
  ASSERT_TRUE(WaitExit(*srv, 30s)) << srv->Log();
  EXPECT_EQ(srv->exit_status(), 0) << srv->Log();
  EXPECT_EQ(Curl("GET", health + "/livez", "", {}, 5).status, 0) << "the health port goes with the process";
}

TEST(ServerDrain, HealthPortMustDifferFromThePort) {
  std::string out;
  const int rc = RunShell(std::string(LAZYSLOT_BINARY) + " serve --port 18080 --health-port 18080", &out);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("--health-port must differ from --port"), std::string::npos) << out;
}

}  // namespace
}  // namespace lazyslot::testing
