// Built-in agent tools (tools/builtin_tools.h): llama-server's shapes and results for each tool, and the
// confinement to the tools folder: "..", absolute paths, symlinks out (read, write, walk), a cwd outside;
// exec_shell_command streamed, timed out, stopped by its consumer, and always reaped.
#include "tools/builtin_tools.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace lazyslot::tools {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// True once process `pid` has ended (gone, or a zombie its new parent has not reaped yet), polling for up
// to `seconds`.
bool GoneOrZombie(pid_t pid, double seconds) {
  const auto start = Clock::now();
  do {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const size_t paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z') return true;
    ::usleep(20 * 1000);
  } while (SecondsSince(start) < seconds);
  return false;
}

// Each test gets base/root (the tools folder) and base/outside (which no tool may reach).
class BuiltinTools : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    base_ = fs::temp_directory_path() /
            ("lazyslot_builtin_tools_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(base_);
    fs::create_directories(base_ / "root");
    fs::create_directories(base_ / "outside");
    root_ = fs::canonical(base_ / "root");
    outside_ = fs::canonical(base_ / "outside");
    WriteRaw(outside_ / "secret.txt", "top secret\n");
    auto all = ParseToolList("all,exec_shell_command");
    ASSERT_TRUE(all.ok());
    config_.enabled = *all;
    config_.root = root_;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(base_, ec);
  }

  static void WriteRaw(const fs::path& path, const std::string& content) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
  }
  static std::string ReadRaw(const fs::path& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

  Json Call(const std::string& tool, const Json& params, const std::string& cwd = "") {
    Result<Json> r = RunBuiltinTool(config_, tool, params, cwd);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Json::object();
  }
  // The plain_text_response of a call that must succeed.
  std::string Text(const std::string& tool, const Json& params, const std::string& cwd = "") {
    Json j = Call(tool, params, cwd);
    EXPECT_FALSE(j.contains("error")) << j.dump();
    return j.value("plain_text_response", std::string());
  }
  // The error of a call that must fail at the tool level (HTTP 200 with "error").
  std::string Error(const std::string& tool, const Json& params, const std::string& cwd = "") {
    Json j = Call(tool, params, cwd);
    EXPECT_TRUE(j.contains("error")) << j.dump();
    return j.value("error", std::string());
  }
  std::string OutsideNote() const {
    return "is outside the tools folder (--tools-dir " + root_.string() + ")";
  }

  fs::path base_, root_, outside_;
  BuiltinToolsConfig config_;
};

TEST_F(BuiltinTools, ParseToolListAllLeavesOutTheShell) {
  auto all = ParseToolList("all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (std::vector<std::string>{"read_file", "file_glob_search", "grep_search", "write_file",
                                            "edit_file", "get_datetime", "get_info"}));
  auto with_exec = ParseToolList("all, exec_shell_command");
  ASSERT_TRUE(with_exec.ok());
  EXPECT_EQ(with_exec->size(), 8u);
  EXPECT_EQ((*with_exec)[3], "exec_shell_command");
  auto exec_only = ParseToolList("exec_shell_command");
  ASSERT_TRUE(exec_only.ok());
  EXPECT_EQ(*exec_only, std::vector<std::string>{"exec_shell_command"});
  auto some = ParseToolList(" grep_search ,read_file,read_file,");
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(*some, (std::vector<std::string>{"read_file", "grep_search"}));
  auto none = ParseToolList("");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto bad = ParseToolList("read_file,rm_rf");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(bad.status().message(), "rm_rf"));
  EXPECT_TRUE(Contains(bad.status().message(), "read_file, file_glob_search, grep_search"));
}

TEST_F(BuiltinTools, DefinitionsListExactlyTheEnabledTools) {
  config_.enabled = {"read_file", "write_file"};
  const Json defs = BuiltinToolDefinitions(config_);
  ASSERT_TRUE(defs.is_array());
  ASSERT_EQ(defs.size(), 2u);
  EXPECT_EQ(defs[0]["tool"], "read_file");
  EXPECT_EQ(defs[0]["display_name"], "Read file");
  EXPECT_EQ(defs[0]["type"], "builtin");
  EXPECT_EQ(defs[0]["permissions"]["write"], false);
  EXPECT_EQ(defs[0]["definition"]["type"], "function");
  EXPECT_EQ(defs[0]["definition"]["function"]["name"], "read_file");
  EXPECT_EQ(defs[0]["definition"]["function"]["parameters"]["required"], Json::array({"path"}));
  EXPECT_EQ(defs[1]["tool"], "write_file");
  EXPECT_EQ(defs[1]["permissions"]["write"], true);

  config_.enabled = *ParseToolList("all,exec_shell_command");
  const Json every = BuiltinToolDefinitions(config_);
  ASSERT_EQ(every.size(), 8u);
  for (const Json& d : every) {
    EXPECT_EQ(d["definition"]["function"]["name"], d["tool"]);
    EXPECT_EQ(d["definition"]["function"]["parameters"]["type"], "object");
  }
}

TEST_F(BuiltinTools, ReadFileContentRangeAndMissingFile) {
  WriteRaw(root_ / "notes.txt", "line1\nline2\nline3\n");
  EXPECT_EQ(Text("read_file", {{"path", "notes.txt"}}), "line1\nline2\nline3\n");
  EXPECT_EQ(Text("read_file", {{"path", (root_ / "notes.txt").string()},
                               {"start_line", 2},
                               {"end_line", 2},
                               {"append_loc", true}}),
            "2\xE2\x86\x92line2\n");
  EXPECT_TRUE(Contains(Error("read_file", {{"path", "missing.txt"}}), "missing.txt"));
  EXPECT_TRUE(Contains(Error("read_file", {{"path", "."}}), "not a regular file"));
  ASSERT_EQ(::mkfifo((root_ / "fifo").c_str(), 0600), 0);  // never opened for a blocking read
  EXPECT_TRUE(Contains(Error("read_file", {{"path", "fifo"}}), "not a regular file"));
  EXPECT_TRUE(Contains(Text("grep_search", {{"path", "."}, {"pattern", "line"}}), "Total matches: 3"));

  Result<Json> no_path = RunBuiltinTool(config_, "read_file", Json::object(), "");
  ASSERT_FALSE(no_path.ok());
  EXPECT_EQ(no_path.status().code(), Code::kInvalidArgument);
  Result<Json> wrong_type = RunBuiltinTool(config_, "read_file", {{"path", 3}}, "");
  EXPECT_EQ(wrong_type.status().code(), Code::kInvalidArgument);
}

TEST_F(BuiltinTools, ReadFileIsCappedAndSaysSo) {
  config_.max_output_bytes = 100;
  WriteRaw(root_ / "big.txt",
           std::string(50, 'a') + "\n" + std::string(50, 'b') + "\n" + std::string(50, 'c'));
  const std::string text = Text("read_file", {{"path", "big.txt"}});
  EXPECT_EQ(text.substr(0, 100), std::string(50, 'a') + "\n" + std::string(49, 'b'));  // the cap
  EXPECT_TRUE(Contains(text, "b\n[output truncated at 100 bytes"));
  EXPECT_FALSE(Contains(text, "ccc"));
}

TEST_F(BuiltinTools, WriteThenEditFile) {
  const Json written = Call("write_file", {{"path", "test.log"}, {"content", "line1\nline2\nline3\n"}});
  EXPECT_EQ(written["result"], "file written successfully");
  EXPECT_EQ(Text("read_file", {{"path", "test.log"}}), "line1\nline2\nline3\n");

  const Json edited = Call("edit_file", {{"path", "test.log"},
                                         {"edits",
                                          {{{"old_text", "line2"}, {"new_text", "line2-edited"}},
                                           {{"old_text", "line3\n"}, {"new_text", "line3\nline4\n"}}}}});
  EXPECT_EQ(edited["result"], "file edited successfully");
  EXPECT_EQ(edited["edits_applied"], 2);
  EXPECT_EQ(Text("read_file", {{"path", "test.log"}}), "line1\nline2-edited\nline3\nline4\n");
  EXPECT_EQ(ReadRaw(root_ / "test.log"), "line1\nline2-edited\nline3\nline4\n");
}

TEST_F(BuiltinTools, EditFileRefusesNonUniqueOverlappingAndMissingText) {
  Call("write_file", {{"path", "dup.log"}, {"content", "dup\ndup\n"}});
  EXPECT_TRUE(Contains(
      Error("edit_file", {{"path", "dup.log"}, {"edits", {{{"old_text", "dup"}, {"new_text", "x"}}}}}),
      "unique"));
  Call("write_file", {{"path", "two.log"}, {"content", "line1\nline2\n"}});
  EXPECT_TRUE(Contains(Error("edit_file", {{"path", "two.log"},
                                           {"edits",
                                            {{{"old_text", "line1\nline2"}, {"new_text", "a"}},
                                             {{"old_text", "line2"}, {"new_text", "b"}}}}}),
                       "overlap"));
  EXPECT_TRUE(Contains(
      Error("edit_file", {{"path", "two.log"}, {"edits", {{{"old_text", "nope"}, {"new_text", "b"}}}}}),
      "could not find"));
  EXPECT_TRUE(Contains(Error("edit_file", {{"path", "two.log"}, {"edits", Json::array()}}), "non-empty"));
  EXPECT_EQ(ReadRaw(root_ / "dup.log"), "dup\ndup\n");  // nothing was changed by the refused edits
  EXPECT_EQ(ReadRaw(root_ / "two.log"), "line1\nline2\n");
}

TEST_F(BuiltinTools, GlobListsFoldersAndAll) {
  WriteRaw(root_ / "project-alpha" / "README.md", "alpha");
  WriteRaw(root_ / "project-alpha" / "src" / "main.cpp", "int main() {}");
  WriteRaw(root_ / "project-beta" / "notes.txt", "beta");

  Json res = Call("file_glob_search", {{"path", "."}, {"type", "dir"}});
  const std::string text = res["plain_text_response"];
  EXPECT_TRUE(Contains(text, "project-alpha/\n"));
  EXPECT_TRUE(Contains(text, "project-beta/\n"));
  EXPECT_TRUE(Contains(text, "project-alpha/src/\n"));
  EXPECT_FALSE(Contains(text, "README.md"));
  std::map<std::string, std::string> types;
  for (const Json& e : res["entries"]) types[e["path"]] = e["type"];
  EXPECT_EQ(types["project-alpha"], "dir");
  EXPECT_EQ(types["project-alpha/src"], "dir");
  EXPECT_EQ(res["base"], root_.string());

  res = Call("file_glob_search", {{"path", root_.string()}, {"type", "all"}, {"include", "*proj*"}});
  std::vector<std::string> paths;
  for (const Json& e : res["entries"]) paths.push_back(e["path"]);
  EXPECT_EQ(paths, (std::vector<std::string>{"project-alpha", "project-beta"}));

  res = Call("file_glob_search", {{"path", "."}, {"include", "src/*.cpp"}});
  ASSERT_EQ(res["entries"].size(), 1u);
  EXPECT_EQ(res["entries"][0]["path"], "project-alpha/src/main.cpp");
  res = Call("file_glob_search", {{"path", "."}, {"include", "**/*.[mt]?t"}, {"exclude", "*.md"}});
  ASSERT_EQ(res["entries"].size(), 1u);
  EXPECT_EQ(res["entries"][0]["path"], "project-beta/notes.txt");
}

TEST_F(BuiltinTools, GlobMaxDepthAndLimit) {
  fs::create_directories(root_ / "a" / "b" / "c");
  WriteRaw(root_ / "top.txt", "top");
  WriteRaw(root_ / "a" / "mid.txt", "mid");
  WriteRaw(root_ / "a" / "b" / "deep.txt", "deep");

  std::string text = Text("file_glob_search", {{"path", "."}, {"max_depth", 1}});
  EXPECT_TRUE(Contains(text, "top.txt"));
  EXPECT_FALSE(Contains(text, "mid.txt"));
  text = Text("file_glob_search", {{"path", "."}, {"max_depth", 2}});
  EXPECT_TRUE(Contains(text, "mid.txt"));
  EXPECT_FALSE(Contains(text, "deep.txt"));

  const Json res = Call("file_glob_search", {{"path", "."}, {"limit", 1}});
  EXPECT_EQ(res["entries"].size(), 1u);
  EXPECT_TRUE(Contains(res["plain_text_response"], "Total matches: 3"));
  EXPECT_TRUE(Contains(Error("file_glob_search", {{"path", "."}, {"limit", 0}}), "invalid limit"));
}

TEST_F(BuiltinTools, GlobNeverWalksJunkFoldersButListsThem) {
  WriteRaw(root_ / "build" / "artifact.txt", "built");
  fs::create_directories(root_ / "build" / "nested");
  WriteRaw(root_ / "src" / "main.cpp", "int main() {}");

  Json res = Call("file_glob_search", {{"path", "."}, {"type", "dir"}, {"max_depth", 1}});
  std::vector<std::string> paths;
  for (const Json& e : res["entries"]) paths.push_back(e["path"]);
  EXPECT_NE(std::find(paths.begin(), paths.end(), "build"), paths.end());

  res = Call("file_glob_search", {{"path", "."}, {"type", "all"}});
  paths.clear();
  for (const Json& e : res["entries"]) paths.push_back(e["path"]);
  EXPECT_NE(std::find(paths.begin(), paths.end(), "src/main.cpp"), paths.end());
  EXPECT_EQ(std::find(paths.begin(), paths.end(), "build/artifact.txt"), paths.end());
  EXPECT_EQ(std::find(paths.begin(), paths.end(), "build/nested"), paths.end());
  // Selected directly, a junk folder is searched.
  EXPECT_TRUE(Contains(Text("file_glob_search", {{"path", "build"}}), "artifact.txt"));
}

TEST_F(BuiltinTools, GlobRejectsInvalidType) {
  EXPECT_TRUE(Contains(Error("file_glob_search", {{"path", "."}, {"type", "bogus"}}), "invalid type"));
}

TEST_F(BuiltinTools, GrepFindsPatternAndFiltersByBasename) {
  const std::string marker = "lazyslot_marker_grep_search";
  WriteRaw(root_ / "deep" / "er" / "target.py", "x = 1\n# " + marker + "\n");
  WriteRaw(root_ / "other.py", marker + "\n");
  WriteRaw(root_ / "build" / "target.py", marker + "\n");  // junk: not searched

  std::string text = Text("grep_search", {{"path", "."}, {"pattern", marker}, {"include", "target.py"}});
  EXPECT_TRUE(Contains(text, "deep/er/target.py:# " + marker));
  EXPECT_TRUE(Contains(text, "Total matches: 1"));

  text = Text("grep_search", {{"path", "."}, {"pattern", marker}});
  EXPECT_TRUE(Contains(text, "Total matches: 2"));
  text = Text("grep_search", {{"path", "."},
                              {"pattern", "LAZYSLOT_M.RKER"},
                              {"ignore_case", true},
                              {"exclude", "other.py"},
                              {"return_line_numbers", true}});
  EXPECT_TRUE(Contains(text, "deep/er/target.py:2:# " + marker));
  EXPECT_TRUE(Contains(text, "Total matches: 1"));
  text = Text("grep_search", {{"path", "deep/er/target.py"}, {"pattern", "x = \\d"}, {"context_lines", 1}});
  EXPECT_TRUE(Contains(text, "deep/er/target.py:1:x = 1\ndeep/er/target.py-2-# " + marker));
  EXPECT_TRUE(Contains(Text("grep_search", {{"path", "."}, {"pattern", "M.RKER"}, {"literal", true}}),
                       "Total matches: 0"));
  EXPECT_TRUE(Contains(Error("grep_search", {{"path", "."}, {"pattern", "a("}}), "invalid regex"));
  EXPECT_TRUE(Contains(Error("grep_search", {{"path", "nowhere"}, {"pattern", "a"}}), "does not exist"));
}

TEST_F(BuiltinTools, RelativePathsFollowTheCwdHeader) {
  WriteRaw(root_ / "workdir" / "rel.txt", "relative-content");
  const std::string cwd = (root_ / "workdir").string();
  EXPECT_TRUE(Contains(Text("read_file", {{"path", "rel.txt"}}, cwd), "relative-content"));
  EXPECT_EQ(Call("write_file", {{"path", "sub/out.txt"}, {"content", "written"}}, cwd)["result"],
            "file written successfully");
  EXPECT_EQ(ReadRaw(root_ / "workdir" / "sub" / "out.txt"), "written");
  EXPECT_TRUE(Contains(Text("file_glob_search", {{"path", "."}, {"include", "*.txt"}}, cwd), "rel.txt"));
  // A relative header is taken from the root; absolute paths ignore the cwd.
  EXPECT_TRUE(Contains(Text("read_file", {{"path", "rel.txt"}}, "workdir"), "relative-content"));
  WriteRaw(root_ / "abs.txt", "absolute-content");
  EXPECT_TRUE(Contains(Text("read_file", {{"path", (root_ / "abs.txt").string()}}, cwd), "absolute-content"));
  const Json info = Call("get_info", Json::object(), cwd);
  EXPECT_EQ(info["cwd"], cwd);
  EXPECT_EQ(Call("get_info", Json::object())["cwd"], root_.string());
}

TEST_F(BuiltinTools, CwdHeaderOverridesParamsCwd) {
  WriteRaw(root_ / "workdir" / "marker.txt", "marker");
  const std::string cwd = (root_ / "workdir").string();
  EXPECT_TRUE(Contains(
      Text("read_file", {{"path", "marker.txt"}, {"cwd", "/definitely/not/a/real/path"}}, cwd), "marker"));
  // Without the header, params.cwd is used (and must be inside the root).
  EXPECT_TRUE(Contains(Text("read_file", {{"path", "marker.txt"}, {"cwd", "workdir"}}), "marker"));
  EXPECT_TRUE(Contains(Error("read_file", {{"path", "marker.txt"}, {"cwd", "/definitely/not/a/real/path"}}),
                       OutsideNote()));
}

TEST_F(BuiltinTools, PathsOutsideTheRootAreRefused) {
  WriteRaw(root_ / "sub" / "a.txt", "inside");
  const std::string secret = (outside_ / "secret.txt").string();
  const std::string up = "../outside/secret.txt";
  EXPECT_TRUE(Contains(Error("read_file", {{"path", up}}), OutsideNote()));
  EXPECT_TRUE(Contains(Error("read_file", {{"path", secret}}), OutsideNote()));
  EXPECT_TRUE(Contains(Error("read_file", {{"path", "sub/../../outside/secret.txt"}}), OutsideNote()));
  EXPECT_TRUE(Contains(Error("read_file", {{"path", "/etc/passwd"}}), OutsideNote()));
  EXPECT_EQ(Text("read_file", {{"path", "sub/../sub/a.txt"}}), "inside\n");  // ".." that stays inside is fine

  EXPECT_TRUE(
      Contains(Error("write_file", {{"path", "../outside/new.txt"}, {"content", "x"}}), OutsideNote()));
  EXPECT_TRUE(Contains(Error("write_file", {{"path", "../outside/deeper/new.txt"}, {"content", "x"}}),
                       OutsideNote()));
  EXPECT_FALSE(fs::exists(outside_ / "new.txt"));
  EXPECT_FALSE(fs::exists(outside_ / "deeper"));
  EXPECT_TRUE(
      Contains(Error("edit_file", {{"path", secret}, {"edits", {{{"old_text", "top"}, {"new_text", "x"}}}}}),
               OutsideNote()));
  EXPECT_EQ(ReadRaw(outside_ / "secret.txt"), "top secret\n");
  EXPECT_TRUE(Contains(Error("file_glob_search", {{"path", ".."}}), OutsideNote()));
  EXPECT_TRUE(
      Contains(Error("grep_search", {{"path", outside_.string()}, {"pattern", "secret"}}), OutsideNote()));
  EXPECT_TRUE(Contains(Error("grep_search", {{"path", secret}, {"pattern", "secret"}}), OutsideNote()));
}

TEST_F(BuiltinTools, SymlinksOutOfTheRootAreNotFollowed) {
  fs::create_directory_symlink(outside_, root_ / "dirlink");
  fs::create_symlink(outside_ / "secret.txt", root_ / "filelink");
  fs::create_symlink(outside_ / "not_yet.txt", root_ / "dangling");
  fs::create_directory_symlink(outside_ / "not_yet_dir", root_ / "dangling_dir");
  WriteRaw(root_ / "real" / "inside.txt", "inside secret\n");
  fs::create_symlink(root_ / "real" / "inside.txt", root_ / "inlink");
  fs::create_directory_symlink(root_, root_ / "real" / "loop");  // listed, never walked

  EXPECT_TRUE(Contains(Error("read_file", {{"path", "dirlink/secret.txt"}}), OutsideNote()));
  EXPECT_TRUE(Contains(Error("read_file", {{"path", "filelink"}}), OutsideNote()));
  EXPECT_TRUE(Contains(Error("write_file", {{"path", "filelink"}, {"content", "pwned"}}), OutsideNote()));
  EXPECT_TRUE(
      Contains(Error("write_file", {{"path", "dirlink/new.txt"}, {"content", "pwned"}}), OutsideNote()));
  EXPECT_TRUE(Contains(
      Error("edit_file", {{"path", "filelink"}, {"edits", {{{"old_text", "top"}, {"new_text", "x"}}}}}),
      OutsideNote()));
  // A dangling link looks like a new file inside the root; writing through it is still refused.
  EXPECT_TRUE(Contains(Error("write_file", {{"path", "dangling"}, {"content", "pwned"}}), "symlink"));
  EXPECT_TRUE(
      Contains(Error("write_file", {{"path", "dangling_dir/x.txt"}, {"content", "pwned"}}), "symlink"));
  EXPECT_EQ(ReadRaw(outside_ / "secret.txt"), "top secret\n");
  EXPECT_FALSE(fs::exists(outside_ / "not_yet.txt"));
  EXPECT_FALSE(fs::exists(outside_ / "not_yet_dir"));
  EXPECT_FALSE(fs::exists(outside_ / "new.txt"));
  EXPECT_TRUE(Contains(Error("file_glob_search", {{"path", "dirlink"}}), OutsideNote()));
  // A missing folder followed by ".." must not hide the link behind it.
  EXPECT_TRUE(Contains(Error("read_file", {{"path", "missing/../dirlink/secret.txt"}}), OutsideNote()));
  EXPECT_TRUE(Contains(Error("write_file", {{"path", "missing/../dirlink/new.txt"}, {"content", "x"}}),
                       OutsideNote()));
  EXPECT_TRUE(Contains(Error("read_file", {{"path", "x"}}, "dirlink"), OutsideNote()));  // cwd through a link

  // Walks list neither the links out nor anything behind them; a link inside the root is fine.
  const Json all = Call("file_glob_search", {{"path", "."}, {"type", "all"}});
  std::vector<std::string> paths;
  for (const Json& e : all["entries"]) paths.push_back(e["path"]);
  EXPECT_EQ(paths, (std::vector<std::string>{"inlink", "real", "real/inside.txt", "real/loop"}));
  const std::string grep = Text("grep_search", {{"path", "."}, {"pattern", "secret"}});
  EXPECT_TRUE(Contains(grep, "Total matches: 2"));  // real/inside.txt and inlink, never outside/secret.txt
  EXPECT_FALSE(Contains(grep, "top secret"));
  EXPECT_EQ(Text("read_file", {{"path", "inlink"}}), "inside secret\n");
}

TEST_F(BuiltinTools, CwdOutsideTheRootIsRefused) {
  EXPECT_TRUE(Contains(Error("read_file", {{"path", "secret.txt"}}, outside_.string()), OutsideNote()));
  EXPECT_TRUE(Contains(Error("read_file", {{"path", "secret.txt"}}, "../outside"), OutsideNote()));
  EXPECT_TRUE(Contains(Error("get_info", Json::object(), "/"), OutsideNote()));
  EXPECT_TRUE(Contains(Error("exec_shell_command", {{"command", "touch ran.txt"}}, outside_.string()),
                       OutsideNote()));
  EXPECT_FALSE(fs::exists(outside_ / "ran.txt"));
  const Json done = RunShellStreaming(config_, {{"command", "touch ran.txt"}}, "..",
                                      [](const std::string&) { return true; });
  EXPECT_EQ(done["done"], true);
  EXPECT_TRUE(Contains(done.value("error", ""), OutsideNote()));
  EXPECT_FALSE(fs::exists(base_ / "ran.txt"));
  WriteRaw(root_ / "file.txt", "x");
  EXPECT_TRUE(Contains(Error("read_file", {{"path", "x"}}, "file.txt"), "not a folder"));
}

TEST_F(BuiltinTools, ExecStreamsOutputAndExitCode) {
  std::vector<std::string> chunks;
  const Json done = RunShellStreaming(config_, {{"command", "echo hello; echo oops >&2; exit 3"}}, "",
                                      [&](const std::string& c) {
                                        chunks.push_back(c);
                                        return true;
                                      });
  EXPECT_EQ(done, Json({{"done", true}}));
  std::string all;
  for (const std::string& c : chunks) all += c;
  EXPECT_TRUE(Contains(all, "hello\n"));
  EXPECT_TRUE(Contains(all, "oops\n"));
  EXPECT_EQ(chunks.back(), "\n[exit code: 3]");

  chunks.clear();
  EXPECT_EQ(RunShellStreaming(config_, {{"command", "echo hello"}}, "",
                              [&](const std::string& c) {
                                chunks.push_back(c);
                                return true;
                              }),
            Json({{"done", true}}));
  ASSERT_GE(chunks.size(), 2u);
  EXPECT_EQ(chunks.front(), "hello\n");
  EXPECT_EQ(chunks.back(), "\n[exit code: 0]");

  // Not streamed: the same text in plain_text_response; it runs in the cwd, stdin is empty.
  fs::create_directories(root_ / "work");
  EXPECT_EQ(Text("exec_shell_command", {{"command", "echo hi > made.txt; cat; pwd"}}, "work"),
            (root_ / "work").string() + "\n\n[exit code: 0]");
  EXPECT_EQ(ReadRaw(root_ / "work" / "made.txt"), "hi\n");
}

TEST_F(BuiltinTools, ExecIsKilledAtTheTimeout) {
  config_.exec_timeout_s = 0.5;
  auto start = Clock::now();
  const std::string text = Text("exec_shell_command", {{"command", "echo started; sleep 5; echo never"}});
  EXPECT_LT(SecondsSince(start), 3.0);
  EXPECT_TRUE(Contains(text, "started\n"));
  EXPECT_FALSE(Contains(text, "never"));
  EXPECT_TRUE(Contains(text, "[exit code: 137] [timed out: killed after the 0.5 s limit]")) << text;

  // A background job that keeps the output open neither holds the call nor outlives it.
  config_.exec_timeout_s = 10;
  start = Clock::now();
  const std::string bg = Text("exec_shell_command", {{"command", "sleep 5 & echo $!"}});
  EXPECT_LT(SecondsSince(start), 3.0);
  EXPECT_TRUE(Contains(bg, "\n\n[exit code: 0]")) << bg;
  const pid_t job = std::atoi(bg.c_str());
  ASSERT_GT(job, 0) << bg;
  EXPECT_TRUE(GoneOrZombie(job, 2.0)) << "background job " << job << " still runs";
  // The request's own timeout may be shorter than the server's.
  start = Clock::now();
  EXPECT_TRUE(Contains(Text("exec_shell_command", {{"command", "sleep 5"}, {"timeout", 1}}), "timed out"));
  EXPECT_LT(SecondsSince(start), 3.0);
}

TEST_F(BuiltinTools, ExecStopsWhenTheConsumerGoesAway) {
  std::string first;
  const auto start = Clock::now();
  const Json done = RunShellStreaming(config_, {{"command", "echo $$; sleep 3; touch late.txt; sleep 4"}}, "",
                                      [&](const std::string& c) {
                                        first = c;
                                        return false;
                                      });
  EXPECT_LT(SecondsSince(start), 2.5);
  EXPECT_EQ(done["done"], true);
  EXPECT_TRUE(Contains(done.value("error", ""), "stopped"));
  // The shell was killed and reaped: its pid is gone (a zombie would still answer kill(pid, 0)).
  const pid_t pid = std::atoi(first.c_str());
  ASSERT_GT(pid, 0) << first;
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  while (SecondsSince(start) < 3.5) ::usleep(100 * 1000);  // past the moment it would have touched
  EXPECT_FALSE(fs::exists(root_ / "late.txt"));
}

TEST_F(BuiltinTools, ExecOutputIsCapped) {
  config_.max_output_bytes = 1000;
  const std::string text = Text("exec_shell_command", {{"command", "head -c 5000 /dev/zero | tr '\\0' a"}});
  EXPECT_EQ(text, std::string(1000, 'a') + "\n[output truncated at 1000 bytes]\n[exit code: 0]");
  // A character is never split at the cap ("é" is two bytes).
  config_.max_output_bytes = 3;
  EXPECT_EQ(Text("exec_shell_command", {{"command", "printf '\\303\\251\\303\\251'"}}),
            "\xC3\xA9\n[output truncated at 3 bytes]\n[exit code: 0]");
}

TEST_F(BuiltinTools, DisabledAndUnknownToolsAreRefused) {
  config_.enabled = *ParseToolList("all");
  Result<Json> r = RunBuiltinTool(config_, "exec_shell_command", {{"command", "touch ran.txt"}}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_TRUE(Contains(r.status().message(), "not enabled"));
  const Json done = RunShellStreaming(config_, {{"command", "touch ran.txt"}}, "", [](const std::string&) {
    ADD_FAILURE() << "no output expected";
    return true;
  });
  EXPECT_TRUE(Contains(done.value("error", ""), "not enabled"));
  EXPECT_FALSE(fs::exists(root_ / "ran.txt"));

  config_.enabled = {"read_file"};
  r = RunBuiltinTool(config_, "write_file", {{"path", "a.txt"}, {"content", "x"}}, "");
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_FALSE(fs::exists(root_ / "a.txt"));
  r = RunBuiltinTool(config_, "rm_rf", Json::object(), "");
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_TRUE(Contains(r.status().message(), "unknown tool"));
  r = RunBuiltinTool(config_, "read_file", Json::array(), "");
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
}

TEST_F(BuiltinTools, DatetimeAndInfo) {
  const std::string now = Call("get_datetime", Json::object())["result"];
  ASSERT_EQ(now.size(), 20u) << now;
  EXPECT_EQ(now[4], '-');
  EXPECT_EQ(now[10], 'T');
  EXPECT_EQ(now.back(), 'Z');
  const std::string year = Call("get_datetime", {{"format", "%Y"}})["result"];
  EXPECT_EQ(year, now.substr(0, 4));
  EXPECT_TRUE(Contains(Error("get_datetime", {{"format", ""}}), "invalid format"));

  ::setenv("LAZYSLOT_TOOLS_TEST_SECRET", "hunter2", 1);
  const Json info = Call("get_info", Json::object());
  ::unsetenv("LAZYSLOT_TOOLS_TEST_SECRET");
  EXPECT_TRUE(Contains(info.value("os", ""), "Linux"));
  EXPECT_EQ(info["cwd"], root_.string());
  EXPECT_EQ(info.size(), 2u);
  EXPECT_FALSE(Contains(info.dump(), "hunter2"));
}

}  // namespace
}  // namespace lazyslot::tools
