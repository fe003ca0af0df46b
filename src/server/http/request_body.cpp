// Content-Type, size and syntax checks of a POST body, and OpenAI-style bodies for the errors cpp-httplib
// raises before routing (see request_body.h).
#include "server/http/request_body.h"

#include <cctype>
#include <cstdlib>

#include "server/http/errors.h"

namespace lazyslot::server {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// A header value as shown in messages: at most 100 bytes (clients can send kilobytes of it).
std::string Shown(const std::string& v) { return v.size() > 100 ? v.substr(0, 100) + "..." : v; }

std::string MediaType(const std::string& content_type) {
  return Lower(Trim(content_type.substr(0, content_type.find(';'))));
}

bool IsFormOrMultipart(const std::string& content_type) {
  const std::string t = MediaType(content_type);
  return t == "application/x-www-form-urlencoded" || t.rfind("multipart/", 0) == 0;
}

std::string WrongTypeMessage(const std::string& content_type) {
  return "Content-Type '" + Shown(content_type) +
         "' is not supported: send the JSON body with 'Content-Type: application/json'";
}

std::string TooLargeMessage(uint64_t size, uint64_t max_body_size) {
  return "the request body (" + std::to_string(size) + " bytes) is larger than the server's limit of " +
         ByteSizeText(max_body_size) + " (--max-body-size)";
}

}  // namespace

std::string ByteSizeText(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

bool IsJsonContentType(const std::string& content_type, std::string* why) {
  if (Trim(content_type).empty()) return true;
  const std::string type = MediaType(content_type);
  const bool json = type == "application/json" || (type.rfind("application/", 0) == 0 && type.size() > 17 &&
                                                   type.compare(type.size() - 5, 5, "+json") == 0);
  if (!json) {
    *why = WrongTypeMessage(content_type);
    return false;
  }
  // Parameters: only charset matters; JSON on the wire is UTF-8 (RFC 8259).
  size_t pos = content_type.find(';');
  while (pos != std::string::npos) {
    const size_t next = content_type.find(';', pos + 1);
    const std::string param = content_type.substr(pos + 1, next == std::string::npos ? next : next - pos - 1);
    const size_t eq = param.find('=');
    if (eq != std::string::npos && Lower(Trim(param.substr(0, eq))) == "charset") {
      std::string cs = Lower(Trim(param.substr(eq + 1)));
      if (cs.size() >= 2 && cs.front() == '"' && cs.back() == '"') cs = cs.substr(1, cs.size() - 2);
      if (cs != "utf-8" && cs != "utf8") {
        *why = "Content-Type '" + Shown(content_type) + "': charset '" + Shown(cs) +
               "' is not supported; JSON bodies must be UTF-8";
        return false;
      }
    }
    pos = next;
  }
  return true;
}

std::optional<Json> ReadJsonBody(const httplib::Request& req, httplib::Response& res,
                                 uint64_t max_body_size) {
  std::string why;
  if (!IsJsonContentType(req.get_header_value("Content-Type"), &why)) {
    SetError(res, kUnsupportedMediaType, why);
    return std::nullopt;
  }
  // Content-Length bodies over the limit never get here (httplib answers 413 before reading them); a
  // chunked body is only bounded once it has been read.
  if (req.body.size() > max_body_size) {
    SetError(res, 413, TooLargeMessage(req.body.size(), max_body_size));
    return std::nullopt;
  }
  Result<Json> body = ParseJsonObject(req.body);
  if (!body.ok()) {
    SetStatusError(res, body.status());
    return std::nullopt;
  }
  return std::move(*body);
}

bool FillTransportError(const httplib::Request& req, httplib::Response& res, uint64_t max_body_size) {
  const std::string content_type = req.get_header_value("Content-Type");
  const bool form = IsFormOrMultipart(content_type);
  if (res.status == 413) {
    uint64_t size = req.body.size();
    const std::string length = req.get_header_value("Content-Length");
    if (!length.empty()) size = std::strtoull(length.c_str(), nullptr, 10);
    // httplib also refuses form bodies over 8 KiB (and parses smaller ones as form fields): within our
    // limit that is a wrong Content-Type, not a body too large.
    if (form && size <= max_body_size) {
      SetError(res, kUnsupportedMediaType, WrongTypeMessage(content_type));
    } else {
      SetError(res, 413, TooLargeMessage(size, max_body_size));
    }
    return true;
  }
  if (res.status == 414) {
    SetError(res, 414,
             "the request URI is too long (cpp-httplib reads request lines of at most " +
                 std::to_string(CPPHTTPLIB_REQUEST_URI_MAX_LENGTH) + " bytes)");
    return true;
  }
  if (res.status == 400 && form) {  // e.g. multipart/form-data without a boundary
    SetError(res, kUnsupportedMediaType, WrongTypeMessage(content_type));
    return true;
  }
  const std::string encoding = req.get_header_value("Content-Encoding");
  if ((res.status == 400 || res.status == 415) && !encoding.empty()) {
    SetError(res, res.status,
             "the body could not be decoded as 'Content-Encoding: " + Shown(encoding) +
                 "' (send it uncompressed, or as valid gzip/deflate)");
    return true;
  }
  return false;
}

}  // namespace lazyslot::server
