// Expression half of the Jinja parser (see jinja_parser_impl.h). Precedence, lowest first (as Jinja2):
// conditional `x if c else y`, or, and, not, comparisons (== != < <= > >= in, not in), + -, ~, * / // %, **,
// unary - +, then primary with postfix (.attr, [i], [a:b:c], calls) and filters/tests (| f, is t).
#include <string>
#include <vector>

#include "chat/jinja/jinja_parser_impl.h"

namespace lazyslot::jinja::parser_internal {

Result<ExprPtr> Parser::ParseTupleExpr(bool with_condexpr) {
  const Token start = Cur();
  LS_ASSIGN_OR_RETURN(ExprPtr first, ParseExpression(with_condexpr));
  if (!IsOp(",")) return first;
  ExprPtr tuple = NewExpr(ExprKind::kTuple, start);
  tuple->args.push_back(std::move(first));
  while (IsOp(",")) {
    Advance();
    if (Cur().type == Tok::kBlockEnd || Cur().type == Tok::kVarEnd) break;
    LS_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(with_condexpr));
    tuple->args.push_back(std::move(item));
  }
  return Done(std::move(tuple));
}

Result<ExprPtr> Parser::ParseExpression(bool with_condexpr) {
  if (!with_condexpr) return ParseOr();
  LS_ASSIGN_OR_RETURN(ExprPtr e, ParseOr());
  while (IsName("if")) {
    const Token at = Cur();
    Advance();
    LS_ASSIGN_OR_RETURN(ExprPtr cond, ParseOr());
    ExprPtr other;
    if (IsName("else")) {
      Advance();
      DepthGuard g(&nesting_);
      LS_RETURN_IF_ERROR(CheckNesting());
      LS_ASSIGN_OR_RETURN(other, ParseExpression(true));
    }
    ExprPtr c = NewExpr(ExprKind::kCond, at);
    c->args.push_back(std::move(e));
    c->args.push_back(std::move(cond));
    c->args.push_back(std::move(other));
    LS_ASSIGN_OR_RETURN(e, Done(std::move(c)));
  }
  return e;
}

Result<ExprPtr> Parser::ParseOr() {
  LS_ASSIGN_OR_RETURN(ExprPtr e, ParseAnd());
  while (IsName("or")) {
    const Token at = Cur();
    Advance();
    LS_ASSIGN_OR_RETURN(ExprPtr r, ParseAnd());
    LS_ASSIGN_OR_RETURN(e, Binary(ExprKind::kOr, "or", std::move(e), std::move(r), at));
  }
  return e;
}

Result<ExprPtr> Parser::ParseAnd() {
  LS_ASSIGN_OR_RETURN(ExprPtr e, ParseNot());
  while (IsName("and")) {
    const Token at = Cur();
    Advance();
    LS_ASSIGN_OR_RETURN(ExprPtr r, ParseNot());
    LS_ASSIGN_OR_RETURN(e, Binary(ExprKind::kAnd, "and", std::move(e), std::move(r), at));
  }
  return e;
}

Result<ExprPtr> Parser::ParseNot() {
  if (IsName("not")) {
    DepthGuard g(&nesting_);
    LS_RETURN_IF_ERROR(CheckNesting());
    const Token at = Cur();
    Advance();
    LS_ASSIGN_OR_RETURN(ExprPtr inner, ParseNot());
    ExprPtr e = NewExpr(ExprKind::kNot, at);
    e->args.push_back(std::move(inner));
    return Done(std::move(e));
  }
  return ParseCompare();
}

Result<ExprPtr> Parser::ParseCompare() {
  const Token start = Cur();
  LS_ASSIGN_OR_RETURN(ExprPtr first, ParseMath1());
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (Cur().type == Tok::kOp && (Cur().text == "==" || Cur().text == "!=" || Cur().text == "<" ||
                                   Cur().text == "<=" || Cur().text == ">" || Cur().text == ">=")) {
      op = Cur().text;
      Advance();
    } else if (IsName("in")) {
      op = "in";
      Advance();
    } else if (IsName("not") && Peek().type == Tok::kName && Peek().text == "in") {
      op = "notin";
      Advance();
      Advance();
    } else {
      break;
    }
    if (!cmp) {
      cmp = NewExpr(ExprKind::kCompare, start);
      cmp->args.push_back(std::move(first));
    }
    LS_ASSIGN_OR_RETURN(ExprPtr r, ParseMath1());
    cmp->ops.push_back(op);
    cmp->args.push_back(std::move(r));
  }
  if (!cmp) return first;
  return Done(std::move(cmp));
}

template <typename Next>
Result<ExprPtr> Parser::LeftAssoc(Next next, std::initializer_list<const char*> ops) {
  LS_ASSIGN_OR_RETURN(ExprPtr e, (this->*next)());
  while (Cur().type == Tok::kOp) {
    const char* found = nullptr;
    for (const char* op : ops) {
      if (Cur().text == op) found = op;
    }
    if (!found) break;
    const Token at = Cur();
    Advance();
    LS_ASSIGN_OR_RETURN(ExprPtr r, (this->*next)());
    LS_ASSIGN_OR_RETURN(e, Binary(ExprKind::kBinary, found, std::move(e), std::move(r), at));
  }
  return e;
}

Result<ExprPtr> Parser::ParseMath1() { return LeftAssoc(&Parser::ParseConcat, {"+", "-"}); }

Result<ExprPtr> Parser::ParseConcat() { return LeftAssoc(&Parser::ParseMath2, {"~"}); }

Result<ExprPtr> Parser::ParseMath2() { return LeftAssoc(&Parser::ParsePow, {"*", "/", "//", "%"}); }

Result<ExprPtr> Parser::ParsePow() { return LeftAssoc(&Parser::ParseUnaryFiltered, {"**"}); }

Result<ExprPtr> Parser::ParseUnaryFiltered() { return ParseUnary(true); }

Result<ExprPtr> Parser::ParseUnary(bool with_filter) {
  DepthGuard g(&nesting_);
  LS_RETURN_IF_ERROR(CheckNesting());
  ExprPtr e;
  if (IsOp("-") || IsOp("+")) {
    const Token at = Cur();
    Advance();
    LS_ASSIGN_OR_RETURN(ExprPtr inner, ParseUnary(false));
    e = NewExpr(ExprKind::kUnary, at);
    e->name = at.text;
    e->args.push_back(std::move(inner));
    LS_ASSIGN_OR_RETURN(e, Done(std::move(e)));
  } else {
    LS_ASSIGN_OR_RETURN(e, ParsePrimary());
  }
  LS_ASSIGN_OR_RETURN(e, ParsePostfix(std::move(e)));
  if (with_filter) {
    while (true) {
      if (IsOp("|")) {
        LS_ASSIGN_OR_RETURN(e, ParseFilter(std::move(e), true));
      } else if (IsName("is")) {
        LS_ASSIGN_OR_RETURN(e, ParseTest(std::move(e)));
      } else if (IsOp("(")) {
        LS_ASSIGN_OR_RETURN(e, ParseCall(std::move(e)));
      } else {
        break;
      }
    }
  }
  return e;
}

Result<ExprPtr> Parser::ParsePrimary() {
  const Token t = Cur();
  switch (t.type) {
    case Tok::kName: {
      Advance();
      ExprPtr e = NewExpr(ExprKind::kLiteral, t);
      if (t.text == "true" || t.text == "True") {
        e->literal = Value::Bool(true);
      } else if (t.text == "false" || t.text == "False") {
        e->literal = Value::Bool(false);
      } else if (t.text == "none" || t.text == "None") {
        e->literal = Value::None();
      } else {
        e->kind = ExprKind::kName;
        e->name = t.text;
      }
      return e;
    }
    case Tok::kString: {
      std::string s;
      while (Cur().type == Tok::kString) {  // adjacent literals concatenate
        s += Cur().text;
        Advance();
      }
      ExprPtr e = NewExpr(ExprKind::kLiteral, t);
      e->literal = Value::String(std::move(s));
      return e;
    }
    case Tok::kInt:
    case Tok::kFloat: {
      Advance();
      ExprPtr e = NewExpr(ExprKind::kLiteral, t);
      e->literal = t.type == Tok::kInt ? Value::Int(t.int_value) : Value::Float(t.float_value);
      return e;
    }
    case Tok::kOp:
      if (t.text == "(") return ParseParen();
      if (t.text == "[") return ParseSequence(ExprKind::kList, "]");
      if (t.text == "{") return ParseDict();
      break;
    default:
      break;
  }
  return Unexpected("an expression");
}

Result<ExprPtr> Parser::ParseParen() {
  const Token at = Cur();
  Advance();
  if (IsOp(")")) {
    Advance();
    return Done(NewExpr(ExprKind::kTuple, at));
  }
  LS_ASSIGN_OR_RETURN(ExprPtr first, ParseExpression(true));
  if (IsOp(")")) {
    Advance();
    return first;
  }
  ExprPtr tuple = NewExpr(ExprKind::kTuple, at);
  tuple->args.push_back(std::move(first));
  while (IsOp(",")) {
    Advance();
    if (IsOp(")")) break;
    LS_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(true));
    tuple->args.push_back(std::move(item));
  }
  LS_RETURN_IF_ERROR(ExpectOp(")"));
  return Done(std::move(tuple));
}

Result<ExprPtr> Parser::ParseSequence(ExprKind kind, const char* close) {
  ExprPtr e = NewExpr(kind, Cur());
  Advance();
  while (!IsOp(close)) {
    LS_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(true));
    e->args.push_back(std::move(item));
    if (!IsOp(",")) break;
    Advance();
  }
  LS_RETURN_IF_ERROR(ExpectOp(close));
  return Done(std::move(e));
}

Result<ExprPtr> Parser::ParseDict() {
  ExprPtr e = NewExpr(ExprKind::kDict, Cur());
  Advance();
  while (!IsOp("}")) {
    LS_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression(true));
    LS_RETURN_IF_ERROR(ExpectOp(":"));
    LS_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
    e->args.push_back(std::move(key));
    e->args.push_back(std::move(value));
    if (!IsOp(",")) break;
    Advance();
  }
  LS_RETURN_IF_ERROR(ExpectOp("}"));
  return Done(std::move(e));
}

Result<ExprPtr> Parser::ParsePostfix(ExprPtr e) {
  while (true) {
    const Token at = Cur();
    if (IsOp(".")) {
      Advance();
      if (Cur().type == Tok::kName) {
        ExprPtr a = NewExpr(ExprKind::kAttr, at);
        a->line = e->line;  // errors point at the start of "obj.attr"
        a->col = e->col;
        a->name = Cur().text;
        Advance();
        a->args.push_back(std::move(e));
        LS_ASSIGN_OR_RETURN(e, Done(std::move(a)));
      } else if (Cur().type == Tok::kInt) {  // foo.0 is foo[0]
        ExprPtr idx = NewExpr(ExprKind::kLiteral, Cur());
        idx->literal = Value::Int(Cur().int_value);
        Advance();
        LS_ASSIGN_OR_RETURN(e, Binary(ExprKind::kIndex, "", std::move(e), std::move(idx), at));
      } else {
        return Unexpected("an attribute name");
      }
    } else if (IsOp("[")) {
      Advance();
      LS_ASSIGN_OR_RETURN(e, ParseSubscript(std::move(e), at));
    } else if (IsOp("(")) {
      LS_ASSIGN_OR_RETURN(e, ParseCall(std::move(e)));
    } else {
      return e;
    }
  }
}

Result<ExprPtr> Parser::ParseSubscript(ExprPtr obj, const Token& at) {
  ExprPtr parts[3];
  int n = 0;
  bool is_slice = false;
  while (true) {
    if (IsOp(":")) {
      is_slice = true;
      if (++n > 2) return Unexpected("']'");
      Advance();
      continue;
    }
    if (IsOp("]")) break;
    if (parts[n]) return Unexpected("':' or ']'");
    LS_ASSIGN_OR_RETURN(parts[n], ParseExpression(true));
  }
  Advance();
  if (!is_slice) {
    if (!parts[0]) return ErrorAt(at, "empty subscript");
    return Binary(ExprKind::kIndex, "", std::move(obj), std::move(parts[0]), at);
  }
  ExprPtr s = NewExpr(ExprKind::kSlice, at);
  s->args.push_back(std::move(obj));
  for (auto& p : parts) s->args.push_back(std::move(p));
  return Done(std::move(s));
}

Status Parser::ParseArgs(Expr* target) {
  LS_RETURN_IF_ERROR(ExpectOp("("));
  while (!IsOp(")")) {
    if (IsOp("*") || IsOp("**")) return ErrorAt(Cur(), "unsupported: *args / **kwargs in calls");
    if (Cur().type == Tok::kName && Peek().type == Tok::kOp && Peek().text == "=") {
      std::string key = Cur().text;
      Advance();
      Advance();
      LS_ASSIGN_OR_RETURN(ExprPtr v, ParseExpression(true));
      target->kwargs.emplace_back(std::move(key), std::move(v));
    } else {
      if (!target->kwargs.empty()) return ErrorAt(Cur(), "positional argument follows keyword argument");
      LS_ASSIGN_OR_RETURN(ExprPtr v, ParseExpression(true));
      target->args.push_back(std::move(v));
    }
    if (!IsOp(",")) break;
    Advance();
  }
  return ExpectOp(")");
}

Result<ExprPtr> Parser::ParseCall(ExprPtr callee) {
  ExprPtr c = NewExpr(ExprKind::kCall, Cur());
  c->line = callee->line;  // errors point at the callee, not at "("
  c->col = callee->col;
  c->args.push_back(std::move(callee));
  LS_RETURN_IF_ERROR(ParseArgs(c.get()));
  return Done(std::move(c));
}

Result<std::string> Parser::DottedName() {
  LS_ASSIGN_OR_RETURN(std::string n, ExpectName());
  while (IsOp(".") && Peek().type == Tok::kName) {
    Advance();
    n += "." + Cur().text;
    Advance();
  }
  return n;
}

Result<ExprPtr> Parser::ParseFilter(ExprPtr operand, bool leading_pipe) {
  if (leading_pipe) Advance();  // '|'
  ExprPtr f = NewExpr(ExprKind::kFilter, Cur());
  LS_ASSIGN_OR_RETURN(f->name, DottedName());
  f->args.push_back(std::move(operand));
  if (IsOp("(")) LS_RETURN_IF_ERROR(ParseArgs(f.get()));
  return Done(std::move(f));
}

Result<ExprPtr> Parser::ParseTest(ExprPtr operand) {
  ExprPtr t = NewExpr(ExprKind::kTest, Cur());
  Advance();  // 'is'
  if (IsName("not")) {
    t->negated = true;
    Advance();
  }
  LS_ASSIGN_OR_RETURN(t->name, DottedName());
  t->args.push_back(std::move(operand));
  const Token& c = Cur();
  if (IsOp("(")) {
    LS_RETURN_IF_ERROR(ParseArgs(t.get()));
  } else if ((c.type == Tok::kName || c.type == Tok::kString || c.type == Tok::kInt ||
              c.type == Tok::kFloat || IsOp("[") || IsOp("{")) &&
             !IsName("else") && !IsName("or") && !IsName("and")) {
    if (IsName("is")) return ErrorAt(c, "cannot chain multiple tests with 'is'");
    // One argument without parentheses: "x is divisibleby 3", "x is sameas none".
    LS_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
    LS_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
    t->args.push_back(std::move(arg));
  }
  return Done(std::move(t));
}

}  // namespace lazyslot::jinja::parser_internal
