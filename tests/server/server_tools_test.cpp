// GET/POST /tools through the real server (--tools, --tools-dir): 403 without --tools, the listed tools, a
// read inside the folder and one outside it, request errors (unknown field, unknown or disabled tool, bad
// params), exec_shell_command only when named and then streamed as Server-Sent Events, and --tools flag errors.
#include <gtest/gtest.h>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";

std::filesystem::path ToolsFolder() {
  const std::filesystem::path outer = NewScratchFile("tools-route");
  std::filesystem::create_directories(outer / "work");
  std::ofstream(outer / "work" / "note.txt") << "inside-1f2e\n";
  std::ofstream(outer / "secret.txt") << "outside-9b8c\n";
  return outer;
}

TEST(ServerTools, OffUnlessEnabled) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories)});
  EXPECT_EQ(srv->Get("/tools").status, 403);
  const HttpResult r = srv->Post("/tools", {{"tool", "read_file"}, {"params", {{"path", "/etc/hostname"}}}});
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("--tools"), std::string::npos) << r.body;
  EXPECT_EQ(srv->Get("/props").Json()["tools"], json::array());
}

TEST(ServerTools, ReadsInsideTheFolderOnly) {
  REQUIRE_SHARED_FILE(kStories);
  const std::filesystem::path outer = ToolsFolder();
  START_SERVER(srv, {"-m", SharedPath(kStories), "--tools", "all", "--tools-dir", (outer / "work").string()});
  const json list = srv->Get("/tools").Json();
  std::vector<std::string> names;
  for (const json& t : list) names.push_back(t["tool"]);
  EXPECT_EQ(names, (std::vector<std::string>{"read_file", "file_glob_search", "grep_search", "write_file",
                                             "edit_file", "get_datetime", "get_info"}))
      << "all: every tool but exec_shell_command";
  EXPECT_EQ(srv->Get("/props").Json()["tools"].size(), names.size());

  const HttpResult in = srv->Post("/tools", {{"tool", "read_file"}, {"params", {{"path", "note.txt"}}}});
  ASSERT_EQ(in.status, 200) << in.body;
  EXPECT_EQ(in.Json()["plain_text_response"], "inside-1f2e\n");
  for (const std::string& path : {std::string("../secret.txt"), (outer / "secret.txt").string(),
                                  std::string("sub/../../secret.txt")}) {
    const HttpResult out = srv->Post("/tools", {{"tool", "read_file"}, {"params", {{"path", path}}}});
    ASSERT_EQ(out.status, 200) << out.body;
    EXPECT_NE(out.Json()["error"].get<std::string>().find("outside the tools folder"), std::string::npos)
        << path << ": " << out.body;
    EXPECT_EQ(out.body.find("outside-9b8c"), std::string::npos) << path;
  }
  const HttpResult cwd = srv->Post("/tools", {{"tool", "read_file"}, {"params", {{"path", "secret.txt"}}}},
                                   {"x-tool-cwd: " + outer.string()});
  EXPECT_NE(cwd.Json()["error"].get<std::string>().find("outside the tools folder"), std::string::npos)
      << cwd.body;

  EXPECT_EQ(srv->Post("/tools", {{"tool", "read_file"}, {"params", {{"path", "x"}}}, {"cwd", "/"}}).status, 400);
  EXPECT_EQ(srv->Post("/tools", {{"params", json::object()}}).status, 400);
  EXPECT_EQ(srv->Post("/tools", {{"tool", "read_file"}, {"params", "note.txt"}}).status, 400);
  EXPECT_EQ(srv->Post("/tools", {{"tool", "no_such_tool"}}).status, 404);
  const HttpResult exec = srv->Post("/tools", {{"tool", "exec_shell_command"}, {"params", {{"command", "id"}}}});
  EXPECT_EQ(exec.status, 404) << "not enabled by all: " << exec.body;
  EXPECT_EQ(srv->Get("/health").status, 200);
}

TEST(ServerTools, ExecShellCommandStreamsWhenNamed) {
  REQUIRE_SHARED_FILE(kStories);
  const std::filesystem::path outer = ToolsFolder();
  START_SERVER(srv, {"-m", SharedPath(kStories), "--tools", "exec_shell_command", "--tools-dir",
                     (outer / "work").string()});
  const HttpResult r = srv->Post(
      "/tools", {{"tool", "exec_shell_command"}, {"params", {{"command", "cat note.txt"}}}, {"stream", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Header("Content-Type"), "text/event-stream");
  const std::vector<std::string> events = SseData(r.body);
  ASSERT_GE(events.size(), 2u) << r.body;
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i) text += json::parse(events[i])["chunk"].get<std::string>();
  EXPECT_NE(text.find("inside-1f2e"), std::string::npos) << text;
  EXPECT_NE(text.find("[exit code: 0]"), std::string::npos) << text;
  EXPECT_EQ(json::parse(events.back()), (json{{"done", true}}));
}

TEST(ServerTools, FlagErrors) {
  REQUIRE_SHARED_FILE(kStories);
  std::string error;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--tools", "read_file,nope"}, {"--tools", "all", "--tools-dir", "/no/such/dir"},
        {"--tools-dir", "/tmp"}}) {
    std::vector<std::string> full = {"-m", SharedPath(kStories)};
    full.insert(full.end(), args.begin(), args.end());
    auto srv = ServerProcess::Start(full, &error);
    EXPECT_EQ(srv, nullptr) << args[0] << " " << args[1];
  }
}

}  // namespace
}  // namespace lazyslot::testing
