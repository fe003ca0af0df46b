// GET /memory (one measurement now, with the events kept) and GET /memory/stream (Server-Sent Events: the
// history kept, then a sample every half second with the events since the last): the process's resident
// memory and each model's weights, KV per slot and budget, as the web page's memory view draws them. The
// fields are listed in docs/webui.md.
#include <chrono>

#include "core/vm.h"
#include "server/http/errors.h"
#include "server/memory_monitor.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

using Json = nlohmann::json;

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One engine's figures, added to its model's object `m`.
void EngineFigures(const Engine& engine, Json& m) {
  const EngineStats s = engine.Stats();
  const MemoryReport mem = engine.Memory();
  const EngineConfig& cfg = engine.config();
  m["kind"] = cfg.pooling == PoolingType::kRank ? "rerank" : cfg.embeddings ? "embeddings" : "generation";
  m["weights_mapped"] = mem.weights_mapped;
  m["weights_resident"] = mem.weights_resident;
  m["weights_released"] = s.weights_released;
  m["kv_reserved"] = s.kv_reserved_bytes;
  m["kv_committed"] = s.kv_committed_bytes;
  m["kv_shared"] = s.kv_shared_bytes;
  m["kv_budget"] = s.kv_budget_bytes;
  m["kv_budget_used"] = s.kv_budget_used_bytes;
  m["kv_parked_bytes"] = s.kv_parked_bytes;
  m["scratch"] = s.scratch_bytes;
  m["idle_releases"] = s.idle_releases;
  m["weight_releases"] = s.weight_releases;
  m["kv_parks"] = s.kv_parks;
  m["kv_resumes"] = s.kv_resumes;
  m["requests_total"] = s.requests_total;
  m["prompt_tokens_total"] = s.prompt_tokens_total;
  m["generated_tokens_total"] = s.generated_tokens_total;
  m["queue_length"] = s.queue_length;
  Json slots = Json::array();
  for (const SlotInfo& slot : s.slots) {
    slots.push_back({{"id", slot.id},
                     {"busy", slot.busy},
                     {"n_tokens", slot.n_tokens},
                     {"n_ctx", slot.n_ctx},
                     {"committed", slot.committed_bytes},
                     {"shared", slot.shared_bytes}});
  }
  m["slots"] = std::move(slots);
}

// One sample's figures now (no "seq" or "events": the monitor adds those).
Json Measure(ServerState& st) {
  const vm::ProcessMemory p = vm::ReadProcessMemory();
  Json sample = {
      {"t", UnixMs()},
      {"process",
       {{"rss", p.rss}, {"rss_anon", p.rss_anon}, {"rss_file", p.rss_file}, {"rss_shmem", p.rss_shmem}}},
      {"memory_budget", nullptr}};
  Json models = Json::array();
  if (st.router) {
    const BudgetInfo budget = st.router->budget();
    if (budget.limit > 0) sample["memory_budget"] = {{"limit", budget.limit}, {"used", budget.used}};
    for (const ModelInfo& info : st.router->List()) {
      Json m = {{"id", info.id}, {"status", ModelStatusName(info.status)}};
      if (info.status == ModelStatus::kLoaded) {
        Result<ModelLease> lease = st.router->Peek(info.id);  // neither loads it nor counts a use
        if (lease.ok()) EngineFigures(lease->engine(), m);
      }
      models.push_back(std::move(m));
    }
  } else if (st.engine && st.model) {
    Json m = {{"id", st.model->model_id}, {"status", "loaded"}};
    EngineFigures(*st.engine, m);
    models.push_back(std::move(m));
  }
  sample["models"] = std::move(models);
  return sample;
}

std::string Event(const char* name, const Json& data) {
  return std::string("event: ") + name + "\ndata: " + Dump(data) + "\n\n";
}

void Stream(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  MemoryMonitor* monitor = st.memory_monitor.get();
  monitor->Watch();
  struct Cursor {
    uint64_t seq = 0;
    bool started = false;
  };
  auto cursor = std::make_shared<Cursor>();
  const bool history = req.get_param_value("history") != "0";
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // nginx: pass each event on at once
  auto provider = [&st, monitor, cursor, history](size_t, httplib::DataSink& sink) {
    auto write = [&sink](const std::string& s) { return sink.write(s.data(), s.size()); };
    if (!cursor->started) {
      cursor->started = true;
      Json h = monitor->History(&cursor->seq, history);
      if (!history) h["events"] = Json::array();
      return write(Event("history", h));
    }
    if (st.stopping.load() || st.draining.load()) {
      write(Event("end", {{"reason", "the server is shutting down"}}));
      sink.done();
      return true;
    }
    const std::vector<Json> samples = monitor->NewerThan(&cursor->seq, std::chrono::seconds(1));
    if (samples.empty()) return write(": waiting\n\n");  // also finds a client that left
    for (const Json& s : samples) {
      if (!write(Event("sample", s))) return false;
    }
    return true;
  };
  res.set_chunked_content_provider("text/event-stream", provider, [monitor](bool) { monitor->Unwatch(); });
}

}  // namespace

void RegisterMemoryRoutes(ServerState& st) {
  st.memory_monitor = std::make_unique<MemoryMonitor>([&st] { return Measure(st); });
  st.http.Get("/memory", GuardRoute(st, [](ServerState& s, const httplib::Request&, httplib::Response& res) {
                s.memory_monitor->Touch();  // a poller sees events from now on
                uint64_t seq = 0;
                Json now = Measure(s);
                now["events"] = std::move(s.memory_monitor->History(&seq, false)["events"]);
                res.set_content(Dump(now), "application/json; charset=utf-8");
              }));
  st.http.Get("/memory/stream", GuardRoute(st, Stream));
}

}  // namespace lazyslot::server
