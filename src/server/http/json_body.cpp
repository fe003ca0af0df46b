// ParseJsonObject and TypeName (see json_body.h).
#include "server/http/json_body.h"

namespace lazyslot::server {
namespace {

// Byte offset of the bracket that opens level `limit` + 1 of a JSON text, or npos. Brackets inside strings
// do not count; one linear pass, so it is cheap even for bodies of many megabytes.
size_t TooDeepAt(const std::string& text, size_t limit) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string::npos;
}

}  // namespace

std::string TypeName(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "unknown";
}

Result<Json> ParseJsonObject(const std::string& body) {
  if (body.empty()) return InvalidArgument("the request body is empty; expected a JSON object");
  const size_t deep_at = TooDeepAt(body, kMaxJsonDepth);
  if (deep_at != std::string::npos) {
    return InvalidArgument("the request body nests arrays/objects more than " +
                           std::to_string(kMaxJsonDepth) + " levels deep (at byte " +
                           std::to_string(deep_at) + ")");
  }
  Json j;
  try {
    j = Json::parse(body);
  } catch (const std::exception& e) {
    // nlohmann's text starts with "[json.exception.parse_error.101] "; the rest says where and why (it
    // names ill-formed UTF-8 and unpaired surrogates, which JSON forbids).
    std::string what = e.what();
    if (!what.empty() && what[0] == '[') {
      const size_t close = what.find("] ");
      if (close != std::string::npos) what.erase(0, close + 2);
    }
    return InvalidArgument("the request body is not valid JSON: " + what);
  }
  if (!j.is_object()) return InvalidArgument("the request body must be a JSON object, got " + TypeName(j));
  return j;
}

}  // namespace lazyslot::server
