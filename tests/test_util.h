// Helpers shared by the test binaries: where ../shared is, and how to skip (or fail in CI) when it is missing.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace lazyslot::testing {

inline std::string SharedDir() { return LAZYSLOT_SHARED_DIR; }
inline std::string SharedPath(const std::string& rel) { return SharedDir() + "/" + rel; }

inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

}  // namespace lazyslot::testing

// Use at the top of a test that needs a file under ../shared: fails in CI, skips loudly elsewhere.
#define REQUIRE_SHARED_FILE(rel)                                                                      \
  do {                                                                                                \
    const std::string ls_path_ = ::lazyslot::testing::SharedPath(rel);                                \
    if (!std::filesystem::exists(ls_path_)) {                                                         \
      if (::lazyslot::testing::InCi()) {                                                              \
        FAIL() << "shared test data missing (CI=true): " << ls_path_;                                 \
      } else {                                                                                        \
        std::fprintf(stderr, "\n*** SKIPPING: shared test data missing: %s ***\n\n", ls_path_.c_str()); \
        GTEST_SKIP() << "shared test data missing: " << ls_path_;                                     \
      }                                                                                               \
    }                                                                                                 \
  } while (0)
