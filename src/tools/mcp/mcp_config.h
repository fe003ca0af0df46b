// MCP server definitions (llama-server's --mcp-servers-config FILE and --mcp-servers-json JSON), in the
// shape Claude Desktop and Cursor use:
//   {"mcpServers": {"NAME": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "V"}, "cwd": "/dir",
//                            "timeout_ms": 30000}}}
// Only local servers over stdio: the command is started by the server, never chosen by a request.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace lazyslot::tools::mcp {

struct ServerConfig {
  std::string name;     // the key under mcpServers; tools are listed as NAME_TOOL
  std::string command;  // a path, or a program found on PATH
  std::vector<std::string> args;
  std::map<std::string, std::string> env;  // set over the server's own environment
  std::string cwd;                         // empty: the server's working directory
  // How long one tools/call may take (initialize and tools/list at start: this or 10 s, the longer).
  int timeout_ms = 30000;
};

// Parses one document. Errors (kInvalidArgument, message without the flag's name, which the caller adds):
// not JSON, no "mcpServers" object, a server that is not an object, a missing or empty "command", a field
// of the wrong type, a non-positive timeout_ms, a "url" or a "type" other than "stdio" (remote servers are
// not supported), an empty name or one with characters other than letters, digits, '-' and '_'.
// Unknown fields are ignored (other clients' settings such as "disabled" or "autoApprove").
Result<std::vector<ServerConfig>> ParseMcpServers(const std::string& json_text);

}  // namespace lazyslot::tools::mcp
