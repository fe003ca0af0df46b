// What the hostile-request suites share (server_hostile_test.cpp: the OpenAI and llama-server core routes;
// server_hostile_routes_test.cpp: every route added since): sending a request byte for byte with curl or on
// a raw socket, a case table's row, and the checks of each API's error shape.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "server_harness.h"

namespace lazyslot::testing::hostile {

inline constexpr char kJson[] = "application/json";
inline constexpr char kNoType[] = "";  // no Content-Type header at all

struct Reply {
  int status = 0;
  std::string content_type;
  std::string body;
};

// One request with curl; the body always goes as --data-binary from a file (so 10 MB bodies are fine and an
// empty one still carries Content-Length: 0). `content_type` "" sends no Content-Type header.
inline Reply Send(const ServerProcess& srv, const std::string& method, const std::string& path,
                  const std::string& content_type, const std::string* body,
                  const std::vector<std::string>& headers) {
  const std::string out = NewScratchFile("hostile-out");
  std::string cmd = "curl -sS -o ";
  cmd.append(ShellQuote(out)).append(" -w '%{http_code} %{content_type}' --max-time 120 -X ").append(method);
  // "Content-Type:" with nothing after the colon makes curl send no Content-Type at all.
  cmd.append(" -H ").append(
      ShellQuote(content_type.empty() ? "Content-Type:" : "Content-Type: " + content_type));
  for (const std::string& h : headers) cmd.append(" -H ").append(ShellQuote(h));
  if (body) {
    const std::string in = NewScratchFile("hostile-body");
    std::ofstream(in, std::ios::binary) << *body;
    cmd.append(" --data-binary @").append(ShellQuote(in));
  }
  cmd.append(" ").append(ShellQuote(srv.Url(path))).append(" 2>/dev/null");
  Reply r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[512] = {0};
  const size_t n = fread(buf, 1, sizeof(buf) - 1, p);
  buf[n] = 0;
  pclose(p);
  const std::string w = buf;
  r.status = std::atoi(w.c_str());
  r.content_type = w.find(' ') == std::string::npos ? "" : w.substr(w.find(' ') + 1);
  r.body = ReadAll(out);
  return r;
}

// A request written byte for byte on a socket (for what curl will not send); reads until the server closes
// or 10 s pass. Status 0 if no status line came back. With half_close the client ends its side right after
// sending (the server then sees end of file behind the request).
inline Reply SendRaw(int port, const std::string& bytes, bool half_close) {
  Reply r;
  const int fd = ConnectLoopback(port);
  if (fd < 0) return r;
  send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (half_close) shutdown(fd, SHUT_WR);
  const std::string got = ReadUntil(fd, "\x01never\x01", std::chrono::seconds(10));
  close(fd);
  if (got.rfind("HTTP/1.1 ", 0) != 0) return r;
  r.status = std::atoi(got.c_str() + 9);
  const size_t head_end = got.find("\r\n\r\n");
  if (head_end == std::string::npos) return r;
  const std::string head = got.substr(0, head_end);
  const size_t ct = head.find("Content-Type: ");
  if (ct != std::string::npos) r.content_type = head.substr(ct + 14, head.find("\r\n", ct) - ct - 14);
  r.body = got.substr(head_end + 4);
  return r;
}

// The error body a route answers in.
enum class Shape {
  kOpenAi,     // {"error": {"message", "type", "code"}}
  kAnthropic,  // {"type": "error", "error": {"type", "message"}}
  kTei,        // {"error": "...", "error_type": "..."} (text-embeddings-inference)
};

struct Case {
  std::string category;
  std::string name;
  std::string method;
  std::string path;
  std::string content_type;           // kJson, kNoType or another value
  std::function<std::string()> body;  // null: no body (GET); big bodies are generated when the case runs
  int status;                         // expected HTTP status
  std::string message_part;           // the error message must contain it; for a 200, the body must
  std::vector<std::string> headers = {};
  Shape shape = Shape::kOpenAi;
};

inline std::function<std::string()> Text(std::string s) {
  return [s] { return s; };
}
inline std::function<std::string()> Body(json j) {
  return [j] { return j.dump(); };
}

inline json Msgs(const std::string& content) {
  return json::array({{{"role", "user"}, {"content", content}}});
}

inline std::string Nested(size_t depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

// A prompt of `n` words, far more tokens than a 128-cell slot holds when n is a few hundred.
inline std::string Words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "lorem ipsum ";
  return s;
}

inline void ExpectOpenAiError(const Case& k, const Reply& r) {
  SCOPED_TRACE(k.category + " / " + k.name);
  EXPECT_EQ(r.status, k.status) << r.body.substr(0, 500);
  EXPECT_EQ(r.content_type.rfind("application/json", 0), 0u) << r.content_type;
  const json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error") && j["error"].is_object()) << r.body.substr(0, 500);
  const json& e = j["error"];
  ASSERT_TRUE(e.contains("message") && e["message"].is_string()) << r.body.substr(0, 500);
  EXPECT_TRUE(e.contains("type") && e["type"].is_string() && !e["type"].get<std::string>().empty()) << r.body;
  EXPECT_EQ(e.value("code", 0), k.status) << r.body.substr(0, 500);
  if (k.status == 404) {
    EXPECT_EQ(e["type"], "not_found_error");
  }
  if (k.status == 400 || k.status == 413 || k.status == 414 || k.status == 415) {
    // A prompt longer than the context has llama-server's own type, with the two numbers as fields.
    if (e["type"] == "exceed_context_size_error") {
      EXPECT_TRUE(e["n_prompt_tokens"].is_number_integer() && e["n_ctx"].is_number_integer()) << r.body;
      EXPECT_GT(e["n_prompt_tokens"].get<int64_t>(), e["n_ctx"].get<int64_t>() - 1) << r.body;
    } else {
      EXPECT_EQ(e["type"], "invalid_request_error");
    }
  }
  const std::string msg = e["message"].get<std::string>();
  EXPECT_NE(msg.find(k.message_part), std::string::npos) << "message: " << msg.substr(0, 500);
}

// Anthropic's error body; the type follows the status as Anthropic documents it.
inline void ExpectAnthropicError(const Case& k, const Reply& r) {
  SCOPED_TRACE(k.category + " / " + k.name);
  EXPECT_EQ(r.status, k.status) << r.body.substr(0, 500);
  EXPECT_EQ(r.content_type.rfind("application/json", 0), 0u) << r.content_type;
  const json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.value("type", "") == "error" && j.contains("error") && j["error"].is_object())
      << r.body.substr(0, 500);
  const json& e = j["error"];
  ASSERT_TRUE(e.contains("message") && e["message"].is_string()) << r.body.substr(0, 500);
  const char* type = k.status == 404   ? "not_found_error"
                     : k.status == 413 ? "request_too_large"
                                       : "invalid_request_error";  // 400 and 415
  EXPECT_EQ(e.value("type", ""), type) << r.body.substr(0, 500);
  const std::string msg = e["message"].get<std::string>();
  EXPECT_NE(msg.find(k.message_part), std::string::npos) << "message: " << msg.substr(0, 500);
}

// text-embeddings-inference's error body: a client mistake is 422 "Validation" (415 for a wrong
// Content-Type, 400 "Empty" for no inputs).
inline void ExpectTeiError(const Case& k, const Reply& r) {
  SCOPED_TRACE(k.category + " / " + k.name);
  EXPECT_EQ(r.status, k.status) << r.body.substr(0, 500);
  EXPECT_EQ(r.content_type.rfind("application/json", 0), 0u) << r.content_type;
  const json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error") && j["error"].is_string() && j.contains("error_type") &&
              j["error_type"].is_string())
      << r.body.substr(0, 500);
  const std::string type = j["error_type"];
  if (k.status == 424) {  // TEI's answer when the model cannot do what the route asks
    EXPECT_EQ(type, "Backend") << r.body.substr(0, 500);
  } else {
    EXPECT_TRUE(type == "Validation" || type == "Empty") << r.body.substr(0, 500);
  }
  const std::string msg = j["error"];
  EXPECT_NE(msg.find(k.message_part), std::string::npos) << "message: " << msg.substr(0, 500);
}

inline void ExpectError(const Case& k, const Reply& r) {
  switch (k.shape) {
    case Shape::kOpenAi:
      return ExpectOpenAiError(k, r);
    case Shape::kAnthropic:
      return ExpectAnthropicError(k, r);
    case Shape::kTei:
      return ExpectTeiError(k, r);
  }
}

// Sends `k`; a 200 case must answer 200 with `message_part` in its body, any other its error in its shape.
inline void RunCase(const ServerProcess& srv, const Case& k) {
  const std::string body = k.body ? k.body() : "";
  const Reply r = Send(srv, k.method, k.path, k.content_type, k.body ? &body : nullptr, k.headers);
  if (k.status == 200) {
    SCOPED_TRACE(k.category + " / " + k.name);
    EXPECT_EQ(r.status, 200) << r.body.substr(0, 500);
    EXPECT_NE(r.body.find(k.message_part), std::string::npos) << r.body.substr(0, 500);
  } else {
    ExpectError(k, r);
  }
}

}  // namespace lazyslot::testing::hostile
