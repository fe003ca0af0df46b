// The call layouts of each tool-call format (the facts of llama.cpp's common/chat.cpp parsers, e.g.
// common_chat_parse_hermes_2_pro, _qwen3_coder_xml, _llama_3_1, _mistral_nemo, _magistral, _deepseek_r1,
// _deepseek_v3_1, _generic, and the autoparser's Functionary v3.1 layout): one matcher reads a whole call at
// a position and says complete, need-more or invalid.
#include "chat/tool_call_formats.h"

#include <algorithm>
#include <array>

namespace lazyslot::tool_call_internal {
namespace {

using nlohmann::ordered_json;

constexpr size_t kMaxNameLen = 256;
constexpr size_t kMaxJsonDepth = 256;

CallMatch Only(Scan scan) {
  CallMatch m;
  m.scan = scan;
  return m;
}

bool IsWs(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
void SkipWs(std::string_view t, size_t* p) {
  while (*p < t.size() && IsWs(t[*p])) ++*p;
}
bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}
std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsWs(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsWs(s.back())) s.remove_suffix(1);
  return s;
}

// `lit` at *p: advances past it when whole; kNeedMore when the text ends inside it.
Scan Expect(std::string_view t, size_t* p, std::string_view lit) {
  const size_t n = std::min(lit.size(), t.size() - *p);
  if (t.substr(*p, n) != lit.substr(0, n)) return Scan::kInvalid;
  if (n < lit.size()) return Scan::kNeedMore;
  *p += lit.size();
  return Scan::kComplete;
}

// Which of `lits` is at *p (advancing past it); -1 with *scan set when none is (yet).
int ExpectOneOf(std::string_view t, size_t* p, std::initializer_list<std::string_view> lits, Scan* scan) {
  *scan = Scan::kInvalid;
  int i = 0;
  for (std::string_view lit : lits) {
    size_t q = *p;
    const Scan s = Expect(t, &q, lit);
    if (s == Scan::kComplete) {
      *p = q;
      *scan = Scan::kComplete;
      return i;
    }
    if (s == Scan::kNeedMore) *scan = Scan::kNeedMore;
    ++i;
  }
  return -1;
}

// A token list where " " is optional whitespace and anything else a literal; says whether the text at pos
// matches the whole pattern, could still, or cannot.
Scan MatchPattern(std::string_view t, size_t pos, const std::vector<std::string_view>& pattern) {
  size_t p = pos;
  for (std::string_view tok : pattern) {
    if (tok == " ") {
      SkipWs(t, &p);
      continue;
    }
    const Scan s = Expect(t, &p, tok);
    if (s != Scan::kComplete) return s;
  }
  return Scan::kComplete;
}

Scan MatchAnyPattern(std::string_view t, size_t pos,
                     const std::vector<std::vector<std::string_view>>& patterns) {
  Scan best = Scan::kInvalid;
  for (const auto& pattern : patterns) {
    const Scan s = MatchPattern(t, pos, pattern);
    if (s == Scan::kComplete) return s;
    if (s == Scan::kNeedMore) best = s;
  }
  return best;
}

// A JSON object or array at *p: finds its end by bracket matching (strings and escapes respected), then
// parses it. Advances *p past it on success.
Scan ReadJson(std::string_view t, size_t* p, ordered_json* out) {
  if (*p >= t.size()) return Scan::kNeedMore;
  if (t[*p] != '{' && t[*p] != '[') return Scan::kInvalid;
  std::string closers;
  bool in_str = false, esc = false;
  for (size_t i = *p; i < t.size(); ++i) {
    const char c = t[i];
    if (in_str) {
      if (esc) {
        esc = false;
      } else if (c == '\\') {
        esc = true;
      } else if (c == '"') {
        in_str = false;
      }
      continue;
    }
    if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      if (closers.size() >= kMaxJsonDepth) return Scan::kInvalid;
      closers.push_back(c == '{' ? '}' : ']');
    } else if (c == '}' || c == ']') {
      if (closers.empty() || closers.back() != c) return Scan::kInvalid;
      closers.pop_back();
      if (closers.empty()) {
        const std::string_view body = t.substr(*p, i + 1 - *p);
        ordered_json v = ordered_json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
        if (v.is_discarded()) return Scan::kInvalid;
        *out = std::move(v);
        *p = i + 1;
        return Scan::kComplete;
      }
    }
  }
  return Scan::kNeedMore;
}

// Arguments as a model may write them: an object, a JSON string holding one (double-encoded), or absent.
bool ToArguments(const ordered_json* v, ordered_json* out) {
  if (v == nullptr || v->is_null()) {
    *out = ordered_json::object();
    return true;
  }
  if (v->is_object()) {
    *out = *v;
    return true;
  }
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    ordered_json inner = ordered_json::parse(s, nullptr, false);
    if (!inner.is_discarded() && inner.is_object()) {
      *out = std::move(inner);
      return true;
    }
  }
  return false;
}

const ordered_json* Field(const ordered_json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// {"name": "...", <args_key>: {...}, "id"?: "..."} as most JSON formats write one call.
bool CallFromObject(const ordered_json& obj, std::initializer_list<const char*> args_keys, RawCall* call) {
  const ordered_json* name = Field(obj, "name");
  if (name == nullptr || !name->is_string() || name->get_ref<const std::string&>().empty()) return false;
  const ordered_json* args = nullptr;
  for (const char* key : args_keys) {
    if ((args = Field(obj, key)) != nullptr) break;
  }
  if (!ToArguments(args, &call->arguments)) return false;
  call->name = name->get<std::string>();
  const ordered_json* id = Field(obj, "id");
  if (id != nullptr && id->is_string()) call->id = id->get<std::string>();
  return true;
}

// Text up to `stop` (one of its chars ends it); a newline, a '<' or an overlong name is invalid.
Scan ReadName(std::string_view t, size_t* p, char stop, std::string* name) {
  size_t q = *p;
  while (q < t.size() && t[q] != stop) {
    if (t[q] == '\n' || t[q] == '<' || q - *p >= kMaxNameLen) return Scan::kInvalid;
    ++q;
  }
  if (q >= t.size()) return Scan::kNeedMore;
  if (q == *p) return Scan::kInvalid;
  *name = std::string(Trim(t.substr(*p, q - *p)));
  if (name->empty()) return Scan::kInvalid;
  *p = q + 1;
  return Scan::kComplete;
}

const ordered_json* PropertySchema(const std::vector<ToolSpec>& tools, const std::string& fn,
                                   const std::string& key) {
  for (const ToolSpec& tool : tools) {
    if (tool.name != fn) continue;
    const ordered_json* props = Field(tool.parameters, "properties");
    return props ? Field(*props, key.c_str()) : nullptr;
  }
  return nullptr;
}

// After "<function=": NAME>, then <parameter=KEY>\nVALUE\n</parameter> ..., then </function>.
Scan ReadXmlFunction(std::string_view t, size_t* p, const std::vector<ToolSpec>& tools, RawCall* call) {
  Scan s = ReadName(t, p, '>', &call->name);
  if (s != Scan::kComplete) return s;
  call->arguments = ordered_json::object();
  constexpr std::string_view kParamEnd = "</parameter>";
  while (true) {
    SkipWs(t, p);
    const int which = ExpectOneOf(t, p, {"<parameter=", "</function>"}, &s);
    if (which < 0) return s;
    if (which == 1) return Scan::kComplete;
    std::string key;
    if ((s = ReadName(t, p, '>', &key)) != Scan::kComplete) return s;
    const size_t q = t.find(kParamEnd, *p);
    if (q == std::string_view::npos) return Scan::kNeedMore;
    std::string_view raw = t.substr(*p, q - *p);
    // The template writes "<parameter=K>\n" VALUE "\n</parameter>": one newline each side is layout.
    if (raw.starts_with("\r\n")) {
      raw.remove_prefix(2);
    } else if (raw.starts_with('\n')) {
      raw.remove_prefix(1);
    }
    if (raw.ends_with('\n')) raw.remove_suffix(1);
    if (raw.ends_with('\r')) raw.remove_suffix(1);
    call->arguments[key] = XmlValueToJson(raw, PropertySchema(tools, call->name, key));
    *p = q + kParamEnd.size();
  }
}

// Hermes 2 Pro / Qwen: "<tool_call>" ws (JSON object | <function=...>) ws "</tool_call>".
CallMatch MatchTagged(std::string_view t, size_t pos, const std::vector<ToolSpec>& tools) {
  CallMatch m;
  size_t p = pos + std::string_view("<tool_call>").size();
  SkipWs(t, &p);
  if (p >= t.size()) return Only(Scan::kNeedMore);
  RawCall call;
  if (t[p] == '{') {
    ordered_json obj;
    if ((m.scan = ReadJson(t, &p, &obj)) != Scan::kComplete) return m;
    if (!CallFromObject(obj, {"arguments", "parameters"}, &call)) return Only(Scan::kInvalid);
  } else {
    if ((m.scan = Expect(t, &p, "<function=")) != Scan::kComplete) return m;
    if ((m.scan = ReadXmlFunction(t, &p, tools, &call)) != Scan::kComplete) return m;
  }
  SkipWs(t, &p);
  if ((m.scan = Expect(t, &p, "</tool_call>")) != Scan::kComplete) return m;
  m.calls.push_back(std::move(call));
  m.end = p;
  return m;
}

// Llama 3.x / generic: a JSON object at the start of the output.
CallMatch MatchBareJson(ToolCallFormat format, std::string_view t, size_t pos) {
  CallMatch m;
  if (format == ToolCallFormat::kGeneric) {
    m.scan = MatchAnyPattern(
        t, pos, {{"{", " ", "\"tool_call\""}, {"{", " ", "\"tool_calls\""}, {"{", " ", "\"response\""}});
  } else {
    m.scan = MatchAnyPattern(t, pos,
                             {{"{", " ", "\"name\"", " ", ":", " ", "\""},
                              {"{", " ", "\"type\"", " ", ":", " ", "\"function\"", " ", ",", " ", "\"name\"",
                               " ", ":", " ", "\""}});
  }
  if (m.scan != Scan::kComplete) return m;
  size_t p = pos;
  ordered_json obj;
  if ((m.scan = ReadJson(t, &p, &obj)) != Scan::kComplete) return m;
  m.end = p;
  if (format != ToolCallFormat::kGeneric) {
    RawCall call;
    if (!CallFromObject(obj, {"parameters", "arguments"}, &call)) return Only(Scan::kInvalid);
    m.calls.push_back(std::move(call));
    return m;
  }
  if (const ordered_json* list = Field(obj, "tool_calls")) {
    if (!list->is_array() || list->empty()) return Only(Scan::kInvalid);
    for (const ordered_json& item : *list) {
      RawCall call;
      if (!CallFromObject(item, {"arguments", "parameters"}, &call)) return Only(Scan::kInvalid);
      m.calls.push_back(std::move(call));
    }
  } else if (const ordered_json* one = Field(obj, "tool_call")) {
    RawCall call;
    if (!CallFromObject(*one, {"arguments", "parameters"}, &call)) return Only(Scan::kInvalid);
    m.calls.push_back(std::move(call));
  } else if (const ordered_json* response = Field(obj, "response")) {
    m.has_content = true;
    m.content = response->is_string()
                    ? response->get<std::string>()
                    : response->dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  } else {
    return Only(Scan::kInvalid);
  }
  return m;
}

// NAME.call(k="v", n=1): Llama 3.1's built-in tool syntax (brave_search, wolfram_alpha).
bool ParseBuiltinCall(std::string_view body, RawCall* call) {
  size_t p = 0;
  while (p < body.size() && (IsNameChar(body[p]) && body[p] != '.')) ++p;
  if (p == 0) return false;
  call->name = std::string(body.substr(0, p));
  if (Expect(body, &p, ".call(") != Scan::kComplete) return false;
  call->arguments = ordered_json::object();
  SkipWs(body, &p);
  if (p < body.size() && body[p] == ')') {
    ++p;
  } else {
    while (true) {
      SkipWs(body, &p);
      const size_t k0 = p;
      while (p < body.size() && IsNameChar(body[p])) ++p;
      if (p == k0) return false;
      const std::string key(body.substr(k0, p - k0));
      SkipWs(body, &p);
      if (Expect(body, &p, "=") != Scan::kComplete) return false;
      SkipWs(body, &p);
      size_t v0 = p;
      if (p < body.size() && body[p] == '"') {  // a string literal, escapes respected
        for (++p; p < body.size() && body[p] != '"'; ++p) {
          if (body[p] == '\\') ++p;
        }
        if (p >= body.size()) return false;
        ++p;
      } else {
        while (p < body.size() && body[p] != ',' && body[p] != ')') ++p;
      }
      const std::string_view lit = Trim(body.substr(v0, p - v0));
      ordered_json v = ordered_json::parse(lit.begin(), lit.end(), nullptr, false);
      if (v.is_discarded()) return false;
      call->arguments[key] = std::move(v);
      SkipWs(body, &p);
      if (p < body.size() && body[p] == ',') {
        ++p;
        continue;
      }
      if (Expect(body, &p, ")") != Scan::kComplete) return false;
      break;
    }
  }
  SkipWs(body, &p);
  return p == body.size();
}

// "<|python_tag|>" then a JSON call, NAME.call(...), or plain code (a call of "python" with {"code"}), up to
// <|eom_id|> / <|eot_id|> or the end of the output.
CallMatch MatchPythonTag(std::string_view t, size_t pos, bool final) {
  const size_t start = pos + std::string_view("<|python_tag|>").size();
  size_t stop = std::min(t.find("<|eom_id|>", start), t.find("<|eot_id|>", start));
  size_t end = stop == std::string_view::npos ? t.size() : stop + std::string_view("<|eom_id|>").size();
  if (stop == std::string_view::npos) {
    if (!final) return Only(Scan::kNeedMore);
    stop = t.size();
  }
  const std::string_view body = Trim(t.substr(start, stop - start));
  if (body.empty()) return Only(Scan::kInvalid);
  CallMatch m;
  m.scan = Scan::kComplete;
  m.end = end;
  RawCall call;
  if (body.front() == '{') {
    ordered_json obj = ordered_json::parse(body.begin(), body.end(), nullptr, false);
    if (!obj.is_discarded() && CallFromObject(obj, {"parameters", "arguments"}, &call)) {
      m.calls.push_back(std::move(call));
      return m;
    }
  }
  if (!ParseBuiltinCall(body, &call)) {
    call.name = "python";
    call.arguments = {{"code", std::string(body)}};
  }
  m.calls.push_back(std::move(call));
  return m;
}

// "[TOOL_CALLS]" then a JSON array of calls (Nemo) or NAME[CALL_ID]ID[ARGS]{...} (Small 3.2 / Magistral);
// both layouts are accepted for both formats.
CallMatch MatchMistral(std::string_view t, size_t pos) {
  CallMatch m;
  size_t p = pos + std::string_view("[TOOL_CALLS]").size();
  SkipWs(t, &p);
  if (p >= t.size()) return Only(Scan::kNeedMore);
  if (t[p] == '[') {
    ordered_json list;
    if ((m.scan = ReadJson(t, &p, &list)) != Scan::kComplete) return m;
    if (!list.is_array() || list.empty()) return Only(Scan::kInvalid);
    for (const ordered_json& item : list) {
      RawCall call;
      if (!CallFromObject(item, {"arguments", "parameters"}, &call)) return Only(Scan::kInvalid);
      m.calls.push_back(std::move(call));
    }
    m.end = p;
    return m;
  }
  RawCall call;
  const size_t n0 = p;
  while (p < t.size() && IsNameChar(t[p]) && p - n0 < kMaxNameLen) ++p;
  if (p >= t.size()) return Only(Scan::kNeedMore);
  if (p == n0 || t[p] != '[') return Only(Scan::kInvalid);
  call.name = std::string(t.substr(n0, p - n0));
  Scan s;
  const int which = ExpectOneOf(t, &p, {"[CALL_ID]", "[ARGS]"}, &s);
  if (which < 0) return Only(s);
  if (which == 0) {
    const size_t i0 = p;
    while (p < t.size() && IsNameChar(t[p]) && p - i0 < kMaxNameLen) ++p;
    if (p >= t.size()) return Only(Scan::kNeedMore);
    call.id = std::string(t.substr(i0, p - i0));
    if ((s = Expect(t, &p, "[ARGS]")) != Scan::kComplete) return Only(s);
  }
  SkipWs(t, &p);
  ordered_json args;
  if ((m.scan = ReadJson(t, &p, &args)) != Scan::kComplete) return m;
  if (!ToArguments(&args, &call.arguments)) return Only(Scan::kInvalid);
  m.calls.push_back(std::move(call));
  m.end = p;
  return m;
}

// DeepSeek: calls_begin (call_begin HEADER sep ... call_end)+ calls_end. After the separator, R1 writes
// "NAME\n```json\n{...}\n```" (HEADER is the type, "function"); V3.1 writes "{...}" (HEADER is the name).
// Both layouts are accepted for both formats. At the end of the output a missing calls_end is forgiven.
CallMatch MatchDeepSeek(std::string_view t, size_t pos, bool final) {
  CallMatch m;
  size_t p = pos + kDsCallsBegin.size();
  while (true) {
    SkipWs(t, &p);
    if (p >= t.size()) {
      if (final && !m.calls.empty()) {
        m.scan = Scan::kComplete;
        m.end = p;
        return m;
      }
      return Only(Scan::kNeedMore);
    }
    Scan s;
    const int which = ExpectOneOf(t, &p, {kDsCallBegin, kDsCallsEnd}, &s);
    if (which < 0) return Only(s);
    if (which == 1) {
      if (m.calls.empty()) return Only(Scan::kInvalid);
      m.scan = Scan::kComplete;
      m.end = p;
      return m;
    }
    const size_t sep = t.find(kDsSep, p);
    const std::string_view header = t.substr(p, sep == std::string_view::npos ? t.size() - p : sep - p);
    // Without the separator yet, the tail may hold part of it: allow for that, so the decision stays the
    // same however the output is chunked.
    const size_t limit = kMaxNameLen + (sep == std::string_view::npos ? kDsSep.size() : 0);
    if (header.find('\n') != std::string_view::npos || header.size() > limit) return Only(Scan::kInvalid);
    if (sep == std::string_view::npos) return Only(Scan::kNeedMore);
    p = sep + kDsSep.size();
    if (p >= t.size()) return Only(Scan::kNeedMore);
    RawCall call;
    ordered_json args;
    if (t[p] == '{') {  // V3.1
      call.name = std::string(Trim(header));
      if ((s = ReadJson(t, &p, &args)) != Scan::kComplete) return Only(s);
    } else {  // R1
      if ((s = ReadName(t, &p, '\n', &call.name)) != Scan::kComplete) return Only(s);
      SkipWs(t, &p);
      bool fenced = false;
      if (p < t.size() && t[p] == '`') {
        if ((s = Expect(t, &p, "```json")) != Scan::kComplete) return Only(s);
        fenced = true;
        SkipWs(t, &p);
      }
      if ((s = ReadJson(t, &p, &args)) != Scan::kComplete) return Only(s);
      SkipWs(t, &p);
      if (fenced && (s = Expect(t, &p, "```")) != Scan::kComplete) return Only(s);
    }
    if (call.name.empty() || !ToArguments(&args, &call.arguments)) return Only(Scan::kInvalid);
    SkipWs(t, &p);
    if ((s = Expect(t, &p, kDsCallEnd)) != Scan::kComplete) return Only(s);
    m.calls.push_back(std::move(call));
  }
}

// Functionary v3.1: "<function=" NAME ">" JSON object "</function>" (whitespace around the object allowed).
CallMatch MatchFunctionary(std::string_view t, size_t pos) {
  CallMatch m;
  size_t p = pos + std::string_view("<function=").size();
  RawCall call;
  if ((m.scan = ReadName(t, &p, '>', &call.name)) != Scan::kComplete) return m;
  SkipWs(t, &p);
  ordered_json args;
  if ((m.scan = ReadJson(t, &p, &args)) != Scan::kComplete) return m;
  if (!args.is_object() || !ToArguments(&args, &call.arguments)) return Only(Scan::kInvalid);
  SkipWs(t, &p);
  if ((m.scan = Expect(t, &p, "</function>")) != Scan::kComplete) return m;
  m.calls.push_back(std::move(call));
  m.end = p;
  return m;
}

// Functionary v3.2: [">>>"] RECIPIENT "\n", where RECIPIENT "all" opens content (consumed as an empty content
// segment) and any other name is a call whose JSON object follows. ">>>" is absent at the output's start,
// where whitespace may come first (a tokenizer's leading space).
CallMatch MatchRecipient(std::string_view t, size_t pos) {
  CallMatch m;
  size_t p = pos;
  if (t.substr(p).starts_with(">>>")) {
    p += 3;
  } else if (p == 0) {
    SkipWs(t, &p);
  }
  const size_t n0 = p;
  while (p < t.size() && IsNameChar(t[p]) && p - n0 < kMaxNameLen) ++p;
  if (p >= t.size()) return Only(Scan::kNeedMore);
  if (p == n0 || t[p] != '\n') return Only(Scan::kInvalid);
  const std::string name(t.substr(n0, p - n0));
  ++p;
  if (name == "all") {
    m.scan = Scan::kComplete;
    m.has_content = true;
    m.end = p;
    return m;
  }
  RawCall call;
  call.name = name;
  ordered_json args;
  if ((m.scan = ReadJson(t, &p, &args)) != Scan::kComplete) return m;
  if (!args.is_object() || !ToArguments(&args, &call.arguments)) return Only(Scan::kInvalid);
  m.calls.push_back(std::move(call));
  m.end = p;
  return m;
}

std::vector<std::string> TypesOf(const ordered_json* schema) {
  std::vector<std::string> types;
  if (schema == nullptr || !schema->is_object()) return types;
  if (const ordered_json* type = Field(*schema, "type")) {
    if (type->is_string()) types.push_back(type->get<std::string>());
    if (type->is_array()) {
      for (const ordered_json& t : *type) {
        if (t.is_string()) types.push_back(t.get<std::string>());
      }
    }
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    const ordered_json* alts = Field(*schema, key);
    if (alts == nullptr || !alts->is_array()) continue;
    for (const ordered_json& alt : *alts) {
      for (std::string& t : TypesOf(&alt)) types.push_back(std::move(t));
    }
  }
  return types;
}

bool HasType(const ordered_json& v, const std::vector<std::string>& types) {
  for (const std::string& t : types) {
    if ((t == "string" && v.is_string()) || (t == "integer" && v.is_number_integer()) ||
        (t == "number" && v.is_number()) || (t == "boolean" && v.is_boolean()) ||
        (t == "object" && v.is_object()) || (t == "array" && v.is_array()) || (t == "null" && v.is_null())) {
      return true;
    }
  }
  return false;
}

}  // namespace

ordered_json XmlValueToJson(std::string_view raw, const ordered_json* property_schema) {
  const std::vector<std::string> types = TypesOf(property_schema);
  if (types.size() == 1 && types[0] == "string") return std::string(raw);
  const std::string_view text = Trim(raw);
  ordered_json v;
  if (text == "True" || text == "False") {
    v = text == "True";
  } else if (text == "None") {
    v = nullptr;
  } else {
    v = ordered_json::parse(text.begin(), text.end(), nullptr, false);
  }
  if (!v.is_discarded() && !text.empty() && (types.empty() || HasType(v, types))) return v;
  return std::string(raw);
}

const FormatMarkers& MarkersFor(ToolCallFormat format) {
  static const FormatMarkers kGeneric{{}, true};
  static const FormatMarkers kTagged{{"<tool_call>"}, false};
  static const FormatMarkers kLlama{{"<|python_tag|>"}, true};
  static const FormatMarkers kMistral{{"[TOOL_CALLS]"}, false};
  static const FormatMarkers kDeepSeek{{std::string(kDsCallsBegin)}, false};
  static const FormatMarkers kFunctionary{{"<function="}, false};
  static const FormatMarkers kRecipient{{">>>"}, false, true};
  switch (format) {
    case ToolCallFormat::kGeneric:
      return kGeneric;
    case ToolCallFormat::kHermes2Pro:
    case ToolCallFormat::kQwen3CoderXml:
      return kTagged;
    case ToolCallFormat::kLlama3x:
    case ToolCallFormat::kLlama3xBuiltinTools:
      return kLlama;
    case ToolCallFormat::kMistralNemo:
    case ToolCallFormat::kMagistral:
      return kMistral;
    case ToolCallFormat::kDeepSeekR1:
    case ToolCallFormat::kDeepSeekV31:
      return kDeepSeek;
    case ToolCallFormat::kFunctionaryV31:
      return kFunctionary;
    case ToolCallFormat::kFunctionaryV32:
      return kRecipient;
  }
  return kGeneric;
}

CallMatch MatchCallAt(ToolCallFormat format, std::string_view text, size_t pos, bool final,
                      const std::vector<ToolSpec>& tools) {
  CallMatch m;
  const std::string_view at = text.substr(pos);
  if (format == ToolCallFormat::kFunctionaryV32) {
    m = MatchRecipient(text, pos);
  } else if (at.starts_with('{') && MarkersFor(format).bare_json) {
    m = MatchBareJson(format, text, pos);
  } else if (at.starts_with("<tool_call>")) {
    m = MatchTagged(text, pos, tools);
  } else if (at.starts_with("<|python_tag|>")) {
    m = MatchPythonTag(text, pos, final);
  } else if (at.starts_with("[TOOL_CALLS]")) {
    m = MatchMistral(text, pos);
  } else if (at.starts_with(kDsCallsBegin)) {
    m = MatchDeepSeek(text, pos, final);
  } else if (at.starts_with("<function=") && format == ToolCallFormat::kFunctionaryV31) {
    m = MatchFunctionary(text, pos);
  }
  if (m.scan == Scan::kNeedMore && final) m.scan = Scan::kInvalid;
  return m;
}

}  // namespace lazyslot::tool_call_internal
