// Starts, watches and stops the `lazyslot serve` child of the soak driver (see soak_server.h).
#include "soak_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "loopback.h"

#include "soak_http.h"

namespace lazyslot::soak {
namespace {

std::string DescribeWait(int wstatus) {
  if (WIFEXITED(wstatus)) return "exited with status " + std::to_string(WEXITSTATUS(wstatus));
  if (WIFSIGNALED(wstatus)) {
    return "killed by signal " + std::to_string(WTERMSIG(wstatus)) + " (" + strsignal(WTERMSIG(wstatus)) +
           ")";
  }
  return "ended (wait status " + std::to_string(wstatus) + ")";
}

}  // namespace

std::string FileTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > max_bytes ? s.substr(s.size() - max_bytes) : s;
}

std::unique_ptr<ServerChild> ServerChild::Start(const std::string& binary,
                                                const std::vector<std::string>& args,
                                                const std::string& log_path, double timeout_s,
                                                std::string* error) {
  std::unique_ptr<ServerChild> c(new ServerChild());
  c->log_path_ = log_path;
  for (int attempt = 0; attempt < 3; ++attempt) {  // another process may take the free port first
    c->port_ = testing::FreePort();
    c->exited_ = false;
    std::vector<std::string> argv = {binary,      "serve",  "--host",
                                     "127.0.0.1", "--port", std::to_string(c->port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    c->pid_ = fork();
    if (c->pid_ == 0) {
      if (log_fd >= 0) {
        dup2(log_fd, 1);
        dup2(log_fd, 2);
      }
      std::vector<char*> cargv;
      for (std::string& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    if (log_fd >= 0) close(log_fd);
    if (c->pid_ < 0) {
      *error = "fork failed";
      return nullptr;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline && c->Alive()) {
      Exchange ex;
      ex.port = c->port_;
      ex.path = "/health";
      ex.timeout_s = 5;
      if (Send(ex).status == 200) return c;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (c->Alive()) break;  // alive but never healthy: no retry
  }
  *error = "lazyslot serve did not become healthy (" +
           (c->Alive() ? std::string("still running") : c->ExitText()) + "); log tail:\n" +
           FileTail(log_path, 4000);
  return nullptr;
}

ServerChild::~ServerChild() { Stop(); }

bool ServerChild::Alive() {
  std::lock_guard<std::mutex> lock(mu_);
  if (pid_ <= 0 || exited_) return false;
  int ws = 0;
  if (waitpid(pid_, &ws, WNOHANG) != pid_) return true;
  exited_ = true;
  wstatus_ = ws;
  return false;
}

std::string ServerChild::ExitText() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exited_ ? DescribeWait(wstatus_) : "running";
}

ProcMemory ServerChild::Memory() const {
  ProcMemory m;
  FILE* f = std::fopen(("/proc/" + std::to_string(pid_) + "/status").c_str(), "r");
  if (!f) return m;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long kb = 0;
    if (std::sscanf(line, "VmRSS: %llu kB", &kb) == 1) {
      m.rss = kb * 1024;
      m.ok = true;
    } else if (std::sscanf(line, "RssAnon: %llu kB", &kb) == 1) {
      m.rss_anon = kb * 1024;
    } else if (std::sscanf(line, "RssFile: %llu kB", &kb) == 1) {
      m.rss_file = kb * 1024;
    }
  }
  std::fclose(f);
  return m;
}

std::map<std::string, double> ServerChild::Metrics() const {
  Exchange ex;
  ex.port = port_;
  ex.path = "/metrics";
  ex.timeout_s = 30;
  const Reply r = Send(ex);
  std::map<std::string, double> out;
  if (r.status != 200) return out;
  std::istringstream in(r.body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    out[line.substr(0, sp)] = std::strtod(line.c_str() + sp + 1, nullptr);
  }
  return out;
}

SlotsState ServerChild::Slots() const {
  Exchange ex;
  ex.port = port_;
  ex.path = "/slots";
  ex.timeout_s = 30;
  const Reply r = Send(ex);
  SlotsState s;
  if (r.status != 200) {
    s.error = r.status ? "GET /slots: HTTP " + std::to_string(r.status) : std::string(FailureName(r.failure));
    return s;
  }
  const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (!j.is_array()) {
    s.error = "GET /slots: not a JSON list";
    return s;
  }
  for (const auto& slot : j) {
    ++s.n_slots;
    if (slot.value("is_processing", false)) ++s.n_busy;
    s.committed_bytes += slot.value("committed_bytes", uint64_t{0});
    s.n_tokens += slot.value("n_tokens", int64_t{0});
  }
  s.ok = true;
  return s;
}

std::string ServerChild::Stop() {
  if (pid_ <= 0) return "not started";
  if (!Alive()) return ExitText();
  kill(pid_, SIGTERM);
  for (int i = 0; i < 400; ++i) {
    if (!Alive()) return ExitText();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid_, SIGKILL);
  std::lock_guard<std::mutex> lock(mu_);
  int ws = 0;
  waitpid(pid_, &ws, 0);
  exited_ = true;
  wstatus_ = ws;
  return "did not stop on SIGTERM within 20 s; killed";
}

}  // namespace lazyslot::soak
