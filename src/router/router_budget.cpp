// The router's side of --memory-budget and --sleep-idle-seconds (decision 0007): a load reserves the
// model's fixed cost before its engine exists; the housekeeping thread serves the budget's oldest waiter by
// releasing idle memory elsewhere, least recently used first (idle slots' KV, then idle models' weights and
// scratch, then unloading idle models), and destroys the engines of models idle for sleep_idle_s. It calls
// into engines only under an internal lease and never holds the router's lock while doing so.
#include <algorithm>

#include "core/log.h"
#include "router/router_internal.h"

namespace lazyslot::router_internal {
namespace {

double MiB(uint64_t b) { return b / 1048576.0; }

// Bytes the oldest waiter still lacks (0: none waits, or it fits now and its retry will succeed).
uint64_t Shortfall(const MemoryBudget& b, MemoryBudget::Waiter* w) {
  if (!b.HeadWaiter(w)) return 0;
  const uint64_t used = b.used();
  return used + w->need > b.limit() ? used + w->need - b.limit() : 0;
}

// One pass for the oldest waiter: idle KV, then idle weights and scratch, then idle models, LRU first.
void Reclaim(State& st) {
  MemoryBudget& budget = *st.budget;
  MemoryBudget::Waiter w;
  if (Shortfall(budget, &w) == 0) return;
  {
    InternalLeases leased(st);
    {
      std::lock_guard<std::mutex> lock(st.mu);
      std::vector<std::pair<uint64_t, std::shared_ptr<Instance>>> order;
      for (const auto& [id, s] : st.slots) {
        if (id != w.name && s->inst && !s->unloading) order.emplace_back(s->use_seq, s->inst);
      }
      std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto& [seq, inst] : order) leased.AddLocked(inst);
    }
    for (bool weights : {false, true}) {
      for (const std::shared_ptr<Instance>& inst : leased.insts()) {
        const BudgetCharge c = inst->engine->budget_charge();
        if ((weights ? c.weights + c.scratch : c.kv + c.scratch) == 0) continue;
        Result<uint64_t> r = inst->engine->ReleaseIdle(weights);
        if (r.ok() && *r > 0) {
          LS_LOG_INFO("memory budget: released %.1f MiB of idle %s of model '%s' for '%s'", MiB(*r),
                      weights ? "weights, KV and scratch" : "KV and scratch", inst->entry->id.c_str(),
                      w.name.c_str());
        }
        if (Shortfall(budget, &w) == 0) return;
      }
    }
  }
  // Still short: unload idle models (no lease), least recently used first.
  for (;;) {
    Detached d;
    {
      std::lock_guard<std::mutex> lock(st.mu);
      auto it = st.slots.find(w.name);
      auto [victim_id, victim] = LruIdleLocked(st, it != st.slots.end() ? it->second.get() : nullptr);
      if (victim == nullptr) return;
      d = DetachLocked(st, victim_id, *victim, "--memory-budget needs room, least recently used");
      st.cv.notify_all();
    }
    DropInstance(st, std::move(d));
    if (Shortfall(budget, &w) == 0) return;
  }
}

// Destroys the engines of models without requests for sleep_idle_s.
void SleepIdle(State& st) {
  const double idle_s = st.config.sleep_idle_s;
  if (idle_s <= 0) return;
  std::vector<Detached> gone;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    const int64_t now = NowMs();
    for (auto& [id, s] : st.slots) {
      if (!s->inst || s->loading || s->unloading || s->inst->leases > 0) continue;
      if (static_cast<double>(now - s->last_used_ms) < idle_s * 1000) continue;
      Detached d = DetachLocked(st, id, *s, "idle for --sleep-idle-seconds");
      d.sleeping = true;
      s->sleeping = true;
      gone.push_back(std::move(d));
    }
    if (!gone.empty()) st.cv.notify_all();
  }
  for (Detached& d : gone) DropInstance(st, std::move(d));
}

void HousekeepingLoop(State& st) {
  Wakeup& hk = *st.hk;
  std::unique_lock<std::mutex> lock(hk.mu);
  for (;;) {
    // While something waits for the budget, passes repeat every 50 ms (what was busy may be idle now);
    // the sleep timer is checked at a quarter of its period (at least every second).
    auto period = std::chrono::milliseconds(3600 * 1000);
    if (st.config.sleep_idle_s > 0) {
      period = std::chrono::milliseconds(
          static_cast<int64_t>(std::clamp(st.config.sleep_idle_s * 250, 20.0, 1000.0)));
    }
    if (st.budget && st.budget->waiters() > 0) period = std::min(period, std::chrono::milliseconds(50));
    hk.cv.wait_for(lock, period, [&] { return hk.stop || hk.signal; });
    if (hk.stop) return;
    hk.signal = false;
    lock.unlock();
    if (st.budget) Reclaim(st);
    SleepIdle(st);
    lock.lock();
  }
}

}  // namespace

InternalLeases::~InternalLeases() {
  if (insts_.empty()) return;
  {
    std::lock_guard<std::mutex> lock(st_.mu);
    for (const auto& inst : insts_) --inst->leases;
    st_.cv.notify_all();
  }
  insts_.clear();  // may destroy an engine the router let go of meanwhile: without the lock
}

void InternalLeases::AddLocked(std::shared_ptr<Instance> inst) {
  ++inst->leases;
  insts_.push_back(std::move(inst));
}

Result<std::shared_ptr<BudgetAccount>> ReserveLoad(State& st, const std::shared_ptr<Slot>& slot,
                                                   const std::shared_ptr<const CatalogEntry>& entry,
                                                   Clock::time_point deadline) {
  if (!st.budget) return std::shared_ptr<BudgetAccount>();
  MemoryBudget& budget = *st.budget;
  const std::string& id = entry->id;
  // The estimate maps the file and reads its header; it is kept while the entry and the file are the same.
  std::optional<BudgetCharge> estimate;
  const FileIdentity file = IdentifyFile(entry->path);
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (slot->estimate && slot->estimate_entry == entry &&
        DescribeFileChange(slot->estimate_file, file).empty())
      estimate = slot->estimate;
  }
  if (!estimate) {
    Result<BudgetCharge> e = Engine::EstimateCharge(ConfigFor(st, *entry));
    if (!e.ok()) {
      return Status(e.status().code(),
                    "model '" + id + "' (" + entry->path + ") failed to load: " + e.status().message());
    }
    estimate = *e;
    std::lock_guard<std::mutex> lock(st.mu);
    slot->estimate = estimate;
    slot->estimate_entry = entry;
    slot->estimate_file = file;
  }
  const uint64_t need = estimate->total();
  if (need > budget.limit()) {
    return ResourceExhausted("cannot load model '" + id + "': it needs " + std::to_string(need) +
                             " bytes before any request (" + DescribeCharge(*estimate) +
                             "), but --memory-budget is " + std::to_string(budget.limit()) + " bytes");
  }
  std::shared_ptr<BudgetAccount> account = budget.Open(id);
  {
    std::lock_guard<std::mutex> lock(st.mu);
    slot->reserving = account;
  }
  bool logged = false;
  for (;;) {
    if (account->TryCharge(*estimate)) return account;
    if (Clock::now() >= deadline) break;
    if (!logged) {
      logged = true;
      LS_LOG_INFO("memory budget: loading '%s' waits for %.1f MiB (%s)", id.c_str(), MiB(need),
                  budget.Describe().c_str());
    }
    account->Wait(need);
    budget.WaitForChange(std::min(deadline, Clock::now() + std::chrono::milliseconds(100)));
  }
  account->StopWaiting();
  return Unavailable("cannot load model '" + id + "' now: it needs " + std::to_string(need) + " bytes (" +
                     DescribeCharge(*estimate) + ") and --memory-budget " + std::to_string(budget.limit()) +
                     " has " + std::to_string(budget.limit() - std::min(budget.limit(), budget.used())) +
                     " free after waiting " + std::to_string(static_cast<int>(st.config.max_wait_s * 1000)) +
                     " ms for busy models (" + budget.Describe() + "); try again later");
}

void StartHousekeeping(const std::shared_ptr<State>& st) {
  if (!st->budget && st->config.sleep_idle_s <= 0) return;
  if (st->budget) {
    st->budget->SetReclaimSignal([hk = st->hk] {
      {
        std::lock_guard<std::mutex> lock(hk->mu);
        hk->signal = true;
      }
      hk->cv.notify_all();
    });
  }
  State* raw = st.get();
  st->housekeeper = std::thread([raw] { HousekeepingLoop(*raw); });
}

void StopHousekeeping(State& st) {
  if (st.budget) st.budget->SetReclaimSignal(nullptr);
  {
    std::lock_guard<std::mutex> lock(st.hk->mu);
    st.hk->stop = true;
  }
  st.hk->cv.notify_all();
  if (st.housekeeper.joinable()) st.housekeeper.join();
}

}  // namespace lazyslot::router_internal
