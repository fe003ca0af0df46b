// The compiled form of a grammar: rules flattened into one array of elements (code points sets, rule
// references, end-of-alternative markers), as ParseGbnf produces it and the matcher walks it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace lazyslot::grammar {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// An inclusive code-point range; a set is a sorted vector of disjoint, non-adjacent ranges.
struct CpRange {
  uint32_t lo, hi;
  bool operator==(const CpRange&) const = default;
};
using CpSet = std::vector<CpRange>;

// Set algebra on CpSet. Every set built by the parser excludes the surrogates D800-DFFF (UTF-8 cannot
// encode them), so a partial UTF-8 sequence can be checked by interval intersection alone.
CpSet NormalizeSet(std::vector<CpRange> ranges);  // sorts and merges, drops surrogates
CpSet ComplementSet(const CpSet& set);            // over [0, 10FFFF] minus surrogates
CpSet UnionSets(const CpSet& a, const CpSet& b);
bool SetContains(const CpSet& set, uint32_t cp);
bool SetIntersects(const CpSet& set, uint32_t lo, uint32_t hi);

// One element of `CompiledGrammar::code`.
struct Element {
  enum Kind : uint8_t { kEnd, kChars, kRef };
  Kind kind;
  uint32_t value;  // kChars: index into sets; kRef: rule id; kEnd: the rule it ends (unused by the matcher)
};

struct CompiledGrammar {
  // Every alternative of every rule, each closed by a kEnd: [alternative elements..., kEnd]*.
  std::vector<Element> code;
  std::vector<CpSet> sets;                       // deduplicated code-point sets of kChars elements
  std::vector<std::vector<uint32_t>> rule_alts;  // rule id -> start offsets of its alternatives in `code`
  std::vector<std::string> rule_names;           // rule id -> name (generated ones: `parent-N`)
  uint32_t root = 0;
  // code offset -> fewest bytes that finish its alternative from there (kUnreachable: none can), for
  // Matcher::MinBytesToEnd. Filled by ComputeMinBytes.
  std::vector<uint32_t> min_bytes;
};

constexpr uint32_t kUnreachable = 0xFFFFFFFFu;

// Fills g->min_bytes: a fixed point over the rules (each rule's shortest alternative), then per offset the
// sum over the rest of its alternative. A kChars element costs the UTF-8 length of its smallest code point.
void ComputeMinBytes(CompiledGrammar* g);

}  // namespace lazyslot::grammar
