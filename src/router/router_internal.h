// The router's private state, shared by router.cpp (state machine, leases, loads) and router_budget.cpp
// (the memory budget's reservations and reclaimer, the sleep-idle timer, both on the housekeeping thread).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/memory_budget.h"
#include "router/router.h"

namespace lazyslot::router_internal {

using Clock = std::chrono::steady_clock;

// One load of a model: its engine and what it was loaded from. Shared with the leases, so an engine the
// router lets go of while requests use it lives until the last of them ends.
struct Instance {
  std::unique_ptr<Engine> engine;
  std::shared_ptr<const CatalogEntry> entry;
  std::shared_ptr<void> attachment;  // RouterConfig::attach's result
  FileIdentity file;                 // stat before the load
  int leases = 0;                    // guarded by State::mu
  int64_t loaded_since_ms = 0;
};

// One listed model.
struct Slot {
  std::shared_ptr<const CatalogEntry> entry;
  std::shared_ptr<Instance> inst;  // null: unloaded
  bool loading = false, unloading = false;
  bool sleeping = false;  // its engine was destroyed after sleep_idle_s; the next Acquire loads it
  Status stale;           // not OK: the file changed on disk; every Acquire fails with it until a rescan
  bool failed = false;
  Status last_error;
  uint64_t use_seq = 0;  // LRU order
  int64_t last_used_ms = 0;
  uint64_t loads = 0, load_failures = 0;
  uint64_t load_events = 0;  // completed load attempts, so waiters know theirs ended
  // --memory-budget: the account charged while the model loads (then the engine's), and the fixed-cost
  // estimate of the entry and file it was made for.
  std::shared_ptr<BudgetAccount> reserving;
  std::optional<BudgetCharge> estimate;
  std::shared_ptr<const CatalogEntry> estimate_entry;
  FileIdentity estimate_file;
};

// How the housekeeping thread is woken. Shared with the budget's reclaim signal, which engine threads call
// and which may outlive the router; `mu` is a leaf.
struct Wakeup {
  std::mutex mu;
  std::condition_variable cv;
  bool signal = false, stop = false;
};

struct State {
  RouterConfig config;
  std::shared_ptr<SharedCompute> compute;
  std::shared_ptr<MemoryBudget> budget;  // null without --memory-budget
  mutable std::mutex mu;
  std::condition_variable cv;
  ModelCatalog catalog;
  std::map<std::string, std::shared_ptr<Slot>> slots;  // by id
  bool reloading = false;
  int destroying = 0;  // engines being destroyed outside the lock (still count against models_max)
  uint64_t use_counter = 0;
  std::vector<std::weak_ptr<Instance>> draining;
  std::map<std::string, std::string> removed;  // id -> why a rescan dropped it, for its not-found message

  // The housekeeping thread (budget reclaimer, sleep-idle timer).
  std::thread housekeeper;
  std::shared_ptr<Wakeup> hk = std::make_shared<Wakeup>();
};

// Takes the slot's engine away (under the lock). The caller drops the returned instance after unlocking
// (DropInstance): with no lease left that destroys the engine.
struct Detached {
  std::string id;
  std::shared_ptr<Instance> inst;
  bool counted = false;   // counted in State::destroying
  bool sleeping = false;  // reported as kSleeping (sleep_idle_s), else kUnloaded
};

int64_t NowMs();
Clock::time_point DeadlineIn(double seconds);
void Touch(State& st, Slot& slot);
EngineConfig ConfigFor(const State& st, const CatalogEntry& e);
Detached DetachLocked(State& st, const std::string& id, Slot& slot, const char* why);
void Notify(const State& st, const std::string& id, ModelStatus status);
// Outside the lock.
void DropInstance(State& st, Detached d);
// The least recently used loaded model without a lease, other than `except`.
std::pair<std::string, Slot*> LruIdleLocked(const State& st, const Slot* except);

// router_budget.cpp
// Charges the model's fixed cost to a new account before its engine is created (outside the lock; the
// slot is marked loading). Waits for room until `deadline` while the reclaimer frees idle memory. Errors:
// kResourceExhausted if it could never fit alone, kUnavailable if it does not fit by the deadline (both
// with the figures). Null without a budget.
Result<std::shared_ptr<BudgetAccount>> ReserveLoad(State& st, const std::shared_ptr<Slot>& slot,
                                                   const std::shared_ptr<const CatalogEntry>& entry,
                                                   Clock::time_point deadline);
// Starts the housekeeping thread if the config needs one; StopHousekeeping joins it.
void StartHousekeeping(const std::shared_ptr<State>& st);
void StopHousekeeping(State& st);

// Leases engines while the router calls into them (ReleaseIdle, the reclaimer): an Unload waits for the
// call, eviction skips them, and the release is not a use in LRU order. Destroy without the lock.
class InternalLeases {
 public:
  explicit InternalLeases(State& st) : st_(st) {}
  ~InternalLeases();
  void AddLocked(std::shared_ptr<Instance> inst);  // caller holds st.mu
  const std::vector<std::shared_ptr<Instance>>& insts() const { return insts_; }

 private:
  State& st_;
  std::vector<std::shared_ptr<Instance>> insts_;
};

}  // namespace lazyslot::router_internal
