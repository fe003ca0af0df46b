// The JSON a request body must be: one object, nested at most kMaxJsonDepth deep, parsed without throwing; and
// the type names error messages use. Every route reads its body through ParseJsonObject (request_body.h).
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace lazyslot::server {

using Json = nlohmann::ordered_json;  // keeps the request's key order (templates print tool schemas in it)

// Deepest array/object nesting a request body may have. The parser itself is iterative, but copying,
// printing and template rendering of a value recurse once per level, so a body of 100,000 '[' would
// exhaust an HTTP thread's stack; real requests (tool schemas included) stay far below this.
constexpr size_t kMaxJsonDepth = 128;

// The body must be a JSON object (UTF-8, nested at most kMaxJsonDepth deep); errors say where parsing
// stopped. Duplicate keys: the last one wins, as in JavaScript's JSON.parse and Python's json.
Result<Json> ParseJsonObject(const std::string& body);

// JSON type name for messages ("string", "number", "object", ...).
std::string TypeName(const Json& v);

}  // namespace lazyslot::server
