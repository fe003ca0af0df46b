// Syntax tree of the chat-template Jinja subset: expressions and statements, as built by jinja_parser and
// walked by jinja_eval. Every node keeps its source line/column for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/jinja_value.h"

namespace lazyslot::jinja {

// Limits on the tree's shape; the parser rejects templates beyond them so parsing and evaluation recursion
// stay bounded (parsing a maximally nested template needs about 0.5 MiB of stack).
inline constexpr int kMaxNesting = 100;    // nested blocks / parentheses / lists / unary operators
inline constexpr int kMaxExprDepth = 256;  // depth of one expression tree (long a+b+c... chains included)

enum class ExprKind : uint8_t {
  kLiteral,  // literal
  kName,     // name
  kList,     // args = items
  kTuple,    // args = items
  kDict,     // args = key0, value0, key1, value1, ...
  kAttr,     // args[0] . name
  kIndex,    // args[0] [ args[1] ]
  kSlice,    // args[0] [ args[1] : args[2] : args[3] ]  (each of 1..3 may be null)
  kCall,     // args[0] ( args[1..], kwargs )
  kFilter,   // args[0] | name ( args[1..], kwargs )
  kTest,     // args[0] is [not] name ( args[1..], kwargs )
  kUnary,    // name ("-" or "+") args[0]
  kBinary,   // args[0] name args[1]; name in + - * / // % ** ~
  kCompare,  // args[0] ops[0] args[1] ops[1] args[2] ...; ops in == != < <= > >= in notin
  kAnd,      // args[0] and args[1]
  kOr,       // args[0] or args[1]
  kNot,      // not args[0]
  kCond,     // args[0] if args[1] else args[2] (args[2] may be null: undefined)
};

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int line = 1, col = 1;
  int depth = 1;  // 1 + deepest child
  Value literal;
  std::string name;
  std::vector<std::unique_ptr<Expr>> args;
  std::vector<std::pair<std::string, std::unique_ptr<Expr>>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;  // kTest: "is not"
};
using ExprPtr = std::unique_ptr<Expr>;

enum class StmtKind : uint8_t {
  kText,         // text
  kOutput,       // {{ expr }}
  kIf,           // if expr: body else else_body (elif = nested kIf alone in else_body)
  kFor,          // for targets in expr [if cond]: body else else_body
  kSet,          // set targets[0] (or targets[0].attr, or tuple targets) = expr
  kSetBlock,     // set targets[0] (or .attr): body rendered to a string
  kMacro,        // macro name(params = defaults): body
  kFilterBlock,  // filter ...: body rendered, then expr applied (its innermost operand is kBodyVar)
  kBreak,
  kContinue,
  kBlock,      // a transparent container, e.g. {% generation %} ... {% endgeneration %}
  kCallBlock,  // call expr (a kCall) with `caller` = a macro of params/defaults/body (name "caller")
};

// The name under which kFilterBlock binds its rendered body for its filter chain.
inline constexpr const char* kBodyVar = "\x01body";

struct Stmt {
  StmtKind kind = StmtKind::kText;
  int line = 1, col = 1;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  std::vector<std::string> targets;
  std::string attr;
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // one per param, null where none
  // kMacro: whether the body names Jinja's special macro variables; extra positional arguments go to
  // `varargs` and unknown keywords to `kwargs` only then (as Jinja2 decides at compile time).
  bool uses_varargs = false, uses_kwargs = false;
  std::vector<std::unique_ptr<Stmt>> body, else_body;
};
using StmtPtr = std::unique_ptr<Stmt>;

struct Program {
  std::vector<StmtPtr> body;
};

}  // namespace lazyslot::jinja
