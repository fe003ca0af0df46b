// Generation confirms the start-up gemv choice on the model's own decode steps (docs/decisions/0011). The
// start-up timing (select.cpp) streams a synthetic 1 MiB matrix per thread, and on a noisy VM it still takes
// a gemv that decodes 15-20% slower about once in ten selections. The variants that timed close to the
// winner and give its bits exactly are therefore taken in turn by the first decode steps, matrix by matrix,
// and the one whose pass over the model's matrices is shortest serves from then on. Every candidate gives
// the same results bit for bit, so outputs never depend on which one ran.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "quant/kernels.h"

namespace lazyslot::quant {

// One gemv variant: its dot and its multi-row form (null: the plain loop over dot), named as the start-up
// line names it, with that timing's figure (GB/s).
struct GemvCandidate {
  std::string name;
  VecDotFn dot = nullptr;
  VecDotTileFn tile = nullptr;
  double figure = 0;
};

// What one product of a single activation row runs with.
struct GemvPick {
  VecDotFn dot = nullptr;       // null: no confirmation for the format; the active set's gemv serves
  VecDotTileFn tile = nullptr;  // null with dot set: the plain loop over dot
  int candidate = -1;           // >= 0: this product is a sample; report its time with ReportGemv
};

// At most this many candidates per format take part: the start-up choice and the next fastest.
inline constexpr int kMaxGemvCandidates = 3;

// The confirmation of one format's gemv among `candidates` (the start-up choice first, at most
// kMaxGemvCandidates). Thread-safe.
class GemvConfirmation {
 public:
  // Visits of each matrix by each candidate before the choice is made (after one warm-up visit).
  static constexpr int kVisits = 6;
  // Products timed in all before the choice is made on the matrices that have their visits.
  static constexpr int64_t kMaxSamples = 20000;
  // A candidate must beat the start-up choice by this fraction of the pass to replace it. Candidates within
  // a few percent trade places from run to run on a shared VM (Q4_K's AVX-512 4-row gemv and AVX2 1-row loop
  // on Zen 4, docs/bench.md), and such a swap gains nothing that tg can show.
  static constexpr double kMargin = 0.05;

  GemvConfirmation(std::string type, std::vector<GemvCandidate> candidates);

  // For a product by the matrix (or fused matrices) identified by `key` (null: not a sample).
  GemvPick Pick(const void* key);
  // `seconds` of the product Pick gave `candidate` for (`bytes` of weights read). True when it settled the
  // choice.
  bool Report(const void* key, int candidate, double seconds, double bytes);

  bool settled() const;
  int winner() const;  // index into the candidates once settled, else 0
  // "q6_K gemv in decode avx512 1-row 30.1 GB/s (avx2 1-row 28.0, avx512 24.9) over 113 matrices, 6 passes
  // each" once settled, else empty.
  std::string Summary() const;

 private:
  struct Matrix {
    bool warm = false;
    double bytes = 0;
    int visits[kMaxGemvCandidates] = {};
    double seconds[kMaxGemvCandidates] = {};
  };
  bool Complete(const Matrix& m) const;  // every candidate has its kVisits timed visits of m
  void Settle();                         // under mu_

  mutable std::mutex mu_;
  std::string type_;
  std::vector<GemvCandidate> candidates_;
  std::unordered_map<const void*, Matrix> matrices_;
  int64_t incomplete_ = 0;  // matrices still short of kVisits for some candidate
  int64_t samples_ = 0;
  bool settled_ = false;
  int winner_ = 0;
  std::string summary_;
};

// Process-wide, one per format (SelectKernels starts them; MatMul asks them).
// Starts format f's confirmation (once per process; a second call is ignored). Fewer than 2 candidates: none.
void BeginGemvConfirmation(int f, std::vector<GemvCandidate> candidates);
// What a single-row product of format f by the matrices identified by `key` runs with (see GemvPick).
GemvPick PickGemv(int f, const void* key);
void ReportGemv(int f, const void* key, int candidate, double seconds, double bytes);
// True while some format's confirmation is still taking samples.
bool GemvConfirmationPending();
// Format f's settled confirmation line (empty: none, or not settled yet).
std::string GemvConfirmationSummary(int f);

}  // namespace lazyslot::quant
