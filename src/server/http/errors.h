// OpenAI-style error responses ({"error": {"message", "type", "code"}}) and the one table that maps a
// lazyslot Status code to an HTTP status.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace httplib {
struct Response;
}

namespace lazyslot::server {

// HTTP status for a Status code: kInvalidArgument/kOutOfRange 400, kNotFound 404, kUnimplemented 501,
// kResourceExhausted/kUnavailable 503, kCancelled 499 (client closed), anything else 500.
int HttpStatusFor(Code code);
// OpenAI error "type" for an HTTP status (invalid_request_error, authentication_error, ...).
const char* ErrorTypeFor(int http_status);

// {"error": {"message", "type", "code": http_status, "param"?}}; `param` names the offending request field.
nlohmann::json ErrorBody(int http_status, const std::string& message, const std::string& param = "");

// Sets status, JSON body and content type on `res`.
void SetError(httplib::Response& res, int http_status, const std::string& message,
              const std::string& param = "");
void SetStatusError(httplib::Response& res, const Status& status);

// A prompt longer than a slot's context, as llama-server answers it: 400 with type
// "exceed_context_size_error" and the fields n_prompt_tokens and n_ctx beside the message.
void SetContextSizeError(httplib::Response& res, int64_t n_prompt_tokens, int64_t n_ctx,
                         const std::string& message);

// Serialises JSON for the wire: never throws on invalid UTF-8 (bad bytes become U+FFFD).
std::string Dump(const nlohmann::json& j);
std::string Dump(const nlohmann::ordered_json& j);

}  // namespace lazyslot::server
