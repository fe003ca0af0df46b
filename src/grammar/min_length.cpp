// Shortest completions: how many bytes, at least, finish the grammar from a matcher's state. The engine
// uses it to close a constrained answer before max_tokens or the slot's end would cut it.
#include <algorithm>

#include "grammar/grammar_ir.h"
#include "grammar/matcher_impl.h"

namespace lazyslot::grammar {
namespace {

uint32_t AddSat(uint32_t a, uint32_t b) {
  return (a == kUnreachable || b == kUnreachable || a + b < a) ? kUnreachable : a + b;
}

uint32_t Utf8Length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

}  // namespace

void ComputeMinBytes(CompiledGrammar* g) {
  const size_t n_rules = g->rule_alts.size();
  std::vector<uint32_t> rule_min(n_rules, kUnreachable);
  auto elem_min = [&](const Element& e) -> uint32_t {
    if (e.kind == Element::kChars) {
      const CpSet& set = g->sets[e.value];
      return set.empty() ? kUnreachable : Utf8Length(set.front().lo);
    }
    return e.kind == Element::kRef ? rule_min[e.value] : 0;
  };
  // Each pass can only lower values, and a rule's value settles once its shortest derivation's rules
  // have: at most n_rules + 1 passes.
  for (size_t pass = 0; pass <= n_rules; ++pass) {
    bool changed = false;
    for (size_t r = 0; r < n_rules; ++r) {
      for (uint32_t start : g->rule_alts[r]) {
        uint32_t sum = 0;
        for (uint32_t p = start; g->code[p].kind != Element::kEnd && sum != kUnreachable; ++p) {
          sum = AddSat(sum, elem_min(g->code[p]));
        }
        if (sum < rule_min[r]) {
          rule_min[r] = sum;
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  g->min_bytes.assign(g->code.size(), 0);
  for (size_t p = g->code.size(); p-- > 0;) {
    const Element& e = g->code[p];
    g->min_bytes[p] = e.kind == Element::kEnd ? 0 : AddSat(elem_min(e), g->min_bytes[p + 1]);
  }
}

size_t Matcher::MinBytesToEnd() const {
  const CompiledGrammar& g = *state_->grammar;
  uint32_t best = kUnreachable;
  for (const Stack& s : state_->set->stacks) {
    // A begun character needs a top to take it: a finished (empty) stack cannot, so it does not end here.
    if (state_->need > 0 && s.empty()) continue;
    uint32_t sum = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      // Inside a UTF-8 sequence the top's character is already begun: its remaining bytes, then the rest.
      const bool top = i + 1 == s.size();
      sum = AddSat(sum,
                   top && state_->need > 0 ? AddSat(state_->need, g.min_bytes[s[i] + 1]) : g.min_bytes[s[i]]);
    }
    best = std::min(best, sum);
  }
  return best == kUnreachable ? SIZE_MAX : best;
}

}  // namespace lazyslot::grammar
