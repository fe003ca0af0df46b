// Confinement to the tools folder (see confine.h): path resolution against the root, the working directory,
// folders made and files opened without following a symlink.
#include "tools/confine.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "tools/tool_support.h"

namespace lazyslot::tools::internal {

bool IsInside(const fs::path& root, const fs::path& p) {
  auto q = p.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++q) {
    if (q == p.end() || *q != *r) return false;
  }
  return true;
}

bool Confine(const Place& place, const fs::path& base, const std::string& given, const char* what,
             fs::path* out, std::string* error) {
  fs::path resolved = fs::path(given).is_absolute() ? fs::path(given) : base / given;
  for (int round = 0;; ++round) {
    std::error_code ec;
    fs::path again = fs::weakly_canonical(resolved, ec);
    if (ec || round == 8) {
      *error = std::string("cannot resolve ") + what + " '" + given + "'" + (ec ? ": " + ec.message() : "");
      return false;
    }
    if (again == resolved) break;
    resolved = std::move(again);
  }
  if (!IsInside(place.root, resolved)) {
    *error = std::string(what) + " '" + given + "' (" + resolved.string() +
             ") is outside the tools folder (--tools-dir " + place.root.string() + ")";
    return false;
  }
  *out = std::move(resolved);
  return true;
}

std::string MakePlace(const BuiltinToolsConfig& config, const Json& p, const std::string& header,
                      Place* place) {
  std::error_code ec;
  place->root = fs::canonical(config.root, ec);
  if (ec || !fs::is_directory(place->root, ec)) {
    return "the tools folder (--tools-dir " + config.root.string() + ") is not a folder";
  }
  std::string given = header;
  if (given.empty()) {
    auto it = p.find("cwd");
    if (it != p.end() && it->is_string()) given = it->get<std::string>();
  }
  if (given.find('\0') != std::string::npos) return "cwd contains a NUL byte";
  if (given.empty()) {
    place->cwd = place->root;
    return "";
  }
  std::string error;
  if (!Confine(*place, place->root, given, "cwd", &place->cwd, &error)) return error;
  if (!fs::is_directory(place->cwd, ec)) return "cwd '" + given + "' is not a folder";
  return "";
}

namespace {

// Makes the folders from the root down to `dir` (inside the root), refusing to pass through a symlink.
std::string MakeDirs(const fs::path& root, const fs::path& dir) {
  fs::path cur = root;
  for (const fs::path& part : dir.lexically_relative(root)) {
    if (part.empty() || part == ".") continue;
    cur /= part;
    struct stat st;
    if (::lstat(cur.c_str(), &st) != 0) {
      if (errno != ENOENT) return "cannot reach " + cur.string() + ": " + ErrnoText(errno);
      if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
        return "cannot create folder " + cur.string() + ": " + ErrnoText(errno);
      }
      if (::lstat(cur.c_str(), &st) != 0) return "cannot create folder " + cur.string();
    }
    if (S_ISLNK(st.st_mode)) return cur.string() + " is a symlink; the tools do not follow it";
    if (!S_ISDIR(st.st_mode)) return cur.string() + " is not a folder";
  }
  return "";
}

}  // namespace

int OpenRegular(const fs::path& path, const std::string& given, bool for_write, std::string* error) {
  const int flags = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (for_write ? O_WRONLY | O_CREAT : O_RDONLY);
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    *error = errno == ELOOP ? given + " is a symlink; the tools do not follow it"
                            : "cannot open " + given + ": " + ErrnoText(errno);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *error = given + " is not a regular file";
    return -1;
  }
  return fd;
}

bool ReadAll(int fd, size_t max, std::string* out, std::string* error) {
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return true;
    if (n < 0 || out->size() + n > max) {
      *error =
          n < 0 ? "read error: " + ErrnoText(errno) : "file larger than " + std::to_string(max) + " bytes";
      return false;
    }
    out->append(buf, n);
  }
}

std::string WriteConfined(const Place& place, const fs::path& path, const std::string& given,
                          const std::string& content) {
  if (std::string e = MakeDirs(place.root, path.parent_path()); !e.empty()) return e;
  std::string error;
  Fd fd(OpenRegular(path, given, true, &error));
  if (fd.get() < 0) return error;
  if (::ftruncate(fd.get(), 0) != 0) return "cannot truncate " + given + ": " + ErrnoText(errno);
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "cannot write " + given + ": " + ErrnoText(errno);
    done += n;
  }
  return "";
}

}  // namespace lazyslot::tools::internal
