// Recursive-descent parser for the Jinja subset. Precedence, lowest first (as Jinja2): conditional
// `x if c else y`, or, and, not, comparisons (== != < <= > >= in, not in), + -, ~, * / // %, **, unary - +,
// then primary with postfix (.attr, [i], [a:b:c], calls) and filters/tests (| f, is t).
#include "chat/jinja_parser.h"

#include <algorithm>
#include <set>
#include <vector>

#include "chat/jinja_lexer.h"

namespace lazyslot::jinja {

namespace {

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
  Status ParseBody(std::vector<StmtPtr>* out, const std::set<std::string>& ends, std::string* end_tag) {
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

  StmtPtr NewStmt(StmtKind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->col = at.col;
    return s;
  }

  // Body of a block statement up to one of `ends`; remembers where the block opened for error messages.
  Status ParseBlockBody(const Token& opener, std::vector<StmtPtr>* out, const std::set<std::string>& ends,
                        std::string* end_tag) {
    int saved_line = open_line_, saved_col = open_col_;
    open_line_ = opener.line;
    open_col_ = opener.col;
    Status st = ParseBody(out, ends, end_tag);
    open_line_ = saved_line;
    open_col_ = saved_col;
    return st;
  }

  // Cur() is the keyword after "{%".
  Result<StmtPtr> ParseStatement() {
    const Token kw = Cur();
    const std::string& k = kw.text;
    if (k == "if") return ParseIf(kw, true);
    if (k == "for") return ParseFor(kw);
    if (k == "set") return ParseSet(kw);
    if (k == "macro") return ParseMacro(kw);
    if (k == "filter") return ParseFilterBlock(kw);
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
    static const std::set<std::string> kUnsupported = {"extends", "include", "import", "from",       "block",
                                                       "call",    "with",    "do",     "autoescape", "trans"};
    if (kUnsupported.count(k)) return ErrorAt(kw, "unsupported statement '" + k + "'");
    return ErrorAt(kw, "unknown statement '" + k + "'");
  }

  // `at_keyword`: Cur() is "if" (else it is the condition after an "elif" that ParseBody consumed).
  Result<StmtPtr> ParseIf(const Token& kw, bool at_keyword) {
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

  // Loop targets: "x", "k, v" or "(k, v)".
  Status ParseTargets(std::vector<std::string>* targets) {
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

  Result<StmtPtr> ParseFor(const Token& kw) {
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

  Result<StmtPtr> ParseSet(const Token& kw) {
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

  Result<StmtPtr> ParseMacro(const Token& kw) {
    Advance();
    auto s = NewStmt(StmtKind::kMacro, kw);
    LS_ASSIGN_OR_RETURN(s->name, ExpectName());
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
    LS_RETURN_IF_ERROR(ExpectOp(")"));
    LS_RETURN_IF_ERROR(ExpectBlockEnd());
    std::string end;
    LS_RETURN_IF_ERROR(ParseBlockBody(kw, &s->body, {"endmacro"}, &end));
    if (Cur().type == Tok::kName && Cur().text == s->name) Advance();  // {% endmacro name %}
    LS_RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }

  Result<StmtPtr> ParseFilterBlock(const Token& kw) {
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

  // ----- expressions -----

  // An expression, or an unparenthesized tuple "a, b" (as in {% set x = 1, 2 %}).
  Result<ExprPtr> ParseTupleExpr(bool with_condexpr = true) {
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

  // Nesting is counted where recursion happens: ParseUnary (parentheses, lists, unary operators), ParseNot,
  // the else-branch here, and ParseBody (blocks).
  Result<ExprPtr> ParseExpression(bool with_condexpr) {
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

  Result<ExprPtr> ParseOr() {
    LS_ASSIGN_OR_RETURN(ExprPtr e, ParseAnd());
    while (IsName("or")) {
      const Token at = Cur();
      Advance();
      LS_ASSIGN_OR_RETURN(ExprPtr r, ParseAnd());
      LS_ASSIGN_OR_RETURN(e, Binary(ExprKind::kOr, "or", std::move(e), std::move(r), at));
    }
    return e;
  }

  Result<ExprPtr> ParseAnd() {
    LS_ASSIGN_OR_RETURN(ExprPtr e, ParseNot());
    while (IsName("and")) {
      const Token at = Cur();
      Advance();
      LS_ASSIGN_OR_RETURN(ExprPtr r, ParseNot());
      LS_ASSIGN_OR_RETURN(e, Binary(ExprKind::kAnd, "and", std::move(e), std::move(r), at));
    }
    return e;
  }

  Result<ExprPtr> ParseNot() {
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

  Result<ExprPtr> ParseCompare() {
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

  // One left-associative level: operands from `next`, operators from `ops`.
  template <typename Next>
  Result<ExprPtr> LeftAssoc(Next next, std::initializer_list<const char*> ops) {
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
  Result<ExprPtr> ParseMath1() { return LeftAssoc(&Parser::ParseConcat, {"+", "-"}); }
  Result<ExprPtr> ParseConcat() { return LeftAssoc(&Parser::ParseMath2, {"~"}); }
  Result<ExprPtr> ParseMath2() { return LeftAssoc(&Parser::ParsePow, {"*", "/", "//", "%"}); }
  Result<ExprPtr> ParsePow() { return LeftAssoc(&Parser::ParseUnaryFiltered, {"**"}); }
  Result<ExprPtr> ParseUnaryFiltered() { return ParseUnary(true); }

  Result<ExprPtr> ParseUnary(bool with_filter) {
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

  Result<ExprPtr> ParsePrimary() {
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

  Result<ExprPtr> ParseParen() {
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

  Result<ExprPtr> ParseSequence(ExprKind kind, const char* close) {
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

  Result<ExprPtr> ParseDict() {
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

  Result<ExprPtr> ParsePostfix(ExprPtr e) {
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

  // After "[": index or slice.
  Result<ExprPtr> ParseSubscript(ExprPtr obj, const Token& at) {
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

  // "(" args ")" appended to `target` (a call's callee, or a filter/test whose operand is already args[0]).
  Status ParseArgs(Expr* target) {
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

  Result<ExprPtr> ParseCall(ExprPtr callee) {
    ExprPtr c = NewExpr(ExprKind::kCall, Cur());
    c->line = callee->line;  // errors point at the callee, not at "("
    c->col = callee->col;
    c->args.push_back(std::move(callee));
    LS_RETURN_IF_ERROR(ParseArgs(c.get()));
    return Done(std::move(c));
  }

  Result<std::string> DottedName() {
    LS_ASSIGN_OR_RETURN(std::string n, ExpectName());
    while (IsOp(".") && Peek().type == Tok::kName) {
      Advance();
      n += "." + Cur().text;
      Advance();
    }
    return n;
  }

  Result<ExprPtr> ParseFilter(ExprPtr operand, bool leading_pipe) {
    if (leading_pipe) Advance();  // '|'
    ExprPtr f = NewExpr(ExprKind::kFilter, Cur());
    LS_ASSIGN_OR_RETURN(f->name, DottedName());
    f->args.push_back(std::move(operand));
    if (IsOp("(")) LS_RETURN_IF_ERROR(ParseArgs(f.get()));
    return Done(std::move(f));
  }

  Result<ExprPtr> ParseTest(ExprPtr operand) {
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

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int nesting_ = 0;
  int open_line_ = 1, open_col_ = 1;
};

}  // namespace

Result<std::shared_ptr<const Program>> ParseTemplate(std::string_view source) {
  LS_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(source));
  Parser parser(std::move(tokens));
  return parser.Run();
}

}  // namespace lazyslot::jinja
