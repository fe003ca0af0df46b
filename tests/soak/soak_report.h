// Tallies of a soak run, the pass/fail judgement (crashes, stuck slots, wrong answers, errors, memory
// growth beyond the KV still held) and the markdown report.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "soak_server.h"
#include "soak_workload.h"

namespace lazyslot::soak {

struct KindTally {
  uint64_t sent = 0, answered = 0, cancelled = 0, errors = 0, wrong = 0;
  std::vector<double> latency_s;  // answered requests
};

struct Tallies {
  std::mutex mu;
  KindTally kinds[static_cast<int>(Kind::kCount)];
  std::map<std::string, uint64_t> errors;  // "kind: type" -> count
  std::vector<std::string> wrong_samples;  // the first few, for the report
  uint64_t emb_vectors = 0, emb_exact = 0;
  double emb_min_cos = 1.0, emb_max_abs = 0.0;
};

// Server memory at one moment: the process (/proc) and the KV/scratch gauges (/metrics).
struct MemPoint {
  std::string label;
  double t = 0;  // seconds into the load
  ProcMemory proc;
  uint64_t kv_committed = 0, kv_resident = 0, scratch = 0;
};

struct Report {
  std::string cfg_line;
  double load_s = 0, idle_wait_s = 0;
  std::vector<MemPoint> mem;             // after start, before load, after load (idle)
  std::vector<MemPoint> timeline;        // every 10 s during the load
  int slots_total = 0, stuck_slots = 0;  // -1: /slots could not be read
  int ref_mismatch = 0;                  // second single-client pass before the load vs the first
  int post_mismatch = 0;                 // single-client pass after the load vs the first (-1: it failed)
  std::string post_error;
  bool alive_at_end = false;
  std::string exit_text, stop_text;
  int log_errors = 0, log_warnings = 0;
  std::vector<std::pair<std::string, double>> server_counters;  // deltas over the load
  // Filled by Judge.
  int64_t rss_growth = 0, rss_allowed = 0;
  std::vector<std::string> failures;
};

// Counter deltas (after - before) of the server's request, token, disconnect and HTTP status counters.
std::vector<std::pair<std::string, double>> CounterDeltas(const std::map<std::string, double>& before,
                                                          const std::map<std::string, double>& after);
// Lines of a log that start with `prefix` ("E " errors, "W " warnings).
int CountLogLines(const std::string& log, const std::string& prefix);
// Fills rep->failures and the memory figures; true when the run passes.
bool Judge(double slack_mib, Report* rep, Tallies& t);
std::string RenderReport(const Report& rep, Tallies& t, bool pass);

}  // namespace lazyslot::soak
