// Internal to the parser (jinja_parser.cpp: statements, jinja_parser_expr.cpp: expressions): the
// recursive-descent Parser over jinja_lexer tokens. Not part of the chat layer's interface.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "chat/jinja/jinja_ast.h"
#include "chat/jinja/jinja_lexer.h"
#include "core/status.h"

namespace lazyslot::jinja::parser_internal {

// Whether a statement list reads the variable `name` (nested macro bodies excluded).
bool BodyUsesName(const std::vector<StmtPtr>& body, const char* name);

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Result<std::shared_ptr<const Program>> Run() {
    auto program = std::make_shared<Program>();
    std::string end_tag;
    LS_RETURN_IF_ERROR(ParseBody(&program->body, {}, &end_tag));
    return std::shared_ptr<const Program>(std::move(program));
  }

 private:
  // RAII nesting counter: every recursive production that can nest takes one.
  struct DepthGuard {
    explicit DepthGuard(int* d) : d_(d) { ++*d_; }
    ~DepthGuard() { --*d_; }
    int* d_;
  };

  const Token& Cur() const { return toks_[pos_]; }
  const Token& Peek(size_t k = 1) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  void Advance() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool IsOp(const char* op) const { return Cur().type == Tok::kOp && Cur().text == op; }
  bool IsName(const char* name) const { return Cur().type == Tok::kName && Cur().text == name; }

  Status ErrorAt(const Token& t, const std::string& msg) const {
    return InvalidArgument(PosPrefix(t.line, t.col) + msg);
  }
  std::string Describe(const Token& t) const {
    switch (t.type) {
      case Tok::kEof:
        return "end of template";
      case Tok::kText:
        return "template text";
      case Tok::kVarBegin:
        return "'{{'";
      case Tok::kVarEnd:
        return "'}}'";
      case Tok::kBlockBegin:
        return "'{%'";
      case Tok::kBlockEnd:
        return "'%}'";
      case Tok::kString:
        return "string literal";
      case Tok::kInt:
      case Tok::kFloat:
        return "number '" + t.text + "'";
      default:
        return "'" + t.text + "'";
    }
  }
  Status Unexpected(const std::string& wanted) const {
    return ErrorAt(Cur(), "expected " + wanted + ", got " + Describe(Cur()));
  }
  Status ExpectOp(const char* op) {
    if (!IsOp(op)) return Unexpected(std::string("'") + op + "'");
    Advance();
    return Status::Ok();
  }
  Status ExpectBlockEnd() {
    if (Cur().type != Tok::kBlockEnd) return Unexpected("'%}'");
    Advance();
    return Status::Ok();
  }
  Result<std::string> ExpectName() {
    if (Cur().type != Tok::kName) return Unexpected("a name");
    std::string n = Cur().text;
    Advance();
    return n;
  }
  Status CheckNesting() const {
    if (nesting_ > kMaxNesting) {
      return ErrorAt(Cur(), "template nested deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    return Status::Ok();
  }

  ExprPtr NewExpr(ExprKind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->col = at.col;
    return e;
  }
  // Sets the node's depth from its children; rejects trees deeper than kMaxExprDepth.
  Result<ExprPtr> Done(ExprPtr e) {
    int d = 0;
    for (const auto& a : e->args) {
      if (a) d = std::max(d, a->depth);
    }
    for (const auto& kv : e->kwargs) d = std::max(d, kv.second->depth);
    e->depth = d + 1;
    if (e->depth > kMaxExprDepth) {
      return InvalidArgument(PosPrefix(e->line, e->col) + "expression nested deeper than " +
                             std::to_string(kMaxExprDepth) + " levels");
    }
    return e;
  }
  Result<ExprPtr> Binary(ExprKind kind, std::string op, ExprPtr l, ExprPtr r, const Token& at) {
    ExprPtr e = NewExpr(kind, at);
    e->name = std::move(op);
    e->args.push_back(std::move(l));
    e->args.push_back(std::move(r));
    return Done(std::move(e));
  }

  // ----- statements -----

  // Parses statements until a block tag whose keyword is in `ends` (consumed up to the keyword; the tag's
  // remainder is left for the caller) or end of input (only valid when `ends` is empty).
  Status ParseBody(std::vector<StmtPtr>* out, const std::set<std::string>& ends, std::string* end_tag);

  StmtPtr NewStmt(StmtKind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->col = at.col;
    return s;
  }

  // Body of a block statement up to one of `ends`; remembers where the block opened for error messages.
  Status ParseBlockBody(const Token& opener, std::vector<StmtPtr>* out, const std::set<std::string>& ends,
                        std::string* end_tag);

  // Cur() is the keyword after "{%".
  Result<StmtPtr> ParseStatement();

  // `at_keyword`: Cur() is "if" (else it is the condition after an "elif" that ParseBody consumed).
  Result<StmtPtr> ParseIf(const Token& kw, bool at_keyword);

  // Loop targets: "x", "k, v" or "(k, v)".
  Status ParseTargets(std::vector<std::string>* targets);

  Result<StmtPtr> ParseFor(const Token& kw);

  Result<StmtPtr> ParseSet(const Token& kw);

  Result<StmtPtr> ParseMacro(const Token& kw);
  // "(" name [= default], ... ")" into s->params / s->defaults.
  Status ParseParams(Stmt* s);
  // {% call [(params)] macro(args) %} body {% endcall %}
  Result<StmtPtr> ParseCallBlock(const Token& kw);

  Result<StmtPtr> ParseFilterBlock(const Token& kw);

  // ----- expressions -----

  // An expression, or an unparenthesized tuple "a, b" (as in {% set x = 1, 2 %}).
  Result<ExprPtr> ParseTupleExpr(bool with_condexpr = true);

  // Nesting is counted where recursion happens: ParseUnary (parentheses, lists, unary operators), ParseNot,
  // the else-branch here, and ParseBody (blocks).
  Result<ExprPtr> ParseExpression(bool with_condexpr);

  Result<ExprPtr> ParseOr();

  Result<ExprPtr> ParseAnd();

  Result<ExprPtr> ParseNot();

  Result<ExprPtr> ParseCompare();

  // One left-associative level: operands from `next`, operators from `ops`.
  template <typename Next>
  Result<ExprPtr> LeftAssoc(Next next, std::initializer_list<const char*> ops);
  Result<ExprPtr> ParseMath1();
  Result<ExprPtr> ParseConcat();
  Result<ExprPtr> ParseMath2();
  Result<ExprPtr> ParsePow();
  Result<ExprPtr> ParseUnaryFiltered();

  Result<ExprPtr> ParseUnary(bool with_filter);

  Result<ExprPtr> ParsePrimary();

  Result<ExprPtr> ParseParen();

  Result<ExprPtr> ParseSequence(ExprKind kind, const char* close);

  Result<ExprPtr> ParseDict();

  Result<ExprPtr> ParsePostfix(ExprPtr e);

  // After "[": index or slice.
  Result<ExprPtr> ParseSubscript(ExprPtr obj, const Token& at);

  // "(" args ")" appended to `target` (a call's callee, or a filter/test whose operand is already args[0]).
  Status ParseArgs(Expr* target);

  Result<ExprPtr> ParseCall(ExprPtr callee);

  Result<std::string> DottedName();

  Result<ExprPtr> ParseFilter(ExprPtr operand, bool leading_pipe);

  Result<ExprPtr> ParseTest(ExprPtr operand);

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int nesting_ = 0;
  int open_line_ = 1, open_col_ = 1;
};

}  // namespace lazyslot::jinja::parser_internal
