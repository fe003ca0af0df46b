// MemoryMonitor (memory_monitor.h): the sampler thread, the history rings and the events derived from two
// consecutive samples.
#include "server/memory_monitor.h"

#include <cstdio>

namespace lazyslot::server {
namespace {

using Json = nlohmann::json;

constexpr std::chrono::seconds kLinger{60};  // the sampler runs this long after the last watcher left

std::string MiB(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

uint64_t U(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<uint64_t>() : 0;
}

const Json* FindModel(const Json& sample, const std::string& id) {
  auto models = sample.find("models");
  if (models == sample.end() || !models->is_array()) return nullptr;
  for (const Json& m : *models) {
    if (m.value("id", "") == id) return &m;
  }
  return nullptr;
}

// A model's status change as an event kind ("" for none worth marking: loading).
const char* StatusEvent(const std::string& before, const std::string& after) {
  if (after == "loaded" && before != "sleeping") return "model_loaded";
  if (after == "loaded") return "weights_reloaded";
  if (after == "sleeping") return "model_sleeping";
  if (after == "unloaded" && (before == "loaded" || before == "sleeping")) return "model_unloaded";
  return "";
}

}  // namespace

MemoryMonitor::MemoryMonitor(std::function<Json()> measure) : measure_(std::move(measure)) {}

MemoryMonitor::~MemoryMonitor() { Stop(); }

void MemoryMonitor::Stop() {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    t = std::move(thread_);
  }
  cv_.notify_all();
  if (t.joinable()) t.join();
}

void MemoryMonitor::EnsureRunning() {
  touched_ = std::chrono::steady_clock::now();
  if (running_ || stopped_) return;
  if (thread_.joinable()) thread_.join();  // a sampler that ended on its own (no watchers): joined here
  running_ = true;
  thread_ = std::thread([this] { Run(); });
}

void MemoryMonitor::Watch() {
  std::lock_guard<std::mutex> lock(mu_);
  ++watchers_;
  EnsureRunning();
}

void MemoryMonitor::Unwatch() {
  std::lock_guard<std::mutex> lock(mu_);
  --watchers_;
  touched_ = std::chrono::steady_clock::now();
}

void MemoryMonitor::Touch() {
  std::lock_guard<std::mutex> lock(mu_);
  EnsureRunning();
}

std::vector<Json> MemoryMonitor::NewerThan(uint64_t* seq, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return stopped_ || seq_ > *seq; });
  std::vector<Json> out;
  for (const Json& s : samples_) {
    if (s["seq"].get<uint64_t>() > *seq) out.push_back(s);
  }
  *seq = seq_;
  return out;
}

Json MemoryMonitor::History(uint64_t* seq, bool with_samples) {
  std::lock_guard<std::mutex> lock(mu_);
  Json samples = Json::array(), events = Json::array();
  if (with_samples) {
    for (const Json& s : samples_) {
      Json copy = s;
      copy.erase("events");  // every event is in `events`
      samples.push_back(std::move(copy));
    }
  }
  for (const Json& e : events_) events.push_back(e);
  *seq = seq_;
  return {{"samples", std::move(samples)}, {"events", std::move(events)}};
}

void MemoryMonitor::Run() {
  Json previous;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopped_) {
    if (watchers_ == 0 && std::chrono::steady_clock::now() - touched_ > kLinger) break;
    lock.unlock();
    Json sample = measure_();  // off the lock: it reads /proc and the engines' figures
    Json events = previous.is_null() ? Json::array() : Diff(previous, sample);
    previous = sample;
    lock.lock();
    sample["seq"] = ++seq_;
    sample["events"] = events;
    for (const Json& e : events) {
      events_.push_back(e);
      if (events_.size() > kEvents) events_.pop_front();
    }
    samples_.push_back(std::move(sample));
    if (samples_.size() > kHistory) samples_.pop_front();
    cv_.notify_all();
    cv_.wait_for(lock, kInterval, [this] { return stopped_; });
  }
  running_ = false;
}

Json MemoryMonitor::Diff(const Json& before, const Json& after) {
  Json events = Json::array();
  const uint64_t t = U(after, "t");
  auto add = [&](const std::string& model, const char* kind, const std::string& label) {
    events.push_back({{"t", t}, {"model", model}, {"kind", kind}, {"label", label}});
  };
  if (!after.contains("models") || !after["models"].is_array()) return events;
  for (const Json& a : after["models"]) {
    const std::string id = a.value("id", "");
    const Json* b = FindModel(before, id);
    if (b == nullptr) continue;
    const std::string status_b = b->value("status", ""), status_a = a.value("status", "");
    if (status_a != status_b) {
      const char* kind = StatusEvent(status_b, status_a);
      if (*kind) add(id, kind, id + ": " + status_b + " -> " + status_a);
    }
    const uint64_t kv_b = U(*b, "kv_committed"), kv_a = U(a, "kv_committed");
    if (kv_b == 0 && kv_a > 0) add(id, "first_commit", "first KV pages committed: " + MiB(kv_a));
    if (U(a, "idle_releases") > U(*b, "idle_releases")) {
      add(id, "idle_release", "idle timeout released the KV cache: " + MiB(kv_b) + " -> " + MiB(kv_a));
    } else if (a.contains("slots") && b->contains("slots")) {
      const Json& sa = a["slots"];
      const Json& sb = (*b)["slots"];
      for (size_t i = 0; i < sa.size() && i < sb.size(); ++i) {
        const uint64_t cb = U(sb[i], "committed"), ca = U(sa[i], "committed");
        if (ca < cb) {
          add(id, "trim",
              "slot " + std::to_string(i) + " gave back " + MiB(cb - ca) + " (" + MiB(cb) + " -> " + MiB(ca) +
                  ")");
        }
      }
    }
    const bool released_b = b->value("weights_released", false),
               released_a = a.value("weights_released", false);
    if (!released_b && released_a) add(id, "weights_released", "idle weights released from memory");
    if (released_b && !released_a) add(id, "weights_reloaded", "weights paged back in");
    if (const uint64_t n = U(a, "kv_parks") - std::min(U(a, "kv_parks"), U(*b, "kv_parks")); n > 0) {
      add(id, "park", std::to_string(n) + " conversation(s) parked on disk");
    }
    if (const uint64_t n = U(a, "kv_resumes") - std::min(U(a, "kv_resumes"), U(*b, "kv_resumes")); n > 0) {
      add(id, "resume", std::to_string(n) + " parked conversation(s) read back");
    }
  }
  return events;
}

}  // namespace lazyslot::server
