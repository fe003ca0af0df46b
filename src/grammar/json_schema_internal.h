// Pieces of the JSON schema -> GBNF conversion shared by its files: GBNF text helpers, the rule table,
// regex patterns as GBNF over JSON-encoded string characters, string formats and numeric ranges.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "grammar/grammar_ir.h"

namespace lazyslot::grammar::schema {

// `[...]` for a code-point set (escaping what GBNF classes need). An empty set gives `[^\x00-\U0010FFFF]`.
std::string GbnfClass(const CpSet& set);

// Rules named `prefix-<hint>` (sanitized), deduplicated by body; the start rule is `prefix` itself.
class RuleTable {
 public:
  explicit RuleTable(std::string prefix) : prefix_(std::move(prefix)) {}
  const std::string& prefix() const { return prefix_; }
  // Adds `prefix-hint ::= body` (a new name if `hint` is taken by another body); returns the name.
  std::string Add(std::string_view hint, const std::string& body);
  // Reserves a name for a rule whose body comes later (recursive $ref); Define fills it.
  std::string Reserve(std::string_view hint);
  void Define(const std::string& name, const std::string& body);
  // The shared primitives (space, string, number, value...), added on first use; returns the rule name.
  std::string Primitive(std::string_view which);
  std::string Text(const std::string& start_body) const;

 private:
  std::string Unique(std::string_view hint);
  std::string prefix_;
  std::vector<std::pair<std::string, std::string>> rules_;  // in creation order
  std::map<std::string, size_t> by_name_;
  std::map<std::string, std::string> by_body_;
};

// An ECMAScript-style `pattern` (JSON Schema semantics: unanchored unless ^...$) as a GBNF expression
// over the JSON-encoded characters of a string's contents (no quotes). Unsupported constructs are
// InvalidArgument "json_schema: pattern ...: <construct> is unsupported at <where>".
Result<std::string> PatternToGbnf(std::string_view pattern, RuleTable* rules, const std::string& where);

// A `format` (date, time, date-time, uuid, ipv4) as a GBNF expression for the string's contents.
Result<std::string> FormatToGbnf(std::string_view format, RuleTable* rules, const std::string& where);

// Integers in [lo, hi] (lo <= hi, |bounds| <= 1e18), decimal without leading zeros.
std::string IntegerRangeGbnf(int64_t lo, int64_t hi);

// Decimals (no exponent) between integer bounds; nullopt = unbounded. Empty string: no such number.
struct NumberBound {
  int64_t value;
  bool exclusive;
};
std::string NumberRangeGbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

constexpr int64_t kBoundLimit = 1000000000000000000;  // 1e18: numeric bounds beyond this are clamped/refused
constexpr uint32_t kMaxCount = 100000;                // largest maxLength / maxItems / {n} we expand

}  // namespace lazyslot::grammar::schema
