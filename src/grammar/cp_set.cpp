// Code-point set algebra (sorted, disjoint ranges) used by the GBNF parser and the matcher.
#include <algorithm>

#include "grammar/grammar_ir.h"

namespace lazyslot::grammar {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

}  // namespace

CpSet NormalizeSet(std::vector<CpRange> ranges) {
  std::vector<CpRange> split;
  split.reserve(ranges.size() + 1);
  for (CpRange r : ranges) {  // cut out the surrogates
    if (r.lo > r.hi || r.lo > kMaxCodePoint) continue;
    r.hi = std::min(r.hi, kMaxCodePoint);
    if (r.hi < kSurrogateLo || r.lo > kSurrogateHi) {
      split.push_back(r);
      continue;
    }
    if (r.lo < kSurrogateLo) split.push_back({r.lo, kSurrogateLo - 1});
    if (r.hi > kSurrogateHi) split.push_back({kSurrogateHi + 1, r.hi});
  }
  std::sort(split.begin(), split.end(), [](CpRange a, CpRange b) { return a.lo < b.lo; });
  CpSet out;
  for (CpRange r : split) {
    if (!out.empty() && r.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

CpSet ComplementSet(const CpSet& set) {
  std::vector<CpRange> out;
  uint32_t next = 0;
  for (CpRange r : set) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return NormalizeSet(std::move(out));
}

CpSet UnionSets(const CpSet& a, const CpSet& b) {
  std::vector<CpRange> all(a);
  all.insert(all.end(), b.begin(), b.end());
  return NormalizeSet(std::move(all));
}

bool SetContains(const CpSet& set, uint32_t cp) {
  auto it = std::upper_bound(set.begin(), set.end(), cp, [](uint32_t v, CpRange r) { return v < r.lo; });
  return it != set.begin() && std::prev(it)->hi >= cp;
}

bool SetIntersects(const CpSet& set, uint32_t lo, uint32_t hi) {
  // First range whose hi >= lo; it intersects when it starts at or before hi.
  auto it = std::lower_bound(set.begin(), set.end(), lo, [](CpRange r, uint32_t v) { return r.hi < v; });
  return it != set.end() && it->lo <= hi;
}

}  // namespace lazyslot::grammar
