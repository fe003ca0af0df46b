// JSON Schema `pattern` (an ECMA-262 regular expression, JSON Schema 2020-12 section 6.3.3) and `format`
// as GBNF over the JSON-encoded characters of a string: a regex character becomes its raw UTF-8 or, for
// `"`, `\` and control characters, its JSON escape, so the decoded string is what the regex matched.
#include <algorithm>
#include <memory>

#include "core/utf8.h"
#include "grammar/json_schema_internal.h"

namespace lazyslot::grammar::schema {
namespace {

struct Node {
  enum Kind { kSet, kSeq, kAlt, kRepeat } kind;
  CpSet set;                                 // kSet
  std::vector<std::unique_ptr<Node>> items;  // kSeq, kAlt
  uint32_t min = 0, max = 0;                 // kRepeat (items[0]); max == kUnbounded: no limit
};
constexpr uint32_t kUnbounded = ~0u;

CpSet Range(uint32_t lo, uint32_t hi) { return NormalizeSet({{lo, hi}}); }

CpSet Digits() { return Range('0', '9'); }
CpSet Word() { return NormalizeSet({{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'_', '_'}}); }
CpSet Space() {  // ECMA-262 WhiteSpace and LineTerminator
  return NormalizeSet({{'\t', '\r'},
                       {' ', ' '},
                       {0xA0, 0xA0},
                       {0x1680, 0x1680},
                       {0x2000, 0x200A},
                       {0x2028, 0x2029},
                       {0x202F, 0x202F},
                       {0x205F, 0x205F},
                       {0x3000, 0x3000},
                       {0xFEFF, 0xFEFF}});
}
CpSet Dot() { return ComplementSet(NormalizeSet({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})); }

class RegexParser {
 public:
  RegexParser(std::string_view src, std::string where) : where_(std::move(where)) {
    for (size_t i = 0; i < src.size();) {  // to code points (the schema came from valid JSON text)
      unsigned char c = static_cast<unsigned char>(src[i]);
      int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
      uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
      for (int k = 1; k < len && i + k < src.size(); ++k) cp = (cp << 6) | (src[i + k] & 0x3F);
      cps_.push_back(cp);
      i += len;
    }
  }

  Status Error(const std::string& what) const {
    return InvalidArgument("json_schema: pattern: " + what + " is unsupported at " + where_);
  }

  // Top level: alternatives, each may start with ^ and end with $.
  Result<std::unique_ptr<Node>> ParseTop(std::vector<std::pair<bool, bool>>* anchors) {
    auto alt = std::make_unique<Node>();
    alt->kind = Node::kAlt;
    while (true) {
      bool start = false, end = false;
      if (Peek() == '^') {
        start = true;
        ++pos_;
      }
      LS_ASSIGN_OR_RETURN(auto seq, ParseSeq(0, &end));
      alt->items.push_back(std::move(seq));
      anchors->push_back({start, end});
      if (pos_ >= cps_.size()) break;
      if (Peek() == '|') {
        ++pos_;
        continue;
      }
      return Error("an unbalanced ')'");
    }
    return alt;
  }

 private:
  uint32_t Peek() const { return pos_ < cps_.size() ? cps_[pos_] : 0; }
  bool AtEnd() const { return pos_ >= cps_.size(); }

  Result<std::unique_ptr<Node>> ParseAlt(int depth) {
    if (depth > 64) return Error("nesting deeper than 64 groups");
    auto alt = std::make_unique<Node>();
    alt->kind = Node::kAlt;
    while (true) {
      LS_ASSIGN_OR_RETURN(auto seq, ParseSeq(depth, nullptr));
      alt->items.push_back(std::move(seq));
      if (Peek() == '|' && !AtEnd()) {
        ++pos_;
        continue;
      }
      return alt;
    }
  }

  // A sequence up to '|', ')' or the end. At the top level (`end` set) a final '$' is an anchor.
  Result<std::unique_ptr<Node>> ParseSeq(int depth, bool* end) {
    auto seq = std::make_unique<Node>();
    seq->kind = Node::kSeq;
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      uint32_t c = Peek();
      if (c == '$') {
        ++pos_;
        if (end && (AtEnd() || Peek() == '|')) {
          *end = true;
          break;
        }
        return Error("'$' before the end of the pattern");
      }
      if (c == '^') return Error("'^' after the start of the pattern");
      std::unique_ptr<Node> atom;
      if (c == '(') {
        ++pos_;
        if (Peek() == '?') {
          ++pos_;
          uint32_t k = Peek();
          if (k == ':') {
            ++pos_;
          } else if (k == '=' || k == '!') {
            return Error("lookahead '(?" + std::string(1, static_cast<char>(k)) + "'");
          } else if (k == '<' && pos_ + 1 < cps_.size() && (cps_[pos_ + 1] == '=' || cps_[pos_ + 1] == '!')) {
            return Error("lookbehind");
          } else if (k == '<') {  // named group: the name does not change the language
            while (!AtEnd() && Peek() != '>') ++pos_;
            if (AtEnd()) return Error("an unterminated group name");
            ++pos_;
          } else {
            return Error("the group modifier '(?" + std::string(1, static_cast<char>(k)) + "'");
          }
        }
        LS_ASSIGN_OR_RETURN(atom, ParseAlt(depth + 1));
        if (Peek() != ')' || AtEnd()) return Error("an unclosed '('");
        ++pos_;
      } else if (c == '[') {
        LS_ASSIGN_OR_RETURN(CpSet set, ParseClass());
        atom = SetNode(std::move(set));
      } else if (c == '.') {
        ++pos_;
        atom = SetNode(Dot());
      } else if (c == '\\') {
        ++pos_;
        LS_ASSIGN_OR_RETURN(CpSet set, ParseEscape(false));
        atom = SetNode(std::move(set));
      } else if (c == '*' || c == '+' || c == '?') {
        return Error("a quantifier with nothing to repeat");
      } else {
        ++pos_;
        atom = SetNode(Range(c, c));
      }
      LS_ASSIGN_OR_RETURN(atom, ParseQuantifiers(std::move(atom)));
      seq->items.push_back(std::move(atom));
    }
    return seq;
  }

  Result<std::unique_ptr<Node>> ParseQuantifiers(std::unique_ptr<Node> atom) {
    while (!AtEnd()) {
      uint32_t c = Peek();
      uint32_t min = 0, max = 0;
      if (c == '*') {
        max = kUnbounded;
        ++pos_;
      } else if (c == '+') {
        min = 1;
        max = kUnbounded;
        ++pos_;
      } else if (c == '?') {
        max = 1;
        ++pos_;
      } else if (c == '{') {
        size_t save = pos_++;
        auto num = [&](uint32_t* v) {
          if (AtEnd() || Peek() < '0' || Peek() > '9') return false;
          uint64_t x = 0;
          while (!AtEnd() && Peek() >= '0' && Peek() <= '9')
            x = std::min<uint64_t>(x * 10 + (Peek() - '0'), 1u << 30), ++pos_;
          *v = static_cast<uint32_t>(x);
          return true;
        };
        if (!num(&min)) {  // not a quantifier: a literal '{' (ECMA-262 Annex B)
          pos_ = save;
          return atom;
        }
        max = min;
        if (Peek() == ',') {
          ++pos_;
          max = kUnbounded;
          if (Peek() != '}') num(&max);
        }
        if (Peek() != '}' || AtEnd()) {
          pos_ = save;
          return atom;
        }
        ++pos_;
        if (max < min) return Error("a quantifier {m,n} with n < m");
        if (min > kMaxCount || (max != kUnbounded && max > kMaxCount)) {
          return Error("a repetition count above " + std::to_string(kMaxCount));
        }
      } else {
        return atom;
      }
      if (Peek() == '?' && !AtEnd()) ++pos_;  // lazy: same language
      auto rep = std::make_unique<Node>();
      rep->kind = Node::kRepeat;
      rep->min = min;
      rep->max = max;
      rep->items.push_back(std::move(atom));
      atom = std::move(rep);
    }
    return atom;
  }

  std::unique_ptr<Node> SetNode(CpSet set) {
    auto n = std::make_unique<Node>();
    n->kind = Node::kSet;
    n->set = std::move(set);
    return n;
  }

  Result<uint32_t> Hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      uint32_t c = Peek();
      int h = c >= '0' && c <= '9'   ? static_cast<int>(c - '0')
              : c >= 'a' && c <= 'f' ? static_cast<int>(c - 'a' + 10)
              : c >= 'A' && c <= 'F' ? static_cast<int>(c - 'A' + 10)
                                     : -1;
      if (h < 0 || AtEnd()) return Error("a malformed hex escape");
      v = v * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    return v;
  }

  // After a backslash. In a class, \b is a backspace.
  Result<CpSet> ParseEscape(bool in_class) {
    if (AtEnd()) return Error("a trailing backslash");
    uint32_t c = cps_[pos_++];
    switch (c) {
      case 'd':
        return Digits();
      case 'D':
        return ComplementSet(Digits());
      case 'w':
        return Word();
      case 'W':
        return ComplementSet(Word());
      case 's':
        return Space();
      case 'S':
        return ComplementSet(Space());
      case 't':
        return Range('\t', '\t');
      case 'n':
        return Range('\n', '\n');
      case 'r':
        return Range('\r', '\r');
      case 'f':
        return Range('\f', '\f');
      case 'v':
        return Range('\v', '\v');
      case '0':
        return Range(0, 0);
      case 'x': {
        LS_ASSIGN_OR_RETURN(uint32_t v, Hex(2));
        return Range(v, v);
      }
      case 'u': {
        LS_ASSIGN_OR_RETURN(uint32_t v, Hex(4));
        if (v >= 0xD800 && v <= 0xDFFF) return Error("a surrogate escape");
        return Range(v, v);
      }
      case 'b':
        if (in_class) return Range('\b', '\b');
        return Error("the word boundary '\\b'");
      case 'B':
        return Error("the word boundary '\\B'");
      case 'k':
        return Error("the named backreference '\\k'");
      case 'c':
        return Error("the control escape '\\c'");
      case 'p':
      case 'P':
        return Error("the Unicode property escape '\\" + std::string(1, static_cast<char>(c)) + "'");
      default:
        if (c >= '1' && c <= '9')
          return Error("the backreference '\\" + std::string(1, static_cast<char>(c)) + "'");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
          return Error("the escape '\\" + std::string(1, static_cast<char>(c)) + "'");
        }
        return Range(c, c);  // an escaped punctuation character is itself
    }
  }

  Result<CpSet> ParseClass() {
    ++pos_;  // '['
    bool negate = false;
    if (Peek() == '^' && !AtEnd()) {
      negate = true;
      ++pos_;
    }
    std::vector<CpRange> ranges;
    auto item = [&](CpSet* set, bool* single) -> Status {
      if (AtEnd()) return Error("an unterminated character class");
      uint32_t c = cps_[pos_++];
      if (c == '\\') {
        LS_ASSIGN_OR_RETURN(*set, ParseEscape(true));
      } else {
        *set = Range(c, c);
      }
      *single = set->size() == 1 && (*set)[0].lo == (*set)[0].hi &&
                !(c == '\\' && (cps_[pos_ - 1] == 'd' || cps_[pos_ - 1] == 'w' || cps_[pos_ - 1] == 's'));
      return Status::Ok();
    };
    while (true) {
      if (AtEnd()) return Error("an unterminated character class");
      if (Peek() == ']') {
        ++pos_;
        break;
      }
      CpSet a;
      bool single = false;
      LS_RETURN_IF_ERROR(item(&a, &single));
      if (single && Peek() == '-' && pos_ + 1 < cps_.size() && cps_[pos_ + 1] != ']') {
        ++pos_;
        CpSet b;
        bool single_b = false;
        LS_RETURN_IF_ERROR(item(&b, &single_b));
        if (!single_b) return Error("a class range ending in a class escape");
        if (b[0].lo < a[0].lo) return Error("a class range out of order");
        ranges.push_back({a[0].lo, b[0].lo});
      } else {
        ranges.insert(ranges.end(), a.begin(), a.end());
      }
    }
    CpSet set = NormalizeSet(std::move(ranges));
    return negate ? ComplementSet(set) : set;
  }

  std::vector<uint32_t> cps_;
  size_t pos_ = 0;
  std::string where_;
};

bool Nullable(const Node& n) {
  switch (n.kind) {
    case Node::kSet:
      return false;
    case Node::kSeq:
      return std::all_of(n.items.begin(), n.items.end(), [](const auto& i) { return Nullable(*i); });
    case Node::kAlt:
      return std::any_of(n.items.begin(), n.items.end(), [](const auto& i) { return Nullable(*i); });
    case Node::kRepeat:
      return n.min == 0 || Nullable(*n.items[0]);
  }
  return false;
}

// A code-point set as JSON string text: raw characters where JSON allows them, escapes for the rest.
std::string JsonChars(const CpSet& set) {
  static const CpSet kSpecial = NormalizeSet({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
  static const CpSet kAllowed = ComplementSet(kSpecial);
  CpSet raw;
  for (CpRange r : set) {  // set minus kSpecial
    for (CpRange c : kAllowed) {
      uint32_t lo = std::max(c.lo, r.lo), hi = std::min(c.hi, r.hi);
      if (lo <= hi) raw.push_back({lo, hi});
    }
  }
  raw = NormalizeSet(raw);
  std::vector<std::string> alts;
  if (raw.size() == 1 && raw[0].lo == raw[0].hi) {
    alts.push_back(GbnfLiteral(EncodeUtf8(raw[0].lo)));
  } else if (!raw.empty()) {
    alts.push_back(GbnfClass(raw));
  }
  if (SetContains(set, '"')) alts.push_back(GbnfLiteral("\\\""));
  if (SetContains(set, '\\')) alts.push_back(GbnfLiteral("\\\\"));
  for (uint32_t c = 0; c < 0x20; ++c) {
    if (!SetContains(set, c)) continue;
    static const char* kHex = "0123456789abcdef";
    std::string esc = c == '\n'   ? "\\n"
                      : c == '\r' ? "\\r"
                      : c == '\t' ? "\\t"
                      : c == '\b' ? "\\b"
                      : c == '\f' ? "\\f"
                                  : "";
    if (esc.empty()) esc = std::string("\\u00") + kHex[c >> 4] + kHex[c & 15];
    alts.push_back(GbnfLiteral(esc));
  }
  if (alts.empty()) return GbnfClass({});
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

Result<std::string> Emit(const Node& n, const std::string& where) {
  switch (n.kind) {
    case Node::kSet:
      return JsonChars(n.set);
    case Node::kSeq: {
      if (n.items.empty()) return std::string("\"\"");
      std::string out;
      for (const auto& i : n.items) {
        LS_ASSIGN_OR_RETURN(std::string s, Emit(*i, where));
        out += (out.empty() ? "" : " ") + s;
      }
      return "(" + out + ")";
    }
    case Node::kAlt: {
      std::string out;
      for (size_t k = 0; k < n.items.size(); ++k) {
        LS_ASSIGN_OR_RETURN(std::string s, Emit(*n.items[k], where));
        out += (k ? " | " : "") + s;
      }
      return "(" + out + ")";
    }
    case Node::kRepeat: {
      const Node& body = *n.items[0];
      if (n.max > 1 && Nullable(body)) {
        return InvalidArgument(
            "json_schema: pattern: a repeated group that can match the empty string is "
            "unsupported at " +
            where);
      }
      LS_ASSIGN_OR_RETURN(std::string s, Emit(body, where));
      if (n.max == kUnbounded) {
        return "(" + s + ")" + (n.min == 0 ? "*" : n.min == 1 ? "+" : "{" + std::to_string(n.min) + ",}");
      }
      if (n.max == 0) return std::string("\"\"");
      return "(" + s + "){" + std::to_string(n.min) + "," + std::to_string(n.max) + "}";
    }
  }
  return std::string("\"\"");
}

}  // namespace

Result<std::string> PatternToGbnf(std::string_view pattern, RuleTable* rules, const std::string& where) {
  RegexParser parser(pattern, where);
  std::vector<std::pair<bool, bool>> anchors;
  LS_ASSIGN_OR_RETURN(auto top, parser.ParseTop(&anchors));
  const std::string any = rules->Primitive("char") + "*";  // unanchored ends match any characters
  std::string out;
  for (size_t k = 0; k < top->items.size(); ++k) {
    LS_ASSIGN_OR_RETURN(std::string s, Emit(*top->items[k], where));
    std::string branch = (anchors[k].first ? "" : any + " ") + s + (anchors[k].second ? "" : " " + any);
    out += (k ? " | " : "") + branch;
  }
  return "(" + out + ")";
}

Result<std::string> FormatToGbnf(std::string_view format, RuleTable* rules, const std::string& where) {
  // RFC 3339 full-date, with the days of each month and February 29 only in leap years.
  auto date = [&] {
    std::string leap = rules->Add("leap-year",
                                  "[0-9] [0-9] (\"0\" [48] | [2468] [048] | [13579] [26]) | "
                                  "([02468] [048] | [13579] [26]) \"00\"");
    return rules->Add(
        "date",
        "[0-9]{4} \"-\" ((\"0\" [13578] | \"1\" [02]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | "
        "(\"0\" [469] | \"11\") \"-\" (\"0\" [1-9] | [12] [0-9] | \"30\") | "
        "\"02-\" (\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])) | " +
            leap + " \"-02-29\"");
  };
  // RFC 3339 full-time; no leap second (its validity depends on the offset), upper-case T and Z.
  auto time = [&] {
    return rules->Add("time",
                      "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,9})? "
                      "(\"Z\" | [+\\-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])");
  };
  if (format == "date") return date();
  if (format == "time") return time();
  if (format == "date-time") {
    std::string d = date(), t = time();
    return rules->Add("date-time", d + " \"T\" " + t);
  }
  if (format == "uuid") {
    return rules->Add("uuid",
                      "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
                      "[0-9a-fA-F]{12}");
  }
  if (format == "ipv4") {
    std::string octet = rules->Add(
        "ipv4-octet", "[0-9] | [1-9] [0-9] | \"1\" [0-9] [0-9] | \"2\" [0-4] [0-9] | \"25\" [0-5]");
    return rules->Add("ipv4", octet + " \".\" " + octet + " \".\" " + octet + " \".\" " + octet);
  }
  return InvalidArgument("json_schema: unsupported format '" + std::string(format) + "' at " + where);
}

}  // namespace lazyslot::grammar::schema
