// Error handling of `lazyslot serve`: OpenAI-style bodies for malformed JSON and fields (naming the field),
// unknown routes, API keys, prompts too long for a slot, overload (503), and the server staying healthy.
#include <gtest/gtest.h>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";

// Status `code` with {"error": {"message", "type", "code"}}; returns the message.
std::string ExpectApiError(const HttpResult& r, int code, const std::string& type) {
  EXPECT_EQ(r.status, code) << r.body;
  const json j = r.Json();
  EXPECT_TRUE(j.is_object() && j.contains("error")) << r.body;
  if (!j.is_object() || !j.contains("error")) return "";
  EXPECT_EQ(j["error"]["code"], code);
  EXPECT_EQ(j["error"]["type"], type);
  EXPECT_TRUE(j["error"]["message"].is_string());
  return j["error"]["message"].is_string() ? j["error"]["message"].get<std::string>() : "";
}

TEST(ServerErrors, MalformedRequestsGet400NamingTheField) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories)});
  const std::string bad = "invalid_request_error";
  EXPECT_NE(
      ExpectApiError(srv->PostRaw("/v1/chat/completions", "{\"messages\": [", {}), 400, bad).find("JSON"),
      std::string::npos);
  EXPECT_NE(ExpectApiError(srv->PostRaw("/v1/completions", "[1, 2]", {}), 400, bad).find("object"),
            std::string::npos);
  EXPECT_NE(ExpectApiError(srv->PostRaw("/v1/completions", "", {"Content-Length: 0"}), 400, bad).find("body"),
            std::string::npos);

  struct Case {
    std::string route;
    json body;
    std::string field;  // must appear at the start of the message
  };
  const json msgs = {{{"role", "user"}, {"content", "hi"}}};
  const std::vector<Case> cases = {
      {"/v1/completions", {{"prompt", "x"}, {"temperature", "hot"}}, "temperature"},
      {"/v1/completions", {{"prompt", "x"}, {"top_p", 1.5}}, "top_p"},
      {"/v1/completions", {{"prompt", "x"}, {"top_k", 0.5}}, "top_k"},
      {"/v1/completions", {{"prompt", "x"}, {"min_p", -1}}, "min_p"},
      {"/v1/completions", {{"prompt", "x"}, {"max_tokens", "ten"}}, "max_tokens"},
      {"/v1/completions", {{"prompt", "x"}, {"max_tokens", 0}}, "max_tokens"},
      {"/v1/completions", {{"prompt", "x"}, {"n_predict", -5}}, "n_predict"},
      {"/v1/completions", {{"prompt", "x"}, {"stop", 7}}, "stop"},
      {"/v1/completions", {{"prompt", "x"}, {"stop", {"a", 1}}}, "stop[1]"},
      {"/v1/completions", {{"prompt", "x"}, {"seed", "s"}}, "seed"},
      {"/v1/completions", {{"prompt", "x"}, {"stream", "yes"}}, "stream"},
      {"/v1/completions", {{"prompt", "x"}, {"n", 65}}, "n"},  // more than --max-queue (64) holds
      {"/v1/completions", {{"prompt", "x"}, {"frequency_penalty", 5}}, "frequency_penalty"},
      {"/v1/completions", {{"prompt", "x"}, {"repeat_penalty", 0}}, "repeat_penalty"},
      {"/v1/completions",
       {{"prompt", "x"}, {"stream_options", {{"include_usage", 1}}}},
       "stream_options.include_usage"},
      {"/v1/completions", {{"max_tokens", 3}}, "prompt"},
      {"/v1/completions", {{"prompt", {1, true}}}, "prompt[1]"},
      {"/v1/completions", {{"prompt", json::array()}}, "prompt"},
      {"/v1/chat/completions", {{"max_tokens", 3}}, "messages"},
      {"/v1/chat/completions", {{"messages", "hi"}}, "messages"},
      {"/v1/chat/completions", {{"messages", json::array()}}, "messages"},
      {"/v1/chat/completions", {{"messages", {{{"content", "hi"}}}}}, "messages[0].role"},
      {"/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", 5}}}}}, "messages[0].content"},
      {"/v1/chat/completions",
       {{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", "x"}}}}}}}},
       "messages[0].content[0].type"},
      {"/v1/chat/completions", {{"messages", msgs}, {"logprobs", "yes"}}, "logprobs"},
      {"/v1/chat/completions",
       {{"messages", msgs}, {"response_format", {{"type", "xml"}}}},
       "response_format.type"},
      {"/v1/chat/completions",
       {{"messages", msgs}, {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", 3}}}}}},
       "response_format.json_schema.schema"},
      {"/v1/chat/completions", {{"messages", msgs}, {"grammar", "root ::= ("}}, "grammar"},
      {"/v1/completions",
       {{"prompt", "x"}, {"json_schema", {{"type", "object"}, {"minProperties", 1}}}},
       "json_schema"},
      {"/v1/chat/completions", {{"messages", msgs}, {"tools", "x"}}, "tools"},
      {"/tokenize", {{"content", 5}}, "content"},
      {"/tokenize", {{"content", "x"}, {"with_pieces", "yes"}}, "with_pieces"},
      {"/detokenize", {{"tokens", {1, "x"}}}, "tokens[1]"},
      {"/detokenize", {{"tokens", {1, 999999}}}, "tokens[1]"},
  };
  for (const Case& c : cases) {
    const std::string msg = ExpectApiError(srv->Post(c.route, c.body), 400, bad);
    EXPECT_EQ(msg.rfind(c.field + ":", 0), 0u) << c.route << " " << c.body.dump() << " -> " << msg;
  }
  // Token ids outside the vocabulary are refused by the engine, with the id.
  const std::string msg = ExpectApiError(srv->Post("/v1/completions", {{"prompt", {1, 100000}}}), 400, bad);
  EXPECT_NE(msg.find("100000"), std::string::npos) << msg;
  // Embeddings need --embeddings (as llama-server).
  ExpectApiError(srv->Post("/v1/embeddings", {{"input", "x"}}), 501, "not_supported_error");
  // The server is still fine.
  EXPECT_EQ(srv->Post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}).status, 200);
}

TEST(ServerErrors, UnknownRoutesGet404) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories)});
  for (const auto& [method, path] :
       std::vector<std::pair<std::string, std::string>>{{"GET", "/nope"},
                                                        {"POST", "/v1/nothing"},
                                                        {"GET", "/v1/chat/completions"},
                                                        {"DELETE", "/health"}}) {
    const std::string msg =
        ExpectApiError(Curl(method, srv->Url(path), method == "POST" ? "{}" : ""), 404, "not_found_error");
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
  }
}

TEST(ServerErrors, ApiKeyIsRequiredExceptForHealth) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "--api-key", "s3cret-key"});
  EXPECT_EQ(srv->Get("/health").status, 200);  // monitoring needs no key
  const json body = {{"prompt", "x"}, {"max_tokens", 2}};
  for (const std::vector<std::string>& headers :
       std::vector<std::vector<std::string>>{{},
                                             {"Authorization: Bearer wrong"},
                                             {"Authorization: Bearer s3cret-ke"},
                                             {"Authorization: Bearer s3cret-keyy"},
                                             {"Authorization: s3cret-key"},
                                             {"X-Api-Key: nope"}}) {
    ExpectApiError(srv->Post("/v1/completions", body, headers), 401, "authentication_error");
    ExpectApiError(srv->Get("/props", headers), 401, "authentication_error");
    EXPECT_EQ(srv->Get("/v1/models", headers).status, 200);  // public under --api-key, as in llama-server
    ExpectApiError(srv->Get("/metrics", headers), 401, "authentication_error");
  }
  EXPECT_EQ(srv->Post("/v1/completions", body, {"Authorization: Bearer s3cret-key"}).status, 200);
  EXPECT_EQ(srv->Get("/v1/models", {"Authorization: Bearer s3cret-key"}).status, 200);
  EXPECT_EQ(srv->Get("/slots", {"X-Api-Key: s3cret-key"}).status, 200);
}

TEST(ServerErrors, PromptLongerThanTheSlotGets400WithBothNumbers) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-c", "128", "-np", "2"});  // 64 cells per slot
  std::vector<int> ids(100, 300);
  ids[0] = 1;
  // llama-server's form: type exceed_context_size_error with n_prompt_tokens and n_ctx, streamed or not.
  for (const std::string route : {"/v1/completions", "/completion"}) {
    for (bool stream : {false, true}) {
      HttpResult r = srv->Post(route, {{"prompt", ids}, {"stream", stream}});
      const std::string msg = ExpectApiError(r, 400, "exceed_context_size_error");
      EXPECT_NE(msg.find("100"), std::string::npos) << msg;
      EXPECT_NE(msg.find("64"), std::string::npos) << msg;
      const json err = r.Json()["error"];
      EXPECT_EQ(err["n_prompt_tokens"], 100) << r.body;
      EXPECT_EQ(err["n_ctx"], 64) << r.body;
    }
  }
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "Once upon a time ";
  const std::string msg = ExpectApiError(
      srv->Post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", long_text}}}}}), 400,
      "exceed_context_size_error");
  EXPECT_NE(msg.find("64"), std::string::npos) << msg;
  // A prompt that fits, with generation running into the end of the slot: finish_reason "length". The last
  // sampled token needs no cell, so a 64-cell slot ends at 65 tokens in all (as llama-server).
  const json r = srv->Post("/v1/completions", {{"prompt", "Once upon a time"}, {"ignore_eos", true}}).Json();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length") << r.dump();
  EXPECT_LE(r["usage"]["total_tokens"].get<int>(), 65);
  EXPECT_GE(r["usage"]["total_tokens"].get<int>(), 64);
}

TEST(ServerErrors, OverloadGets503AndOthersAreServed) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-np", "1", "--max-queue", "1", "-c", "4096"});
  // 1 slot + 1 queue place; 10 long requests at once: at most 2 are accepted at any moment.
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 1500}, {"ignore_eos", true}};
  std::vector<HttpResult> results(10);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = srv->Post("/v1/completions", body); });
  }
  for (std::thread& t : threads) t.join();
  int ok = 0, overloaded = 0;
  for (const HttpResult& r : results) {
    if (r.status == 200) {
      ++ok;
    } else {
      ++overloaded;
      ExpectApiError(r, 503, "unavailable_error");
    }
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(overloaded, 1);
  // /metrics counts the refusals; the server still answers.
  EXPECT_NE(srv->Get("/metrics").body.find("lazyslot:requests_rejected_total " + std::to_string(overloaded)),
            std::string::npos);
  EXPECT_EQ(srv->Post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}).status, 200);
}

TEST(ServerErrors, BadFlagsAndMissingModelExitNonZero) {
  const std::string bin = LAZYSLOT_BINARY;
  EXPECT_NE(std::system((bin + " serve --pooling bogus >/dev/null 2>&1").c_str()), 0);
  EXPECT_NE(std::system((bin + " serve -np >/dev/null 2>&1").c_str()), 0);
  EXPECT_NE(std::system((bin + " serve --frobnicate >/dev/null 2>&1").c_str()), 0);
  const int port = FreePort();
  EXPECT_NE(std::system((bin + " serve --port " + std::to_string(port) +
                         " -m /nonexistent/model.gguf >/dev/null 2>&1")
                            .c_str()),
            0);
  // --help documents every flag.
  std::string help;
  RunShell(bin + " serve --help", &help);
  for (const char* flag :
       {"--model", "--ctx-size", "--parallel", "-np", "--threads", "--batch-size", "--host", "--port",
        "--api-key", "--embeddings", "--pooling", "--chat-template", "--max-queue"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace lazyslot::testing
