// Python str semantics needed by the Jinja built-ins: strip/split/case mapping/splitlines/format on UTF-8.
// Case mapping covers ASCII only (non-ASCII letters pass through unchanged).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja/jinja_value.h"
#include "core/status.h"

namespace lazyslot::jinja::text {

// str.strip/lstrip/rstrip: `chars` is a set of code points; null means Unicode whitespace.
std::string Strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split(): runs of whitespace, no empty parts; maxsplit < 0 is unlimited.
std::vector<std::string> SplitWhitespace(std::string_view s, int64_t maxsplit);
// str.rsplit(): the same, splitting from the right (the leftover keeps its leading whitespace).
std::vector<std::string> RSplitWhitespace(std::string_view s, int64_t maxsplit);
// str.split(sep, maxsplit) and str.rsplit(sep, maxsplit); sep must be non-empty.
std::vector<std::string> Split(std::string_view s, std::string_view sep, int64_t maxsplit, bool from_right);
// str.splitlines(keepends=False).
std::vector<std::string> SplitLines(std::string_view s);
// str.replace(old, new, count); count < 0 replaces all; empty `old` inserts between code points.
std::string Replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);

std::string Upper(std::string_view s);
std::string Lower(std::string_view s);
std::string Capitalize(std::string_view s);  // first upper, rest lower
std::string PyTitle(std::string_view s);     // str.title(): upper after any non-letter
std::string JinjaTitle(std::string_view s);  // |title: words split at whitespace and -([{<
bool IsSpaceCodepoint(std::string_view ch);

// str.format(*args, **kwargs) with "{}", "{0}", "{name}", "{{", "}}" and an optional "!r"/"!s" conversion.
Result<std::string> Format(std::string_view fmt, const CallArgs& args, size_t first_arg);

}  // namespace lazyslot::jinja::text
