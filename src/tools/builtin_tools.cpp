// Built-in agent tools confined to the --tools-dir folder (see builtin_tools.h): the tool table, --tools
// parsing, the OpenAI definitions GET /tools lists, one call's dispatch, and get_datetime and get_info. The
// file tools are file_tools.cpp's (their globs and walks file_walk.cpp's), exec_shell_command is shell.cpp's,
// the confinement rules are confine.cpp's.
#include "tools/builtin_tools.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <exception>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tools/confine.h"
#include "tools/file_tools.h"
#include "tools/shell.h"
#include "tools/tool_support.h"

namespace lazyslot::tools {

using internal::EditFileTool;
using internal::Enabled;
using internal::ExecTool;
using internal::GlobTool;
using internal::GrepTool;
using internal::kExec;
using internal::MakePlace;
using internal::Place;
using internal::Read;
using internal::ReadFileTool;
using internal::ToolError;
using internal::WriteFileTool;

namespace {

struct ToolInfo {
  const char* name;
  const char* display_name;
  bool write;  // llama-server's permissions.write: the UI asks before running it
};
constexpr ToolInfo kTools[] = {
    {"read_file", "Read file", false},          {"file_glob_search", "File search", false},
    {"grep_search", "Grep search", false},      {kExec, "Execute shell command", true},
    {"write_file", "Write file", true},         {"edit_file", "Edit file", true},
    {"get_datetime", "Get Date & Time", false}, {"get_info", "Get Runtime Info", false},
};

const ToolInfo* FindTool(const std::string& name) {
  for (const ToolInfo& t : kTools) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

std::string KnownNames() {
  std::string s;
  for (const ToolInfo& t : kTools) s += std::string(s.empty() ? "" : ", ") + t.name;
  return s;
}

// ---- get_datetime and get_info. Each returns the result JSON, a {"error"} JSON, or a Status for malformed
// params.

Result<Json> DatetimeTool(const Json& p) {
  std::string format = "%Y-%m-%dT%H:%M:%SZ";
  LS_RETURN_IF_ERROR(Read(p, "format", &format));
  if (format.size() > 256) return ToolError("format string too long");
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char buf[1024];
  const size_t len = std::strftime(buf, sizeof buf, format.c_str(), &utc);
  if (len == 0) return ToolError("invalid format string");
  return Json{{"result", std::string(buf, len)}};
}

// llama-server runs `uname -a`; the same fields come from uname(2). No environment variables.
Json InfoTool(const Place& place) {
  struct utsname u;
  std::string os = "unknown";
  if (::uname(&u) == 0) {
    os = std::string(u.sysname) + " " + u.nodename + " " + u.release + " " + u.version + " " + u.machine;
  }
  return Json{{"os", os}, {"cwd", place.cwd.string()}};
}

// ---- definitions (OpenAI function tools)

Json Prop(const char* type, const std::string& description) {
  return Json{{"type", type}, {"description", description}};
}

Json Function(const char* name, const std::string& description, Json properties,
              const std::vector<std::string>& required) {
  Json parameters = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) parameters["required"] = required;
  return Json{{"type", "function"},
              {"function", {{"name", name}, {"description", description}, {"parameters", parameters}}}};
}

Json Definition(const std::string& name, const BuiltinToolsConfig& config) {
  const std::string root = " Paths must stay inside " + config.root.string() + "; relative ones start there.";
  const std::string globs =
      " include/exclude: a pattern without '/' (\"*.cpp\") matches the file name at any depth, one with '/' "
      "matches the relative path (\"src/**/*.h\"). Folders such as .git, node_modules and build are not "
      "searched.";
  if (name == "read_file") {
    return Function("read_file", "Read a text file, optionally a 1-based line range." + root,
                    {{"path", Prop("string", "File to read")},
                     {"start_line", Prop("integer", "First line, 1-based (default 1)")},
                     {"end_line", Prop("integer", "Last line, inclusive (default: the end)")},
                     {"append_loc", Prop("boolean", "Prefix each line with its number (\"12\u2192...\")")}},
                    {"path"});
  }
  if (name == "file_glob_search") {
    return Function(
        "file_glob_search", "List files (or folders) under a folder that match a glob." + globs + root,
        {{"path", Prop("string", "Folder to search")},
         {"include", Prop("string", "Glob to include (default **)")},
         {"exclude", Prop("string", "Glob to exclude")},
         {"type", Prop("string", "\"file\" (default), \"dir\" or \"all\"; folders end with '/'")},
         {"max_depth", Prop("integer", "Deepest level to list: 1 = direct children (default 0 = any)")},
         {"limit", Prop("integer", "Most results to show, at most 100 (default 100)")}},
        {"path"});
  }
  if (name == "grep_search") {
    return Function(
        "grep_search",
        "Search files for a POSIX extended regular expression (as grep -E; \\d works too) or a literal "
        "string; prints path:line for each match, at most 100." +
            globs + root,
        {{"path", Prop("string", "File or folder to search")},
         {"pattern", Prop("string", "Pattern to look for")},
         {"include", Prop("string", "Glob of files to search (default **)")},
         {"exclude", Prop("string", "Glob of files to skip")},
         {"return_line_numbers", Prop("boolean", "Print line numbers")},
         {"literal", Prop("boolean", "Take the pattern as plain text (default false)")},
         {"ignore_case", Prop("boolean", "Ignore case (default false)")},
         {"context_lines", Prop("integer", "Lines to show before and after each match (default 0)")}},
        {"path", "pattern"});
  }
  if (name == kExec) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", config.exec_timeout_s);
    return Function(
        kExec, "Run a command with /bin/sh -c; returns stdout and stderr together and the exit code.",
        {{"command", Prop("string", "Shell command")},
         {"timeout",
          Prop("integer", std::string("Seconds before it is killed (default and most: ") + limit + ")")},
         {"max_output_size", Prop("integer", "Most output bytes to return (default and most: " +
                                                 std::to_string(config.max_output_bytes) + ")")}},
        {"command"});
  }
  if (name == "write_file") {
    return Function(
        "write_file", "Create or overwrite a file (and its missing folders)." + root,
        {{"path", Prop("string", "File to write")}, {"content", Prop("string", "The whole content")}},
        {"path", "content"});
  }
  if (name == "edit_file") {
    Json edit = {{"type", "object"},
                 {"properties",
                  {{"old_text", Prop("string", "Exact text to replace; must occur once in the file")},
                   {"new_text", Prop("string", "Replacement text")}}},
                 {"required", Json::array({"old_text", "new_text"})}};
    return Function(
        "edit_file",
        "Replace exact text in a file. Every old_text is looked up in the file as it is now, must be "
        "unique there and must not overlap another edit." +
            root,
        {{"path", Prop("string", "File to edit")},
         {"edits", {{"type", "array"}, {"description", "Replacements to apply"}, {"items", edit}}}},
        {"path", "edits"});
  }
  if (name == "get_datetime") {
    return Function("get_datetime", "The current date and time in UTC.",
                    {{"format", Prop("string", "strftime format (default \"%Y-%m-%dT%H:%M:%SZ\")")}}, {});
  }
  return Function("get_info", "The operating system and the current working directory.", Json::object(), {});
}

}  // namespace

const std::vector<std::string>& BuiltinToolNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const ToolInfo& t : kTools) v.emplace_back(t.name);
    return v;
  }();
  return names;
}

Result<std::vector<std::string>> ParseToolList(const std::string& csv) {
  std::set<std::string> wanted;
  bool all = false;
  for (size_t at = 0; at <= csv.size();) {
    size_t comma = std::min(csv.find(',', at), csv.size());
    std::string name = csv.substr(at, comma - at);
    at = comma + 1;
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name.empty()) continue;
    if (name == "all") {
      all = true;
    } else if (!FindTool(name)) {
      return InvalidArgument("--tools: unknown tool \"" + name + "\"; known tools: " + KnownNames() +
                             ", or all");
    } else {
      wanted.insert(name);
    }
  }
  std::vector<std::string> out;
  for (const ToolInfo& t : kTools) {
    if (wanted.count(t.name) || (all && t.name != std::string(kExec))) out.emplace_back(t.name);
  }
  return out;
}

Json BuiltinToolDefinitions(const BuiltinToolsConfig& config) {
  Json list = Json::array();
  for (const ToolInfo& t : kTools) {
    if (!Enabled(config, t.name)) continue;
    list.push_back({{"display_name", t.display_name},
                    {"tool", t.name},
                    {"type", "builtin"},
                    {"permissions", {{"write", t.write}}},
                    {"definition", Definition(t.name, config)}});
  }
  return list;
}

Result<Json> RunBuiltinTool(const BuiltinToolsConfig& config, const std::string& tool, const Json& params,
                            const std::string& cwd_header) {
  if (!FindTool(tool)) return NotFound("unknown tool \"" + tool + "\"; known tools: " + KnownNames());
  if (!Enabled(config, tool))
    return NotFound("tool \"" + tool + "\" is not enabled on this server (--tools)");
  if (!params.is_object() && !params.is_null()) return InvalidArgument("params: expected an object");
  const Json p = params.is_object() ? params : Json::object();
  try {
    if (tool == "get_datetime") return DatetimeTool(p);
    Place place;
    if (std::string e = MakePlace(config, p, cwd_header, &place); !e.empty()) return ToolError(e);
    if (tool == "read_file") return ReadFileTool(config, place, p);
    if (tool == "file_glob_search") return GlobTool(config, place, p);
    if (tool == "grep_search") return GrepTool(config, place, p);
    if (tool == "write_file") return WriteFileTool(place, p);
    if (tool == "edit_file") return EditFileTool(place, p);
    if (tool == kExec) return ExecTool(config, place, p);
    return InfoTool(place);
  } catch (const std::exception& e) {  // allocation failures and the like: the tool fails, the server lives
    return ToolError(tool + " failed: " + e.what());
  }
}

}  // namespace lazyslot::tools
