// MemoryMonitor: the figures behind the web page's memory view and GET /memory, /memory/stream. A sampler
// thread, running while someone watches (a stream is open, or /memory was read in the last minute), measures
// the process (RSS and its anonymous, file and memory-file parts) and each loaded model (weights resident, KV
// committed per slot, budget, request and token rates) every interval, and derives events from consecutive
// samples: the first KV commit after none, trims, idle releases, weights released and paged back, parks and
// resumes, models loaded, sleeping and unloaded. The last kHistory samples and kEvents events are kept.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace lazyslot::server {

class MemoryMonitor {
 public:
  static constexpr size_t kHistory = 1200;  // 10 minutes at the default interval
  static constexpr size_t kEvents = 500;
  static constexpr std::chrono::milliseconds kInterval{500};

  // measure: one sample's figures now (the "t", "process", "memory_budget" and "models" fields; see
  // docs/webui.md), called on the sampler thread only.
  explicit MemoryMonitor(std::function<nlohmann::json()> measure);
  ~MemoryMonitor();  // stops the sampler
  MemoryMonitor(const MemoryMonitor&) = delete;
  MemoryMonitor& operator=(const MemoryMonitor&) = delete;

  // A stream's view: Watch() starts the sampler (if stopped) and counts a watcher until Unwatch().
  void Watch();
  void Unwatch();
  // Samples newer than *seq (each with its events), waiting up to `timeout` for one; *seq advances.
  std::vector<nlohmann::json> NewerThan(uint64_t* seq, std::chrono::milliseconds timeout);
  // {"samples": [...], "events": [...]}: the history kept, oldest first (samples empty unless with_samples);
  // *seq is set to the newest sample's.
  nlohmann::json History(uint64_t* seq, bool with_samples);
  // Keeps the sampler running a minute more (a poller of GET /memory is a watcher too).
  void Touch();
  void Stop();  // ends the sampler for good (before the engines go)

  // The events that happened between two samples (pure; tested on its own).
  static nlohmann::json Diff(const nlohmann::json& before, const nlohmann::json& after);

 private:
  void Run();
  void EnsureRunning();  // with mu_ held

  std::function<nlohmann::json()> measure_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  bool running_ = false, stopped_ = false;
  int watchers_ = 0;
  std::chrono::steady_clock::time_point touched_{};
  uint64_t seq_ = 0;
  std::deque<nlohmann::json> samples_;
  std::deque<nlohmann::json> events_;
};

}  // namespace lazyslot::server
