// Status names and formatting.
#include "core/status.h"

namespace lazyslot {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kNotFound: return "not_found";
    case Code::kOutOfRange: return "out_of_range";
    case Code::kCorrupt: return "corrupt";
    case Code::kUnimplemented: return "unimplemented";
    case Code::kResourceExhausted: return "resource_exhausted";
    case Code::kUnavailable: return "unavailable";
    case Code::kCancelled: return "cancelled";
    case Code::kIo: return "io_error";
    case Code::kInternal: return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace lazyslot
