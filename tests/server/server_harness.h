// Test harness for the server integration tests: starts the real `lazyslot serve` on a free loopback port,
// waits for /health, and talks to it with the `curl` command line (and raw sockets for disconnects).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "loopback.h"
#include "test_util.h"

namespace lazyslot::testing {

using nlohmann::json;

// A scratch directory for this test process (bodies and outputs of curl calls, server logs).
inline const std::string& ScratchDir() {
  static const std::string dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lazyslot-server-test-XXXXXX").string();
    const char* d = mkdtemp(tmpl.data());
    return std::string(d ? d : "/tmp");
  }();
  return dir;
}

inline std::string NewScratchFile(const std::string& stem) {
  static std::atomic<int> n{0};
  return ScratchDir() + "/" + stem + "-" + std::to_string(n.fetch_add(1));
}

// Runs a shell command, returning its exit status and appending its output (stdout and stderr) to *out.
inline int RunShell(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// True when `name` is a command on PATH (node, npm, ...).
inline bool HaveCommand(const std::string& name) {
  std::string cmd = "command -v ";
  cmd.append(name).append(" >/dev/null 2>&1");
  return std::system(cmd.c_str()) == 0;
}

// The response headers of one request (curl -D -), lower-cased names and values, e.g.
// "access-control-allow-origin: x".
inline std::string Headers(const std::string& method, const std::string& url,
                           const std::vector<std::string>& headers, const std::string& body = "") {
  // Built with append() only: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
  std::string cmd = "curl -s -o /dev/null -D - -X ";
  cmd.append(method);
  for (const std::string& h : headers) cmd.append(" -H ").append(ShellQuote(h));
  if (!body.empty()) cmd.append(" -H 'Content-Type: application/json' --data-binary ").append(ShellQuote(body));
  cmd.append(" ").append(ShellQuote(url));
  std::string out;
  RunShell(cmd, &out);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct HttpResult {
  int status = 0;  // 0: curl could not connect / failed
  std::string body;
  std::string headers;  // the response's header lines, as received
  json Json() const {
    json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
    return j;
  }
  // The value of header `name` (any case), "" if absent.
  std::string Header(const std::string& name) const {
    auto lower = [](std::string x) {
      for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return x;
    };
    std::istringstream in(headers);
    std::string line;
    while (std::getline(in, line)) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos || lower(line.substr(0, colon)) != lower(name)) continue;
      std::string v = line.substr(colon + 1);
      while (!v.empty() && (v.back() == '\r' || v.back() == ' ')) v.pop_back();
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      return v;
    }
    return "";
  }
};

// One HTTP request with curl. `body` empty: no body. Thread-safe (unique scratch files per call).
inline HttpResult Curl(const std::string& method, const std::string& url, const std::string& body = "",
                       const std::vector<std::string>& headers = {}, int max_time_s = 300) {
  const std::string out = NewScratchFile("out");
  const std::string head = NewScratchFile("headers");
  // Built with append() only: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
  std::string cmd = "curl -sS -N -o ";
  cmd.append(ShellQuote(out)).append(" -D ").append(ShellQuote(head));
  cmd.append(" -w '%{http_code}' --max-time ").append(std::to_string(max_time_s));
  cmd.append(" -X ").append(method);
  for (const std::string& h : headers) cmd.append(" -H ").append(ShellQuote(h));
  if (!body.empty()) {
    const std::string in = NewScratchFile("body");
    std::ofstream(in, std::ios::binary) << body;
    cmd.append(" -H 'Content-Type: application/json' --data-binary @").append(ShellQuote(in));
  }
  cmd.append(" ").append(ShellQuote(url)).append(" 2>/dev/null");
  HttpResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[64] = {0};
  const size_t n = fread(buf, 1, sizeof(buf) - 1, p);
  buf[n] = 0;
  pclose(p);
  r.status = std::atoi(buf);
  r.body = ReadAll(out);
  r.headers = ReadAll(head);
  return r;
}

// One sample of a Prometheus text exposition, e.g. Metric(body, "lazyslot:kv_committed_bytes").
inline double Metric(const std::string& body, const std::string& name) {
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::strtod(line.c_str() + name.size() + 1, nullptr);
  }
  ADD_FAILURE() << "metric " << name << " missing";
  return -1;
}

// The `data:` payloads of an SSE body, in order ("[DONE]" included as is).
inline std::vector<std::string> SseData(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
  }
  return out;
}

// A running `lazyslot serve`; stopped with SIGTERM (then SIGKILL) when destroyed.
class ServerProcess {
 public:
  // Starts serve with `args` (model flags and others) on a free port and waits up to 120 s for /health 200.
  static std::unique_ptr<ServerProcess> Start(const std::vector<std::string>& args, std::string* error) {
    return StartWithEnv(args, {}, error);
  }
  // As Start, with extra environment variables for the server process.
  static std::unique_ptr<ServerProcess> StartWithEnv(
      const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env,
      std::string* error) {
    std::unique_ptr<ServerProcess> sp;
    for (int attempt = 0; attempt < 3; ++attempt) {  // another process may take the free port first
      sp = Launch(args, env);
      if (sp->WaitHealthy(std::chrono::seconds(120))) return sp;
      if (sp->pid_ > 0) break;  // alive but never healthy: do not retry
    }
    if (error) *error = "lazyslot serve did not become healthy; log:\n" + sp->Log();
    return nullptr;
  }

  // Forks `lazyslot serve --host 127.0.0.1 --port <free> args...` and returns at once.
  static std::unique_ptr<ServerProcess> Launch(
      const std::vector<std::string>& args,
      const std::vector<std::pair<std::string, std::string>>& env = {}) {
    auto sp = std::unique_ptr<ServerProcess>(new ServerProcess());
    sp->port_ = FreePort();
    sp->log_path_ = NewScratchFile("server-log");
    std::vector<std::string> argv = {LAZYSLOT_BINARY, "serve",  "--host",
                                     "127.0.0.1",     "--port", std::to_string(sp->port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    sp->pid_ = fork();
    if (sp->pid_ == 0) {
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      FILE* log = std::fopen(sp->log_path_.c_str(), "w");
      if (log) {
        dup2(fileno(log), 1);
        dup2(fileno(log), 2);
      }
      std::vector<char*> cargv;
      for (std::string& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    return sp;
  }

  // Polls /health every 20 ms until 200 (true), the process exits or `timeout` passes (false).
  bool WaitHealthy(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!Running()) return false;
      HttpResult h = Curl("GET", Url("/health"), "", {}, 5);
      health_codes_.push_back(h.status);
      if (h.status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // False once the process has exited (its status then in exit_status()).
  bool Running() {
    if (pid_ <= 0) return false;
    int wstatus = 0;
    if (waitpid(pid_, &wstatus, WNOHANG) != pid_) return true;
    exit_status_ = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    pid_ = -1;
    return false;
  }
  int exit_status() const { return exit_status_; }

  ~ServerProcess() { Stop(); }

  // SIGTERM and wait (10 s), then SIGKILL. Returns the exit status (-1 if killed or not running).
  int Stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int wstatus = 0;
    for (int i = 0; i < 200; ++i) {
      if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &wstatus, 0);
    pid_ = -1;
    return -1;
  }

  // Sends `sig` to the server process (e.g. SIGTERM to start its drain); Running() tells when it exited.
  void Signal(int sig) const {
    if (pid_ > 0) kill(pid_, sig);
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::string Log() const { return ReadAll(log_path_); }
  const std::vector<int>& health_codes() const { return health_codes_; }

  HttpResult Get(const std::string& path, const std::vector<std::string>& headers = {}) const {
    return Curl("GET", Url(path), "", headers);
  }
  HttpResult Post(const std::string& path, const json& body,
                  const std::vector<std::string>& headers = {}) const {
    return Curl("POST", Url(path), body.dump(), headers);
  }
  HttpResult PostRaw(const std::string& path, const std::string& body,
                     const std::vector<std::string>& headers = {}) const {
    return Curl("POST", Url(path), body, headers);
  }

 private:
  ServerProcess() = default;
  pid_t pid_ = -1;
  int exit_status_ = -1;
  int port_ = 0;
  std::string log_path_;
  std::vector<int> health_codes_;
};

// Starts a server or fails the current test with its log.
#define START_SERVER(var, ...)                                                     \
  std::string var##_error;                                                         \
  auto var = ::lazyslot::testing::ServerProcess::Start(__VA_ARGS__, &var##_error); \
  ASSERT_NE(var, nullptr) << var##_error

// A raw HTTP/1.1 request on a socket, for tests that must hang up mid-response. Returns the fd (or -1).
inline int OpenRawRequest(int port, const std::string& path, const std::string& body) {
  const int s = ConnectLoopback(port);
  if (s < 0) return -1;
  const std::string req = "POST " + path +
                          " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  if (send(s, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(s);
    return -1;
  }
  return s;
}

// Reads from `fd` until `needle` has appeared or `timeout` passed; returns what was read.
inline std::string ReadUntil(int fd, const std::string& needle, std::chrono::milliseconds timeout) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  timeval tv{0, 100 * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[4096];
  while (got.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n > 0) got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// Reference file /work/shared/reference/server-greedy/<name>.llamacpp-greedy.json.
inline json LoadJsonFile(const std::string& path) {
  return json::parse(ReadAll(path), nullptr, /*allow_exceptions=*/false);
}

// Greedy continuations of ../shared/reference/<ref_name>.json's "greedy" prompts through a server started on
// `model` (/completion, token ids in and out) equal llama.cpp's up to the first near tie (margin < 0.05: a
// correct engine may choose differently from there on).
inline void ExpectServerGreedyMatchesReference(const char* model, const std::string& ref_name) {
  REQUIRE_SHARED_FILE(model);
  REQUIRE_SHARED_FILE("reference/" + ref_name + ".json");
  const json ref = LoadJsonFile(SharedPath("reference/" + ref_name + ".json"));
  START_SERVER(srv, {"-m", SharedPath(model), "-np", "1", "-c", "1024"});
  ASSERT_TRUE(ref.contains("greedy"));
  for (const json& g : ref["greedy"]) {
    const auto expect = g["greedy"].get<std::vector<int>>();
    const auto margin = g["margin"].get<std::vector<double>>();
    HttpResult r = srv->Post("/completion", {{"prompt", g["prompt"]},
                                             {"n_predict", expect.size()},
                                             {"temperature", 0},
                                             {"ignore_eos", true},  // the references decode past EOS
                                             {"return_tokens", true},
                                             {"cache_prompt", false}});
    ASSERT_EQ(r.status, 200) << r.body;
    const auto got = r.Json()["tokens"].get<std::vector<int>>();
    ASSERT_EQ(got.size(), expect.size()) << r.body;
    for (size_t i = 0; i < expect.size(); ++i) {
      if (margin[i] < 0.05) break;
      ASSERT_EQ(got[i], expect[i]) << ref_name << " step " << i << " (prompt of " << g["prompt"].size() << ")";
    }
  }
}

}  // namespace lazyslot::testing
