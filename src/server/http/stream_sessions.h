// Resumable streams (llama-server's X-Conversation-Id): a streamed answer whose request names a conversation
// is also written into a session kept by that id, so a client that lost the connection (a page reload) can
// read it again from any byte offset with GET /v1/stream?conv_id=ID&from=N, or stop it with DELETE. The
// generation goes on when the client leaves and ends only when it is done or stopped.
//
// A session keeps at most kMaxBytes of the stream (the oldest bytes dropped beyond, so an offset before them
// is lost) and lives kTtlSeconds after its stream ended; at most kMaxSessions live at once (the oldest ended
// one goes first, then the oldest). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lazyslot::server {

class StreamSession {
 public:
  static constexpr size_t kMaxBytes = size_t{4} << 20;

  explicit StreamSession(std::string id) : id_(std::move(id)), started_(std::chrono::system_clock::now()) {}
  const std::string& id() const { return id_; }

  // The producer: appends bytes; Finish() once the stream ended (also after a Cancel).
  void Append(const char* data, size_t n);
  void Finish();
  // DELETE: the producer stops at its next check.
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }

  enum class Read { kMore, kDone, kLost };
  // Waits up to `wait` for bytes past `*offset`, then passes what there is to `sink` and moves `*offset`.
  // kDone: the stream ended and everything was read; kLost: `*offset` precedes the kept bytes.
  Read ReadFrom(size_t* offset, const std::function<void(const char*, size_t)>& sink,
                std::chrono::milliseconds wait);

  bool done() const;
  size_t total_bytes() const;    // bytes ever appended
  size_t dropped_bytes() const;  // of those, the oldest no longer kept
  int64_t started_at() const;    // Unix seconds
  int64_t completed_at() const;  // Unix seconds; 0 while the stream runs

 private:
  const std::string id_;
  const std::chrono::system_clock::time_point started_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string buffer_;  // bytes [dropped_, dropped_ + buffer_.size()) of the stream
  size_t dropped_ = 0;
  bool done_ = false;
  std::chrono::system_clock::time_point completed_;
  std::atomic<bool> cancelled_{false};
};

class StreamSessions {
 public:
  static constexpr int kTtlSeconds = 300;
  static constexpr size_t kMaxSessions = 256;

  // A new session for `id`, replacing (and cancelling) the one it had.
  std::shared_ptr<StreamSession> Create(const std::string& id);
  // The live or recently ended session of `id`, or null.
  std::shared_ptr<StreamSession> Get(const std::string& id);
  // Cancels and forgets the session of `id` (if any).
  void Stop(const std::string& id);
  // Forgets `session` if it is still the one of its id (a request that failed before it streamed).
  void Forget(const std::shared_ptr<StreamSession>& session);
  // The sessions of `id` and of "id::<anything>" (llama-server's per-model variants of one conversation).
  std::vector<std::shared_ptr<StreamSession>> Find(const std::string& id);

 private:
  void ExpireLocked();  // caller holds mu_

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<StreamSession>> sessions_;
};

}  // namespace lazyslot::server
