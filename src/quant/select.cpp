// Dispatch by measurement: for each weight format a model uses, every SIMD variant of its three kernel
// families (gemv: the generation dot with its vec_dot, as the set's gemv and as the plain loop over the dot
// one row at a time; tile: 2..15 activation rows; packed: prompt batches) is checked on the model's own row
// lengths, the correct ones are timed there, and the fastest is installed into the active set. The gemv is
// timed on a matrix evicted from the caches before each pass: a decode step streams every weight from
// memory once, and a multi-row gemv that wins in cache can lose there (its interleaved rows defeat the
// hardware prefetcher on some CPUs: Zen 5, docs/decisions/0008). It is timed on as many threads as
// generation runs with, each streaming its own share of the rows at once, since the winner on one thread can
// lose when every core competes for memory (docs/decisions/0009). Integer formats' variants give the same
// bits in every SIMD set, so the families may come from different sets; the tile and packed variants must
// equal the chosen gemv bit for bit (batch invariance). The gemv variants that timed close to the winner and
// give its bits exactly are handed to decode, which confirms the choice on the model's own matrices
// (gemv_confirm.h, docs/decisions/0011).
#include "quant/select.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "quant/check_rows.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace lazyslot::quant {
namespace {

using Clock = std::chrono::steady_clock;
double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr int kCheckRows = 16;         // weight rows of a check: whole groups of every PackedKernel::rows
constexpr int kCheckActs = 8;          // activation rows of a check (and of the timed packed calls)
constexpr int kGemvActs = 2;           // activation rows the gemv is checked with, one call each
constexpr size_t kTimeBytes = 131072;  // weight bytes of a timed tile or packed matrix (in cache)
constexpr size_t kStreamBytes = 1 << 20;  // gemv weight bytes per timing thread (evicted before each pass)
constexpr int kTileActs = 4;           // activation rows of a timed tile call
constexpr int kPackedCalls = 16;       // timed packed tile calls of kCheckActs rows after one pack
constexpr int kMinRounds = 3;          // timed passes per variant and row length, at least
// The same for the gemv, whose passes from memory spread more: with 3, a Zen 4 VM chooses a Q4_K gemv that
// decodes ~20% slower in 6 of 16 selections; with 8, in 1 of 20 (docs/bench.md; ~8 ms more).
constexpr int kMinGemvRounds = 8;
constexpr int kMaxRounds = 1000;
constexpr int64_t kMaxRowLength = int64_t{1} << 20;  // longer rows are not selected (their buffers get big)
// A variant must beat one of a higher set by this fraction to win: the float formats' variants round
// differently, so near ties should not flip a process's numerics from run to run on noise.
constexpr double kTieMargin = 0.02;

enum class Family { kGemv, kTile, kPacked };
const char* FamilyName(Family fam) {
  return fam == Family::kGemv ? "gemv" : (fam == Family::kTile ? "tile" : "packed");
}

// One candidate of a family. gemv: dot + tile (null tile: the generic loop over dot); tile: tile (null: the
// generic loop over the chosen gemv's dot); packed: pk.
struct Variant {
  std::string name;
  VecDotFn dot = nullptr;
  VecDotTileFn tile = nullptr;
  PackedKernel pk;
  std::string failure;  // empty: passed every check
  double seconds = 0;   // model-weighted time (see TimeVariants)
  double figure = 0;    // GB/s (gemv) or GMAC/s (tile, packed)
};

bool SameVariant(Family fam, const Variant& a, const Variant& b) {
  if (fam == Family::kGemv) return a.dot == b.dot && a.tile == b.tile;
  if (fam == Family::kTile) return a.tile == b.tile;
  return a.pk.pack == b.pk.pack && a.pk.tile == b.pk.tile && a.pk.group_bytes == b.pk.group_bytes &&
         a.pk.rows == b.pk.rows;
}

// The distinct variants of a family among `simd` (in its order), each named by the first set that has it.
// A set's gemv comes in two variants, the plain loop over its dot ("avx512 1-row") before the set's own gemv,
// so that a forced level, which takes the last passing variant, gets the set as built.
std::vector<Variant> Collect(Family fam, int f, const std::vector<const KernelSet*>& simd) {
  std::vector<Variant> out;
  auto add = [&](const Variant& v) {
    bool seen = false;
    for (const Variant& o : out) seen = seen || SameVariant(fam, o, v);
    if (!seen) out.push_back(v);
  };
  for (const KernelSet* s : simd) {
    Variant v;
    v.name = s->name;
    if (fam == Family::kGemv) {
      if (!s->vec_dot[f]) continue;
      v.dot = s->vec_dot[f];
      if (s->gemv[f]) {
        Variant one = v;
        one.name += " 1-row";
        add(one);
      }
      v.tile = s->gemv[f];
    } else if (fam == Family::kTile) {
      v.tile = s->vec_dot_tile[f];
      if (!v.tile) v.name = "generic";
    } else {
      if (!s->packed[f].pack || !s->packed[f].tile || !s->packed[f].group_bytes) continue;
      v.pk = s->packed[f];
    }
    add(v);
  }
  return out;
}

// The rows one (format, row length) is checked and timed on.
struct RowData {
  int64_t n = 0;
  size_t wb = 0, xb = 0;      // bytes of a weight row, of an activation row
  double weight = 0;          // the model's rows of this length (sum of n_out)
  std::vector<uint8_t> w;     // kCheckRows weight rows, scalar-quantized
  std::vector<uint8_t> x;     // kCheckActs activation rows in the dot's format
  std::vector<float> ref;     // scalar dots [i * kCheckRows + r] for i < kGemvActs
  std::vector<double> scale;  // sum |w * x| of the same pairs
  std::vector<float> want;    // the chosen gemv's dots [i * kCheckRows + r] for i < kCheckActs
  int64_t rows = 0;           // rows of the timed tile/packed matrix (a multiple of kCheckRows)
  std::vector<uint8_t> mat;   // that matrix: the check rows repeated
  int64_t stream_rows = 0;    // rows of the timed gemv matrix (kCheckRows times a multiple of the threads)
  std::vector<uint8_t> stream;  // that matrix, the check rows repeated
};

void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// The threads of a multi-threaded gemv pass. Run(job) calls job(0) on the caller and job(i) on worker i for
// 0 < i < size at once, and returns when every call has returned; the workers spin between passes, so a
// pass's time is the work's and not a wake-up's.
class Crew {
 public:
  explicit Crew(int size) : size_(size) {
    for (int i = 1; i < size; ++i) workers_.emplace_back([this, i] { Loop(i); });
  }
  ~Crew() {
    stop_.store(true, std::memory_order_relaxed);
    pass_.fetch_add(1, std::memory_order_release);
    for (std::thread& t : workers_) t.join();
  }
  Crew(const Crew&) = delete;
  Crew& operator=(const Crew&) = delete;

  int size() const { return size_; }
  void Run(const std::function<void(int)>& job) {
    job_ = &job;
    done_.store(0, std::memory_order_relaxed);
    pass_.fetch_add(1, std::memory_order_release);
    job(0);
    while (done_.load(std::memory_order_acquire) < size_ - 1) Pause();
  }

 private:
  void Loop(int i) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t pass;
      while ((pass = pass_.load(std::memory_order_acquire)) == seen) Pause();
      seen = pass;
      if (stop_.load(std::memory_order_relaxed)) return;
      (*job_)(i);
      done_.fetch_add(1, std::memory_order_release);
    }
  }

  const int size_;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<uint64_t> pass_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

// The check rows of d repeated to about `bytes`; *rows = their count.
std::vector<uint8_t> Repeated(const RowData& d, size_t bytes, int64_t* rows) {
  *rows = std::max<int64_t>(1, static_cast<int64_t>(bytes / d.wb) / kCheckRows) * kCheckRows;
  std::vector<uint8_t> m(static_cast<size_t>(*rows) * d.wb);
  for (int64_t g = 0; g < *rows / kCheckRows; ++g) {
    std::memcpy(m.data() + g * kCheckRows * d.wb, d.w.data(), d.w.size());
  }
  return m;
}

// Writes [p, p + bytes) back and drops it from every cache level, so that the next pass reads it from memory.
void Evict(const uint8_t* p, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  for (size_t off = 0; off < bytes; off += 64) _mm_clflush(p + off);
  _mm_mfence();
#else
  (void)p;
  (void)bytes;
#endif
}

RowData MakeRows(int f, int64_t n, double weight, int threads) {
  const KernelSet& ref = ScalarKernels();
  const int act = DotActFormat(f);
  RowData d;
  d.n = n;
  d.weight = weight;
  d.wb = RowBytes(FormatType(f), n);
  d.xb = RowBytes(FormatType(act), n);
  d.w.resize(kCheckRows * d.wb);
  d.x.resize(kCheckActs * d.xb);
  std::vector<float> dw(static_cast<size_t>(kCheckRows) * n), dx(static_cast<size_t>(kGemvActs) * n);
  for (int r = 0; r < kCheckRows; ++r) {
    const std::vector<float> v = CheckRow(n, 1000 + 17 * f + r);
    ref.quantize[f](v.data(), d.w.data() + r * d.wb, n);
    ref.dequantize[f](d.w.data() + r * d.wb, dw.data() + r * n, n);
  }
  for (int i = 0; i < kCheckActs; ++i) {
    const std::vector<float> v = CheckRow(n, 5000 + 17 * f + i);
    ref.quantize[act](v.data(), d.x.data() + i * d.xb, n);
    if (i < kGemvActs) ref.dequantize[act](d.x.data() + i * d.xb, dx.data() + i * n, n);
  }
  for (int i = 0; i < kGemvActs; ++i) {
    for (int r = 0; r < kCheckRows; ++r) {
      d.ref.push_back(ref.vec_dot[f](d.w.data() + r * d.wb, d.x.data() + i * d.xb, n));
      double s = 0;
      for (int64_t k = 0; k < n; ++k) s += std::fabs(static_cast<double>(dw[r * n + k]) * dx[i * n + k]);
      d.scale.push_back(s);
    }
  }
  d.mat = Repeated(d, kTimeBytes, &d.rows);
  d.stream = Repeated(d, kStreamBytes * static_cast<size_t>(threads), &d.stream_rows);
  d.stream_rows = d.stream_rows / (kCheckRows * threads) * (kCheckRows * threads);
  return d;
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

std::string Failure(const char* what, int f, int64_t n, const char* how) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s of %s n=%lld %s", what, TypeName(FormatType(f)),
                static_cast<long long>(n), how);
  return buf;
}

void RunTile(VecDotTileFn tile, VecDotFn dot, const void* w, size_t wb, int64_t n_w, const void* x, size_t xb,
             int64_t n_x, int64_t n, float* out, int64_t ldo) {
  if (tile) {
    tile(w, wb, n_w, x, xb, n_x, n, out, ldo);
  } else {
    VecDotTileGeneric(dot, w, wb, n_w, x, xb, n_x, n, out, ldo);
  }
}

// gemv: each gemv result equals its own vec_dot bit for bit, and that dot the scalar one within tolerance.
std::string CheckGemv(int f, const Variant& v, const RowData& d) {
  float out[kCheckRows];
  for (int i = 0; i < kGemvActs; ++i) {
    const uint8_t* x = d.x.data() + i * d.xb;
    RunTile(v.tile, v.dot, d.w.data(), d.wb, kCheckRows, x, d.xb, 1, d.n, out, kCheckRows);
    for (int r = 0; r < kCheckRows; ++r) {
      const float dot = v.dot(d.w.data() + r * d.wb, x, d.n);
      if (!SameBits(out[r], dot)) return Failure("gemv", f, d.n, "differs from its vec_dot");
      const int k = i * kCheckRows + r;
      if (!DotWithinTolerance(dot, d.ref[k], d.scale[k]))
        return Failure("vec_dot", f, d.n, "differs from scalar");
    }
  }
  return "";
}

// tile and packed: every result equals the chosen gemv's dot bit for bit, for a full call of kCheckActs
// activation rows and a ragged one of 5 (rows 3..7).
std::string CheckBatch(Family fam, int f, const Variant& v, VecDotFn dot, const RowData& d) {
  std::vector<float> out(kCheckActs * kCheckRows);
  std::vector<uint8_t> packed;
  int groups = 0;
  if (fam == Family::kPacked) {
    if (v.pk.rows <= 0 || v.pk.rows > kMaxPackRows || kCheckRows % v.pk.rows != 0) {
      return Failure("packed kernel", f, d.n, "has an unsupported group height");
    }
    groups = kCheckRows / v.pk.rows;
    const size_t gb = v.pk.group_bytes(d.n);
    packed.resize(groups * gb);
    for (int g = 0; g < groups; ++g)
      v.pk.pack(d.w.data() + g * v.pk.rows * d.wb, d.wb, d.n, packed.data() + g * gb);
  }
  for (int first : {0, 3}) {
    const int n_x = kCheckActs - first;
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    const uint8_t* x = d.x.data() + first * d.xb;
    if (fam == Family::kPacked) {
      v.pk.tile(packed.data(), groups, x, d.xb, n_x, d.n, out.data(), kCheckRows);
    } else {
      RunTile(v.tile, dot, d.w.data(), d.wb, kCheckRows, x, d.xb, n_x, d.n, out.data(), kCheckRows);
    }
    for (int i = 0; i < n_x; ++i) {
      for (int r = 0; r < kCheckRows; ++r) {
        if (!SameBits(out[i * kCheckRows + r], d.want[(first + i) * kCheckRows + r])) {
          return Failure(fam == Family::kPacked ? "packed tile" : "tile", f, d.n, "differs from the gemv");
        }
      }
    }
  }
  return "";
}

// One timed pass of a variant over the matrix of `d` (the gemv: over d.stream, evicted first, each thread of
// `crew` (null: the caller alone) on an equal share of its rows); returns its seconds.
double TimePass(Family fam, const Variant& v, VecDotFn dot, const RowData& d, std::vector<uint8_t>& buf,
                std::vector<float>& out, Crew* crew) {
  if (fam == Family::kGemv) {
    Evict(d.stream.data(), d.stream.size());
    const int threads = crew ? crew->size() : 1;
    const int64_t share = d.stream_rows / threads;
    const std::function<void(int)> job = [&](int i) {
      RunTile(v.tile, v.dot, d.stream.data() + i * share * d.wb, d.wb, share, d.x.data(), d.xb, 1, d.n,
              out.data() + i * share, share);
    };
    const Clock::time_point t0 = Clock::now();
    if (crew) {
      crew->Run(job);
    } else {
      job(0);
    }
    return SecondsSince(t0);
  }
  const Clock::time_point t0 = Clock::now();
  if (fam == Family::kTile) {
    RunTile(v.tile, dot, d.mat.data(), d.wb, d.rows, d.x.data(), d.xb, kTileActs, d.n, out.data(), d.rows);
  } else {
    // As MatMul runs it: the rows packed once, the activation rows prepared once (where the kernel has a
    // preparation), then many tile calls.
    const int64_t groups = d.rows / v.pk.rows;
    const size_t gb = v.pk.group_bytes(d.n);
    for (int64_t g = 0; g < groups; ++g) {
      v.pk.pack(d.mat.data() + g * v.pk.rows * d.wb, d.wb, d.n, buf.data() + g * gb);
    }
    if (v.pk.prepare) {
      const size_t pb = v.pk.prepared_bytes(d.n);
      uint8_t* prep = buf.data() + groups * gb;
      for (int i = 0; i < kCheckActs; ++i) v.pk.prepare(d.x.data() + i * d.xb, d.n, prep + i * pb);
      for (int c = 0; c < kPackedCalls; ++c) {
        v.pk.tile_prepared(buf.data(), groups, prep, pb, kCheckActs, d.n, out.data(), d.rows);
      }
    } else {
      for (int c = 0; c < kPackedCalls; ++c) {
        v.pk.tile(buf.data(), groups, d.x.data(), d.xb, kCheckActs, d.n, out.data(), d.rows);
      }
    }
  }
  return SecondsSince(t0);
}

// Times the passing variants in rounds (each round one pass of each variant at each row length, so a clock
// change or a neighbour's burst hits them alike), keeps each one's best pass per row length, and weights the
// row lengths by the model's rows: v.seconds estimates the family's time over the whole model.
void TimeVariants(Family fam, std::vector<Variant*>& live, VecDotFn dot, const std::vector<RowData>& data,
                  const SelectOptions& opt) {
  if (live.empty()) return;
  std::unique_ptr<Crew> crew;
  if (fam == Family::kGemv && opt.gemv_threads > 1) crew = std::make_unique<Crew>(opt.gemv_threads);
  std::vector<double> best(live.size() * data.size(), std::numeric_limits<double>::infinity());
  size_t buf_bytes = 0, out_floats = 0;
  for (const RowData& d : data) {
    out_floats = std::max(out_floats, static_cast<size_t>(std::max(kCheckActs * d.rows, d.stream_rows)));
    for (const Variant* v : live) {
      if (fam == Family::kPacked) {
        const size_t prep = v->pk.prepare ? kCheckActs * v->pk.prepared_bytes(d.n) : 0;
        buf_bytes = std::max(buf_bytes, d.rows / v->pk.rows * v->pk.group_bytes(d.n) + prep);
      }
    }
  }
  std::vector<uint8_t> buf(buf_bytes);
  std::vector<float> out(out_floats);
  const Clock::time_point t0 = Clock::now();
  const double budget = opt.budget_ms * 1e-3 * static_cast<double>(live.size());
  const int min_rounds = fam == Family::kGemv ? kMinGemvRounds : kMinRounds;
  for (int round = 0; round < min_rounds || (round < kMaxRounds && SecondsSince(t0) < budget); ++round) {
    for (size_t k = 0; k < data.size(); ++k) {
      for (size_t j = 0; j < live.size(); ++j) {
        double& b = best[j * data.size() + k];
        b = std::min(b, TimePass(fam, *live[j], dot, data[k], buf, out, crew.get()));
      }
    }
  }
  for (size_t j = 0; j < live.size(); ++j) {
    double seconds = 0, work = 0;
    for (size_t k = 0; k < data.size(); ++k) {
      const RowData& d = data[k];
      const int64_t rows = fam == Family::kGemv ? d.stream_rows : d.rows;
      seconds += d.weight * best[j * data.size() + k] / static_cast<double>(rows);
      const double acts = fam == Family::kTile ? kTileActs : kPackedCalls * kCheckActs;
      work += d.weight * (fam == Family::kGemv ? static_cast<double>(d.wb) : static_cast<double>(d.n) * acts);
    }
    live[j]->seconds = seconds;
    live[j]->figure = seconds > 0 ? work / seconds / 1e9 : 0;
  }
}

// Checks every variant (a failure excludes it) and picks one: the highest passing set when forced, else the
// fastest (kTieMargin favours higher sets). Returns the index in `vs`, or -1 when none passes.
int Choose(Family fam, int f, std::vector<Variant>& vs, VecDotFn dot, const std::vector<RowData>& data,
           const SelectOptions& opt) {
  std::vector<Variant*> live;
  for (Variant& v : vs) {
    for (const RowData& d : data) {
      if (v.failure.empty()) {
        v.failure = fam == Family::kGemv ? CheckGemv(f, v, d) : CheckBatch(fam, f, v, dot, d);
      }
    }
    if (v.failure.empty()) live.push_back(&v);
  }
  if (live.empty()) return -1;
  Variant* pick = live.back();
  if (!opt.forced) {
    // The gemv family times each variant with its own dot; the others with the chosen one's.
    TimeVariants(fam, live, dot, data, opt);
    for (size_t j = live.size() - 1; j-- > 0;) {
      if (live[j]->seconds < pick->seconds * (1.0 - kTieMargin)) pick = live[j];
    }
  }
  return static_cast<int>(pick - vs.data());
}

// "gemv avx2 14.1 GB/s (avx512 13.9)" ("... GB/s on 2 threads (...)" for a gemv timed on `threads` > 1) and
// ", gemv avx512 failed its check (...)" for each failure.
std::string Describe(Family fam, const std::vector<Variant>& vs, int chosen, bool timed, int threads = 1) {
  auto figure = [&](const Variant& v, bool unit) {
    char buf[48];
    if (fam == Family::kGemv) {
      std::snprintf(buf, sizeof(buf), unit ? " %.1f GB/s" : " %.1f", v.figure);
    } else {
      std::snprintf(buf, sizeof(buf), unit ? " %.0f GMAC/s" : " %.0f", v.figure);
    }
    return std::string(buf);
  };
  std::string s;
  if (chosen >= 0) {
    s = std::string(FamilyName(fam)) + " " + vs[chosen].name;
    if (timed) {
      s += figure(vs[chosen], true);
      if (fam == Family::kGemv && threads > 1) s += " on " + std::to_string(threads) + " threads";
      std::string others;
      for (size_t j = 0; j < vs.size(); ++j) {
        if (static_cast<int>(j) == chosen || !vs[j].failure.empty()) continue;
        others += (others.empty() ? "" : ", ") + std::string(vs[j].name) + figure(vs[j], false);
      }
      if (!others.empty()) s += " (" + others + ")";
    }
  }
  for (const Variant& v : vs) {
    if (v.failure.empty()) continue;
    s += (s.empty() ? "" : ", ") + std::string(FamilyName(fam)) + " " + v.name + " failed its check (" +
         v.failure + ")";
  }
  return s;
}

// The passing gemv variants other than gemvs[g] that decode should try too (FormatChoice::confirm): timed at
// kConfirmShare of the chosen figure or better, and giving the chosen dot's bits on every check row (d.want),
// fastest first, after the chosen one.
std::vector<GemvCandidate> ConfirmCandidates(const std::vector<Variant>& gemvs, int g,
                                             const std::vector<RowData>& data) {
  std::vector<const Variant*> others;
  for (size_t j = 0; j < gemvs.size(); ++j) {
    const Variant& v = gemvs[j];
    if (static_cast<int>(j) == g || !v.failure.empty()) continue;
    if (v.figure < kConfirmShare * gemvs[g].figure) continue;
    bool same = true;
    for (const RowData& d : data) {
      for (int i = 0; i < kCheckActs && same; ++i) {
        for (int r = 0; r < kCheckRows && same; ++r) {
          const float got = v.dot(d.w.data() + r * d.wb, d.x.data() + i * d.xb, d.n);
          same = SameBits(got, d.want[i * kCheckRows + r]);
        }
      }
    }
    if (same) others.push_back(&v);
  }
  if (others.empty()) return {};
  std::sort(others.begin(), others.end(),
            [](const Variant* a, const Variant* b) { return a->figure > b->figure; });
  if (others.size() > kMaxGemvCandidates - 1) others.resize(kMaxGemvCandidates - 1);
  std::vector<GemvCandidate> out;
  for (const Variant* v : others) out.push_back({v->name, v->dot, v->tile, v->figure});
  out.insert(out.begin(), GemvCandidate{gemvs[g].name, gemvs[g].dot, gemvs[g].tile, gemvs[g].figure});
  return out;
}

// The interleaved layout of format f (docs/decisions/0012), from the highest set in `simd` that has one:
// checked against the chosen gemv's bits (d.want) for the tile and the packed kernel over interleaved check
// rows, then timed on one activation row from memory against the chosen gemv, round by round on the same
// matrix in both layouts. Installed into `active` when it passes and is faster (or the level is forced); the
// model then rewrites its matrices of the format (Model::InterleaveWeights). Returns the summary's part (""
// when no set has the layout).
std::string SelectInterleaved(int f, const std::vector<const KernelSet*>& simd,
                              const std::vector<RowData>& data, const SelectOptions& opt, const Variant& gemv,
                              KernelSet* active) {
  const KernelSet* set = nullptr;
  for (const KernelSet* s : simd) {
    if (s->interleaved[f].interleave && s->interleaved[f].tile && s->interleaved[f].packed.pack) set = s;
  }
  if (!set) return "";
  const InterleavedKernel& ik = set->interleaved[f];
  const std::string name = std::string("interleaved ") + set->name;
  Variant il;  // the interleaved tile as a gemv (its packed kernel checked through CheckBatch)
  il.name = set->name;
  il.dot = gemv.dot;
  il.tile = ik.tile;
  il.pk = ik.packed;
  std::vector<RowData> idata = data;
  for (RowData& d : idata) {
    ik.interleave(d.w.data(), kCheckRows, d.n);
    ik.interleave(d.stream.data(), d.stream_rows, d.n);
    if (il.failure.empty()) il.failure = CheckBatch(Family::kTile, f, il, gemv.dot, d);
    if (il.failure.empty()) il.failure = CheckBatch(Family::kPacked, f, il, gemv.dot, d);
  }
  if (!il.failure.empty()) return ", " + name + " failed its check (" + il.failure + ")";
  if (opt.forced) {
    active->interleaved[f] = ik;
    return ", " + name;
  }
  // Both layouts pass by pass (a clock change or a neighbour's burst hits them alike), best pass per length.
  std::unique_ptr<Crew> crew;
  if (opt.gemv_threads > 1) crew = std::make_unique<Crew>(opt.gemv_threads);
  std::vector<uint8_t> buf;
  std::vector<float> out;
  for (const RowData& d : data) out.resize(std::max(out.size(), static_cast<size_t>(d.stream_rows)));
  const size_t n = data.size();
  std::vector<double> best(2 * n, std::numeric_limits<double>::infinity());
  const Clock::time_point t0 = Clock::now();
  for (int round = 0;
       round < kMinGemvRounds || (round < kMaxRounds && SecondsSince(t0) < 2 * opt.budget_ms * 1e-3);
       ++round) {
    for (size_t k = 0; k < n; ++k) {
      best[k] = std::min(best[k], TimePass(Family::kGemv, gemv, nullptr, data[k], buf, out, crew.get()));
      best[n + k] =
          std::min(best[n + k], TimePass(Family::kGemv, il, nullptr, idata[k], buf, out, crew.get()));
    }
  }
  double plain = 0, inter = 0, bytes = 0;
  for (size_t k = 0; k < n; ++k) {
    const double per_row = data[k].weight / static_cast<double>(data[k].stream_rows);
    plain += per_row * best[k];
    inter += per_row * best[n + k];
    bytes += data[k].weight * static_cast<double>(data[k].wb);
  }
  const bool take = inter < plain * (1.0 - kTieMargin);
  if (take) active->interleaved[f] = ik;
  char fig[96];
  std::snprintf(fig, sizeof(fig), " %.1f GB/s (gemv %.1f)", bytes / inter / 1e9, bytes / plain / 1e9);
  return ", " + name + fig + (take ? "" : ", not taken");
}

// Selects the three families of format f on `data` (its row lengths) and installs them into *active;
// *confirm gets the gemv variants decode confirms the choice among.
std::string SelectFormat(int f, const std::vector<const KernelSet*>& simd, std::vector<RowData>& data,
                         const SelectOptions& opt, KernelSet* active, std::vector<GemvCandidate>* confirm) {
  const std::string type = TypeName(FormatType(f));
  const KernelSet& scalar = ScalarKernels();
  std::vector<Variant> gemvs = Collect(Family::kGemv, f, simd);
  const int g = Choose(Family::kGemv, f, gemvs, nullptr, data, opt);
  if (g < 0) {
    active->vec_dot[f] = scalar.vec_dot[f];
    active->gemv[f] = nullptr;
    active->vec_dot_tile[f] = nullptr;
    active->packed[f] = PackedKernel{};
    if (gemvs.empty()) return type + " scalar";
    return type + " scalar (no SIMD gemv passed its check), " + Describe(Family::kGemv, gemvs, -1, false);
  }
  const Variant& gemv = gemvs[g];
  active->vec_dot[f] = gemv.dot;
  active->gemv[f] = gemv.tile;
  for (RowData& d : data) {
    d.want.resize(kCheckActs * kCheckRows);
    for (int i = 0; i < kCheckActs; ++i) {
      for (int r = 0; r < kCheckRows; ++r) {
        d.want[i * kCheckRows + r] = gemv.dot(d.w.data() + r * d.wb, d.x.data() + i * d.xb, d.n);
      }
    }
  }
  const bool timed = !opt.forced;
  if (timed) *confirm = ConfirmCandidates(gemvs, g, data);
  std::string s = type + " " + Describe(Family::kGemv, gemvs, g, timed, opt.gemv_threads);

  std::vector<Variant> tiles = Collect(Family::kTile, f, simd);
  const int t = Choose(Family::kTile, f, tiles, gemv.dot, data, opt);
  active->vec_dot_tile[f] = t >= 0 ? tiles[t].tile : nullptr;  // none passed: the generic loop over gemv.dot
  // A family whose only variant is the generic loop is not worth naming.
  if (!(tiles.size() == 1 && tiles[0].tile == nullptr)) {
    s += ", " + (t >= 0 ? Describe(Family::kTile, tiles, t, timed)
                        : "tile generic, " + Describe(Family::kTile, tiles, -1, false));
  }

  std::vector<Variant> packs = Collect(Family::kPacked, f, simd);
  const int p = Choose(Family::kPacked, f, packs, gemv.dot, data, opt);
  active->packed[f] = p >= 0 ? packs[p].pk : PackedKernel{};
  if (!packs.empty()) {
    s += ", " + (p >= 0 ? Describe(Family::kPacked, packs, p, timed)
                        : "packed none, " + Describe(Family::kPacked, packs, -1, false));
  }
  s += SelectInterleaved(f, simd, data, opt, gemv, active);
  // Interleaved matrices have one product: no gemv to confirm (the others' start-up gemv serves).
  if (active->interleaved[f].interleave) confirm->clear();
  return s;
}

// Whether SelectKernels considers a shape; *f is its format.
bool Selectable(const MatrixShape& m, int* f) {
  *f = FormatIndex(m.type);
  if (*f < 0 || !ScalarKernels().vec_dot[*f] || m.n_out <= 0 || m.n_in <= 0 || m.n_in > kMaxRowLength) {
    return false;
  }
  const int64_t bw = Traits(m.type).block_size, bx = Traits(FormatType(DotActFormat(*f))).block_size;
  return m.n_in % bw == 0 && m.n_in % bx == 0;
}

}  // namespace

std::vector<FormatChoice> SelectFrom(const std::vector<KernelSet>& sets,
                                     const std::vector<MatrixShape>& shapes, const SelectOptions& opt,
                                     KernelSet* active, bool chosen[kFormatCount]) {
  std::vector<const KernelSet*> simd;
  for (const KernelSet& s : sets) {
    if (s.isa == Isa::kScalar) continue;
    if (opt.forced && static_cast<int>(s.isa) > static_cast<int>(opt.level)) continue;
    simd.push_back(&s);
  }
  std::map<int64_t, double> rows_by_length[kFormatCount];  // n_in -> the model's rows of that length
  for (const MatrixShape& m : shapes) {
    int f;
    if (Selectable(m, &f) && !chosen[f]) rows_by_length[f][m.n_in] += static_cast<double>(m.n_out);
  }
  std::vector<FormatChoice> out;
  for (int f = 0; f < kFormatCount; ++f) {
    if (rows_by_length[f].empty()) continue;
    std::vector<RowData> data;
    if (!simd.empty()) {
      for (const auto& [n, weight] : rows_by_length[f]) {
        data.push_back(MakeRows(f, n, weight, std::max(1, opt.gemv_threads)));
      }
    }
    FormatChoice c;
    c.format = f;
    c.summary = SelectFormat(f, simd, data, opt, active, &c.confirm);
    out.push_back(std::move(c));
    chosen[f] = true;
  }
  return out;
}

namespace {

// What this process has selected so far (SelectKernels' state, under its mutex).
struct Selected {
  std::mutex mu;
  bool chosen[kFormatCount] = {};
  std::string summary[kFormatCount];
  double ms = 0;     // all selections together
  std::string mode;  // "" (measured) or "LAZYSLOT_ISA=avx2 forces the avx2 set"
};

Selected& State() {
  static Selected s;
  return s;
}

std::string Line(const std::string& head, const Selected& st, const bool* formats) {
  std::string s = head;
  const char* sep = ": ";
  for (int f = 0; f < kFormatCount; ++f) {
    if (formats[f] && st.chosen[f]) {
      s += sep + st.summary[f];
      sep = "; ";
    }
  }
  return s;
}

std::string Head(const Selected& st, double ms) {
  char t[32], buf[160];
  std::snprintf(t, sizeof(t), ms < 10 ? "%.1f ms" : "%.0f ms", ms);
  if (st.mode.empty()) {
    std::snprintf(buf, sizeof(buf), "kernels (measured in %s)", t);
  } else {
    std::snprintf(buf, sizeof(buf), "kernels (%s; checked in %s)", st.mode.c_str(), t);
  }
  return buf;
}

}  // namespace

std::string SelectKernels(const std::vector<MatrixShape>& shapes, int threads) {
  Selected& st = State();
  std::lock_guard<std::mutex> lock(st.mu);
  const Clock::time_point t0 = Clock::now();
  static const std::vector<KernelSet> sets = AvailableKernels();
  SelectOptions opt;
  const IsaRequest& isa = IsaOverride();
  opt.forced = isa.forced;
  opt.level = isa.level;
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  opt.gemv_threads = std::clamp(std::min(threads, hardware > 0 ? hardware : 1), 1, kMaxSelectThreads);
  st.mode =
      opt.forced ? "LAZYSLOT_ISA=" + isa.value + " forces the " + IsaName(opt.level) + " set" : "";
  const std::vector<FormatChoice> choices = SelectFrom(sets, shapes, opt, &MutableActiveKernels(), st.chosen);
  for (const FormatChoice& c : choices) {
    st.summary[c.format] = c.summary;
    BeginGemvConfirmation(c.format, c.confirm);
  }
  const double ms = SecondsSince(t0) * 1e3;
  st.ms += ms;
  bool formats[kFormatCount] = {};
  for (const MatrixShape& m : shapes) {
    int f;
    if (Selectable(m, &f)) formats[f] = true;
  }
  if (choices.empty()) return Line("kernels (chosen before)", st, formats);
  return Line(Head(st, ms), st, formats);
}

std::string KernelChoices() {
  Selected& st = State();
  std::lock_guard<std::mutex> lock(st.mu);
  bool any = false;
  for (bool c : st.chosen) any = any || c;
  if (!any) return std::string("kernels: none selected yet, the ") + ActiveKernels().name + " set serves";
  bool all[kFormatCount];
  std::fill(all, all + kFormatCount, true);
  std::string s = Line(Head(st, st.ms), st, all);
  for (int f = 0; f < kFormatCount; ++f) {
    const std::string confirmed = st.chosen[f] ? GemvConfirmationSummary(f) : "";
    if (!confirmed.empty()) s += "; " + confirmed;
  }
  return s;
}

}  // namespace lazyslot::quant
