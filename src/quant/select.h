// Internal interface of the measured kernel selection (select.cpp): the choice among explicitly given
// candidate sets, which SelectKernels (quant.h) runs on AvailableKernels() and the tests run on sets of their
// own (a deliberately broken variant, a forced level).
#pragma once

#include <string>
#include <vector>

#include "quant/gemv_confirm.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace lazyslot::quant {

struct SelectOptions {
  // LAZYSLOT_ISA named a level: every family takes the variant of the highest set at or below `level` whose
  // check passes, and nothing is timed.
  bool forced = false;
  Isa level = Isa::kAvx512;
  double budget_ms = 1.0;  // timing of one variant of one family, over all the format's row lengths
  // Threads that stream a timed gemv matrix together, each its own share of rows as a decode step splits
  // a matrix: a gemv that wins on one thread can lose when every core streams at once (docs/decisions/0009).
  int gemv_threads = 1;
};

// What SelectFrom decided for one format: "q4_K gemv avx2 14.1 GB/s (avx512 13.9), tile avx2 40 GMAC/s, ...".
struct FormatChoice {
  int format = -1;
  std::string summary;
  // The gemv variants decode confirms the choice among (gemv_confirm.h): the chosen one first, then those
  // whose timing came within kConfirmShare of it and whose dots give its bits exactly, fastest first. Empty
  // when forced or when no other variant qualifies.
  std::vector<GemvCandidate> confirm;
};

// A gemv variant whose start-up figure is at least this share of the chosen one's is confirmed in decode.
inline constexpr double kConfirmShare = 0.8;

// Selects each format of `shapes` that chosen[f] is false for, among the SIMD sets of `sets` (isa >= avx2, in
// rising order as AvailableKernels gives them; a variant is named by the first set that has it), writes the
// format's vec_dot, gemv, vec_dot_tile and packed into *active and sets chosen[f]. A format whose gemv has no
// SIMD variant that passes its check gets the scalar set's entries for every family. Returns one entry per
// newly chosen format, in format order. Shapes SelectKernels would ignore are ignored.
std::vector<FormatChoice> SelectFrom(const std::vector<KernelSet>& sets,
                                     const std::vector<MatrixShape>& shapes, const SelectOptions& opt,
                                     KernelSet* active, bool chosen[kFormatCount]);

}  // namespace lazyslot::quant
