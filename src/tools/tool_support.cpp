// Helpers shared by the built-in tools' files (see tool_support.h).
#include "tools/tool_support.h"

#include <algorithm>
#include <string>
#include <system_error>
#include <utility>

namespace lazyslot::tools::internal {

bool Enabled(const BuiltinToolsConfig& config, const std::string& name) {
  return std::find(config.enabled.begin(), config.enabled.end(), name) != config.enabled.end();
}

Json ToolError(std::string message) { return Json{{"error", std::move(message)}}; }

std::string ErrnoText(int err) { return std::error_code(err, std::generic_category()).message(); }

size_t Utf8Boundary(std::string_view s, size_t n) {
  if (n >= s.size()) return s.size();
  size_t m = n;
  while (m > 0 && n - m < 3 && (static_cast<unsigned char>(s[m]) & 0xC0) == 0x80) --m;
  return m;
}

size_t Utf8Complete(const std::string& s) {
  size_t j = s.size();
  while (j > 0 && s.size() - j < 3 && (static_cast<unsigned char>(s[j - 1]) & 0xC0) == 0x80) --j;
  if (j == 0) return s.size();
  const unsigned char lead = static_cast<unsigned char>(s[j - 1]);
  const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return s.size() - (j - 1) < need ? j - 1 : s.size();
}

void CapText(std::string* text, size_t cap, const char* what) {
  if (text->size() <= cap) return;
  text->resize(Utf8Boundary(*text, cap));
  *text += "\n[" + std::string(what) + " truncated at " + std::to_string(cap) + " bytes]\n";
}

}  // namespace lazyslot::tools::internal
