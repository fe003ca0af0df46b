// Jinja lexer: text/tag splitting with Jinja2's whitespace control, then expression tokens inside tags.
#include "chat/jinja/jinja_lexer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "chat/jinja/jinja_value.h"
#include "core/utf8.h"

namespace lazyslot::jinja {

std::string PosPrefix(int line, int col) {
  return "line " + std::to_string(line) + ", column " + std::to_string(col) + ": ";
}

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Result<std::vector<Token>> Run() {
    size_t pos = 0;
    bool strip_next_text = false;  // previous tag ended with '-'
    bool line_starting = true;     // text begins at a line start (template start or after a trimmed '\n')
    const size_t n = src_.size();
    while (pos < n) {
      size_t tag = FindTagStart(pos);
      std::string text = src_.substr(pos, tag - pos);
      if (strip_next_text) {
        size_t k = 0;
        while (k < text.size() && IsSpace(text[k])) ++k;
        text.erase(0, k);
      }
      if (tag == n) {
        EmitText(std::move(text), pos);
        break;
      }
      char kind = src_[tag + 1];  // '{', '%' or '#'
      char mod = tag + 2 < n ? src_[tag + 2] : '\0';
      if (mod == '-') {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      } else if (mod != '+' && kind != '{') {
        // lstrip_blocks: drop spaces/tabs between the line start and a block or comment tag.
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
            std::all_of(text.begin() + static_cast<std::ptrdiff_t>(l_pos), text.end(), IsSpace)) {
          text.erase(l_pos);
        }
      }
      EmitText(std::move(text), pos);
      size_t body = tag + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      size_t end = 0;
      if (kind == '#') {
        LS_RETURN_IF_ERROR(LexComment(tag, body, &end, &strip_next_text, &line_starting));
      } else if (kind == '%' && IsRawBegin(body)) {
        LS_RETURN_IF_ERROR(LexRaw(tag, body, &end, &strip_next_text, &line_starting));
      } else {
        LS_RETURN_IF_ERROR(LexTag(tag, kind, body, &end, &strip_next_text, &line_starting));
      }
      pos = end;
    }
    Token eof;
    eof.type = Tok::kEof;
    SetPos(&eof, n);
    tokens_.push_back(eof);
    return std::move(tokens_);
  }

 private:
  void SetPos(Token* t, size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    t->line = static_cast<int>(line);
    t->col = static_cast<int>(offset - line_starts_[line - 1] + 1);
  }

  Status ErrorAt(size_t offset, const std::string& msg) const {
    Token t;
    SetPos(&t, offset);
    return InvalidArgument(PosPrefix(t.line, t.col) + msg);
  }

  size_t FindTagStart(size_t pos) const {
    while (true) {
      size_t p = src_.find('{', pos);
      if (p == std::string::npos || p + 1 >= src_.size()) return src_.size();
      char c = src_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      pos = p + 1;
    }
  }

  void EmitText(std::string text, size_t offset) {
    if (text.empty()) return;
    Token t;
    t.type = Tok::kText;
    t.text = std::move(text);
    SetPos(&t, offset);
    tokens_.push_back(std::move(t));
  }

  void Emit(Tok type, std::string text, size_t offset) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    SetPos(&t, offset);
    tokens_.push_back(std::move(t));
  }

  // After a tag's closing delimiter at `close_end`: '-' strips all following whitespace (as part of the next
  // text), plain block/comment ends eat one '\n' (trim_blocks), '+' keeps everything.
  size_t AfterClose(size_t close_end, char mod, bool trim_blocks, bool* strip_next, bool* line_starting) {
    *strip_next = mod == '-';
    *line_starting = false;
    if (mod == '-') {
      // Jinja's match for "-%}\s*" ends at a newline if the whitespace does; lstrip of the next tag sees
      // that.
      size_t k = close_end;
      while (k < src_.size() && IsSpace(src_[k])) ++k;
      *line_starting = k > close_end && src_[k - 1] == '\n';
      return close_end;
    }
    if (mod != '+' && trim_blocks && close_end < src_.size() && src_[close_end] == '\n') {
      *line_starting = true;
      return close_end + 1;
    }
    return close_end;
  }

  Status LexComment(size_t tag, size_t body, size_t* end, bool* strip_next, bool* line_starting) {
    size_t close = src_.find("#}", body);
    if (close == std::string::npos) return ErrorAt(tag, "unterminated comment '{#'");
    char mod = (close > body && (src_[close - 1] == '-' || src_[close - 1] == '+')) ? src_[close - 1] : '\0';
    *end = AfterClose(close + 2, mod, true, strip_next, line_starting);
    return Status::Ok();
  }

  bool IsRawBegin(size_t body) const {
    size_t k = body;
    while (k < src_.size() && IsSpace(src_[k])) ++k;
    if (src_.compare(k, 3, "raw") != 0) return false;
    k += 3;
    if (k < src_.size() && IsNameChar(src_[k])) return false;
    while (k < src_.size() && IsSpace(src_[k])) ++k;
    return src_.compare(k, 2, "%}") == 0 || src_.compare(k, 3, "-%}") == 0;
  }

  Status LexRaw(size_t tag, size_t body, size_t* end, bool* strip_next, bool* line_starting) {
    size_t k = src_.find("%}", body);
    bool strip_start = src_[k - 1] == '-';
    size_t content = k + 2;
    if (strip_start) {
      while (content < src_.size() && IsSpace(src_[content])) ++content;
    }
    // Find {%[-+]? endraw [-+]?%}
    size_t search = content;
    while (true) {
      size_t open = src_.find("{%", search);
      if (open == std::string::npos) return ErrorAt(tag, "unterminated '{% raw %}' block (missing endraw)");
      size_t p = open + 2;
      char mod = (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ? src_[p] : '\0';
      if (mod) ++p;
      while (p < src_.size() && IsSpace(src_[p])) ++p;
      if (src_.compare(p, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      p += 6;
      while (p < src_.size() && IsSpace(src_[p])) ++p;
      char close_mod = '\0';
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) close_mod = src_[p++];
      if (src_.compare(p, 2, "%}") != 0) {
        search = open + 2;
        continue;
      }
      std::string text = src_.substr(content, open - content);
      if (mod == '-') {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      } else if (mod != '+') {
        size_t l_pos = text.rfind('\n');
        if (l_pos != std::string::npos &&
            std::all_of(text.begin() + static_cast<std::ptrdiff_t>(l_pos) + 1, text.end(), IsSpace)) {
          text.erase(l_pos + 1);
        }
      }
      EmitText(std::move(text), content);
      *end = AfterClose(p + 2, close_mod, true, strip_next, line_starting);
      return Status::Ok();
    }
  }

  Status LexTag(size_t tag, char kind, size_t body, size_t* end, bool* strip_next, bool* line_starting) {
    const bool is_var = kind == '{';
    const char closer = is_var ? '}' : '%';
    Emit(is_var ? Tok::kVarBegin : Tok::kBlockBegin, "", tag);
    size_t p = body;
    std::string brackets;  // open ( [ { not yet closed
    const size_t n = src_.size();
    while (true) {
      while (p < n && IsSpace(src_[p])) ++p;
      if (p >= n) return ErrorAt(tag, std::string("unclosed '") + (is_var ? "{{" : "{%") + "' tag");
      // Tag end: "-%}", "+%}", "%}". "}}" inside an open "{" is two closing braces (a dict literal may end
      // a {{ }} tag), anywhere else it ends the tag so an unclosed "[" or "(" is reported by the parser.
      if (!is_var || brackets.empty() || brackets.back() != '{') {
        char mod = '\0';
        size_t q = p;
        if ((src_[q] == '-' || src_[q] == '+') && q + 1 < n && src_[q + 1] == closer) mod = src_[q++];
        if (src_[q] == closer && q + 1 < n && src_[q + 1] == '}') {
          Emit(is_var ? Tok::kVarEnd : Tok::kBlockEnd, "", p);
          *end = AfterClose(q + 2, mod, !is_var, strip_next, line_starting);
          return Status::Ok();
        }
      }
      char c = src_[p];
      if (IsNameStart(c)) {
        size_t s = p;
        while (p < n && IsNameChar(src_[p])) ++p;
        Emit(Tok::kName, src_.substr(s, p - s), s);
      } else if (IsDigit(c)) {
        LS_RETURN_IF_ERROR(LexNumber(&p));
      } else if (c == '\'' || c == '"') {
        LS_RETURN_IF_ERROR(LexString(&p));
      } else {
        static const char* kOps2[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op;
        for (const char* o : kOps2) {
          if (src_.compare(p, 2, o) == 0) op = o;
        }
        if (op.empty()) {
          if (std::string_view("+-*/%~[](){}<>=.:|,;").find(c) == std::string_view::npos) {
            return ErrorAt(p, std::string("unexpected character '") + c + "' in tag");
          }
          op = std::string(1, c);
        }
        if (op == "(" || op == "[" || op == "{") brackets += op[0];
        if ((op == ")" || op == "]" || op == "}") && !brackets.empty()) brackets.pop_back();
        Emit(Tok::kOp, op, p);
        p += op.size();
      }
    }
  }

  Status LexNumber(size_t* pos) {
    size_t p = *pos, s = p;
    const size_t n = src_.size();
    auto digits = [&]() {
      while (p < n && (IsDigit(src_[p]) || (src_[p] == '_' && p + 1 < n && IsDigit(src_[p + 1])))) ++p;
    };
    digits();
    bool is_float = false;
    if (p + 1 < n && src_[p] == '.' && IsDigit(src_[p + 1])) {
      is_float = true;
      ++p;
      digits();
    }
    if (p < n && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < n && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < n && IsDigit(src_[q])) {
        is_float = true;
        p = q;
        digits();
      }
    }
    std::string lit;
    for (size_t i = s; i < p; ++i) {
      if (src_[i] != '_') lit += src_[i];
    }
    Token t;
    SetPos(&t, s);
    t.text = lit;
    if (is_float) {
      t.type = Tok::kFloat;
      t.float_value = std::strtod(lit.c_str(), nullptr);
    } else {
      t.type = Tok::kInt;
      errno = 0;
      char* e = nullptr;
      long long v = std::strtoll(lit.c_str(), &e, 10);
      if (errno == ERANGE) return ErrorAt(s, "integer literal out of range: " + lit);
      t.int_value = v;
    }
    tokens_.push_back(std::move(t));
    *pos = p;
    return Status::Ok();
  }

  static int HexVal(char c) {
    if (IsDigit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Python string literal escapes (\n \t \\ \' \" \xHH \uHHHH \UHHHHHHHH \ooo ...); unknown escapes stay
  // verbatim, as Python's unicode-escape decoding leaves them.
  Status LexString(size_t* pos) {
    const size_t n = src_.size();
    size_t s = *pos;
    char quote = src_[s];
    size_t p = s + 1;
    std::string out;
    while (true) {
      if (p >= n) return ErrorAt(s, "unterminated string literal");
      char c = src_[p];
      if (c == quote) {
        ++p;
        break;
      }
      if (c != '\\' || p + 1 >= n) {
        out += c;
        ++p;
        continue;
      }
      char e = src_[p + 1];
      p += 2;
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case '\n':
          break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          size_t len = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
          uint32_t cp = 0;
          for (size_t i = 0; i < len; ++i) {
            int h = p + i < n ? HexVal(src_[p + i]) : -1;
            if (h < 0) return ErrorAt(p - 2, std::string("truncated \\") + e + " escape in string literal");
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          p += len;
          if (cp > 0x10FFFF) return ErrorAt(p - 2 - len, "invalid \\U escape in string literal");
          AppendUtf8(cp, &out);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int i = 0; i < 2 && p < n && src_[p] >= '0' && src_[p] <= '7'; ++i)
              cp = cp * 8 + (src_[p++] - '0');
            AppendUtf8(cp, &out);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    Emit(Tok::kString, std::move(out), s);
    *pos = p;
    return Status::Ok();
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

Result<std::vector<Token>> Lex(std::string_view source) {
  // Jinja normalizes "\r\n" and "\r" to "\n" and drops one trailing newline (keep_trailing_newline=False).
  std::string src;
  src.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      src += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      src += source[i];
    }
  }
  if (!src.empty() && src.back() == '\n') src.pop_back();
  Lexer lexer(std::move(src));
  return lexer.Run();
}

}  // namespace lazyslot::jinja
