// Jinja built-ins other than filters: attribute/item access, slicing, membership, iteration, Python methods
// on str/dict/list, tests (`is defined`, ...), printf-style `%`, and the globals (range, namespace, ...).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>

#include "chat/jinja/jinja_eval.h"
#include "chat/jinja/jinja_text.h"

namespace lazyslot::jinja {

namespace {

bool AllAscii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Python index normalization: negative counts from the end; out of range gives false.
bool NormalizeIndex(int64_t i, size_t n, size_t* out) {
  if (i < 0) i += static_cast<int64_t>(n);
  if (i < 0 || i >= static_cast<int64_t>(n)) return false;
  *out = static_cast<size_t>(i);
  return true;
}

const std::set<std::string>& StrMethods() {
  static const auto* s = new std::set<std::string>{
      "strip", "lstrip",  "rstrip",     "split",   "rsplit",  "splitlines", "startswith", "endswith", "upper",
      "lower", "title",   "capitalize", "replace", "format",  "join",       "find",       "rfind",    "index",
      "count", "isdigit", "isalpha",    "isalnum", "isspace", "islower",    "isupper",    "swapcase"};
  return *s;
}
const std::set<std::string>& DictMethods() {
  static const auto* s = new std::set<std::string>{"items",  "keys", "values",  "get",   "copy",
                                                   "update", "pop",  "popitem", "clear", "setdefault"};
  return *s;
}
const std::set<std::string>& ListMethods() {
  static const auto* s = new std::set<std::string>{"index",  "count",   "append", "extend", "insert", "pop",
                                                   "remove", "reverse", "sort",   "clear",  "copy"};
  return *s;
}

Result<int64_t> IntArg(const CallArgs& args, size_t i, const char* name, int64_t def) {
  const Value& v = args.Get(i, name);
  if (v.is_undefined() || v.is_none()) return def;
  if (!v.is_int() && !v.is_bool())
    return InvalidArgument(std::string("argument '") + name + "' must be an int");
  return v.int_value();
}

Result<Value> StrMethod(const std::string& s, const std::string& name, CallArgs& args) {
  auto str_arg = [&](size_t i, const char* n) -> const Value& { return args.Get(i, n); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value& chars = str_arg(0, "chars");
    if (!chars.is_undefined() && !chars.is_none() && !chars.is_string()) {
      return InvalidArgument(name + "() argument must be str or None");
    }
    const std::string* cs = chars.is_string() ? &chars.str() : nullptr;
    return Value::String(text::Strip(s, cs, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    const Value& sep = str_arg(0, "sep");
    LS_ASSIGN_OR_RETURN(int64_t maxsplit, IntArg(args, 1, "maxsplit", -1));
    std::vector<std::string> parts;
    if (sep.is_undefined() || sep.is_none()) {
      parts = name == "rsplit" ? text::RSplitWhitespace(s, maxsplit) : text::SplitWhitespace(s, maxsplit);
    } else {
      if (!sep.is_string()) return InvalidArgument(name + "(): separator must be str or None");
      if (sep.str().empty()) return InvalidArgument(name + "(): empty separator");
      parts = text::Split(s, sep.str(), maxsplit, name == "rsplit");
    }
    std::vector<Value> items;
    for (auto& p : parts) items.push_back(Value::String(std::move(p)));
    return Value::Array(std::move(items));
  }
  if (name == "splitlines") {
    std::vector<Value> items;
    for (auto& p : text::SplitLines(s)) items.push_back(Value::String(std::move(p)));
    return Value::Array(std::move(items));
  }
  if (name == "startswith" || name == "endswith") {
    const Value& pre = str_arg(0, "prefix");
    const Value& start = str_arg(1, "start");
    const Value& end = str_arg(2, "end");
    if (!start.is_undefined() || !end.is_undefined()) {  // s[start:end].startswith(prefix)
      LS_ASSIGN_OR_RETURN(Value part, SliceValue(Value::String(s), start, end, Value()));
      CallArgs rest;
      rest.positional.push_back(pre);
      return StrMethod(part.str(), name, rest);
    }
    std::vector<Value> options = pre.is_array() ? pre.items() : std::vector<Value>{pre};
    for (const Value& o : options) {
      if (!o.is_string()) return InvalidArgument(name + "() argument must be str or a tuple of str");
      const std::string& p = o.str();
      bool hit = name == "startswith"
                     ? s.compare(0, p.size(), p) == 0
                     : (s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0);
      if (hit) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  if (name == "upper") return Value::String(text::Upper(s));
  if (name == "lower") return Value::String(text::Lower(s));
  if (name == "title") return Value::String(text::PyTitle(s));
  if (name == "capitalize") return Value::String(text::Capitalize(s));
  if (name == "swapcase") {
    std::string out = s;
    for (char& c : out) {
      if (c >= 'a' && c <= 'z') {
        c = static_cast<char>(c - 32);
      } else if (c >= 'A' && c <= 'Z') {
        c = static_cast<char>(c + 32);
      }
    }
    return Value::String(std::move(out));
  }
  if (name == "replace") {
    const Value& old = str_arg(0, "old");
    const Value& repl = str_arg(1, "new");
    if (!old.is_string() || !repl.is_string()) return InvalidArgument("replace() arguments must be str");
    LS_ASSIGN_OR_RETURN(int64_t count, IntArg(args, 2, "count", -1));
    return Value::String(text::Replace(s, old.str(), repl.str(), count));
  }
  if (name == "format") {
    LS_ASSIGN_OR_RETURN(std::string out, text::Format(s, args, 0));
    return Value::String(std::move(out));
  }
  if (name == "join") {
    LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(str_arg(0, "iterable")));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        return InvalidArgument("join(): sequence item " + std::to_string(i) + ": expected str, got " +
                               items[i].TypeName());
      }
      if (i) out += s;
      out += items[i].str();
    }
    return Value::String(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "count") {
    const Value& sub = str_arg(0, "sub");
    if (!sub.is_string()) return InvalidArgument(name + "() argument must be str");
    if (name == "count") {
      if (sub.str().empty()) return Value::Int(static_cast<int64_t>(Utf8Length(s) + 1));
      int64_t n = 0;
      for (size_t p = s.find(sub.str()); p != std::string::npos; p = s.find(sub.str(), p + sub.str().size()))
        ++n;
      return Value::Int(n);
    }
    size_t p = name == "rfind" ? s.rfind(sub.str()) : s.find(sub.str());
    if (p == std::string::npos) {
      if (name == "index") return InvalidArgument("index(): substring not found");
      return Value::Int(-1);
    }
    return Value::Int(static_cast<int64_t>(Utf8Length(std::string_view(s).substr(0, p))));
  }
  if (name.rfind("is", 0) == 0) {
    if (s.empty()) return Value::Bool(false);
    bool all = true, any_cased = false, any_upper = false, any_lower = false;
    for (std::string_view ch : Utf8Chars(s)) {
      char c = ch.size() == 1 ? ch[0] : '\0';
      bool digit = c >= '0' && c <= '9';
      bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || ch.size() > 1;
      any_upper |= c >= 'A' && c <= 'Z';
      any_lower |= c >= 'a' && c <= 'z';
      any_cased |= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      if (name == "isdigit") all &= digit;
      if (name == "isalpha") all &= alpha;
      if (name == "isalnum") all &= alpha || digit;
      if (name == "isspace") all &= text::IsSpaceCodepoint(ch);
    }
    if (name == "islower") return Value::Bool(any_cased && !any_upper);
    if (name == "isupper") return Value::Bool(any_cased && !any_lower);
    return Value::Bool(all);
  }
  return InvalidArgument("str has no method '" + name + "'");
}

Value ItemsOf(const ObjectData& o) {
  std::vector<Value> items;
  items.reserve(o.items.size());
  for (const auto& [k, v] : o.items) items.push_back(Value::Array({Value::String(k), v}, /*is_tuple=*/true));
  return Value::Array(std::move(items));
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Access

bool IsMethod(const Value& obj, const std::string& name) {
  if (obj.is_string()) return StrMethods().count(name) > 0;
  if (obj.is_object() && !obj.is_namespace()) return DictMethods().count(name) > 0;
  if (obj.is_array()) return ListMethods().count(name) > 0;
  return false;
}

Result<Value> CallMethod(Evaluator& ev, const Value& obj, const std::string& name, CallArgs& args) {
  if (obj.is_string()) {
    LS_ASSIGN_OR_RETURN(Value r, StrMethod(obj.str(), name, args));
    if (r.is_string()) LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(r.str().size())));
    if (r.is_array()) LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(r.items().size())));
    return r;
  }
  if (obj.is_object()) {
    const ObjectData& o = obj.object();
    LS_RETURN_IF_ERROR(ev.Charge(static_cast<int64_t>(o.items.size())));
    if (name == "items") return ItemsOf(o);
    if (name == "keys" || name == "values") {
      std::vector<Value> items;
      for (const auto& [k, v] : o.items) items.push_back(name == "keys" ? Value::String(k) : v);
      return Value::Array(std::move(items));
    }
    if (name == "get") {
      const Value& key = args.Get(0, "key");
      const Value* v = key.is_string() ? o.Find(key.str()) : nullptr;
      if (v) return *v;
      const Value& def = args.Get(1, "default");
      return def.is_undefined() ? Value::None() : def;
    }
    if (name == "copy") return obj;
    return InvalidArgument("access to dict." + name +
                           "() is unsafe: template data is immutable (as in transformers' sandbox)");
  }
  if (obj.is_array()) {
    const auto& items = obj.items();
    if (name == "index" || name == "count") {
      const Value& x = args.Get(0, "value");
      int64_t n = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        if (!PyEquals(items[i], x)) continue;
        if (name == "index") return Value::Int(static_cast<int64_t>(i));
        ++n;
      }
      if (name == "index") return InvalidArgument("list.index(x): x not in list");
      return Value::Int(n);
    }
    if (name == "copy") return obj;
    return InvalidArgument("access to list." + name +
                           "() is unsafe: template data is immutable (as in transformers' sandbox)");
  }
  return InvalidArgument(std::string("'") + obj.TypeName() + "' object has no method '" + name + "'");
}

Value GetAttr(const Value& obj, const std::string& name) {
  if (IsMethod(obj, name)) {
    Value self = obj;
    return Value::Function(
        name, [self, name](Evaluator& ev, CallArgs& args) { return CallMethod(ev, self, name, args); });
  }
  if (obj.is_object()) {
    const Value* v = obj.object().Find(name);
    return v ? *v : Value();
  }
  return Value();
}

Value GetItem(const Value& obj, const Value& key) {
  if (obj.is_object()) {
    if (key.is_string()) {
      const Value* v = obj.object().Find(key.str());
      if (v) return *v;
      return GetAttr(obj, key.str());
    }
    return Value();
  }
  if ((obj.is_array() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    size_t i;
    if (obj.is_array()) {
      if (!NormalizeIndex(key.int_value(), obj.items().size(), &i)) return Value();
      return obj.items()[i];
    }
    const std::string& s = obj.str();
    if (AllAscii(s)) {
      if (!NormalizeIndex(key.int_value(), s.size(), &i)) return Value();
      return Value::String(s.substr(i, 1));
    }
    std::vector<std::string_view> cs = Utf8Chars(s);
    if (!NormalizeIndex(key.int_value(), cs.size(), &i)) return Value();
    return Value::String(std::string(cs[i]));
  }
  if (key.is_string()) return GetAttr(obj, key.str());
  return Value();
}

Value GetAttrPath(const Value& obj, const std::string& path) {
  Value cur = obj;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = numeric && part.size() < 18 ? GetItem(cur, Value::Int(std::stoll(part)))
                                      : GetItem(cur, Value::String(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Result<Value> SliceValue(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  auto opt_int = [](const Value& v, const char* what, int64_t* out, bool* given) -> Status {
    *given = !(v.is_undefined() || v.is_none());
    if (!*given) return Status::Ok();
    if (!v.is_int() && !v.is_bool())
      return InvalidArgument(std::string("slice ") + what + " must be an integer");
    *out = v.int_value();
    return Status::Ok();
  };
  int64_t b = 0, e = 0, st = 1;
  bool has_b, has_e, has_st;
  LS_RETURN_IF_ERROR(opt_int(start, "start", &b, &has_b));
  LS_RETURN_IF_ERROR(opt_int(stop, "stop", &e, &has_e));
  LS_RETURN_IF_ERROR(opt_int(step, "step", &st, &has_st));
  if (st == 0) return InvalidArgument("slice step cannot be zero");
  std::vector<std::string_view> chars;
  int64_t n;
  if (obj.is_array()) {
    n = static_cast<int64_t>(obj.items().size());
  } else if (obj.is_string()) {
    chars = Utf8Chars(obj.str());
    n = static_cast<int64_t>(chars.size());
  } else if (obj.is_undefined()) {
    return Value();
  } else {
    return InvalidArgument(std::string("'") + obj.TypeName() + "' object is not subscriptable");
  }
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](bool given, int64_t v, int64_t def) {
    if (!given) return def;
    if (v < 0) {
      v += n;
      if (v < 0) v = st < 0 ? -1 : 0;
    } else if (v >= n) {
      v = st < 0 ? n - 1 : n;
    }
    return v;
  };
  int64_t lo = adjust(has_b, b, st < 0 ? n - 1 : 0);
  int64_t hi = adjust(has_e, e, st < 0 ? -1 : n);
  std::vector<size_t> idx;
  for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) idx.push_back(static_cast<size_t>(i));
  if (obj.is_array()) {
    std::vector<Value> items;
    items.reserve(idx.size());
    for (size_t i : idx) items.push_back(obj.items()[i]);
    return Value::Array(std::move(items), obj.is_tuple());
  }
  std::string out;
  for (size_t i : idx) out.append(chars[i]);
  return Value::String(std::move(out));
}

Result<bool> Contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) {
      return InvalidArgument(std::string("'in <string>' requires string as left operand, not ") +
                             item.TypeName());
    }
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_array()) {
    for (const Value& v : container.items()) {
      if (PyEquals(v, item)) return true;
    }
    return false;
  }
  if (container.is_object()) return item.is_string() && container.object().Find(item.str()) != nullptr;
  if (container.is_undefined()) return false;
  return InvalidArgument(std::string("argument of type '") + container.TypeName() + "' is not iterable");
}

Result<std::vector<Value>> Iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return std::vector<Value>{};
    case Kind::kArray:
      return v.items();
    case Kind::kObject: {
      if (v.is_namespace()) break;
      std::vector<Value> keys;
      for (const auto& kv : v.object().items) keys.push_back(Value::String(kv.first));
      return keys;
    }
    case Kind::kString: {
      std::vector<Value> chars;
      for (std::string_view c : Utf8Chars(v.str())) chars.push_back(Value::String(std::string(c)));
      return chars;
    }
    default:
      break;
  }
  return InvalidArgument(std::string("'") + v.TypeName() + "' object is not iterable");
}

// ---------------------------------------------------------------------------------------------------------
// printf-style formatting

Result<Value> PercentFormat(const std::string& fmt, const Value& args) {
  std::vector<Value> positional;
  const bool mapping = args.is_object();
  if (args.is_tuple()) {
    positional = args.items();
  } else if (!mapping) {
    positional.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) return InvalidArgument("% format: incomplete format");
    const Value* v = nullptr;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos || !mapping) return InvalidArgument("% format: bad mapping key");
      v = args.object().Find(fmt.substr(i + 1, close - i - 1));
      if (!v) return InvalidArgument("% format: missing key '" + fmt.substr(i + 1, close - i - 1) + "'");
      i = close + 1;
    }
    std::string spec = "%";
    while (i < fmt.size() && std::string_view("-+ 0#").find(fmt[i]) != std::string_view::npos)
      spec += fmt[i++];
    // Width and precision: at most 3 digits each, so snprintf output stays small.
    for (int part = 0; part < 2; ++part) {
      if (part == 1) {
        if (i >= fmt.size() || fmt[i] != '.') break;
        spec += fmt[i++];
      }
      int digits = 0;
      while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
        if (++digits > 3) return InvalidArgument("% format: width or precision too large");
        spec += fmt[i++];
      }
    }
    if (i >= fmt.size()) return InvalidArgument("% format: incomplete format");
    char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (!v) {
      if (next >= positional.size())
        return InvalidArgument("% format: not enough arguments for format string");
      v = &positional[next++];
    }
    char buf[512];
    if (conv == 's' || conv == 'r') {
      std::string s = conv == 's' ? ToPyString(*v) : ToPyRepr(*v);
      if (spec == "%") {
        out += s;
      } else {
        std::vector<char> big(s.size() + 1024);
        std::snprintf(big.data(), big.size(), (spec + "s").c_str(), s.c_str());
        out += big.data();
      }
    } else if (conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X' || conv == 'o' || conv == 'c') {
      if (!v->is_number()) return InvalidArgument(std::string("% format: %") + conv + " needs a number");
      long long n = v->is_float() ? static_cast<long long>(v->number()) : v->int_value();
      if (conv == 'c') {
        out += static_cast<char>(n);
        continue;
      }
      std::snprintf(buf, sizeof(buf), (spec + "ll" + (conv == 'i' ? 'd' : conv)).c_str(), n);
      out += buf;
    } else if (conv == 'f' || conv == 'F' || conv == 'e' || conv == 'E' || conv == 'g' || conv == 'G') {
      if (!v->is_number()) return InvalidArgument(std::string("% format: %") + conv + " needs a number");
      std::snprintf(buf, sizeof(buf), (spec + conv).c_str(), v->number());
      out += buf;
    } else {
      return InvalidArgument(std::string("% format: unsupported format character '") + conv + "'");
    }
  }
  if (!mapping && next < positional.size()) {
    return InvalidArgument("% format: not all arguments converted during string formatting");
  }
  return Value::String(std::move(out));
}

// ---------------------------------------------------------------------------------------------------------
// Tests

bool HasTest(const std::string& name) {
  static const auto* names = new std::set<std::string>{
      "defined",     "undefined", "none",    "boolean",  "false",       "true",     "integer", "float",
      "number",      "string",    "mapping", "iterable", "sequence",    "callable", "even",    "odd",
      "divisibleby", "eq",        "equalto", "==",       "ne",          "!=",       "lt",      "lessthan",
      "<",           "le",        "<=",      "gt",       "greaterthan", ">",        "ge",      ">=",
      "in",          "lower",     "upper",   "sameas",   "escaped",     "filter",   "test"};
  return names->count(name) > 0;
}

Result<bool> ApplyTest(Evaluator& ev, const std::string& name, CallArgs& args) {
  (void)ev;
  const Value& v = args.Get(0, "value");
  const Value& other = args.Get(1, "other");
  const Kind k = v.kind();
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "false") return v.is_bool() && !v.bool_value();
  if (name == "true") return v.is_bool() && v.bool_value();
  if (name == "integer") return k == Kind::kInt;
  if (name == "float") return k == Kind::kFloat;
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_object() && !v.is_namespace();
  if (name == "iterable")
    return k == Kind::kArray || k == Kind::kString || k == Kind::kUndefined || v.is_object();
  if (name == "sequence")
    return k == Kind::kArray || k == Kind::kString || (v.is_object() && !v.is_namespace());
  if (name == "callable") return v.is_function();
  if (name == "escaped") return false;
  if (name == "filter") return v.is_string() && HasFilter(v.str());
  if (name == "test") return v.is_string() && HasTest(v.str());
  if (name == "lower" || name == "upper") {
    std::string s = ToPyString(v);
    CallArgs none;
    LS_ASSIGN_OR_RETURN(Value r, StrMethod(s, name == "lower" ? "islower" : "isupper", none));
    return r.bool_value();
  }
  if (name == "even" || name == "odd" || name == "divisibleby") {
    if (!v.is_number()) return InvalidArgument("test '" + name + "' needs a number, got " + v.TypeName());
    Value d = name == "divisibleby" ? other : Value::Int(2);
    if (!d.is_number() || d.number() == 0)
      return InvalidArgument("test 'divisibleby' needs a non-zero number");
    double m = v.is_float() || d.is_float() ? std::fmod(v.number(), d.number())
                                            : static_cast<double>(v.int_value() % d.int_value());
    return name == "odd" ? m != 0 : m == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return PyEquals(v, other);
  if (name == "ne" || name == "!=") return !PyEquals(v, other);
  if (name == "in") return Contains(other, v);
  if (name == "sameas") {
    if (v.is_array() || v.is_object() || v.is_function()) return v.SameIdentity(other);
    return v.kind() == other.kind() && PyEquals(v, other);
  }
  static const std::set<std::string> kOrder = {
      "lt", "lessthan", "<", "le", "<=", "gt", "greaterthan", ">", "ge", ">="};
  if (kOrder.count(name)) {
    LS_ASSIGN_OR_RETURN(int c, PyCompare(v, other));
    if (name == "lt" || name == "lessthan" || name == "<") return c < 0;
    if (name == "le" || name == "<=") return c <= 0;
    if (name == "gt" || name == "greaterthan" || name == ">") return c > 0;
    return c >= 0;
  }
  return InvalidArgument("unknown test '" + name + "'");
}

// ---------------------------------------------------------------------------------------------------------
// Globals

std::vector<std::pair<std::string, Value>> MakeGlobals() {
  std::vector<std::pair<std::string, Value>> g;
  g.emplace_back(
      "range", Value::Function("range", [](Evaluator& ev, CallArgs& args) -> Result<Value> {
        if (args.positional.empty() || args.positional.size() > 3)
          return InvalidArgument("range() takes 1 to 3 arguments");
        for (const Value& a : args.positional) {
          if (!a.is_int() && !a.is_bool()) return InvalidArgument("range() arguments must be integers");
        }
        int64_t start = 0, stop, step = 1;
        if (args.positional.size() == 1) {
          stop = args.positional[0].int_value();
        } else {
          start = args.positional[0].int_value();
          stop = args.positional[1].int_value();
          if (args.positional.size() == 3) step = args.positional[2].int_value();
        }
        if (step == 0) return InvalidArgument("range() step must not be zero");
        // Length computed in floating point first so huge bounds cannot overflow.
        double len_d =
            std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step));
        if (len_d > static_cast<double>(ev.limits().max_range)) {
          return ResourceExhausted("range() longer than " + std::to_string(ev.limits().max_range) + " items");
        }
        int64_t len = len_d > 0 ? static_cast<int64_t>(len_d) : 0;
        LS_RETURN_IF_ERROR(ev.Charge(len));
        std::vector<Value> items;
        items.reserve(static_cast<size_t>(len));
        for (int64_t i = 0; i < len; ++i) items.push_back(Value::Int(start + i * step));
        return Value::Array(std::move(items));
      }));
  auto kwargs_object = [](CallArgs& args, bool is_namespace) -> Result<Value> {
    Value obj = is_namespace ? Value::Namespace() : Value::Object({});
    if (!args.positional.empty()) {
      if (args.positional.size() > 1 || !args.positional[0].is_object()) {
        return InvalidArgument("expected at most one dict positional argument");
      }
      for (const auto& [k, v] : args.positional[0].object().items) obj.object().Set(k, v);
    }
    for (const auto& [k, v] : args.keyword) obj.object().Set(k, v);
    return obj;
  };
  g.emplace_back("namespace", Value::Function("namespace", [kwargs_object](Evaluator&, CallArgs& args) {
                   return kwargs_object(args, true);
                 }));
  g.emplace_back("dict", Value::Function("dict", [kwargs_object](Evaluator&, CallArgs& args) {
                   return kwargs_object(args, false);
                 }));
  g.emplace_back("raise_exception",
                 Value::Function("raise_exception", [](Evaluator&, CallArgs& args) -> Result<Value> {
                   return InvalidArgument(kRaisedPrefix + ToPyString(args.Get(0, "message")));
                 }));
  g.emplace_back("strftime_now",
                 Value::Function("strftime_now", [](Evaluator& ev, CallArgs& args) -> Result<Value> {
                   const Value& fmt = args.Get(0, "format");
                   if (!fmt.is_string()) return InvalidArgument("strftime_now() needs a format string");
                   std::tm tm_now{};
                   if (ev.limits().now_unix) {
                     const std::time_t pinned = static_cast<std::time_t>(*ev.limits().now_unix);
                     gmtime_r(&pinned, &tm_now);
                   } else {
                     const std::time_t now = std::time(nullptr);
                     localtime_r(&now, &tm_now);
                   }
                   char buf[512];
                   size_t n = std::strftime(buf, sizeof(buf), fmt.str().c_str(), &tm_now);
                   return Value::String(std::string(buf, n));
                 }));
  return g;
}

}  // namespace lazyslot::jinja
