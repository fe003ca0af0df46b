// lazyslot_soak: a bounded soak of a real `lazyslot serve` on loopback. Records single-client greedy answers,
// runs N concurrent clients with a mixed load (chat, streams, completions, embeddings, ~10% of streams
// dropped mid-way) for a set time, then checks: no crash, no stuck slot, no wrong answer, flat memory.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "soak_http.h"
#include "soak_report.h"
#include "soak_server.h"
#include "soak_workload.h"

namespace lazyslot::soak {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Config {
  std::string binary = LAZYSLOT_BINARY;
  std::string model = std::string(LAZYSLOT_SHARED_DIR) + "/models/TinyLLama-v0-Q4_0.gguf";
  double seconds = 600;
  int clients = 16;
  int parallel = 4;
  int ctx = 2048;  // 512 cells per slot with --parallel 4
  int batch = 64;  // small, so long prompts are read in chunks mixed with other slots' decoding
  int threads = 0;
  double abandon_frac = 0.10;   // streams dropped mid-way
  double no_cache_frac = 0.10;  // requests with cache_prompt off
  double slack_mib = 16;        // RSS growth allowed beyond KV and scratch growth
  double grace_s = 30;          // for slots to go idle after the load
  double request_timeout_s = 300;
  uint64_t seed = 1;
  double cos_tol = 0.99999;
  std::string report_path;  // also write the markdown report here
  std::string log_path;     // server log (default: a temp file)
};

void Usage() {
  std::fprintf(
      stderr,
      "usage: lazyslot_soak [--seconds N] [--clients N] [--parallel N] [--model GGUF] [--binary PATH]\n"
      "                     [--threads N] [--abandon F] [--slack-mib M] [--seed N] [--report FILE]\n"
      "                     [--server-log FILE]\n"
      "Duration: --seconds, else env LAZYSLOT_SOAK_SECONDS, else 600.\n");
}

bool ParseArgs(int argc, char** argv, Config* c) {
  if (const char* env = std::getenv("LAZYSLOT_SOAK_SECONDS"); env && *env) c->seconds = std::atof(env);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](const char** v) {
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    const char* v = nullptr;
    if (a == "-h" || a == "--help") return false;
    if (!next(&v)) {
      std::fprintf(stderr, "lazyslot_soak: %s needs a value\n", a.c_str());
      return false;
    }
    if (a == "--seconds")
      c->seconds = std::atof(v);
    else if (a == "--clients")
      c->clients = std::atoi(v);
    else if (a == "--parallel")
      c->parallel = std::atoi(v);
    else if (a == "--model")
      c->model = v;
    else if (a == "--binary")
      c->binary = v;
    else if (a == "--threads")
      c->threads = std::atoi(v);
    else if (a == "--abandon")
      c->abandon_frac = std::atof(v);
    else if (a == "--slack-mib")
      c->slack_mib = std::atof(v);
    else if (a == "--seed")
      c->seed = std::strtoull(v, nullptr, 10);
    else if (a == "--report")
      c->report_path = v;
    else if (a == "--server-log")
      c->log_path = v;
    else {
      std::fprintf(stderr, "lazyslot_soak: unknown option %s\n", a.c_str());
      return false;
    }
  }
  if (c->seconds <= 0 || c->clients < 1 || c->parallel < 1) {
    std::fprintf(stderr, "lazyslot_soak: --seconds, --clients and --parallel must be positive\n");
    return false;
  }
  return true;
}

struct Outcome {
  Reply reply;
  Answer answer;
  std::string error;  // aggregatable error type; empty when the request was answered or abandoned
  double seconds = 0;
};

Outcome Execute(int port, const Workload& w, const Plan& p, double timeout_s) {
  Exchange ex;
  ex.port = port;
  ex.method = "POST";
  ex.path = RequestPath(p.kind);
  ex.body = RequestBody(w, p);
  ex.timeout_s = timeout_s;
  ex.hang_up_with_reset = p.hang_up_with_reset;
  SseCounter counter;
  if (IsStream(p.kind) && p.abandon_after > 0) {
    ex.sink = [&](const std::string& piece) { return counter.Feed(piece) < p.abandon_after; };
  }
  Outcome o;
  const Clock::time_point t0 = Clock::now();
  o.reply = Send(ex);
  o.seconds = Since(t0);
  if (o.reply.abandoned) return o;
  if (o.reply.failure != Failure::kNone) {
    o.error = std::string("transport: ") + FailureName(o.reply.failure);
  } else if (o.reply.status != 200) {
    o.error = "HTTP " + std::to_string(o.reply.status);
  } else if (!ParseAnswer(p.kind, o.reply.body, &o.answer, &o.error)) {
    if (o.error.empty()) o.error = "unparsable answer";
  }
  return o;
}

// The single-client answers every later answer must equal.
struct Reference {
  std::vector<Answer> chat, completion;
  std::vector<std::vector<float>> embedding;
};

bool RecordReference(int port, const Workload& w, double timeout_s, Reference* ref, std::string* error) {
  auto one = [&](Kind k, int i, Answer* out) {
    Plan p;
    p.kind = k;
    p.case_index = i;
    const Outcome o = Execute(port, w, p, timeout_s);
    if (!o.error.empty()) {
      *error = std::string("reference ") + KindName(k) + " case " + std::to_string(i) + ": " + o.error + " " +
               o.reply.body.substr(0, 300);
      return false;
    }
    *out = o.answer;
    return true;
  };
  ref->chat.resize(w.chat.size());
  ref->completion.resize(w.completion.size());
  for (size_t i = 0; i < w.chat.size(); ++i) {
    if (!one(Kind::kChat, static_cast<int>(i), &ref->chat[i])) return false;
  }
  for (size_t i = 0; i < w.completion.size(); ++i) {
    if (!one(Kind::kCompletion, static_cast<int>(i), &ref->completion[i])) return false;
  }
  for (size_t i = 0; i < w.embedding.size(); ++i) {
    Answer a;
    if (!one(Kind::kEmbedding, static_cast<int>(i), &a)) return false;
    if (a.embeddings.size() != 1) {
      *error = "reference embedding " + std::to_string(i) + ": expected one vector";
      return false;
    }
    ref->embedding.push_back(std::move(a.embeddings[0]));
  }
  return true;
}

std::string Shorten(const std::string& s, size_t n = 60) {
  std::string out = s.size() > n ? s.substr(0, n) + "..." : s;
  for (char& c : out) c = (c == '\n' || c == '|') ? ' ' : c;
  return out;
}

// Classifies one outcome into the tallies; compares answered requests with the reference.
void Tally(const Workload& w, const Reference& ref, const Plan& p, const Outcome& o, double cos_tol,
           Tallies* t) {
  std::lock_guard<std::mutex> lock(t->mu);
  KindTally& k = t->kinds[static_cast<int>(p.kind)];
  ++k.sent;
  if (o.reply.abandoned) {
    ++k.cancelled;
    return;
  }
  if (!o.error.empty()) {
    ++k.errors;
    ++t->errors[std::string(KindName(p.kind)) + ": " + o.error];
    return;
  }
  ++k.answered;
  k.latency_s.push_back(o.seconds);
  bool wrong = false;
  std::string why;
  if (p.kind == Kind::kEmbedding) {
    if (o.answer.embeddings.size() != static_cast<size_t>(p.n_inputs)) {
      wrong = true;
      why = "embeddings: " + std::to_string(o.answer.embeddings.size()) + " vectors for " +
            std::to_string(p.n_inputs) + " inputs";
    }
    for (size_t i = 0; !wrong && i < o.answer.embeddings.size(); ++i) {
      const size_t idx = (p.case_index + i) % w.embedding.size();
      const VectorDiff d = CompareVectors(o.answer.embeddings[i], ref.embedding[idx]);
      ++t->emb_vectors;
      t->emb_exact += d.exact ? 1 : 0;
      t->emb_min_cos = std::min(t->emb_min_cos, d.cos);
      t->emb_max_abs = std::max(t->emb_max_abs, d.max_abs);
      if (d.cos < cos_tol) {
        wrong = true;
        why = "embedding input " + std::to_string(idx) + ": cos " + std::to_string(d.cos);
      }
    }
  } else {
    const bool chat = p.kind == Kind::kChat || p.kind == Kind::kChatStream;
    const Answer& r = chat ? ref.chat[p.case_index] : ref.completion[p.case_index];
    if (o.answer.text != r.text || o.answer.finish_reason != r.finish_reason) {
      wrong = true;
      why = std::string(KindName(p.kind)) + " case " + std::to_string(p.case_index) +
            (p.cache_prompt ? "" : " (cache_prompt off)") + ": got '" + Shorten(o.answer.text) + "' (" +
            o.answer.finish_reason + "), want '" + Shorten(r.text) + "' (" + r.finish_reason + ")";
    }
  }
  if (wrong) {
    ++k.wrong;
    if (t->wrong_samples.size() < 10) t->wrong_samples.push_back(why);
  }
}

// A random request: kind by weight, case, stream abandon, cache_prompt.
Plan RandomPlan(const Workload& w, const Config& cfg, std::mt19937_64& rng) {
  // chat 30%, chat stream 25%, completion 15%, completion stream 10%, embeddings 20%
  static const int kWeights[] = {30, 25, 15, 10, 20};
  std::uniform_int_distribution<int> pick(0, 99);
  std::uniform_real_distribution<double> u(0, 1);
  int r = pick(rng), k = 0;
  while (r >= kWeights[k]) r -= kWeights[k++];
  Plan p;
  p.kind = static_cast<Kind>(k);
  const size_t n_cases = p.kind == Kind::kEmbedding                               ? w.embedding.size()
                         : (p.kind == Kind::kChat || p.kind == Kind::kChatStream) ? w.chat.size()
                                                                                  : w.completion.size();
  p.case_index = static_cast<int>(rng() % n_cases);
  if (p.kind == Kind::kEmbedding) p.n_inputs = 1 + static_cast<int>(rng() % 3);
  p.cache_prompt = u(rng) >= cfg.no_cache_frac;
  if (IsStream(p.kind) && u(rng) < cfg.abandon_frac) {
    p.abandon_after = 1 + static_cast<int>(rng() % 4);
    p.hang_up_with_reset = (rng() & 1) != 0;
  }
  return p;
}

MemPoint Sample(ServerChild& s, const char* label, double t) {
  MemPoint m;
  m.label = label;
  m.t = t;
  m.proc = s.Memory();
  const auto metrics = s.Metrics();
  auto get = [&](const char* name) {
    const auto it = metrics.find(name);
    return it == metrics.end() ? 0.0 : it->second;
  };
  m.kv_committed = static_cast<uint64_t>(get("lazyslot:kv_committed_bytes"));
  m.kv_resident = static_cast<uint64_t>(get("lazyslot:kv_resident_bytes"));
  m.scratch = static_cast<uint64_t>(get("lazyslot:scratch_bytes"));
  return m;
}

// Polls /slots until no slot is busy and nothing is queued, up to `grace_s`; returns the last state.
SlotsState WaitIdle(ServerChild& s, double grace_s, double* waited_s) {
  const Clock::time_point t0 = Clock::now();
  SlotsState st;
  for (;;) {
    st = s.Slots();
    const auto m = s.Metrics();
    const auto q = m.find("lazyslot:requests_deferred");
    const bool queued = q != m.end() && q->second > 0;
    if ((st.ok && st.n_busy == 0 && !queued) || Since(t0) > grace_s || !s.Alive()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  *waited_s = Since(t0);
  return st;
}

int Run(const Config& cfg) {
  const Workload w = DefaultWorkload();
  std::string log_path = cfg.log_path;
  if (log_path.empty()) {
    log_path =
        (std::filesystem::temp_directory_path() / ("lazyslot-soak-" + std::to_string(getpid()) + ".log"))
            .string();
  }
  std::vector<std::string> args = {"-m",           cfg.model,
                                   "--parallel",   std::to_string(cfg.parallel),
                                   "--ctx-size",   std::to_string(cfg.ctx),
                                   "--batch-size", std::to_string(cfg.batch),
                                   "--threads",    std::to_string(cfg.threads),
                                   "--embeddings"};
  std::printf("soak: starting %s serve %s ... (log %s)\n", cfg.binary.c_str(), cfg.model.c_str(),
              log_path.c_str());
  std::fflush(stdout);
  std::string error;
  std::unique_ptr<ServerChild> server = ServerChild::Start(cfg.binary, args, log_path, 180, &error);
  if (!server) {
    std::fprintf(stderr, "soak: %s\n", error.c_str());
    return 2;
  }
  Report rep;
  rep.cfg_line = "model " + std::filesystem::path(cfg.model).filename().string() + ", --parallel " +
                 std::to_string(cfg.parallel) + ", --ctx-size " + std::to_string(cfg.ctx) +
                 ", --batch-size " + std::to_string(cfg.batch) + ", --embeddings; " +
                 std::to_string(cfg.clients) + " clients, " +
                 std::to_string(static_cast<int>(cfg.abandon_frac * 100)) + "% of streams abandoned, " +
                 std::to_string(static_cast<int>(cfg.no_cache_frac * 100)) +
                 "% with cache_prompt off, seed " + std::to_string(cfg.seed);
  rep.mem.push_back(Sample(*server, "after start", 0));

  Reference ref;
  if (!RecordReference(server->port(), w, cfg.request_timeout_s, &ref, &error)) {
    std::fprintf(stderr, "soak: %s\nserver log tail:\n%s\n", error.c_str(), FileTail(log_path, 3000).c_str());
    return 2;
  }
  // A second single-client pass (now partly from the prompt cache) must give the same answers.
  Reference again;
  if (!RecordReference(server->port(), w, cfg.request_timeout_s, &again, &error)) {
    std::fprintf(stderr, "soak: %s\n", error.c_str());
    return 2;
  }
  for (size_t i = 0; i < ref.chat.size(); ++i) {
    rep.ref_mismatch += ref.chat[i].text != again.chat[i].text;
  }
  for (size_t i = 0; i < ref.completion.size(); ++i) {
    rep.ref_mismatch += ref.completion[i].text != again.completion[i].text;
  }
  for (size_t i = 0; i < ref.embedding.size(); ++i) {
    rep.ref_mismatch += CompareVectors(again.embedding[i], ref.embedding[i]).cos < cfg.cos_tol;
  }
  std::printf("soak: recorded %zu chat, %zu completion, %zu embedding references; e.g. completion 0: '%s'\n",
              ref.chat.size(), ref.completion.size(), ref.embedding.size(),
              Shorten(ref.completion[0].text, 100).c_str());
  std::fflush(stdout);

  const auto metrics_before = server->Metrics();
  rep.mem.push_back(Sample(*server, "before load", 0));

  Tallies tallies;
  std::atomic<bool> stop{false};
  const Clock::time_point t_load = Clock::now();
  const Clock::time_point deadline =
      t_load + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg.seconds));
  std::vector<std::thread> clients;
  for (int c = 0; c < cfg.clients; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937_64 rng(cfg.seed * 1000003ull + static_cast<uint64_t>(c));
      while (!stop.load() && Clock::now() < deadline) {
        const Plan p = RandomPlan(w, cfg, rng);
        const Outcome o = Execute(server->port(), w, p, cfg.request_timeout_s);
        Tally(w, ref, p, o, cfg.cos_tol, &tallies);
      }
    });
  }
  // Monitor: liveness every second, memory every 10 s, progress every 60 s.
  double next_sample = 10, next_progress = 60;
  bool crashed = false;
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    if (!server->Alive()) {
      crashed = true;
      stop = true;
      break;
    }
    const double t = Since(t_load);
    if (t >= next_sample) {
      rep.timeline.push_back(Sample(*server, "load", t));
      next_sample += 10;
    }
    if (t >= next_progress) {
      next_progress += 60;
      std::lock_guard<std::mutex> lock(tallies.mu);
      uint64_t sent = 0, answered = 0, errors = 0, wrong = 0;
      for (const KindTally& k : tallies.kinds) {
        sent += k.sent;
        answered += k.answered;
        errors += k.errors;
        wrong += k.wrong;
      }
      std::printf("soak: %4.0f s: sent %llu, answered %llu, errors %llu, wrong %llu, RSS %.1f MiB\n", t,
                  static_cast<unsigned long long>(sent), static_cast<unsigned long long>(answered),
                  static_cast<unsigned long long>(errors), static_cast<unsigned long long>(wrong),
                  rep.timeline.empty() ? 0.0 : rep.timeline.back().proc.rss / 1048576.0);
      std::fflush(stdout);
    }
  }
  for (std::thread& t : clients) t.join();
  rep.load_s = Since(t_load);
  crashed = crashed || !server->Alive();

  double waited = 0;
  const SlotsState idle = WaitIdle(*server, cfg.grace_s, &waited);
  rep.idle_wait_s = waited;
  rep.slots_total = idle.n_slots;
  rep.stuck_slots = idle.ok ? idle.n_busy : -1;
  crashed = crashed || !server->Alive();
  if (!crashed) {
    rep.mem.push_back(Sample(*server, "after load (idle)", rep.load_s));
    const auto metrics_after = server->Metrics();
    rep.server_counters = CounterDeltas(metrics_before, metrics_after);
    // The same single-client answers after the load (no state left behind that changes results).
    Reference post;
    if (RecordReference(server->port(), w, cfg.request_timeout_s, &post, &error)) {
      for (size_t i = 0; i < ref.chat.size(); ++i) rep.post_mismatch += ref.chat[i].text != post.chat[i].text;
      for (size_t i = 0; i < ref.completion.size(); ++i) {
        rep.post_mismatch += ref.completion[i].text != post.completion[i].text;
      }
      for (size_t i = 0; i < ref.embedding.size(); ++i) {
        rep.post_mismatch += CompareVectors(post.embedding[i], ref.embedding[i]).cos < cfg.cos_tol;
      }
    } else {
      rep.post_mismatch = -1;
      rep.post_error = error;
    }
  }
  rep.alive_at_end = !crashed && server->Alive();
  rep.exit_text = rep.alive_at_end ? "running" : server->ExitText();
  const std::string log_tail = FileTail(log_path, 200000);
  rep.log_errors = CountLogLines(log_tail, "E ");
  rep.log_warnings = CountLogLines(log_tail, "W ");
  const std::string stop_text = server->Stop();
  rep.stop_text = stop_text;

  const bool pass = Judge(cfg.slack_mib, &rep, tallies);
  const std::string md = RenderReport(rep, tallies, pass);
  std::printf("%s", md.c_str());
  if (!cfg.report_path.empty()) std::ofstream(cfg.report_path) << md;
  if (!pass) {
    std::printf("\nserver log: %s\n", log_path.c_str());
  } else if (cfg.log_path.empty()) {
    std::filesystem::remove(log_path);
  }
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace lazyslot::soak

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  lazyslot::soak::Config cfg;
  if (!lazyslot::soak::ParseArgs(argc, argv, &cfg)) {
    lazyslot::soak::Usage();
    return 2;
  }
  return lazyslot::soak::Run(cfg);
}
