// The decode-time confirmation of the gemv choice (gemv_confirm.h, docs/decisions/0011). Each matrix (a
// product's first weight) is visited once per decode step; its first visit warms up and is not timed, then
// visit v runs the candidate with the fewest timed visits of that matrix, so the candidates take whole steps
// in turn and drift in the machine's speed reaches them alike. Once every matrix has kVisits timed visits
// per candidate, each candidate's pass is the sum over the matrices of its mean time there, and the shortest
// pass wins (the start-up choice unless another beats it by kMargin).
#include "quant/gemv_confirm.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>

#include "core/log.h"
#include "quant/check_rows.h"

namespace lazyslot::quant {

GemvConfirmation::GemvConfirmation(std::string type, std::vector<GemvCandidate> candidates)
    : type_(std::move(type)), candidates_(std::move(candidates)) {
  if (candidates_.size() > static_cast<size_t>(kMaxGemvCandidates)) candidates_.resize(kMaxGemvCandidates);
  if (candidates_.size() < 2) settled_ = true;
}

GemvPick GemvConfirmation::Pick(const void* key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (candidates_.empty()) return {};
  if (settled_) return {candidates_[winner_].dot, candidates_[winner_].tile, -1};
  if (key == nullptr) return {candidates_[0].dot, candidates_[0].tile, -1};
  auto [it, added] = matrices_.try_emplace(key);
  if (added) ++incomplete_;
  const Matrix& m = it->second;
  int c = 0;
  if (m.warm) {
    for (int k = 1; k < static_cast<int>(candidates_.size()); ++k) {
      if (m.visits[k] < m.visits[c]) c = k;
    }
  }
  return {candidates_[c].dot, candidates_[c].tile, c};
}

bool GemvConfirmation::Report(const void* key, int candidate, double seconds, double bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (settled_ || candidate < 0 || candidate >= static_cast<int>(candidates_.size())) return false;
  auto it = matrices_.find(key);
  if (it == matrices_.end()) return false;
  Matrix& m = it->second;
  m.bytes = bytes;
  if (!m.warm) {
    m.warm = true;
    return false;
  }
  const bool was = Complete(m);
  ++m.visits[candidate];
  m.seconds[candidate] += seconds;
  if (!was && Complete(m)) --incomplete_;
  ++samples_;
  if (incomplete_ > 0 && samples_ < kMaxSamples) return false;
  Settle();
  return true;
}

bool GemvConfirmation::Complete(const Matrix& m) const {
  const int n = static_cast<int>(candidates_.size());
  return std::all_of(m.visits, m.visits + n, [](int v) { return v >= kVisits; });
}

void GemvConfirmation::Settle() {
  const int n = static_cast<int>(candidates_.size());
  double pass[kMaxGemvCandidates] = {};
  double bytes = 0;
  int64_t matrices = 0;
  for (const auto& [key, m] : matrices_) {
    if (!Complete(m)) continue;
    for (int k = 0; k < n; ++k) pass[k] += m.seconds[k] / m.visits[k];
    bytes += m.bytes;
    ++matrices;
  }
  settled_ = true;
  winner_ = 0;
  matrices_.clear();
  if (matrices == 0) {
    summary_ = type_ + " gemv in decode: " + candidates_[0].name + " (no matrix had its samples)";
    return;
  }
  for (int k = 1; k < n; ++k) {
    if (pass[k] < pass[winner_] && pass[k] < pass[0] * (1.0 - kMargin)) winner_ = k;
  }
  char buf[64];
  auto rate = [&](int k) {
    std::snprintf(buf, sizeof(buf), "%.1f", bytes / pass[k] / 1e9);
    return std::string(buf);
  };
  summary_ = type_ + " gemv in decode " + candidates_[winner_].name + " " + rate(winner_) + " GB/s (";
  const char* sep = "";
  for (int k = 0; k < n; ++k) {
    if (k == winner_) continue;
    summary_ += sep + candidates_[k].name + " " + rate(k);
    sep = ", ";
  }
  summary_ += ") over " + std::to_string(matrices) + " matrices, " + std::to_string(kVisits) + " passes each";
  if (winner_ != 0) summary_ += ", replacing " + candidates_[0].name;
}

bool GemvConfirmation::settled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return settled_;
}

int GemvConfirmation::winner() const {
  std::lock_guard<std::mutex> lock(mu_);
  return winner_;
}

std::string GemvConfirmation::Summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  return summary_;
}

namespace {

// Per format: state 0 = no confirmation, 1 = taking samples, 2 = settled (`pick` serves). The confirmation
// object is published before the state turns 1 and the pick before it turns 2 (release/acquire), so the
// settled path takes no lock.
struct Slot {
  std::atomic<int> state{0};
  std::unique_ptr<GemvConfirmation> confirmation;
  GemvPick pick;
};

struct Registry {
  std::mutex mu;  // serializes Begin
  Slot slots[kFormatCount];
};

Registry& Reg() {
  static Registry r;
  return r;
}

}  // namespace

void BeginGemvConfirmation(int f, std::vector<GemvCandidate> candidates) {
  if (f < 0 || f >= kFormatCount || candidates.size() < 2) return;
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  Slot& s = r.slots[f];
  if (s.confirmation) return;
  s.confirmation = std::make_unique<GemvConfirmation>(TypeName(FormatType(f)), std::move(candidates));
  s.state.store(1, std::memory_order_release);
}

GemvPick PickGemv(int f, const void* key) {
  if (f < 0 || f >= kFormatCount) return {};
  Slot& s = Reg().slots[f];
  const int state = s.state.load(std::memory_order_acquire);
  if (state == 0) return {};
  if (state == 2) return s.pick;
  return s.confirmation->Pick(key);
}

void ReportGemv(int f, const void* key, int candidate, double seconds, double bytes) {
  if (f < 0 || f >= kFormatCount) return;
  Slot& s = Reg().slots[f];
  if (s.state.load(std::memory_order_acquire) != 1) return;
  GemvConfirmation& c = *s.confirmation;
  if (!c.Report(key, candidate, seconds, bytes)) return;
  s.pick = c.Pick(nullptr);  // the settled winner
  s.state.store(2, std::memory_order_release);
  LS_LOG_INFO("kernels: %s", c.Summary().c_str());
}

bool GemvConfirmationPending() {
  for (Slot& s : Reg().slots) {
    if (s.state.load(std::memory_order_acquire) == 1) return true;
  }
  return false;
}

std::string GemvConfirmationSummary(int f) {
  if (f < 0 || f >= kFormatCount) return "";
  Slot& s = Reg().slots[f];
  if (s.state.load(std::memory_order_acquire) != 2) return "";
  return s.confirmation->Summary();
}

}  // namespace lazyslot::quant
