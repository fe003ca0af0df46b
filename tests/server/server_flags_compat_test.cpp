// llama-server's flags and route behaviours checked through real HTTP: --alias lists and --tags in the model
// list, the web page's root files public under --api-key, a preflight's Access-Control-Allow-Headers
// (--cors-headers), --context-shift generating past a full slot, --cache-ram / --cache-idle-slots accepted,
// and the start-up errors of their bad values.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";
constexpr char kBert[] = "models/bert-tiny-f32.gguf";

// Launches serve with `args`, which must fail at start; returns its log (the exit status checked).
std::string StartupError(const std::vector<std::string>& args) {
  auto srv = ServerProcess::Launch(args);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (srv->Running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(srv->Running()) << "serve started with a bad flag: " << srv->Log();
  EXPECT_NE(srv->exit_status(), 0) << srv->Log();
  return srv->Log();
}

std::set<std::string> Strings(const json& array) {
  std::set<std::string> out;
  if (array.is_array()) {
    for (const json& v : array) out.insert(v.get<std::string>());
  }
  return out;
}

// As llama-server: every alias, sorted; the id is the first of them; tags listed as given.
TEST(ServerFlagsCompat, AliasListAndTagsAreInTheModelList) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "--alias", "zeta, alpha,mid,alpha", "--tags", "small,chat"});
  for (const char* route : {"/v1/models", "/models"}) {
    const HttpResult r = srv->Get(route);
    ASSERT_EQ(r.status, 200) << route;
    const json m = r.Json()["data"][0];
    EXPECT_EQ(m["id"], "alpha") << route;
    EXPECT_EQ(m["aliases"], json::array({"alpha", "mid", "zeta"})) << route;
    EXPECT_EQ(Strings(m["tags"]), (std::set<std::string>{"chat", "small"})) << route;
  }
  const HttpResult chat = srv->Post(
      "/v1/chat/completions",
      {{"model", "zeta"}, {"max_tokens", 2}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(chat.Json()["model"], "alpha") << "answers name the model by its id";

  START_SERVER(plain, {"-m", SharedPath(kStories)});
  const json m = plain->Get("/v1/models").Json()["data"][0];
  EXPECT_EQ(m["id"], "stories260K.gguf");
  EXPECT_EQ(m["aliases"], json::array({"stories260K.gguf"})) << "without --alias: the id alone";
  EXPECT_EQ(m["tags"], json::array());
}

// Router mode: tags come from the preset (per model, or every model's from [*]), sorted and unique.
TEST(ServerFlagsCompat, PresetTagsAreInTheRoutersModelList) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_SHARED_FILE(kBert);
  const std::string preset = NewScratchFile("preset") + ".ini";
  std::ofstream(preset) << "[*]\ntags = small\n"
                        << "[story]\nmodel = " << SharedPath(kStories) << "\ntags = fim, chat,fim\n"
                        << "[emb]\nmodel = " << SharedPath(kBert) << "\nembeddings = true\n";
  START_SERVER(srv, {"--models-preset", preset});
  const json data = srv->Get("/v1/models").Json()["data"];
  ASSERT_EQ(data.size(), 2u) << data.dump();
  for (const json& m : data) {
    const json want = m["id"] == "story" ? json::array({"chat", "fim"}) : json::array({"small"});
    EXPECT_EQ(m["tags"], want) << m.dump();
  }
}

TEST(ServerFlagsCompat, BadValuesAreStartupErrorsNamingTheFlag) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_SHARED_FILE(kBert);
  const std::string model = SharedPath(kStories);
  struct Case {
    std::vector<std::string> args;
    const char* flag;
  };
  const std::vector<Case> cases = {
      {{"-m", model, "--alias", " , ,"}, "--alias"},
      {{"-m", model, "--tags", ","}, "--tags"},
      {{"-m", model, "--cors-headers", " , "}, "--cors-headers"},
      {{"-m", model, "--cache-ram", "-2"}, "--cache-ram"},
      {{"-m", model, "-cram", "lots"}, "--cache-ram"},
      {{"-m", model, "--context-shift", "--embeddings"}, "--context-shift"},
      {{"-m", SharedPath(kBert), "--context-shift"}, "--context-shift"},
      {{"-m", model, "-m", model + "x", "--tags", "a"}, "--tags"},
      {{"-m", model, "--cors-origins", "http://a.example,,http://b.example"}, "--cors-origins"},
      {{"-m", model, "--cors-origins", "a.example"}, "--cors-origins"},
      {{"-m", model, "--reasoning", "sometimes"}, "--reasoning"},
  };
  for (const Case& c : cases) {
    const std::string log = StartupError(c.args);
    EXPECT_NE(log.find(c.flag), std::string::npos) << c.flag << ":\n" << log;
  }
}

// llama-server serves its page's files at the root and lets them through without the key: the service worker
// (its scope is its folder), the manifest and the build's version file; the API itself still asks for it.
TEST(ServerFlagsCompat, ThePagesRootFilesArePublicUnderAnApiKey) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "--api-key", "k1"});
  const HttpResult sw = srv->Get("/sw.js");
  ASSERT_EQ(sw.status, 200) << sw.body;
  EXPECT_EQ(sw.Header("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_NE(sw.body.find("addEventListener('fetch'"), std::string::npos);
  const HttpResult manifest = srv->Get("/manifest.webmanifest");
  ASSERT_EQ(manifest.status, 200);
  EXPECT_EQ(manifest.Header("Content-Type"), "application/manifest+json");
  EXPECT_EQ(manifest.Json()["start_url"], "/");
  const std::string icon = manifest.Json()["icons"][0]["src"].get<std::string>();
  EXPECT_EQ(srv->Get(icon).status, 200) << "the manifest's icon is served: " << icon;
  const HttpResult version = srv->Get("/_app/version.json");
  ASSERT_EQ(version.status, 200);
  const std::string v = version.Json()["version"].get<std::string>();
  EXPECT_EQ(v.size(), 16u);
  EXPECT_EQ(v.find_first_not_of("0123456789abcdef"), std::string::npos) << v;
  EXPECT_NE(srv->Get("/").body.find("rel=\"manifest\" href=\"/manifest.webmanifest\""), std::string::npos);
  EXPECT_EQ(srv->Get("/slots").status, 401) << "the API still needs the key";
  EXPECT_EQ(srv->Get("/sw.jsx").status, 401) << "only the page's own files are public";

  START_SERVER(off, {"-m", SharedPath(kStories), "--api-key", "k1", "--no-webui"});
  EXPECT_EQ(off->Get("/sw.js").status, 401) << "without the page its files are not public";
  EXPECT_EQ(off->Get("/sw.js", {"Authorization: Bearer k1"}).status, 404);
}

TEST(ServerFlagsCompat, PreflightAllowHeadersFollowCorsHeaders) {
  REQUIRE_SHARED_FILE(kStories);
  const std::vector<std::string> ask = {"Origin: http://web.example", "Access-Control-Request-Method: POST",
                                        "Access-Control-Request-Headers: Authorization"};
  START_SERVER(srv, {"-m", SharedPath(kStories), "--api-key", "k1"});
  const HttpResult pre = Curl("OPTIONS", srv->Url("/completions"), "", ask);
  EXPECT_EQ(pre.status, 200);
  EXPECT_EQ(pre.Header("Access-Control-Allow-Headers"), "Authorization")
      << "the headers asked for, echoed (llama-server's \"*\" would not cover Authorization in a browser)";
  EXPECT_EQ(pre.Header("Access-Control-Allow-Origin"), "http://web.example");
  START_SERVER(named, {"-m", SharedPath(kStories), "--api-key", "k1", "--cors-headers",
                       "Authorization, Content-Type"});
  EXPECT_EQ(Curl("OPTIONS", named->Url("/completions"), "", ask).Header("Access-Control-Allow-Headers"),
            "Authorization, Content-Type");
  START_SERVER(star, {"-m", SharedPath(kStories), "--api-key", "k1", "--cors-headers", "*"});
  EXPECT_EQ(Curl("OPTIONS", star->Url("/completions"), "", ask).Header("Access-Control-Allow-Headers"), "*")
      << "llama-server's default, on request";
}

// A prompt of `words` words ("one two three ...") for the small story model.
std::string Words(int words) {
  static const char* kWords[] = {"the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "ran", "home"};
  std::string out;
  for (int i = 0; i < words; ++i) out += std::string(i ? " " : "") + kWords[i % 11];
  return out;
}

// Slots of 128 cells: a prompt of about 100 tokens and 80 more fit only by shifting. Without the flag the
// answer stops at the full slot; with it, it goes on and says it was truncated; n_keep cells stay, and only
// those are kept for the next request (the moved cells were computed beside tokens that are gone).
TEST(ServerFlagsCompat, ContextShiftGeneratesPastAFullSlot) {
  REQUIRE_SHARED_FILE(kStories);
  const std::vector<std::string> base = {"-m", SharedPath(kStories), "-c", "256", "-np", "2"};
  START_SERVER(tok, base);
  const json ids = tok->Post("/tokenize", {{"content", Words(60)}}).Json()["tokens"];
  const int n_prompt = static_cast<int>(ids.size());
  ASSERT_GT(n_prompt, 80);
  ASSERT_LT(n_prompt, 120);
  const json body = {{"prompt", Words(60)}, {"n_predict", 80}, {"ignore_eos", true}, {"temperature", 0}};
  const HttpResult off = tok->Post("/completion", body);
  ASSERT_EQ(off.status, 200) << off.body;
  EXPECT_LT(off.Json()["timings"]["predicted_n"].get<int>(), 80) << "no shift: the slot fills first";
  EXPECT_TRUE(off.Json()["truncated"].get<bool>());

  std::vector<std::string> args = base;
  args.push_back("--context-shift");
  START_SERVER(srv, args);
  const HttpResult on = srv->Post("/completion", body);
  ASSERT_EQ(on.status, 200) << on.body;
  const json j = on.Json();
  EXPECT_EQ(j["timings"]["predicted_n"], 80);
  EXPECT_TRUE(j["truncated"].get<bool>());
  EXPECT_FALSE(j["content"].get<std::string>().empty());
  EXPECT_NE(srv->Log().find("context shift"), std::string::npos) << srv->Log();

  // n_keep 40: the first 40 prompt tokens (and BOS) stay through the shift and are all the next request
  // finds in the slot.
  json keep = body;
  keep["n_keep"] = 40;
  keep["id_slot"] = 1;
  const HttpResult first = srv->Post("/completion", keep);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.Json()["timings"]["predicted_n"], 80);
  const HttpResult again = srv->Post("/completion", keep);
  ASSERT_EQ(again.status, 200) << again.body;
  const int cached = again.Json()["timings"]["cache_n"].get<int>();
  EXPECT_GE(cached, 40);
  EXPECT_LE(cached, 41);

  // Streamed too, and a bad n_keep is a 400 naming it.
  json streamed = body;
  streamed["stream"] = true;
  const HttpResult s = srv->Post("/completion", streamed);
  ASSERT_EQ(s.status, 200);
  int tokens = 0;
  for (const std::string& d : SseData(s.body)) {
    const json e = json::parse(d, nullptr, false);
    if (e.is_object() && e.value("stop", false)) {
      EXPECT_EQ(e["timings"]["predicted_n"], 80);
    }
    tokens += e.is_object() && !e.value("stop", false) ? 1 : 0;
  }
  EXPECT_GE(tokens, 70);
  json bad = body;
  bad["n_keep"] = -2;
  const HttpResult r = srv->Post("/completion", bad);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("n_keep"), std::string::npos) << r.body;
}

// llama-server's RAM prompt cache flags are accepted; the idle slot's KV is reused in place.
TEST(ServerFlagsCompat, CacheRamFlagsAreAcceptedAndIdleSlotsKeepTheirPrompt) {
  REQUIRE_SHARED_FILE(kStories);
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--cache-ram", "100"}, {"-cram", "-1", "--no-cache-idle-slots"}}) {
    std::vector<std::string> args = {"-m", SharedPath(kStories), "-np", "2", "--kv-unified"};
    args.insert(args.end(), extra.begin(), extra.end());
    START_SERVER(srv, args);
    const json first = {{"prompt", Words(60)}, {"n_predict", 4}, {"id_slot", 0}};
    ASSERT_EQ(srv->Post("/completion", first).status, 200);
    ASSERT_EQ(srv->Post("/completion", {{"prompt", "a dog"}, {"n_predict", 4}, {"id_slot", 1}}).status, 200);
    const HttpResult again = srv->Post("/completion", {{"prompt", Words(60)}, {"n_predict", 4}});
    ASSERT_EQ(again.status, 200);
    EXPECT_GT(again.Json()["timings"]["cache_n"].get<int>(), 50) << "slot 0 kept its prompt";
    EXPECT_NE(srv->Log().find("--cache-ram / --cache-idle-slots: accepted"), std::string::npos);
  }
}

}  // namespace
}  // namespace lazyslot::testing
