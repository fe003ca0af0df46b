// Statement execution and expression evaluation for the Jinja subset (scopes, loops, macros, operators).
#include "chat/jinja/jinja_eval.h"

#include <cmath>
#include <limits>

#include "chat/jinja/jinja_lexer.h"

namespace lazyslot::jinja {

namespace {

bool HasPosition(const std::string& msg) { return msg.rfind("line ", 0) == 0; }

Status WithPosition(const Status& st, int line, int col) {
  if (st.ok() || HasPosition(st.message())) return st;
  return Status(st.code(), PosPrefix(line, col) + st.message());
}

Status TypeError(const char* op, const Value& a, const Value& b) {
  return InvalidArgument(std::string("unsupported operand type(s) for ") + op + ": '" + a.TypeName() +
                         "' and '" + b.TypeName() + "'");
}

}  // namespace

Evaluator::Evaluator(const Program& program, const RenderLimits& limits)
    : program_(program), limits_(limits) {}

Result<std::string> Evaluator::Render(const Value& context) {
  scopes_.clear();
  scopes_.push_back(Scope{MakeGlobals(), 0});
  if (context.is_object()) {
    for (const auto& [k, v] : context.object().items) scopes_[0].vars.emplace_back(k, v);
  }
  scopes_.push_back(Scope{{}, 0});
  flow_ = Flow::kNormal;
  work_ = 0;
  call_depth_ = 0;
  eval_depth_ = 0;
  std::string out;
  LS_RETURN_IF_ERROR(ExecBody(program_.body, &out));
  flow_ = Flow::kNormal;
  return out;
}

Status Evaluator::Charge(int64_t units) {
  work_ += units;
  if (work_ > limits_.max_work) {
    return ResourceExhausted("template exceeded its work budget of " + std::to_string(limits_.max_work) +
                             " units (loop iterations, list items and string bytes built)");
  }
  return Status::Ok();
}

Status Evaluator::Append(std::string* out, const std::string& text) {
  if (out->size() + text.size() > limits_.max_output_bytes) {
    return ResourceExhausted("rendered text exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  LS_RETURN_IF_ERROR(Charge(static_cast<int64_t>(text.size())));
  out->append(text);
  return Status::Ok();
}

void Evaluator::PushScope(size_t parent) { scopes_.push_back(Scope{{}, parent}); }
void Evaluator::PopScope() { scopes_.pop_back(); }

Value Evaluator::Lookup(const std::string& name) const {
  size_t i = scopes_.size() - 1;
  while (true) {
    const auto& vars = scopes_[i].vars;
    for (auto it = vars.rbegin(); it != vars.rend(); ++it) {
      if (it->first == name) return it->second;
    }
    if (i == 0) return Value();
    i = std::min(scopes_[i].parent, i - 1);
  }
}

void Evaluator::Assign(const std::string& name, Value v) {
  auto& vars = scopes_.back().vars;
  for (auto& [k, old] : vars) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars.emplace_back(name, std::move(v));
}

// ---------------------------------------------------------------------------------------------------------
// Statements

Status Evaluator::ExecBody(const std::vector<StmtPtr>& body, std::string* out) {
  for (const StmtPtr& s : body) {
    LS_RETURN_IF_ERROR(ExecStmt(*s, out));
    if (flow_ != Flow::kNormal) break;
  }
  return Status::Ok();
}

Status Evaluator::ExecStmt(const Stmt& s, std::string* out) {
  if (++eval_depth_ > limits_.max_eval_depth) {
    --eval_depth_;
    return ResourceExhausted(PosPrefix(s.line, s.col) + "template evaluation nested too deeply");
  }
  Status st;
  switch (s.kind) {
    case StmtKind::kText:
      st = Append(out, s.text);
      break;
    case StmtKind::kOutput: {
      Result<Value> v = Eval(*s.expr);
      st = v.ok() ? Append(out, ToPyString(*v)) : v.status();
      break;
    }
    case StmtKind::kIf: {
      Result<Value> c = Eval(*s.expr);
      st = c.ok() ? ExecBody(c->Truthy() ? s.body : s.else_body, out) : c.status();
      break;
    }
    case StmtKind::kFor:
      st = ExecFor(s, out);
      break;
    case StmtKind::kSet: {
      Result<Value> v = Eval(*s.expr);
      st = v.ok() ? ExecSet(s, *v) : v.status();
      break;
    }
    case StmtKind::kSetBlock: {
      std::string text;
      st = ExecBody(s.body, &text);
      if (st.ok()) st = ExecSet(s, Value::String(std::move(text)));
      break;
    }
    case StmtKind::kMacro: {
      const Stmt* macro = &s;
      size_t def_scope = scopes_.size() - 1;
      Assign(s.name, Value::Function(s.name, [macro, def_scope](Evaluator& ev, CallArgs& args) {
               return ev.CallMacro(*macro, def_scope, args);
             }));
      break;
    }
    case StmtKind::kFilterBlock: {
      std::string text;
      st = ExecBody(s.body, &text);
      if (!st.ok()) break;
      PushScope(scopes_.size() - 1);
      Assign(kBodyVar, Value::String(std::move(text)));
      Result<Value> v = Eval(*s.expr);
      PopScope();
      st = v.ok() ? Append(out, ToPyString(*v)) : v.status();
      break;
    }
    case StmtKind::kBreak:
      flow_ = Flow::kBreak;
      break;
    case StmtKind::kContinue:
      flow_ = Flow::kContinue;
      break;
    case StmtKind::kBlock:
      st = ExecBody(s.body, out);
      break;
    case StmtKind::kCallBlock:
      st = ExecCallBlock(s, out);
      break;
  }
  --eval_depth_;
  return WithPosition(st, s.line, s.col);
}

Status Evaluator::ExecSet(const Stmt& s, const Value& v) {
  if (v.depth() >= kMaxValueDepth) {
    return InvalidArgument("value nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
  }
  if (!s.attr.empty()) {
    Value target = Lookup(s.targets[0]);
    if (!target.is_namespace()) {
      return InvalidArgument("cannot assign attribute '" + s.attr + "' on '" + s.targets[0] +
                             "': not a namespace()");
    }
    target.object().Set(s.attr, v);
    return Status::Ok();
  }
  if (s.targets.size() == 1) {
    Assign(s.targets[0], v);
    return Status::Ok();
  }
  LS_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  if (items.size() != s.targets.size()) {
    return InvalidArgument("cannot unpack " + std::to_string(items.size()) + " values into " +
                           std::to_string(s.targets.size()) + " names");
  }
  for (size_t i = 0; i < items.size(); ++i) Assign(s.targets[i], items[i]);
  return Status::Ok();
}

// One `loop` object per for-statement, updated in place each iteration (as Jinja's LoopContext): cheaper than
// a fresh dict per iteration. Slots are fixed so the update is a handful of stores.
namespace {
enum LoopSlot { kIndex, kIndex0, kRevindex, kRevindex0, kFirst, kLast, kPrevitem, kNextitem, kLength };
}  // namespace

Value Evaluator::MakeLoop(size_t n, std::shared_ptr<size_t> current) {
  std::vector<std::pair<std::string, Value>> loop = {
      {"index", Value()},       {"index0", Value()},       {"revindex", Value()},
      {"revindex0", Value()},   {"first", Value()},        {"last", Value()},
      {"previtem", Value()},    {"nextitem", Value()},     {"length", Value::Int(static_cast<int64_t>(n))},
      {"depth", Value::Int(1)}, {"depth0", Value::Int(0)},
  };
  loop.emplace_back("cycle", Value::Function("cycle", [current](Evaluator&, CallArgs& args) -> Result<Value> {
                      if (args.positional.empty())
                        return InvalidArgument("loop.cycle() needs at least one value");
                      return args.positional[*current % args.positional.size()];
                    }));
  return Value::Object(std::move(loop));
}

void Evaluator::UpdateLoop(const Value& loop, const std::vector<Value>& items, size_t i) {
  auto& slots = loop.object().items;
  const int64_t n = static_cast<int64_t>(items.size());
  const int64_t k = static_cast<int64_t>(i);
  slots[kIndex].second = Value::Int(k + 1);
  slots[kIndex0].second = Value::Int(k);
  slots[kRevindex].second = Value::Int(n - k);
  slots[kRevindex0].second = Value::Int(n - k - 1);
  slots[kFirst].second = Value::Bool(k == 0);
  slots[kLast].second = Value::Bool(k == n - 1);
  slots[kPrevitem].second = i > 0 ? items[i - 1] : Value();
  slots[kNextitem].second = i + 1 < items.size() ? items[i + 1] : Value();
}

Status Evaluator::ExecFor(const Stmt& s, std::string* out) {
  LS_ASSIGN_OR_RETURN(Value iterable, Eval(*s.expr));
  Result<std::vector<Value>> iterated = Iterate(iterable);
  if (!iterated.ok()) return WithPosition(iterated.status(), s.expr->line, s.expr->col);
  std::vector<Value> items = std::move(iterated).value();
  auto bind = [&](const Value& item) -> Status {
    if (s.targets.size() == 1) {
      Assign(s.targets[0], item);
      return Status::Ok();
    }
    LS_ASSIGN_OR_RETURN(std::vector<Value> parts, Iterate(item));
    if (parts.size() != s.targets.size()) {
      return InvalidArgument("cannot unpack " + std::to_string(parts.size()) + " values into " +
                             std::to_string(s.targets.size()) + " loop variables");
    }
    for (size_t i = 0; i < parts.size(); ++i) Assign(s.targets[i], parts[i]);
    return Status::Ok();
  };
  if (s.cond) {  // "for x in xs if c": filter first, so loop.length counts the kept items
    std::vector<Value> kept;
    for (const Value& item : items) {
      LS_RETURN_IF_ERROR(Charge(kIterationCost));
      PushScope(scopes_.size() - 1);
      Status st = bind(item);
      Result<Value> c = st.ok() ? Eval(*s.cond) : Result<Value>(st);
      PopScope();
      if (!c.ok()) return c.status();
      if (c->Truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) return ExecBody(s.else_body, out);
  auto current = std::make_shared<size_t>(0);
  const Value loop = MakeLoop(items.size(), current);
  for (size_t i = 0; i < items.size(); ++i) {
    LS_RETURN_IF_ERROR(Charge(kIterationCost));
    PushScope(scopes_.size() - 1);
    *current = i;
    UpdateLoop(loop, items, i);
    Assign("loop", loop);
    Status st = bind(items[i]);
    if (st.ok()) st = ExecBody(s.body, out);
    PopScope();
    LS_RETURN_IF_ERROR(st);
    if (flow_ == Flow::kBreak) {
      flow_ = Flow::kNormal;
      break;
    }
    flow_ = Flow::kNormal;
  }
  return Status::Ok();
}

Result<Value> Evaluator::CallMacro(const Stmt& macro, size_t def_scope, CallArgs& args) {
  if (call_depth_ >= limits_.max_call_depth) {
    return ResourceExhausted("macro calls nested deeper than " + std::to_string(limits_.max_call_depth) +
                             " (runaway recursion in '" + macro.name + "'?)");
  }
  if (args.positional.size() > macro.params.size() && !macro.uses_varargs) {
    return InvalidArgument("macro '" + macro.name + "' takes not more than " +
                           std::to_string(macro.params.size()) + " argument(s)");
  }
  // Keywords that name no parameter: `caller` (from a call block) is always bound; others go to `kwargs`
  // when the body reads it, else they are an error (as Jinja2).
  std::vector<std::pair<std::string, Value>> extra_kwargs;
  Value caller;
  for (const auto& [k, v] : args.keyword) {
    bool known = false;
    for (const auto& p : macro.params) known = known || p == k;
    if (known) continue;
    if (k == "caller") {
      caller = v;
    } else if (macro.uses_kwargs) {
      extra_kwargs.emplace_back(k, v);
    } else {
      return InvalidArgument("macro '" + macro.name + "' has no parameter '" + k + "'");
    }
  }
  LS_RETURN_IF_ERROR(Charge(kIterationCost));
  PushScope(std::min(def_scope, scopes_.size() - 1));
  ++call_depth_;
  Status st;
  for (size_t i = 0; i < macro.params.size() && st.ok(); ++i) {
    Value v = args.Get(i, macro.params[i]);
    if (v.is_undefined() && i >= args.positional.size() && macro.defaults[i]) {
      bool given = false;
      for (const auto& kv : args.keyword) given = given || kv.first == macro.params[i];
      if (!given) {
        Result<Value> d = Eval(*macro.defaults[i]);
        if (!d.ok()) {
          st = d.status();
          break;
        }
        v = *d;
      }
    }
    Assign(macro.params[i], v);
  }
  if (macro.uses_varargs) {
    std::vector<Value> rest;
    for (size_t i = macro.params.size(); i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
    Assign("varargs", Value::Array(std::move(rest), /*is_tuple=*/true));
  }
  if (macro.uses_kwargs) Assign("kwargs", Value::Object(std::move(extra_kwargs)));
  if (!caller.is_undefined()) Assign("caller", caller);
  std::string out;
  if (st.ok()) st = ExecBody(macro.body, &out);
  flow_ = Flow::kNormal;
  --call_depth_;
  PopScope();
  LS_RETURN_IF_ERROR(st);
  return Value::String(std::move(out));
}

// {% call [(params)] m(args) %}body{% endcall %}: m(args, caller=<body as a macro>) and print the result.
Status Evaluator::ExecCallBlock(const Stmt& s, std::string* out) {
  const Stmt* block = &s;
  const size_t def_scope = scopes_.size() - 1;
  const Expr& call = *s.expr;
  LS_ASSIGN_OR_RETURN(Value fn, Eval(*call.args[0]));
  if (!fn.is_function()) {
    return WithPosition(InvalidArgument(std::string("call block: '") + fn.TypeName() + "' is not a macro"),
                        call.line, call.col);
  }
  CallArgs args;
  LS_RETURN_IF_ERROR(EvalArgs(call, 1, &args));
  args.keyword.emplace_back("caller",
                            Value::Function("caller", [block, def_scope](Evaluator& ev, CallArgs& a) {
                              return ev.CallMacro(*block, def_scope, a);
                            }));
  Result<Value> r = Call(fn, args);
  if (!r.ok()) return WithPosition(r.status(), call.line, call.col);
  return Append(out, ToPyString(*r));
}

Result<Value> Evaluator::Call(const Value& fn, CallArgs& args) {
  if (!fn.is_function()) {
    return InvalidArgument(std::string("'") + fn.TypeName() + "' object is not callable");
  }
  return fn.function().fn(*this, args);
}

// ---------------------------------------------------------------------------------------------------------
// Expressions

Result<Value> Evaluator::Eval(const Expr& e) {
  if (++eval_depth_ > limits_.max_eval_depth) {
    --eval_depth_;
    return ResourceExhausted(PosPrefix(e.line, e.col) + "template evaluation nested too deeply");
  }
  Result<Value> r = EvalInner(e);
  --eval_depth_;
  if (!r.ok()) return WithPosition(r.status(), e.line, e.col);
  return r;
}

Status Evaluator::EvalArgs(const Expr& e, size_t first, CallArgs* args) {
  for (size_t i = first; i < e.args.size(); ++i) {
    LS_ASSIGN_OR_RETURN(Value v, Eval(*e.args[i]));
    args->positional.push_back(std::move(v));
  }
  for (const auto& [k, expr] : e.kwargs) {
    LS_ASSIGN_OR_RETURN(Value v, Eval(*expr));
    args->keyword.emplace_back(k, std::move(v));
  }
  return Status::Ok();
}

// EvalInner only dispatches: each case lives in its own non-inlined function so the frame that recursion
// stacks per expression level holds one case's locals, not all of them.
Result<Value> Evaluator::EvalInner(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      return e.literal;
    case ExprKind::kName:
      return Lookup(e.name);
    case ExprKind::kList:
    case ExprKind::kTuple:
    case ExprKind::kDict:
      return EvalCollection(e);
    case ExprKind::kAttr:
    case ExprKind::kIndex:
    case ExprKind::kSlice:
      return EvalAccess(e);
    case ExprKind::kCall:
      return EvalCall(e);
    case ExprKind::kFilter:
    case ExprKind::kTest:
      return EvalFilterOrTest(e);
    case ExprKind::kUnary:
    case ExprKind::kBinary:
    case ExprKind::kCompare:
      return EvalOperator(e);
    case ExprKind::kAnd:
    case ExprKind::kOr:
    case ExprKind::kNot:
    case ExprKind::kCond:
      return EvalLogic(e);
  }
  return Internal("unknown expression kind");
}

__attribute__((noinline)) Result<Value> Evaluator::EvalCollection(const Expr& e) {
  if (e.kind == ExprKind::kDict) {
    std::vector<std::pair<std::string, Value>> items;
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      LS_ASSIGN_OR_RETURN(Value k, Eval(*e.args[i]));
      LS_ASSIGN_OR_RETURN(Value v, Eval(*e.args[i + 1]));
      items.emplace_back(ToPyString(k), std::move(v));
    }
    LS_RETURN_IF_ERROR(Charge(static_cast<int64_t>(items.size())));
    return Value::Object(std::move(items));
  }
  std::vector<Value> items;
  items.reserve(e.args.size());
  for (const auto& a : e.args) {
    LS_ASSIGN_OR_RETURN(Value v, Eval(*a));
    items.push_back(std::move(v));
  }
  LS_RETURN_IF_ERROR(Charge(static_cast<int64_t>(items.size())));
  return Value::Array(std::move(items), e.kind == ExprKind::kTuple);
}

__attribute__((noinline)) Result<Value> Evaluator::EvalAccess(const Expr& e) {
  LS_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0]));
  if (e.kind == ExprKind::kAttr) return GetAttr(obj, e.name);
  if (e.kind == ExprKind::kIndex) {
    LS_ASSIGN_OR_RETURN(Value key, Eval(*e.args[1]));
    return GetItem(obj, key);
  }
  Value parts[3];
  for (int i = 0; i < 3; ++i) {
    if (e.args[i + 1]) {
      LS_ASSIGN_OR_RETURN(parts[i], Eval(*e.args[i + 1]));
    }
  }
  LS_ASSIGN_OR_RETURN(Value r, SliceValue(obj, parts[0], parts[1], parts[2]));
  LS_RETURN_IF_ERROR(Charge(static_cast<int64_t>(r.is_string() ? r.str().size() : r.items().size())));
  return r;
}

__attribute__((noinline)) Result<Value> Evaluator::EvalFilterOrTest(const Expr& e) {
  CallArgs args;
  LS_RETURN_IF_ERROR(EvalArgs(e, 0, &args));
  if (e.kind == ExprKind::kFilter) return ApplyFilter(*this, e.name, args);
  LS_ASSIGN_OR_RETURN(bool r, ApplyTest(*this, e.name, args));
  return Value::Bool(r != e.negated);
}

__attribute__((noinline)) Result<Value> Evaluator::EvalOperator(const Expr& e) {
  LS_ASSIGN_OR_RETURN(Value left, Eval(*e.args[0]));
  if (e.kind == ExprKind::kUnary) {
    if (!left.is_number()) {
      return InvalidArgument("bad operand type for unary " + e.name + ": '" + left.TypeName() + "'");
    }
    if (e.name == "+") return left.is_float() ? left : Value::Int(left.int_value());
    if (left.is_float()) return Value::Float(-left.number());
    if (left.int_value() == std::numeric_limits<int64_t>::min()) return InvalidArgument("integer overflow");
    return Value::Int(-left.int_value());
  }
  if (e.kind == ExprKind::kBinary) {
    LS_ASSIGN_OR_RETURN(Value right, Eval(*e.args[1]));
    return EvalBinary(e.name, left, right);
  }
  for (size_t i = 0; i < e.ops.size(); ++i) {  // chained comparison: a < b < c is (a < b) and (b < c)
    LS_ASSIGN_OR_RETURN(Value right, Eval(*e.args[i + 1]));
    LS_ASSIGN_OR_RETURN(bool ok, EvalCompareOp(e.ops[i], left, right));
    if (!ok) return Value::Bool(false);
    left = std::move(right);
  }
  return Value::Bool(true);
}

__attribute__((noinline)) Result<Value> Evaluator::EvalLogic(const Expr& e) {
  if (e.kind == ExprKind::kCond) {
    LS_ASSIGN_OR_RETURN(Value c, Eval(*e.args[1]));
    if (c.Truthy()) return Eval(*e.args[0]);
    if (e.args[2]) return Eval(*e.args[2]);
    return Value();
  }
  LS_ASSIGN_OR_RETURN(Value a, Eval(*e.args[0]));
  if (e.kind == ExprKind::kNot) return Value::Bool(!a.Truthy());
  if (e.kind == ExprKind::kAnd ? !a.Truthy() : a.Truthy()) return a;  // Python returns the deciding operand
  return Eval(*e.args[1]);
}

__attribute__((noinline)) Result<Value> Evaluator::EvalCall(const Expr& e) {
  const Expr& callee = *e.args[0];
  Value fn;
  CallArgs args;
  if (callee.kind == ExprKind::kAttr) {
    LS_ASSIGN_OR_RETURN(Value obj, Eval(*callee.args[0]));
    if (IsMethod(obj, callee.name)) {
      LS_RETURN_IF_ERROR(EvalArgs(e, 1, &args));
      return CallMethod(*this, obj, callee.name, args);
    }
    fn = GetAttr(obj, callee.name);
    if (!fn.is_function()) {
      return InvalidArgument(std::string("'") + obj.TypeName() + "' object has no method '" + callee.name +
                             "'");
    }
  } else {
    LS_ASSIGN_OR_RETURN(fn, Eval(callee));
    if (fn.is_undefined() && callee.kind == ExprKind::kName) {
      return InvalidArgument("'" + callee.name + "' is undefined (not a known function or macro)");
    }
  }
  LS_RETURN_IF_ERROR(EvalArgs(e, 1, &args));
  return Call(fn, args);
}

Result<bool> Evaluator::EvalCompareOp(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return PyEquals(a, b);
  if (op == "!=") return !PyEquals(a, b);
  if (op == "in") return Contains(b, a);
  if (op == "notin") {
    LS_ASSIGN_OR_RETURN(bool in, Contains(b, a));
    return !in;
  }
  LS_ASSIGN_OR_RETURN(int c, PyCompare(a, b));
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;  // ">="
}

Result<Value> Evaluator::EvalBinary(const std::string& op, const Value& a, const Value& b) {
  const size_t max_out = limits_.max_output_bytes;
  if (op == "~") {
    std::string r = ToPyString(a);
    const std::string rb = ToPyString(b);
    if (r.size() + rb.size() > max_out) return ResourceExhausted("string longer than the output limit");
    LS_RETURN_IF_ERROR(Charge(static_cast<int64_t>(r.size() + rb.size())));
    return Value::String(r + rb);
  }
  const bool nums = a.is_number() && b.is_number();
  const bool any_float = a.is_float() || b.is_float();
  if (op == "+") {
    if (nums) {
      if (any_float) return Value::Float(a.number() + b.number());
      int64_t r;
      if (__builtin_add_overflow(a.int_value(), b.int_value(), &r))
        return InvalidArgument("integer overflow");
      return Value::Int(r);
    }
    if (a.is_string() && b.is_string()) {
      if (a.str().size() + b.str().size() > max_out)
        return ResourceExhausted("string longer than the output limit");
      LS_RETURN_IF_ERROR(Charge(static_cast<int64_t>(a.str().size() + b.str().size())));
      return Value::String(a.str() + b.str());
    }
    if (limits_.concat_none_as_empty && ((a.is_string() && (b.is_undefined() || b.is_none())) ||
                                         (b.is_string() && (a.is_undefined() || a.is_none())))) {
      return a.is_string() ? a : b;
    }
    if (a.is_array() && b.is_array() && a.is_tuple() == b.is_tuple()) {
      std::vector<Value> items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      LS_RETURN_IF_ERROR(Charge(static_cast<int64_t>(items.size())));
      return Value::Array(std::move(items), a.is_tuple());
    }
    return TypeError("+", a, b);
  }
  if (op == "*") {
    if (nums) {
      if (any_float) return Value::Float(a.number() * b.number());
      int64_t r;
      if (__builtin_mul_overflow(a.int_value(), b.int_value(), &r))
        return InvalidArgument("integer overflow");
      return Value::Int(r);
    }
    const Value* seq = (a.is_string() || a.is_array()) ? &a : &b;
    const Value* count = seq == &a ? &b : &a;
    if ((seq->is_string() || seq->is_array()) && (count->is_int() || count->is_bool())) {
      int64_t n = std::max<int64_t>(0, count->int_value());
      size_t unit = seq->is_string() ? seq->str().size() : seq->items().size();
      if (unit > 0 && static_cast<uint64_t>(n) > max_out / unit) {
        return ResourceExhausted("repetition result longer than the output limit");
      }
      LS_RETURN_IF_ERROR(Charge(static_cast<int64_t>(unit) * n));
      if (seq->is_string()) {
        std::string r;
        r.reserve(unit * static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) r += seq->str();
        return Value::String(std::move(r));
      }
      std::vector<Value> items;
      for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq->items().begin(), seq->items().end());
      return Value::Array(std::move(items), seq->is_tuple());
    }
    return TypeError("*", a, b);
  }
  if (op == "%" && a.is_string()) return PercentFormat(a.str(), b);
  if (!nums) return TypeError(op.c_str(), a, b);
  if (op == "-") {
    if (any_float) return Value::Float(a.number() - b.number());
    int64_t r;
    if (__builtin_sub_overflow(a.int_value(), b.int_value(), &r)) return InvalidArgument("integer overflow");
    return Value::Int(r);
  }
  if (op == "/") {
    if (b.number() == 0) return InvalidArgument("division by zero");
    return Value::Float(a.number() / b.number());
  }
  if (op == "//" || op == "%") {
    if (b.number() == 0) return InvalidArgument(op == "//" ? "integer division by zero" : "modulo by zero");
    if (any_float) {
      double x = a.number(), y = b.number();
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      if (op == "%") return Value::Float(m);
      return Value::Float(std::floor((x - m) / y + 0.5));  // exact quotient of (x - m) / y
    }
    int64_t x = a.int_value(), y = b.int_value();
    if (x == std::numeric_limits<int64_t>::min() && y == -1) return InvalidArgument("integer overflow");
    int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {
      m += y;
      --q;
    }
    return Value::Int(op == "%" ? m : q);
  }
  if (op == "**") {
    if (!any_float && b.int_value() >= 0) {
      int64_t base = a.int_value(), exp = b.int_value(), r = 1;
      while (exp > 0) {
        if (exp & 1) {
          if (__builtin_mul_overflow(r, base, &r)) return InvalidArgument("integer overflow");
        }
        exp >>= 1;
        if (exp > 0 && __builtin_mul_overflow(base, base, &base)) return InvalidArgument("integer overflow");
      }
      return Value::Int(r);
    }
    return Value::Float(std::pow(a.number(), b.number()));
  }
  return InvalidArgument("unknown operator '" + op + "'");
}

}  // namespace lazyslot::jinja
