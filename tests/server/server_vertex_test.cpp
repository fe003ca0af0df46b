// Vertex AI's prediction protocol (AIP_MODE=PREDICTION, as llama-server serves it): POST /predict with
// instances naming a route by its camelCase alias or its path, answered as {"predictions": [...]} in order,
// each equal to what the route itself answers; bad instances become error objects in place, bad bodies 400;
// AIP_PREDICT_ROUTE, AIP_HEALTH_ROUTE and AIP_HTTP_PORT; nothing of it without AIP_MODE.
#include <gtest/gtest.h>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";

const std::vector<std::pair<std::string, std::string>> kVertexEnv = {
    {"AIP_MODE", "PREDICTION"}, {"AIP_PREDICT_ROUTE", "/predict"}, {"AIP_HEALTH_ROUTE", "/vertex-health"}};

TEST(ServerVertex, PredictRunsEachInstanceThroughItsRoute) {
  REQUIRE_SHARED_FILE(kStories);
  std::string error;
  auto srv = ServerProcess::StartWithEnv({"-m", SharedPath(kStories), "-np", "2", "-c", "256", "--temp", "0"},
                                         kVertexEnv, &error);
  ASSERT_NE(srv, nullptr) << error;
  const json chat = {{"max_tokens", 6}, {"messages", {{{"role", "user"}, {"content", "Say hello"}}}}};
  json chat_instance = chat;
  chat_instance["@requestFormat"] = "chatCompletions";
  chat_instance["stream"] = true;  // the protocol never streams
  json tokenize_instance = {{"@requestFormat", "/tokenize"}, {"content", "Once upon a time"}};
  json completion_instance = {{"@requestFormat", "completion"}, {"prompt", "Once"}, {"n_predict", 4}};
  const HttpResult r = srv->Post(
      "/predict", {{"instances",
                    {chat_instance, tokenize_instance, completion_instance, json{{"@requestFormat", "nope"}},
                     json{{"max_tokens", 1}}, json("text")}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json p = r.Json()["predictions"];
  ASSERT_EQ(p.size(), 6u) << r.body;
  // Greedy: each prediction is what its route answers to the same body.
  const json direct_chat = srv->Post("/v1/chat/completions", chat).Json();
  EXPECT_EQ(p[0]["object"], "chat.completion") << p[0].dump();
  EXPECT_EQ(p[0]["choices"][0]["message"]["content"], direct_chat["choices"][0]["message"]["content"]);
  EXPECT_EQ(p[1]["tokens"], srv->Post("/tokenize", {{"content", "Once upon a time"}}).Json()["tokens"]);
  EXPECT_EQ(p[2]["content"],
            srv->Post("/completion", {{"prompt", "Once"}, {"n_predict", 4}}).Json()["content"]);
  EXPECT_NE(p[3]["error"]["message"].get<std::string>().find("no handler registered for @requestFormat: nope"),
            std::string::npos)
      << p[3].dump();
  EXPECT_NE(p[4]["error"]["message"].get<std::string>().find("@requestFormat"), std::string::npos);
  EXPECT_NE(p[5]["error"]["message"].get<std::string>().find("JSON object"), std::string::npos);

  // An instance whose route refuses it carries that route's error in its place.
  const json bad = srv->Post("/predict", {{"instances", {{{"@requestFormat", "chatCompletions"},
                                                           {"messages", "not a list"}}}}})
                       .Json();
  EXPECT_EQ(bad["predictions"][0]["error"]["code"], 400) << bad.dump();

  // Bodies the protocol refuses.
  for (const json& body : {json{{"instances", "x"}}, json{{"other", 1}}, json::array()}) {
    const HttpResult e = srv->Post("/predict", body);
    EXPECT_EQ(e.status, 400) << body.dump() << " -> " << e.body;
    EXPECT_TRUE(e.Json()["error"].contains("message")) << e.body;
  }
  json many = json::array();
  for (int i = 0; i < 129; ++i) many.push_back(tokenize_instance);
  EXPECT_EQ(srv->Post("/predict", {{"instances", many}}).status, 400);

  // AIP_HEALTH_ROUTE answers as /health.
  const HttpResult health = srv->Get("/vertex-health");
  EXPECT_EQ(health.status, 200) << health.body;
  EXPECT_EQ(health.Json()["status"], "ok");
}

TEST(ServerVertex, NothingWithoutAipModeAndAipHttpPortReplacesThePort) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(plain, {"-m", SharedPath(kStories), "-c", "128"});
  EXPECT_EQ(plain->Post("/predict", {{"instances", json::array()}}).status, 404);

  const int port = FreePort();
  std::unique_ptr<ServerProcess> srv = ServerProcess::Launch(
      {"-m", SharedPath(kStories), "-c", "128"}, {{"AIP_MODE", "PREDICTION"}, {"AIP_HTTP_PORT", std::to_string(port)}});
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  int status = 0;
  for (int i = 0; i < 600 && status != 200; ++i) {
    status = Curl("GET", base + "/health", "", {}, 5).status;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(status, 200) << srv->Log();
  const HttpResult r = Curl("POST", base + "/predict",
                            json{{"instances", {{{"@requestFormat", "tokenize"}, {"content", "a"}}}}}.dump(),
                            {"Content-Type: application/json"}, 30);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(json::parse(r.body)["predictions"][0].contains("tokens")) << r.body;
}

}  // namespace
}  // namespace lazyslot::testing
