// Which build this is, in llama-server's shape: "b<number of commits>-<short commit hash>" ("b0-unknown" outside
// a git checkout). The server answers it as /props `build_info` and as every answer's `system_fingerprint`, as
// llama-server does, so clients and dashboards that parse llama-server's string read ours.
#pragma once

#include <string_view>

namespace lazyslot {

std::string_view BuildInfo();  // defined in the generated build_info.cpp (cmake/build_info.cpp.in)

}  // namespace lazyslot
