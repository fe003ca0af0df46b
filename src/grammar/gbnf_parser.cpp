// ParseGbnf: llama.cpp's GBNF text (grammars/README.md in llama.cpp) into a CompiledGrammar. Repetitions
// become right-recursive helper rules; the result is checked for undefined rules, a missing root, left
// recursion (which would make the matcher's expansion loop) and size limits.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "grammar/grammar_ir.h"

namespace lazyslot::grammar {
namespace {

constexpr uint32_t kMaxRepeat = 100000;           // largest m or n in {m,n}
constexpr size_t kMaxElements = size_t{1} << 22;  // elements of all rules together (~32 MiB of code)
constexpr int kMaxNesting = 128;                  // parentheses

struct RuleDef {
  std::string name;
  std::vector<std::vector<Element>> alts;
  bool defined = false;
  bool generated = false;  // a group or repetition helper
  bool repetition = false;
  size_t first_ref = std::string::npos;  // byte offset of the first reference
  size_t def_pos = 0;                    // byte offset of the definition (or of the group / operator)
};

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  explicit Parser(std::string_view src) : src_(src) {}

  Result<GrammarPtr> Run(std::string_view root);

 private:
  Status Error(size_t at, const std::string& what) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < at && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return InvalidArgument("grammar: line " + std::to_string(line) + ", column " + std::to_string(col) +
                           ": " + what);
  }

  bool AtEnd() const { return pos_ >= src_.size(); }
  char Peek(size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }

  // Spaces, tabs and # comments; newlines too when `newlines`.
  void SkipSpace(bool newlines) {
    while (!AtEnd()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!AtEnd() && src_[pos_] != '\n' && src_[pos_] != '\r') ++pos_;
      } else if (newlines && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  uint32_t RuleId(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(rules_.size());
    rules_.push_back({});
    rules_.back().name = name;
    ids_[name] = id;
    return id;
  }

  uint32_t NewRule(uint32_t parent, size_t at, bool repetition) {
    std::string name;
    do {
      name = rules_[parent].name + "_" + std::to_string(++gen_counter_);
    } while (ids_.count(name));
    uint32_t id = RuleId(name);
    rules_[id].defined = rules_[id].generated = true;
    rules_[id].repetition = repetition;
    rules_[id].def_pos = at;
    return id;
  }

  uint32_t SetId(CpSet set) {
    auto it = set_ids_.find(set);
    if (it != set_ids_.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(sets_.size());
    sets_.push_back(set);
    set_ids_.emplace(std::move(set), id);
    return id;
  }

  Status Count(size_t n, size_t at) {
    n_elements_ += n;
    if (n_elements_ > kMaxElements) return Error(at, "grammar too large (more than 4194304 elements)");
    return Status::Ok();
  }

  Result<std::string> ParseName() {
    size_t start = pos_;
    while (!AtEnd() && IsWordChar(src_[pos_])) ++pos_;
    if (pos_ == start) return Error(start, "expected a rule name");
    return std::string(src_.substr(start, pos_ - start));
  }

  // One UTF-8 code point of the grammar text itself.
  Result<uint32_t> DecodeRaw() {
    size_t at = pos_;
    unsigned char c = static_cast<unsigned char>(src_[pos_]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || pos_ + len > src_.size()) return Error(at, "invalid UTF-8 in grammar text");
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < len; ++i) {
      unsigned char cc = static_cast<unsigned char>(src_[pos_ + i]);
      if ((cc & 0xC0) != 0x80) return Error(at, "invalid UTF-8 in grammar text");
      cp = (cp << 6) | (cc & 0x3F);
    }
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return Error(at, "invalid UTF-8 in grammar text");
    }
    pos_ += len;
    return cp;
  }

  // A character inside a literal or class: raw UTF-8 or an escape.
  Result<uint32_t> ParseChar() {
    size_t at = pos_;
    if (Peek() != '\\') return DecodeRaw();
    ++pos_;
    if (AtEnd()) return Error(at, "unfinished escape");
    char e = src_[pos_++];
    switch (e) {
      case 'n':
        return uint32_t{'\n'};
      case 'r':
        return uint32_t{'\r'};
      case 't':
        return uint32_t{'\t'};
      case '\\':
        return uint32_t{'\\'};
      case '"':
        return uint32_t{'"'};
      case '[':
        return uint32_t{'['};
      case ']':
        return uint32_t{']'};
      case '-':
        return uint32_t{'-'};
      case '^':
        return uint32_t{'^'};
      case 'x':
      case 'u':
      case 'U': {
        int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
          int h = HexValue(Peek());
          if (h < 0)
            return Error(at, std::string("expected ") + std::to_string(digits) + " hex digits after \\" + e);
          v = v * 16 + static_cast<uint32_t>(h);
          ++pos_;
        }
        if (v > kMaxCodePoint) return Error(at, "code point above U+10FFFF");
        if (v >= 0xD800 && v <= 0xDFFF) return Error(at, "surrogate code point in escape");
        return v;
      }
      default:
        return Error(at, std::string("unknown escape '\\") + e + "'");
    }
  }

  Status ParseLiteral(std::vector<Element>* out) {
    size_t at = pos_++;
    std::vector<Element> elems;
    while (true) {
      if (AtEnd()) return Error(at, "unterminated string literal");
      if (Peek() == '"') break;
      LS_ASSIGN_OR_RETURN(uint32_t cp, ParseChar());
      elems.push_back({Element::kChars, SetId(CpSet{{cp, cp}})});
    }
    ++pos_;
    LS_RETURN_IF_ERROR(Count(elems.size(), at));
    out->insert(out->end(), elems.begin(), elems.end());
    return Status::Ok();
  }

  Status ParseClass(std::vector<Element>* out) {
    size_t at = pos_++;
    bool negate = false;
    if (Peek() == '^') {
      negate = true;
      ++pos_;
    }
    std::vector<CpRange> ranges;
    while (true) {
      if (AtEnd()) return Error(at, "unterminated character class");
      if (Peek() == ']') break;
      size_t item = pos_;
      LS_ASSIGN_OR_RETURN(uint32_t lo, ParseChar());
      uint32_t hi = lo;
      if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < src_.size()) {
        ++pos_;
        LS_ASSIGN_OR_RETURN(hi, ParseChar());
        if (hi < lo) return Error(item, "character range out of order");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    CpSet set = NormalizeSet(std::move(ranges));
    if (negate) set = ComplementSet(set);
    LS_RETURN_IF_ERROR(Count(1, at));
    out->push_back({Element::kChars, SetId(std::move(set))});
    return Status::Ok();
  }

  Result<uint32_t> ParseCount() {
    size_t at = pos_;
    uint64_t v = 0;
    if (!(Peek() >= '0' && Peek() <= '9')) return Error(at, "expected a number in {}");
    while (Peek() >= '0' && Peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(Peek() - '0');
      if (v > kMaxRepeat)
        return Error(at, "repetition count above the limit of " + std::to_string(kMaxRepeat));
      ++pos_;
    }
    return static_cast<uint32_t>(v);
  }

  // Rewrites `atom` (the elements of the last symbol in `seq`, from `start`) for the operator at pos_.
  Status ApplyRepetition(uint32_t rule, std::vector<Element>* seq, size_t start) {
    size_t at = pos_;
    char op = src_[pos_++];
    uint32_t min = 0, max = 0;
    bool unbounded = false;
    if (op == '*') {
      unbounded = true;
    } else if (op == '+') {
      min = 1;
      unbounded = true;
    } else if (op == '?') {
      max = 1;
    } else {  // {m}, {m,}, {m,n}
      SkipSpace(true);
      LS_ASSIGN_OR_RETURN(min, ParseCount());
      SkipSpace(true);
      max = min;
      if (Peek() == ',') {
        ++pos_;
        SkipSpace(true);
        if (Peek() == '}') {
          unbounded = true;
        } else {
          LS_ASSIGN_OR_RETURN(max, ParseCount());
          SkipSpace(true);
        }
      }
      if (Peek() != '}') return Error(pos_, "expected '}'");
      ++pos_;
      if (!unbounded && max < min) return Error(at, "repetition {m,n} with n < m");
    }
    std::vector<Element> atom(seq->begin() + start, seq->end());
    seq->resize(start);
    if (atom.empty()) return Status::Ok();  // "" repeated is still ""
    if (atom.size() > 1) {                  // wrap a multi-element literal so it is one symbol
      uint32_t wrap = NewRule(rule, at, false);
      rules_[wrap].alts.push_back(atom);
      LS_RETURN_IF_ERROR(Count(atom.size() + 1, at));
      atom = {{Element::kRef, wrap}};
    }
    const Element x = atom[0];
    LS_RETURN_IF_ERROR(Count(static_cast<size_t>(min) + 4, at));
    for (uint32_t i = 0; i < min; ++i) seq->push_back(x);
    if (unbounded) {  // R ::= x R |
      uint32_t r = NewRule(rule, at, true);
      rules_[r].alts = {{x, {Element::kRef, r}}, {}};
      LS_RETURN_IF_ERROR(Count(4, at));
      seq->push_back({Element::kRef, r});
    } else if (max > min) {  // O_1 ::= x | ; O_k ::= x O_{k-1} |
      LS_RETURN_IF_ERROR(Count(static_cast<size_t>(max - min) * 4, at));
      uint32_t prev = NewRule(rule, at, true);
      rules_[prev].alts = {{x}, {}};
      for (uint32_t k = 2; k <= max - min; ++k) {
        uint32_t r = NewRule(rule, at, true);
        rules_[r].alts = {{x, {Element::kRef, prev}}, {}};
        prev = r;
      }
      seq->push_back({Element::kRef, prev});
    }
    return Status::Ok();
  }

  Status ParseSequence(uint32_t rule, bool nested, int depth, std::vector<Element>* seq) {
    size_t last_start = std::string::npos;
    while (true) {
      SkipSpace(nested);
      if (AtEnd()) return Status::Ok();
      char c = Peek();
      size_t start = seq->size();
      if (c == '"') {
        LS_RETURN_IF_ERROR(ParseLiteral(seq));
      } else if (c == '[') {
        LS_RETURN_IF_ERROR(ParseClass(seq));
      } else if (c == '.') {
        ++pos_;
        LS_RETURN_IF_ERROR(Count(1, pos_ - 1));
        seq->push_back({Element::kChars, SetId(ComplementSet({}))});
      } else if (c == '(') {
        size_t at = pos_++;
        if (depth >= kMaxNesting)
          return Error(at, "parentheses nested deeper than " + std::to_string(kMaxNesting));
        uint32_t sub = NewRule(rule, at, false);
        LS_RETURN_IF_ERROR(ParseAlternatives(sub, true, depth + 1));
        SkipSpace(true);
        if (Peek() != ')') return Error(at, "unclosed '('");
        ++pos_;
        LS_RETURN_IF_ERROR(Count(1, at));
        seq->push_back({Element::kRef, sub});
      } else if (IsWordChar(c)) {
        size_t at = pos_;
        LS_ASSIGN_OR_RETURN(std::string name, ParseName());
        uint32_t id = RuleId(name);
        if (rules_[id].first_ref == std::string::npos) rules_[id].first_ref = at;
        LS_RETURN_IF_ERROR(Count(1, at));
        seq->push_back({Element::kRef, id});
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (last_start == std::string::npos)
          return Error(pos_, std::string("'") + c + "' with nothing to repeat");
        // The expansion (from last_start) stays the last symbol, so `x{2}*` repeats "x x".
        LS_RETURN_IF_ERROR(ApplyRepetition(rule, seq, last_start));
        continue;
      } else {
        return Status::Ok();  // '|', ')', a newline or something the caller reports
      }
      last_start = start;
    }
  }

  Status ParseAlternatives(uint32_t rule, bool nested, int depth) {
    while (true) {
      std::vector<Element> seq;
      LS_RETURN_IF_ERROR(ParseSequence(rule, nested, depth, &seq));
      rules_[rule].alts.push_back(std::move(seq));
      if (Peek() != '|' || AtEnd()) return Status::Ok();
      ++pos_;
      SkipSpace(true);
    }
  }

  Status ParseRule() {
    size_t at = pos_;
    LS_ASSIGN_OR_RETURN(std::string name, ParseName());
    SkipSpace(false);
    if (src_.substr(pos_, 3) != "::=") return Error(pos_, "expected '::=' after rule name '" + name + "'");
    pos_ += 3;
    SkipSpace(true);
    uint32_t id = RuleId(name);
    if (rules_[id].defined) return Error(at, "rule '" + name + "' defined twice");
    rules_[id].defined = true;
    rules_[id].def_pos = at;
    LS_RETURN_IF_ERROR(ParseAlternatives(id, false, 0));
    if (AtEnd()) return Status::Ok();
    if (Peek() == '\n' || Peek() == '\r') return Status::Ok();
    if (Peek() == ')') return Error(pos_, "unexpected ')'");
    return Error(pos_, std::string("unexpected '") + Peek() + "' (expected a newline or the end of input)");
  }

  Status CheckLeftRecursion() const;

  std::string_view src_;
  size_t pos_ = 0;
  std::vector<RuleDef> rules_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<CpSet> sets_;
  std::map<CpSet, uint32_t, bool (*)(const CpSet&, const CpSet&)> set_ids_{
      [](const CpSet& a, const CpSet& b) {
        return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](CpRange x, CpRange y) {
          return x.lo != y.lo ? x.lo < y.lo : x.hi < y.hi;
        });
      }};
  size_t n_elements_ = 0;
  int gen_counter_ = 0;
};

// A rule that can reach itself without consuming a code point would make expansion loop forever.
Status Parser::CheckLeftRecursion() const {
  const size_t n = rules_.size();
  std::vector<char> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const auto& alt : rules_[r].alts) {
        bool all = std::all_of(alt.begin(), alt.end(), [&](const Element& e) {
          return e.kind == Element::kRef && nullable[e.value];
        });
        if (all) {
          nullable[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<uint32_t>> left(n);  // rules reachable at the left edge
  for (size_t r = 0; r < n; ++r) {
    for (const auto& alt : rules_[r].alts) {
      for (const Element& e : alt) {
        if (e.kind != Element::kRef) break;
        left[r].push_back(e.value);
        if (!nullable[e.value]) break;
      }
    }
  }
  std::vector<char> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (uint32_t s = 0; s < n; ++s) {
    if (color[s]) continue;
    stack.push_back({s, 0});
    color[s] = 1;
    while (!stack.empty()) {
      auto& [r, i] = stack.back();
      if (i == left[r].size()) {
        color[r] = 2;
        stack.pop_back();
        continue;
      }
      uint32_t t = left[r][i++];
      if (color[t] == 1) {
        const RuleDef& def = rules_[t];
        if (def.repetition) {
          return Error(def.def_pos, "repeated expression can match the empty string (left recursion)");
        }
        return Error(def.def_pos, "left recursion in rule '" + def.name + "'");
      }
      if (color[t] == 0) {
        color[t] = 1;
        stack.push_back({t, 0});
      }
    }
  }
  return Status::Ok();
}

Result<GrammarPtr> Parser::Run(std::string_view root) {
  SkipSpace(true);
  while (!AtEnd()) {
    LS_RETURN_IF_ERROR(ParseRule());
    SkipSpace(true);
  }
  // Undefined rules: report the earliest reference.
  size_t worst = std::string::npos;
  std::string worst_name;
  for (const RuleDef& r : rules_) {
    if (!r.defined && r.first_ref < worst) {
      worst = r.first_ref;
      worst_name = r.name;
    }
  }
  if (worst != std::string::npos) return Error(worst, "undefined rule '" + worst_name + "'");
  auto it = ids_.find(std::string(root));
  if (it == ids_.end() || !rules_[it->second].defined) {
    return Error(src_.size(), "no '" + std::string(root) + "' rule");
  }
  LS_RETURN_IF_ERROR(CheckLeftRecursion());

  auto g = std::make_shared<CompiledGrammar>();
  g->root = it->second;
  g->sets = std::move(sets_);
  g->code.reserve(n_elements_ + rules_.size() * 2);
  for (uint32_t r = 0; r < rules_.size(); ++r) {
    g->rule_names.push_back(rules_[r].name);
    std::vector<uint32_t> starts;
    for (const auto& alt : rules_[r].alts) {
      starts.push_back(static_cast<uint32_t>(g->code.size()));
      g->code.insert(g->code.end(), alt.begin(), alt.end());
      g->code.push_back({Element::kEnd, r});
    }
    g->rule_alts.push_back(std::move(starts));
  }
  ComputeMinBytes(g.get());
  return GrammarPtr(std::move(g));
}

}  // namespace

Result<GrammarPtr> ParseGbnf(std::string_view text, std::string_view root) {
  Parser p(text);
  return p.Run(root);
}

}  // namespace lazyslot::grammar
