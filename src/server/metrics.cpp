// GET /metrics: Prometheus text exposition (format 0.0.4). Names follow llama-server's `llamacpp:` metrics
// with a `lazyslot:` prefix, plus KV-cache memory (reserved vs committed) and the process's resident memory.
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

}  // namespace

std::string RenderMetrics(const ServerState& st) {
  const EngineStats s = st.engine->Stats();
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
  w.Metric("lazyslot:requests_deferred", "gauge", "Requests waiting in the queue for a slot.", s.queue_length);
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
  w.Header("lazyslot:slot_committed_bytes", "gauge", "KV-cache bytes committed per slot.");
  for (const SlotInfo& slot : s.slots) {
    w.Sample("lazyslot:slot_committed_bytes", "slot=\"" + std::to_string(slot.id) + "\"",
             static_cast<double>(slot.committed_bytes));
  }
  w.Header("lazyslot:slot_tokens", "gauge", "KV cells in use per slot.");
  for (const SlotInfo& slot : s.slots) {
    w.Sample("lazyslot:slot_tokens", "slot=\"" + std::to_string(slot.id) + "\"", slot.n_tokens);
  }
  const vm::ProcessMemory mem = vm::ReadProcessMemory();
  w.Metric("lazyslot:process_resident_memory_bytes", "gauge", "Resident set size of the process.",
           static_cast<double>(mem.rss));
  w.Metric("lazyslot:process_resident_anon_bytes", "gauge", "Anonymous part of the resident set.",
           static_cast<double>(mem.rss_anon));
  w.Metric("lazyslot:process_resident_file_bytes", "gauge", "File-backed part of the resident set (weights).",
           static_cast<double>(mem.rss_file));
  w.Metric("lazyslot:client_disconnects_total", "counter", "Requests whose client left before the end.",
           static_cast<double>(st.streams_disconnected.load()));
  w.Header("lazyslot:http_responses_total", "counter", "HTTP responses by status code.");
  {
    std::lock_guard<std::mutex> lock(st.counters_mu);
    for (const auto& [code, n] : st.responses_by_status) {
      w.Sample("lazyslot:http_responses_total", "status=\"" + std::to_string(code) + "\"",
               static_cast<double>(n));
    }
  }
  return w.Take();
}

}  // namespace lazyslot::server
