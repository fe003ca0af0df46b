// The JSON body of a POST request before any route reads it: Content-Type, size and syntax checks, and the
// OpenAI-style bodies for the errors cpp-httplib raises itself before a route runs (413, bad encodings).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/http/json_body.h"
#include "server/http/httplib_include.h"

namespace lazyslot::server {

// HTTP status for a body sent with a Content-Type other than JSON.
constexpr int kUnsupportedMediaType = 415;

// True when `content_type` announces JSON: absent (curl without -H, some scripts: read as JSON, as
// llama-server does), application/json or any application/*+json, with no charset or charset=utf-8.
// Otherwise false, and *why says what was wrong.
bool IsJsonContentType(const std::string& content_type, std::string* why);

// Checks Content-Type (415), the size for bodies cpp-httplib could not bound in advance (chunked
// encoding: 413) and parses the body (400, see ParseJsonObject). On failure sets `res` and returns nullopt.
std::optional<Json> ReadJsonBody(const httplib::Request& req, httplib::Response& res, uint64_t max_body_size);

// For the server's error handler: fills an OpenAI-style body for an error cpp-httplib produced before
// routing (payload over --max-body-size, a form or multipart body it tried to parse, a body it could not
// decode). Returns false when the error is none of these.
bool FillTransportError(const httplib::Request& req, httplib::Response& res, uint64_t max_body_size);

// "8 MiB", "512 KiB" or "1234 bytes": a byte count for messages.
std::string ByteSizeText(uint64_t bytes);

}  // namespace lazyslot::server
