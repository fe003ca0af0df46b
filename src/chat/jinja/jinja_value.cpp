// Value construction, Python printing/repr, json.dumps and comparison rules for the Jinja interpreter.
#include "chat/jinja/jinja_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lazyslot::jinja {

namespace {

int MaxDepth(const std::vector<Value>& items) {
  int d = 0;
  for (const Value& v : items) d = std::max(d, v.depth());
  return d;
}

const std::string& EmptyString() {
  static const std::string* s = new std::string();
  return *s;
}

}  // namespace

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}
Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}
Value Value::Float(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = f;
  return v;
}
Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.p_ = std::make_shared<std::string>(std::move(s));
  return v;
}
Value Value::Array(std::vector<Value> items, bool is_tuple) {
  Value v;
  v.kind_ = Kind::kArray;
  auto data = std::make_shared<ArrayData>();
  data->depth = 1 + MaxDepth(items);
  data->items = std::move(items);
  data->is_tuple = is_tuple;
  v.p_ = std::move(data);
  return v;
}
Value Value::Object(std::vector<std::pair<std::string, Value>> items) {
  Value v;
  v.kind_ = Kind::kObject;
  auto data = std::make_shared<ObjectData>();
  for (auto& [k, item] : items) data->Set(k, std::move(item));
  v.p_ = std::move(data);
  return v;
}
Value Value::Namespace() {
  Value v = Object({});
  v.object().is_namespace = true;
  return v;
}
Value Value::Function(std::string name, NativeFn fn) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.p_ = std::make_shared<FunctionData>(FunctionData{std::move(name), std::move(fn)});
  return v;
}

Result<Value> Value::FromJson(const nlohmann::ordered_json& j) {
  // Explicit stack depth via recursion bounded by kMaxValueDepth.
  struct Conv {
    static Result<Value> Run(const nlohmann::ordered_json& j, int depth) {
      if (depth > kMaxValueDepth) {
        return InvalidArgument("JSON value nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
      }
      switch (j.type()) {
        case nlohmann::ordered_json::value_t::null:
          return Value::None();
        case nlohmann::ordered_json::value_t::boolean:
          return Value::Bool(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer:
          return Value::Int(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
          uint64_t u = j.get<uint64_t>();
          if (u > static_cast<uint64_t>(INT64_MAX)) return Value::Float(static_cast<double>(u));
          return Value::Int(static_cast<int64_t>(u));
        }
        case nlohmann::ordered_json::value_t::number_float:
          return Value::Float(j.get<double>());
        case nlohmann::ordered_json::value_t::string:
          return Value::String(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
          std::vector<Value> items;
          items.reserve(j.size());
          for (const auto& e : j) {
            LS_ASSIGN_OR_RETURN(Value v, Run(e, depth + 1));
            items.push_back(std::move(v));
          }
          return Value::Array(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
          std::vector<std::pair<std::string, Value>> items;
          items.reserve(j.size());
          for (const auto& [k, e] : j.items()) {
            LS_ASSIGN_OR_RETURN(Value v, Run(e, depth + 1));
            items.emplace_back(k, std::move(v));
          }
          return Value::Object(std::move(items));
        }
        default:
          return InvalidArgument("JSON value of unsupported type (binary or discarded)");
      }
    }
  };
  return Conv::Run(j, 1);
}

bool Value::is_namespace() const { return kind_ == Kind::kObject && object().is_namespace; }
bool Value::is_tuple() const { return kind_ == Kind::kArray && static_cast<ArrayData*>(p_.get())->is_tuple; }

double Value::number() const {
  if (kind_ == Kind::kFloat) return f_;
  return static_cast<double>(int_value());
}

const std::string& Value::str() const {
  if (kind_ != Kind::kString) return EmptyString();
  return *static_cast<const std::string*>(p_.get());
}

const std::vector<Value>& Value::items() const {
  static const std::vector<Value>* empty = new std::vector<Value>();
  if (kind_ != Kind::kArray) return *empty;
  return static_cast<ArrayData*>(p_.get())->items;
}

ObjectData& Value::object() const {
  LS_CHECK(kind_ == Kind::kObject);
  return *static_cast<ObjectData*>(p_.get());
}

const FunctionData& Value::function() const {
  LS_CHECK(kind_ == Kind::kFunction);
  return *static_cast<FunctionData*>(p_.get());
}

int Value::depth() const {
  if (kind_ == Kind::kArray) return static_cast<ArrayData*>(p_.get())->depth;
  if (kind_ == Kind::kObject) return object().depth;
  return 0;
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return f_ != 0.0;
    case Kind::kString:
      return !str().empty();
    case Kind::kArray:
      return !items().empty();
    case Kind::kObject:
      return object().is_namespace || !object().items.empty();
    case Kind::kFunction:
      return true;
  }
  return false;
}

const char* Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kArray:
      return is_tuple() ? "tuple" : "list";
    case Kind::kObject:
      return is_namespace() ? "Namespace" : "dict";
    case Kind::kFunction:
      return "function";
  }
  return "?";
}

const Value* ObjectData::Find(std::string_view key) const {
  if (items.size() > 8) {
    if (index_.size() != items.size()) Reindex();
    auto it = index_.find(std::string(key));
    return it == index_.end() ? nullptr : &items[it->second].second;
  }
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void ObjectData::Set(const std::string& key, Value v) {
  depth = std::max(depth, 1 + v.depth());
  if (items.size() > 8) {
    if (index_.size() != items.size()) Reindex();
    auto it = index_.find(key);
    if (it != index_.end()) {
      items[it->second].second = std::move(v);
    } else {
      items.emplace_back(key, std::move(v));
      index_.emplace(key, items.size() - 1);
    }
    return;
  }
  for (auto& [k, old] : items) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items.emplace_back(key, std::move(v));
}

void ObjectData::Reindex() const {
  index_.clear();
  for (size_t i = 0; i < items.size(); ++i) index_.emplace(items[i].first, i);
}

const Value& CallArgs::Get(size_t i, std::string_view name) const {
  static const Value* undefined = new Value();
  if (i < positional.size()) return positional[i];
  for (const auto& [k, v] : keyword) {
    if (k == name) return v;
  }
  return *undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Printing

std::string FormatPyFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest %.*e that round-trips gives Python's repr digits.
  char buf[64];
  for (int prec = 0; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*e", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf = [-]D[.DDD]e[+-]XX
  std::string s(buf);
  bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  size_t epos = s.find('e');
  int exp10 = std::atoi(s.c_str() + epos + 1);
  std::string digits;
  for (size_t i = 0; i < epos; ++i) {
    if (s[i] != '.') digits += s[i];
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = neg ? "-" : "";
  if (exp10 < -4 || exp10 >= 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    return out + eb;
  }
  int point = exp10 + 1;  // digits before the decimal point
  if (point <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-point), '0');
    out += digits;
  } else if (static_cast<size_t>(point) >= digits.size()) {
    out += digits;
    out.append(static_cast<size_t>(point) - digits.size(), '0');
    out += ".0";
  } else {
    out.append(digits, 0, static_cast<size_t>(point));
    out += '.';
    out.append(digits, static_cast<size_t>(point), std::string::npos);
  }
  return out;
}

namespace {

std::string PyQuote(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == static_cast<unsigned char>(q)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof(b), "\\x%02x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

void AppendPy(const Value& v, bool repr, std::string* out) {
  switch (v.kind()) {
    case Kind::kUndefined:
      if (repr) *out += "Undefined";
      return;
    case Kind::kNone:
      *out += "None";
      return;
    case Kind::kBool:
      *out += v.bool_value() ? "True" : "False";
      return;
    case Kind::kInt:
      *out += std::to_string(v.int_value());
      return;
    case Kind::kFloat:
      *out += FormatPyFloat(v.number());
      return;
    case Kind::kString:
      *out += repr ? PyQuote(v.str()) : v.str();
      return;
    case Kind::kArray: {
      bool tuple = v.is_tuple();
      *out += tuple ? '(' : '[';
      const auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) *out += ", ";
        AppendPy(items[i], true, out);
      }
      if (tuple && items.size() == 1) *out += ',';
      *out += tuple ? ')' : ']';
      return;
    }
    case Kind::kObject: {
      const ObjectData& o = v.object();
      if (o.is_namespace) *out += "<Namespace ";
      *out += '{';
      for (size_t i = 0; i < o.items.size(); ++i) {
        if (i) *out += ", ";
        *out += PyQuote(o.items[i].first) + ": ";
        AppendPy(o.items[i].second, true, out);
      }
      *out += '}';
      if (o.is_namespace) *out += '>';
      return;
    }
    case Kind::kFunction:
      *out += "<function " + v.function().name + ">";
      return;
  }
}

// Decodes one UTF-8 sequence at s[i] (advancing i); invalid bytes decode as themselves (U+0080..U+00FF).
uint32_t DecodeUtf8(const std::string& s, size_t* i) {
  unsigned char c = static_cast<unsigned char>(s[*i]);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || *i + len > s.size()) {
    ++*i;
    return c;
  }
  uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[*i + k]) & 0x3F);
  *i += len;
  return cp;
}

void AppendJsonString(const std::string& s, bool ensure_ascii, std::string* out) {
  *out += '"';
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      default: {
        char b[16];
        if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
          std::snprintf(b, sizeof(b), "\\u%04x", c);
          *out += b;
        } else if (c >= 0x80 && ensure_ascii) {
          uint32_t cp = DecodeUtf8(s, &i);
          if (cp >= 0x10000) {
            cp -= 0x10000;
            std::snprintf(b, sizeof(b), "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
          } else {
            std::snprintf(b, sizeof(b), "\\u%04x", cp);
          }
          *out += b;
          continue;
        } else {
          *out += static_cast<char>(c);
        }
      }
    }
    ++i;
  }
  *out += '"';
}

Status AppendJson(const Value& v, const JsonOptions& opt, int level, std::string* out) {
  auto newline = [&](int lvl) {
    *out += '\n';
    for (int i = 0; i < lvl; ++i) *out += *opt.indent;
  };
  const bool indent = opt.indent.has_value();
  switch (v.kind()) {
    case Kind::kUndefined:
      return InvalidArgument("tojson: Undefined is not JSON serializable");
    case Kind::kFunction:
      return InvalidArgument("tojson: function is not JSON serializable");
    case Kind::kNone:
      *out += "null";
      return Status::Ok();
    case Kind::kBool:
      *out += v.bool_value() ? "true" : "false";
      return Status::Ok();
    case Kind::kInt:
      *out += std::to_string(v.int_value());
      return Status::Ok();
    case Kind::kFloat: {
      double d = v.number();
      if (std::isnan(d)) {
        *out += "NaN";
      } else if (std::isinf(d)) {
        *out += d < 0 ? "-Infinity" : "Infinity";
      } else {
        *out += FormatPyFloat(d);
      }
      return Status::Ok();
    }
    case Kind::kString:
      AppendJsonString(v.str(), opt.ensure_ascii, out);
      return Status::Ok();
    case Kind::kArray: {
      const auto& items = v.items();
      if (items.empty()) {
        *out += "[]";
        return Status::Ok();
      }
      *out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) *out += opt.item_sep;
        if (indent) newline(level + 1);
        LS_RETURN_IF_ERROR(AppendJson(items[i], opt, level + 1, out));
      }
      if (indent) newline(level);
      *out += ']';
      return Status::Ok();
    }
    case Kind::kObject: {
      const ObjectData& o = v.object();
      if (o.is_namespace) return InvalidArgument("tojson: Namespace is not JSON serializable");
      if (o.items.empty()) {
        *out += "{}";
        return Status::Ok();
      }
      std::vector<const std::pair<std::string, Value>*> order;
      for (const auto& kv : o.items) order.push_back(&kv);
      if (opt.sort_keys) {
        std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->first < b->first; });
      }
      *out += '{';
      for (size_t i = 0; i < order.size(); ++i) {
        if (i) *out += opt.item_sep;
        if (indent) newline(level + 1);
        AppendJsonString(order[i]->first, opt.ensure_ascii, out);
        *out += opt.key_sep;
        LS_RETURN_IF_ERROR(AppendJson(order[i]->second, opt, level + 1, out));
      }
      if (indent) newline(level);
      *out += '}';
      return Status::Ok();
    }
  }
  return Status::Ok();
}

}  // namespace

std::string ToPyString(const Value& v) {
  if (v.is_string()) return v.str();
  std::string out;
  AppendPy(v, false, &out);
  return out;
}

std::string ToPyRepr(const Value& v) {
  std::string out;
  AppendPy(v, true, &out);
  return out;
}

Result<std::string> ToJson(const Value& v, const JsonOptions& options) {
  std::string out;
  LS_RETURN_IF_ERROR(AppendJson(v, options, 0, &out));
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Comparison

bool PyEquals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.number() == b.number();
    return a.int_value() == b.int_value();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.str() == b.str();
    case Kind::kArray: {
      if (a.is_tuple() != b.is_tuple()) return false;
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!PyEquals(x[i], y[i])) return false;
      }
      return true;
    }
    case Kind::kObject: {
      const ObjectData& x = a.object();
      const ObjectData& y = b.object();
      if (x.is_namespace || y.is_namespace) return a.SameIdentity(b);
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.Find(k);
        if (!other || !PyEquals(v, *other)) return false;
      }
      return true;
    }
    default:
      return a.SameIdentity(b);
  }
}

Result<int> PyCompare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.number(), y = b.number();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    int64_t x = a.int_value(), y = b.int_value();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    int c = a.str().compare(b.str());  // byte order of UTF-8 == code point order
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_array() && b.is_array() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (PyEquals(x[i], y[i])) continue;
      return PyCompare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return InvalidArgument(std::string("cannot order '") + a.TypeName() + "' and '" + b.TypeName() + "'");
}

// ---------------------------------------------------------------------------------------------------------
// UTF-8

namespace {
size_t Utf8CharLen(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  if ((c >> 3) == 0x1E) return 4;
  return 1;  // stray continuation or invalid lead byte: one unit
}
}  // namespace

size_t Utf8Length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += Utf8CharLen(static_cast<unsigned char>(s[i]))) ++n;
  return n;
}

std::vector<std::string_view> Utf8Chars(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    size_t len = std::min(Utf8CharLen(static_cast<unsigned char>(s[i])), s.size() - i);
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

}  // namespace lazyslot::jinja
