// Serves the embedded web page (webui.h): GET / and /index.html (the page), GET /ui/<path> (its scripts and
// styles), and at the root as llama-server's page has them: /sw.js (a service worker's scope is its folder),
// /manifest.webmanifest and /_app/version.json (the build's version, for a page to notice a new one).
// Gzipped bytes go to clients that accept gzip, the plain ones to others; an ETag answers repeat visits with
// 304. The page may talk only to this server (Content-Security-Policy: connect-src 'self').
#include "server/admin/webui.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "server/http/errors.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

constexpr char kPagePrefix[] = "/ui/";
// Files of webui/ served at the root too (their asset path is their URL path).
constexpr const char* kRootFiles[] = {"/sw.js", "/manifest.webmanifest"};
constexpr char kVersionPath[] = "/_app/version.json";

bool IsRootFile(const std::string& url_path) {
  for (const char* f : kRootFiles) {
    if (url_path == f) return true;
  }
  return false;
}

// {"version": "<16 hex digits>"}: a hash of every embedded file's ETag, so it changes with any of them.
const std::string& VersionJson() {
  static const std::string json = [] {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
    for (const WebAsset& a : WebAssets()) {
      for (const char* c = a.etag; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ull;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "{\"version\":\"%016llx\"}", static_cast<unsigned long long>(h));
    return std::string(buf);
  }();
  return json;
}

// Scripts only from this server, no inline script, no plugins, no framing; styles may be inline (the chart
// colours its series with style attributes); images may be data: URLs (the page's empty favicon).
constexpr char kContentSecurityPolicy[] =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

bool AcceptsGzip(const httplib::Request& req) {
  const std::string accept = req.get_header_value("Accept-Encoding");
  size_t pos = accept.find("gzip");
  if (pos == std::string::npos) return false;
  // "gzip;q=0" refuses it.
  const size_t end = accept.find(',', pos);
  const std::string item = accept.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  const size_t q = item.find("q=");
  return q == std::string::npos || std::strtod(item.c_str() + q + 2, nullptr) > 0;
}

void ServeAsset(const WebAsset& a, const httplib::Request& req, httplib::Response& res) {
  res.set_header("ETag", a.etag);
  res.set_header("Cache-Control", "no-cache");  // revalidated each time: a new build is seen at once
  res.set_header("Vary", "Accept-Encoding");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  if (req.get_header_value("If-None-Match") == a.etag) {
    res.status = 304;
    return;
  }
  const bool gzip = AcceptsGzip(req);
  if (gzip) res.set_header("Content-Encoding", "gzip");
  const char* bytes = reinterpret_cast<const char*>(gzip ? a.gz : a.raw);
  // A sized content provider: cpp-httplib compresses a plain body itself when the client accepts gzip (so
  // the gzipped bytes would be compressed twice), never a provider's.
  res.set_content_provider(gzip ? a.gz_size : a.raw_size, a.content_type,
                           [bytes](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(bytes + offset, length);
                           });
}

}  // namespace

const WebAsset* FindWebAsset(const std::string& url_path) {
  std::string path;
  if (url_path == "/" || url_path == "/index.html") {
    path = "/index.html";
  } else if (IsRootFile(url_path)) {
    path = url_path;
  } else if (url_path.rfind(kPagePrefix, 0) == 0) {
    path = url_path.substr(sizeof(kPagePrefix) - 2);  // keeps the slash: "/ui/js/app.js" -> "/js/app.js"
  } else {
    return nullptr;
  }
  for (const WebAsset& a : WebAssets()) {
    if (path == a.path) return &a;
  }
  return nullptr;
}

bool IsWebUiPath(const std::string& url_path) {
  return url_path == "/" || url_path == "/index.html" || url_path.rfind(kPagePrefix, 0) == 0 ||
         IsRootFile(url_path) || url_path == kVersionPath;
}

void RegisterWebUiRoutes(ServerState& st) {
  if (!st.opts.webui) return;
  auto handler = [](const httplib::Request& req, httplib::Response& res) {
    const WebAsset* a = FindWebAsset(req.path);
    if (a == nullptr) return SetError(res, 404, "no file " + req.path + " in the web page");
    ServeAsset(*a, req, res);
  };
  st.http.Get("/", handler);
  st.http.Get("/index.html", handler);
  st.http.Get(R"(/ui/.+)", handler);
  for (const char* f : kRootFiles) st.http.Get(f, handler);
  st.http.Get(kVersionPath, [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_content(VersionJson(), "application/json; charset=utf-8");
  });
}

}  // namespace lazyslot::server
