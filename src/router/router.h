// The router (issue 16): many models behind one server, loaded on demand, one thread pool for all of them.
// It owns one Engine per loaded model, all sharing one SharedCompute, so busy models interleave their steps
// and never run more than -t threads. HTTP handlers Acquire a model by id or alias, get a lease that keeps it
// loaded while they use it, and release it when the request is answered.
//
// Model states follow llama-server's router (tools/server/server-models.h): unloaded -> loading -> loaded,
// loaded <-> sleeping, back to unloaded on Unload, eviction (--models-max, least recently used idle model
// first) or when its file changed; a failed load is "unloaded" with `failed` set and the loader's error.
// "sleeping" is llama-server's idle sleep (model memory given back, woken by the next request): here a
// loaded engine whose weights' pages were released (Engine::ReleaseIdle or --idle-release-weights).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "router/model_catalog.h"

namespace lazyslot {

enum class ModelStatus { kUnloaded, kLoading, kLoaded, kSleeping };
const char* ModelStatusName(ModelStatus status);  // "unloaded", "loading", "loaded", "sleeping"

struct RouterConfig {
  EngineConfig base;  // every model's settings unless its catalogue entry overrides them (model_path unused)
  // Settings given explicitly on the command line: they override every preset section (llama-server's
  // precedence: command line, then the model's section, then [*]).
  ModelOverrides command_line;
  CatalogSources sources;
  int models_max = 4;    // most models loaded at once (llama-server's default 4); 0 = no limit
  bool autoload = true;  // --models-autoload: Acquire loads an unloaded model
  int n_threads = 0;     // the one pool of every model (0: physical cores); base.compute, if set, is used
  double stop_timeout_s = 10;  // Unload waits this long for running requests (llama-server's stop-timeout)
  double max_wait_s = 30;      // Acquire/Load wait this long for a model to become evictable at --models-max
  // --memory-budget: bytes over every model's resident weights, KV and scratch and its heap estimate
  // (engine/memory_budget.h, decision 0007), 0 = none. A load reserves the model's fixed cost first; room is
  // made by releasing idle memory, least recently used first (idle slots' KV, idle models' weights, then
  // unloading idle models), waiting up to max_wait_s.
  uint64_t memory_budget = 0;
  // A request waits this long for room in the budget, then fails with 503 and the figures (a bound on the
  // rare wait for memory held by models whose own requests wait too: decision 0007). 0 = no limit.
  double budget_wait_s = 120;
  // --sleep-idle-seconds: a model without requests for this long has its engine destroyed (all its memory
  // back) and is listed as sleeping; the next Acquire loads it again, autoload or not. 0 = off.
  double sleep_idle_s = 0;
  // Called on each state change, without the router's lock, on the thread that made it: kLoading just before
  // the engine is created (a slow callback delays that load), kLoaded after, kUnloaded after an unload,
  // eviction or failed load; kSleeping after sleep_idle_s destroyed the engine. A loaded engine whose
  // weights were released is also listed as sleeping, but that is the engine's own doing and is only seen
  // in List().
  std::function<void(const std::string& id, ModelStatus status)> on_status;
  // Called after a model's engine is created, outside the router's lock, to build what the caller keeps per
  // loaded model (the server: its chat template and tool-call format). An error fails the load with that
  // status, as a failed Engine::Create would. The result lives as long as the engine
  // (ModelLease::attachment).
  std::function<Result<std::shared_ptr<void>>(const CatalogEntry& entry, Engine& engine)> attach;
};

// One model as List() shows it.
struct ModelInfo {
  std::string id;
  std::vector<std::string> aliases;
  std::vector<std::string> tags;  // the preset's, informational
  std::string path;
  ModelSource source = ModelSource::kModelsDir;
  ModelStatus status = ModelStatus::kUnloaded;
  // The last load failed, or the file changed on disk (llama-server: status unloaded with "failed": true).
  bool failed = false;
  Status last_error;    // why, while failed
  EngineConfig config;  // what the model is (or would be) created with; compute is the router's
  std::string chat_template;
  bool load_on_startup = false;
  int64_t loaded_since_ms = 0;  // Unix time in ms of the current load, 0 when not loaded
  int64_t last_used_ms = 0;     // last Acquire or lease release, 0 if never used
  int leases = 0;               // requests holding the model now
  uint64_t loads = 0, load_failures = 0;
  // While loaded or sleeping (Engine::Memory and Engine::Stats); 0 otherwise.
  uint64_t weights_mapped_bytes = 0, weights_resident_bytes = 0;
  uint64_t kv_reserved_bytes = 0, kv_committed_bytes = 0, scratch_bytes = 0;
  // The model's charge to --memory-budget now (while loaded, or reserved while loading); 0 without one.
  uint64_t budget_charged_bytes = 0;
  BudgetCharge budget_charge;  // its parts: weights, kv, scratch, overhead
};

// --memory-budget as a whole; limit 0 when there is none.
struct BudgetInfo {
  uint64_t limit = 0, used = 0;
  uint64_t peak = 0;  // the most `used` ever was
  int waiting = 0;    // loads and models' queued requests waiting for room now
};

struct ReloadResult {
  std::vector<std::string> added, removed, changed;  // ids; changed: new settings or a new file
  std::vector<std::string> unloaded;  // loaded models unloaded because they were removed or changed
};

namespace router_internal {
struct State;
struct Slot;
struct Instance;
}  // namespace router_internal

// Keeps one loaded model loaded while held (a use count: Unload waits for it, eviction never picks it).
// Movable; releasing (destructor or Release) marks the model used now. A lease may outlive the Router.
class ModelLease {
 public:
  ModelLease() = default;
  ModelLease(ModelLease&& other) noexcept = default;
  ModelLease& operator=(ModelLease&& other) noexcept;
  ModelLease(const ModelLease&) = delete;
  ModelLease& operator=(const ModelLease&) = delete;
  ~ModelLease();

  explicit operator bool() const { return inst_ != nullptr; }
  Engine& engine() const;
  const CatalogEntry& entry() const;  // the catalogue entry the model was loaded from
  const std::string& id() const { return entry().id; }
  // What RouterConfig::attach built for this load (null without a hook).
  const std::shared_ptr<void>& attachment() const;
  void Release();

 private:
  friend class Router;
  std::shared_ptr<router_internal::State> state_;
  std::shared_ptr<router_internal::Slot> slot_;
  std::shared_ptr<router_internal::Instance> inst_;
  bool use_ = true;  // releasing marks the model used (false for Router::Peek's leases)
};

class Router {
 public:
  // Builds the catalogue (a missing -m or preset file is an error here), creates the shared pool and loads
  // the load-on-startup models (more of them than models_max is an error, as llama-server; a model that
  // fails to load is logged and listed as failed, and the router starts anyway, as llama-server's does).
  static Result<std::unique_ptr<Router>> Create(RouterConfig config);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // A lease on a model, loading it first if it is unloaded and autoload is on (`autoload` overrides the
  // config per call, as llama-server's ?autoload=). Waits while another thread loads it (one load) or
  // unloads it; at models_max it unloads the least recently used model without a lease, or waits up to
  // max_wait_s for one to become free. Before it hands out a lease it stats the file: if it vanished, was
  // truncated or was replaced since it was loaded (or listed), the model is unloaded and this and every later
  // request for it fail until a rescan (other models are not affected). Errors:
  //   kNotFound          unknown id (the message lists the known ids); the model's file is gone
  //   kInvalidArgument   unloaded and autoload off (llama-server: 400 "model is not loaded")
  //   kCorrupt           the file was truncated, replaced or rewritten since it was loaded or listed
  //   kUnavailable       models_max reached and every loaded model is in use (with the figures)
  //   kUnimplemented     a preset section with only download keys (RemoteModelError; Peek too)
  //   the loader's code  the load failed (its message; the next Acquire tries again)
  Result<ModelLease> Acquire(const std::string& id_or_alias, std::optional<bool> autoload = std::nullopt);

  // A lease on a model only if it is loaded now (not loading, not sleeping): never loads, waits or counts
  // as a use (LRU order and the idle sleep are unchanged), for probes and scrapes (/health, /metrics).
  // kNotFound for an unknown id, kUnavailable (naming the status) when it is not loaded.
  Result<ModelLease> Peek(const std::string& id_or_alias);

  // Loads a model now (any autoload setting), evicting as Acquire does. A model that is loading is waited
  // for. kInvalidArgument if it is already loaded (llama-server: "model is already running").
  Status Load(const std::string& id_or_alias);
  // Unloads a model: new requests for it wait, running ones get the model's stop-timeout (or the config's) to
  // finish; after that the router forgets the engine, which is destroyed when its last lease ends (llama-
  // server kills the instance then; an in-process engine cannot be taken from a request using it).
  // kInvalidArgument if it is not loaded (llama-server: "model is not running").
  Status Unload(const std::string& id_or_alias);
  // Rescans the sources (/models?reload=1): new models are listed, models whose file or settings changed are
  // unloaded and relisted, removed ones dropped, and the "file changed" errors are cleared. Loaded models
  // that are unchanged keep running. If the scan fails (say the directory is gone) nothing changes.
  Result<ReloadResult> Reload();

  std::vector<ModelInfo> List() const;  // sorted by id
  // "a, b, c" (ModelCatalog::KnownIds), for messages; reads no engine figures, unlike List().
  std::string KnownIds() const;
  Result<ModelInfo> Info(const std::string& id_or_alias) const;

  // Engine::ReleaseIdle on one model (id or alias) or, with an empty id, on every loaded model, least
  // recently used first, stopping once `enough_bytes` (> 0) are released. Returns the bytes released. Each
  // engine is leased while it is called (an Unload waits for the call; this is not a use in LRU order).
  Result<uint64_t> ReleaseIdle(const std::string& id_or_alias, bool weights, uint64_t enough_bytes = 0);

  BudgetInfo budget() const;
  // The budget object itself (null without --memory-budget), for figures and tests.
  const std::shared_ptr<MemoryBudget>& memory_budget() const;

  const RouterConfig& config() const;
  const std::shared_ptr<SharedCompute>& compute() const;
  // Engines the router let go of (Unload's timeout, a rescan, a changed file) while requests still held them;
  // each is destroyed when its last lease ends. Their memory is not in List().
  int draining() const;

 private:
  struct Held;
  explicit Router(std::shared_ptr<router_internal::State> state) : state_(std::move(state)) {}
  Result<Held> Ensure(const std::string& name, bool autoload, bool lease, bool explicit_load);
  std::shared_ptr<router_internal::State> state_;
};

}  // namespace lazyslot
