// --ui-mcp-proxy (GET/POST /cors-proxy?url=): off by default (403); forwards to a real HTTP server started in
// this test only the headers named x-llama-server-proxy-header-<name> (never the caller's key or cookies),
// passes status and body through (a 204 with no body, a 404 with its body, a chunked stream whole), refuses
// URLs that are not http(s) or carry credentials, answers 502 when nothing listens; needs the API key like
// any route. And --cors-origins localhost (llama-server's): any port of localhost, 127.0.0.1 and [::1].
#include <gtest/gtest.h>

#include "loopback.h"
#include "server/http/httplib_include.h"
#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";

// A target server on a free port: /capture records the request's headers, /empty answers 204, /missing 404,
// /stream three chunks.
class Target {
 public:
  Target() : port_(FreePort()) {
    http_.Get("/capture", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      captured_ = req.headers;
      res.set_header("Mcp-Session-Id", "session-42");
      res.set_header("Set-Cookie", "tracker=1");
      res.set_header("Access-Control-Allow-Origin", "*");
      res.set_content("ok", "text/plain");
    });
    http_.Post("/empty", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
    http_.Get("/missing", [](const httplib::Request&, httplib::Response& res) {
      res.status = 404;
      res.set_content("{\"where\":\"target\"}", "application/json");
    });
    http_.Get("/stream", [](const httplib::Request&, httplib::Response& res) {
      auto n = std::make_shared<int>(0);
      res.set_chunked_content_provider("text/event-stream", [n](size_t, httplib::DataSink& sink) {
        if (*n == 3) {
          sink.done();
          return true;
        }
        const std::string event = "data: part" + std::to_string((*n)++) + "\n\n";
        return sink.write(event.data(), event.size());
      });
    });
    thread_ = std::thread([this] { http_.listen("127.0.0.1", port_); });
    for (int i = 0; i < 500 && !http_.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~Target() {
    http_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  // The captured header `name` (any case), or "<absent>".
  std::string Captured(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : captured_) {
      if (strcasecmp(k.c_str(), name.c_str()) == 0) return v;
    }
    return "<absent>";
  }

 private:
  int port_;
  httplib::Server http_;
  std::thread thread_;
  std::mutex mu_;
  httplib::Headers captured_;
};

std::string Proxied(const std::string& url) { return "/cors-proxy?url=" + url; }

TEST(CorsProxy, OffByDefault) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories)});
  Target target;
  const HttpResult get = srv->Get(Proxied(target.Url("/capture")));
  EXPECT_EQ(get.status, 403);
  EXPECT_NE(get.body.find("--ui-mcp-proxy"), std::string::npos) << get.body;
  EXPECT_EQ(srv->PostRaw(Proxied(target.Url("/empty")), "{}").status, 403);
  EXPECT_EQ(target.Captured("Host"), "<absent>") << "nothing reached the target";
  EXPECT_EQ(srv->Get("/props").Json()["cors_proxy_enabled"], false);
}

TEST(CorsProxy, ForwardsOnlyExplicitHeaders) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "--ui-mcp-proxy", "--api-key", "proxy-key"});
  Target target;
  EXPECT_EQ(srv->Get(Proxied(target.Url("/capture"))).status, 401) << "the proxy needs the key";
  const HttpResult r = srv->Get(
      Proxied(target.Url("/capture")),
      {"Authorization: Bearer proxy-key", "Proxy-Authorization: Basic secret", "X-Api-Key: proxy-key",
       "Cookie: session=secret", "x-llama-server-proxy-header-accept: application/json",
       "X-Llama-Server-Proxy-Header-Authorization: Bearer explicit"});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(target.Captured("Accept"), "application/json");
  EXPECT_EQ(target.Captured("Authorization"), "Bearer explicit");
  EXPECT_EQ(target.Captured("Proxy-Authorization"), "<absent>");
  EXPECT_EQ(target.Captured("X-Api-Key"), "<absent>");
  EXPECT_EQ(target.Captured("Cookie"), "<absent>");
  // Back: the target's own headers (an MCP session id), never its cookies or CORS headers.
  EXPECT_EQ(r.Header("Mcp-Session-Id"), "session-42");
  EXPECT_EQ(r.Header("Set-Cookie"), "");
  EXPECT_EQ(r.Header("Access-Control-Allow-Origin"), "");
  EXPECT_EQ(srv->Get("/props", {"Authorization: Bearer proxy-key"}).Json()["cors_proxy_enabled"], true);
}

TEST(CorsProxy, StatusAndBodyPassThrough) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "--ui-mcp-proxy"});
  Target target;
  const HttpResult empty = srv->PostRaw(Proxied(target.Url("/empty")), "{}");
  EXPECT_EQ(empty.status, 204);
  EXPECT_EQ(empty.body, "");
  const HttpResult missing = srv->Get(Proxied(target.Url("/missing")));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, "{\"where\":\"target\"}") << "the target's body, not the server's 404";
  const HttpResult stream = srv->Get(Proxied(target.Url("/stream")));
  EXPECT_EQ(stream.status, 200);
  EXPECT_EQ(stream.body, "data: part0\n\ndata: part1\n\ndata: part2\n\n");
  EXPECT_EQ(stream.Header("Content-Type"), "text/event-stream");
  // The proxy reaching this very server (llama.cpp's test_mcp_proxy_custom_port).
  const HttpResult self = srv->Get(Proxied(srv->Url("/v1/models")));
  ASSERT_EQ(self.status, 200);
  EXPECT_TRUE(self.Json().contains("data")) << self.body;
}

TEST(CorsProxy, RefusesBadTargetsClearly) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "--ui-mcp-proxy"});
  EXPECT_EQ(srv->Get("/cors-proxy").status, 400);
  for (const char* url : {"ftp://127.0.0.1/x", "file:///etc/passwd", "http://user:pw@127.0.0.1/x",
                          "http:///x", "/etc/passwd"}) {
    const HttpResult r = srv->Get(Proxied(url));
    EXPECT_EQ(r.status, 400) << url << ": " << r.body;
    EXPECT_EQ(r.Json()["error"]["param"], "url") << r.body;
  }
  const int closed = FreePort();
  const HttpResult r = srv->Get(Proxied("http://127.0.0.1:" + std::to_string(closed) + "/"));
  EXPECT_EQ(r.status, 502) << r.body;
  EXPECT_NE(r.Json()["error"]["message"].get<std::string>().find("no answer"), std::string::npos) << r.body;
  EXPECT_EQ(srv->Get("/health").status, 200);
}

std::string Preflight(const ServerProcess& srv, const std::string& origin) {
  return Headers("OPTIONS", srv.Url("/completion"), {"Origin: " + origin, "Access-Control-Request-Method: POST"});
}

TEST(CorsProxy, CorsOriginsLocalhost) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "--cors-origins", "localhost"});
  for (const char* origin : {"http://localhost", "http://localhost:8080", "http://127.0.0.1",
                             "http://127.0.0.1:3000", "http://[::1]", "https://[::1]:3000"}) {
    EXPECT_NE(Preflight(*srv, origin).find(std::string("access-control-allow-origin: ") + origin),
              std::string::npos)
        << origin;
  }
  for (const char* origin :
       {"http://web.mydomain.fr", "http://evil.com", "http://notlocalhost", "http://localhost.evil.com",
        "http://127.0.0.1.evil.com", "http://localhost:80x"}) {
    EXPECT_EQ(Preflight(*srv, origin).find("access-control-allow-origin"), std::string::npos) << origin;
  }
}

}  // namespace
}  // namespace lazyslot::testing
