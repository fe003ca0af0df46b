// GBNF text helpers for the JSON schema converter: literals, classes, the rule table with its shared
// primitives (JSON whitespace, strings, numbers, any value), and integer / decimal range rules.
#include <algorithm>

#include "grammar/json_schema_internal.h"

namespace lazyslot::grammar::schema {
namespace {

std::string Hex(uint32_t v, int digits) {
  static const char* kHex = "0123456789ABCDEF";
  std::string s(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = kHex[v & 15];
  return s;
}

std::string ClassChar(uint32_t cp) {
  if (cp < 0x20 || cp == 0x7F) return "\\x" + Hex(cp, 2);
  if (cp == ']' || cp == '[' || cp == '\\' || cp == '^' || cp == '-' || cp == '"') {
    return std::string("\\") + static_cast<char>(cp);
  }
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  if (cp <= 0xFFFF) return "\\u" + Hex(cp, 4);
  return "\\U" + Hex(cp, 8);
}

bool ValidName(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

}  // namespace

std::string GbnfClass(const CpSet& set) {
  if (set.empty()) return "[^\\x00-\\U0010FFFF]";
  std::string out = "[";
  for (CpRange r : set) {
    out += ClassChar(r.lo);
    if (r.hi != r.lo) {
      if (r.hi != r.lo + 1) out += '-';
      out += ClassChar(r.hi);
    }
  }
  return out + "]";
}

// ---------------------------------------------------------------------------------------------------------

std::string RuleTable::Unique(std::string_view hint) {
  std::string base = prefix_ + "-";
  for (char c : hint.substr(0, 48)) base += ValidName(c) ? c : '-';
  std::string name = base;
  for (int i = 2; by_name_.count(name); ++i) name = base + "-" + std::to_string(i);
  return name;
}

std::string RuleTable::Add(std::string_view hint, const std::string& body) {
  auto it = by_body_.find(body);
  if (it != by_body_.end()) return it->second;
  std::string name = Unique(hint);
  by_name_[name] = rules_.size();
  rules_.push_back({name, body});
  by_body_[body] = name;
  return name;
}

std::string RuleTable::Reserve(std::string_view hint) {
  std::string name = Unique(hint);
  by_name_[name] = rules_.size();
  rules_.push_back({name, ""});
  return name;
}

void RuleTable::Define(const std::string& name, const std::string& body) {
  rules_[by_name_.at(name)].second = body;
}

std::string RuleTable::Primitive(std::string_view which) {
  const std::string p = prefix_ + "-";
  auto add = [&](std::string_view hint, const std::string& body) {
    std::string name = p + std::string(hint);
    if (!by_name_.count(name)) {
      by_name_[name] = rules_.size();
      rules_.push_back({name, body});
    }
    return name;
  };
  if (which == "space") return add("space", "| \" \" | \"\\n\" [ \\t]{0,20}");
  if (which == "hex") return add("hex", "[0-9a-fA-F]");
  if (which == "char") {
    // One JSON string character: no raw quote, backslash or control; \u escapes pair their surrogates.
    std::string h = Primitive("hex");
    add("u4", "[0-9a-cA-CefEF] " + h + " " + h + " " + h + " | [dD] [0-7] " + h + " " + h +
                  " | [dD] [89abAB] " + h + " " + h + " \"\\\\u\" [dD] [c-fC-F] " + h + " " + h);
    return add("char", "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" " + p + "u4)");
  }
  if (which == "string") {
    std::string c = Primitive("char"), s = Primitive("space");
    return add("string", "\"\\\"\" " + c + "* \"\\\"\" " + s);
  }
  if (which == "intpart") return add("intpart", "\"0\" | [1-9] [0-9]{0,15}");
  if (which == "integer") {
    std::string i = Primitive("intpart"), s = Primitive("space");
    return add("integer", "\"-\"? " + i + " " + s);
  }
  if (which == "number") {
    std::string i = Primitive("intpart"), s = Primitive("space");
    return add("number", "\"-\"? " + i + " (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})? " + s);
  }
  if (which == "boolean") return add("boolean", "(\"true\" | \"false\") " + Primitive("space"));
  if (which == "null") return add("null", "\"null\" " + Primitive("space"));
  if (which == "value" || which == "object" || which == "array") {
    std::string s = Primitive("space"), str = Primitive("string");
    std::string v = p + "value";
    add("value", p + "object | " + p + "array | " + str + " | " + Primitive("number") + " | " +
                     Primitive("boolean") + " | " + Primitive("null"));
    add("object", "\"{\" " + s + " (" + str + " \":\" " + s + " " + v + " (\",\" " + s + " " + str +
                      " \":\" " + s + " " + v + ")*)? \"}\" " + s);
    add("array", "\"[\" " + s + " (" + v + " (\",\" " + s + " " + v + ")*)? \"]\" " + s);
    return p + std::string(which);
  }
  return "";
}

std::string RuleTable::Text(const std::string& start_body) const {
  std::string out = prefix_ + " ::= " + start_body + "\n";
  for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Integer ranges as digit rules: split by length, then by the first digit where the bounds differ.

namespace {

// Decimal strings lo <= hi of the same length (digits only).
std::string SameLength(const std::string& lo, const std::string& hi) {
  if (lo == hi) return GbnfLiteral(lo);
  size_t i = 0;
  while (lo[i] == hi[i]) ++i;
  const size_t rest = lo.size() - i - 1;
  std::string prefix = i ? GbnfLiteral(lo.substr(0, i)) + " " : "";
  char a = lo[i], b = hi[i];
  std::string lo_rest = lo.substr(i + 1), hi_rest = hi.substr(i + 1);
  auto digits = [](char x, char y) {
    return x == y ? GbnfLiteral(std::string(1, x)) : std::string("[") + x + "-" + y + "]";
  };
  auto any = [&](size_t n) {
    return n == 0 ? std::string() : " [0-9]" + (n > 1 ? "{" + std::to_string(n) + "}" : "");
  };
  std::vector<std::string> parts;
  char start = a, end = b;
  if (rest > 0 && lo_rest != std::string(rest, '0')) {
    parts.push_back(GbnfLiteral(std::string(1, a)) + " " + SameLength(lo_rest, std::string(rest, '9')));
    start = static_cast<char>(a + 1);
  }
  std::string top;
  if (rest > 0 && hi_rest != std::string(rest, '9')) {
    top = GbnfLiteral(std::string(1, b)) + " " + SameLength(std::string(rest, '0'), hi_rest);
    end = static_cast<char>(b - 1);
  }
  if (start <= end) parts.push_back(digits(start, end) + any(rest));
  if (!top.empty()) parts.push_back(top);
  std::string alts;
  for (size_t k = 0; k < parts.size(); ++k) alts += (k ? " | " : "") + parts[k];
  return prefix + "(" + alts + ")";
}

// Non-negative integers in [lo, hi], no leading zeros.
std::string UnsignedRange(uint64_t lo, uint64_t hi) {
  std::string l = std::to_string(lo), h = std::to_string(hi);
  std::vector<std::string> parts;
  for (size_t len = l.size(); len <= h.size(); ++len) {
    std::string a = l;
    if (len != l.size()) {
      a.assign(len, '0');
      a[0] = '1';
    }
    std::string b = len == h.size() ? h : std::string(len, '9');
    parts.push_back(SameLength(a, b));
  }
  std::string out = "(";
  for (size_t k = 0; k < parts.size(); ++k) out += (k ? " | " : "") + parts[k];
  return out + ")";
}

}  // namespace

std::string IntegerRangeGbnf(int64_t lo, int64_t hi) {
  std::vector<std::string> parts;
  if (lo < 0) {  // negatives: "-" and a magnitude in [max(1, -hi), -lo]
    uint64_t mlo = hi < 0 ? static_cast<uint64_t>(-hi) : 1, mhi = static_cast<uint64_t>(-lo);
    parts.push_back("\"-\" " + UnsignedRange(mlo, mhi));
  }
  if (hi >= 0)
    parts.push_back(
        UnsignedRange(static_cast<uint64_t>(std::max<int64_t>(lo, 0)), static_cast<uint64_t>(hi)));
  return parts.size() == 1 ? parts[0] : "(" + parts[0] + " | " + parts[1] + ")";
}

namespace {

// Magnitudes M = I.F (I the integer part, F optional fraction digits) with M > or >= a, M < or <= b.
std::string MagnitudeRange(int64_t a, bool a_excl, std::optional<int64_t> b, bool b_excl) {
  const std::string any_frac = "(\".\" [0-9]{1,16})?", zero_frac = "(\".\" \"0\"{1,16})?",
                    nonzero_frac = "\".\" [0-9]{0,15} [1-9]";
  std::vector<std::string> parts;
  int64_t ilo = a_excl ? a + 1 : a, ihi = b ? *b - 1 : kBoundLimit;
  if (ilo <= ihi)
    parts.push_back(UnsignedRange(static_cast<uint64_t>(ilo), static_cast<uint64_t>(ihi)) + " " + any_frac);
  if (a_excl && (!b || a < *b)) parts.push_back(GbnfLiteral(std::to_string(a)) + " " + nonzero_frac);
  if (b && !b_excl && (*b > a || (*b == a && !a_excl)))
    parts.push_back(GbnfLiteral(std::to_string(*b)) + " " + zero_frac);
  if (parts.empty()) return "";
  std::string out = "(";
  for (size_t k = 0; k < parts.size(); ++k) out += (k ? " | " : "") + parts[k];
  return out + ")";
}

}  // namespace

std::string NumberRangeGbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  std::vector<std::string> parts;
  // x >= 0
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
    int64_t a = 0;
    bool a_excl = false;
    if (lo && lo->value >= 0) {
      a = lo->value;
      a_excl = lo->exclusive;
    }
    std::optional<int64_t> b;
    if (hi) b = hi->value;
    std::string m = MagnitudeRange(a, a_excl, b, hi && hi->exclusive);
    if (!m.empty()) parts.push_back(m);
  }
  // x < 0: "-" and M = -x > 0
  if (!lo || lo->value < 0) {
    int64_t a = 0;
    bool a_excl = true;
    if (hi && hi->value < 0) {
      a = -hi->value;
      a_excl = hi->exclusive;
    }
    std::optional<int64_t> b;
    if (lo) b = -lo->value;
    std::string m = MagnitudeRange(a, a_excl, b, lo && lo->exclusive);
    if (!m.empty()) parts.push_back("\"-\" " + m);
  }
  if (parts.empty()) return "";
  return parts.size() == 1 ? parts[0] : "(" + parts[0] + " | " + parts[1] + ")";
}

}  // namespace lazyslot::grammar::schema

namespace lazyslot::grammar {

std::string GbnfLiteral(std::string_view utf8) {
  std::string out = "\"";
  for (char ch : utf8) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x" + schema::Hex(c, 2);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace lazyslot::grammar
