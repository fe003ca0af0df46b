// Lexer of the chat-template Jinja subset: splits template source into text and tag tokens, applying the
// whitespace rules chat templates are written for (transformers: trim_blocks=True, lstrip_blocks=True,
// '-' and '+' modifiers, one trailing newline dropped, newlines normalized to "\n").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace lazyslot::jinja {

enum class Tok : uint8_t {
  kText,        // literal template text (already whitespace-trimmed); also the body of {% raw %}
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword (if, for, true, None, ...)
  kString,      // string literal, escapes decoded
  kInt,
  kFloat,
  kOp,  // operator or punctuation: + - * / // % ** ~ == != < <= > >= = . : | , ( ) [ ] { }
  kEof,
};

struct Token {
  Tok type = Tok::kEof;
  std::string text;  // text, name, decoded string or operator
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;  // 1-based position of the token's first byte in the (newline-normalized) source
  int col = 1;
};

// Tokenizes `source`; errors name the line and column (e.g. an unterminated string or tag).
Result<std::vector<Token>> Lex(std::string_view source);

// "line L, column C: " prefix shared by parse and render errors.
std::string PosPrefix(int line, int col);

}  // namespace lazyslot::jinja
