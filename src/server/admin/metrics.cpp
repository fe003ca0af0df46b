// GET /metrics: Prometheus text exposition (format 0.0.4). Names follow llama-server's `llamacpp:` metrics
// with a `lazyslot:` prefix, plus KV-cache memory (reserved vs committed) and the process's resident memory.
// Router mode: per-model series carry a `model` label (every listed model, its status and memory), and the
// engine series of one model are those of `?model=`.
#include <cstdio>
#include <string>

#include "core/vm.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

class Writer {
 public:
  void Metric(const char* name, const char* type, const char* help, double value) {
    Header(name, type, help);
    Sample(name, "", value);
  }
  void Header(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += " ";
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += " ";
    out_ += type;
    out_ += "\n";
  }
  void Sample(const char* name, const std::string& labels, double value) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", value);
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += " ";
    out_ += buf;
    out_ += "\n";
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

void ServerCounters(const ServerState& st, Writer& w);  // the HTTP layer's own counters

std::string Label(const std::string& id) {
  std::string out = "model=\"";
  for (char c : id) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The router's own series: one sample per listed model.
void RouterMetrics(const Router& router, Writer& w) {
  const std::vector<ModelInfo> models = router.List();
  int loaded = 0;
  for (const ModelInfo& m : models) loaded += m.status == ModelStatus::kLoaded ? 1 : 0;
  w.Metric("lazyslot:models_listed", "gauge", "Models the router serves.",
           static_cast<double>(models.size()));
  w.Metric("lazyslot:models_loaded", "gauge", "Models loaded now (not sleeping).", loaded);
  const BudgetInfo budget = router.budget();
  w.Metric("lazyslot:memory_budget_bytes", "gauge", "--memory-budget (0: none).",
           static_cast<double>(budget.limit));
  w.Metric("lazyslot:memory_budget_used_bytes", "gauge",
           "Bytes charged to the budget now (weights, KV, scratch, overhead of every model).",
           static_cast<double>(budget.used));
  w.Metric("lazyslot:memory_budget_peak_bytes", "gauge", "Most bytes charged to the budget at once.",
           static_cast<double>(budget.peak));
  w.Metric("lazyslot:memory_budget_waiting", "gauge", "Requests and loads waiting for room in the budget.",
           budget.waiting);
  struct Series {
    const char* name;
    const char* type;
    const char* help;
    double (*value)(const ModelInfo&);
  };
  static const Series kSeries[] = {
      {"lazyslot:model_loaded", "gauge", "1 while the model is loaded (weights may be resident).",
       [](const ModelInfo& m) { return m.status == ModelStatus::kLoaded ? 1.0 : 0.0; }},
      {"lazyslot:model_sleeping", "gauge", "1 while the model sleeps (its weights' pages released).",
       [](const ModelInfo& m) { return m.status == ModelStatus::kSleeping ? 1.0 : 0.0; }},
      {"lazyslot:model_failed", "gauge", "1 when the last load failed or the file changed.",
       [](const ModelInfo& m) { return m.failed ? 1.0 : 0.0; }},
      {"lazyslot:model_requests_active", "gauge", "Requests using the model now.",
       [](const ModelInfo& m) { return static_cast<double>(m.leases); }},
      {"lazyslot:model_loads_total", "counter", "Loads of the model.",
       [](const ModelInfo& m) { return static_cast<double>(m.loads); }},
      {"lazyslot:model_load_failures_total", "counter", "Failed loads of the model.",
       [](const ModelInfo& m) { return static_cast<double>(m.load_failures); }},
      {"lazyslot:weights_mapped_bytes", "gauge", "Size of the model file mapping.",
       [](const ModelInfo& m) { return static_cast<double>(m.weights_mapped_bytes); }},
      {"lazyslot:weights_resident_bytes", "gauge", "Resident pages of the model file mapping.",
       [](const ModelInfo& m) { return static_cast<double>(m.weights_resident_bytes); }},
      {"lazyslot:kv_reserved_bytes", "gauge", "Address space reserved for the KV cache.",
       [](const ModelInfo& m) { return static_cast<double>(m.kv_reserved_bytes); }},
      {"lazyslot:kv_committed_bytes", "gauge", "KV-cache bytes backed by memory now.",
       [](const ModelInfo& m) { return static_cast<double>(m.kv_committed_bytes); }},
      {"lazyslot:scratch_bytes", "gauge", "Forward-pass activation buffers.",
       [](const ModelInfo& m) { return static_cast<double>(m.scratch_bytes); }},
      {"lazyslot:model_budget_charged_bytes", "gauge", "The model's charge to --memory-budget.",
       [](const ModelInfo& m) { return static_cast<double>(m.budget_charged_bytes); }},
  };
  for (const Series& series : kSeries) {
    w.Header(series.name, series.type, series.help);
    for (const ModelInfo& m : models) w.Sample(series.name, Label(m.id), series.value(m));
  }
}

}  // namespace

std::string RenderMetrics(const ServerState& st, const Engine* engine) {
  if (engine == nullptr) {  // router mode without ?model=: the router's series and the HTTP counters
    Writer w;
    RouterMetrics(*st.router, w);
    const vm::ProcessMemory mem = vm::ReadProcessMemory();
    w.Metric("lazyslot:process_resident_memory_bytes", "gauge", "Resident set size of the process.",
             static_cast<double>(mem.rss));
    ServerCounters(st, w);
    return w.Take();
  }
  const EngineStats s = engine->Stats();
  int busy = 0;
  for (const SlotInfo& slot : s.slots) busy += slot.busy ? 1 : 0;
  Writer w;
  w.Metric("lazyslot:requests_total", "counter", "Requests accepted by the engine.",
           static_cast<double>(s.requests_total));
  w.Metric("lazyslot:requests_cancelled_total", "counter", "Requests cancelled (client disconnected).",
           static_cast<double>(s.requests_cancelled));
  w.Metric("lazyslot:requests_rejected_total", "counter", "Requests refused by the engine (queue full).",
           static_cast<double>(s.requests_rejected));
  w.Metric("lazyslot:requests_processing", "gauge", "Requests holding a slot.", busy);
  w.Metric("lazyslot:requests_deferred", "gauge", "Requests waiting in the queue for a slot.",
           s.queue_length);
  w.Metric("lazyslot:slots_total", "gauge", "Slots (--parallel).", static_cast<double>(s.slots.size()));
  w.Metric("lazyslot:prompt_tokens_total", "counter", "Prompt tokens processed.",
           static_cast<double>(s.prompt_tokens_total));
  w.Metric("lazyslot:prompt_seconds_total", "counter", "Time spent on prompts.", s.prompt_seconds_total);
  w.Metric("lazyslot:tokens_predicted_total", "counter", "Tokens generated.",
           static_cast<double>(s.generated_tokens_total));
  w.Metric("lazyslot:tokens_predicted_seconds_total", "counter", "Time spent generating.",
           s.generation_seconds_total);
  w.Metric("lazyslot:prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.",
           s.prompt_seconds_total > 0 ? s.prompt_tokens_total / s.prompt_seconds_total : 0.0);
  w.Metric("lazyslot:predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.",
           s.generation_seconds_total > 0 ? s.generated_tokens_total / s.generation_seconds_total : 0.0);
  w.Metric("lazyslot:kv_reserved_bytes", "gauge", "Address space reserved for the KV cache.",
           static_cast<double>(s.kv_reserved_bytes));
  w.Metric("lazyslot:kv_committed_bytes", "gauge", "KV-cache bytes backed by memory now.",
           static_cast<double>(s.kv_committed_bytes));
  w.Metric("lazyslot:kv_shared_bytes", "gauge",
           "KV-cache bytes slots map from other slots (a common prefix held once; in kv_committed_bytes once).",
           static_cast<double>(s.kv_shared_bytes));
  w.Header("lazyslot:slot_committed_bytes", "gauge", "KV-cache bytes committed per slot.");
  for (const SlotInfo& slot : s.slots) {
    w.Sample("lazyslot:slot_committed_bytes", "slot=\"" + std::to_string(slot.id) + "\"",
             static_cast<double>(slot.committed_bytes));
  }
  w.Header("lazyslot:slot_tokens", "gauge", "KV cells in use per slot.");
  for (const SlotInfo& slot : s.slots) {
    w.Sample("lazyslot:slot_tokens", "slot=\"" + std::to_string(slot.id) + "\"", slot.n_tokens);
  }
  w.Metric("lazyslot:kv_peak_committed_bytes", "gauge", "Most KV-cache bytes committed at once so far.",
           static_cast<double>(s.kv_peak_committed_bytes));
  w.Metric("lazyslot:kv_budget_bytes", "gauge", "KV-cache budget (--kv-budget; 0: none).",
           static_cast<double>(s.kv_budget_bytes));
  w.Metric("lazyslot:kv_budget_used_bytes", "gauge", "KV bytes held against the budget by the slots.",
           static_cast<double>(s.kv_budget_used_bytes));
  w.Metric("lazyslot:prompt_tokens_cached_total", "counter", "Prompt tokens reused from a slot's kept KV.",
           static_cast<double>(s.prompt_tokens_cached_total));
  w.Metric("lazyslot:scratch_bytes", "gauge", "Forward-pass activation buffers.",
           static_cast<double>(s.scratch_bytes));
  w.Metric("lazyslot:idle_releases_total", "counter", "Times the idle timeout released the KV cache.",
           static_cast<double>(s.idle_releases));
  w.Metric("lazyslot:weight_releases_total", "counter", "Times idle weights were dropped from memory.",
           static_cast<double>(s.weight_releases));
  w.Metric("lazyslot:weights_released", "gauge", "1 while the weights are dropped and not yet paged back.",
           s.weights_released ? 1 : 0);
  w.Metric("lazyslot:kv_parked_files", "gauge", "Conversations parked on disk (--kv-park).",
           static_cast<double>(s.kv_parked_files));
  w.Metric("lazyslot:kv_parked_bytes", "gauge", "Bytes of parked conversations on disk (--kv-park).",
           static_cast<double>(s.kv_parked_bytes));
  w.Metric("lazyslot:kv_parks_total", "counter", "Conversations written to disk before their KV was released.",
           static_cast<double>(s.kv_parks));
  w.Metric("lazyslot:kv_resumes_total", "counter", "Parked conversations read back instead of computed.",
           static_cast<double>(s.kv_resumes));
  w.Metric("lazyslot:kv_park_failures_total", "counter",
           "Parking writes that failed and parked files refused on reading (their tokens are computed).",
           static_cast<double>(s.kv_park_failures));
  // Measured now (the KV arena's memory file, /proc/self for the rest).
  const MemoryReport mem = engine->Memory();
  w.Metric("lazyslot:kv_resident_bytes", "gauge", "KV-cache pages resident in RAM (each page once).",
           static_cast<double>(mem.kv_resident));
  w.Metric("lazyslot:weights_mapped_bytes", "gauge", "Size of the model file mapping.",
           static_cast<double>(mem.weights_mapped));
  w.Metric("lazyslot:weights_resident_bytes", "gauge", "Resident pages of the model file mapping.",
           static_cast<double>(mem.weights_resident));
  w.Metric("lazyslot:process_resident_memory_bytes", "gauge", "Resident set size of the process.",
           static_cast<double>(mem.rss));
  w.Metric("lazyslot:process_resident_anon_bytes", "gauge", "Anonymous part of the resident set.",
           static_cast<double>(mem.rss_anon));
  w.Metric("lazyslot:process_resident_file_bytes", "gauge", "File-backed part of the resident set (weights).",
           static_cast<double>(mem.rss_file));
  w.Metric("lazyslot:process_resident_shmem_bytes", "gauge",
           "Memory-file part of the resident set (the KV cache; a shared KV page once per slot that maps it).",
           static_cast<double>(mem.rss_shmem));
  if (st.router) RouterMetrics(*st.router, w);
  ServerCounters(st, w);
  return w.Take();
}

namespace {

void ServerCounters(const ServerState& st, Writer& w) {
  w.Metric("lazyslot:client_disconnects_total", "counter", "Requests whose client left before the end.",
           static_cast<double>(st.streams_disconnected.load()));
  w.Metric("lazyslot:connections_rejected_total", "counter",
           "Connections answered 503 at once because --max-connections were open.",
           static_cast<double>(st.connections_rejected.load()));
  w.Metric("lazyslot:requests_timed_out_total", "counter", "Requests cancelled by --request-timeout.",
           static_cast<double>(st.requests_timed_out.load()));
  w.Header("lazyslot:http_responses_total", "counter", "HTTP responses by status code.");
  {
    std::lock_guard<std::mutex> lock(st.counters_mu);
    for (const auto& [code, n] : st.responses_by_status) {
      w.Sample("lazyslot:http_responses_total", "status=\"" + std::to_string(code) + "\"",
               static_cast<double>(n));
    }
  }
}

}  // namespace
}  // namespace lazyslot::server
