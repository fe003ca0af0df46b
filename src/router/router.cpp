// The router: per-model state machine, leases, on-demand loading outside the lock, LRU eviction at
// models_max, file checks before each lease, and rescans (router.h). The memory budget's reclaimer and the
// sleep-idle timer run on the housekeeping thread (router_budget.cpp).
#include "router/router.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>

#include "core/log.h"
#include "router/router_internal.h"

namespace lazyslot {

using router_internal::Detached;
using router_internal::Instance;
using router_internal::Slot;
using router_internal::State;

namespace router_internal {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Clock::time_point DeadlineIn(double seconds) {
  seconds = std::clamp(seconds, 0.0, 1e7);  // beyond that "forever"; keeps the nanoseconds in range
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

void Touch(State& st, Slot& slot) {
  slot.use_seq = ++st.use_counter;
  slot.last_used_ms = NowMs();
}

EngineConfig ConfigFor(const State& st, const CatalogEntry& e) {
  EngineConfig c = st.config.base;
  c.model_path = e.path;
  c.compute = st.compute;
  e.overrides.ApplyTo(&c);
  st.config.command_line.ApplyTo(&c);  // explicit flags win over the preset, as llama-server
  c.memory_wait_s = st.config.budget_wait_s;
  if (!c.kv_park_dir.empty()) {
    // Each model parks in a subfolder of its own, named after its id (unsafe characters replaced), so an
    // unloaded model's conversations wait there for its next load.
    std::string sub = e.id;
    for (char& ch : sub) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != '_') ch = '_';
    }
    if (sub.empty() || sub[0] == '.') sub = "_" + sub;
    c.kv_park_dir += "/" + sub;
  }
  return c;
}

}  // namespace router_internal

using router_internal::Clock;
using router_internal::ConfigFor;
using router_internal::DeadlineIn;
using router_internal::NowMs;
using router_internal::Touch;

namespace {

int RunningLocked(const State& st) {
  int n = st.destroying;
  for (const auto& [id, s] : st.slots) n += (s->loading || s->inst) ? 1 : 0;
  return n;
}

}  // namespace

namespace router_internal {

Detached DetachLocked(State& st, const std::string& id, Slot& slot, const char* why) {
  Detached d{id, std::move(slot.inst), false};
  if (!d.inst) return d;
  if (d.inst->leases > 0) {
    LS_LOG_WARN(
        "router: model '%s' unloaded (%s) while %d request(s) still use it; its engine goes when they "
        "end",
        id.c_str(), why, d.inst->leases);
    st.draining.push_back(d.inst);
  } else {
    LS_LOG_INFO("router: unloading model '%s' (%s)", id.c_str(), why);
    d.counted = true;
    ++st.destroying;
  }
  return d;
}

void Notify(const State& st, const std::string& id, ModelStatus status) {
  if (st.config.on_status) st.config.on_status(id, status);
}

void DropInstance(State& st, Detached d) {
  if (!d.inst) return;
  d.inst.reset();
  // Before its place is given up: no load is reported first.
  Notify(st, d.id, d.sleeping ? ModelStatus::kSleeping : ModelStatus::kUnloaded);
  if (d.counted) {
    std::lock_guard<std::mutex> lock(st.mu);
    --st.destroying;
    st.cv.notify_all();
  }
}

}  // namespace router_internal

using router_internal::DetachLocked;
using router_internal::DropInstance;
using router_internal::Notify;

namespace {

Status FileChanged(const std::string& id, const std::string& path, const std::string& change, bool loaded) {
  const std::string msg = "model '" + id + "': its file " + path + " " + change + " since it was " +
                          (loaded ? "loaded" : "listed") + "; /models?reload=1 rescans";
  if (change.rfind("is gone", 0) == 0 || change.rfind("is not", 0) == 0) return NotFound(msg);
  if (change.rfind("appeared", 0) == 0) return Unavailable(msg);
  return Corrupt(msg);
}

std::shared_ptr<Slot> FindLocked(const State& st, const std::string& name, Status* not_found) {
  const CatalogEntry* e = st.catalog.Find(name);
  if (e != nullptr) {
    auto it = st.slots.find(e->id);
    if (it != st.slots.end()) return it->second;
  }
  auto removed = st.removed.find(name);
  *not_found =
      NotFound("model '" + name + "' not found" +
               (removed != st.removed.end() ? " (" + removed->second + ")" : std::string()) +
               "; known models: " + st.catalog.KnownIds() + " (/models?reload=1 rescans the sources)");
  return nullptr;
}

// Loads outside the lock: checks the file is still the one listed (else sets *changed), then creates the
// engine.
Result<std::shared_ptr<Instance>> LoadInstance(const State& st, std::shared_ptr<const CatalogEntry> entry,
                                               std::shared_ptr<BudgetAccount> account, bool* changed) {
  auto inst = std::make_shared<Instance>();
  inst->file = IdentifyFile(entry->path);
  const std::string change = DescribeFileChange(entry->file, inst->file);
  *changed = !change.empty();
  if (*changed) return FileChanged(entry->id, entry->path, change, /*loaded=*/false);
  const auto t0 = Clock::now();
  EngineConfig config = ConfigFor(st, *entry);
  if (account) {  // charged already with the fixed-cost estimate (ReserveLoad)
    config.memory_budget = st.budget;
    config.memory_account = std::move(account);
  }
  Result<std::unique_ptr<Engine>> engine = Engine::Create(config);
  if (!engine.ok()) {
    return Status(engine.status().code(), "model '" + entry->id + "' (" + entry->path +
                                              ") failed to load: " + engine.status().message());
  }
  if (st.config.attach) {
    Result<std::shared_ptr<void>> attached = st.config.attach(*entry, **engine);
    if (!attached.ok()) {
      return Status(attached.status().code(), "model '" + entry->id + "' (" + entry->path +
                                                  ") failed to load: " + attached.status().message());
    }
    inst->attachment = std::move(attached).value();
  }
  LS_LOG_INFO("router: model '%s' loaded from %s in %.0f ms", entry->id.c_str(), entry->path.c_str(),
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  inst->engine = std::move(engine).value();
  inst->entry = std::move(entry);
  inst->loaded_since_ms = NowMs();
  return inst;
}

}  // namespace

namespace router_internal {

std::pair<std::string, Slot*> LruIdleLocked(const State& st, const Slot* except) {
  std::pair<std::string, Slot*> best{"", nullptr};
  for (const auto& [id, s] : st.slots) {
    if (s.get() == except || !s->inst || s->unloading || s->inst->leases > 0) continue;
    if (!best.second || s->use_seq < best.second->use_seq) best = {id, s.get()};
  }
  return best;
}

}  // namespace router_internal

using router_internal::LruIdleLocked;

namespace {

std::string BusyFigures(const State& st) {
  std::string out;
  for (const auto& [id, s] : st.slots) {
    if (!s->inst && !s->loading) continue;
    if (!out.empty()) out += ", ";
    out += id + (s->loading ? ": loading" : ": " + std::to_string(s->inst->leases) + " request(s)");
  }
  if (st.destroying > 0) out += (out.empty() ? "" : ", ") + std::to_string(st.destroying) + " unloading";
  return out;
}

}  // namespace

const char* ModelStatusName(ModelStatus status) {
  switch (status) {
    case ModelStatus::kUnloaded:
      return "unloaded";
    case ModelStatus::kLoading:
      return "loading";
    case ModelStatus::kLoaded:
      return "loaded";
    case ModelStatus::kSleeping:
      return "sleeping";
  }
  return "unknown";
}

// ---- ModelLease ----------------------------------------------------------------------------------------

ModelLease& ModelLease::operator=(ModelLease&& other) noexcept {
  if (this != &other) {
    Release();
    state_ = std::move(other.state_);
    slot_ = std::move(other.slot_);
    inst_ = std::move(other.inst_);
    use_ = other.use_;
  }
  return *this;
}

ModelLease::~ModelLease() { Release(); }

Engine& ModelLease::engine() const { return *inst_->engine; }
const CatalogEntry& ModelLease::entry() const { return *inst_->entry; }
const std::shared_ptr<void>& ModelLease::attachment() const { return inst_->attachment; }

void ModelLease::Release() {
  if (!inst_) return;
  std::shared_ptr<Instance> inst = std::move(inst_);
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    --inst->leases;
    if (use_) Touch(*state_, *slot_);
    state_->cv.notify_all();
  }
  inst.reset();  // the last lease of an engine the router let go of destroys it here, unlocked
  slot_.reset();
  state_.reset();
}

// ---- Router --------------------------------------------------------------------------------------------

struct Router::Held {
  std::shared_ptr<Slot> slot;
  std::shared_ptr<Instance> inst;
};

Result<std::unique_ptr<Router>> Router::Create(RouterConfig config) {
  if (config.models_max < 0) return InvalidArgument("--models-max must be 0 (no limit) or more");
  if (!(config.stop_timeout_s >= 0) || !(config.max_wait_s >= 0)) {
    return InvalidArgument("router: stop timeout and wait must not be negative");
  }
  if (config.n_threads < 0) return InvalidArgument("--threads must be 0 (physical cores) or more");
  if (!(config.sleep_idle_s >= 0)) return InvalidArgument("--sleep-idle-seconds must not be negative");
  if (config.memory_budget > 0 && config.base.kv_eager) {
    return InvalidArgument(
        "--memory-budget cannot be combined with --kv-eager (eager mode commits every "
        "model's whole cache)");
  }
  LS_ASSIGN_OR_RETURN(ModelCatalog catalog, ModelCatalog::Build(config.sources, /*require_files=*/true));
  auto st = std::make_shared<State>();
  st->compute = config.base.compute ? config.base.compute : std::make_shared<SharedCompute>(config.n_threads);
  st->config = std::move(config);
  st->catalog = std::move(catalog);
  std::vector<std::string> startup;
  for (const CatalogEntry& e : st->catalog.entries()) {
    auto slot = std::make_shared<Slot>();
    slot->entry = std::make_shared<const CatalogEntry>(e);
    st->slots.emplace(e.id, std::move(slot));
    if (e.load_on_startup) startup.push_back(e.id);
  }
  const auto& entries = st->catalog.entries();
  if (!entries.empty() &&
      std::all_of(entries.begin(), entries.end(), [](const CatalogEntry& e) { return !e.remote.empty(); })) {
    // As llama-server, the router still starts (files can be added and rescanned), but say so now.
    LS_LOG_WARN(
        "router: none of the %zu listed models has a local file (only download keys, which are not "
        "supported): every request will fail until a preset section gets `model = ...`",
        entries.size());
  }
  const int max = st->config.models_max;
  if (max > 0 && static_cast<int>(startup.size()) > max) {
    return InvalidArgument(std::to_string(startup.size()) +
                           " models have load-on-startup but --models-max is " + std::to_string(max));
  }
  if (st->config.memory_budget > 0) st->budget = MemoryBudget::Create(st->config.memory_budget);
  router_internal::StartHousekeeping(st);
  std::unique_ptr<Router> router(new Router(std::move(st)));
  for (const std::string& id : startup) {
    Status s = router->Load(id);
    if (!s.ok()) LS_LOG_ERROR("router: load-on-startup of '%s' failed: %s", id.c_str(), s.message().c_str());
  }
  return router;
}

Router::~Router() {
  router_internal::StopHousekeeping(*state_);
  std::vector<Detached> gone;
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->cv.wait(lock, [&] {
      for (const auto& [id, s] : state_->slots) {
        if (s->loading) return false;
      }
      return true;
    });
    for (auto& [id, s] : state_->slots) gone.push_back(DetachLocked(*state_, id, *s, "shutdown"));
  }
  for (Detached& d : gone) DropInstance(*state_, std::move(d));
}

const RouterConfig& Router::config() const { return state_->config; }
const std::shared_ptr<MemoryBudget>& Router::memory_budget() const { return state_->budget; }

BudgetInfo Router::budget() const {
  BudgetInfo b;
  if (!state_->budget) return b;
  b.limit = state_->budget->limit();
  b.used = state_->budget->used();
  b.peak = state_->budget->peak();
  b.waiting = state_->budget->waiters();
  return b;
}
const std::shared_ptr<SharedCompute>& Router::compute() const { return state_->compute; }

int Router::draining() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto& d = state_->draining;
  d.erase(std::remove_if(d.begin(), d.end(), [](const std::weak_ptr<Instance>& w) { return w.expired(); }),
          d.end());
  return static_cast<int>(d.size());
}

Result<Router::Held> Router::Ensure(const std::string& name, bool autoload, bool lease, bool explicit_load) {
  State& st = *state_;
  std::unique_lock<std::mutex> lock(st.mu);
  const auto deadline = DeadlineIn(st.config.max_wait_s);
  std::shared_ptr<Slot> waited_on;  // the slot whose load this call waited for, and its load count then
  uint64_t waited_events = 0;
  for (;;) {
    Status not_found;
    std::shared_ptr<Slot> slot = FindLocked(st, name, &not_found);
    if (!slot) return not_found;
    const std::string id = slot->entry->id;  // a copy: a rescan may replace the entry while unlocked
    if (!slot->stale.ok()) return slot->stale;
    // Listed by a download key only: nothing to load, and nothing is evicted or waited for on its account.
    if (!slot->entry->remote.empty()) return RemoteModelError(*slot->entry);
    if (slot->loading || slot->unloading || (st.reloading && !slot->inst)) {
      if (slot->loading && waited_on != slot) {
        waited_on = slot;
        waited_events = slot->load_events;
      }
      st.cv.wait(lock);
      continue;
    }
    const bool waited_for_load = waited_on == slot && slot->load_events != waited_events;
    if (slot->inst) {
      if (explicit_load && !waited_for_load) return InvalidArgument("model '" + id + "' is already loaded");
      // Same file as at load? Stat outside the lock; the slot may change meanwhile, then look again.
      std::shared_ptr<Instance> inst = slot->inst;
      lock.unlock();
      const FileIdentity now = IdentifyFile(inst->entry->path);
      lock.lock();
      if (slot->inst != inst || slot->unloading) {
        // Unloaded meanwhile: this copy may be the engine's last reference; destroy it without the lock
        // (~Engine joins a scheduler that may wait for another model's step).
        lock.unlock();
        inst.reset();
        lock.lock();
        continue;
      }
      const std::string change = DescribeFileChange(inst->file, now);
      if (!change.empty()) {
        Status err = FileChanged(id, inst->entry->path, change, /*loaded=*/true);
        LS_LOG_WARN("router: %s", err.message().c_str());
        slot->stale = err;
        slot->failed = true;
        slot->last_error = err;
        Detached d = DetachLocked(st, id, *slot, "its file changed");
        st.cv.notify_all();
        lock.unlock();
        DropInstance(st, std::move(d));
        return err;
      }
      if (lease) {
        ++inst->leases;
        Touch(st, *slot);
      }
      return Held{slot, inst};
    }
    if (waited_for_load && slot->failed) return slot->last_error;  // the load this call waited for failed
    if (!autoload && !slot->sleeping) {  // a sleeping model wakes on any request, as llama-server's
      return InvalidArgument("model '" + id +
                             "' is not loaded and autoload is off (--no-models-autoload): load it first "
                             "(POST /models/load) or ask with ?autoload=true");
    }
    const int max = st.config.models_max;
    if (max > 0 && RunningLocked(st) >= max) {
      if (st.destroying > 0) {  // an engine being unloaded frees a place soon: do not evict another
        st.cv.wait(lock);
        continue;
      }
      auto [victim_id, victim] = LruIdleLocked(st, slot.get());
      if (victim != nullptr) {
        Detached d = DetachLocked(st, victim_id, *victim, "--models-max reached, least recently used");
        lock.unlock();
        DropInstance(st, std::move(d));
        lock.lock();
        continue;
      }
      if (Clock::now() >= deadline) {
        return Unavailable("cannot load model '" + id + "': --models-max " + std::to_string(max) +
                           " reached and no loaded model is free to unload (" + BusyFigures(st) +
                           "); waited " + std::to_string(static_cast<int>(st.config.max_wait_s * 1000)) +
                           " ms, try again later");
      }
      st.cv.wait_until(lock, deadline);
      continue;
    }
    // Load it here, outside the lock; others asking for it wait on `loading`.
    slot->loading = true;
    std::shared_ptr<const CatalogEntry> entry = slot->entry;
    lock.unlock();
    Notify(st, id, ModelStatus::kLoading);
    bool file_changed = false;
    Result<std::shared_ptr<BudgetAccount>> account = router_internal::ReserveLoad(st, slot, entry, deadline);
    Result<std::shared_ptr<Instance>> loaded =
        account.ok() ? LoadInstance(st, entry, *account, &file_changed) : account.status();
    account = std::shared_ptr<BudgetAccount>();  // the engine holds it now, or it is refunded here
    lock.lock();
    slot->reserving.reset();
    slot->loading = false;
    slot->sleeping = false;
    ++slot->load_events;
    st.cv.notify_all();
    if (!loaded.ok()) {
      ++slot->load_failures;
      slot->failed = true;
      slot->last_error = loaded.status();
      if (file_changed) slot->stale = loaded.status();
      LS_LOG_ERROR("router: %s", loaded.status().message().c_str());
      lock.unlock();
      Notify(st, id, ModelStatus::kUnloaded);
      return loaded.status();
    }
    std::shared_ptr<Instance> inst = std::move(loaded).value();
    slot->inst = inst;
    slot->failed = false;
    slot->last_error = Status::Ok();
    ++slot->loads;
    Touch(st, *slot);
    if (lease) ++inst->leases;
    lock.unlock();
    Notify(st, id, ModelStatus::kLoaded);
    return Held{slot, inst};
  }
}

Result<ModelLease> Router::Acquire(const std::string& id_or_alias, std::optional<bool> autoload) {
  LS_ASSIGN_OR_RETURN(Held held, Ensure(id_or_alias, autoload.value_or(state_->config.autoload),
                                        /*lease=*/true, /*explicit_load=*/false));
  ModelLease l;
  l.state_ = state_;
  l.slot_ = std::move(held.slot);
  l.inst_ = std::move(held.inst);
  return l;
}

Result<ModelLease> Router::Peek(const std::string& id_or_alias) {
  State& st = *state_;
  std::lock_guard<std::mutex> lock(st.mu);
  Status not_found;
  std::shared_ptr<Slot> slot = FindLocked(st, id_or_alias, &not_found);
  if (!slot) return not_found;
  if (!slot->stale.ok()) return slot->stale;
  if (!slot->entry->remote.empty()) return RemoteModelError(*slot->entry);
  if (!slot->inst || slot->unloading) {
    const char* status = slot->loading ? "loading" : slot->sleeping ? "sleeping" : "unloaded";
    return Unavailable("model '" + slot->entry->id + "' is not loaded (" + status + ")");
  }
  ++slot->inst->leases;
  ModelLease l;
  l.state_ = state_;
  l.slot_ = slot;
  l.inst_ = slot->inst;
  l.use_ = false;
  return l;
}

Status Router::Load(const std::string& id_or_alias) {
  Result<Held> held = Ensure(id_or_alias, /*autoload=*/true, /*lease=*/false, /*explicit_load=*/true);
  return held.ok() ? Status::Ok() : held.status();
}

Status Router::Unload(const std::string& id_or_alias) {
  State& st = *state_;
  std::unique_lock<std::mutex> lock(st.mu);
  Status not_found;
  std::shared_ptr<Slot> slot;
  for (;;) {
    slot = FindLocked(st, id_or_alias, &not_found);
    if (!slot) return not_found;
    if (!slot->loading) break;
    st.cv.wait(lock);
  }
  const std::string id = slot->entry->id;
  if (slot->unloading) {  // another Unload is at it: wait for it
    st.cv.wait(lock, [&] { return !slot->unloading; });
    return Status::Ok();
  }
  if (!slot->inst) return InvalidArgument("model '" + id + "' is not loaded");
  slot->unloading = true;
  const double timeout = slot->inst->entry->stop_timeout_s.value_or(st.config.stop_timeout_s);
  const auto deadline = DeadlineIn(timeout);
  std::shared_ptr<Instance> inst = slot->inst;
  st.cv.wait_until(lock, deadline, [&] { return inst->leases == 0; });
  Detached d = DetachLocked(st, id, *slot, "unload");
  slot->unloading = false;
  st.cv.notify_all();
  lock.unlock();
  inst.reset();  // without the lock: it may be the engine's last reference
  DropInstance(st, std::move(d));
  return Status::Ok();
}

Result<ReloadResult> Router::Reload() {
  State& st = *state_;
  std::unique_lock<std::mutex> lock(st.mu);
  st.cv.wait(lock, [&] { return !st.reloading; });
  st.reloading = true;  // no load starts until the reconcile is done
  st.cv.wait(lock, [&] {
    for (const auto& [id, s] : st.slots) {
      if (s->loading) return false;
    }
    return true;
  });
  lock.unlock();
  Result<ModelCatalog> scanned = ModelCatalog::Build(st.config.sources, /*require_files=*/false);
  lock.lock();
  st.reloading = false;
  st.cv.notify_all();
  if (!scanned.ok()) return Status(scanned.status().code(), "rescan failed: " + scanned.status().message());
  ModelCatalog catalog = std::move(scanned).value();
  ReloadResult r;
  std::vector<Detached> gone;
  std::map<std::string, std::shared_ptr<Slot>> slots;
  for (const CatalogEntry& e : catalog.entries()) {
    auto entry = std::make_shared<const CatalogEntry>(e);
    auto it = st.slots.find(e.id);
    if (it == st.slots.end()) {
      auto slot = std::make_shared<Slot>();
      slot->entry = std::move(entry);
      slots.emplace(e.id, std::move(slot));
      r.added.push_back(e.id);
      continue;
    }
    std::shared_ptr<Slot> slot = it->second;
    const bool changed = !slot->entry->SameDefinition(e) ||
                         !DescribeFileChange(slot->entry->file, e.file).empty() ||
                         (slot->inst && !DescribeFileChange(slot->inst->file, e.file).empty());
    if (changed) {
      r.changed.push_back(e.id);
      if (slot->inst) {
        r.unloaded.push_back(e.id);
        gone.push_back(DetachLocked(st, e.id, *slot, "changed on rescan"));
      }
      slot->failed = false;
      slot->last_error = Status::Ok();
    }
    if (!slot->stale.ok()) {
      slot->stale = Status::Ok();
      slot->failed = false;
      slot->last_error = Status::Ok();
    }
    slot->entry = std::move(entry);
    slots.emplace(e.id, std::move(slot));
  }
  if (st.removed.size() > 1024) st.removed.clear();
  for (const auto& [id, slot] : slots) st.removed.erase(id);
  for (auto& [id, slot] : st.slots) {
    if (slots.count(id)) continue;
    r.removed.push_back(id);
    const FileIdentity now = IdentifyFile(slot->entry->path);
    st.removed[id] = "removed by a rescan: " + (now.exists || !slot->entry->remote.empty()
                                                    ? "it is no longer in the sources"
                                                    : "its file " + slot->entry->path + " is gone");
    if (slot->inst) {
      r.unloaded.push_back(id);
      gone.push_back(DetachLocked(st, id, *slot, "removed on rescan"));
    }
  }
  st.slots = std::move(slots);
  st.catalog = std::move(catalog);
  LS_LOG_INFO("router: rescan: %zu models, %zu added, %zu removed, %zu changed", st.slots.size(),
              r.added.size(), r.removed.size(), r.changed.size());
  st.cv.notify_all();
  lock.unlock();
  for (Detached& d : gone) DropInstance(st, std::move(d));
  return r;
}

namespace {

// Every model's info, or only `only`'s.
std::vector<ModelInfo> Snapshot(const State& st, const Slot* only) {
  std::vector<ModelInfo> out;
  std::vector<std::shared_ptr<Instance>> insts;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    for (const auto& [id, s] : st.slots) {
      if (only != nullptr && s.get() != only) continue;
      const CatalogEntry& e = s->inst ? *s->inst->entry : *s->entry;
      ModelInfo m;
      m.id = id;
      m.aliases = s->entry->aliases;
      m.tags = s->entry->tags;
      m.path = e.path;
      m.source = s->entry->source;
      m.status = s->loading    ? ModelStatus::kLoading
                 : s->inst     ? ModelStatus::kLoaded
                 : s->sleeping ? ModelStatus::kSleeping
                               : ModelStatus::kUnloaded;
      if (s->loading && s->reserving) m.budget_charge = s->reserving->charge();
      m.failed = s->failed;
      m.last_error = s->last_error;
      if (!e.remote.empty()) {  // never loadable: listed as failed from the start, with the reason
        m.failed = true;
        m.last_error = RemoteModelError(e);
      }
      m.config = ConfigFor(st, e);
      m.chat_template = e.chat_template;
      m.load_on_startup = s->entry->load_on_startup;
      m.loaded_since_ms = s->inst ? s->inst->loaded_since_ms : 0;
      m.last_used_ms = s->last_used_ms;
      m.leases = s->inst ? s->inst->leases : 0;
      m.loads = s->loads;
      m.load_failures = s->load_failures;
      out.push_back(std::move(m));
      insts.push_back(s->inst);
    }
  }
  // Engine figures outside the lock (Memory reads /proc).
  for (size_t i = 0; i < out.size(); ++i) {
    if (!insts[i]) continue;
    const EngineStats stats = insts[i]->engine->Stats();
    const MemoryReport mem = insts[i]->engine->Memory();
    ModelInfo& m = out[i];
    if (stats.weights_released) m.status = ModelStatus::kSleeping;
    m.weights_mapped_bytes = mem.weights_mapped;
    m.weights_resident_bytes = mem.weights_resident;
    m.kv_reserved_bytes = stats.kv_reserved_bytes;
    m.kv_committed_bytes = stats.kv_committed_bytes;
    m.scratch_bytes = stats.scratch_bytes;
    m.budget_charge = insts[i]->engine->budget_charge();
  }
  for (ModelInfo& m : out) m.budget_charged_bytes = m.budget_charge.total();
  return out;
}

}  // namespace

std::vector<ModelInfo> Router::List() const { return Snapshot(*state_, nullptr); }

std::string Router::KnownIds() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->catalog.KnownIds();
}

Result<ModelInfo> Router::Info(const std::string& id_or_alias) const {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    Status not_found;
    slot = FindLocked(*state_, id_or_alias, &not_found);
    if (!slot) return not_found;
  }
  std::vector<ModelInfo> one = Snapshot(*state_, slot.get());
  if (one.empty()) return NotFound("model '" + id_or_alias + "' was removed by a rescan");
  return std::move(one[0]);
}

Result<uint64_t> Router::ReleaseIdle(const std::string& id_or_alias, bool weights, uint64_t enough_bytes) {
  std::vector<std::pair<uint64_t, std::shared_ptr<Instance>>> order;  // (use_seq, instance)
  router_internal::InternalLeases leased(*state_);  // ends before `order`, both without the lock
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!id_or_alias.empty()) {
      Status not_found;
      std::shared_ptr<Slot> slot = FindLocked(*state_, id_or_alias, &not_found);
      if (!slot) return not_found;
      if (slot->inst) order.emplace_back(slot->use_seq, slot->inst);
    } else {
      for (const auto& [id, s] : state_->slots) {
        if (s->inst) order.emplace_back(s->use_seq, s->inst);
      }
    }
    for (auto& [seq, inst] : order) leased.AddLocked(inst);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  uint64_t total = 0;
  for (auto& [seq, inst] : order) {
    Result<uint64_t> r = inst->engine->ReleaseIdle(weights);
    if (!r.ok()) {
      return Status(r.status().code(), "model '" + inst->entry->id + "': " + r.status().message());
    }
    total += *r;
    if (enough_bytes > 0 && total >= enough_bytes) break;
  }
  return total;
}

}  // namespace lazyslot
