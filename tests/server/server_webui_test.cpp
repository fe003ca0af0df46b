// The web page (issue 37): how the server serves it (gzip, ETag, security headers, public under --api-key,
// --no-webui), GET /memory and /memory/stream, the memory events derived from samples, the page's own
// JavaScript unit tests (tests/webui/*_test.mjs on node), and the page itself in Debian's chromium driven by
// playwright-core (tests/webui/webui_*_test.mjs, screenshots in build/webui-artifacts/).
#include <gtest/gtest.h>

#include "server/memory_monitor.h"
#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";
constexpr char kTinyLlama[] = "models/TinyLLama-v0-Q4_0.gguf";
constexpr char kQwenVocab[] = "models/qwen3-vocab-tiny-q8_0.gguf";
constexpr char kChromium[] = "/usr/bin/chromium";

std::string WebUiTestDir() { return std::string(LAZYSLOT_SOURCE_DIR) + "/tests/webui"; }
std::string Artifacts() { return (std::filesystem::current_path() / "webui-artifacts").string(); }

// node for the scripts; with `browser`, Debian's chromium and the playwright-core package (npm install here
// when it is missing). Fails in CI without them, skips loudly elsewhere.
void RequireNode(bool browser) {
  std::string missing;
  if (!HaveCommand("node") || !HaveCommand("npm")) missing = "node and npm";
  if (missing.empty() && browser && !std::filesystem::exists(kChromium)) missing = kChromium;
  if (!missing.empty()) {
    if (InCi()) FAIL() << missing << " required in CI (CI=true): scripts/install-deps.sh installs them";
    std::fprintf(stderr, "\n*** SKIPPING: %s not installed ***\n\n", missing.c_str());
    GTEST_SKIP() << missing << " not installed";
  }
  if (!browser) return;
  const std::string dir = WebUiTestDir();
  if (std::filesystem::exists(dir + "/node_modules/playwright-core/package.json")) return;
  std::string out;
  const int rc = RunShell("cd " + ShellQuote(dir) + " && npm install --no-audit --no-fund", &out);
  ASSERT_EQ(rc, 0) << "npm install failed:\n" << out;
}

// Runs a script of tests/webui with `env` ("NAME=value ..."); its output goes to the test log.
void RunScript(const std::string& script, const std::string& env, const ServerProcess* srv = nullptr) {
  std::string out;
  const int rc =
      RunShell("cd " + ShellQuote(WebUiTestDir()) + " && WEBUI_ARTIFACTS=" + ShellQuote(Artifacts()) + " " +
                   env + " timeout 300 node " + script,
               &out);
  std::fprintf(stderr, "%s", out.c_str());
  EXPECT_EQ(rc, 0) << out << (srv ? "\nserver log:\n" + srv->Log() : std::string());
}

std::string Gunzip(const std::string& bytes) {
  const std::string in = NewScratchFile("gz");
  std::ofstream(in, std::ios::binary) << bytes;
  std::string out;
  if (RunShell("gzip -dc < " + ShellQuote(in), &out) != 0) return "<not gzip>";
  return out;
}

TEST(WebUi, ServesThePagePlainAndGzippedWithAnETag) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories)});
  const HttpResult page = srv->Get("/");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.Header("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<script type=\"module\" src=\"/ui/js/app.js\">"), std::string::npos);
  EXPECT_EQ(page.Header("Content-Encoding"), "");
  EXPECT_NE(page.Header("Content-Security-Policy").find("connect-src 'self'"), std::string::npos);
  EXPECT_EQ(page.Header("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(srv->Get("/index.html").body, page.body);

  const HttpResult gz = srv->Get("/", {"Accept-Encoding: gzip, deflate"});
  ASSERT_EQ(gz.status, 200);
  EXPECT_EQ(gz.Header("Content-Encoding"), "gzip");
  EXPECT_LT(gz.body.size(), page.body.size());
  EXPECT_EQ(Gunzip(gz.body), page.body) << "the gzipped page is the page, compressed once";
  EXPECT_EQ(srv->Get("/", {"Accept-Encoding: gzip;q=0"}).Header("Content-Encoding"), "");

  const std::string etag = page.Header("ETag");
  ASSERT_FALSE(etag.empty());
  EXPECT_EQ(srv->Get("/", {"If-None-Match: " + etag}).status, 304);
  EXPECT_EQ(srv->Get("/", {"If-None-Match: \"other\""}).status, 200);

  const HttpResult js = srv->Get("/ui/js/app.js");
  ASSERT_EQ(js.status, 200);
  EXPECT_EQ(js.Header("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(srv->Get("/ui/style.css").Header("Content-Type"), "text/css; charset=utf-8");
  const HttpResult missing = srv->Get("/ui/js/nope.js");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.Json()["error"]["message"].get<std::string>().find("/ui/js/nope.js"), std::string::npos);
  // Never a file of the disk: the table is all there is.
  EXPECT_EQ(srv->Get("/ui/../../../../etc/passwd").status, 404);
  EXPECT_EQ(srv->Get("/ui/%2e%2e/%2e%2e/etc/passwd").status, 404);
}

TEST(WebUi, PublicUnderAnApiKeyAndOffWithNoWebui) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "--api-key", "k1"});
  EXPECT_EQ(srv->Get("/").status, 200) << "the page asks for the key itself";
  EXPECT_EQ(srv->Get("/ui/js/api.js").status, 200);
  EXPECT_EQ(srv->Get("/memory").status, 401);
  EXPECT_EQ(srv->Get("/memory/stream").status, 401);
  EXPECT_EQ(srv->Get("/memory", {"Authorization: Bearer k1"}).status, 200);

  for (const char* flag : {"--no-webui", "--no-ui"}) {
    START_SERVER(off, {"-m", SharedPath(kStories), flag, "--api-key", "k1"});
    EXPECT_EQ(off->Get("/").status, 401) << flag << ": not public once the page is off";
    const HttpResult r = off->Get("/", {"Authorization: Bearer k1"});
    EXPECT_EQ(r.status, 404) << flag;
    EXPECT_EQ(off->Get("/ui/js/app.js", {"Authorization: Bearer k1"}).status, 404) << flag;
  }
}

TEST(WebUi, MemoryReportsTheProcessAndEachSlot) {
  REQUIRE_SHARED_FILE(kQwenVocab);
  START_SERVER(srv, {"-m", SharedPath(kQwenVocab), "-np", "2", "-c", "8192"});
  ASSERT_EQ(srv->Post("/completion", {{"prompt", "hello world"}, {"n_predict", 4}, {"id_slot", 1}}).status,
            200);
  const HttpResult r = srv->Get("/memory");
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.Json();
  EXPECT_GT(j["process"]["rss"].get<uint64_t>(), 0u);
  EXPECT_GT(j["process"]["rss_anon"].get<uint64_t>(), 0u);
  ASSERT_EQ(j["models"].size(), 1u);
  const json& m = j["models"][0];
  EXPECT_EQ(m["status"], "loaded");
  EXPECT_EQ(m["kind"], "generation");
  ASSERT_EQ(m["slots"].size(), 2u);
  EXPECT_EQ(m["slots"][0]["committed"], 0);
  EXPECT_GT(m["slots"][1]["committed"].get<uint64_t>(), 0u);
  EXPECT_EQ(m["kv_committed"], m["slots"][1]["committed"]);
  EXPECT_GT(m["weights_resident"].get<uint64_t>(), 0u);
  EXPECT_EQ(m["requests_total"], 1);
  // The same figures as /metrics.
  const double kv = Metric(srv->Get("/metrics").body, "lazyslot:kv_committed_bytes");
  EXPECT_EQ(static_cast<uint64_t>(kv), m["kv_committed"].get<uint64_t>());
}

// The stream: a history event, then samples every half second; a request in between shows as a first commit.
TEST(WebUi, MemoryStreamSendsHistoryThenSamplesWithEvents) {
  REQUIRE_SHARED_FILE(kQwenVocab);
  START_SERVER(srv, {"-m", SharedPath(kQwenVocab), "-c", "8192"});
  const std::string out = NewScratchFile("stream");
  const std::string cmd = "curl -sN --max-time 4 " + ShellQuote(srv->Url("/memory/stream")) + " > " +
                          ShellQuote(out) + " 2>/dev/null &";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  ASSERT_EQ(srv->Post("/completion", {{"prompt", "hello world"}, {"n_predict", 4}}).status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(3300));
  const std::string body = ReadAll(out);
  ASSERT_EQ(body.rfind("event: history\ndata: ", 0), 0u) << body.substr(0, 200);
  int samples = 0, first_commits = 0;
  uint64_t last_seq = 0;
  std::istringstream in(body);
  std::string line, event;
  while (std::getline(in, line)) {
    if (line.rfind("event: ", 0) == 0) event = line.substr(7);
    if (line.rfind("data: ", 0) != 0 || event != "sample") continue;
    const json s = json::parse(line.substr(6));
    ++samples;
    EXPECT_GT(s["seq"].get<uint64_t>(), last_seq);
    last_seq = s["seq"].get<uint64_t>();
    for (const json& e : s["events"]) first_commits += e["kind"] == "first_commit" ? 1 : 0;
  }
  EXPECT_GE(samples, 4) << body.substr(0, 400);
  EXPECT_EQ(first_commits, 1) << body;
}

json Sample(uint64_t t, const std::string& status, uint64_t kv, std::vector<uint64_t> slots,
            uint64_t idle = 0, bool weights_released = false) {
  json m = {{"id", "m"},
            {"status", status},
            {"kv_committed", kv},
            {"idle_releases", idle},
            {"weights_released", weights_released},
            {"kv_parks", 0},
            {"kv_resumes", 0}};
  m["slots"] = json::array();
  for (uint64_t c : slots) m["slots"].push_back({{"committed", c}});
  return {{"t", t}, {"models", json::array({m})}};
}

std::vector<std::string> Kinds(const json& events) {
  std::vector<std::string> kinds;
  for (const json& e : events) kinds.push_back(e["kind"]);
  return kinds;
}

TEST(WebUi, MemoryEventsComeFromConsecutiveSamples) {
  using server::MemoryMonitor;
  using V = std::vector<std::string>;
  EXPECT_EQ(Kinds(MemoryMonitor::Diff(Sample(1, "loaded", 0, {0, 0}), Sample(2, "loaded", 8192, {8192, 0}))),
            V{"first_commit"});
  EXPECT_EQ(Kinds(MemoryMonitor::Diff(Sample(1, "loaded", 8192, {8192, 0}),
                                      Sample(2, "loaded", 12288, {8192, 4096}))),
            V{});
  EXPECT_EQ(Kinds(MemoryMonitor::Diff(Sample(1, "loaded", 12288, {8192, 4096}),
                                      Sample(2, "loaded", 8192, {4096, 4096}))),
            V{"trim"});
  // An idle release is one event, not a trim per slot.
  EXPECT_EQ(
      Kinds(MemoryMonitor::Diff(Sample(1, "loaded", 8192, {4096, 4096}), Sample(2, "loaded", 0, {0, 0}, 1))),
      V{"idle_release"});
  EXPECT_EQ(Kinds(MemoryMonitor::Diff(Sample(1, "loaded", 0, {0}), Sample(2, "loaded", 0, {0}, 0, true))),
            V{"weights_released"});
  EXPECT_EQ(Kinds(MemoryMonitor::Diff(Sample(1, "loaded", 0, {0}, 0, true), Sample(2, "loaded", 0, {0}))),
            V{"weights_reloaded"});
  EXPECT_EQ(Kinds(MemoryMonitor::Diff(Sample(1, "unloaded", 0, {}), Sample(2, "loaded", 0, {0}))),
            V{"model_loaded"});
  EXPECT_EQ(Kinds(MemoryMonitor::Diff(Sample(1, "loaded", 0, {0}), Sample(2, "unloaded", 0, {}))),
            V{"model_unloaded"});
  EXPECT_EQ(Kinds(MemoryMonitor::Diff(Sample(1, "loaded", 0, {0}), Sample(2, "sleeping", 0, {}))),
            V{"model_sleeping"});
  const json e = MemoryMonitor::Diff(Sample(1, "loaded", 0, {0}), Sample(7, "loaded", 1048576, {1048576}))[0];
  EXPECT_EQ(e["t"], 7);
  EXPECT_EQ(e["model"], "m");
  EXPECT_EQ(e["label"], "first KV pages committed: 1.0 MiB");
}

// The page's own modules on node: the Markdown renderer (safe output, highlighting) and the chart.
TEST(WebUiScripts, MarkdownRenderer) {
  RequireNode(false);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  RunScript("markdown_test.mjs", "");
}

TEST(WebUiScripts, Chart) {
  RequireNode(false);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  RunScript("chart_test.mjs", "");
}

// In the browser: chat, branches, continue, settings, reload, search, export/import, rendering.
TEST(WebUiBrowser, Chat) {
  REQUIRE_SHARED_FILE(kTinyLlama);
  RequireNode(true);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  START_SERVER(srv, {"-m", SharedPath(kTinyLlama)});
  RunScript("webui_chat_test.mjs", "LAZYSLOT_URL=" + ShellQuote(srv->Url("/")), srv.get());
}

// Streaming, stop, oversized pastes, the memory chart rising and falling, a server that dies mid-answer.
TEST(WebUiBrowser, StreamStopMemoryAndAServerThatDies) {
  REQUIRE_SHARED_FILE(kQwenVocab);
  RequireNode(true);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  START_SERVER(srv, {"-m", SharedPath(kQwenVocab), "-c", "16384", "--idle-timeout", "2"});
  RunScript("webui_stream_test.mjs",
            "LAZYSLOT_URL=" + ShellQuote(srv->Url("/")) + " LAZYSLOT_PID=" + std::to_string(srv->pid()),
            srv.get());
}

TEST(WebUiBrowser, RouterModelPickerLoadsOnPick) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_SHARED_FILE(kTinyLlama);
  RequireNode(true);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  START_SERVER(srv, {"-m", SharedPath(kTinyLlama), "-m", SharedPath(kStories)});
  RunScript("webui_router_test.mjs", "LAZYSLOT_URL=" + ShellQuote(srv->Url("/")), srv.get());
}

TEST(WebUiBrowser, ApiKeyPrompt) {
  REQUIRE_SHARED_FILE(kStories);
  RequireNode(true);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  START_SERVER(srv, {"-m", SharedPath(kStories), "--api-key", "webui-key"});
  RunScript("webui_key_test.mjs", "LAZYSLOT_URL=" + ShellQuote(srv->Url("/")) + " LAZYSLOT_API_KEY=webui-key",
            srv.get());
}

// The page's use of --tools: a scripted model calls read_file inside and outside the folder.
TEST(WebUiBrowser, BuiltinToolsConfinedToTheirFolder) {
  REQUIRE_SHARED_FILE(kStories);
  RequireNode(true);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  const std::filesystem::path outer = NewScratchFile("tools");
  const std::filesystem::path dir = outer / "workspace";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "marker.txt") << "MARKER-7d1f\n";
  std::ofstream(outer / "secret.txt") << "SECRET-3a9c\n";
  START_SERVER(srv, {"-m", SharedPath(kStories), "--tools", "read_file,file_glob_search", "--tools-dir",
                     dir.string()});
  RunScript("webui_tools_test.mjs", "LAZYSLOT_URL=" + ShellQuote(srv->Url("/")), srv.get());
}

// The page's MCP client through --ui-mcp-proxy, against an MCP server the script starts.
TEST(WebUiBrowser, McpServerThroughTheProxy) {
  REQUIRE_SHARED_FILE(kStories);
  RequireNode(true);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  START_SERVER(srv, {"-m", SharedPath(kStories), "--ui-mcp-proxy", "--api-key", "mcp-page-key"});
  RunScript("webui_mcp_test.mjs",
            "LAZYSLOT_URL=" + ShellQuote(srv->Url("/")) + " LAZYSLOT_API_KEY=mcp-page-key", srv.get());
}

}  // namespace
}  // namespace lazyslot::testing
