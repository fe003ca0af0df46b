// Shared by the fuzz targets: property checks that crash under libFuzzer (so the input is saved as a crash)
// and throw in the regression runner (tests/fuzz), which reports the failing file instead of dying.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace lazyslot::fuzz {

// Thrown (regression runner only) when a fuzz target's property does not hold.
struct PropertyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void Fail(const char* file, int line, const std::string& what) {
  const std::string msg = std::string(file) + ":" + std::to_string(line) + ": property failed: " + what;
#ifdef LAZYSLOT_FUZZ_REGRESSION
  throw PropertyError(msg);
#else
  std::fprintf(stderr, "%s\n", msg.c_str());
  std::fflush(stderr);
  std::abort();
#endif
}

// Printable, bounded rendering of bytes for failure messages.
inline std::string Escape(const std::string& s, size_t max = 200) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02X", c);
      out += hex;
    }
  }
  if (s.size() > max) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

}  // namespace lazyslot::fuzz

#define FUZZ_CHECK(cond, what)                                                  \
  do {                                                                          \
    if (!(cond)) ::lazyslot::fuzz::Fail(__FILE__, __LINE__, std::string(#cond) + ": " + (what)); \
  } while (0)
