// Resumable streams (llama-server's X-Conversation-Id, GET/DELETE /v1/stream, POST /v1/streams/lookup)
// through real HTTP: a finished stream replays byte for byte from any offset, a conversation id with slashes
// and spaces travels in the query, a client that leaves does not stop the generation (its stream can be read
// afterwards), DELETE stops a running one at once, and bad parameters are 400s naming them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";
constexpr char kConv[] = "conv/one two::ggml-org/tinygemma3-GGUF:Q8_0";
constexpr char kConvQuery[] = "conv%2Fone%20two%3A%3Aggml-org%2Ftinygemma3-GGUF%3AQ8_0";

json Chat(int max_tokens) {
  return {{"stream", true},
          {"max_tokens", max_tokens},
          {"ignore_eos", true},
          {"messages", {{{"role", "user"}, {"content", "hello"}}}}};
}

// A streamed chat request with X-Conversation-Id on a raw socket (the test hangs up on it); returns the fd.
int OpenStream(int port, const json& body) {
  const int s = ConnectLoopback(port);
  if (s < 0) return -1;
  const std::string b = body.dump();
  const std::string req = std::string("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n") +
                          "Content-Type: application/json\r\nX-Conversation-Id: " + kConv + "\r\n" +
                          "Content-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
  if (send(s, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(s);
    return -1;
  }
  return s;
}

TEST(ServerStreamResume, AFinishedStreamReplaysFromAnyOffsetUntilStopped) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories)});
  const HttpResult live =
      srv->Post("/v1/chat/completions", Chat(16), {std::string("X-Conversation-Id: ") + kConv});
  ASSERT_EQ(live.status, 200) << live.body;
  ASSERT_NE(live.body.find("data: [DONE]"), std::string::npos);
  const std::string q = std::string("/v1/stream?conv_id=") + kConvQuery;

  const HttpResult all = srv->Get(q + "&from=0");
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.Header("Content-Type"), "text/event-stream");
  EXPECT_EQ(all.body, live.body) << "the replay is the stream, byte for byte";
  EXPECT_EQ(srv->Get(q).body, live.body) << "from defaults to 0";
  const size_t half = live.body.size() / 2;
  EXPECT_EQ(srv->Get(q + "&from=" + std::to_string(half)).body, live.body.substr(half));

  const HttpResult found = srv->Post("/v1/streams/lookup", {{"conversation_ids", {"conv/one two", "other"}}});
  ASSERT_EQ(found.status, 200) << found.body;
  ASSERT_EQ(found.Json().size(), 1u) << found.body << " (an id matches its '<id>::<model>' variants)";
  EXPECT_EQ(found.Json()[0]["conversation_id"], kConv);
  EXPECT_EQ(found.Json()[0]["is_done"], true);
  EXPECT_EQ(found.Json()[0]["total_bytes"], live.body.size());

  const HttpResult past = srv->Get(q + "&from=" + std::to_string(live.body.size() + 1));
  EXPECT_EQ(past.status, 400);
  EXPECT_NE(past.body.find("from"), std::string::npos) << past.body;
  EXPECT_EQ(srv->Get(q + "&from=-3").status, 400);
  EXPECT_EQ(srv->Get("/v1/stream").status, 400);
  EXPECT_NE(srv->Get("/v1/stream").body.find("conv_id"), std::string::npos);

  for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
           {"{not json", ""},
           {R"({"conversation_ids": "conv"})", "conversation_ids"},
           {R"({"conversation_ids": [7]})", "conversation_ids[0]"},
           {R"({"conversation_ids": [], "ids": []})", "ids"}}) {
    const HttpResult bad = srv->PostRaw("/v1/streams/lookup", body);
    EXPECT_EQ(bad.status, 400) << body;
    EXPECT_NE(bad.Json()["error"]["message"].get<std::string>().find(field), std::string::npos) << bad.body;
  }

  EXPECT_EQ(Curl("DELETE", srv->Url(q)).status, 204);
  EXPECT_EQ(srv->Get(q + "&from=0").status, 404);
  EXPECT_EQ(Curl("DELETE", srv->Url(q)).status, 204) << "stopping is idempotent";
  EXPECT_EQ(srv->Get("/v1/stream?conv_id=never").status, 404);
  const HttpResult plain = srv->Post("/v1/chat/completions", Chat(4));
  ASSERT_EQ(plain.status, 200);
  EXPECT_EQ(srv->Post("/v1/streams/lookup", {{"conversation_ids", {"conv/one two"}}}).Json(), json::array())
      << "a stream without X-Conversation-Id keeps no session";
}

// The client hangs up after the first chunk: the generation goes on, and the whole stream is read later.
TEST(ServerStreamResume, AClientThatLeavesDoesNotStopTheGeneration) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories)});
  const int fd = OpenStream(srv->port(), Chat(200));
  ASSERT_GE(fd, 0);
  const std::string first = ReadUntil(fd, "data: ", std::chrono::seconds(30));
  ASSERT_NE(first.find("data: "), std::string::npos) << first;
  close(fd);
  const HttpResult replay = srv->Get(std::string("/v1/stream?conv_id=") + kConvQuery + "&from=0");
  ASSERT_EQ(replay.status, 200);
  ASSERT_NE(replay.body.find("data: [DONE]"), std::string::npos)
      << "the replay follows the stream to its end";
  int chunks = 0;
  for (const std::string& d : SseData(replay.body)) {
    const json e = json::parse(d, nullptr, false);
    if (e.is_object() && !e["choices"].empty() && e["choices"][0]["delta"].contains("content")) ++chunks;
  }
  EXPECT_GE(chunks, 150) << "the 200 tokens were generated after the client left";
}

// DELETE stops a running generation: the slot is free for the next request at once.
TEST(ServerStreamResume, DeleteStopsARunningGeneration) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-np", "1", "-c", "32768"});
  const int fd = OpenStream(srv->port(), Chat(30000));
  ASSERT_GE(fd, 0);
  ASSERT_NE(ReadUntil(fd, "data: ", std::chrono::seconds(30)).find("data: "), std::string::npos);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Curl("DELETE", srv->Url(std::string("/v1/stream?conv_id=") + kConvQuery)).status, 204);
  const std::string rest = ReadUntil(fd, "never appears", std::chrono::seconds(20));
  EXPECT_EQ(rest.find("data: [DONE]"), std::string::npos) << "a stopped stream does not end normally";
  close(fd);
  const HttpResult next = srv->Post("/completion", {{"prompt", "once"}, {"n_predict", 4}});
  EXPECT_EQ(next.status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20)) << "the one slot was freed";
  const std::string metrics = srv->Get("/metrics").body;
  EXPECT_EQ(Metric(metrics, "lazyslot:requests_cancelled_total"), 1) << metrics;
  EXPECT_LT(Metric(metrics, "lazyslot:tokens_predicted_total"), 30000)
      << "not all 30000 tokens were generated";
}

}  // namespace
}  // namespace lazyslot::testing
