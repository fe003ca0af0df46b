// Built-in agent tools (llama-server's --tools: read_file, file_glob_search, grep_search, exec_shell_command,
// write_file, edit_file, get_datetime, get_info) with llama-server's request and result shapes, but every
// file path confined to one folder (--tools-dir). The tools layer: it needs only core, no HTTP; the routes
// (GET/POST /tools) are the server layer's (server/admin/routes_tools.cpp).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace lazyslot::tools {

using Json = nlohmann::ordered_json;  // the same type as server's Json (server/generation/openai_params.h)

struct BuiltinToolsConfig {
  std::vector<std::string> enabled;   // tool names, as ParseToolList returns them
  std::filesystem::path root;         // every file path must resolve to this folder or inside it
  double exec_timeout_s = 60;         // exec_shell_command wall-clock limit (a request may ask for less)
  size_t max_output_bytes = 1 << 20;  // cap on read_file text, glob/grep listings and command output
};

// Every built-in tool name, in llama-server's order.
const std::vector<std::string>& BuiltinToolNames();

// "read_file,grep_search" or "all" (blanks around names ignored, duplicates dropped) -> names in
// BuiltinToolNames() order. "all" is every tool except exec_shell_command: a shell can read and write
// anything the server can, so it would break the folder confinement; it is enabled only when named.
// An unknown name is kInvalidArgument naming the known ones.
Result<std::vector<std::string>> ParseToolList(const std::string& csv);

// GET /tools: one entry per enabled tool, as llama-server lists them:
// {"display_name", "tool", "type": "builtin", "permissions": {"write": bool}, "definition": {OpenAI tool}}.
Json BuiltinToolDefinitions(const BuiltinToolsConfig& config);

// POST /tools, not streamed. The working directory is `cwd_header` (x-tool-cwd) when not empty, else
// params["cwd"], else the root; a relative one is taken from the root, and it must be a folder inside it.
// Relative paths in params are taken from that directory. The value is the tool's result in llama-server's
// shape ({"plain_text_response": ...}, {"result": ...}, ...) or {"error": "..."} for a failure of the tool
// itself (missing file, a path outside the folder, a non-unique old_text...), which the route sends with
// HTTP 200 as llama-server does. A Status error means the request itself is wrong: kNotFound for an
// unknown or disabled tool, kInvalidArgument for params that are not an object or miss a required field.
Result<Json> RunBuiltinTool(const BuiltinToolsConfig& config, const std::string& tool, const Json& params,
                            const std::string& cwd_header);

// exec_shell_command with "stream": true. Calls `on_chunk` with output pieces as they arrive (whole UTF-8
// characters), then with "\n[exit code: N]" and any notes; returns the final event: {"done": true}, or
// {"done": true, "error": "..."} when the command could not run or was stopped. `on_chunk` returning false
// (the client went away) kills the command. Requires exec_shell_command to be enabled.
Json RunShellStreaming(const BuiltinToolsConfig& config, const Json& params, const std::string& cwd_header,
                       const std::function<bool(const std::string& chunk)>& on_chunk);

}  // namespace lazyslot::tools
