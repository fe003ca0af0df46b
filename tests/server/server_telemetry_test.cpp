// llama-server's generation fields on every text route, through curl on a real server: timings_per_token and
// return_progress on the OpenAI chat and completions routes and on /v1/responses streams, `n` choices beyond
// --parallel (each an independent draw of the same prompt, read once), the token ids of streamed /completion
// chunks, logit_bias keyed by text in the object form, and backend_sampling (-bs) with post-sampling
// probabilities.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "server_harness.h"
#include "sse_events.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";

json Messages(const std::string& text) { return json::array({{{"role", "user"}, {"content", text}}}); }

// The JSON chunks of an OpenAI-style stream, "[DONE]" left out (and required last).
std::vector<json> Chunks(const HttpResult& r) {
  std::vector<json> out;
  const std::vector<std::string> data = SseData(r.body);
  EXPECT_FALSE(data.empty()) << r.body;
  if (data.empty()) return out;
  EXPECT_EQ(data.back(), "[DONE]") << r.body;
  for (size_t i = 0; i + 1 < data.size(); ++i) out.push_back(json::parse(data[i]));
  return out;
}

// /completion's chunks (no [DONE]).
std::vector<json> NativeChunks(const HttpResult& r) {
  std::vector<json> out;
  for (const std::string& d : SseData(r.body)) out.push_back(json::parse(d));
  return out;
}

TEST(ServerTelemetry, ChatTimingsPerToken) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-c", "256"});
  const json body = {{"messages", Messages("Tell me a story")},
                     {"max_tokens", 10},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}},
                     {"timings_per_token", true}};
  const HttpResult r = srv->Post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<json> chunks = Chunks(r);
  ASSERT_GE(chunks.size(), 3u) << r.body;
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_FALSE(chunks[0].contains("timings"))
      << "the role chunk comes before any token: " << chunks[0].dump();
  int64_t last_predicted = 0, token_chunks = 0;
  const json* usage_chunk = nullptr;
  for (size_t i = 1; i < chunks.size(); ++i) {
    const json& c = chunks[i];
    if (c["choices"].empty()) {
      usage_chunk = &c;
      continue;
    }
    EXPECT_FALSE(c["choices"][0]["delta"].contains("role")) << c.dump();
    ASSERT_TRUE(c.contains("timings")) << c.dump();
    const json& t = c["timings"];
    for (const char* k : {"prompt_n", "prompt_ms", "prompt_per_second", "predicted_n", "predicted_ms",
                          "predicted_per_second", "cache_n"}) {
      EXPECT_TRUE(t.contains(k)) << k << " in " << t.dump();
    }
    EXPECT_GE(t["predicted_n"].get<int64_t>(), last_predicted) << "counts only grow";
    last_predicted = t["predicted_n"].get<int64_t>();
    if (c["choices"][0]["finish_reason"].is_null()) ++token_chunks;
  }
  EXPECT_GE(token_chunks, 1);
  ASSERT_NE(usage_chunk, nullptr) << r.body;
  ASSERT_TRUE(usage_chunk->contains("timings")) << "llama-server puts the timings on the last chunk";
  EXPECT_EQ((*usage_chunk)["timings"]["predicted_n"], (*usage_chunk)["usage"]["completion_tokens"]);
  EXPECT_LE((*usage_chunk)["timings"]["predicted_n"].get<int>(), 10);

  // Without the field, token chunks carry no timings (only the finishing one does).
  json plain = body;
  plain.erase("timings_per_token");
  for (const json& c : Chunks(srv->Post("/v1/chat/completions", plain))) {
    if (!c["choices"].empty() && c["choices"][0]["finish_reason"].is_null()) {
      EXPECT_FALSE(c.contains("timings")) << c.dump();
    }
  }
  // /v1/completions takes it too.
  const HttpResult comp = srv->Post(
      "/v1/completions",
      {{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"stream", true}, {"timings_per_token", true}});
  ASSERT_EQ(comp.status, 200) << comp.body;
  for (const json& c : Chunks(comp)) EXPECT_TRUE(c.contains("timings")) << c.dump();
  const HttpResult bad =
      srv->Post("/v1/chat/completions", {{"messages", Messages("x")}, {"timings_per_token", 1}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.Json()["error"]["message"], "timings_per_token: expected a boolean, got integer") << bad.body;
}

// The progress reports of one stream: first what the cache held, then one per batch of -b tokens.
std::vector<json> Progress(const std::vector<json>& chunks) {
  std::vector<json> out;
  for (const json& c : chunks) {
    if (c.contains("prompt_progress")) out.push_back(c["prompt_progress"]);
  }
  return out;
}

TEST(ServerTelemetry, ChatReturnProgressPerBatch) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-c", "512", "-np", "1", "-b", "32"});
  std::string text;
  for (int i = 0; i < 12; ++i) text += "This is a test. ";
  const json body = {
      {"messages", Messages(text)}, {"max_tokens", 3}, {"stream", true}, {"return_progress", true}};
  const std::vector<json> first = Progress(Chunks(srv->Post("/v1/chat/completions", body)));
  ASSERT_GE(first.size(), 3u);
  const int64_t total = first[0]["total"];
  EXPECT_GT(total, 64) << "a prompt of several batches";
  EXPECT_EQ(first[0]["cache"], 0);
  EXPECT_EQ(first[0]["processed"], 0) << "the first report is made at admission";
  for (size_t i = 1; i < first.size(); ++i) {
    EXPECT_EQ(first[i]["total"], total);
    EXPECT_EQ(first[i]["cache"], 0);
    EXPECT_GT(first[i]["processed"].get<int64_t>(), first[i - 1]["processed"].get<int64_t>());
    EXPECT_LE(first[i]["processed"].get<int64_t>() - first[i - 1]["processed"].get<int64_t>(), 32);
  }
  EXPECT_EQ(first.back()["processed"], total);
  EXPECT_EQ(static_cast<int64_t>(first.size()), 1 + (total + 31) / 32);

  // The same prompt again: all but its last token come from the slot's cache, so two reports.
  const std::vector<json> again = Progress(Chunks(srv->Post("/v1/chat/completions", body)));
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0]["cache"], total - 1);
  EXPECT_EQ(again[0]["processed"], total - 1);
  EXPECT_EQ(again[1]["processed"], total);

  // /v1/completions streams them too; a whole answer has none.
  const std::vector<json> comp = Progress(Chunks(
      srv->Post("/v1/completions",
                {{"prompt", text + "x"}, {"max_tokens", 2}, {"stream", true}, {"return_progress", true}})));
  ASSERT_GE(comp.size(), 2u);
  EXPECT_EQ(comp.back()["processed"], comp.back()["total"]);
  const HttpResult whole = srv->Post(
      "/v1/chat/completions", {{"messages", Messages(text)}, {"max_tokens", 2}, {"return_progress", true}});
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_FALSE(whole.Json().contains("prompt_progress"));
}

TEST(ServerTelemetry, ResponsesStreamTelemetry) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-c", "256", "-np", "1", "-b", "16"});
  std::string text;
  for (int i = 0; i < 6; ++i) text += "This is a test. ";
  const HttpResult r = srv->Post("/v1/responses", {{"input", text},
                                                   {"max_output_tokens", 6},
                                                   {"stream", true},
                                                   {"timings_per_token", true},
                                                   {"return_progress", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<SseEvent> events = ParseNamedSse(r.body);
  int progress = 0, timed_deltas = 0, deltas = 0;
  int64_t last_processed = -1;
  const SseEvent* completed = nullptr;
  for (const SseEvent& e : events) {
    if (e.data.contains("prompt_progress")) {
      EXPECT_EQ(e.name, "response.in_progress");
      const auto& p = e.data["prompt_progress"];
      EXPECT_GT(p["total"].get<int64_t>(), 16);
      EXPECT_GT(p["processed"].get<int64_t>(), last_processed);
      last_processed = p["processed"];
      EXPECT_EQ(e.data["response"]["status"], "in_progress");
      ++progress;
    }
    if (e.name == "response.output_text.delta") {
      ++deltas;
      if (e.data.contains("timings")) {
        EXPECT_TRUE(e.data["timings"].contains("predicted_per_second")) << e.data.dump();
        ++timed_deltas;
      }
    }
    if (e.name == "response.completed" || e.name == "response.incomplete") completed = &e;
  }
  EXPECT_GE(progress, 3) << r.body;
  EXPECT_GE(deltas, 1) << r.body;
  EXPECT_EQ(timed_deltas, deltas);
  ASSERT_NE(completed, nullptr) << r.body;
  ASSERT_TRUE(completed->data.contains("timings")) << completed->data.dump();
  EXPECT_EQ(completed->data["timings"]["predicted_n"], completed->data["response"]["usage"]["output_tokens"]);
  // Sequence numbers still count from 0 with the extra events.
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].data["sequence_number"], i);
}

// n choices are n independent draws of one prompt: choice j draws with seed + j, exactly as a request of one
// choice with that seed would, whether or not there are slots for all of them at once. The prompt is read
// once: later choices take its KV from the first (mapped or left in the slot).
TEST(ServerTelemetry, NChoicesBeyondParallel) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-c", "512", "-np", "1"});
  const json msgs = json::array(
      {{{"role", "system"}, {"content", "Book"}}, {{"role", "user"}, {"content", "What is the best book"}}});
  const double before = Metric(srv->Get("/metrics").body, "lazyslot:prompt_tokens_total");
  const HttpResult r =
      srv->Post("/v1/chat/completions",
                {{"messages", msgs}, {"max_tokens", 8}, {"n", 3}, {"seed", 100}, {"id_slot", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.Json();
  ASSERT_EQ(j["choices"].size(), 3u) << r.body;
  // The first choice read the prompt; the others, run one after another in the one slot, found all of it
  // but its last token in the slot's cache.
  const int64_t n_prompt = j["usage"]["prompt_tokens"];
  EXPECT_EQ(Metric(srv->Get("/metrics").body, "lazyslot:prompt_tokens_total") - before, n_prompt + 2);
  int64_t completion = 0;
  for (size_t i = 0; i < 3; ++i) {
    const json& c = j["choices"][i];
    EXPECT_EQ(c["index"], i);
    EXPECT_EQ(c["message"]["role"], "assistant");
    EXPECT_EQ(c["finish_reason"], "length");
    const json one = srv->Post("/v1/chat/completions",
                               {{"messages", msgs}, {"max_tokens", 8}, {"seed", 100 + static_cast<int>(i)}})
                         .Json();
    EXPECT_EQ(c["message"]["content"], one["choices"][0]["message"]["content"]) << "choice " << i;
    EXPECT_EQ(j["usage"]["prompt_tokens"], one["usage"]["prompt_tokens"]) << "the prompt is counted once";
    completion += one["usage"]["completion_tokens"].get<int64_t>();
  }
  EXPECT_EQ(j["usage"]["completion_tokens"], completion);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int64_t>() + completion);

  // Streamed: every choice's deltas under its own index, each ending with its finish chunk.
  const HttpResult s = srv->Post("/v1/chat/completions", {{"messages", msgs},
                                                          {"max_tokens", 8},
                                                          {"n", 3},
                                                          {"seed", 100},
                                                          {"stream", true},
                                                          {"stream_options", {{"include_usage", true}}}});
  ASSERT_EQ(s.status, 200) << s.body;
  std::vector<std::string> text(3);
  std::vector<int> finished(3, 0);
  json usage;
  for (const json& c : Chunks(s)) {
    if (c["choices"].empty()) {
      usage = c["usage"];
      continue;
    }
    const size_t i = c["choices"][0]["index"];
    ASSERT_LT(i, 3u);
    EXPECT_EQ(finished[i], 0) << "nothing after a choice's finish chunk";
    const json& d = c["choices"][0]["delta"];
    if (d.contains("content") && d["content"].is_string()) text[i] += d["content"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) ++finished[i];
  }
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(finished[i], 1);
    EXPECT_EQ(text[i], j["choices"][i]["message"]["content"]) << "choice " << i;
  }
  EXPECT_EQ(usage["completion_tokens"], j["usage"]["completion_tokens"]);

  // More than the queue holds at once (a request's choices are queued together) is refused, naming n.
  START_SERVER(small, {"-m", SharedPath(kStories), "-np", "1", "--max-queue", "2"});
  const HttpResult big = small->Post("/v1/chat/completions", {{"messages", msgs}, {"n", 3}});
  EXPECT_EQ(big.status, 400);
  EXPECT_EQ(big.Json()["error"]["message"],
            "n: 3 choices in one request, but this server queues at most 2 at once (--max-queue)");
  EXPECT_EQ(small->Post("/v1/chat/completions", {{"messages", msgs}, {"n", 2}, {"max_tokens", 2}}).status,
            200);
}

// With free slots, later choices map the first one's prompt KV while it generates (one prefill).
TEST(ServerTelemetry, NChoicesInParallelShareThePrompt) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-c", "1024", "-np", "4"});
  const json msgs = Messages("Once upon a time there was a little dog who liked to run in the park");
  const double before = Metric(srv->Get("/metrics").body, "lazyslot:prompt_tokens_total");
  const HttpResult r =
      srv->Post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 6}, {"n", 4}, {"id_slot", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.Json();
  ASSERT_EQ(j["choices"].size(), 4u);
  const double after = Metric(srv->Get("/metrics").body, "lazyslot:prompt_tokens_total");
  const int64_t n_prompt = j["usage"]["prompt_tokens"];
  EXPECT_EQ(after - before, n_prompt + 3) << "one prefill, then one token per later choice";
}

TEST(ServerTelemetry, NativeStreamCarriesTokens) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-c", "256"});
  const json body = {{"prompt", "I believe the meaning of life is"}, {"n_predict", 8}, {"seed", 7}};
  json streamed = body;
  streamed["stream"] = true;
  const HttpResult r = srv->Post("/completion", streamed);
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<int> tokens;
  std::string content;
  int64_t n_prompt = -1;
  for (const json& c : NativeChunks(r)) {
    if (c["stop"].get<bool>()) {
      EXPECT_TRUE(c["tokens"].empty()) << "the final chunk repeats nothing";
      EXPECT_EQ(c["tokens_evaluated"], n_prompt);
      continue;
    }
    ASSERT_FALSE(c["tokens"].empty()) << c.dump();
    for (const json& t : c["tokens"]) tokens.push_back(t.get<int>());
    content += c["content"].get<std::string>();
    n_prompt = c["tokens_evaluated"];
  }
  json whole = body;
  whole["return_tokens"] = true;
  const json w = srv->Post("/completion", whole).Json();
  EXPECT_EQ(json(tokens), w["tokens"]);
  EXPECT_EQ(content, w["content"]);
  EXPECT_EQ(n_prompt, w["tokens_evaluated"]);
}

// logit_bias's object form keyed by any text, as llama-server reads it: the bias goes on each of the text's
// tokens, exactly as the array form's [[text, bias]].
TEST(ServerTelemetry, LogitBiasObjectKeyedByText) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-c", "256"});
  const json base = {{"prompt", "What is the best book"}, {"n_predict", 32}, {"temperature", 0.0}};
  const std::string free_text = srv->Post("/completion", base).Json()["content"];
  // The words the greedy text has between spaces (" was ", " a "): two of them get banned.
  std::vector<std::string> words;
  for (size_t at = free_text.find(' '); at != std::string::npos && words.size() < 2;) {
    const size_t next = free_text.find(' ', at + 1);
    if (next == std::string::npos) break;
    const std::string w = free_text.substr(at, next - at + 1);
    if (w.size() > 2 && std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
    at = next;
  }
  ASSERT_EQ(words.size(), 2u) << "the greedy text has two words between spaces: " << free_text;
  json as_object = base, as_array = base;
  as_object["logit_bias"] = {{words[0], -100}, {words[1], false}};
  as_array["logit_bias"] = json::array({json::array({words[0], -100}), json::array({words[1], false})});
  const HttpResult o = srv->Post("/completion", as_object);
  ASSERT_EQ(o.status, 200) << o.body;
  const std::string biased = o.Json()["content"];
  for (const std::string& w : words) EXPECT_EQ(biased.find(w), std::string::npos) << w << " in " << biased;
  EXPECT_NE(biased, free_text);
  EXPECT_EQ(biased, srv->Post("/completion", as_array).Json()["content"]);
  EXPECT_EQ(o.Json()["generation_settings"]["logit_bias"],
            srv->Post("/completion", as_array).Json()["generation_settings"]["logit_bias"]);
}

// -bs / --backend-sampling and the backend_sampling field select nothing different here: the same tokens
// and the same post-sampling probabilities, which are the final sampler distribution's.
TEST(ServerTelemetry, BackendSamplingAndPostSamplingProbs) {
  REQUIRE_SHARED_FILE(kStories);
  for (const char* flag : {"-bs", "--backend-sampling", "--backend_sampling"}) {
    START_SERVER(srv, {"-m", SharedPath(kStories), flag});
    EXPECT_EQ(srv->Post("/completion", {{"prompt", "x"}, {"n_predict", 1}}).status, 200) << flag;
  }
  START_SERVER(srv, {"-m", SharedPath(kStories), "-c", "256", "-bs"});
  auto run = [&](const json& extra) {
    json body = {{"prompt", "The countries of Europe, in random order, are:"},
                 {"n_probs", 10},
                 {"n_predict", 20},
                 {"post_sampling_probs", true},
                 {"seed", 4242}};
    body.update(extra);
    const HttpResult r = srv->Post("/completion", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json();
  };
  const json on = run({{"backend_sampling", true}}), off = run({{"backend_sampling", false}});
  EXPECT_EQ(on["content"], off["content"]);
  EXPECT_EQ(on["completion_probabilities"], off["completion_probabilities"]);
  ASSERT_EQ(on["completion_probabilities"].size(), 20u);
  size_t several = 0;
  for (const json& t : on["completion_probabilities"]) {
    const json& top = t["top_probs"];
    ASSERT_FALSE(top.empty());
    double sum = 0, prev = 2;
    bool chosen_listed = false;
    for (const json& p : top) {
      const double v = p["prob"];
      EXPECT_GT(v, 0.0);
      EXPECT_LE(v, prev) << "best first";
      prev = v;
      sum += v;
      if (p["id"] == t["id"]) {
        chosen_listed = true;
        EXPECT_DOUBLE_EQ(p["prob"].get<double>(), t["prob"].get<double>());
      }
    }
    EXPECT_LE(sum, 1.0 + 1e-5);
    // Fewer than asked only when the sampler chain kept fewer: then they are the whole distribution.
    if (top.size() < 10) {
      EXPECT_NEAR(sum, 1.0, 1e-5) << t.dump();
    }
    EXPECT_TRUE(chosen_listed || top.size() == 10) << t.dump();
    several += top.size() >= 2 ? 1 : 0;
  }
  EXPECT_GE(several, 2u) << "the chain kept alternatives for some tokens";
  // After top_k 1 only the drawn token survives: probability 1.
  const json greedy = run({{"top_k", 1}});
  for (const json& t : greedy["completion_probabilities"]) {
    ASSERT_EQ(t["top_probs"].size(), 1u);
    EXPECT_DOUBLE_EQ(t["prob"].get<double>(), 1.0);
  }
  const HttpResult bad = srv->Post("/completion", {{"prompt", "x"}, {"backend_sampling", "yes"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.Json()["error"]["message"], "backend_sampling: expected a boolean, got string");
}

}  // namespace
}  // namespace lazyslot::testing
