// `lazyslot bench`: llama-bench-style throughput of prompt processing (pp) and generation (tg) through the
// server's own path (Model + KvCache + Forward, one slot, flash attention), plus the machine's streaming read
// bandwidth measured in the same run and tg's fraction of the bandwidth roofline.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "ops/bandwidth.h"
#include "ops/attention.h"
#include "quant/gemv_confirm.h"
#include "quant/quant.h"

namespace lazyslot::cli {
namespace {

struct BenchOptions {
  std::string model;
  std::vector<int> n_prompt{512};
  std::vector<int> n_gen{128};
  std::vector<int> depths{0};
  int threads = 0;
  int reps = 5;
  std::string flash_attn = "on";
  int bw_mib = 1024;
  bool no_bandwidth = false;
  bool synthetic_fill = false;
  bool mmap = false;  // weights as a file mapping (4 KiB pages) instead of a copy on huge pages
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Stats {
  double mean = 0, sd = 0;
};
Stats MeanSd(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() > 1) {
    for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
    s.sd = std::sqrt(s.sd / static_cast<double>(v.size() - 1));
  }
  return s;
}

// Progress goes to a terminal only, on one line that is overwritten.
class Progress {
 public:
  Progress() : on_(::isatty(STDERR_FILENO) != 0) {}
  void Show(const std::string& what) {
    if (!on_) return;
    std::fprintf(stderr, "\r\033[K%s", what.c_str());
    std::fflush(stderr);
  }
  void Clear() {
    if (on_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool on_;
};

// "qwen3 0.6B Q8_0": arch, parameter count and the type holding most of the weight bytes.
std::string Describe(const Model& m, uint64_t* bytes, uint64_t* params) {
  std::map<TensorType, uint64_t> by_type;
  *bytes = *params = 0;
  for (const gguf::TensorInfo& t : m.file().tensors()) {
    *bytes += t.nbytes;
    *params += static_cast<uint64_t>(t.n_elements());
    by_type[t.type] += t.nbytes;
  }
  TensorType main = TensorType::kF32;
  uint64_t most = 0;
  for (const auto& [type, b] : by_type) {
    if (b > most) most = b, main = type;
  }
  char size[32];
  const double p = static_cast<double>(*params);
  if (p >= 1e9) {
    std::snprintf(size, sizeof(size), "%.1fB", p / 1e9);
  } else {
    std::snprintf(size, sizeof(size), "%.1fM", p / 1e6);
  }
  std::string type = TypeName(main);
  for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return m.hparams().arch + " " + size + " " + type;
}

class Bench {
 public:
  Bench(const Model& model, KvCache& kv, ThreadPool& pool, AttentionMode mode)
      : model_(model), kv_(kv), fwd_(model, kv, pool, mode), rng_(1234) {}

  // Fills the slot with `depth` random tokens (prompt batches of up to 512), as the context held before a test.
  // `synthetic` writes random K/V rows straight into the cache instead: the tests after it cost the same (the
  // attention reads every held row whatever it holds), and deep contexts are ready in seconds.
  Status Fill(int depth, bool synthetic, Progress& progress) {
    LS_RETURN_IF_ERROR(kv_.Trim(0, 0).status());
    if (synthetic) {
      LS_RETURN_IF_ERROR(SyntheticFill(depth));
    } else {
      for (int done = 0; done < depth;) {
        const int n = std::min(512, depth - done);
        progress.Show("filling context: " + std::to_string(done) + "/" + std::to_string(depth));
        LS_RETURN_IF_ERROR(Decode(done, n));
        done += n;
      }
    }
    Snapshot(depth);
    return Status::Ok();
  }

  Status SyntheticFill(int depth) {
    const KvConfig& kc = kv_.config();
    constexpr int kDistinct = 64;  // distinct random rows, reused cyclically
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> row(std::max(kc.n_embd_k, kc.n_embd_v));
    std::vector<uint8_t> k_rows(kDistinct * kv_.k_row_bytes()), v_rows(kDistinct * kv_.v_row_bytes());
    for (int r = 0; r < kDistinct; ++r) {
      for (float& x : row) x = dist(rng_);
      quant::QuantizeRow(kc.type_k, row.data(), k_rows.data() + r * kv_.k_row_bytes(), kc.n_embd_k);
      for (float& x : row) x = dist(rng_);
      quant::QuantizeRow(kc.type_v, row.data(), v_rows.data() + r * kv_.v_row_bytes(), kc.n_embd_v);
    }
    for (int il = 0; il < kc.n_layer; ++il) {
      for (int32_t c = 0; c < depth; ++c) {
        std::memcpy(kv_.KRow(il, 0, c), k_rows.data() + (c % kDistinct) * kv_.k_row_bytes(), kv_.k_row_bytes());
        std::memcpy(kv_.VRow(il, 0, c), v_rows.data() + (c % kDistinct) * kv_.v_row_bytes(), kv_.v_row_bytes());
      }
    }
    kv_.SetCells(0, depth);
    return Status::Ok();
  }

  // Prompt processing: one batch of n tokens after `depth` held ones. Returns tokens/s.
  Result<double> Prompt(int depth, int n) {
    LS_RETURN_IF_ERROR(Rewind(depth));
    const double t0 = Now();
    LS_RETURN_IF_ERROR(Decode(depth, n));
    return n / (Now() - t0);
  }

  // Generation: n single-token steps after `depth` held ones, logits each step. Returns tokens/s.
  Result<double> Generate(int depth, int n) {
    LS_RETURN_IF_ERROR(Rewind(depth));
    const double t0 = Now();
    for (int i = 0; i < n; ++i) LS_RETURN_IF_ERROR(Decode(depth + i, 1));
    return n / (Now() - t0);
  }

 private:
  // A test's tokens slide a sliding-window layer's window past what the next test at the same depth needs
  // (KvCache::ReusableCells), so with such layers the held rows are copied once after the fill and written
  // back before each test, untimed, as a slot file is restored.
  void Snapshot(int depth) {
    saved_.clear();
    if (kv_.window() == 0) return;
    saved_floor_ = kv_.local_floor(0);
    for (int il = 0; il < kv_.config().n_layer; ++il) {
      const int32_t first = kv_.is_local(il) ? saved_floor_ : 0;
      const uint8_t* k = kv_.KRow(il, 0, first);
      const uint8_t* v = kv_.VRow(il, 0, first);
      saved_.insert(saved_.end(), k, k + (depth - first) * kv_.k_row_bytes());
      saved_.insert(saved_.end(), v, v + (depth - first) * kv_.v_row_bytes());
    }
  }

  Status Rewind(int depth) {
    LS_RETURN_IF_ERROR(kv_.Trim(0, depth).status());
    if (kv_.n_cells(0) == depth) return Status::Ok();
    const uint8_t* src = saved_.data();
    for (int il = 0; il < kv_.config().n_layer; ++il) {
      const int32_t first = kv_.is_local(il) ? saved_floor_ : 0;
      const size_t k_bytes = (depth - first) * kv_.k_row_bytes(), v_bytes = (depth - first) * kv_.v_row_bytes();
      std::memcpy(kv_.KRow(il, 0, first), src, k_bytes);
      std::memcpy(kv_.VRow(il, 0, first), src + k_bytes, v_bytes);
      src += k_bytes + v_bytes;
    }
    kv_.SetRestored(0, depth, saved_floor_);
    return Status::Ok();
  }

  // Random tokens at positions pos..pos+n-1, logits for the last one only (as llama-bench's batches).
  Status Decode(int pos, int n) {
    batch_.Clear();
    std::uniform_int_distribution<int32_t> tok(0, model_.hparams().n_vocab - 1);
    for (int i = 0; i < n; ++i) batch_.Add(tok(rng_), pos + i, 0, i + 1 == n ? Batch::kLogits : Batch::kNone);
    return fwd_.Run(batch_, &out_);
  }

  const Model& model_;
  KvCache& kv_;
  Forward fwd_;
  std::mt19937 rng_;
  Batch batch_;
  ForwardOutput out_;
  std::vector<uint8_t> saved_;  // Snapshot: each layer's held K then V rows
  int32_t saved_floor_ = 0;
};

Status RunBench(const BenchOptions& o) {
  if (o.reps < 1) return InvalidArgument("-r must be at least 1");
  for (int v : o.n_prompt) {
    if (v < 0) return InvalidArgument("-p values must be >= 0");
  }
  for (int v : o.n_gen) {
    if (v < 0) return InvalidArgument("-n values must be >= 0");
  }
  for (int v : o.depths) {
    if (v < 0) return InvalidArgument("--ctx-depth values must be >= 0");
  }
  Progress progress;
  progress.Show("loading " + o.model);
  LS_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                      Model::Load(o.model, {.threads = o.threads, .huge_pages = !o.mmap}));
  if (model->arch().encoder) {
    return Unimplemented(o.model + " is an encoder (" + model->hparams().arch +
                         "), which this command cannot run: serve it with --embeddings or --rerank "
                         "(bench/embed_side_by_side.sh measures it)");
  }
  const HParams& hp = model->hparams();
  const int max_test = std::max(*std::max_element(o.n_prompt.begin(), o.n_prompt.end()),
                                *std::max_element(o.n_gen.begin(), o.n_gen.end()));
  const int max_depth = *std::max_element(o.depths.begin(), o.depths.end());
  KvConfig kc;
  kc.n_layer = hp.n_layer;
  kc.n_slot = 1;
  const int warm_prompt = std::clamp(max_test, 1, 32);  // -p 0 -n 0: a warm-up and the bandwidth pass only
  kc.n_ctx_slot = max_depth + std::max(max_test, warm_prompt + 2) + 1;
  kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
  kc.layer_window = hp.layer_window;
  LS_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> kv, KvCache::Create(kc));
  ThreadPool pool(o.threads);
  const AttentionMode mode = o.flash_attn == "off" ? AttentionMode::kStandard : AttentionMode::kFlash;
  Bench bench(*model, *kv, pool, mode);

  uint64_t bytes = 0, params = 0;
  const std::string name = Describe(*model, &bytes, &params);
  char size[64], prm[64];
  std::snprintf(size, sizeof(size), "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  std::snprintf(prm, sizeof(prm), "%.2f M", static_cast<double>(params) / 1e6);

  // Warm-up: maps the weights in and grows the scratch buffers, so the first repetition is not an outlier.
  progress.Show("warm-up");
  LS_RETURN_IF_ERROR(bench.Prompt(0, warm_prompt).status());
  LS_RETURN_IF_ERROR(bench.Generate(0, 2).status());
  // Decode confirms the start-up gemv choice in its first steps (quant/gemv_confirm.h): settled before the
  // timed runs, so they measure the kernels that serve and the choices printed below include it.
  for (int i = 0; i < 64 && quant::GemvConfirmationPending(); ++i) {
    LS_RETURN_IF_ERROR(bench.Generate(0, 2).status());
  }

  progress.Clear();
  std::printf("%s; %s\n\n", quant::KernelChoices().c_str(), AttentionKernelChoice().c_str());
  std::printf("| %-20s | %12s | %10s | %-7s | %7s | %-15s | %18s |\n", "model", "size", "params", "backend",
              "threads", "test", "t/s");
  std::printf("| %s | %s: | %s: | %s | %s: | %s | %s: |\n", std::string(20, '-').c_str(),
              std::string(11, '-').c_str(), std::string(9, '-').c_str(), std::string(7, '-').c_str(),
              std::string(6, '-').c_str(), std::string(15, '-').c_str(), std::string(17, '-').c_str());
  std::fflush(stdout);
  double tg_depth0 = -1;
  int tg_depth0_n = 0;
  for (int depth : o.depths) {
    LS_RETURN_IF_ERROR(bench.Fill(depth, o.synthetic_fill, progress));
    auto row = [&](const std::string& test, const std::vector<double>& v) {
      const Stats s = MeanSd(v);
      const std::string label = depth > 0 ? test + " @ d" + std::to_string(depth) : test;
      char ts[64];
      std::snprintf(ts, sizeof(ts), "%.2f ± %.2f", s.mean, s.sd);
      progress.Clear();
      std::printf("| %-20s | %12s | %10s | %-7s | %7d | %-15s | %18s |\n", name.c_str(), size, prm, "CPU",
                  pool.n_threads(), label.c_str(), ts);
      std::fflush(stdout);
      return s.mean;
    };
    for (int p : o.n_prompt) {
      if (p == 0) continue;
      std::vector<double> v;
      for (int r = 0; r < o.reps; ++r) {
        progress.Show("pp" + std::to_string(p) + " rep " + std::to_string(r + 1) + "/" + std::to_string(o.reps));
        LS_ASSIGN_OR_RETURN(double tps, bench.Prompt(depth, p));
        v.push_back(tps);
      }
      row("pp" + std::to_string(p), v);
    }
    for (int n : o.n_gen) {
      if (n == 0) continue;
      std::vector<double> v;
      for (int r = 0; r < o.reps; ++r) {
        progress.Show("tg" + std::to_string(n) + " rep " + std::to_string(r + 1) + "/" + std::to_string(o.reps));
        LS_ASSIGN_OR_RETURN(double tps, bench.Generate(depth, n));
        v.push_back(tps);
      }
      const double mean = row("tg" + std::to_string(n), v);
      if (depth == 0 && tg_depth0 < 0) tg_depth0 = mean, tg_depth0_n = n;
    }
  }
  if (o.no_bandwidth) return Status::Ok();

  // Bandwidth with the same threads: the best-known streaming rate of this machine for the roofline.
  progress.Show("measuring read bandwidth");
  ReadBuffer buf(static_cast<size_t>(o.bw_mib) << 20);
  if (!buf.ok()) return ResourceExhausted("bench: cannot map " + std::to_string(o.bw_mib) + " MiB to measure bandwidth");
  uint64_t sink = 0;
  ReadPassBytesPerSecond(pool, buf, &sink);  // first pass faults nothing (pages are filled) but warms the TLB
  std::vector<double> bw;
  for (int r = 0; r < std::max(o.reps, 3); ++r) bw.push_back(ReadPassBytesPerSecond(pool, buf, &sink) / 1e9);
  progress.Clear();
  const Stats b = MeanSd(bw);
  const double best = *std::max_element(bw.begin(), bw.end());
  const double per_token = static_cast<double>(model->weight_bytes_per_token());
  std::printf("\nread bandwidth (%d threads, %d MiB buffer): %.2f ± %.2f GB/s (best %.2f; checksum %llx)\n",
              pool.n_threads(), o.bw_mib, b.mean, b.sd, best, static_cast<unsigned long long>(sink & 0xffff));
  const std::string experts = hp.n_expert > 0 ? " (" + std::to_string(hp.n_expert_used) + " of " +
                                                    std::to_string(hp.n_expert) + " experts per layer)"
                                              : "";
  std::printf("weights read per token: %.2f MB%s; roofline at the mean bandwidth: %.2f t/s\n", per_token / 1e6,
              experts.c_str(), b.mean * 1e9 / per_token);
  if (tg_depth0 > 0) {
    std::printf("tg%d reaches %.1f%% of the roofline (%.1f%% of the best-pass roofline)\n", tg_depth0_n,
                100.0 * tg_depth0 * per_token / (b.mean * 1e9), 100.0 * tg_depth0 * per_token / (best * 1e9));
  }
  return Status::Ok();
}

}  // namespace

void AddBenchCommand(CLI::App& root, int* exit_code) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = root.add_subcommand("bench", "Measure prompt (pp) and generation (tg) throughput, llama-bench style");
  cmd->add_option("-m,--model", o->model, "GGUF model file")->required();
  cmd->add_option("-p,--n-prompt", o->n_prompt, "Prompt tokens per pp test (several allowed; 0: none)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-n,--n-gen", o->n_gen, "Generated tokens per tg test (several allowed; 0: none)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-d,--ctx-depth", o->depths, "Tokens already held in the context before each test")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "Threads (default: physical cores)");
  cmd->add_option("-r,--repetitions", o->reps, "Repetitions of each test")->capture_default_str();
  cmd->add_option("--flash-attn", o->flash_attn, "Attention mode: on (online softmax, the server default) or off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--bw-mib", o->bw_mib, "Buffer for the bandwidth measurement, MiB")->capture_default_str();
  cmd->add_flag("--no-bandwidth", o->no_bandwidth, "Skip the bandwidth measurement");
  cmd->add_flag("--mmap,!--no-mmap", o->mmap,
                "Weights as a mapping of the file on 4 KiB pages (default --no-mmap: a copy on 2 MiB pages)");
  cmd->add_flag("--synthetic-fill", o->synthetic_fill,
                "Fill --ctx-depth with random K/V rows instead of running the prompt (same test cost, no wait)");
  cmd->callback([o, exit_code] {
    Status st = RunBench(*o);
    if (!st.ok()) {
      std::fprintf(stderr, "lazyslot bench: %s\n", st.message().c_str());
      *exit_code = 1;
    }
  });
}

}  // namespace lazyslot::cli
