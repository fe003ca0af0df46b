// The server under soak: a `lazyslot serve` child on a free loopback port, its health, liveness, resident
// memory (/proc/<pid>/status) and the gauges the soak needs from GET /metrics and GET /slots.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lazyslot::soak {

struct ProcMemory {
  uint64_t rss = 0, rss_anon = 0, rss_file = 0;  // bytes (VmRSS, RssAnon, RssFile)
  bool ok = false;
};

struct SlotsState {
  int n_slots = 0, n_busy = 0;
  uint64_t committed_bytes = 0;  // sum over slots
  int64_t n_tokens = 0;          // KV cells in use over all slots
  bool ok = false;
  std::string error;
};

class ServerChild {
 public:
  // Forks `binary serve --host 127.0.0.1 --port <free> args...`, stdout+stderr to `log_path`, and waits up
  // to `timeout_s` for /health 200. Null (with `error` set to why and the log's tail) if it never does.
  static std::unique_ptr<ServerChild> Start(const std::string& binary, const std::vector<std::string>& args,
                                            const std::string& log_path, double timeout_s,
                                            std::string* error);
  ~ServerChild();

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }

  // False once the child has exited; how it ended is then in ExitText(). Safe from any thread.
  bool Alive();
  std::string ExitText() const;

  ProcMemory Memory() const;
  // GET /metrics as name{labels} -> value (empty map on failure).
  std::map<std::string, double> Metrics() const;
  SlotsState Slots() const;
  // SIGTERM, up to 20 s, then SIGKILL. Returns the exit text.
  std::string Stop();

 private:
  ServerChild() = default;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
  mutable std::mutex mu_;  // guards the waitpid state
  bool exited_ = false;
  int wstatus_ = 0;
};

// Last `max_bytes` of a file (for error messages with the server log).
std::string FileTail(const std::string& path, size_t max_bytes);

}  // namespace lazyslot::soak
