// One running MCP server over stdio: the child process (tools/spawn.h, its own process group), JSON-RPC 2.0
// as newline-delimited JSON, and the MCP calls the server makes (initialize + notifications/initialized,
// tools/list, tools/call).
//
//   caller -- Request(method, params) --> write one line to the child's stdin (under a lock)
//   caller <-- the reply with the same id -- reader thread <-- child's stdout, one JSON message a line
//                                           reader thread <-- child's stderr (a bounded tail, logged at
//                                           debug)
//
// Many callers may wait at once: each reply is matched to its request by id; notifications, replies nobody
// waits for any more (a request that timed out) and malformed lines are skipped. A request the server makes
// of us (ping, or anything else) is answered at once (ping: {}; others: "method not found"). The reader
// polls, so a grandchild that inherited the pipes and keeps them open cannot hang it; it notices the child's
// exit by itself and then fails every waiting request with the exit status and the stderr tail.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "tools/mcp/mcp_config.h"

namespace lazyslot::tools::mcp {

using Json = nlohmann::ordered_json;
using StopFn = std::function<bool()>;  // true: give up waiting (the server stops, the client left)

// A tool as tools/list describes it.
struct ToolDef {
  std::string name;  // the server's own name, without the "SERVER_" prefix
  std::string description;
  Json input_schema;  // a JSON Schema object ({} when the server gave none)
};

class Session {
 public:
  // Starts cfg.command with cfg.args, cfg.env over the environment, in cfg.cwd. kNotFound / kIo when the
  // command cannot be started (the message names it). No handshake yet: Initialize does it.
  static Result<std::unique_ptr<Session>> Start(const ServerConfig& cfg);
  ~Session();  // Close()
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // initialize (our protocol version and client info) then notifications/initialized.
  Status Initialize(int timeout_ms, const StopFn& stop);
  // tools/list, every page (nextCursor).
  Result<std::vector<ToolDef>> ListTools(int timeout_ms, const StopFn& stop);
  // tools/call {name, arguments}: the result object ({"content": [...], "isError"?: bool, ...}).
  Result<Json> CallTool(const std::string& tool, const Json& arguments, int timeout_ms, const StopFn& stop);

  // One request, waiting up to timeout_ms for its reply. ok: the reply's "result". Errors:
  // kInvalidArgument: the server answered with a JSON-RPC error (its message); kUnavailable: the server
  // ended or stopped reading, or did not answer in time; kCancelled: `stop` said so.
  Result<Json> Request(const std::string& method, const Json& params, int timeout_ms, const StopFn& stop);

  // False once the child ended, closed its output, stopped reading its input, or Close() ran.
  bool Alive() const;
  // Why it is not alive ("exited with status 1; stderr: ..."); empty while alive.
  std::string DeadReason() const;

  // Stops the reader, closes the child's stdin, lets it end for a moment, then kills its process group
  // (grandchildren too) and reaps it. Idempotent; waiting requests fail at once.
  void Close();

 private:
  Session(const ServerConfig& cfg, pid_t pid, int in, int out, int err);
  void ReadLoop();
  void OnLine(const std::string& line);
  void OnStderr(const char* data, size_t n);
  // Writes one whole line to the child's stdin before `deadline`; kills the session on a partial write.
  Status WriteLine(const std::string& line, std::chrono::steady_clock::time_point deadline,
                   const StopFn& stop);
  void MarkDead(const std::string& reason, bool quiet = false);
  std::string Name() const { return "MCP server '" + name_ + "'"; }

  const std::string name_;
  const pid_t pid_;
  int in_, out_, err_;  // our ends of the child's pipes; in_ under write_mu_
  std::atomic<bool> running_{true};
  std::atomic<int64_t> next_id_{1};
  std::thread reader_;

  std::mutex close_mu_;  // one Close() at a time
  std::mutex write_mu_;
  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::map<int64_t, std::optional<Json>> pending_;  // id -> its reply once read
  bool dead_ = false;
  std::string dead_reason_;
  std::string stderr_tail_;
  bool closed_ = false;
};

}  // namespace lazyslot::tools::mcp
