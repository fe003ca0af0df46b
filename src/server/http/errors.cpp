// Status -> HTTP mapping and OpenAI-style error bodies (see errors.h).
#include "server/http/errors.h"

#include "server/http/httplib_include.h"

namespace lazyslot::server {

int HttpStatusFor(Code code) {
  switch (code) {
    case Code::kOk:
      return 200;
    case Code::kInvalidArgument:
    case Code::kOutOfRange:  // the prompt does not fit a slot: the request must change, so 400 as
                             // llama-server
      return 400;
    case Code::kNotFound:
      return 404;
    case Code::kUnimplemented:
      return 501;
    case Code::kResourceExhausted:
    case Code::kUnavailable:
      return 503;
    case Code::kCancelled:
      return 499;
    case Code::kCorrupt:
    case Code::kIo:
    case Code::kInternal:
      return 500;
  }
  return 500;
}

const char* ErrorTypeFor(int http_status) {
  switch (http_status) {
    case 400:
    case 413:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 499:
      return "cancelled_error";
    case 501:
      return "not_supported_error";
    case 503:
      return "unavailable_error";
    default:
      return http_status >= 500 ? "server_error" : "invalid_request_error";
  }
}

nlohmann::json ErrorBody(int http_status, const std::string& message, const std::string& param) {
  nlohmann::json err = {{"message", message}, {"type", ErrorTypeFor(http_status)}, {"code", http_status}};
  if (!param.empty()) err["param"] = param;
  return nlohmann::json{{"error", std::move(err)}};
}

void SetError(httplib::Response& res, int http_status, const std::string& message, const std::string& param) {
  res.status = http_status;
  // Every 503 here is about load or state (busy, loading, draining): say when to try again.
  if (http_status == 503 && !res.has_header("Retry-After")) res.set_header("Retry-After", "1");
  res.set_content(Dump(ErrorBody(http_status, message, param)), "application/json; charset=utf-8");
}

void SetContextSizeError(httplib::Response& res, int64_t n_prompt_tokens, int64_t n_ctx,
                         const std::string& message) {
  nlohmann::json body = ErrorBody(400, message);
  body["error"]["type"] = "exceed_context_size_error";
  body["error"]["n_prompt_tokens"] = n_prompt_tokens;
  body["error"]["n_ctx"] = n_ctx;
  res.status = 400;
  res.set_content(Dump(body), "application/json; charset=utf-8");
}

void SetStatusError(httplib::Response& res, const Status& status) {
  SetError(res, HttpStatusFor(status.code()), status.message());
}

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace lazyslot::server
