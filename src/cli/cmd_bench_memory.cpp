// `lazyslot bench-memory`: the memory benchmark of docs/memory.md. For each KV mode (lazy, eager) it starts
// `lazyslot serve` as a child process, drives it over HTTP (one 1,000-token request, then two at once, then
// idle until the KV and then the weights are released, then the first request again), samples the child's
// RSS (/proc/PID/status) and committed KV (/metrics) all along, and writes a table, a JSON file and an SVG
// chart of RSS over time.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "core/status.h"
#include "server/http/httplib_include.h"

extern char** environ;

namespace lazyslot::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct BenchOptions {
  std::string model = "/work/models/qwen3-0.6b-q8_0.gguf";
  int parallel = 2;
  int ctx = 16384;
  int threads = 2;
  int prompt_tokens = 1000;
  int n_predict = 64;
  int speed_reps = 5;  // interleaved requests per mode for the TTFT and tokens/s medians (0: first request)
  double idle_timeout = 3;
  double idle_weights = 6;
  int port = 18480;
  std::string modes = "lazy,eager";
  std::string out_dir = "bench/out";
  std::string cache_type = "f16";
  std::string replot;  // a bench_memory.json to redraw instead of running
};

struct Sample {
  double t = 0;  // seconds since the child started
  uint64_t rss = 0, anon = 0, file = 0, kv = 0;
};

struct Phase {
  std::string name;
  Sample at;  // the figure (for "during": the peak over the phase)
};

struct ModeResult {
  std::string mode;
  std::vector<Phase> phases;
  std::vector<Sample> series;
  std::vector<std::pair<double, std::string>> marks;  // phase boundaries for the chart
  double ttft_ms = 0, gen_tps = 0, wall_s = 0;
  double ttft_reload_ms = 0;
  bool reload_same = false;
  int32_t cache_n_first = -1;
  int speed_n = 0;  // requests behind the TTFT and tokens/s medians (0: the first request alone)
};

double MiB(uint64_t b) { return b / 1048576.0; }

Sample ReadChild(pid_t pid) {
  Sample s;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %llu kB", &kb) == 1) s.rss = kb * 1024;
    if (std::sscanf(line.c_str(), "RssAnon: %llu kB", &kb) == 1) s.anon = kb * 1024;
    if (std::sscanf(line.c_str(), "RssFile: %llu kB", &kb) == 1) s.file = kb * 1024;
  }
  return s;
}

// One gauge from the Prometheus text of /metrics; 0 when absent.
uint64_t MetricValue(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return static_cast<uint64_t>(std::stod(line.substr(name.size() + 1)));
  }
  return 0;
}

class Child {
 public:
  Status Start(const std::vector<std::string>& args, const std::string& log_path) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return IoError("cannot start lazyslot serve: " + std::string(std::strerror(rc)));
    t0_ = Clock::now();
    return Status::Ok();
  }
  ~Child() { Stop(); }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  bool alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  pid_t pid() const { return pid_; }
  double Seconds() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

 private:
  pid_t pid_ = -1;
  Clock::time_point t0_;
};

// Samples the child every 100 ms; keeps the series and the peak since the last Reset().
class Sampler {
 public:
  Sampler(const Child& child, int port) : child_(child), port_(port) {
    thread_ = std::thread([this] {
      httplib::Client cli("127.0.0.1", port_);
      cli.set_read_timeout(5, 0);
      while (!done_.load()) {
        Sample s = ReadChild(child_.pid());
        s.t = child_.Seconds();
        if (auto r = cli.Get("/metrics"); r && r->status == 200) {
          s.kv = MetricValue(r->body, "lazyslot:kv_committed_bytes");
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          series_.push_back(s);
          peak_.rss = std::max(peak_.rss, s.rss);
          peak_.anon = std::max(peak_.anon, s.anon);
          peak_.file = std::max(peak_.file, s.file);
          peak_.kv = std::max(peak_.kv, s.kv);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  ~Sampler() {
    done_ = true;
    thread_.join();
  }
  void ResetPeak() {
    std::lock_guard<std::mutex> lock(mu_);
    peak_ = Sample{};
  }
  Sample Peak() {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_;
  }
  std::vector<Sample> Series() {
    std::lock_guard<std::mutex> lock(mu_);
    return series_;
  }

 private:
  const Child& child_;
  int port_;
  std::atomic<bool> done_{false};
  std::mutex mu_;
  std::vector<Sample> series_;
  Sample peak_;
  std::thread thread_;
};

// A reading taken now: RSS from /proc, committed KV from /metrics (the cache's own tracking).
Sample Now(const Child& child, httplib::Client& cli) {
  Sample s = ReadChild(child.pid());
  s.t = child.Seconds();
  if (auto r = cli.Get("/metrics"); r && r->status == 200)
    s.kv = MetricValue(r->body, "lazyslot:kv_committed_bytes");
  return s;
}

// Random ordinary tokens (the upper part of the vocabulary holds the special tokens, so it is left out).
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::vector<int> RandomPrompt(int n, uint32_t seed, int n_vocab) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(std::min(1000, n_vocab / 4), n_vocab * 2 / 3);
  std::vector<int> p(n);
  for (int& t : p) t = d(rng);
  return p;
}

Result<json> Complete(int port, const std::vector<int>& prompt, int n_predict) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(1200, 0);
  json body = {{"prompt", prompt},   {"n_predict", n_predict}, {"temperature", 0},
               {"ignore_eos", true}, {"cache_prompt", true},   {"seed", 1}};
  auto r = cli.Post("/completion", body.dump(), "application/json");
  if (!r) return IoError("POST /completion failed: " + httplib::to_string(r.error()));
  if (r->status != 200)
    return Internal("POST /completion: HTTP " + std::to_string(r->status) + ": " + r->body);
  return json::parse(r->body);
}

void Sleep(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// Starts `lazyslot serve` in `mode` (lazy or eager) on `port`, waits until it is ready, returns n_vocab.
Result<int> StartServer(const BenchOptions& o, const std::string& mode, int port, const std::string& log,
                        Child& child) {
  std::vector<std::string> args = {"lazyslot",
                                   "serve",
                                   "-m",
                                   o.model,
                                   "--parallel",
                                   std::to_string(o.parallel),
                                   "--ctx-size",
                                   std::to_string(o.ctx),
                                   "--threads",
                                   std::to_string(o.threads),
                                   "--port",
                                   std::to_string(port),
                                   "--idle-timeout",
                                   std::to_string(o.idle_timeout),
                                   "--idle-release-weights",
                                   std::to_string(o.idle_weights)};
  if (o.cache_type != "f16") {
    for (const char* flag : {"--cache-type-k", "--cache-type-v"}) {
      args.push_back(flag);
      args.push_back(o.cache_type);
    }
  }
  if (mode == "eager") args.push_back("--kv-eager");
  LS_RETURN_IF_ERROR(child.Start(args, log));
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(10, 0);
  bool up = false;
  for (int i = 0; i < 1200 && !up; ++i) {  // two minutes
    if (!child.alive()) return Internal("lazyslot serve (" + mode + ") exited during start-up; see " + log);
    auto r = cli.Get("/health");
    up = r && r->status == 200;
    if (!up) Sleep(0.1);
  }
  if (!up) return Unavailable("lazyslot serve (" + mode + ") did not become ready; see " + log);
  int n_vocab = 0;
  if (auto r = cli.Get("/v1/models"); r && r->status == 200) {
    n_vocab = json::parse(r->body)["data"][0]["meta"].value("n_vocab", 0);
  }
  if (n_vocab < 16) return Internal("cannot read n_vocab from /v1/models; see " + log);
  return n_vocab;
}

Result<ModeResult> RunMode(const BenchOptions& o, const std::string& mode, int port) {
  ModeResult m;
  m.mode = mode;
  const std::string log = (std::filesystem::path(o.out_dir) / ("bench_memory_" + mode + ".log")).string();
  Child child;
  LS_ASSIGN_OR_RETURN(const int n_vocab, StartServer(o, mode, port, log, child));
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(10, 0);
  Sampler sampler(child, port);
  Sleep(0.5);
  auto mark = [&](const std::string& what) { m.marks.push_back({child.Seconds(), what}); };
  m.phases.push_back({"after start", Now(child, cli)});
  std::fprintf(stderr, "[%s] up at %.1f s: RSS %.0f MiB, KV %.0f MiB\n", mode.c_str(), child.Seconds(),
               MiB(m.phases.back().at.rss), MiB(m.phases.back().at.kv));

  // One request alone: its timings are the TTFT and generation speed figures.
  const std::vector<int> prompt_a = RandomPrompt(o.prompt_tokens, 1, n_vocab);
  mark("request");
  const Clock::time_point t0 = Clock::now();
  LS_ASSIGN_OR_RETURN(json first, Complete(port, prompt_a, o.n_predict));
  m.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  m.ttft_ms = first["timings"]["prompt_ms"].get<double>();
  m.gen_tps = first["timings"]["predicted_per_second"].get<double>();
  Sleep(0.3);  // the engine publishes its figures after the step that ended the request
  m.phases.push_back({"after 1 request", Now(child, cli)});
  std::fprintf(stderr, "[%s] request: %.1f s, TTFT %.0f ms, %.2f tokens/s; RSS %.0f MiB, KV %.0f MiB\n",
               mode.c_str(), m.wall_s, m.ttft_ms, m.gen_tps, MiB(m.phases.back().at.rss),
               MiB(m.phases.back().at.kv));

  // Two at once (other prompts, so neither reuses the first request's cells).
  mark("2 concurrent");
  sampler.ResetPeak();
  Result<json> r1 = Internal("not run"), r2 = Internal("not run");
  std::thread a([&] { r1 = Complete(port, RandomPrompt(o.prompt_tokens, 2, n_vocab), o.n_predict); });
  std::thread b([&] { r2 = Complete(port, RandomPrompt(o.prompt_tokens, 3, n_vocab), o.n_predict); });
  a.join();
  b.join();
  if (!r1.ok()) return r1.status();
  if (!r2.ok()) return r2.status();
  Sample peak = sampler.Peak();
  Sample now = Now(child, cli);
  peak.rss = std::max(peak.rss, now.rss);
  peak.kv = std::max(peak.kv, now.kv);
  m.phases.push_back({"peak during 2 concurrent", peak});
  std::fprintf(stderr, "[%s] 2 concurrent: peak RSS %.0f MiB, KV %.0f MiB\n", mode.c_str(), MiB(peak.rss),
               MiB(peak.kv));

  // Idle: first the KV and scratch go (--idle-timeout), then the weights (--idle-release-weights).
  mark("idle");
  const Clock::time_point idle_start = Clock::now();
  auto sleep_until = [&](double s) {
    std::this_thread::sleep_until(
        idle_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)));
  };
  // Read between the two releases (or 1.5 s after the first when the weights go much later).
  sleep_until(std::min(o.idle_timeout + 1.5, (o.idle_timeout + o.idle_weights) / 2));
  m.phases.push_back({"after idle timeout", Now(child, cli)});
  sleep_until(o.idle_weights + 1.5);
  m.phases.push_back({"after idle weights release", Now(child, cli)});
  std::fprintf(stderr, "[%s] idle: RSS %.0f MiB (KV %.0f MiB), then %.0f MiB after the weights went\n",
               mode.c_str(), MiB(m.phases[m.phases.size() - 2].at.rss),
               MiB(m.phases[m.phases.size() - 2].at.kv), MiB(m.phases.back().at.rss));

  // The first request again: the weights page back in and the answer is the same.
  mark("request again");
  LS_ASSIGN_OR_RETURN(json again, Complete(port, prompt_a, o.n_predict));
  m.ttft_reload_ms = again["timings"]["prompt_ms"].get<double>();
  m.reload_same = again["content"] == first["content"];
  m.cache_n_first = again["timings"].value("cache_n", -1);
  Sleep(0.3);
  m.phases.push_back({"after the request again", Now(child, cli)});
  m.series = sampler.Series();
  child.Stop();
  return m;
}

std::string Table(const std::vector<ModeResult>& results) {
  std::string t = "| phase |";
  std::string sep = "| --- |";
  for (const ModeResult& r : results) {
    t += " " + r.mode + " RSS MiB (anon / file) | " + r.mode + " KV committed MiB |";
    sep += " ---: | ---: |";
  }
  t += "\n" + sep + "\n";
  char buf[160];
  for (size_t p = 0; p < results[0].phases.size(); ++p) {
    t += "| " + results[0].phases[p].name + " |";
    for (const ModeResult& r : results) {
      const Sample& s = r.phases[p].at;
      std::snprintf(buf, sizeof buf, " %.0f (%.0f / %.0f) | %.1f |", MiB(s.rss), MiB(s.anon), MiB(s.file),
                    MiB(s.kv));
      t += buf;
    }
    t += "\n";
  }
  auto row = [&](const char* name, auto fn) {
    t += std::string("| ") + name + " |";
    for (const ModeResult& r : results) t += " " + fn(r) + " | |";
    t += "\n";
  };
  row("time to first token (ms)", [](const ModeResult& r) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", r.ttft_ms);
    return std::string(b);
  });
  row("generation (tokens/s)", [](const ModeResult& r) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", r.gen_tps);
    return std::string(b);
  });
  row("TTFT after the weights were released (ms)", [](const ModeResult& r) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", r.ttft_reload_ms);
    return std::string(b);
  });
  row("same answer after the release",
      [](const ModeResult& r) { return std::string(r.reload_same ? "yes" : "NO"); });
  if (results[0].speed_n > 0) {
    t += "\nTime to first token and generation: medians of " + std::to_string(results[0].speed_n) +
         " requests per mode with fresh prompts, sent in turn to both modes' servers running side by side.\n";
  } else {
    t += "\nTime to first token and generation: the first request of each mode.\n";
  }
  return t;
}

// RSS (solid) and committed KV (dashed) over time, one colour per mode.
std::string Chart(const std::vector<ModeResult>& results) {
  const double w = 900, h = 420, l = 70, r = 20, top = 30, bottom = 50;
  double t_max = 1, y_max = 1;
  for (const ModeResult& m : results) {
    for (const Sample& s : m.series) {
      t_max = std::max(t_max, s.t);
      y_max = std::max(y_max, MiB(s.rss));
    }
  }
  y_max = std::ceil(y_max / 500) * 500;
  auto x = [&](double t) { return l + (w - l - r) * t / t_max; };
  auto y = [&](double mib) { return top + (h - top - bottom) * (1 - mib / y_max); };
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  for (double v = 0; v <= y_max + 1; v += 500) {
    svg << "<line x1='" << l << "' x2='" << w - r << "' y1='" << y(v) << "' y2='" << y(v)
        << "' stroke='#ddd'/><text x='" << l - 6 << "' y='" << y(v) + 4 << "' text-anchor='end'>" << v
        << "</text>\n";
  }
  int step = 10;
  for (int s : {10, 20, 30, 60, 120, 300, 600}) {
    step = s;
    if (t_max / s <= 12) break;
  }
  for (int t = 0; t <= t_max; t += step) {
    svg << "<text x='" << x(t) << "' y='" << h - bottom + 16 << "' text-anchor='middle'>" << t << "</text>\n";
  }
  svg << "<text x='" << (l + w - r) / 2 << "' y='" << h - 12
      << "' text-anchor='middle'>seconds since start</text>\n"
      << "<text x='14' y='" << (top + h - bottom) / 2 << "' transform='rotate(-90 14 "
      << (top + h - bottom) / 2 << ")' text-anchor='middle'>MiB</text>\n";
  const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};
  for (size_t i = 0; i < results.size(); ++i) {
    const ModeResult& m = results[i];
    for (int kind = 0; kind < 2; ++kind) {
      svg << "<polyline fill='none' stroke='" << colours[i % 4] << "' stroke-width='" << (kind ? 1.2 : 2)
          << "'" << (kind ? " stroke-dasharray='5,3'" : "") << " points='";
      for (const Sample& s : m.series) svg << x(s.t) << "," << y(MiB(kind ? s.kv : s.rss)) << " ";
      svg << "'/>\n";
    }
    for (const auto& [t, what] : m.marks) {
      svg << "<line x1='" << x(t) << "' x2='" << x(t) << "' y1='" << top << "' y2='" << h - bottom
          << "' stroke='" << colours[i % 4] << "' stroke-opacity='0.25'/>\n";
      (void)what;
    }
    svg << "<text x='" << l + 10 + i * 300 << "' y='" << top - 10 << "' fill='" << colours[i % 4] << "'>"
        << m.mode << ": RSS (solid), KV committed (dashed)</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

// Rebuilds the results from a JSON file this command wrote (for --replot).
Result<std::vector<ModeResult>> LoadResults(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read " + path);
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(path + ": not a bench-memory JSON file");
  std::vector<ModeResult> out;
  for (const char* mode : {"lazy", "eager"}) {
    if (!j.contains(mode)) continue;
    const json& m = j[mode];
    ModeResult r;
    r.mode = mode;
    for (const json& p : m["phases"]) {
      Sample s;
      s.rss = p["rss"];
      s.anon = p["rss_anon"];
      s.file = p["rss_file"];
      s.kv = p["kv_committed"];
      r.phases.push_back({p["phase"], s});
    }
    for (const json& v : m["series_t_rss_kv"]) {
      Sample s;
      s.t = v[0];
      s.rss = v[1];
      s.kv = v[2];
      r.series.push_back(s);
    }
    if (m.contains("marks")) r.marks = m["marks"].get<std::vector<std::pair<double, std::string>>>();
    r.ttft_ms = m["ttft_ms"];
    r.gen_tps = m["gen_tokens_per_s"];
    r.speed_n = m.value("speed_requests", 0);
    r.ttft_reload_ms = m["ttft_after_reload_ms"];
    r.reload_same = m["same_after_reload"];
    out.push_back(std::move(r));
  }
  if (out.empty()) return InvalidArgument(path + ": no lazy or eager results");
  return out;
}

// Speed, both modes at once: one server per mode, up side by side, and the same fresh prompts sent to each
// in turn (lazy first in even rounds, eager first in odd ones), so both see the same machine load. Every
// prompt is new, so in lazy mode each request lands in a slot that is trimmed first and commits its KV pages
// anew. TTFT and tokens/s per mode are the medians of its requests.
Status RunSpeed(const BenchOptions& o, int port, std::vector<ModeResult>& results) {
  std::vector<ModeResult*> modes;
  for (ModeResult& r : results) modes.push_back(&r);
  std::vector<std::unique_ptr<Child>> children;
  std::vector<int> ports;
  int n_vocab = 0;
  for (ModeResult* r : modes) {
    children.push_back(std::make_unique<Child>());
    ports.push_back(port++);
    const std::string log =
        (std::filesystem::path(o.out_dir) / ("bench_memory_speed_" + r->mode + ".log")).string();
    LS_ASSIGN_OR_RETURN(n_vocab, StartServer(o, r->mode, ports.back(), log, *children.back()));
  }
  std::vector<std::vector<double>> ttft(modes.size()), tps(modes.size());
  for (int round = 0; round < o.speed_reps; ++round) {
    const std::vector<int> prompt = RandomPrompt(o.prompt_tokens, 1000 + round, n_vocab);
    for (size_t k = 0; k < modes.size(); ++k) {
      const size_t i = round % 2 ? modes.size() - 1 - k : k;
      LS_ASSIGN_OR_RETURN(json r, Complete(ports[i], prompt, o.n_predict));
      ttft[i].push_back(r["timings"]["prompt_ms"].get<double>());
      tps[i].push_back(r["timings"]["predicted_per_second"].get<double>());
    }
  }
  for (size_t i = 0; i < modes.size(); ++i) {
    modes[i]->ttft_ms = Median(ttft[i]);
    modes[i]->gen_tps = Median(tps[i]);
    modes[i]->speed_n = static_cast<int>(ttft[i].size());
    std::fprintf(stderr, "[%s] speed: %zu interleaved requests, median TTFT %.0f ms, median %.2f tokens/s\n",
                 modes[i]->mode.c_str(), ttft[i].size(), modes[i]->ttft_ms, modes[i]->gen_tps);
    children[i]->Stop();
  }
  return Status::Ok();
}

Status RunBench(const BenchOptions& o) {
  std::error_code ec;
  if (o.replot.empty() && !std::filesystem::exists(o.model, ec)) {
    return NotFound("model " + o.model +
                    " does not exist; make one with: lazyslot synth --preset qwen3-0.6b " +
                    "--type q8_0 -o " + o.model);
  }
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) return IoError("cannot create " + o.out_dir + ": " + ec.message());
  std::vector<ModeResult> results;
  if (!o.replot.empty()) {
    LS_ASSIGN_OR_RETURN(results, LoadResults(o.replot));
  }
  std::stringstream modes(o.replot.empty() ? o.modes : "");
  std::string mode;
  int port = o.port;
  while (std::getline(modes, mode, ',')) {
    if (mode != "lazy" && mode != "eager")
      return InvalidArgument("--modes: lazy or eager, got '" + mode + "'");
    LS_ASSIGN_OR_RETURN(ModeResult r, RunMode(o, mode, port++));
    results.push_back(std::move(r));
  }
  if (results.empty()) return InvalidArgument("--modes: nothing to run");
  if (o.replot.empty() && o.speed_reps > 0) LS_RETURN_IF_ERROR(RunSpeed(o, port, results));
  const std::string table = Table(results);
  std::printf("%s", table.c_str());
  // The targets, checked where both modes ran.
  const ModeResult* lazy = nullptr;
  const ModeResult* eager = nullptr;
  for (const ModeResult& r : results) (r.mode == "lazy" ? lazy : eager) = &r;
  std::string checks;
  auto check = [&](bool ok, const std::string& what) {
    checks += std::string(ok ? "- [x] " : "- [ ] ") + what + "\n";
  };
  char buf[256];
  if (lazy) {
    const auto& p = lazy->phases;
    check(p[0].at.kv == 0, "lazy: KV committed at start is 0");
    const uint64_t bound = uint64_t(o.prompt_tokens + o.n_predict) * 112 * 1024;
    std::snprintf(buf, sizeof buf, "lazy: KV after the request %.1f MiB <= %d x 112 KiB = %.1f MiB",
                  MiB(p[1].at.kv), o.prompt_tokens + o.n_predict, MiB(bound));
    check(p[1].at.kv <= bound, buf);
    const double d = MiB(p[3].at.rss) - MiB(p[0].at.rss);
    std::snprintf(buf, sizeof buf,
                  "lazy: after the idle timeout KV is %.1f MiB and RSS is %+.1f MiB from the "
                  "post-start figure (target: 0 and within 16 MiB)",
                  MiB(p[3].at.kv), d);
    check(p[3].at.kv == 0 && std::abs(d) <= 16, buf);
    std::snprintf(buf, sizeof buf, "lazy: RSS after the weights were released %.1f MiB (target <= 100 MiB)",
                  MiB(p[4].at.rss));
    check(p[4].at.rss <= (100ull << 20), buf);
    check(lazy->reload_same, "lazy: the same answer after the weights paged back in");
  }
  if (lazy && eager) {
    std::snprintf(buf, sizeof buf, "TTFT lazy/eager = %.3f (target <= 1.05)", lazy->ttft_ms / eager->ttft_ms);
    check(lazy->ttft_ms <= 1.05 * eager->ttft_ms, buf);
    std::snprintf(buf, sizeof buf, "tokens/s lazy/eager = %.3f (target >= 0.97)",
                  lazy->gen_tps / eager->gen_tps);
    check(lazy->gen_tps >= 0.97 * eager->gen_tps, buf);
  }
  std::printf("\n%s", checks.c_str());

  json out = json::object();
  out["options"] = {{"model", o.model},
                    {"parallel", o.parallel},
                    {"ctx_size", o.ctx},
                    {"threads", o.threads},
                    {"prompt_tokens", o.prompt_tokens},
                    {"n_predict", o.n_predict},
                    {"idle_timeout", o.idle_timeout},
                    {"idle_release_weights", o.idle_weights},
                    {"cache_type", o.cache_type}};
  for (const ModeResult& r : results) {
    json phases = json::array();
    for (const Phase& p : r.phases) {
      phases.push_back({{"phase", p.name},
                        {"rss", p.at.rss},
                        {"rss_anon", p.at.anon},
                        {"rss_file", p.at.file},
                        {"kv_committed", p.at.kv}});
    }
    json series = json::array();
    for (const Sample& s : r.series) series.push_back({s.t, s.rss, s.kv});
    out[r.mode] = {{"phases", phases},
                   {"ttft_ms", r.ttft_ms},
                   {"gen_tokens_per_s", r.gen_tps},
                   {"speed_requests", r.speed_n},
                   {"ttft_after_reload_ms", r.ttft_reload_ms},
                   {"same_after_reload", r.reload_same},
                   {"series_t_rss_kv", series},
                   {"marks", r.marks}};
  }
  const std::filesystem::path dir(o.out_dir);
  if (o.replot.empty()) std::ofstream(dir / "bench_memory.json") << out.dump(1) << "\n";
  std::ofstream(dir / "bench_memory.md") << table << "\n" << checks;
  std::ofstream(dir / "bench_memory.svg") << Chart(results);
  std::printf("\nwrote %s, %s, %s\n", (dir / "bench_memory.md").c_str(), (dir / "bench_memory.json").c_str(),
              (dir / "bench_memory.svg").c_str());
  return Status::Ok();
}

}  // namespace

void AddBenchMemoryCommand(CLI::App& root, int* exit_code) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = root.add_subcommand(
      "bench-memory",
      "Memory benchmark: lazy vs eager KV, RSS over a request, two at once, idle and weight release");
  sub->add_option("-m,--model", o->model, "GGUF model (make one with synth --preset qwen3-0.6b --type q8_0)")
      ->capture_default_str();
  sub->add_option("--parallel", o->parallel, "Slots")->capture_default_str();
  sub->add_option("-c,--ctx-size", o->ctx, "Total KV cells")->capture_default_str();
  sub->add_option("-t,--threads", o->threads, "Compute threads of the server")->capture_default_str();
  sub->add_option("--prompt-tokens", o->prompt_tokens, "Prompt length of each request")
      ->capture_default_str();
  sub->add_option("-n,--n-predict", o->n_predict, "Tokens generated per request")->capture_default_str();
  sub->add_option("--speed-reps", o->speed_reps,
                  "Requests per mode for TTFT and tokens/s, both servers up, sent in turn")
      ->capture_default_str();
  sub->add_option("--idle-timeout", o->idle_timeout, "Server's --idle-timeout (s)")->capture_default_str();
  sub->add_option("--idle-release-weights", o->idle_weights, "Server's --idle-release-weights (s)")
      ->capture_default_str();
  sub->add_option("--cache-type", o->cache_type, "KV cache type for K and V: f16, q8_0, f32")
      ->capture_default_str();
  sub->add_option("--port", o->port, "First port (one per mode)")->capture_default_str();
  sub->add_option("--modes", o->modes, "Comma-separated: lazy, eager")->capture_default_str();
  sub->add_option("--replot", o->replot,
                  "Redraw the table and chart from a bench_memory.json (runs nothing)");
  sub->add_option("--out-dir", o->out_dir, "Where the table, JSON, SVG chart and server logs go")
      ->capture_default_str();
  sub->callback([o, exit_code] {
    Status s = RunBench(*o);
    if (!s.ok()) {
      std::fprintf(stderr, "lazyslot bench-memory: error: %s\n", s.message().c_str());
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace lazyslot::cli
