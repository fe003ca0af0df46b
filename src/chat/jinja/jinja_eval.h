// Interpreter of the chat-template Jinja subset: walks a parsed Program with a variable context and renders
// text. Bounded on untrusted input: output size, total work, call and evaluation depth are all capped, and
// every failure (including the template's raise_exception) comes back as a Status with a line/column.
// With the default limits, parsing and rendering the worst-case template use under 1 MiB of thread stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/jinja/jinja_ast.h"
#include "chat/jinja/jinja_value.h"
#include "core/status.h"

namespace lazyslot::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t{64} << 20;  // rendered text
  // Work units: kIterationCost per loop iteration or macro call, one per list item or string byte built.
  // Bounds time (a few seconds at most) and memory.
  int64_t max_work = int64_t{1} << 28;
  int max_call_depth = 100;    // nested macro calls
  int max_eval_depth = 1000;   // nested Eval/Exec frames in total: at most about 1 MiB of C++ stack
  int64_t max_range = 100000;  // range() length, as Jinja's sandbox
  // The clock strftime_now() reads: unset, the real local time (as transformers' datetime.now()); set, this
  // instant (seconds since the Unix epoch) in UTC, so tests render fixed dates.
  std::optional<int64_t> now_unix;
  // llama.cpp's renderer treats an undefined or none operand of `+` next to a string as the empty string
  // (Jinja2 raises); templates such as firefunction-v2 rely on it. Off: Jinja2's TypeError.
  bool concat_none_as_empty = false;
  // llama.cpp's renderer also gives the sequence filters select, reject, selectattr, rejectattr, map, unique
  // and items an empty list for a none input (Jinja2 raises "'NoneType' object is not iterable");
  // Functionary v3.1's template filters its `tools`, set to none without tools, that way. Off: Jinja2's
  // error.
  bool none_filters_as_empty = false;
};

// Work units charged per loop iteration and macro call (each costs far more than copying a byte).
inline constexpr int64_t kIterationCost = 32;

class Evaluator {
 public:
  Evaluator(const Program& program, const RenderLimits& limits);

  // Renders the program. `context` must be a dict; its entries become the template's variables, shadowing
  // the built-in globals (range, namespace, dict, raise_exception, strftime_now).
  Result<std::string> Render(const Value& context);

  // For built-ins: spend `units` of the work budget.
  Status Charge(int64_t units);
  const RenderLimits& limits() const { return limits_; }
  // Calls a function value (native, bound method or macro).
  Result<Value> Call(const Value& fn, CallArgs& args);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  struct Scope {
    std::vector<std::pair<std::string, Value>> vars;
    size_t parent;  // index of the enclosing visible scope (a macro's points at its definition site)
  };

  Status ExecBody(const std::vector<StmtPtr>& body, std::string* out);
  Status ExecStmt(const Stmt& s, std::string* out);
  Status ExecFor(const Stmt& s, std::string* out);
  Status ExecSet(const Stmt& s, const Value& v);
  Status ExecCallBlock(const Stmt& s, std::string* out);
  Status Append(std::string* out, const std::string& text);

  Result<Value> Eval(const Expr& e);
  Result<Value> EvalInner(const Expr& e);
  Result<Value> EvalCall(const Expr& e);
  Result<Value> EvalCollection(const Expr& e);
  Result<Value> EvalAccess(const Expr& e);
  Result<Value> EvalFilterOrTest(const Expr& e);
  Result<Value> EvalOperator(const Expr& e);
  Result<Value> EvalLogic(const Expr& e);
  Result<Value> EvalBinary(const std::string& op, const Value& a, const Value& b);
  Result<bool> EvalCompareOp(const std::string& op, const Value& a, const Value& b);
  Status EvalArgs(const Expr& e, size_t first, CallArgs* args);

  Result<Value> CallMacro(const Stmt& macro, size_t def_scope, CallArgs& args);
  void PushScope(size_t parent);
  void PopScope();
  Value MakeLoop(size_t n, std::shared_ptr<size_t> current);
  void UpdateLoop(const Value& loop, const std::vector<Value>& items, size_t i);

  Value Lookup(const std::string& name) const;
  void Assign(const std::string& name, Value v);

  const Program& program_;
  RenderLimits limits_;
  std::vector<Scope>
      scopes_;  // [0] globals, [1] template top level, then loops/macros; lookups follow parent
  Flow flow_ = Flow::kNormal;
  int64_t work_ = 0;
  int call_depth_ = 0;
  int eval_depth_ = 0;
};

// ----- built-ins (jinja_builtins.cpp, jinja_filters.cpp) -----

// Python/Jinja attribute access `obj.name`: dict methods win over keys (as Python's getattr-first lookup),
// then keys; bound methods come back as function values. Missing: undefined.
Value GetAttr(const Value& obj, const std::string& name);
// Subscript `obj[key]`: items first, then attributes (Jinja's getitem). Missing or out of range: undefined.
Value GetItem(const Value& obj, const Value& key);
// Dotted path as used by map/selectattr/sort attribute= ("a.b", "0").
Value GetAttrPath(const Value& obj, const std::string& path);
// obj[start:stop:step] on strings (code points), lists and tuples.
Result<Value> SliceValue(const Value& obj, const Value& start, const Value& stop, const Value& step);
// Python `item in container`.
Result<bool> Contains(const Value& container, const Value& item);
// The items a `for` loop visits: list items, dict keys, string characters; undefined is empty.
Result<std::vector<Value>> Iterate(const Value& v);

// Python's printf-style `fmt % args` (%s %r %d %i %f %x %%; args a tuple/list for several, a dict for %(k)s).
Result<Value> PercentFormat(const std::string& fmt, const Value& args);

bool IsMethod(const Value& obj, const std::string& name);
Result<Value> CallMethod(Evaluator& ev, const Value& obj, const std::string& name, CallArgs& args);
Result<Value> ApplyFilter(Evaluator& ev, const std::string& name, CallArgs& args);
Result<bool> ApplyTest(Evaluator& ev, const std::string& name, CallArgs& args);
bool HasFilter(const std::string& name);
bool HasTest(const std::string& name);
// range, dict, namespace, raise_exception, strftime_now.
std::vector<std::pair<std::string, Value>> MakeGlobals();

// Errors raised by the template itself through raise_exception() start with this prefix.
inline constexpr const char* kRaisedPrefix = "template raised an exception: ";

}  // namespace lazyslot::jinja
