// The web page served at / (webui/ in the repository, embedded at build time by cmake/embed_webui.cmake):
// the asset table and the routes that serve it. Off with --no-webui (llama-server's --no-ui too).
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace lazyslot::server {

// One file of webui/: its URL path below /ui ("/index.html", "/js/app.js"), Content-Type, ETag (quoted: the
// first 16 hex digits of the plain bytes' SHA-256), bytes as is and gzipped (a gzip stream with a zero
// timestamp).
struct WebAsset {
  const char* path;
  const char* content_type;
  const char* etag;
  const unsigned char* raw;
  size_t raw_size;
  const unsigned char* gz;
  size_t gz_size;
};

// Every embedded file, sorted by path (generated: build/generated/webui_assets.cpp).
std::span<const WebAsset> WebAssets();

// The asset for a URL path: "/" and "/index.html" are the page, "/ui/<path>" any file; null otherwise.
const WebAsset* FindWebAsset(const std::string& url_path);

// True for the paths the page is served at (public under --api-key: the page asks for the key itself).
bool IsWebUiPath(const std::string& url_path);

}  // namespace lazyslot::server
