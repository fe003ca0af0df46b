// One MCP server over stdio (see mcp_session.h): start, the reader thread, requests matched by id, the
// MCP calls, and the teardown that cannot hang on a grandchild holding the pipes.
#include "tools/mcp/mcp_session.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "core/log.h"
#include "tools/spawn.h"
#include "tools/tool_support.h"

namespace lazyslot::tools::mcp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kProtocolVersion = "2024-11-05";
constexpr size_t kMaxLine = 16u << 20;  // a longer message is dropped (up to its newline)
constexpr size_t kStderrTail = 2048;    // bytes of the child's stderr kept for error messages
constexpr std::chrono::milliseconds kTick(50);

// Waits until `pid` ends or `limit` passes; true if it ended.
bool WaitEnded(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (!internal::ChildEnded(pid)) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::string ExitText(pid_t pid) {
  siginfo_t si{};
  if (::waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid != pid) return "ended";
  if (si.si_code == CLD_EXITED) return "exited with status " + std::to_string(si.si_status);
  return "was killed by signal " + std::to_string(si.si_status);
}

}  // namespace

Result<std::unique_ptr<Session>> Session::Start(const ServerConfig& cfg) {
  internal::SpawnSpec spec;
  spec.program = cfg.command;
  spec.search_path = cfg.command.find('/') == std::string::npos;
  spec.argv.push_back(cfg.command);
  spec.argv.insert(spec.argv.end(), cfg.args.begin(), cfg.args.end());
  spec.cwd = cfg.cwd;
  for (const auto& [k, v] : cfg.env) spec.env.emplace_back(k, v);
  spec.stdin_pipe = true;
  Result<internal::Spawned> sp = internal::SpawnInGroup(spec);
  if (!sp.ok()) return Status(sp.status().code(), "MCP server '" + cfg.name + "': " + sp.status().message());
  LS_LOG_INFO("MCP server '%s' started (pid %d): %s", cfg.name.c_str(), static_cast<int>(sp->pid),
              cfg.command.c_str());
  return std::unique_ptr<Session>(new Session(cfg, sp->pid, sp->in, sp->out, sp->err));
}

Session::Session(const ServerConfig& cfg, pid_t pid, int in, int out, int err)
    : name_(cfg.name), pid_(pid), in_(in), out_(out), err_(err) {
  reader_ = std::thread([this] { ReadLoop(); });
}

Session::~Session() { Close(); }

bool Session::Alive() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !dead_;
}

std::string Session::DeadReason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dead_ ? dead_reason_ : std::string();
}

void Session::MarkDead(const std::string& reason, bool quiet) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (dead_) return;
    dead_ = true;
    std::string tail = stderr_tail_;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
    if (tail.size() > 500) tail = "..." + tail.substr(tail.size() - 500);
    dead_reason_ = Name() + " " + reason + (tail.empty() ? "" : "; its stderr ends with: " + tail);
  }
  cv_.notify_all();
  if (!quiet) LS_LOG_WARN("%s %s", Name().c_str(), reason.c_str());
}

void Session::Close() {
  std::lock_guard<std::mutex> closing(close_mu_);
  running_.store(false);
  if (reader_.joinable()) reader_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
  }
  MarkDead("was closed", /*quiet=*/true);
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    if (in_ >= 0) ::close(in_);  // EOF: a well-behaved server ends by itself
    in_ = -1;
  }
  if (!WaitEnded(pid_, std::chrono::milliseconds(300))) {
    ::kill(-pid_, SIGTERM);
    WaitEnded(pid_, std::chrono::milliseconds(300));
  }
  internal::KillGroupAndReap(pid_);  // what is left of the group, grandchildren included
  if (out_ >= 0) ::close(out_);
  if (err_ >= 0) ::close(err_);
  out_ = err_ = -1;
}

void Session::ReadLoop() {
  std::string buf;
  bool skipping = false;  // inside an over-long line: drop bytes up to its newline
  bool out_open = true, err_open = err_ >= 0;
  char chunk[16384];
  auto consume = [&](const char* data, size_t n) {
    buf.append(data, n);
    size_t start = 0, nl;
    while ((nl = buf.find('\n', start)) != std::string::npos) {
      if (!skipping) {
        std::string line = buf.substr(start, nl - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) OnLine(line);
      }
      skipping = false;
      start = nl + 1;
    }
    buf.erase(0, start);
    if (buf.size() > kMaxLine) {
      LS_LOG_WARN("%s: dropped a message longer than %zu bytes", Name().c_str(), kMaxLine);
      buf.clear();
      skipping = true;
    }
  };
  // Reads what `fd` has now (at most 1 MiB, so that a flood cannot keep the loop from its checks); false
  // at EOF or a read error.
  auto drain = [&](int fd, bool is_out) {
    for (int reads = 0; reads < 64; ++reads) {
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n > 0) {
        if (is_out) {
          consume(chunk, static_cast<size_t>(n));
        } else {
          OnStderr(chunk, static_cast<size_t>(n));
        }
        continue;
      }
      if (n < 0 && (errno == EINTR)) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
    return true;
  };
  while (running_.load()) {
    pollfd fds[2] = {{out_open ? out_ : -1, POLLIN, 0}, {err_open ? err_ : -1, POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(kTick.count()));
    if (ready < 0 && errno != EINTR) {
      MarkDead("could not be read (" + internal::ErrnoText(errno) + ")");
      break;
    }
    if (ready > 0) {
      if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) err_open = drain(err_, false);
      if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) out_open = drain(out_, true);
    }
    if (internal::ChildEnded(pid_)) {
      if (out_open) drain(out_, true);  // a reply written just before the end still counts
      if (err_open) drain(err_, false);
      MarkDead(ExitText(pid_));
      break;
    }
    if (!out_open) {
      // Usually because it is ending: give the exit a moment to show, to report its status.
      if (WaitEnded(pid_, std::chrono::milliseconds(300))) {
        if (err_open) drain(err_, false);
        MarkDead(ExitText(pid_));
      } else {
        MarkDead("closed its output");
      }
      break;
    }
  }
}

void Session::OnStderr(const char* data, size_t n) {
  std::string text(data, n);
  LS_LOG_DEBUG("%s stderr: %s", Name().c_str(), text.c_str());
  std::lock_guard<std::mutex> lock(mu_);
  stderr_tail_ += text;
  if (stderr_tail_.size() > kStderrTail) stderr_tail_.erase(0, stderr_tail_.size() - kStderrTail);
}

void Session::OnLine(const std::string& line) {
  Json msg;
  try {
    msg = Json::parse(line);
  } catch (const std::exception&) {
    LS_LOG_DEBUG("%s: skipped a line that is not JSON", Name().c_str());
    return;
  }
  if (!msg.is_object()) return;
  const auto id = msg.find("id");
  const bool has_id = id != msg.end() && !id->is_null();
  if (msg.contains("method")) {
    if (!has_id) return;  // a notification (progress, logging, list_changed): nothing to do
    // A request of the server's: answer it so that it does not wait on us.
    const std::string method = msg["method"].is_string() ? msg["method"].get<std::string>() : "";
    Json reply = {{"jsonrpc", "2.0"}, {"id", *id}};
    if (method == "ping") {
      reply["result"] = Json::object();
    } else {
      reply["error"] = {{"code", -32601}, {"message", "method not found: " + method}};
    }
    WriteLine(reply.dump(), Clock::now() + std::chrono::seconds(1), nullptr).ok();
    return;
  }
  if (!has_id || !id->is_number_integer()) return;  // we only send integer ids
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(id->get<int64_t>());
    if (it == pending_.end()) return;  // its request gave up (timed out or cancelled)
    it->second = std::move(msg);
  }
  cv_.notify_all();
}

Status Session::WriteLine(const std::string& line, Clock::time_point deadline, const StopFn& stop) {
  const std::string data = line + "\n";
  std::lock_guard<std::mutex> lock(write_mu_);
  size_t done = 0;
  while (done < data.size()) {
    if (in_ < 0 || !Alive()) return Unavailable(DeadReason().empty() ? Name() + " is closed" : DeadReason());
    const bool give_up = !running_.load() || Clock::now() >= deadline || (stop && stop());
    if (give_up) {
      if (done > 0) MarkDead("stopped reading its input (a message was cut short)");
      return Unavailable(Name() + " is not reading its input");
    }
    const ssize_t n = ::write(in_, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{in_, POLLOUT, 0};
      ::poll(&p, 1, static_cast<int>(kTick.count()));
      continue;
    }
    const int err = errno;
    // Usually the child has just ended: let the reader report that, with its exit status and stderr.
    if (WaitEnded(pid_, std::chrono::milliseconds(200))) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(300), [this] { return dead_; });
    }
    MarkDead("closed its input (" + internal::ErrnoText(err) + ")");
    return Unavailable(DeadReason());
  }
  return Status::Ok();
}

Result<Json> Session::Request(const std::string& method, const Json& params, int timeout_ms,
                              const StopFn& stop) {
  const int64_t id = next_id_.fetch_add(1);
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  Json req = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) req["params"] = params;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (dead_) return Unavailable(dead_reason_);
    pending_[id];
  }
  auto forget = [this, id] {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.erase(id);
  };
  if (Status w = WriteLine(req.dump(), deadline, stop); !w.ok()) {
    forget();
    return w;
  }
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    auto it = pending_.find(id);
    if (it != pending_.end() && it->second) {
      Json reply = std::move(*it->second);
      pending_.erase(it);
      lock.unlock();
      if (auto e = reply.find("error"); e != reply.end() && !e->is_null()) {
        std::string message = e->is_object() && e->contains("message") && (*e)["message"].is_string()
                                  ? (*e)["message"].get<std::string>()
                                  : e->dump();
        return InvalidArgument(message);
      }
      return reply.contains("result") ? reply["result"] : Json::object();
    }
    if (dead_) {
      pending_.erase(id);
      return Unavailable(dead_reason_);
    }
    if (Clock::now() >= deadline) {
      pending_.erase(id);
      return Unavailable(Name() + " did not answer " + method + " within " + std::to_string(timeout_ms) +
                         " ms (timeout_ms)");
    }
    lock.unlock();
    const bool stopped = stop && stop();
    lock.lock();
    if (stopped) {
      pending_.erase(id);
      return Cancelled(method + " to " + Name() +
                       " was cancelled (the server is stopping or the client left)");
    }
    cv_.wait_for(lock, kTick);
  }
}

Status Session::Initialize(int timeout_ms, const StopFn& stop) {
  const Json params = {{"protocolVersion", kProtocolVersion},
                       {"capabilities", Json::object()},
                       {"clientInfo", {{"name", "lazyslot"}, {"version", "1"}}}};
  Result<Json> r = Request("initialize", params, timeout_ms, stop);
  if (!r.ok()) return Status(r.status().code(), "initialize: " + r.status().message());
  const Json note = {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}};
  return WriteLine(note.dump(), Clock::now() + std::chrono::milliseconds(timeout_ms), stop);
}

Result<std::vector<ToolDef>> Session::ListTools(int timeout_ms, const StopFn& stop) {
  std::vector<ToolDef> out;
  Json params = Json::object();
  for (int page = 0; page < 100; ++page) {
    Result<Json> r = Request("tools/list", params, timeout_ms, stop);
    if (!r.ok()) return Status(r.status().code(), "tools/list: " + r.status().message());
    const Json& res = *r;
    if (!res.is_object() || !res.contains("tools") || !res["tools"].is_array()) {
      return InvalidArgument("tools/list: the answer has no \"tools\" array");
    }
    for (const Json& t : res["tools"]) {
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) continue;
      ToolDef d;
      d.name = t["name"].get<std::string>();
      if (t.contains("description") && t["description"].is_string()) d.description = t["description"];
      d.input_schema =
          t.contains("inputSchema") && t["inputSchema"].is_object() ? t["inputSchema"] : Json::object();
      out.push_back(std::move(d));
    }
    auto cursor = res.find("nextCursor");
    if (cursor == res.end() || !cursor->is_string() || cursor->get<std::string>().empty()) break;
    params = {{"cursor", *cursor}};
  }
  return out;
}

Result<Json> Session::CallTool(const std::string& tool, const Json& arguments, int timeout_ms,
                               const StopFn& stop) {
  return Request("tools/call", {{"name", tool}, {"arguments", arguments}}, timeout_ms, stop);
}

}  // namespace lazyslot::tools::mcp
