// Judgement and markdown report of a soak run (see soak_report.h).
#include "soak_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace lazyslot::soak {
namespace {

double MiB(double bytes) { return bytes / 1048576.0; }

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5));
  return v[i];
}

const MemPoint* Find(const Report& rep, const std::string& label) {
  for (const MemPoint& m : rep.mem) {
    if (m.label == label) return &m;
  }
  return nullptr;
}

}  // namespace

std::vector<std::pair<std::string, double>> CounterDeltas(const std::map<std::string, double>& before,
                                                          const std::map<std::string, double>& after) {
  static const char* kNames[] = {"lazyslot:requests_total",          "lazyslot:requests_cancelled_total",
                                 "lazyslot:requests_rejected_total", "lazyslot:client_disconnects_total",
                                 "lazyslot:prompt_tokens_total",     "lazyslot:prompt_tokens_cached_total",
                                 "lazyslot:tokens_predicted_total",  "lazyslot:http_responses_total"};
  std::vector<std::pair<std::string, double>> out;
  for (const char* name : kNames) {
    for (const auto& [key, value] : after) {
      if (key.rfind(name, 0) != 0) continue;
      if (key.size() != std::string(name).size() && key[std::string(name).size()] != '{') continue;
      const auto b = before.find(key);
      out.emplace_back(key, value - (b == before.end() ? 0.0 : b->second));
    }
  }
  return out;
}

int CountLogLines(const std::string& log, const std::string& prefix) {
  int n = 0;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) n += line.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

bool Judge(double slack_mib, Report* rep, Tallies& t) {
  std::lock_guard<std::mutex> lock(t.mu);
  auto& f = rep->failures;
  if (!rep->alive_at_end) f.push_back("the server crashed or exited: " + rep->exit_text);
  if (rep->stuck_slots != 0) {
    f.push_back(rep->stuck_slots < 0 ? "GET /slots could not be read after the load"
                                     : std::to_string(rep->stuck_slots) + " slot(s) still busy " +
                                           Fmt("%.0f", rep->idle_wait_s) + " s after the load");
  }
  uint64_t wrong = 0, errors = 0;
  for (const KindTally& k : t.kinds) wrong += k.wrong;
  for (const auto& [what, n] : t.errors) {
    // 503 is the queue's back-pressure (--max-queue), a designed answer, not a fault.
    if (what.find("HTTP 503") == std::string::npos) errors += n;
  }
  if (wrong > 0) f.push_back(std::to_string(wrong) + " wrong answer(s) under load");
  if (errors > 0) f.push_back(std::to_string(errors) + " failed request(s) (errors other than 503)");
  if (rep->ref_mismatch != 0) {
    f.push_back(std::to_string(rep->ref_mismatch) + " single-client answer(s) changed between two passes");
  }
  if (rep->post_mismatch != 0) {
    f.push_back(rep->post_mismatch < 0
                    ? "the single-client pass after the load failed: " + rep->post_error
                    : std::to_string(rep->post_mismatch) + " single-client answer(s) differ after the load");
  }
  const MemPoint* before = Find(*rep, "before load");
  const MemPoint* after = Find(*rep, "after load (idle)");
  if (before && after && before->proc.ok && after->proc.ok) {
    // RSS may grow by the KV the slots still hold (cache_prompt) and by larger activation buffers; anything
    // more than `slack_mib` is a leak or heap growth.
    const int64_t kv_growth =
        static_cast<int64_t>(after->kv_committed) - static_cast<int64_t>(before->kv_committed);
    const int64_t scratch_growth =
        static_cast<int64_t>(after->scratch) - static_cast<int64_t>(before->scratch);
    rep->rss_growth = static_cast<int64_t>(after->proc.rss) - static_cast<int64_t>(before->proc.rss);
    rep->rss_allowed = std::max<int64_t>(0, kv_growth) + std::max<int64_t>(0, scratch_growth) +
                       static_cast<int64_t>(slack_mib * 1048576.0);
    if (rep->rss_growth > rep->rss_allowed) {
      f.push_back("RSS grew by " + Fmt("%.1f", MiB(rep->rss_growth)) + " MiB, more than the " +
                  Fmt("%.1f", MiB(rep->rss_allowed)) + " MiB allowed (KV + scratch growth + slack)");
    }
  } else if (rep->alive_at_end) {
    f.push_back("memory could not be read before and after the load");
  }
  return f.empty();
}

std::string RenderReport(const Report& rep, Tallies& t, bool pass) {
  std::lock_guard<std::mutex> lock(t.mu);
  std::ostringstream o;
  o << "\n## Soak: " << (pass ? "PASS" : "FAIL") << "\n\n";
  o << rep.cfg_line << "; load " << Fmt("%.0f", rep.load_s) << " s.\n\n";
  o << "| request | sent | answered | cancelled (client hung up) | errors | wrong | p50 s | p95 s | max s "
       "|\n";
  o << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  KindTally total;
  for (int k = 0; k < static_cast<int>(Kind::kCount); ++k) {
    const KindTally& kt = t.kinds[k];
    o << "| " << KindName(static_cast<Kind>(k)) << " | " << kt.sent << " | " << kt.answered << " | "
      << kt.cancelled << " | " << kt.errors << " | " << kt.wrong << " | "
      << Fmt("%.2f", Percentile(kt.latency_s, 0.5)) << " | " << Fmt("%.2f", Percentile(kt.latency_s, 0.95))
      << " | " << Fmt("%.2f", Percentile(kt.latency_s, 1.0)) << " |\n";
    total.sent += kt.sent;
    total.answered += kt.answered;
    total.cancelled += kt.cancelled;
    total.errors += kt.errors;
    total.wrong += kt.wrong;
    total.latency_s.insert(total.latency_s.end(), kt.latency_s.begin(), kt.latency_s.end());
  }
  o << "| **all** | " << total.sent << " | " << total.answered << " | " << total.cancelled << " | "
    << total.errors << " | " << total.wrong << " | " << Fmt("%.2f", Percentile(total.latency_s, 0.5)) << " | "
    << Fmt("%.2f", Percentile(total.latency_s, 0.95)) << " | "
    << Fmt("%.2f", Percentile(total.latency_s, 1.0)) << " |\n\n";

  o << "| check | result |\n| --- | --- |\n";
  o << "| server process | "
    << (rep.alive_at_end ? "alive at the end (crashes: 0)" : "DIED: " + rep.exit_text)
    << "; on SIGTERM: " << rep.stop_text << " |\n";
  o << "| stuck slots | " << rep.stuck_slots << " of " << rep.slots_total << " (idle "
    << Fmt("%.1f", rep.idle_wait_s) << " s after the last client finished) |\n";
  o << "| wrong answers | " << total.wrong
    << " (text and finish_reason equal to the single-client greedy answer) |\n";
  o << "| embeddings | " << t.emb_vectors << " vectors, " << t.emb_exact
    << " bit-identical to the reference; min cos " << Fmt("%.9f", t.emb_min_cos) << ", max abs diff "
    << Fmt("%.3g", t.emb_max_abs) << " |\n";
  o << "| single-client passes | before load: " << rep.ref_mismatch
    << " changed; after load: " << rep.post_mismatch << " changed |\n";
  o << "| server log | " << rep.log_errors << " error lines, " << rep.log_warnings << " warning lines |\n";
  if (!t.errors.empty()) {
    o << "| errors by type | ";
    bool first = true;
    for (const auto& [what, n] : t.errors) {
      o << (first ? "" : "; ") << what << ": " << n;
      first = false;
    }
    o << " |\n";
  }
  o << "\n| server memory | VmRSS MiB | RssAnon MiB | RssFile MiB | KV committed MiB | KV resident MiB | "
       "scratch MiB |\n";
  o << "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  auto row = [&](const MemPoint& m, const std::string& label) {
    o << "| " << label << " | " << Fmt("%.1f", MiB(m.proc.rss)) << " | " << Fmt("%.1f", MiB(m.proc.rss_anon))
      << " | " << Fmt("%.1f", MiB(m.proc.rss_file)) << " | " << Fmt("%.2f", MiB(m.kv_committed)) << " | "
      << Fmt("%.2f", MiB(m.kv_resident)) << " | " << Fmt("%.2f", MiB(m.scratch)) << " |\n";
  };
  // Start and before-load rows, a few points through the load (a leak shows as a rising trend, KV as ups
  // and downs), then the rows after the load.
  for (size_t i = 0; i < rep.mem.size() && i < 2; ++i) row(rep.mem[i], rep.mem[i].label);
  uint64_t peak = 0;
  if (!rep.timeline.empty()) {
    const size_t n = rep.timeline.size();
    size_t last = static_cast<size_t>(-1);
    for (size_t q = 1; q <= 4; ++q) {
      const size_t i = std::min(n - 1, (n * q) / 4 - (q == 4 ? 1 : 0));
      if (i == last) continue;
      last = i;
      row(rep.timeline[i], "during load, " + Fmt("%.0f", rep.timeline[i].t) + " s");
    }
    for (const MemPoint& m : rep.timeline) peak = std::max(peak, m.proc.rss);
  }
  for (size_t i = 2; i < rep.mem.size(); ++i) row(rep.mem[i], rep.mem[i].label);
  if (peak > 0)
    o << "\nPeak VmRSS during the load (10 s samples): " << Fmt("%.1f", MiB(peak)) << " MiB. ";
  else
    o << "\n";
  o << "RSS growth before -> after load: " << Fmt("%.1f", MiB(rep.rss_growth)) << " MiB; allowed "
    << Fmt("%.1f", MiB(rep.rss_allowed)) << " MiB (KV and scratch growth + slack).\n";

  if (!rep.server_counters.empty()) {
    o << "\nServer counters over the load: ";
    bool first = true;
    for (const auto& [k, v] : rep.server_counters) {
      o << (first ? "" : ", ") << k.substr(k.find(':') + 1) << " " << Fmt("%.0f", v);
      first = false;
    }
    o << ".\n";
  }
  if (!t.wrong_samples.empty()) {
    o << "\nWrong answers (first " << t.wrong_samples.size() << "):\n";
    for (const std::string& s : t.wrong_samples) o << "- " << s << "\n";
  }
  if (!rep.failures.empty()) {
    o << "\nFailures:\n";
    for (const std::string& s : rep.failures) o << "- " << s << "\n";
  }
  return o.str();
}

}  // namespace lazyslot::soak
