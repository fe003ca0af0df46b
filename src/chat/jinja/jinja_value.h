// Dynamic values of the chat-template (Jinja2 subset) interpreter: Python-like None/bool/int/float/str/list/
// tuple/dict/namespace/callable plus Jinja's Undefined, with Python's rules for printing, truthiness,
// equality, ordering and json.dumps. Containers are shared and immutable once built (namespaces excepted).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"

namespace lazyslot::jinja {

// Nesting limit for containers (JSON input and values built by templates); keeps every recursive walk
// (printing, tojson, equality, destruction) far from the stack limit.
inline constexpr int kMaxValueDepth = 256;

class Value;
class Evaluator;
struct CallArgs;
struct ArrayData;
struct ObjectData;
struct FunctionData;

// A native function or a bound method / macro; gets the evaluator for limits and callbacks.
using NativeFn = std::function<Result<Value>(Evaluator&, CallArgs&)>;

enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kFunction };

class Value {
 public:
  Value() = default;  // Undefined
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value String(std::string s);
  static Value Array(std::vector<Value> items, bool is_tuple = false);
  static Value Object(std::vector<std::pair<std::string, Value>> items);
  static Value Namespace();
  static Value Function(std::string name, NativeFn fn);

  // JSON input (request messages, tools): objects keep their key order. Errors past kMaxValueDepth.
  static Result<Value> FromJson(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_function() const { return kind_ == Kind::kFunction; }
  bool is_namespace() const;
  bool is_tuple() const;

  bool bool_value() const { return b_; }
  int64_t int_value() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }  // bool counts as int
  double number() const;  // int, bool or float as double
  const std::string& str() const;
  const std::vector<Value>& items() const;  // array or tuple
  ObjectData& object() const;               // dict or namespace
  const FunctionData& function() const;

  int depth() const;  // container nesting: 0 for scalars, 1 for a flat list
  bool Truthy() const;
  const char* TypeName() const;  // Python's type name, for error messages
  bool SameIdentity(const Value& other) const { return kind_ == other.kind_ && p_ == other.p_; }

 private:
  Kind kind_ = Kind::kUndefined;
  union {
    bool b_;
    int64_t i_ = 0;
    double f_;
  };
  std::shared_ptr<void> p_;  // std::string, ArrayData, ObjectData or FunctionData by kind_
};

struct ArrayData {
  std::vector<Value> items;
  bool is_tuple = false;
  int depth = 1;
};

// Insertion-ordered dict (Python 3.7+ semantics) with string keys; indexed by a hash map once it grows.
struct ObjectData {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;
  int depth = 1;

  const Value* Find(std::string_view key) const;
  void Set(const std::string& key, Value v);  // replaces in place or appends

 private:
  void Reindex() const;
  mutable std::unordered_map<std::string, size_t> index_;
};

struct FunctionData {
  std::string name;
  NativeFn fn;
};

// Positional and keyword arguments of a call, filter or test (the operand of a filter is positional[0]).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // positional[i] if given, else the keyword `name`, else undefined.
  const Value& Get(size_t i, std::string_view name) const;
  bool Has(size_t i, std::string_view name) const { return !Get(i, name).is_undefined(); }
};

// Python str(v): what {{ v }} prints. Strings print raw, containers print their items' repr().
std::string ToPyString(const Value& v);
// Python repr(v): quoted strings, as inside printed lists/dicts.
std::string ToPyRepr(const Value& v);
// Python repr(float): shortest round-trip digits, "1.0", "1e+16", "inf", "nan".
std::string FormatPyFloat(double d);

// Python json.dumps options; the defaults are transformers' tojson filter (ensure_ascii=False, key order
// kept).
struct JsonOptions {
  std::optional<std::string> indent;  // unset: one line; else newline + this per level
  std::string item_sep = ", ";        // json.dumps uses "," when indent is set
  std::string key_sep = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // true: non-ASCII as \uXXXX (surrogate pairs above U+FFFF)
};
Result<std::string> ToJson(const Value& v, const JsonOptions& options);

// Python ==, and <; Compare errors for unorderable types (e.g. str < int) and returns -1/0/1.
bool PyEquals(const Value& a, const Value& b);
Result<int> PyCompare(const Value& a, const Value& b);

// UTF-8 helpers: strings are UTF-8 bytes but Python indexes and counts code points. (Encoding a code point
// is core/utf8.h's AppendUtf8.)
size_t Utf8Length(std::string_view s);
std::vector<std::string_view> Utf8Chars(std::string_view s);

}  // namespace lazyslot::jinja
