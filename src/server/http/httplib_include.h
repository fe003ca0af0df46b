// Includes cpp-httplib with the feature macros Debian's compiled libcpp-httplib was built with, so that the
// Request/Response layouts seen here match the library's (Request holds an SSL pointer under
// OPENSSL_SUPPORT).
#pragma once

#if __has_include(<openssl/ssl.h>) && !defined(CPPHTTPLIB_OPENSSL_SUPPORT)
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#if __has_include(<zlib.h>) && !defined(CPPHTTPLIB_ZLIB_SUPPORT)
#define CPPHTTPLIB_ZLIB_SUPPORT
#endif
#if __has_include(<brotli/decode.h>) && !defined(CPPHTTPLIB_BROTLI_SUPPORT)
#define CPPHTTPLIB_BROTLI_SUPPORT
#endif

#include <httplib.h>
