// Helpers shared by the built-in tools' files (internal to the tools layer, not part of its interface): which
// tools are enabled, a tool's own {"error"} result, reading request params, cutting text on UTF-8 character
// boundaries, and an owned file descriptor.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/status.h"
#include "tools/builtin_tools.h"

namespace lazyslot::tools::internal {

inline constexpr const char* kExec = "exec_shell_command";

// Whether `name` is in config.enabled.
bool Enabled(const BuiltinToolsConfig& config, const std::string& name);

// A failure of the tool itself ({"error": message}), which the route sends with HTTP 200.
Json ToolError(std::string message);

// The message of errno value `err`.
std::string ErrnoText(int err);

// ---- params: absent or null means the default; a wrong type is the caller's error (HTTP 400)

// Reads params[key] into a std::string, long long or bool.
template <typename T>
Status Read(const Json& p, const char* key, T* out, bool required = false) {
  const std::string name = std::string("params.") + key;
  auto it = p.find(key);
  if (it == p.end() || it->is_null()) return required ? InvalidArgument(name + ": is required") : Status();
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return InvalidArgument(name + ": expected a string, got " + it->type_name());
    *out = it->template get<std::string>();
    if (out->find('\0') != std::string::npos) return InvalidArgument(name + ": contains a NUL byte");
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return InvalidArgument(name + ": expected true or false");
    *out = it->template get<bool>();
  } else {
    const double d = it->is_number() ? it->template get<double>() : 0.5;
    if (!it->is_number_integer() && (std::abs(d) > 1e15 || d != std::trunc(d))) {
      return InvalidArgument(name + ": expected an integer");
    }
    *out = it->is_number_integer() ? it->template get<long long>() : static_cast<long long>(d);
  }
  return Status();
}

// ---- UTF-8: output is cut and streamed on character boundaries

// The largest m <= n that does not split a character of `s`.
size_t Utf8Boundary(std::string_view s, size_t n);

// `s`'s length without a character that has not fully arrived yet.
size_t Utf8Complete(const std::string& s);

// Cuts `text` to `cap` bytes with a note saying so.
void CapText(std::string* text, size_t cap, const char* what);

// ---- file descriptors

// Owns a file descriptor (-1: none) and closes it.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace lazyslot::tools::internal
