// Recursive-descent parser for the Jinja subset, statement half: template text, {{ }}, and the block tags
// (if/for/set/macro/call/filter/generation/break/continue). Expressions: jinja_parser_expr.cpp.
#include "chat/jinja/jinja_parser.h"

#include <string>
#include <vector>

#include "chat/jinja/jinja_lexer.h"
#include "chat/jinja/jinja_parser_impl.h"

namespace lazyslot::jinja {

namespace parser_internal {

namespace {

// Whether `name` is read anywhere in the expression or statements, nested macro definitions excluded
// (they have their own scope). Recursion is bounded by the parser's nesting and expression-depth limits.
bool ExprUsesName(const Expr* e, const char* name) {
  if (!e) return false;
  if (e->kind == ExprKind::kName && e->name == name) return true;
  for (const auto& a : e->args) {
    if (ExprUsesName(a.get(), name)) return true;
  }
  for (const auto& kv : e->kwargs) {
    if (ExprUsesName(kv.second.get(), name)) return true;
  }
  return false;
}

}  // namespace

bool BodyUsesName(const std::vector<StmtPtr>& body, const char* name) {
  for (const StmtPtr& s : body) {
    if (s->kind == StmtKind::kMacro) continue;
    if (ExprUsesName(s->expr.get(), name) || ExprUsesName(s->cond.get(), name)) return true;
    for (const auto& d : s->defaults) {
      if (ExprUsesName(d.get(), name)) return true;
    }
    if (BodyUsesName(s->body, name) || BodyUsesName(s->else_body, name)) return true;
  }
  return false;
}

Status Parser::ParseBody(std::vector<StmtPtr>* out, const std::set<std::string>& ends, std::string* end_tag) {
  DepthGuard g(&nesting_);
  LS_RETURN_IF_ERROR(CheckNesting());
  while (true) {
    const Token& t = Cur();
    if (t.type == Tok::kEof) {
      if (!ends.empty()) {
        std::string list;
        for (const auto& e : ends) list += (list.empty() ? "'" : " or '") + e + "'";
        return ErrorAt(t, "unexpected end of template: expected " + list + " to close the block at line " +
                              std::to_string(open_line_) + ", column " + std::to_string(open_col_));
      }
      return Status::Ok();
    }
    if (t.type == Tok::kText) {
      auto s = NewStmt(StmtKind::kText, t);
      s->text = t.text;
      out->push_back(std::move(s));
      Advance();
      continue;
    }
    if (t.type == Tok::kVarBegin) {
      auto s = NewStmt(StmtKind::kOutput, t);
      Advance();
      LS_ASSIGN_OR_RETURN(s->expr, ParseTupleExpr());
      if (Cur().type != Tok::kVarEnd) return Unexpected("'}}'");
      Advance();
      out->push_back(std::move(s));
      continue;
    }
    if (t.type != Tok::kBlockBegin) return Unexpected("template text or a tag");
    const Token& kw = Peek();
    if (kw.type != Tok::kName) {
      Advance();
      return Unexpected("a statement keyword");
    }
    if (ends.count(kw.text)) {
      Advance();
      *end_tag = kw.text;
      Advance();
      return Status::Ok();
    }
    Advance();
    LS_ASSIGN_OR_RETURN(StmtPtr s, ParseStatement());
    out->push_back(std::move(s));
  }
}

Status Parser::ParseBlockBody(const Token& opener, std::vector<StmtPtr>* out,
                              const std::set<std::string>& ends, std::string* end_tag) {
  int saved_line = open_line_, saved_col = open_col_;
  open_line_ = opener.line;
  open_col_ = opener.col;
  Status st = ParseBody(out, ends, end_tag);
  open_line_ = saved_line;
  open_col_ = saved_col;
  return st;
}

Result<StmtPtr> Parser::ParseStatement() {
  const Token kw = Cur();
  const std::string& k = kw.text;
  if (k == "if") return ParseIf(kw, true);
  if (k == "for") return ParseFor(kw);
  if (k == "set") return ParseSet(kw);
  if (k == "macro") return ParseMacro(kw);
  if (k == "filter") return ParseFilterBlock(kw);
  if (k == "call") return ParseCallBlock(kw);
  if (k == "break" || k == "continue") {
    Advance();
    LS_RETURN_IF_ERROR(ExpectBlockEnd());
    return NewStmt(k == "break" ? StmtKind::kBreak : StmtKind::kContinue, kw);
  }
  if (k == "generation") {  // transformers' assistant-mask marker: renders its body unchanged
    Advance();
    LS_RETURN_IF_ERROR(ExpectBlockEnd());
    auto s = NewStmt(StmtKind::kBlock, kw);
    std::string end;
    LS_RETURN_IF_ERROR(ParseBlockBody(kw, &s->body, {"endgeneration"}, &end));
    LS_RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
  static const std::set<std::string> kUnsupported = {"extends", "include", "import",     "from", "block",
                                                     "with",    "do",      "autoescape", "trans"};
  if (kUnsupported.count(k)) return ErrorAt(kw, "unsupported statement '" + k + "'");
  return ErrorAt(kw, "unknown statement '" + k + "'");
}

Result<StmtPtr> Parser::ParseIf(const Token& kw, bool at_keyword) {
  if (at_keyword) Advance();
  auto s = NewStmt(StmtKind::kIf, kw);
  LS_ASSIGN_OR_RETURN(s->expr, ParseTupleExpr());
  LS_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string end;
  LS_RETURN_IF_ERROR(ParseBlockBody(kw, &s->body, {"elif", "else", "endif"}, &end));
  if (end == "elif") {
    const Token elif_tok = toks_[pos_ - 1];
    LS_ASSIGN_OR_RETURN(StmtPtr nested, ParseIf(elif_tok, false));  // consumes through endif
    s->else_body.push_back(std::move(nested));
    return s;
  }
  if (end == "else") {
    LS_RETURN_IF_ERROR(ExpectBlockEnd());
    LS_RETURN_IF_ERROR(ParseBlockBody(kw, &s->else_body, {"endif"}, &end));
  }
  LS_RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

Status Parser::ParseTargets(std::vector<std::string>* targets) {
  bool paren = IsOp("(");
  if (paren) Advance();
  while (true) {
    LS_ASSIGN_OR_RETURN(std::string n, ExpectName());
    targets->push_back(n);
    if (!IsOp(",")) break;
    Advance();
    if (Cur().type != Tok::kName) break;  // trailing comma
  }
  if (paren) LS_RETURN_IF_ERROR(ExpectOp(")"));
  return Status::Ok();
}

Result<StmtPtr> Parser::ParseFor(const Token& kw) {
  Advance();
  auto s = NewStmt(StmtKind::kFor, kw);
  LS_RETURN_IF_ERROR(ParseTargets(&s->targets));
  if (!IsName("in")) return Unexpected("'in'");
  Advance();
  LS_ASSIGN_OR_RETURN(s->expr, ParseTupleExpr(/*with_condexpr=*/false));
  if (IsName("if")) {
    Advance();
    LS_ASSIGN_OR_RETURN(s->cond, ParseExpression(true));
  }
  if (IsName("recursive")) return ErrorAt(Cur(), "unsupported: recursive for loops");
  LS_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string end;
  LS_RETURN_IF_ERROR(ParseBlockBody(kw, &s->body, {"else", "endfor"}, &end));
  if (end == "else") {
    LS_RETURN_IF_ERROR(ExpectBlockEnd());
    LS_RETURN_IF_ERROR(ParseBlockBody(kw, &s->else_body, {"endfor"}, &end));
  }
  LS_RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

Result<StmtPtr> Parser::ParseSet(const Token& kw) {
  Advance();
  auto s = NewStmt(StmtKind::kSet, kw);
  LS_ASSIGN_OR_RETURN(std::string first, ExpectName());
  s->targets.push_back(first);
  if (IsOp(".")) {
    Advance();
    LS_ASSIGN_OR_RETURN(s->attr, ExpectName());
  } else {
    while (IsOp(",")) {
      Advance();
      LS_ASSIGN_OR_RETURN(std::string n, ExpectName());
      s->targets.push_back(n);
    }
  }
  if (IsOp("=")) {
    Advance();
    LS_ASSIGN_OR_RETURN(s->expr, ParseTupleExpr());
    LS_RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
  if (s->targets.size() != 1) return Unexpected("'='");
  if (Cur().type != Tok::kBlockEnd) return Unexpected("'=' or '%}'");
  Advance();
  s->kind = StmtKind::kSetBlock;
  std::string end;
  LS_RETURN_IF_ERROR(ParseBlockBody(kw, &s->body, {"endset"}, &end));
  LS_RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

Status Parser::ParseParams(Stmt* s) {
  LS_RETURN_IF_ERROR(ExpectOp("("));
  while (!IsOp(")")) {
    LS_ASSIGN_OR_RETURN(std::string p, ExpectName());
    s->params.push_back(p);
    ExprPtr def;
    if (IsOp("=")) {
      Advance();
      LS_ASSIGN_OR_RETURN(def, ParseExpression(true));
    }
    s->defaults.push_back(std::move(def));
    if (!IsOp(",")) break;
    Advance();
  }
  return ExpectOp(")");
}

Result<StmtPtr> Parser::ParseMacro(const Token& kw) {
  Advance();
  auto s = NewStmt(StmtKind::kMacro, kw);
  LS_ASSIGN_OR_RETURN(s->name, ExpectName());
  LS_RETURN_IF_ERROR(ParseParams(s.get()));
  LS_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string end;
  LS_RETURN_IF_ERROR(ParseBlockBody(kw, &s->body, {"endmacro"}, &end));
  if (Cur().type == Tok::kName && Cur().text == s->name) Advance();  // {% endmacro name %}
  LS_RETURN_IF_ERROR(ExpectBlockEnd());
  s->uses_varargs = BodyUsesName(s->body, "varargs");
  s->uses_kwargs = BodyUsesName(s->body, "kwargs");
  return s;
}

Result<StmtPtr> Parser::ParseCallBlock(const Token& kw) {
  Advance();
  auto s = NewStmt(StmtKind::kCallBlock, kw);
  s->name = "caller";
  if (IsOp("(")) LS_RETURN_IF_ERROR(ParseParams(s.get()));
  LS_ASSIGN_OR_RETURN(s->expr, ParseExpression(true));
  if (s->expr->kind != ExprKind::kCall) return ErrorAt(kw, "expected a macro call after 'call'");
  LS_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string end;
  LS_RETURN_IF_ERROR(ParseBlockBody(kw, &s->body, {"endcall"}, &end));
  LS_RETURN_IF_ERROR(ExpectBlockEnd());
  s->uses_varargs = BodyUsesName(s->body, "varargs");
  s->uses_kwargs = BodyUsesName(s->body, "kwargs");
  return s;
}

Result<StmtPtr> Parser::ParseFilterBlock(const Token& kw) {
  Advance();
  auto s = NewStmt(StmtKind::kFilterBlock, kw);
  ExprPtr operand = NewExpr(ExprKind::kName, kw);
  operand->name = kBodyVar;
  LS_ASSIGN_OR_RETURN(s->expr, ParseFilter(std::move(operand), /*leading_pipe=*/false));
  while (IsOp("|")) {
    LS_ASSIGN_OR_RETURN(s->expr, ParseFilter(std::move(s->expr), true));
  }
  LS_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string end;
  LS_RETURN_IF_ERROR(ParseBlockBody(kw, &s->body, {"endfilter"}, &end));
  LS_RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

}  // namespace parser_internal

Result<std::shared_ptr<const Program>> ParseTemplate(std::string_view source) {
  LS_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(source));
  parser_internal::Parser parser(std::move(tokens));
  return parser.Run();
}

}  // namespace lazyslot::jinja
