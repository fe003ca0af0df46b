// Router mode through the real server (issue 16): several models from --models-dir or --models-preset,
// routed by the request's `model`; /v1/models statuses (unloaded, loaded, sleeping); POST /models/load and
// /models/unload; unknown ids; a model file corrupted while listed; an embedder and a chat model side by
// side; and --memory-budget sampled while three models generate at once.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

namespace fs = std::filesystem;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // the server under test is sanitized too (same build)
#else
constexpr bool kSanitized = false;
#endif
constexpr char kStories[] = "models/stories260K.gguf";
constexpr char kQwen[] = "models/qwen3-tiny-q8_0.gguf";
constexpr char kBert[] = "models/bert-tiny-f32.gguf";

// A fresh models directory holding copies of shared models under the given ids.
std::string ModelsDir(const std::vector<std::pair<std::string, std::string>>& id_and_model) {
  const std::string dir = NewScratchFile("models");
  fs::create_directories(dir);
  for (const auto& [id, rel] : id_and_model) fs::copy_file(SharedPath(rel), dir + "/" + id + ".gguf");
  return dir;
}

// id -> status value from GET /v1/models.
std::map<std::string, std::string> Statuses(const ServerProcess& srv) {
  std::map<std::string, std::string> out;
  const json j = srv.Get("/v1/models").Json();
  for (const json& m : j["data"]) out[m["id"].get<std::string>()] = m["status"]["value"].get<std::string>();
  return out;
}

json Complete(const ServerProcess& srv, const std::string& model, const std::string& prompt, int n = 12) {
  HttpResult r = srv.Post("/v1/completions",
                          {{"model", model}, {"prompt", prompt}, {"max_tokens", n}, {"temperature", 0}});
  json j = r.Json();
  j["http_status"] = r.status;
  return j;
}

std::string Text(const json& completion) {
  if (!completion.contains("choices")) return "<error: " + completion.dump() + ">";
  return completion["choices"][0]["text"].get<std::string>();
}

uint64_t RssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

TEST(ServerRouter, RoutesByModelAndReportsStatus) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_SHARED_FILE(kQwen);
  // The same prompt on a one-model server, for comparison.
  std::string want_stories, want_qwen;
  {
    START_SERVER(one, {"-m", SharedPath(kStories), "-c", "256", "-np", "1"});
    want_stories = Text(Complete(*one, "whatever", "Once upon a time"));
  }
  {
    START_SERVER(one, {"-m", SharedPath(kQwen), "-c", "256", "-np", "1"});
    want_qwen = Text(Complete(*one, "whatever", "Once upon a time"));
  }
  const std::string dir = ModelsDir({{"tale", kStories}, {"qwen", kQwen}});
  START_SERVER(srv, {"--models-dir", dir, "-c", "256", "-np", "1"});
  EXPECT_EQ(Statuses(*srv), (std::map<std::string, std::string>{{"qwen", "unloaded"}, {"tale", "unloaded"}}));
  const json models = srv->Get("/models").Json();  // llama-server's router path too
  ASSERT_EQ(models["data"].size(), 2u) << models.dump();
  EXPECT_EQ(models["data"][0]["object"], "model");
  EXPECT_EQ(models["data"][0]["source"], "models_dir");

  // Probes and scrapes never load a model: 503 while it is not loaded, and it stays unloaded.
  HttpResult probe = srv->Get("/health?ready=1&model=tale");
  EXPECT_EQ(probe.status, 503) << probe.body;
  EXPECT_NE(probe.body.find("'tale' is not loaded (unloaded)"), std::string::npos) << probe.body;
  EXPECT_EQ(srv->Get("/metrics?model=tale").status, 503);
  EXPECT_EQ(Statuses(*srv)["tale"], "unloaded");
  EXPECT_EQ(srv->Get("/health").status, 200);
  // /props without a model describes the router, as llama-server's router does.
  const json router_props = srv->Get("/props").Json();
  EXPECT_EQ(router_props["role"], "router") << router_props.dump();
  EXPECT_EQ(router_props["max_instances"], 4);
  EXPECT_EQ(router_props["models_autoload"], true);

  const json a = Complete(*srv, "tale", "Once upon a time");
  ASSERT_EQ(a["http_status"], 200) << a.dump();
  EXPECT_EQ(a["model"], "tale");
  EXPECT_EQ(Text(a), want_stories);
  EXPECT_EQ(Statuses(*srv), (std::map<std::string, std::string>{{"qwen", "unloaded"}, {"tale", "loaded"}}));
  const json b = Complete(*srv, "qwen", "Once upon a time");
  ASSERT_EQ(b["http_status"], 200) << b.dump();
  EXPECT_EQ(b["model"], "qwen");
  EXPECT_EQ(Text(b), want_qwen);
  EXPECT_EQ(Statuses(*srv), (std::map<std::string, std::string>{{"qwen", "loaded"}, {"tale", "loaded"}}));

  // Chat routes by `model` too, and the per-model GET routes by ?model=.
  HttpResult chat = srv->Post(
      "/v1/chat/completions",
      {{"model", "qwen"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 4}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(chat.Json()["model"], "qwen");
  const json props = srv->Get("/props?model=tale").Json();
  EXPECT_EQ(props["model_alias"], "tale") << props.dump();
  EXPECT_EQ(props["n_ctx_slot"], 256);
  const json slots = srv->Get("/slots?model=qwen").Json();
  ASSERT_TRUE(slots.is_array()) << slots.dump();
  EXPECT_EQ(slots.size(), 1u);
  EXPECT_EQ(srv->Get("/health?ready=1&model=qwen").status, 200);
  // A slot action names its model in the body, as llama-server's router reads it.
  HttpResult erase = srv->Post("/slots/0?action=erase", {{"model", "qwen"}});
  ASSERT_EQ(erase.status, 200) << erase.body;
  EXPECT_EQ(erase.Json()["id_slot"], 0);
  const std::string metrics = srv->Get("/metrics").body;
  EXPECT_NE(metrics.find("lazyslot:model_loaded{model=\"tale\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("lazyslot:model_loaded{model=\"qwen\"} 1"), std::string::npos);
  const std::string one_model = srv->Get("/metrics?model=tale").body;
  EXPECT_NE(one_model.find("lazyslot:tokens_predicted_total 12"), std::string::npos) << one_model;

  // No model named: a 400 listing the ids (llama-server's router refuses it too); unknown: a 404 naming them.
  HttpResult none = srv->Post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}});
  EXPECT_EQ(none.status, 400);
  EXPECT_NE(none.body.find("qwen, tale"), std::string::npos) << none.body;
  HttpResult unknown = srv->Post("/v1/completions", {{"model", "nope"}, {"prompt", "x"}, {"max_tokens", 1}});
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.Json()["error"]["type"], "not_found_error");
  EXPECT_NE(unknown.body.find("'nope' not found; known models: qwen, tale"), std::string::npos)
      << unknown.body;
  EXPECT_EQ(srv->Get("/props?model=nope").status, 404);
  EXPECT_EQ(srv->Post("/v1/embeddings", {{"model", "nope"}, {"input", "x"}}).status, 404);
}

TEST(ServerRouter, SleepsWhenIdleAndWakesWithTheSameAnswer) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string dir = ModelsDir({{"tale", kStories}});
  START_SERVER(srv, {"--models-dir", dir, "-c", "256", "-np", "1", "--sleep-idle-seconds", "1"});
  const std::string first = Text(Complete(*srv, "tale", "Lily and Tom"));
  EXPECT_EQ(Statuses(*srv)["tale"], "loaded");
  std::string status;
  for (int i = 0; i < 100 && status != "sleeping"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    status = Statuses(*srv)["tale"];
  }
  EXPECT_EQ(status, "sleeping");
  EXPECT_EQ(Text(Complete(*srv, "tale", "Lily and Tom")), first);
  EXPECT_EQ(Statuses(*srv)["tale"], "loaded");
}

TEST(ServerRouter, LoadAndUnloadRoutes) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string dir = ModelsDir({{"a", kStories}, {"b", kStories}});
  START_SERVER(srv, {"--models-dir", dir, "-c", "256", "-np", "1", "--no-models-autoload"});
  // Autoload off: a request for an unloaded model is refused until it is loaded.
  json r = Complete(*srv, "a", "Once");
  EXPECT_EQ(r["http_status"], 400) << r.dump();
  EXPECT_NE(r.dump().find("not loaded"), std::string::npos) << r.dump();
  HttpResult load = srv->Post("/models/load", {{"model", "a"}});
  ASSERT_EQ(load.status, 200) << load.body;
  EXPECT_EQ(load.Json(), json({{"success", true}}));
  EXPECT_EQ(Statuses(*srv), (std::map<std::string, std::string>{{"a", "loaded"}, {"b", "unloaded"}}));
  EXPECT_EQ(Complete(*srv, "a", "Once")["http_status"], 200);
  HttpResult again = srv->Post("/models/load", {{"model", "a"}});
  EXPECT_EQ(again.status, 400);
  EXPECT_NE(again.body.find("already loaded"), std::string::npos) << again.body;
  // ?autoload=true overrides the server's setting for one request (llama-server's query parameter).
  EXPECT_EQ(srv->Get("/props?model=b&autoload=true").status, 200);
  EXPECT_EQ(Statuses(*srv)["b"], "loaded");

  HttpResult unload = srv->Post("/models/unload", {{"model", "a"}});
  ASSERT_EQ(unload.status, 200) << unload.body;
  EXPECT_EQ(Statuses(*srv)["a"], "unloaded");
  EXPECT_EQ(srv->Post("/models/unload", {{"model", "a"}}).status, 400);  // not loaded
  EXPECT_EQ(Complete(*srv, "a", "Once")["http_status"], 400);
  EXPECT_EQ(srv->Post("/models/load", {{"model", "zzz"}}).status, 404);
  EXPECT_EQ(srv->Post("/models/unload", {{"model", "zzz"}}).status, 404);
  EXPECT_EQ(srv->Post("/models/load", json::object()).status, 400);
  EXPECT_EQ(srv->Post("/models/load", {{"model", "a"}, {"extra", 1}}).status, 400);

  // A one-model server has no router routes.
  START_SERVER(one, {"-m", SharedPath(kStories), "-c", "256", "-np", "1"});
  EXPECT_EQ(one->Post("/models/load", {{"model", "a"}}).status, 501);
}

TEST(ServerRouter, ModelsMaxUnloadsTheLeastRecentlyUsed) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string dir = ModelsDir({{"a", kStories}, {"b", kStories}, {"c", kStories}});
  START_SERVER(srv, {"--models-dir", dir, "-c", "256", "-np", "1", "--models-max", "2"});
  for (const char* id : {"a", "b", "a", "c"}) ASSERT_EQ(Complete(*srv, id, "Once", 2)["http_status"], 200);
  EXPECT_EQ(Statuses(*srv),
            (std::map<std::string, std::string>{{"a", "loaded"}, {"b", "unloaded"}, {"c", "loaded"}}));
}

TEST(ServerRouter, CorruptedModelFailsItsRequestsOnly) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string dir = ModelsDir({{"good", kStories}, {"bad", kStories}});
  START_SERVER(srv, {"--models-dir", dir, "-c", "256", "-np", "1"});
  const std::string want = Text(Complete(*srv, "good", "Once upon a time"));
  ASSERT_EQ(Complete(*srv, "bad", "Once upon a time")["http_status"], 200);
  // Truncated in place while loaded (and idle): its requests fail, the other model keeps serving.
  fs::resize_file(dir + "/bad.gguf", 4096);
  json r = Complete(*srv, "bad", "Once upon a time");
  EXPECT_EQ(r["http_status"], 500) << r.dump();
  EXPECT_NE(r.dump().find("was truncated"), std::string::npos) << r.dump();
  EXPECT_EQ(Text(Complete(*srv, "good", "Once upon a time")), want);
  const json listed = srv->Get("/v1/models").Json();
  for (const json& m : listed["data"]) {
    if (m["id"] == "bad") {
      EXPECT_EQ(m["status"]["value"], "unloaded");
      EXPECT_EQ(m["status"]["failed"], true) << m.dump();
    }
  }
  // A rescan lists the new (broken) file; loading it fails with the loader's error, once per request.
  HttpResult rescan = srv->Get("/models?reload=1");
  ASSERT_EQ(rescan.status, 200) << rescan.body;
  EXPECT_EQ(rescan.Json()["reload"]["changed"], json::array({"bad"})) << rescan.body;
  r = Complete(*srv, "bad", "Once upon a time");
  EXPECT_GE(r["http_status"].get<int>(), 400) << r.dump();
  EXPECT_NE(r.dump().find("failed to load"), std::string::npos) << r.dump();
  EXPECT_EQ(Text(Complete(*srv, "good", "Once upon a time")), want);
  // Removed: gone from the list after a rescan, and a 404.
  fs::remove(dir + "/bad.gguf");
  ASSERT_EQ(srv->Get("/models?reload=1").status, 200);
  EXPECT_EQ(Statuses(*srv), (std::map<std::string, std::string>{{"good", "loaded"}}));
  EXPECT_EQ(Complete(*srv, "bad", "Once")["http_status"], 404);
}

TEST(ServerRouter, EmbedderAndChatModelInOneServer) {
  REQUIRE_SHARED_FILE(kBert);
  REQUIRE_SHARED_FILE(kQwen);
  // The embedding a one-model server gives.
  std::vector<float> want;
  {
    START_SERVER(one, {"-m", SharedPath(kBert), "--embeddings"});
    HttpResult e = one->Post("/v1/embeddings", {{"input", "the cat sat on the mat"}});
    ASSERT_EQ(e.status, 200) << e.body;
    want = e.Json()["data"][0]["embedding"].get<std::vector<float>>();
  }
  const std::string preset = NewScratchFile("preset") + ".ini";
  std::ofstream(preset) << "version = 1\n"
                        << "[*]\nctx-size = 256\n"
                        << "[embedder]\nmodel = " << SharedPath(kBert) << "\nembeddings = true\nalias = emb\n"
                        << "[chat]\nmodel = " << SharedPath(kQwen) << "\nparallel = 2\n";
  START_SERVER(srv, {"--models-preset", preset});
  HttpResult e = srv->Post("/v1/embeddings", {{"model", "emb"}, {"input", "the cat sat on the mat"}});
  ASSERT_EQ(e.status, 200) << e.body;
  EXPECT_EQ(e.Json()["model"], "embedder");
  // The same model and input as alone (thread counts differ, so the sums may round differently): the F32
  // tolerance of reference/README.md.
  const std::vector<float> got = e.Json()["data"][0]["embedding"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), want.size());
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ab += double{got[i]} * want[i];
    aa += double{got[i]} * got[i];
    bb += double{want[i]} * want[i];
  }
  EXPECT_GE(ab / std::sqrt(aa * bb), 1 - 1e-5);
  HttpResult c = srv->Post(
      "/v1/chat/completions",
      {{"model", "chat"}, {"messages", {{{"role", "user"}, {"content", "hello"}}}}, {"max_tokens", 4}});
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.Json()["model"], "chat");
  // Each model keeps its own role: the chat model has no embeddings, the encoder writes no text.
  HttpResult wrong = srv->Post("/v1/embeddings", {{"model", "chat"}, {"input", "x"}});
  EXPECT_EQ(wrong.status, 501) << wrong.body;
  EXPECT_NE(wrong.body.find("model 'chat' does not serve embeddings"), std::string::npos) << wrong.body;
  HttpResult no_text =
      srv->Post("/v1/completions", {{"model", "embedder"}, {"prompt", "x"}, {"max_tokens", 2}});
  EXPECT_EQ(no_text.status, 501) << no_text.body;
  const json models = srv->Get("/v1/models").Json();
  ASSERT_EQ(models["data"].size(), 2u);
  EXPECT_EQ(models["data"][1]["id"], "embedder");
  EXPECT_EQ(models["data"][1]["aliases"], json::array({"emb"}));
  EXPECT_EQ(models["data"][1]["source"], "preset");
  const json props = srv->Get("/props?model=chat").Json();
  EXPECT_EQ(props["n_parallel"], 2);
  EXPECT_EQ(props["n_ctx"], 256);  // [*]

  // Flags given on the command line win over the preset (llama-server's precedence); others do not.
  START_SERVER(cli, {"--models-preset", preset, "-c", "128", "--threads", "1"});
  const json cli_props = cli->Get("/props?model=chat").Json();
  EXPECT_EQ(cli_props["n_ctx"], 128) << cli_props.dump();
  EXPECT_EQ(cli_props["n_parallel"], 2);
}

// Three models generate at once under a budget that holds two of them: the budget's charge (from /v1/models)
// and the process's RSS above its idle baseline are sampled every 10 ms and never pass it; every request
// succeeds (the third waits for room).
TEST(ServerRouter, MemoryBudgetHoldsWhileThreeModelsGenerate) {
  REQUIRE_SHARED_FILE(kQwen);
  const std::string dir = ModelsDir({{"q1", kQwen}, {"q2", kQwen}, {"q3", kQwen}});
  // What one model charges, from a server without a budget... measured through the budgeted server itself.
  START_SERVER(probe, {"--models-dir", dir, "-c", "512", "-np", "1", "--memory-budget", "1GiB"});
  ASSERT_EQ(Complete(*probe, "q1", "Once", 2)["http_status"], 200);
  const json probed = probe->Get("/v1/models").Json();
  uint64_t one = 0;
  for (const json& m : probed["data"])
    one = std::max(one, m["memory"]["budget_charged_bytes"].get<uint64_t>());
  ASSERT_GT(one, 0u) << probed.dump();
  probe.reset();

  const uint64_t limit = one * 2 + one / 2;  // two models and change, never three
  START_SERVER(srv, {"--models-dir", dir, "-c", "512", "-np", "1", "--memory-budget", std::to_string(limit)});
  const uint64_t baseline = RssBytes(srv->pid());
  std::atomic<bool> done{false};
  uint64_t max_used = 0, max_rss = 0;
  int samples = 0, max_loaded = 0;
  std::thread sampler([&] {
    while (!done.load()) {
      const json j = srv->Get("/v1/models").Json();
      if (j.contains("memory_budget")) {
        max_used = std::max(max_used, j["memory_budget"]["used_bytes"].get<uint64_t>());
        EXPECT_EQ(j["memory_budget"]["limit_bytes"], limit);
        int loaded = 0;
        // Weights charged: the model's pages may be resident (a released model keeps only its overhead).
        for (const json& m : j["data"]) loaded += m["memory"]["budget_charge"]["weights"].get<uint64_t>() > 0;
        max_loaded = std::max(max_loaded, loaded);
      }
      max_rss = std::max(max_rss, RssBytes(srv->pid()));
      ++samples;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  std::vector<std::thread> clients;
  std::vector<json> results(9);
  // 640 tokens each: long enough for well over ten samples (each one a curl process) on a loaded machine.
  for (int i = 0; i < 9; ++i) {
    clients.emplace_back([&, i] {
      results[i] =
          Complete(*srv, "q" + std::to_string(i % 3 + 1), "Once upon a time " + std::to_string(i), 640);
    });
  }
  for (std::thread& t : clients) t.join();
  done.store(true);
  sampler.join();
  for (const json& r : results) EXPECT_EQ(r["http_status"], 200) << r.dump();
  EXPECT_GT(samples, 10);
  EXPECT_LE(max_used, limit);
  // Several models were resident at once (tiny models: their KV reservations, not their weights, fill the
  // budget, so the third can be resident while it waits for room for its request).
  EXPECT_GE(max_loaded, 2);
  // The third model had to wait for room: a load or a request waited, or an idle model was released.
  const std::string log = srv->Log();
  EXPECT_TRUE(log.find("waits for") != std::string::npos || log.find("released") != std::string::npos) << log;
  // RSS above the idle server: what the budget covers, plus the unbudgeted heap of requests (4 MiB). Not
  // under a sanitizer, whose shadow memory and quarantine grow with every allocation.
  if (!kSanitized) {
    EXPECT_LE(max_rss, baseline + limit + (uint64_t{4} << 20))
        << "baseline " << baseline << ", peak " << max_rss << ", limit " << limit;
  }
  std::printf(
      "budget %.1f MiB (one model %.1f MiB): peak charged %.1f MiB, RSS %.1f -> peak %.1f MiB, %d samples\n",
      limit / 1048576.0, one / 1048576.0, max_used / 1048576.0, baseline / 1048576.0, max_rss / 1048576.0,
      samples);

  // A model that could never fit: a budget below one model's charge is refused with the numbers.
  START_SERVER(tiny,
               {"--models-dir", dir, "-c", "512", "-np", "1", "--memory-budget", std::to_string(one / 2)});
  json r = Complete(*tiny, "q1", "Once", 2);
  EXPECT_EQ(r["http_status"], 503) << r.dump();
  EXPECT_NE(r.dump().find("budget"), std::string::npos) << r.dump();
}

}  // namespace
}  // namespace lazyslot::testing
