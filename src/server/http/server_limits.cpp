// Connection cap task queue, request deadlines and API-key files (see server_limits.h).
#include "server/http/server_limits.h"

#include <sys/socket.h>

#include <fstream>
#include <sstream>

#include "server/http/connection.h"

namespace lazyslot::server {
namespace {

thread_local bool t_reject_lane = false;

}  // namespace

ConnectionQueue::ConnectionQueue(size_t max_connections, std::atomic<uint64_t>* rejected)
    : max_connections_(max_connections == 0 ? 1 : max_connections), rejected_(rejected) {
  threads_.reserve(max_connections_ + kRejectLaneThreads);
  for (size_t i = 0; i < max_connections_; ++i) threads_.emplace_back([this] { Worker(false); });
  for (int i = 0; i < kRejectLaneThreads; ++i) threads_.emplace_back([this] { Worker(true); });
}

ConnectionQueue::~ConnectionQueue() { shutdown(); }

void ConnectionQueue::enqueue(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_use_ < max_connections_) {
      ++in_use_;
      jobs_.push_back(std::move(fn));
    } else {
      rejects_.push_back(std::move(fn));
      if (rejected_) rejected_->fetch_add(1);
    }
  }
  cv_.notify_all();
}

void ConnectionQueue::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_ && threads_.empty()) return;
    shutdown_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void ConnectionQueue::Worker(bool reject_lane) {
  t_reject_lane = reject_lane;
  std::deque<std::function<void()>>& mine = reject_lane ? rejects_ : jobs_;
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !mine.empty() || shutdown_; });
      // Queued connections are still served at shutdown: each task must run to close its socket.
      if (mine.empty()) return;
      fn = std::move(mine.front());
      mine.pop_front();
    }
    fn();
    if (!reject_lane) {
      std::lock_guard<std::mutex> lock(mu_);
      --in_use_;
    }
  }
}

bool RejectingThisConnection() { return t_reject_lane; }

void CloseConnectionAfterResponse(const httplib::Request& req) {
  // A read shut down returns end of file, which ends httplib's keep-alive loop after this response.
  const int fd = FindConnectionSocket(req);
  if (fd >= 0) ::shutdown(fd, SHUT_RD);
}

Deadline::Deadline(double seconds)
    : seconds_(seconds),
      at_(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                 std::chrono::duration<double>(seconds > 0 ? seconds : 0))) {}

bool Deadline::Expired() const { return seconds_ > 0 && std::chrono::steady_clock::now() >= at_; }

std::string Deadline::Message() const {
  std::ostringstream s;
  s << "the request ran longer than --request-timeout (" << seconds_ << " s) and was cancelled";
  return s.str();
}

Result<std::vector<std::string>> ParseApiKeys(const std::string& text, const std::string& path) {
  std::vector<std::string> keys;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (std::getline(in, line)) {
    ++line_no;
    size_t b = 0, e = line.size();
    while (b < e && blank(line[b])) ++b;
    while (e > b && blank(line[e - 1])) --e;
    if (b == e || line[b] == '#') continue;
    const std::string key = line.substr(b, e - b);
    for (char c : key) {
      // The message names the line only: the key itself must never reach a log.
      if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) {
        return InvalidArgument("--api-key-file " + path + ": line " + std::to_string(line_no) +
                               ": a key may not contain blanks or control characters");
      }
    }
    keys.push_back(key);
  }
  if (keys.empty()) {
    return InvalidArgument("--api-key-file " + path + ": no keys (only blank lines and #comments)");
  }
  return keys;
}

Result<std::vector<std::string>> ReadApiKeyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("--api-key-file: cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IoError("--api-key-file: read error on " + path);
  return ParseApiKeys(ss.str(), path);
}

bool KeyMatches(const std::string& presented, const std::vector<std::string>& keys) {
  unsigned any = 0;
  for (const std::string& key : keys) {
    const size_t n = std::max(presented.size(), key.size());
    unsigned diff = presented.size() == key.size() ? 0u : 1u;
    for (size_t i = 0; i < n; ++i) {
      const unsigned char x = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
      const unsigned char y = i < key.size() ? static_cast<unsigned char>(key[i]) : 0;
      diff |= static_cast<unsigned>(x ^ y);
    }
    any |= diff == 0 ? 1u : 0u;
  }
  return any != 0;
}

}  // namespace lazyslot::server
