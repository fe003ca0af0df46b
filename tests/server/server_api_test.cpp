// Integration tests of the main routes against the real `lazyslot serve`, driven with curl: greedy
// completions equal llama-server's (reference/server-greedy), streaming equals plain, chat through the
// Qwen3 template, stop strings, tokenize/detokenize, health/props/models/slots/metrics.
#include <gtest/gtest.h>

#include "greedy_reference.h"
#include "server_harness.h"

namespace lazyslot::testing {
namespace {

// One server per model, started by the first test of the suite (each ctest process runs one test).
template <const char* kModel, int kParallel>
class ModelServer : public ::testing::Test {
 protected:
  static inline std::unique_ptr<ServerProcess> srv_;
  void SetUp() override {
    REQUIRE_SHARED_FILE(kModel);
    if (!srv_) {
      std::string err;
      srv_ = ServerProcess::Start({"-m", SharedPath(kModel), "-np", std::to_string(kParallel), "-c", "4096"},
                                  &err);
      ASSERT_NE(srv_, nullptr) << err;
    }
  }
  static void TearDownTestSuite() { srv_.reset(); }
  ServerProcess& srv() { return *srv_; }
};

constexpr char kStories[] = "models/stories260K.gguf";
constexpr char kTinyLlama[] = "models/TinyLLama-v0-Q4_0.gguf";
constexpr char kQwenVocab[] = "models/qwen3-vocab-tiny-q8_0.gguf";
using StoriesServer = ModelServer<kStories, 2>;
using TinyLlamaServer = ModelServer<kTinyLlama, 2>;
using QwenVocabServer = ModelServer<kQwenVocab, 2>;

// Checks /v1/completions (text and token prompts) and /completion against llama-server's greedy output.
void ExpectGreedyMatchesReference(ServerProcess& srv, const std::string& ref_name) {
  const std::string path = "reference/server-greedy/" + ref_name + ".llamacpp-greedy.json";
  ASSERT_TRUE(std::filesystem::exists(SharedPath(path))) << path;
  const json ref = LoadJsonFile(SharedPath(path));
  ASSERT_TRUE(ref.is_array() && !ref.empty());
  for (const json& c : ref) {
    const std::string prompt = c["prompt"];
    const int n = static_cast<int>(c["greedy_tokens"].size());
    SCOPED_TRACE("prompt: '" + prompt + "'");
    // llama-server added BOS (the model's add_bos); our tokenizer must give the same prompt.
    HttpResult tok = srv.Post("/tokenize", {{"content", prompt}, {"add_special", true}});
    ASSERT_EQ(tok.status, 200) << tok.body;
    EXPECT_EQ(tok.Json()["tokens"], c["tokens_with_bos"]);
    tok = srv.Post("/tokenize", {{"content", prompt}});
    EXPECT_EQ(tok.Json()["tokens"], c["tokens_no_special"]);

    // The same text up to the reference's first near tie (all of it when there is none).
    const size_t clear = ClearGreedySteps(c);
    const std::string prefix = GreedyPrefixText(c, clear);
    auto expect_text = [&](const std::string& text) {
      if (clear == static_cast<size_t>(n)) {
        EXPECT_EQ(text, c["greedy_text"]);
      } else {
        EXPECT_EQ(text.rfind(prefix, 0), 0u) << "'" << text << "' does not start with '" << prefix << "'";
      }
    };
    HttpResult r = srv.Post("/v1/completions", {{"prompt", prompt}, {"max_tokens", n}, {"temperature", 0}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = r.Json();
    EXPECT_EQ(j["object"], "text_completion");
    expect_text(j["choices"][0]["text"]);
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(j["usage"]["prompt_tokens"], c["tokens_with_bos"].size());
    EXPECT_EQ(j["usage"]["completion_tokens"], n);
    EXPECT_EQ(j["usage"]["total_tokens"], n + c["tokens_with_bos"].size());

    // The same prompt as token ids, and llama-server's own /completion route with n_predict.
    r = srv.Post("/v1/completions",
                 {{"prompt", c["tokens_with_bos"]}, {"max_tokens", n}, {"temperature", 0}});
    ASSERT_EQ(r.status, 200) << r.body;
    expect_text(r.Json()["choices"][0]["text"]);
    r = srv.Post("/completion", {{"prompt", prompt}, {"n_predict", n}, {"temperature", 0}});
    ASSERT_EQ(r.status, 200) << r.body;
    expect_text(r.Json()["content"]);
    EXPECT_EQ(r.Json()["tokens_predicted"], n);
    EXPECT_EQ(r.Json()["stop"], true);
  }
}

TEST_F(StoriesServer, GreedyCompletionsEqualLlamaServer) {
  REQUIRE_SHARED_FILE("reference/server-greedy/stories260K.llamacpp-greedy.json");
  ExpectGreedyMatchesReference(srv(), "stories260K");
}

TEST_F(TinyLlamaServer, GreedyCompletionsEqualLlamaServer) {
  REQUIRE_SHARED_FILE("reference/server-greedy/TinyLLama-v0-Q4_0.llamacpp-greedy.json");
  ExpectGreedyMatchesReference(srv(), "TinyLLama-v0-Q4_0");
}

TEST_F(StoriesServer, HealthPropsModelsSlots) {
  HttpResult h = srv().Get("/health");
  ASSERT_EQ(h.status, 200);
  EXPECT_EQ(h.Json(), json({{"status", "ok"}}));

  const json props = srv().Get("/props").Json();
  EXPECT_EQ(props["total_slots"], 2);
  EXPECT_EQ(props["n_ctx"], 4096);
  EXPECT_EQ(props["n_ctx_slot"], 2048);
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 2048);
  EXPECT_EQ(props["model_path"], SharedPath(kStories));
  EXPECT_TRUE(props["chat_template_name"].is_string());

  const json models = srv().Get("/v1/models").Json();
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "stories260K.gguf");
  EXPECT_EQ(models["data"][0]["object"], "model");

  const json slots = srv().Get("/slots").Json();
  ASSERT_TRUE(slots.is_array());
  ASSERT_EQ(slots.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(slots[i]["id"], i);
    EXPECT_EQ(slots[i]["n_ctx"], 2048);
    EXPECT_EQ(slots[i]["state"], "idle");
    EXPECT_TRUE(slots[i]["n_tokens"].is_number_integer());
    EXPECT_TRUE(slots[i]["committed_bytes"].is_number_integer());
  }
}

TEST_F(StoriesServer, StreamedCompletionEqualsPlain) {
  const json req = {{"prompt", "Lily and Tom went to the park."}, {"max_tokens", 24}, {"temperature", 0}};
  const json plain = srv().Post("/v1/completions", req).Json();
  json sreq = req;
  sreq["stream"] = true;
  sreq["stream_options"] = {{"include_usage", true}};
  HttpResult r = srv().Post("/v1/completions", sreq);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<std::string> data = SseData(r.body);
  ASSERT_GE(data.size(), 3u);
  EXPECT_EQ(data.back(), "[DONE]");
  std::string text, finish;
  json usage;
  for (size_t i = 0; i + 1 < data.size(); ++i) {
    const json chunk = json::parse(data[i]);
    EXPECT_EQ(chunk["object"], "text_completion");
    if (!chunk["usage"].is_null()) usage = chunk["usage"];
    for (const json& c : chunk["choices"]) {
      text += c["text"].get<std::string>();
      if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
    }
  }
  EXPECT_EQ(text, plain["choices"][0]["text"]);
  EXPECT_EQ(finish, "length");
  // Usage agrees, except how much of the prompt the slot had cached (cache_prompt).
  for (const char* k : {"prompt_tokens", "completion_tokens", "total_tokens"})
    EXPECT_EQ(usage[k], plain["usage"][k]);
  EXPECT_EQ(r.body.find("data: [DONE]\n\n"), r.body.size() - 14);  // SSE framing: blank line after each
}

TEST_F(StoriesServer, StopStringsEndTheTextAcrossTokens) {
  const json base = {{"prompt", "Once upon a time"}, {"max_tokens", 32}, {"temperature", 0}};
  const std::string full = srv().Post("/v1/completions", base).Json()["choices"][0]["text"];
  ASSERT_NE(full.find("Lily"), std::string::npos) << full;
  // "e gi" starts inside " little" and ends inside " girl": it spans a token boundary.
  for (const json& stop : {json("Lily"), json({"nothing", "Lily"}), json("e gi")}) {
    const std::string s = stop.is_string() ? stop.get<std::string>() : "Lily";
    json req = base;
    req["stop"] = stop;
    const json j = srv().Post("/v1/completions", req).Json();
    EXPECT_EQ(j["choices"][0]["text"], full.substr(0, full.find(s))) << stop;
    EXPECT_EQ(j["choices"][0]["finish_reason"], "stop") << stop;
    req["stream"] = true;
    std::string text;
    for (const std::string& d : SseData(srv().Post("/v1/completions", req).body)) {
      if (d != "[DONE]") text += json::parse(d)["choices"][0]["text"].get<std::string>();
    }
    EXPECT_EQ(text, full.substr(0, full.find(s))) << stop;
  }
}

TEST_F(StoriesServer, NPredictAliasAndLimits) {
  json r =
      srv().Post("/v1/completions", {{"prompt", "The cat"}, {"n_predict", 5}, {"temperature", 0}}).Json();
  EXPECT_EQ(r["usage"]["completion_tokens"], 5);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  r = srv().Post("/v1/completions", {{"prompt", "The cat"}, {"max_tokens", 3}, {"n_predict", 9}}).Json();
  EXPECT_EQ(r["usage"]["completion_tokens"], 3);
  r = srv()
          .Post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                         {"max_completion_tokens", 4},
                                         {"max_tokens", 9}})
          .Json();
  EXPECT_EQ(r["usage"]["completion_tokens"], 4);
}

TEST_F(StoriesServer, SamplingParametersAreHonoured) {
  const json base = {{"prompt", "Once upon a time"}, {"max_tokens", 16}};
  json a = base, b = base;
  a["temperature"] = b["temperature"] = 1.5;
  a["seed"] = b["seed"] = 1234;
  a["top_p"] = b["top_p"] = 0.9;
  a["min_p"] = b["min_p"] = 0.01;
  const std::string ta = srv().Post("/v1/completions", a).Json()["choices"][0]["text"];
  EXPECT_EQ(ta, srv().Post("/v1/completions", b).Json()["choices"][0]["text"].get<std::string>());
  // top_k 1 is greedy whatever the temperature; penalties accepted.
  json greedy = base;
  greedy["temperature"] = 0;
  json k1 = base;
  k1["temperature"] = 2.0;
  k1["top_k"] = 1;
  EXPECT_EQ(srv().Post("/v1/completions", greedy).Json()["choices"][0]["text"],
            srv().Post("/v1/completions", k1).Json()["choices"][0]["text"]);
  json pen = greedy;
  pen["repeat_penalty"] = 1.3;
  pen["frequency_penalty"] = 0.5;
  pen["presence_penalty"] = 0.5;
  HttpResult r = srv().Post("/v1/completions", pen);
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(StoriesServer, MetricsArePrometheusText) {
  ASSERT_EQ(srv().Post("/v1/completions", {{"prompt", "The cat"}, {"max_tokens", 4}}).status, 200);
  HttpResult m = srv().Get("/metrics");
  ASSERT_EQ(m.status, 200);
  auto value = [&](const std::string& name) -> double {
    const size_t at = m.body.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::stod(m.body.substr(at + name.size() + 2));
  };
  EXPECT_GE(value("lazyslot:requests_total"), 1);
  EXPECT_GE(value("lazyslot:tokens_predicted_total"), 4);
  EXPECT_GE(value("lazyslot:prompt_tokens_total"), 3);
  EXPECT_GE(value("lazyslot:prompt_seconds_total"), 0);
  EXPECT_EQ(value("lazyslot:requests_deferred"), 0);
  EXPECT_GT(value("lazyslot:kv_reserved_bytes"), 0);
  EXPECT_GE(value("lazyslot:kv_committed_bytes"), 0);
  EXPECT_GT(value("lazyslot:process_resident_memory_bytes"), 0);
  EXPECT_NE(m.body.find("# TYPE lazyslot:tokens_predicted_total counter"), std::string::npos);
  EXPECT_NE(m.body.find("lazyslot:http_responses_total{status=\"200\"}"), std::string::npos);
}

TEST_F(QwenVocabServer, ChatRendersTheModelTemplate) {
  REQUIRE_SHARED_FILE("reference/chat-template/qwen3.json");
  EXPECT_EQ(srv().Get("/props").Json()["chat_template_name"], "model");
  const json ref = LoadJsonFile(SharedPath("reference/chat-template/qwen3.json"));
  int checked = 0;
  for (const json& c : ref["cases"]) {
    if (!c["add_generation_prompt"].get<bool>() || c.contains("tools") || c.contains("enable_thinking"))
      continue;
    SCOPED_TRACE(c["name"].get<std::string>());
    // The prompt the server builds must be exactly the reference rendering, tokenized with specials parsed.
    const json expect_tokens = srv().Post("/tokenize", {{"content", c["rendered"]}}).Json()["tokens"];
    const json r = srv()
                       .Post("/v1/chat/completions",
                             {{"messages", c["messages"]}, {"max_tokens", 2}, {"temperature", 0}})
                       .Json();
    EXPECT_EQ(r["usage"]["prompt_tokens"], expect_tokens.size()) << r.dump();
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

// POST /apply-template renders exactly the prompt chat uses: its tokens (control tokens parsed, as chat
// tokenizes) count what chat reports as prompt_tokens, with and without tools, and its errors are chat's.
TEST_F(QwenVocabServer, ApplyTemplateEqualsWhatChatRenders) {
  const json tools = json::array(
      {{{"type", "function"},
        {"function",
         {{"name", "get_weather"},
          {"description", "Weather"},
          {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}}});
  const json msgs = json::array({{{"role", "system"}, {"content", "Be brief."}},
                                 {{"role", "user"}, {"content", "Weather in Zürich?"}}});
  for (const json& extra : {json::object(), json{{"tools", tools}},
                            json{{"chat_template_kwargs", {{"enable_thinking", false}}}}}) {
    json body = {{"messages", msgs}};
    body.update(extra);
    HttpResult t = srv().Post("/apply-template", body);
    ASSERT_EQ(t.status, 200) << t.body;
    const std::string prompt = t.Json()["prompt"];
    EXPECT_NE(prompt.find("Zürich"), std::string::npos);
    if (extra.contains("tools")) {
      EXPECT_NE(prompt.find("get_weather"), std::string::npos) << prompt;
    }
    const json tok = srv().Post("/tokenize", {{"content", prompt}, {"parse_special", true}}).Json();
    json chat = body;
    chat["max_tokens"] = 1;
    chat["temperature"] = 0;
    const json r = srv().Post("/v1/chat/completions", chat).Json();
    EXPECT_EQ(r["usage"]["prompt_tokens"].get<size_t>(), tok["tokens"].size()) << prompt;
  }
  HttpResult bad = srv().Post("/apply-template", {{"messages", "hi"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("messages"), std::string::npos);
  EXPECT_EQ(srv().Post("/apply-template", {{"messages", msgs}, {"max_token", 3}}).status, 400);
}

TEST_F(QwenVocabServer, ChatPlainAndStreamed) {
  const json msgs = {{{"role", "system"}, {"content", "You are terse."}},
                     {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Name a colour."}}}}}};
  const json req = {
      {"model", "x"}, {"messages", msgs}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}};
  HttpResult p = srv().Post("/v1/chat/completions", req);
  ASSERT_EQ(p.status, 200) << p.body;
  const json plain = p.Json();
  EXPECT_EQ(plain["object"], "chat.completion");
  EXPECT_TRUE(plain["id"].get<std::string>().rfind("chatcmpl-", 0) == 0);
  EXPECT_TRUE(plain["created"].is_number_integer());
  EXPECT_EQ(plain["model"], "qwen3-vocab-tiny-q8_0.gguf");
  EXPECT_EQ(plain["choices"][0]["index"], 0);
  EXPECT_EQ(plain["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(plain["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(plain["usage"]["completion_tokens"], 12);

  json sreq = req;
  sreq["stream"] = true;
  sreq["stream_options"] = {{"include_usage", true}};
  HttpResult s = srv().Post("/v1/chat/completions", sreq);
  ASSERT_EQ(s.status, 200);
  const std::vector<std::string> data = SseData(s.body);
  ASSERT_GE(data.size(), 4u);
  EXPECT_EQ(data.back(), "[DONE]");
  const json first = json::parse(data[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(first["choices"][0]["delta"]["content"].is_null()) << "llama-server's first chunk: " << data[0];
  std::string text;
  std::string finish;
  for (size_t i = 0; i + 2 < data.size(); ++i) {
    const json chunk = json::parse(data[i]);
    EXPECT_EQ(chunk["id"], first["id"]);
    const json& c = chunk["choices"][0];
    if (c["delta"].contains("content") && c["delta"]["content"].is_string()) text += c["delta"]["content"].get<std::string>();
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  const json usage_chunk = json::parse(data[data.size() - 2]);
  EXPECT_TRUE(usage_chunk["choices"].empty());
  for (const char* k : {"prompt_tokens", "completion_tokens", "total_tokens"}) {
    EXPECT_EQ(usage_chunk["usage"][k], plain["usage"][k]);
  }
  EXPECT_EQ(text, plain["choices"][0]["message"]["content"]);
  EXPECT_EQ(finish, "length");
}

TEST_F(QwenVocabServer, TokenizeDetokenizeRoundTrip) {
  for (const std::string text : {"Hello world", "héllo 你好 🙂", "<|im_start|>user\nhi<|im_end|>"}) {
    HttpResult t = srv().Post("/tokenize", {{"content", text}});
    ASSERT_EQ(t.status, 200) << t.body;
    const json ids = t.Json()["tokens"];
    ASSERT_FALSE(ids.empty());
    HttpResult d = srv().Post("/detokenize", {{"tokens", ids}});
    ASSERT_EQ(d.status, 200) << d.body;
    EXPECT_EQ(d.Json()["content"], text);
    // with_pieces: the same ids, each with its text (or its bytes, where a piece is not whole UTF-8).
    const json pieces = srv().Post("/tokenize", {{"content", text}, {"with_pieces", true}}).Json()["tokens"];
    ASSERT_EQ(pieces.size(), ids.size());
    std::string joined;
    for (size_t i = 0; i < pieces.size(); ++i) {
      EXPECT_EQ(pieces[i]["id"], ids[i]);
      if (pieces[i]["piece"].is_string()) {
        joined += pieces[i]["piece"].get<std::string>();
      } else {
        for (const json& b : pieces[i]["piece"]) joined += static_cast<char>(b.get<int>());
      }
    }
    EXPECT_EQ(joined, text);
  }
  // The control token text is one token when parse_special is on (the default), several when off.
  EXPECT_EQ(srv().Post("/tokenize", {{"content", "<|im_end|>"}}).Json()["tokens"], json({151645}));
  EXPECT_GT(
      srv().Post("/tokenize", {{"content", "<|im_end|>"}, {"parse_special", false}}).Json()["tokens"].size(),
      1u);
}

}  // namespace
}  // namespace lazyslot::testing
