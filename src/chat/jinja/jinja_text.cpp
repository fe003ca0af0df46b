// Python str operations on UTF-8 strings for the Jinja built-ins.
#include "chat/jinja/jinja_text.h"

#include <algorithm>

namespace lazyslot::jinja::text {

namespace {

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char ToUpper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c; }
char ToLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// Line boundaries of str.splitlines(), as UTF-8 sequences.
bool IsLineBreak(std::string_view ch) {
  if (ch.size() == 1) {
    char c = ch[0];
    return c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' || c == '\x1e';
  }
  return ch == "\xc2\x85" || ch == "\xe2\x80\xa8" || ch == "\xe2\x80\xa9";
}

}  // namespace

bool IsSpaceCodepoint(std::string_view ch) {
  if (ch.size() == 1) {
    char c = ch[0];
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
           (c >= '\x1c' && c <= '\x1f');
  }
  static const char* kSpaces[] = {"\xc2\x85",     "\xc2\xa0",     "\xe1\x9a\x80", "\xe2\x80\xa8",
                                  "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80"};
  for (const char* s : kSpaces) {
    if (ch == s) return true;
  }
  // U+2000..U+200A
  return ch.size() == 3 && static_cast<unsigned char>(ch[0]) == 0xE2 &&
         static_cast<unsigned char>(ch[1]) == 0x80 && static_cast<unsigned char>(ch[2]) >= 0x80 &&
         static_cast<unsigned char>(ch[2]) <= 0x8A;
}

std::string Strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<std::string_view> set;
  if (chars) set = Utf8Chars(*chars);
  auto strip_it = [&](std::string_view ch) {
    if (!chars) return IsSpaceCodepoint(ch);
    return std::find(set.begin(), set.end(), ch) != set.end();
  };
  std::vector<std::string_view> cs = Utf8Chars(s);
  size_t b = 0, e = cs.size();
  if (left) {
    while (b < e && strip_it(cs[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(cs[e - 1])) --e;
  }
  if (b == e) return "";
  size_t start = static_cast<size_t>(cs[b].data() - s.data());
  size_t end = static_cast<size_t>(cs[e - 1].data() - s.data()) + cs[e - 1].size();
  return std::string(s.substr(start, end - start));
}

std::vector<std::string> SplitWhitespace(std::string_view s, int64_t maxsplit) {
  std::vector<std::string> out;
  std::vector<std::string_view> cs = Utf8Chars(s);
  size_t i = 0;
  while (i < cs.size()) {
    while (i < cs.size() && IsSpaceCodepoint(cs[i])) ++i;
    if (i == cs.size()) break;
    size_t start = static_cast<size_t>(cs[i].data() - s.data());
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      // Remainder, with trailing whitespace stripped (Python keeps none at the end of the last part).
      out.push_back(Strip(s.substr(start), nullptr, false, true));
      return out;
    }
    size_t j = i;
    while (j < cs.size() && !IsSpaceCodepoint(cs[j])) ++j;
    size_t end = j < cs.size() ? static_cast<size_t>(cs[j].data() - s.data()) : s.size();
    out.emplace_back(s.substr(start, end - start));
    i = j;
  }
  return out;
}

std::vector<std::string> RSplitWhitespace(std::string_view s, int64_t maxsplit) {
  std::vector<std::string> out;
  std::vector<std::string_view> cs = Utf8Chars(s);
  size_t i = cs.size();  // one past the last code point still to scan
  auto offset = [&](size_t k) {
    return k < cs.size() ? static_cast<size_t>(cs[k].data() - s.data()) : s.size();
  };
  while (i > 0) {
    while (i > 0 && IsSpaceCodepoint(cs[i - 1])) --i;
    if (i == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      out.emplace_back(s.substr(0, offset(i)));  // leftover: leading whitespace kept, trailing gone
      break;
    }
    size_t j = i;
    while (j > 0 && !IsSpaceCodepoint(cs[j - 1])) --j;
    out.emplace_back(s.substr(offset(j), offset(i) - offset(j)));
    i = j;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> Split(std::string_view s, std::string_view sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> out;
  if (!from_right) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t f = s.find(sep, pos);
      if (f == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, f - pos));
      pos = f + sep.size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  size_t end = s.size();
  int64_t splits = 0;
  while (maxsplit < 0 || splits < maxsplit) {
    if (end < sep.size()) break;
    size_t f = s.rfind(sep, end - sep.size());
    if (f == std::string_view::npos) break;
    out.emplace_back(s.substr(f + sep.size(), end - f - sep.size()));
    end = f;
    ++splits;
  }
  out.emplace_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> SplitLines(std::string_view s) {
  std::vector<std::string> out;
  std::vector<std::string_view> cs = Utf8Chars(s);
  std::string cur;
  for (size_t i = 0; i < cs.size(); ++i) {
    if (IsLineBreak(cs[i])) {
      out.push_back(std::move(cur));
      cur.clear();
      if (cs[i] == "\r" && i + 1 < cs.size() && cs[i + 1] == "\n") ++i;
    } else {
      cur.append(cs[i]);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

std::string Replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count) {
  std::string out;
  if (old.empty()) {
    std::vector<std::string_view> cs = Utf8Chars(s);
    int64_t n = 0;
    for (size_t i = 0; i <= cs.size(); ++i) {
      if (count < 0 || n < count) {
        out.append(repl);
        ++n;
      }
      if (i < cs.size()) out.append(cs[i]);
    }
    return out;
  }
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    size_t f = s.find(old, pos);
    if (f == std::string_view::npos) break;
    out.append(s.substr(pos, f - pos));
    out.append(repl);
    pos = f + old.size();
    ++n;
  }
  out.append(s.substr(pos));
  return out;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ToUpper(c);
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ToLower(c);
  return out;
}

std::string Capitalize(std::string_view s) {
  std::string out = Lower(s);
  if (!out.empty()) out[0] = ToUpper(out[0]);
  return out;
}

std::string PyTitle(std::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (char& c : out) {
    if (IsAsciiLetter(c)) {
      c = prev_cased ? ToLower(c) : ToUpper(c);
      prev_cased = true;
    } else {
      // Non-ASCII bytes: treat multi-byte letters as cased so "é" does not restart a word.
      prev_cased = static_cast<unsigned char>(c) >= 0x80 && prev_cased;
    }
  }
  return out;
}

std::string JinjaTitle(std::string_view s) {
  // Jinja splits on runs of whitespace or -([{< (kept), then upper-cases each chunk's first character and
  // lower-cases the rest.
  auto is_sep = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '-' ||
           c == '(' || c == '{' || c == '[' || c == '<';
  };
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    bool sep = is_sep(s[i]);
    while (j < s.size() && is_sep(s[j]) == sep) ++j;
    std::string chunk = Lower(s.substr(i, j - i));
    chunk[0] = ToUpper(chunk[0]);
    out += chunk;
    i = j;
  }
  return out;
}

Result<std::string> Format(std::string_view fmt, const CallArgs& args, size_t first_arg) {
  std::string out;
  size_t auto_index = 0;
  bool used_auto = false, used_manual = false;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      return InvalidArgument("format(): single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string_view::npos) return InvalidArgument("format(): unmatched '{' in format string");
    std::string_view field = fmt.substr(i + 1, close - i - 1);
    char conv = 's';
    size_t bang = field.find('!');
    if (bang != std::string_view::npos) {
      if (bang + 2 != field.size())
        return InvalidArgument("format(): bad conversion in '{" + std::string(field) + "}'");
      conv = field[bang + 1];
      field = field.substr(0, bang);
    }
    if (field.find(':') != std::string_view::npos) {
      return InvalidArgument("format(): format specs are not supported: '{" + std::string(field) + "}'");
    }
    const Value* v = nullptr;
    Value found;
    if (field.empty() ||
        std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      size_t idx;
      if (field.empty()) {
        if (used_manual) return InvalidArgument("format(): cannot mix automatic and manual field numbering");
        used_auto = true;
        idx = auto_index++;
      } else {
        if (used_auto) return InvalidArgument("format(): cannot mix automatic and manual field numbering");
        used_manual = true;
        idx = static_cast<size_t>(std::stoull(std::string(field.substr(0, 9))));
      }
      if (first_arg + idx >= args.positional.size()) {
        return InvalidArgument("format(): replacement index " + std::to_string(idx) + " out of range");
      }
      v = &args.positional[first_arg + idx];
    } else {
      for (const auto& [k, kv] : args.keyword) {
        if (k == field) v = &kv;
      }
      if (!v) return InvalidArgument("format(): no argument named '" + std::string(field) + "'");
    }
    out += conv == 'r' ? ToPyRepr(*v) : ToPyString(*v);
    i = close;
  }
  return out;
}

}  // namespace lazyslot::jinja::text
