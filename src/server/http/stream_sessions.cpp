// Resumable streams' sessions (stream_sessions.h): a byte buffer per conversation with a dropped prefix,
// readers that wait on a condition variable, and the id -> session map with its expiry.
#include "server/http/stream_sessions.h"

#include <algorithm>
#include <vector>

namespace lazyslot::server {
namespace {

int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

void StreamSession::Append(const char* data, size_t n) {
  if (n == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    buffer_.append(data, n);
    if (buffer_.size() > kMaxBytes) {
      const size_t drop = buffer_.size() - kMaxBytes;
      buffer_.erase(0, drop);
      dropped_ += drop;
    }
  }
  cv_.notify_all();
}

void StreamSession::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    done_ = true;
    completed_ = std::chrono::system_clock::now();
  }
  cv_.notify_all();
}

void StreamSession::Cancel() {
  cancelled_.store(true);
  cv_.notify_all();
}

StreamSession::Read StreamSession::ReadFrom(size_t* offset,
                                            const std::function<void(const char*, size_t)>& sink,
                                            std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  if (*offset < dropped_) return Read::kLost;
  cv_.wait_for(lock, wait, [&] { return done_ || cancelled_.load() || *offset < dropped_ + buffer_.size(); });
  if (*offset < dropped_) return Read::kLost;
  const size_t end = dropped_ + buffer_.size();
  if (*offset < end) {
    const std::string chunk = buffer_.substr(*offset - dropped_);
    *offset = end;
    lock.unlock();
    sink(chunk.data(), chunk.size());
    return Read::kMore;
  }
  return done_ || cancelled_.load() ? Read::kDone : Read::kMore;
}

bool StreamSession::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

size_t StreamSession::total_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_ + buffer_.size();
}

size_t StreamSession::dropped_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

int64_t StreamSession::started_at() const { return UnixSeconds(started_); }

int64_t StreamSession::completed_at() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_ ? UnixSeconds(completed_) : 0;
}

std::shared_ptr<StreamSession> StreamSessions::Create(const std::string& id) {
  auto session = std::make_shared<StreamSession>(id);
  std::shared_ptr<StreamSession> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ExpireLocked();
    auto it = sessions_.find(id);
    if (it != sessions_.end()) {
      old = std::move(it->second);
      sessions_.erase(it);
    }
    if (sessions_.size() >= kMaxSessions) {
      // The oldest ended session goes first, else the oldest.
      auto victim = sessions_.end();
      for (auto s = sessions_.begin(); s != sessions_.end(); ++s) {
        const bool ended = s->second->done();
        if (victim == sessions_.end() || (ended && !victim->second->done()) ||
            (ended == victim->second->done() && s->second->started_at() < victim->second->started_at())) {
          victim = s;
        }
      }
      victim->second->Cancel();
      sessions_.erase(victim);
    }
    sessions_[id] = session;
  }
  if (old) old->Cancel();
  return session;
}

std::shared_ptr<StreamSession> StreamSessions::Get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked();
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

void StreamSessions::Stop(const std::string& id) {
  std::shared_ptr<StreamSession> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    s = std::move(it->second);
    sessions_.erase(it);
  }
  s->Cancel();
}

void StreamSessions::Forget(const std::shared_ptr<StreamSession>& session) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session->id());
  if (it != sessions_.end() && it->second == session) sessions_.erase(it);
}

std::vector<std::shared_ptr<StreamSession>> StreamSessions::Find(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked();
  std::vector<std::shared_ptr<StreamSession>> out;
  const std::string prefix = id + "::";
  for (auto it = sessions_.lower_bound(id); it != sessions_.end() && it->first.compare(0, id.size(), id) == 0;
       ++it) {
    if (it->first == id || it->first.compare(0, prefix.size(), prefix) == 0) out.push_back(it->second);
  }
  return out;
}

void StreamSessions::ExpireLocked() {
  const int64_t now = UnixSeconds(std::chrono::system_clock::now());
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    const int64_t completed = it->second->completed_at();
    if (completed > 0 && now - completed > kTtlSeconds) {
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace lazyslot::server
