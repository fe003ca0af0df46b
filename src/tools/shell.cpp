// exec_shell_command (see shell.h): the request's limits, the process runner (a process group, a pipe
// polled against the deadline, output passed on in whole UTF-8 characters up to a cap, every process
// killed and the shell reaped at the end), and RunShellStreaming.
#include "tools/shell.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>

#include "tools/spawn.h"
#include "tools/tool_support.h"

namespace lazyslot::tools {
namespace internal {
namespace {

using Clock = std::chrono::steady_clock;

struct ExecRequest {
  std::string command;
  double timeout_s = 0;
  size_t max_output = 0;
};

Status ParseExec(const BuiltinToolsConfig& config, const Json& p, ExecRequest* req) {
  long long timeout = 0, max_output = 0;
  LS_RETURN_IF_ERROR(Read(p, "command", &req->command, true));
  LS_RETURN_IF_ERROR(Read(p, "timeout", &timeout));
  LS_RETURN_IF_ERROR(Read(p, "max_output_size", &max_output));
  req->timeout_s = timeout > 0 ? std::min<double>(timeout, config.exec_timeout_s) : config.exec_timeout_s;
  req->max_output =
      max_output > 0 ? std::min<size_t>(max_output, config.max_output_bytes) : config.max_output_bytes;
  return Status();
}

struct ExecOutcome {
  std::string spawn_error;  // set when the shell never ran
  int exit_code = -1;       // 128 + signal for a killed shell, as shells report it
  bool timed_out = false, stopped = false, truncated = false;
};

// Passes output on in whole UTF-8 characters, up to `cap` bytes; the rest is read and dropped.
struct OutputSink {
  OutputSink(const std::function<bool(const std::string&)>& f, size_t c) : fn(f), cap(c) {}
  const std::function<bool(const std::string&)>& fn;
  size_t cap, sent = 0;
  bool truncated = false;
  std::string pending;

  bool Add(const char* data, size_t n) {
    if (truncated) return true;
    pending.append(data, n);
    size_t take = Utf8Complete(pending);
    if (take > cap - sent) {
      take = Utf8Boundary(pending, cap - sent);
      truncated = true;
    }
    const std::string piece = pending.substr(0, take);
    pending.erase(0, truncated ? pending.size() : take);
    sent += take;
    return piece.empty() || Call(piece);
  }
  bool Flush() {
    const std::string rest = pending.substr(0, truncated ? 0 : cap - sent);
    pending.clear();
    return rest.empty() || Call(rest);
  }
  bool Call(const std::string& piece) {
    try {
      return fn(piece);
    } catch (...) {
      return false;  // a throwing consumer stops the command like a gone client
    }
  }
};

// Runs `/bin/sh -c command` in `cwd` in its own process group, stdin /dev/null, stdout and stderr merged
// into one pipe. The shell is NOT confined to the tools folder (it can read and write anything the server
// can, and sees the server's environment): that is why "all" leaves this tool out. When the shell ends, the
// rest of its process group (background jobs) is killed; on timeout or a stop, the whole group is.
ExecOutcome RunShell(const std::string& command, const fs::path& cwd, double timeout_s, size_t cap,
                     const std::function<bool(const std::string&)>& on_chunk) {
  ExecOutcome out;
  SpawnSpec spec;
  spec.program = "/bin/sh";
  spec.argv = {"sh", "-c", command};
  spec.cwd = cwd.string();
  spec.stderr_to_stdout = true;
  Result<Spawned> spawned = SpawnInGroup(spec);
  if (!spawned.ok()) {
    out.spawn_error = spawned.status().message();
    return out;
  }
  const pid_t pid = spawned->pid;
  Fd rfd(spawned->out);  // non-blocking

  OutputSink sink{on_chunk, cap};
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::clamp(timeout_s, 0.0, 1e7)));
  auto grace = Clock::time_point::max();  // after the shell ended: how long to drain the pipe
  bool eof = false, ended = false;
  char buf[16384];
  while (true) {
    if (!ended && ChildEnded(pid)) {
      ended = true;
      ::kill(-pid, SIGKILL);  // leftover background jobs
      grace = Clock::now() + std::chrono::seconds(1);
    }
    const auto now = Clock::now();
    if (ended && (eof || now >= grace)) break;
    if (!ended && now >= deadline) {
      out.timed_out = true;
      break;
    }
    const auto until = std::min(ended ? grace : deadline, now + std::chrono::milliseconds(50));
    const int wait_ms =
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count() + 1);
    pollfd pfd{rfd.get(), POLLIN, 0};
    const int ready = ::poll(eof ? nullptr : &pfd, eof ? 0 : 1, wait_ms);
    if (ready <= 0 || eof) continue;
    const ssize_t n = ::read(rfd.get(), buf, sizeof buf);  // one read per turn keeps the clock checked
    if (n > 0 && !sink.Add(buf, n)) {
      out.stopped = true;
      break;
    }
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) eof = true;
  }
  out.exit_code = KillGroupAndReap(pid);
  if (!out.stopped && !sink.Flush()) out.stopped = true;
  out.truncated = sink.truncated;
  return out;
}

std::string ExecTail(const ExecOutcome& o, const ExecRequest& req) {
  std::string tail;
  if (o.truncated) tail += "\n[output truncated at " + std::to_string(req.max_output) + " bytes]";
  tail += "\n[exit code: " + std::to_string(o.exit_code) + "]";
  if (o.timed_out) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", req.timeout_s);
    tail += std::string(" [timed out: killed after the ") + limit + " s limit]";
  }
  return tail;
}

}  // namespace

Result<Json> ExecTool(const BuiltinToolsConfig& config, const Place& place, const Json& p) {
  ExecRequest req;
  LS_RETURN_IF_ERROR(ParseExec(config, p, &req));
  std::string text;
  const ExecOutcome o =
      RunShell(req.command, place.cwd, req.timeout_s, req.max_output, [&text](const std::string& piece) {
        text += piece;
        return true;
      });
  if (!o.spawn_error.empty()) return ToolError(o.spawn_error);
  return Json{{"plain_text_response", text + ExecTail(o, req)}};
}

}  // namespace internal

using internal::Enabled;
using internal::ExecOutcome;
using internal::ExecRequest;
using internal::ExecTail;
using internal::kExec;
using internal::MakePlace;
using internal::ParseExec;
using internal::Place;
using internal::RunShell;

namespace {

Json Done(const std::string& error) { return Json{{"done", true}, {"error", error}}; }

}  // namespace

Json RunShellStreaming(const BuiltinToolsConfig& config, const Json& params, const std::string& cwd_header,
                       const std::function<bool(const std::string& chunk)>& on_chunk) {
  try {
    if (!Enabled(config, kExec))
      return Done("tool \"exec_shell_command\" is not enabled on this server (--tools)");
    if (!params.is_object()) return Done("params: expected an object");
    Place place;
    if (std::string e = MakePlace(config, params, cwd_header, &place); !e.empty()) return Done(e);
    ExecRequest req;
    if (Status st = ParseExec(config, params, &req); !st.ok()) return Done(st.message());
    const ExecOutcome o = RunShell(req.command, place.cwd, req.timeout_s, req.max_output, on_chunk);
    if (!o.spawn_error.empty()) return Done(o.spawn_error);
    if (o.stopped) return Done("stopped: the client went away and the command was killed");
    try {
      on_chunk(ExecTail(o, req));
    } catch (...) {
    }
    return Json{{"done", true}};
  } catch (const std::exception& e) {
    return Done(std::string("exec_shell_command failed: ") + e.what());
  }
}

}  // namespace lazyslot::tools
