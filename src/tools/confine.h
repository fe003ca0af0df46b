// Confinement to the tools folder (--tools-dir): every path a tool is given is resolved against the root,
// symlinks followed, and refused when it lands outside; the working directory of one call; file access that
// never follows a symlink at the last step nor makes a folder through one. Internal to the tools layer.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "tools/builtin_tools.h"

namespace lazyslot::tools::internal {

namespace fs = std::filesystem;

// True when `p` is `root` or below it (both absolute and normalised).
bool IsInside(const fs::path& root, const fs::path& p);

// The canonical root and working directory of one call.
struct Place {
  fs::path root;
  fs::path cwd;
};

// Resolves `given` against `base`, following every symlink of the part that exists, and refuses a result
// outside the root. The part that does not exist yet is normalised lexically, which can drop a "missing/.."
// and expose a symlink after it, so the resolution is repeated until it no longer changes. A dangling symlink
// left in that part is caught when the file is opened (O_NOFOLLOW) or its folder made (MakeDirs).
bool Confine(const Place& place, const fs::path& base, const std::string& given, const char* what,
             fs::path* out, std::string* error);

// The working directory: the x-tool-cwd header, else params.cwd, else the root. "" or an error message.
std::string MakePlace(const BuiltinToolsConfig& config, const Json& p, const std::string& header,
                      Place* place);

// ---- file access: never through a symlink at the last step (the path was resolved already), never
// blocking on a FIFO, regular files only.

// Opens `path` (already confined) for reading, or for writing (created if missing, not truncated); -1 with
// `*error` naming `given` when it cannot, or when it is a symlink or not a regular file.
int OpenRegular(const fs::path& path, const std::string& given, bool for_write, std::string* error);

// Reads all of `fd`, refusing files over `max` bytes.
bool ReadAll(int fd, size_t max, std::string* out, std::string* error);

// Writes `content` to `path` (already confined), making its folders inside the root first. "" or an error.
std::string WriteConfined(const Place& place, const fs::path& path, const std::string& given,
                          const std::string& content);

}  // namespace lazyslot::tools::internal
