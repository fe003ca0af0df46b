// Parser of the chat-template Jinja subset: tokens (jinja_lexer) to a Program (jinja_ast), following Jinja2's
// grammar and operator precedence. Errors carry "line L, column C".
#pragma once

#include <memory>
#include <string_view>

#include "chat/jinja/jinja_ast.h"
#include "core/status.h"

namespace lazyslot::jinja {

// Lexes and parses a whole template. Unsupported constructs (extends, include, import, with, do,
// recursive loops) are parse errors naming their position.
Result<std::shared_ptr<const Program>> ParseTemplate(std::string_view source);

}  // namespace lazyslot::jinja
