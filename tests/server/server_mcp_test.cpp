// MCP servers behind GET/POST /tools (--mcp-servers-json, --mcp-servers-config) through the real server and
// a real MCP server process (tests/server/mcp_fixture_server.py, over stdio): the tools listed as
// SERVER_TOOL in the built-in tools' shape, calls and their answers (replies out of order, notifications in
// between), concurrent calls, a server that crashes and is started again, a timeout, a command that cannot
// run (start-up goes on, its calls say why), a grandchild holding the pipes (the stop stays prompt), and
// the flag errors.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";

std::string Fixture() { return std::string(LAZYSLOT_SOURCE_DIR) + "/tests/server/mcp_fixture_server.py"; }

json Server(const std::vector<std::string>& extra_args = {}, json extra = json::object()) {
  json args = json::array({Fixture()});
  for (const std::string& a : extra_args) args.push_back(a);
  json s = {{"command", "python3"}, {"args", args}};
  s.update(extra);
  return s;
}

std::vector<std::string> Args(const json& servers, const std::vector<std::string>& more = {}) {
  std::vector<std::string> a = {"-m", SharedPath(kStories), "--mcp-servers-json",
                                json{{"mcpServers", servers}}.dump()};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

json Call(const ServerProcess& srv, const std::string& tool, const json& params, int* status = nullptr) {
  const HttpResult r = srv.Post("/tools", {{"tool", tool}, {"params", params}});
  if (status) *status = r.status;
  return r.Json();
}

std::set<std::string> Names(const json& list) {
  std::set<std::string> names;
  for (const json& t : list) names.insert(t["tool"].get<std::string>());
  return names;
}

bool Python3() { return std::system("python3 -c 'pass' >/dev/null 2>&1") == 0; }

#define REQUIRE_PYTHON3() \
  if (!Python3()) GTEST_SKIP() << "python3 is not installed (it runs the MCP test server)"

TEST(ServerMcp, ListsAndCallsTools) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_PYTHON3();
  START_SERVER(srv, Args({{"demo", Server({"--label", "L1"}, {{"env", {{"MCP_FIXTURE_VAR", "v-4d1"}}}})}}));
  const HttpResult list = srv->Get("/tools");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(Names(list.Json()), (std::set<std::string>{"demo_greet", "demo_add", "demo_pid", "demo_env",
                                                       "demo_sleep", "demo_fail", "demo_crash"}))
      << "both pages of tools/list, no built-in tool without --tools: " << list.body;
  for (const json& t : list.Json()) {
    if (t["tool"] != "demo_greet") continue;
    EXPECT_EQ(t["type"], "mcp");
    EXPECT_EQ(t["permissions"]["write"], false);
    const json& fn = t["definition"]["function"];
    EXPECT_EQ(t["definition"]["type"], "function");
    EXPECT_EQ(fn["name"], "demo_greet");
    EXPECT_EQ(fn["description"], "Greets someone");
    EXPECT_EQ(fn["parameters"]["properties"]["name"]["type"], "string");
  }

  int status = 0;
  json r = Call(*srv, "demo_greet", {{"name", "ada"}}, &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(r, (json{{"plain_text_response", "hi ada from L1"}}));
  EXPECT_EQ(Call(*srv, "demo_add", {{"a", 40}, {"b", 2}})["plain_text_response"], "42");
  EXPECT_EQ(Call(*srv, "demo_env", {{"name", "MCP_FIXTURE_VAR"}})["plain_text_response"], "v-4d1")
      << "the config's env reaches the server";
  r = Call(*srv, "demo_fail", json::object(), &status);
  EXPECT_EQ(status, 200) << "a tool's own failure is an answer, as llama-server sends it";
  EXPECT_EQ(r, (json{{"error", "fail: this tool always fails"}}));

  EXPECT_EQ(srv->Post("/tools", {{"tool", "demo_nope"}, {"params", json::object()}}).status, 404);
  EXPECT_EQ(srv->Post("/tools", {{"tool", "read_file"}, {"params", {{"path", "x"}}}}).status, 404)
      << "built-in tools stay off without --tools";
  EXPECT_EQ(
      srv->Post("/tools", {{"tool", "demo_greet"}, {"params", json::object()}, {"stream", true}}).status,
      400);

  // Concurrent calls: the fixture answers each on its own thread, so replies come back out of order.
  std::vector<std::thread> threads;
  std::vector<std::string> got(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      got[i] = Call(*srv, "demo_greet", {{"name", "n" + std::to_string(i)}}).value("plain_text_response", "");
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(got[i], "hi n" + std::to_string(i) + " from L1");
}

TEST(ServerMcp, RestartsAServerThatCrashed) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_PYTHON3();
  START_SERVER(srv, Args({{"demo", Server()}}));
  const std::string pid1 = Call(*srv, "demo_pid", json::object()).value("plain_text_response", "");
  ASSERT_FALSE(pid1.empty());
  int status = 0;
  const json crashed = Call(*srv, "demo_crash", json::object(), &status);
  EXPECT_EQ(status, 200);
  const std::string why = crashed.value("error", "");
  EXPECT_NE(why.find("exited with status 7"), std::string::npos) << crashed.dump();
  EXPECT_NE(why.find("crashing on request"), std::string::npos) << "the stderr tail: " << crashed.dump();
  const json again = Call(*srv, "demo_pid", json::object());
  const std::string pid2 = again.value("plain_text_response", "");
  EXPECT_FALSE(pid2.empty()) << again.dump();
  EXPECT_NE(pid1, pid2) << "a new process answers";
  EXPECT_EQ(Call(*srv, "demo_greet", {{"name", "b"}})["plain_text_response"], "hi b from fixture");
  EXPECT_EQ(srv->Get("/health").status, 200);
}

TEST(ServerMcp, TimesOutASlowCall) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_PYTHON3();
  START_SERVER(srv, Args({{"slow", Server({}, {{"timeout_ms", 400}})}}));
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  const json r = Call(*srv, "slow_sleep", {{"seconds", 5}}, &status);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(status, 200);
  EXPECT_NE(r.value("error", "").find("did not answer tools/call within 400 ms"), std::string::npos)
      << r.dump();
  EXPECT_LT(took, 3.0);
  EXPECT_EQ(Call(*srv, "slow_sleep", {{"seconds", 0}})["plain_text_response"], "slept")
      << "the server stays usable; the late reply is dropped";
}

TEST(ServerMcp, ACommandThatCannotRunDoesNotStopTheOthers) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_PYTHON3();
  START_SERVER(srv, Args({{"gone", {{"command", "/no/such/mcp-server-71c2"}}},
                          {"quits", Server({"--exit-at-start"})},
                          {"good", Server()}},
                         {"--tools", "get_datetime"}));
  EXPECT_EQ(srv->Get("/health").status, 200);
  const std::set<std::string> names = Names(srv->Get("/tools").Json());
  EXPECT_TRUE(names.count("get_datetime")) << "built-in tools first";
  EXPECT_TRUE(names.count("good_greet"));
  for (const std::string& n : names) {
    EXPECT_NE(n.rfind("gone_", 0), 0u) << n;
    EXPECT_NE(n.rfind("quits_", 0), 0u) << n;
  }
  int status = 0;
  json r = Call(*srv, "gone_anything", json::object(), &status);
  EXPECT_EQ(status, 200);
  EXPECT_NE(r.value("error", "").find("cannot run '/no/such/mcp-server-71c2'"), std::string::npos)
      << r.dump();
  r = Call(*srv, "quits_greet", json::object(), &status);
  EXPECT_EQ(status, 200);
  EXPECT_NE(r.value("error", "").find("exited with status 3"), std::string::npos) << r.dump();
  EXPECT_NE(r.value("error", "").find("refusing to start"), std::string::npos) << r.dump();
  EXPECT_EQ(Call(*srv, "good_greet", {{"name", "c"}})["plain_text_response"], "hi c from fixture");
}

TEST(ServerMcp, GrandchildHoldingThePipesDoesNotDelayTheStop) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_PYTHON3();
  const std::filesystem::path dir = NewScratchFile("mcp-config");
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "mcp.json").string();
  std::ofstream(file) << json{{"mcpServers", {{"gc", Server({"--grandchild"})}}}}.dump();
  START_SERVER(srv, {"-m", SharedPath(kStories), "--mcp-servers-config", file});
  EXPECT_EQ(Call(*srv, "gc_greet", {{"name", "d"}})["plain_text_response"], "hi d from fixture");
  // A call in flight when the stop comes must not hold it up either.
  std::thread slow([&] { Call(*srv, "gc_sleep", {{"seconds", 20}}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto t0 = std::chrono::steady_clock::now();
  const int code = srv->Stop();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  slow.join();
  EXPECT_EQ(code, 0);
  EXPECT_LT(took, 3.0);
}

TEST(ServerMcp, FlagErrors) {
  REQUIRE_SHARED_FILE(kStories);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--mcp-servers-json", "not json"}, "--mcp-servers-json: not valid JSON"},
      {{"--mcp-servers-json", "{\"servers\": {}}"}, "--mcp-servers-json: expected {\"mcpServers\""},
      {{"--mcp-servers-json", "{\"mcpServers\": {\"a\": {\"args\": []}}}"}, "mcpServers.a.command: required"},
      {{"--mcp-servers-json", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": \"y\"}}}"},
       "mcpServers.a.args: expected an array"},
      {{"--mcp-servers-json", "{\"mcpServers\": {\"a b\": {\"command\": \"x\"}}}"}, "server name 'a b'"},
      {{"--mcp-servers-json", "{\"mcpServers\": {\"r\": {\"url\": \"http://h/mcp\"}}}"},
       "remote MCP servers"},
      {{"--mcp-servers-config", "/no/such/mcp.json"}, "--mcp-servers-config: cannot read /no/such/mcp.json"},
  };
  for (const auto& [args, expected] : cases) {
    std::vector<std::string> full = {"-m", SharedPath(kStories)};
    full.insert(full.end(), args.begin(), args.end());
    std::string error;
    auto srv = ServerProcess::Start(full, &error);
    EXPECT_EQ(srv, nullptr) << args[1];
    EXPECT_NE(error.find(expected), std::string::npos) << args[1] << "\n" << error;
  }
}

}  // namespace
}  // namespace lazyslot::testing
