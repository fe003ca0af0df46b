// Server-side limits: the HTTP task queue that caps concurrent connections (--max-connections) and answers
// the excess with a fast 503, per-request deadlines (--request-timeout), and API-key files (--api-key-file).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "server/http/httplib_include.h"

namespace lazyslot::server {

// cpp-httplib hands every accepted connection to a TaskQueue as one task that reads requests and writes
// responses until the connection closes, so a connection holds a worker thread for its whole life. This
// queue runs at most `max_connections` such tasks at once, each on its own worker (none ever waits for a
// thread). A connection past the limit runs on a small separate "reject lane" instead, where
// RejectingThisConnection() is true: the pre-routing hook then answers its request with 503 at once and
// closes the connection (httplib 0.11 does not show the socket to the queue, so the rejection has to go
// through the normal request parsing).
class ConnectionQueue : public httplib::TaskQueue {
 public:
  // `rejected` (may be null) counts connections sent to the reject lane.
  ConnectionQueue(size_t max_connections, std::atomic<uint64_t>* rejected);
  ~ConnectionQueue() override;

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

 private:
  void Worker(bool reject_lane);

  const size_t max_connections_;
  std::atomic<uint64_t>* rejected_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_, rejects_;
  size_t in_use_ = 0;  // connections queued or being served by the workers
  bool shutdown_ = false;
  std::vector<std::thread> threads_;
};

// Reject-lane threads this many (a client that connects and sends nothing holds one for the keep-alive
// timeout, 5 s, before httplib gives up on it).
constexpr int kRejectLaneThreads = 4;

// True on the thread serving a connection over --max-connections (see ConnectionQueue).
bool RejectingThisConnection();

// Makes httplib close `req`'s connection once the current response is written (its next read sees end
// of file), so a rejected client does not keep a reject-lane thread with keep-alive. Call it only after
// the response went out (httplib's logger hook): httplib writes nothing to a socket that reads EOF.
void CloseConnectionAfterResponse(const httplib::Request& req);

// A request's time limit; `seconds` <= 0 means none.
class Deadline {
 public:
  explicit Deadline(double seconds);
  bool Expired() const;
  // "the request ran longer than --request-timeout (N s) and was cancelled"
  std::string Message() const;

 private:
  double seconds_;
  std::chrono::steady_clock::time_point at_;
};

// HTTP status for a request cancelled by its deadline (504 Gateway Timeout: the server gave up, not the
// client).
constexpr int kRequestTimeoutStatus = 504;

// Keys from an --api-key-file: one per line; leading/trailing blanks trimmed; blank lines and lines
// starting with '#' skipped. Errors name the file and line, never a key: unreadable file, no keys, a key
// with inner blanks or control characters.
Result<std::vector<std::string>> ReadApiKeyFile(const std::string& path);
// The same for text already read (`path` only labels errors).
Result<std::vector<std::string>> ParseApiKeys(const std::string& text, const std::string& path);

// True when `presented` equals one of `keys`; compares every key in full, in time that depends only on the
// lengths, so a wrong key leaks nothing about a right one.
bool KeyMatches(const std::string& presented, const std::vector<std::string>& keys);

}  // namespace lazyslot::server
