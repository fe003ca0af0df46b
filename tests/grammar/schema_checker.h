// An independent JSON Schema checker for the tests (the standard's semantics for the keywords the converter
// supports, written without looking at the converter), and a random walk that samples grammar outputs.
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace lazyslot::grammar::testing {

using OJ = nlohmann::ordered_json;

inline std::u32string Utf8ToU32(const std::string& s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

inline bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

inline bool CheckFormat(const std::string& f, const std::string& s) {
  auto date_ok = [](const std::string& d) {
    static const std::regex re("^(\\d{4})-(\\d{2})-(\\d{2})$");
    std::smatch m;
    if (!std::regex_match(d, m, re)) return false;
    int y = std::stoi(m[1]), mo = std::stoi(m[2]), day = std::stoi(m[3]);
    static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || day < 1) return false;
    return day <= kDays[mo - 1] + (mo == 2 && IsLeap(y));
  };
  auto time_ok = [](const std::string& t) {
    static const std::regex re("^(\\d{2}):(\\d{2}):(\\d{2})(\\.\\d+)?(Z|z|[+-](\\d{2}):(\\d{2}))$");
    std::smatch m;
    if (!std::regex_match(t, m, re)) return false;
    if (std::stoi(m[1]) > 23 || std::stoi(m[2]) > 59 || std::stoi(m[3]) > 59) return false;
    if (m[6].matched && (std::stoi(m[6]) > 23 || std::stoi(m[7]) > 59)) return false;
    return true;
  };
  if (f == "date") return date_ok(s);
  if (f == "time") return time_ok(s);
  if (f == "date-time") {
    size_t t = s.find_first_of("Tt");
    return t != std::string::npos && date_ok(s.substr(0, t)) && time_ok(s.substr(t + 1));
  }
  if (f == "uuid") {
    static const std::regex re(
        "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$");
    return std::regex_match(s, re);
  }
  if (f == "ipv4") {
    static const std::regex re("^(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})$");
    std::smatch m;
    if (!std::regex_match(s, m, re)) return false;
    for (int i = 1; i <= 4; ++i) {
      std::string o = m[i];
      if ((o.size() > 1 && o[0] == '0') || std::stoi(o) > 255) return false;
    }
    return true;
  }
  return false;
}

// Whether `v` validates against `s` (JSON Schema 2020-12 semantics for the supported keywords).
inline bool Validate(const OJ& s, const OJ& root, const nlohmann::json& v) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("$ref")) {
    std::string ref = s["$ref"].get<std::string>().substr(1);
    return Validate(ref.empty() ? root : root[OJ::json_pointer(ref)], root, v);
  }
  if (s.contains("type")) {
    auto is = [&](const std::string& t) {
      if (t == "integer") return v.is_number() && std::floor(v.get<double>()) == v.get<double>();
      if (t == "number") return v.is_number();
      if (t == "string") return v.is_string();
      if (t == "boolean") return v.is_boolean();
      if (t == "null") return v.is_null();
      if (t == "object") return v.is_object();
      if (t == "array") return v.is_array();
      return false;
    };
    bool any = false;
    if (s["type"].is_array()) {
      for (const auto& t : s["type"]) any = any || is(t.get<std::string>());
    } else {
      any = is(s["type"].get<std::string>());
    }
    if (!any) return false;
  }
  auto as_json = [](const OJ& o) { return nlohmann::json::parse(o.dump()); };
  if (s.contains("const") && as_json(s["const"]) != v) return false;
  if (s.contains("enum")) {
    bool found = false;
    for (const auto& e : s["enum"]) found = found || as_json(e) == v;
    if (!found) return false;
  }
  if (s.contains("anyOf")) {
    bool any = false;
    for (const auto& b : s["anyOf"]) any = any || Validate(b, root, v);
    if (!any) return false;
  }
  if (s.contains("oneOf")) {
    int n = 0;
    for (const auto& b : s["oneOf"]) n += Validate(b, root, v);
    if (n != 1) return false;
  }
  if (s.contains("allOf")) {
    for (const auto& b : s["allOf"])
      if (!Validate(b, root, v)) return false;
  }
  if (v.is_object()) {
    if (s.contains("required")) {
      for (const auto& r : s["required"])
        if (!v.contains(r.get<std::string>())) return false;
    }
    for (const auto& [k, val] : v.items()) {
      if (s.contains("properties") && s["properties"].contains(k)) {
        if (!Validate(s["properties"][k], root, val)) return false;
      } else if (s.contains("additionalProperties") && !Validate(s["additionalProperties"], root, val)) {
        return false;
      }
    }
  }
  if (v.is_array()) {
    size_t n_prefix = 0;
    if (s.contains("prefixItems")) {
      n_prefix = s["prefixItems"].size();
      for (size_t i = 0; i < n_prefix && i < v.size(); ++i)
        if (!Validate(s["prefixItems"][i], root, v[i])) return false;
    }
    if (s.contains("items")) {
      for (size_t i = n_prefix; i < v.size(); ++i)
        if (!Validate(s["items"], root, v[i])) return false;
    }
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
  }
  if (v.is_string()) {
    std::string str = v.get<std::string>();
    size_t n = Utf8ToU32(str).size();
    if (s.contains("minLength") && n < s["minLength"].get<size_t>()) return false;
    if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) return false;
    if (s.contains("pattern")) {
      // std::regex has no named groups: (?<name>...) becomes (...), the same language.
      std::string pat =
          std::regex_replace(s["pattern"].get<std::string>(), std::regex("\\(\\?<[A-Za-z]+>"), "(");
      std::u32string p32 = Utf8ToU32(pat);
      std::u32string s32 = Utf8ToU32(str);
      std::wregex re(std::wstring(p32.begin(), p32.end()), std::regex::ECMAScript);
      if (!std::regex_search(std::wstring(s32.begin(), s32.end()), re)) return false;
    }
    if (s.contains("format") && !CheckFormat(s["format"].get<std::string>(), str)) return false;
  }
  if (v.is_number()) {
    double x = v.get<double>();
    if (s.contains("minimum") && x < s["minimum"].get<double>()) return false;
    if (s.contains("maximum") && x > s["maximum"].get<double>()) return false;
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) return false;
    if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>()) return false;
  }
  return true;
}

// A byte-level vocabulary: every single byte plus JSON-ish multi-byte pieces (some cut inside UTF-8).
inline std::vector<std::string> SyntheticVocab() {
  std::vector<std::string> v;
  v.push_back("");  // a control token
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, static_cast<char>(b)));
  for (const char* p : {"\"",       "{\"",      "\":",
                        "\": ",     "\",",      "\", \"",
                        "}",        "]",        "},",
                        "[",        "[{",       "true",
                        "false",    "null",     "12",
                        "0.",       "-1",       "e+",
                        "E-",       "00",       "99",
                        "2024-",    "-02-",     "29",
                        "T12:",     ":00",      "Z",
                        "+05:30",   "\\n",      "\\\"",
                        "\\\\",     "\\u00e9",  "\\ud83d\\ude00",
                        "\\ud83d",  "\\ude00",  "\\u0000",
                        "\\/",      "\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC",
                        "\xE6\x97", "\xA5",     "\xF0\x9F\x98\x80",
                        "\xF0\x9F", "  ",       "\n",
                        "\n  ",     " \"",      "ab",
                        "foo",      "bar",      "-",
                        "name",     "id",       "a\"",
                        "x\\"}) {
    v.push_back(p);
  }
  return v;
}

// Samples one output: FillMask, a random allowed token (structural ones preferred so outputs end), Accept;
// stops at MustEnd, or at CanEnd with probability 1/2. Returns false when it hit `max_bytes`.
inline bool Sample(const GrammarPtr& g, const VocabIndex& vocab, std::mt19937& rng, std::string* out,
                   size_t max_bytes = 4000) {
  static const std::string kPreferred = "\"}],:";
  Matcher m(g);
  out->clear();
  std::vector<uint8_t> mask;
  while (out->size() < max_bytes) {
    if (m.MustEnd() || (m.CanEnd() && rng() % 2 == 0)) return true;
    m.FillMask(vocab, &mask);
    std::vector<int32_t> ok, preferred;
    for (int32_t t = 0; t < vocab.size(); ++t) {
      if (!mask[t]) continue;
      ok.push_back(t);
      const std::string& p = vocab.piece(t);
      if (p.size() == 1 && kPreferred.find(p[0]) != std::string::npos) preferred.push_back(t);
    }
    if (ok.empty()) return m.CanEnd();  // a dead end is a grammar bug: the caller checks the output
    const auto& pool = (!preferred.empty() && rng() % 3 == 0) ? preferred : ok;
    int32_t pick = pool[rng() % pool.size()];
    if (!m.Accept(vocab.piece(pick))) return false;
    *out += vocab.piece(pick);
  }
  return false;
}

}  // namespace lazyslot::grammar::testing
