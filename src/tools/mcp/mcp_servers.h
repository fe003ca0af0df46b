// The configured MCP servers (--mcp-servers-config / --mcp-servers-json) as tools of GET/POST /tools:
// each server's tools are listed as "SERVER_TOOL" in the shape of the built-in tools, and a call goes to
// the server's tools/call. One session per server (mcp_session.h), started in the background at start-up
// (the warm-up lists the tools), kept running, and started again on the next call after it ended or
// crashed (a server that cannot start is retried at most every 2 s). A server that fails never stops the
// others or the HTTP server: its calls answer {"error": why}.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tools/mcp/mcp_config.h"
#include "tools/mcp/mcp_session.h"

namespace lazyslot::tools::mcp {

class McpServers {
 public:
  explicit McpServers(std::vector<ServerConfig> configs);
  ~McpServers();  // Shutdown(), then every server closed (its process group killed)
  McpServers(const McpServers&) = delete;
  McpServers& operator=(const McpServers&) = delete;

  // Starts each server on a thread of its own: start, initialize, tools/list. Returns at once.
  void StartWarmup();
  // Calls in flight and waits return at once (kCancelled); no server is started any more.
  void Shutdown();

  // GET /tools entries, one per MCP tool, in config order:
  //   {"display_name": "S_T", "tool": "S_T", "type": "mcp", "permissions": {"write": false},
  //    "definition": {"type": "function", "function": {"name": "S_T", "description", "parameters": {...}}}}
  // Names in `taken` (the built-in tools) and a name an earlier server already gave are left out. Waits for
  // the warm-up, at most 10 s (servers still starting then are left out).
  Json Definitions(const std::vector<std::string>& taken, const StopFn& stop);

  // Whether POST /tools {"tool": full_name} is for an MCP server: a listed tool, or "SERVER_..." of a
  // server whose tools are not known because it could not start.
  bool Owns(const std::string& full_name, const StopFn& stop);

  // POST /tools for an MCP tool: the server's answer in llama-server's shape, sent with HTTP 200:
  // {"plain_text_response": the text parts joined by newlines}, or {"error": message} when the tool
  // reported an error (isError, or a JSON-RPC error), the server could not start, ended, or did not answer
  // within its timeout_ms. kNotFound: no such MCP tool. `arguments` is passed as tools/call's arguments.
  Result<Json> Call(const std::string& full_name, const Json& arguments, const StopFn& stop);

 private:
  struct Entry {
    ServerConfig cfg;
    std::mutex start_mu;  // one start at a time; callers wait for it
    // Under McpServers::mu_:
    std::shared_ptr<Session> session;
    std::vector<ToolDef> tools;
    bool listed = false;  // `tools` came from a tools/list
    std::string error;    // why the last start failed
    std::chrono::steady_clock::time_point retry_after{};
  };
  struct Found {
    Entry* entry = nullptr;
    std::string tool;  // the server's own tool name
  };

  // The running session of `e`, started (and its tools listed) when there is none or it ended.
  Result<std::shared_ptr<Session>> SessionOf(Entry& e, const StopFn& stop);
  Found Find(const std::string& full_name);  // under mu_; the first server that lists it
  void WaitWarm(const StopFn& stop);
  StopFn With(const StopFn& stop);

  std::vector<std::unique_ptr<Entry>> entries_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable warm_cv_;
  size_t warm_left_ = 0;  // under mu_: servers still in their warm-up
  std::vector<std::thread> warmers_;
};

}  // namespace lazyslot::tools::mcp
