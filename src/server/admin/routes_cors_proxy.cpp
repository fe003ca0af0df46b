// GET and POST /cors-proxy?url=<http(s) URL> (llama-server's --ui-mcp-proxy, off by default): forwards a
// request from the web page to another server (an MCP server that sends no CORS headers) and streams its
// answer back. Only headers the page names explicitly are forwarded, each as
// `x-llama-server-proxy-header-<name>`: never the caller's Authorization, X-Api-Key, Cookie or
// Proxy-Authorization. 403 while off.
#include <strings.h>

#include <condition_variable>
#include <deque>
#include <optional>
#include <thread>

#include "core/log.h"
#include "server/http/errors.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

constexpr char kHeaderPrefix[] = "x-llama-server-proxy-header-";
constexpr size_t kMaxBuffered = size_t{4} << 20;  // the upstream waits while this much is not yet sent on
constexpr int kUpstreamTimeoutS = 600;            // llama-server's read and write timeouts

// What the upstream request has produced so far, shared by the thread that runs it and the response.
struct Upstream {
  std::mutex mu;
  std::condition_variable cv;
  bool headers = false, done = false, cancelled = false;
  int status = 0;
  std::string content_type, error;
  httplib::Headers response_headers;  // the upstream's, less those PassedBack refuses
  std::deque<std::string> chunks;
  size_t buffered = 0;
};

// Upstream response headers the page gets (an MCP server's Mcp-Session-Id, say): not the connection's own,
// not the body's framing (this server frames it again), never cookies (they would be set for this origin) nor
// CORS headers (this server's are the page's).
bool PassedBack(const std::string& name) {
  static const char* const kRefused[] = {
      "connection", "keep-alive",  "transfer-encoding",  "content-length", "content-encoding", "content-type",
      "set-cookie", "set-cookie2", "proxy-authenticate", "trailer",        "upgrade",          "te"};
  for (const char* r : kRefused) {
    if (strcasecmp(name.c_str(), r) == 0) return false;
  }
  return strncasecmp(name.c_str(), "access-control-", 15) != 0;
}

// scheme://authority[/path][?query] split by hand: std::regex matches recursively, one stack frame per
// character, so a long URL (a 7 KB host name) overflowed the HTTP thread's stack.
struct ProxyUrl {
  std::string scheme, authority, path;  // scheme lower-case; path may be empty or start with '?'
};

bool IsUrlSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

std::optional<ProxyUrl> ParseProxyUrl(const std::string& url) {
  ProxyUrl u;
  size_t at = 0;
  if (strncasecmp(url.c_str(), "https://", 8) == 0) {
    u.scheme = "https", at = 8;
  } else if (strncasecmp(url.c_str(), "http://", 7) == 0) {
    u.scheme = "http", at = 7;
  } else {
    return std::nullopt;
  }
  const size_t end = url.find_first_of("/?#", at);
  u.authority = url.substr(at, end == std::string::npos ? std::string::npos : end - at);
  if (u.authority.empty()) return std::nullopt;
  for (char c : u.authority) {
    if (c == '@' || IsUrlSpace(c)) return std::nullopt;
  }
  if (end != std::string::npos) u.path = url.substr(end);
  for (char c : u.path) {
    if (c == '#' || IsUrlSpace(c)) return std::nullopt;
  }
  return u;
}

void Proxy(ServerState& st, const httplib::Request& req, httplib::Response& res, const std::string& method) {
  if (!st.opts.ui_mcp_proxy) {
    return SetError(res, 403, "the CORS proxy is off (start the server with --ui-mcp-proxy)");
  }
  const std::string url = req.get_param_value("url");
  // user:password@ in the authority is refused (as llama-server).
  if (url.empty()) return SetError(res, 400, "url: required (GET /cors-proxy?url=http://host/path)", "url");
  if (url.find('@') != std::string::npos && url.find('@') < url.find('/', url.find("//") + 2)) {
    return SetError(res, 400, "url: credentials in the target URL are not supported", "url");
  }
  const std::optional<ProxyUrl> parsed = ParseProxyUrl(url);
  if (!parsed) return SetError(res, 400, "url: '" + url + "' is not an http or https URL with a host", "url");
  // A DNS name has at most 253 characters: a longer host could only end in a lookup failure, a 502.
  const std::string& authority = parsed->authority;
  const std::string host = authority[0] == '[' ? authority.substr(0, authority.find(']') + 1)
                                               : authority.substr(0, authority.find(':'));
  if (host.size() > 253) {
    return SetError(res, 400,
                    "url: the host name has " + std::to_string(host.size()) +
                        " characters; a DNS name has at most 253",
                    "url");
  }
  const std::string origin = parsed->scheme + "://" + authority;
  std::string path = parsed->path;
  if (path.empty() || path[0] == '?') path = "/" + path;

  httplib::Headers headers;
  for (const auto& [key, value] : req.headers) {
    constexpr size_t n = sizeof(kHeaderPrefix) - 1;
    if (key.size() == n || strncasecmp(key.c_str(), kHeaderPrefix, n) != 0) continue;
    headers.emplace(key.substr(n), value);
  }
  LS_LOG_INFO("cors-proxy: %s %s%s", method.c_str(), origin.c_str(), path.c_str());

  auto up = std::make_shared<Upstream>();
  // The upstream request runs on its own thread, which touches only `up`: a response whose client left, or a
  // server that stops, cancels it through `up` and never waits for it.
  std::thread([up, origin, path, headers, method, body = req.body] {
    httplib::Client cli(origin);
    cli.set_connection_timeout(10, 0);
    cli.set_read_timeout(kUpstreamTimeoutS, 0);
    cli.set_write_timeout(kUpstreamTimeoutS, 0);
    httplib::Request r;
    r.method = method;
    r.path = path;
    r.headers = headers;
    r.body = body;
    r.response_handler = [up](const httplib::Response& resp) {
      std::lock_guard<std::mutex> lock(up->mu);
      up->status = resp.status;
      up->content_type = resp.get_header_value("Content-Type");
      for (const auto& [k, v] : resp.headers) {
        if (PassedBack(k)) up->response_headers.emplace(k, v);
      }
      up->headers = true;
      up->cv.notify_all();
      return !up->cancelled;
    };
    r.content_receiver = [up](const char* data, size_t n, uint64_t, uint64_t) {
      std::unique_lock<std::mutex> lock(up->mu);
      up->cv.wait(lock, [&] { return up->cancelled || up->buffered < kMaxBuffered; });
      if (up->cancelled) return false;
      up->chunks.emplace_back(data, n);
      up->buffered += n;
      up->cv.notify_all();
      return true;
    };
    httplib::Response resp;
    httplib::Error error = httplib::Error::Success;
    const bool ok = cli.send(r, resp, error);
    std::lock_guard<std::mutex> lock(up->mu);
    if (ok && !up->headers) {  // a 204 (or HEAD) answer: cpp-httplib calls no response handler for it
      up->status = resp.status;
      up->content_type = resp.get_header_value("Content-Type");
      up->headers = true;
    }
    if (!ok && !up->headers) up->error = httplib::to_string(error);
    up->done = true;
    up->cv.notify_all();
  }).detach();

  {
    std::unique_lock<std::mutex> lock(up->mu);
    while (!up->headers && !up->done) {
      if (st.stopping.load()) {
        up->cancelled = true;
        up->cv.notify_all();
        return SetShutdownError(res, "the server is shutting down");
      }
      up->cv.wait_for(lock, std::chrono::milliseconds(100));
    }
    if (!up->headers) {
      return SetError(res, 502, "cors-proxy: no answer from " + origin + " (" + up->error + ")");
    }
    res.status = up->status;
    for (const auto& [k, v] : up->response_headers) res.set_header(k, v);
    if (up->status == 204 || up->status == 304) {  // no body, whatever came
      up->cancelled = true;
      up->cv.notify_all();
      return;
    }
  }
  const std::string type = up->content_type.empty() ? "application/octet-stream" : up->content_type;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      type,
      [up, &st](size_t, httplib::DataSink& sink) {
        std::unique_lock<std::mutex> lock(up->mu);
        up->cv.wait_for(lock, std::chrono::milliseconds(500),
                        [&] { return !up->chunks.empty() || up->done || st.stopping.load(); });
        if (st.stopping.load()) return false;
        while (!up->chunks.empty()) {
          std::string chunk = std::move(up->chunks.front());
          up->chunks.pop_front();
          up->buffered -= chunk.size();
          up->cv.notify_all();
          lock.unlock();
          if (!sink.write(chunk.data(), chunk.size())) return false;
          lock.lock();
        }
        if (up->done) sink.done();
        return true;
      },
      [up](bool) {
        std::lock_guard<std::mutex> lock(up->mu);
        up->cancelled = true;
        up->cv.notify_all();
      });
}

}  // namespace

void RegisterCorsProxyRoutes(ServerState& st) {
  st.http.Get("/cors-proxy", GuardRoute(st, [](ServerState& s, const httplib::Request& req,
                                               httplib::Response& res) { Proxy(s, req, res, "GET"); }));
  st.http.Post("/cors-proxy", GuardRoute(st, [](ServerState& s, const httplib::Request& req,
                                                httplib::Response& res) { Proxy(s, req, res, "POST"); }));
}

}  // namespace lazyslot::server
