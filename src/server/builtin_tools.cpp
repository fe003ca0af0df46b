// Built-in agent tools confined to the --tools-dir folder (see builtin_tools.h).
#include "server/builtin_tools.h"

#include <fcntl.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <set>
#include <string_view>
#include <system_error>
#include <type_traits>

extern char** environ;

namespace lazyslot::server {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxGlobResults = 100;     // entries file_glob_search shows (llama-server's cap)
constexpr size_t kMaxGrepMatches = 100;     // matches grep_search shows
constexpr double kWalkBudgetS = 15;         // time one folder walk may take
constexpr size_t kMaxWalkEntries = 200000;  // entries one walk may visit
constexpr size_t kMaxWholeFile = 16 << 20;  // files edit_file and grep_search read whole
constexpr size_t kMaxShownLine = 2000;      // bytes of one matching line grep_search prints
constexpr size_t kMaxPattern = 1000;        // glob pattern length (matching costs pattern x path)
constexpr const char* kExec = "exec_shell_command";

struct ToolInfo {
  const char* name;
  const char* display_name;
  bool write;  // llama-server's permissions.write: the UI asks before running it
};
constexpr ToolInfo kTools[] = {
    {"read_file", "Read file", false},          {"file_glob_search", "File search", false},
    {"grep_search", "Grep search", false},      {kExec, "Execute shell command", true},
    {"write_file", "Write file", true},         {"edit_file", "Edit file", true},
    {"get_datetime", "Get Date & Time", false}, {"get_info", "Get Runtime Info", false},
};

const ToolInfo* FindTool(const std::string& name) {
  for (const ToolInfo& t : kTools) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

bool Enabled(const BuiltinToolsConfig& config, const std::string& name) {
  return std::find(config.enabled.begin(), config.enabled.end(), name) != config.enabled.end();
}

std::string KnownNames() {
  std::string s;
  for (const ToolInfo& t : kTools) s += std::string(s.empty() ? "" : ", ") + t.name;
  return s;
}

Json ToolError(std::string message) { return Json{{"error", std::move(message)}}; }

std::string ErrnoText(int err) { return std::error_code(err, std::generic_category()).message(); }

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
size_t Utf8Boundary(std::string_view s, size_t n) {
  if (n >= s.size()) return s.size();
  size_t m = n;
  while (m > 0 && n - m < 3 && (static_cast<unsigned char>(s[m]) & 0xC0) == 0x80) --m;
  return m;
}

// `s`'s length without a character that has not fully arrived yet.
size_t Utf8Complete(const std::string& s) {
  size_t j = s.size();
  while (j > 0 && s.size() - j < 3 && (static_cast<unsigned char>(s[j - 1]) & 0xC0) == 0x80) --j;
  if (j == 0) return s.size();
  const unsigned char lead = static_cast<unsigned char>(s[j - 1]);
  const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return s.size() - (j - 1) < need ? j - 1 : s.size();
}

// Cuts `text` to `cap` bytes with a note saying so.
void CapText(std::string* text, size_t cap, const char* what) {
  if (text->size() <= cap) return;
  text->resize(Utf8Boundary(*text, cap));
  *text += "\n[" + std::string(what) + " truncated at " + std::to_string(cap) + " bytes]\n";
}

// ---- confinement

// True when `p` is `root` or below it (both absolute and normalised).
bool IsInside(const fs::path& root, const fs::path& p) {
  auto q = p.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++q) {
    if (q == p.end() || *q != *r) return false;
  }
  return true;
}

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

// The working directory: the x-tool-cwd header, else params.cwd, else the root. "" or an error message.
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

// ---- file access: never through a symlink at the last step (the path was resolved already), never
// blocking on a FIFO, regular files only.

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

// Reads all of `fd`, refusing files over `max` bytes.
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

// Writes `content` to `path` (already confined), making its folders inside the root first.
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

// The lines of `text` without their '\n' (views into `text`).
std::vector<std::string_view> SplitLines(const std::string& text) {
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < text.size();) {
    const size_t nl = std::min(text.find('\n', at), text.size());
    lines.emplace_back(text.data() + at, nl - at);
    at = nl + 1;
  }
  return lines;
}

// ---- globs

// '*' and '?' stay within one name, "**" crosses folders, "**/" is zero or more whole folders, [a-z] [!x]
// [^x] are classes. Matched by dynamic programming, so no pattern can take exponential time.
class Glob {
 public:
  explicit Glob(const std::string& pattern) {
    for (size_t i = 0; i < pattern.size(); ++i) {
      const char c = pattern[i];
      if (c == '*' && i + 1 < pattern.size() && pattern[i + 1] == '*') {
        const bool slash = i + 2 < pattern.size() && pattern[i + 2] == '/';
        toks_.emplace_back(slash ? kStarsSlash : kStars);
        i += slash ? 2 : 1;
      } else if (c == '*') {
        toks_.emplace_back(kStar);
      } else if (c == '?') {
        toks_.emplace_back(kAny);
      } else if (c == '[' && ParseClass(pattern, &i)) {
      } else {
        toks_.emplace_back(kChar, c);
      }
    }
  }

  bool Match(const std::string& s) const {
    const size_t n = s.size(), w = n + 1;
    // next[j]: tokens after the current one match s[j..]; cur[j]: the current one onwards does.
    std::vector<char> next(w, 0), cur(w, 0);
    next[n] = 1;
    for (size_t t = toks_.size(); t-- > 0;) {
      const Tok& k = toks_[t];
      bool slash_ahead = false;  // for "**/": some '/' at or after j is followed by a match
      for (size_t j = w; j-- > 0;) {
        const bool has = j < n;
        const char ch = has ? s[j] : 0;
        switch (k.op) {
          case kChar:
            cur[j] = has && ch == k.c && next[j + 1];
            break;
          case kAny:
            cur[j] = has && ch != '/' && next[j + 1];
            break;
          case kClass:
            cur[j] = has && ch != '/' && InClass(k, ch) && next[j + 1];
            break;
          case kStar:
            cur[j] = next[j] || (has && ch != '/' && cur[j + 1]);
            break;
          case kStars:
            cur[j] = next[j] || (has && cur[j + 1]);
            break;
          case kStarsSlash:
            slash_ahead = slash_ahead || (has && ch == '/' && next[j + 1]);
            cur[j] = next[j] || slash_ahead;
            break;
        }
      }
      std::swap(next, cur);
    }
    return next[0];
  }

 private:
  enum Op { kChar, kAny, kStar, kStars, kStarsSlash, kClass };
  struct Tok {
    explicit Tok(Op o, char ch = 0) : op(o), c(ch) {}
    Op op;
    char c;
    std::string set;  // kClass: single characters and a-z ranges
    bool negate = false;
  };

  // A class at pattern[*i] == '['; false (a literal '[') when it never closes.
  bool ParseClass(const std::string& p, size_t* i) {
    size_t j = *i + 1;
    Tok t(kClass);
    if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
      t.negate = true;
      ++j;
    }
    const size_t first = j;
    while (j < p.size() && (p[j] != ']' || j == first)) ++j;
    if (j >= p.size()) return false;
    t.set = p.substr(first, j - first);
    toks_.push_back(std::move(t));
    *i = j;
    return true;
  }

  static bool InClass(const Tok& k, char ch) {
    bool in = false;
    for (size_t i = 0; i < k.set.size() && !in; ++i) {
      if (i + 2 < k.set.size() && k.set[i + 1] == '-') {
        in = ch >= k.set[i] && ch <= k.set[i + 2];
        i += 2;
      } else {
        in = ch == k.set[i];
      }
    }
    return in != k.negate;
  }

  std::vector<Tok> toks_;
};

// include/exclude as llama-server reads them: no '/' -> the basename at any depth; with '/' -> the relative
// path, as if prefixed with "**/" unless it starts with "**" or '/' (anchored at the searched folder).
struct PathGlob {
  explicit PathGlob(std::string pattern)
      : basename(pattern.find('/') == std::string::npos),
        glob(basename || pattern.rfind("**", 0) == 0 ? pattern
             : pattern[0] == '/'                     ? pattern.substr(1)
                                                     : "**/" + pattern) {}
  bool Match(const std::string& rel) const {
    return glob.Match(basename ? rel.substr(rel.rfind('/') + 1) : rel);
  }
  bool basename;
  Glob glob;
};

// ---- folder walks

enum class Kind { kFiles, kDirs, kAll };
struct Entry {
  std::string rel;  // '/'-separated, relative to the walked folder
  bool is_dir;
  fs::path real;  // the file itself (a symlink's target)
};
struct Listing {
  std::vector<Entry> entries;
  bool truncated = false;  // time budget, entry cap or an unreadable folder
};

bool IsJunkDir(const std::string& name) {
  static const std::set<std::string> kJunk = {".git",   ".svn",  ".hg",    "node_modules", "__pycache__",
                                              ".venv",  "venv",  "dist",   "build",        "target",
                                              ".cache", ".idea", ".vscode"};
  return kJunk.count(name) > 0;
}

// Walks `base` (inside the root). Symlinks are listed only when their target is inside the root and are
// never walked (no escape, no loops); junk folders are listed but not walked. max_depth 0 = unlimited.
Listing Walk(const fs::path& root, const fs::path& base, long long max_depth, Kind kind) {
  Listing out;
  const auto deadline = Clock::now() + std::chrono::duration<double>(kWalkBudgetS);
  size_t visited = 0;
  std::vector<std::pair<fs::path, long long>> stack = {{fs::path(), 0}};
  while (!stack.empty()) {
    const auto [rel_dir, depth] = stack.back();
    stack.pop_back();
    std::error_code ec;
    fs::directory_iterator it(base / rel_dir, fs::directory_options::skip_permission_denied, ec);
    for (const fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
      if (++visited > kMaxWalkEntries || Clock::now() > deadline) {
        out.truncated = true;
        stack.clear();
        break;
      }
      const std::string name = it->path().filename().string();
      const fs::path rel = rel_dir / name;
      std::error_code sec;
      const fs::file_status ls = it->symlink_status(sec);
      if (sec) continue;
      fs::path real = base / rel;
      bool walk = fs::is_directory(ls);
      fs::file_status target = ls;
      if (fs::is_symlink(ls)) {
        real = fs::canonical(real, sec);
        if (sec || !IsInside(root, real)) continue;
        target = fs::status(real, sec);
        if (sec) continue;
        walk = false;
      }
      if (fs::is_directory(target)) {
        if (kind != Kind::kFiles) out.entries.push_back({rel.generic_string(), true, real});
        if (walk && !IsJunkDir(name) && (max_depth == 0 || depth + 1 < max_depth)) {
          stack.emplace_back(rel, depth + 1);
        }
      } else if (fs::is_regular_file(target) && kind != Kind::kDirs) {
        out.entries.push_back({rel.generic_string(), false, real});
      }
    }
    if (ec) out.truncated = true;
  }
  std::sort(out.entries.begin(), out.entries.end(),
            [](const Entry& a, const Entry& b) { return a.rel < b.rel; });
  return out;
}

// ---- the tools. Each returns the result JSON, a {"error"} JSON, or a Status for malformed params.

Result<Json> ReadFileTool(const BuiltinToolsConfig& config, const Place& place, const Json& p) {
  std::string given;
  long long start = 1, end = -1;
  bool loc = false;
  LS_RETURN_IF_ERROR(Read(p, "path", &given, true));
  LS_RETURN_IF_ERROR(Read(p, "start_line", &start));
  LS_RETURN_IF_ERROR(Read(p, "end_line", &end));
  LS_RETURN_IF_ERROR(Read(p, "append_loc", &loc));
  fs::path path;
  std::string error;
  if (!Confine(place, place.cwd, given, "path", &path, &error)) return ToolError(error);
  std::string content;
  {
    Fd fd(OpenRegular(path, given, false, &error));
    if (fd.get() < 0 || !ReadAll(fd.get(), kMaxWholeFile, &content, &error)) return ToolError(error);
  }
  const size_t cap = config.max_output_bytes;
  const std::vector<std::string_view> lines = SplitLines(content);
  std::string text;
  for (long long n = std::max(1LL, start); n <= static_cast<long long>(lines.size()); ++n) {
    if (end != -1 && n > end) break;
    std::string line = loc ? std::to_string(n) + "\xE2\x86\x92" : std::string();
    line.append(lines[n - 1]).append("\n");
    if (text.size() + line.size() > cap) {
      text.append(line, 0, Utf8Boundary(line, cap - text.size()));
      text += "\n[output truncated at " + std::to_string(cap) +
              " bytes; read a smaller range with start_line/end_line]";
      break;
    }
    text += line;
  }
  return Json{{"plain_text_response", text}};
}

Result<Json> GlobTool(const BuiltinToolsConfig& config, const Place& place, const Json& p) {
  std::string given, include = "**", exclude, type = "file";
  long long max_depth = 0, limit = kMaxGlobResults;
  LS_RETURN_IF_ERROR(Read(p, "path", &given, true));
  LS_RETURN_IF_ERROR(Read(p, "include", &include));
  LS_RETURN_IF_ERROR(Read(p, "exclude", &exclude));
  LS_RETURN_IF_ERROR(Read(p, "type", &type));
  LS_RETURN_IF_ERROR(Read(p, "max_depth", &max_depth));
  LS_RETURN_IF_ERROR(Read(p, "limit", &limit));
  if (limit < 1) return ToolError("invalid limit: " + std::to_string(limit) + " (expected 1 or more)");
  const Kind kind = type == "file" ? Kind::kFiles : type == "dir" ? Kind::kDirs : Kind::kAll;
  if (type != "file" && type != "dir" && type != "all") {
    return ToolError("invalid type: " + type + " (expected \"file\", \"dir\" or \"all\")");
  }
  if (include.size() > kMaxPattern || exclude.size() > kMaxPattern) return ToolError("glob pattern too long");
  fs::path base;
  std::string error;
  if (!Confine(place, place.cwd, given, "path", &base, &error)) return ToolError(error);
  std::error_code ec;
  if (!fs::is_directory(base, ec)) return ToolError("path does not exist or is not a folder: " + given);
  const Listing listing = Walk(place.root, base, std::max(0LL, max_depth), kind);
  const PathGlob inc(include), exc(exclude);
  size_t total = 0;
  std::string text;
  Json entries = Json::array();
  for (const Entry& e : listing.entries) {
    if (!inc.Match(e.rel) || (!exclude.empty() && exc.Match(e.rel))) continue;
    if (++total > static_cast<size_t>(std::min<long long>(limit, kMaxGlobResults))) continue;
    text += e.rel + (e.is_dir ? "/\n" : "\n");
    entries.push_back({{"path", e.rel}, {"type", e.is_dir ? "dir" : "file"}});
  }
  CapText(&text, config.max_output_bytes, "listing");
  text += "\n---\nTotal matches: " + std::to_string(total) + "\n";
  if (total > entries.size()) {
    text += "[showing the first " + std::to_string(entries.size()) + " of " + std::to_string(total) +
            " matches; narrow the pattern to see the rest]\n";
  }
  if (listing.truncated) text += "[listing incomplete: time budget, size cap or an unreadable folder]\n";
  return Json{{"plain_text_response", text}, {"entries", entries}, {"base", base.string()}};
}

// A grep pattern: a plain substring (literal) or a POSIX extended regex, as grep -E takes it (glibc also
// knows \w \s \b; \d and \D are rewritten as classes). Not std::regex: it recurses per character and
// overflows the stack on long lines.
class LineMatcher {
 public:
  ~LineMatcher() {
    if (compiled_) ::regfree(&re_);
  }
  std::string Init(const std::string& pattern, bool literal, bool icase) {
    literal_ = literal;
    icase_ = icase;
    needle_ = icase ? Lower(pattern) : pattern;
    if (literal) return "";
    std::string ere;
    for (size_t i = 0; i < pattern.size(); ++i) {
      const bool esc = pattern[i] == '\\' && i + 1 < pattern.size();
      if (esc && (pattern[i + 1] == 'd' || pattern[i + 1] == 'D')) {
        ere += pattern[++i] == 'd' ? "[0-9]" : "[^0-9]";
      } else {
        ere += pattern[i];
        if (esc) ere += pattern[++i];
      }
    }
    const int rc = ::regcomp(&re_, ere.c_str(), REG_EXTENDED | REG_NOSUB | (icase ? REG_ICASE : 0));
    if (rc != 0) {
      char msg[256];
      ::regerror(rc, &re_, msg, sizeof msg);
      return std::string("invalid regex: ") + msg;
    }
    compiled_ = true;
    return "";
  }
  bool Match(std::string_view line) const {
    if (literal_) return (icase_ ? Lower(std::string(line)) : line).find(needle_) != std::string::npos;
    return ::regexec(&re_, std::string(line).c_str(), 0, nullptr, 0) == 0;
  }

 private:
  static std::string Lower(std::string s) {
    for (char& c : s) c = (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
    return s;
  }
  bool literal_ = true, icase_ = false, compiled_ = false;
  std::string needle_;
  regex_t re_{};
};

Result<Json> GrepTool(const BuiltinToolsConfig& config, const Place& place, const Json& p) {
  std::string given, pattern, include = "**", exclude;
  bool numbers = false, literal = false, icase = false;
  long long context = 0;
  LS_RETURN_IF_ERROR(Read(p, "path", &given, true));
  LS_RETURN_IF_ERROR(Read(p, "pattern", &pattern, true));
  LS_RETURN_IF_ERROR(Read(p, "include", &include));
  LS_RETURN_IF_ERROR(Read(p, "exclude", &exclude));
  LS_RETURN_IF_ERROR(Read(p, "return_line_numbers", &numbers));
  LS_RETURN_IF_ERROR(Read(p, "literal", &literal));
  LS_RETURN_IF_ERROR(Read(p, "ignore_case", &icase));
  LS_RETURN_IF_ERROR(Read(p, "context_lines", &context));
  context = std::clamp(context, 0LL, 100LL);
  if (include.size() > kMaxPattern || exclude.size() > kMaxPattern) return ToolError("glob pattern too long");
  LineMatcher matcher;
  if (std::string e = matcher.Init(pattern, literal, icase); !e.empty()) return ToolError(e);
  fs::path base;
  std::string error;
  if (!Confine(place, place.cwd, given, "path", &base, &error)) return ToolError(error);
  std::vector<std::pair<fs::path, std::string>> files;  // (file, name shown)
  std::error_code ec;
  if (fs::is_regular_file(base, ec)) {
    files.emplace_back(base, given);
  } else if (fs::is_directory(base, ec)) {
    const PathGlob inc(include), exc(exclude);
    for (const Entry& e : Walk(place.root, base, 0, Kind::kFiles).entries) {
      if (inc.Match(e.rel) && (exclude.empty() || !exc.Match(e.rel))) files.emplace_back(e.real, e.rel);
    }
  } else {
    return ToolError("path does not exist: " + given);
  }
  std::string text;
  size_t total = 0, skipped = 0;
  const bool show_numbers = numbers || context > 0;
  for (const auto& [file, shown] : files) {
    if (total >= kMaxGrepMatches) break;
    std::string content, read_error;
    Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    struct stat st;
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        !ReadAll(fd.get(), kMaxWholeFile, &content, &read_error) ||
        content.find('\0') != std::string::npos) {  // binary
      ++skipped;
      continue;
    }
    const std::vector<std::string_view> lines = SplitLines(content);
    for (size_t i = 0; i < lines.size() && total < kMaxGrepMatches; ++i) {
      if (!matcher.Match(lines[i])) continue;
      ++total;
      const size_t from = i >= static_cast<size_t>(context) ? i - context : 0;
      const size_t to = std::min(lines.size() - 1, i + static_cast<size_t>(context));
      for (size_t j = from; j <= to; ++j) {
        const char sep = j == i ? ':' : '-';
        text += shown + sep + (show_numbers ? std::to_string(j + 1) + sep : std::string());
        const std::string_view l = lines[j];
        text.append(l.substr(0, Utf8Boundary(l, kMaxShownLine)));
        text += l.size() <= kMaxShownLine ? "\n" : " [line cut]\n";
      }
      if (context > 0) text += "--\n";
    }
  }
  CapText(&text, config.max_output_bytes, "output");
  text += "\n---\nTotal matches: " + std::to_string(total) + "\n";
  if (total >= kMaxGrepMatches) {
    text += "[stopped at " + std::to_string(kMaxGrepMatches) + " matches; narrow path, pattern or include]\n";
  }
  if (skipped > 0) text += "[" + std::to_string(skipped) + " binary, large or unreadable files skipped]\n";
  return Json{{"plain_text_response", text}};
}

Result<Json> WriteFileTool(const Place& place, const Json& p) {
  std::string given, content;
  LS_RETURN_IF_ERROR(Read(p, "path", &given, true));
  LS_RETURN_IF_ERROR(Read(p, "content", &content, true));
  fs::path path;
  std::string error;
  if (!Confine(place, place.cwd, given, "path", &path, &error)) return ToolError(error);
  if (std::string e = WriteConfined(place, path, given, content); !e.empty()) return ToolError(e);
  return Json{{"result", "file written successfully"}, {"path", given}, {"bytes", content.size()}};
}

// Exact replacements, each old_text unique in the original content; the edits must not overlap.
Result<Json> EditFileTool(const Place& place, const Json& p) {
  std::string given;
  LS_RETURN_IF_ERROR(Read(p, "path", &given, true));
  auto edits = p.find("edits");
  if (edits == p.end() || edits->is_null()) return InvalidArgument("params.edits: is required");
  if (!edits->is_array() || edits->empty()) return ToolError("\"edits\" must be a non-empty array");
  fs::path path;
  std::string error, content;
  if (!Confine(place, place.cwd, given, "path", &path, &error)) return ToolError(error);
  {
    Fd fd(OpenRegular(path, given, false, &error));
    if (fd.get() < 0 || !ReadAll(fd.get(), kMaxWholeFile, &content, &error)) return ToolError(error);
  }
  struct Hit {
    size_t edit, at, len;
    std::string text;
  };
  std::vector<Hit> hits;
  for (size_t i = 0; i < edits->size(); ++i) {
    const Json& e = (*edits)[i];
    const std::string idx = "edits[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("old_text") || !e["old_text"].is_string() || !e.contains("new_text") ||
        !e["new_text"].is_string()) {
      return ToolError(idx + " must be an object with string fields old_text and new_text");
    }
    const std::string old_text = e["old_text"].get<std::string>();
    if (old_text.empty()) return ToolError(idx + ".old_text must not be empty");
    const size_t at = content.find(old_text);
    if (at == std::string::npos) {
      return ToolError("could not find " + idx + ".old_text in " + given +
                       "; it must match the file's current content exactly");
    }
    size_t count = 0;  // overlapping occurrences count too: "aa" is not unique in "aaa"
    for (size_t q = at; q != std::string::npos; q = content.find(old_text, q + 1)) ++count;
    if (count > 1) {
      return ToolError("found " + std::to_string(count) + " occurrences of " + idx + ".old_text in " + given +
                       "; it must be unique (add surrounding lines)");
    }
    hits.push_back({i, at, old_text.size(), e["new_text"].get<std::string>()});
  }
  std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.at < b.at; });
  for (size_t i = 1; i < hits.size(); ++i) {
    if (hits[i - 1].at + hits[i - 1].len > hits[i].at) {
      return ToolError("edits[" + std::to_string(hits[i - 1].edit) + "] and edits[" +
                       std::to_string(hits[i].edit) + "] overlap in " + given +
                       "; merge them into one edit or target separate text");
    }
  }
  std::string updated = content;
  for (auto h = hits.rbegin(); h != hits.rend(); ++h) updated.replace(h->at, h->len, h->text);
  if (updated == content) return ToolError("no changes made: the edits leave the file as it is");
  if (std::string e = WriteConfined(place, path, given, updated); !e.empty()) return ToolError(e);
  return Json{{"result", "file edited successfully"}, {"path", given}, {"edits_applied", hits.size()}};
}

Result<Json> DatetimeTool(const Json& p) {
  std::string format = "%Y-%m-%dT%H:%M:%SZ";
  LS_RETURN_IF_ERROR(Read(p, "format", &format));
  if (format.size() > 256) return ToolError("format string too long");
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char buf[1024];
  const size_t len = std::strftime(buf, sizeof buf, format.c_str(), &utc);
  if (len == 0) return ToolError("invalid format string");
  return Json{{"result", std::string(buf, len)}};
}

// llama-server runs `uname -a`; the same fields come from uname(2). No environment variables.
Json InfoTool(const Place& place) {
  struct utsname u;
  std::string os = "unknown";
  if (::uname(&u) == 0) {
    os = std::string(u.sysname) + " " + u.nodename + " " + u.release + " " + u.version + " " + u.machine;
  }
  return Json{{"os", os}, {"cwd", place.cwd.string()}};
}

// ---- exec_shell_command

struct ExecRequest {
  std::string command;
  double timeout_s = 0;
  size_t max_output = 0;
};

Status ParseExec(const BuiltinToolsConfig& config, const Json& p, ExecRequest* req) {
  long long timeout = 0, max_output = 0;
  LS_RETURN_IF_ERROR(Read(p, "command", &req->command, true));
  LS_RETURN_IF_ERROR(Read(p, "timeout", &timeout));
  LS_RETURN_IF_ERROR(Read(p, "max_output_size", &max_output));
  req->timeout_s = timeout > 0 ? std::min<double>(timeout, config.exec_timeout_s) : config.exec_timeout_s;
  req->max_output =
      max_output > 0 ? std::min<size_t>(max_output, config.max_output_bytes) : config.max_output_bytes;
  return Status();
}

struct ExecOutcome {
  std::string spawn_error;  // set when the shell never ran
  int exit_code = -1;       // 128 + signal for a killed shell, as shells report it
  bool timed_out = false, stopped = false, truncated = false;
};

// Passes output on in whole UTF-8 characters, up to `cap` bytes; the rest is read and dropped.
struct OutputSink {
  OutputSink(const std::function<bool(const std::string&)>& f, size_t c) : fn(f), cap(c) {}
  const std::function<bool(const std::string&)>& fn;
  size_t cap, sent = 0;
  bool truncated = false;
  std::string pending;

  bool Add(const char* data, size_t n) {
    if (truncated) return true;
    pending.append(data, n);
    size_t take = Utf8Complete(pending);
    if (take > cap - sent) {
      take = Utf8Boundary(pending, cap - sent);
      truncated = true;
    }
    const std::string piece = pending.substr(0, take);
    pending.erase(0, truncated ? pending.size() : take);
    sent += take;
    return piece.empty() || Call(piece);
  }
  bool Flush() {
    const std::string rest = pending.substr(0, truncated ? 0 : cap - sent);
    pending.clear();
    return rest.empty() || Call(rest);
  }
  bool Call(const std::string& piece) {
    try {
      return fn(piece);
    } catch (...) {
      return false;  // a throwing consumer stops the command like a gone client
    }
  }
};

// True once the child has ended; it stays a zombie (WNOWAIT), so its process group id cannot be reused
// before we kill the group and reap it.
bool ChildEnded(pid_t pid) {
  siginfo_t si{};
  if (::waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) return true;  // already reaped
  return si.si_pid == pid;
}

// Runs `/bin/sh -c command` in `cwd` in its own process group, stdin /dev/null, stdout and stderr merged
// into one pipe. The shell is NOT confined to the tools folder (it can read and write anything the server
// can, and sees the server's environment): that is why "all" leaves this tool out. When the shell ends, the
// rest of its process group (background jobs) is killed; on timeout or a stop, the whole group is.
ExecOutcome RunShell(const std::string& command, const fs::path& cwd, double timeout_s, size_t cap,
                     const std::function<bool(const std::string&)>& on_chunk) {
  ExecOutcome out;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    out.spawn_error = "pipe: " + ErrnoText(errno);
    return out;
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawnattr_init(&attr);
  ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  ::posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  ::posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  sigset_t no_signals, defaults;
  sigemptyset(&no_signals);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2})
    sigaddset(&defaults, s);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  ::posix_spawnattr_setpgroup(&attr, 0);
  ::posix_spawnattr_setsigmask(&attr, &no_signals);
  ::posix_spawnattr_setsigdefault(&attr, &defaults);
  std::string arg0 = "sh", arg1 = "-c", arg2 = command;
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ);
  ::posix_spawn_file_actions_destroy(&fa);
  ::posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  Fd rfd(fds[0]);
  if (rc != 0) {
    out.spawn_error = "cannot run /bin/sh in " + cwd.string() + ": " + ErrnoText(rc);
    return out;
  }
  ::fcntl(rfd.get(), F_SETFL, ::fcntl(rfd.get(), F_GETFL) | O_NONBLOCK);

  OutputSink sink{on_chunk, cap};
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::clamp(timeout_s, 0.0, 1e7)));
  auto grace = Clock::time_point::max();  // after the shell ended: how long to drain the pipe
  bool eof = false, ended = false;
  char buf[16384];
  while (true) {
    if (!ended && ChildEnded(pid)) {
      ended = true;
      ::kill(-pid, SIGKILL);  // leftover background jobs
      grace = Clock::now() + std::chrono::seconds(1);
    }
    const auto now = Clock::now();
    if (ended && (eof || now >= grace)) break;
    if (!ended && now >= deadline) {
      out.timed_out = true;
      break;
    }
    const auto until = std::min(ended ? grace : deadline, now + std::chrono::milliseconds(50));
    const int wait_ms =
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count() + 1);
    pollfd pfd{rfd.get(), POLLIN, 0};
    const int ready = ::poll(eof ? nullptr : &pfd, eof ? 0 : 1, wait_ms);
    if (ready <= 0 || eof) continue;
    const ssize_t n = ::read(rfd.get(), buf, sizeof buf);  // one read per turn keeps the clock checked
    if (n > 0 && !sink.Add(buf, n)) {
      out.stopped = true;
      break;
    }
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) eof = true;
  }
  ::kill(-pid, SIGKILL);  // safe: the unreaped leader keeps the group id ours
  int status = 0;
  pid_t waited;
  do waited = ::waitpid(pid, &status, 0);
  while (waited < 0 && errno == EINTR);
  if (waited == pid) {
    out.exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                    : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                          : -1;
  }
  if (!out.stopped && !sink.Flush()) out.stopped = true;
  out.truncated = sink.truncated;
  return out;
}

std::string ExecTail(const ExecOutcome& o, const ExecRequest& req) {
  std::string tail;
  if (o.truncated) tail += "\n[output truncated at " + std::to_string(req.max_output) + " bytes]";
  tail += "\n[exit code: " + std::to_string(o.exit_code) + "]";
  if (o.timed_out) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", req.timeout_s);
    tail += std::string(" [timed out: killed after the ") + limit + " s limit]";
  }
  return tail;
}

Result<Json> ExecTool(const BuiltinToolsConfig& config, const Place& place, const Json& p) {
  ExecRequest req;
  LS_RETURN_IF_ERROR(ParseExec(config, p, &req));
  std::string text;
  const ExecOutcome o =
      RunShell(req.command, place.cwd, req.timeout_s, req.max_output, [&text](const std::string& piece) {
        text += piece;
        return true;
      });
  if (!o.spawn_error.empty()) return ToolError(o.spawn_error);
  return Json{{"plain_text_response", text + ExecTail(o, req)}};
}

// ---- definitions (OpenAI function tools)

Json Prop(const char* type, const std::string& description) {
  return Json{{"type", type}, {"description", description}};
}

Json Function(const char* name, const std::string& description, Json properties,
              const std::vector<std::string>& required) {
  Json parameters = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) parameters["required"] = required;
  return Json{{"type", "function"},
              {"function", {{"name", name}, {"description", description}, {"parameters", parameters}}}};
}

Json Definition(const std::string& name, const BuiltinToolsConfig& config) {
  const std::string root = " Paths must stay inside " + config.root.string() + "; relative ones start there.";
  const std::string globs =
      " include/exclude: a pattern without '/' (\"*.cpp\") matches the file name at any depth, one with '/' "
      "matches the relative path (\"src/**/*.h\"). Folders such as .git, node_modules and build are not "
      "searched.";
  if (name == "read_file") {
    return Function("read_file", "Read a text file, optionally a 1-based line range." + root,
                    {{"path", Prop("string", "File to read")},
                     {"start_line", Prop("integer", "First line, 1-based (default 1)")},
                     {"end_line", Prop("integer", "Last line, inclusive (default: the end)")},
                     {"append_loc", Prop("boolean", "Prefix each line with its number (\"12\u2192...\")")}},
                    {"path"});
  }
  if (name == "file_glob_search") {
    return Function(
        "file_glob_search", "List files (or folders) under a folder that match a glob." + globs + root,
        {{"path", Prop("string", "Folder to search")},
         {"include", Prop("string", "Glob to include (default **)")},
         {"exclude", Prop("string", "Glob to exclude")},
         {"type", Prop("string", "\"file\" (default), \"dir\" or \"all\"; folders end with '/'")},
         {"max_depth", Prop("integer", "Deepest level to list: 1 = direct children (default 0 = any)")},
         {"limit", Prop("integer", "Most results to show, at most 100 (default 100)")}},
        {"path"});
  }
  if (name == "grep_search") {
    return Function(
        "grep_search",
        "Search files for a POSIX extended regular expression (as grep -E; \\d works too) or a literal "
        "string; prints path:line for each match, at most 100." +
            globs + root,
        {{"path", Prop("string", "File or folder to search")},
         {"pattern", Prop("string", "Pattern to look for")},
         {"include", Prop("string", "Glob of files to search (default **)")},
         {"exclude", Prop("string", "Glob of files to skip")},
         {"return_line_numbers", Prop("boolean", "Print line numbers")},
         {"literal", Prop("boolean", "Take the pattern as plain text (default false)")},
         {"ignore_case", Prop("boolean", "Ignore case (default false)")},
         {"context_lines", Prop("integer", "Lines to show before and after each match (default 0)")}},
        {"path", "pattern"});
  }
  if (name == kExec) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", config.exec_timeout_s);
    return Function(
        kExec, "Run a command with /bin/sh -c; returns stdout and stderr together and the exit code.",
        {{"command", Prop("string", "Shell command")},
         {"timeout",
          Prop("integer", std::string("Seconds before it is killed (default and most: ") + limit + ")")},
         {"max_output_size", Prop("integer", "Most output bytes to return (default and most: " +
                                                 std::to_string(config.max_output_bytes) + ")")}},
        {"command"});
  }
  if (name == "write_file") {
    return Function(
        "write_file", "Create or overwrite a file (and its missing folders)." + root,
        {{"path", Prop("string", "File to write")}, {"content", Prop("string", "The whole content")}},
        {"path", "content"});
  }
  if (name == "edit_file") {
    Json edit = {{"type", "object"},
                 {"properties",
                  {{"old_text", Prop("string", "Exact text to replace; must occur once in the file")},
                   {"new_text", Prop("string", "Replacement text")}}},
                 {"required", Json::array({"old_text", "new_text"})}};
    return Function(
        "edit_file",
        "Replace exact text in a file. Every old_text is looked up in the file as it is now, must be "
        "unique there and must not overlap another edit." +
            root,
        {{"path", Prop("string", "File to edit")},
         {"edits", {{"type", "array"}, {"description", "Replacements to apply"}, {"items", edit}}}},
        {"path", "edits"});
  }
  if (name == "get_datetime") {
    return Function("get_datetime", "The current date and time in UTC.",
                    {{"format", Prop("string", "strftime format (default \"%Y-%m-%dT%H:%M:%SZ\")")}}, {});
  }
  return Function("get_info", "The operating system and the current working directory.", Json::object(), {});
}

Json Done(const std::string& error) { return Json{{"done", true}, {"error", error}}; }

}  // namespace

const std::vector<std::string>& BuiltinToolNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const ToolInfo& t : kTools) v.emplace_back(t.name);
    return v;
  }();
  return names;
}

Result<std::vector<std::string>> ParseToolList(const std::string& csv) {
  std::set<std::string> wanted;
  bool all = false;
  for (size_t at = 0; at <= csv.size();) {
    size_t comma = std::min(csv.find(',', at), csv.size());
    std::string name = csv.substr(at, comma - at);
    at = comma + 1;
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name.empty()) continue;
    if (name == "all") {
      all = true;
    } else if (!FindTool(name)) {
      return InvalidArgument("--tools: unknown tool \"" + name + "\"; known tools: " + KnownNames() +
                             ", or all");
    } else {
      wanted.insert(name);
    }
  }
  std::vector<std::string> out;
  for (const ToolInfo& t : kTools) {
    if (wanted.count(t.name) || (all && t.name != std::string(kExec))) out.emplace_back(t.name);
  }
  return out;
}

Json BuiltinToolDefinitions(const BuiltinToolsConfig& config) {
  Json list = Json::array();
  for (const ToolInfo& t : kTools) {
    if (!Enabled(config, t.name)) continue;
    list.push_back({{"display_name", t.display_name},
                    {"tool", t.name},
                    {"type", "builtin"},
                    {"permissions", {{"write", t.write}}},
                    {"definition", Definition(t.name, config)}});
  }
  return list;
}

Result<Json> RunBuiltinTool(const BuiltinToolsConfig& config, const std::string& tool, const Json& params,
                            const std::string& cwd_header) {
  if (!FindTool(tool)) return NotFound("unknown tool \"" + tool + "\"; known tools: " + KnownNames());
  if (!Enabled(config, tool))
    return NotFound("tool \"" + tool + "\" is not enabled on this server (--tools)");
  if (!params.is_object() && !params.is_null()) return InvalidArgument("params: expected an object");
  const Json p = params.is_object() ? params : Json::object();
  try {
    if (tool == "get_datetime") return DatetimeTool(p);
    Place place;
    if (std::string e = MakePlace(config, p, cwd_header, &place); !e.empty()) return ToolError(e);
    if (tool == "read_file") return ReadFileTool(config, place, p);
    if (tool == "file_glob_search") return GlobTool(config, place, p);
    if (tool == "grep_search") return GrepTool(config, place, p);
    if (tool == "write_file") return WriteFileTool(place, p);
    if (tool == "edit_file") return EditFileTool(place, p);
    if (tool == kExec) return ExecTool(config, place, p);
    return InfoTool(place);
  } catch (const std::exception& e) {  // allocation failures and the like: the tool fails, the server lives
    return ToolError(tool + " failed: " + e.what());
  }
}

Json RunShellStreaming(const BuiltinToolsConfig& config, const Json& params, const std::string& cwd_header,
                       const std::function<bool(const std::string& chunk)>& on_chunk) {
  try {
    if (!Enabled(config, kExec))
      return Done("tool \"exec_shell_command\" is not enabled on this server (--tools)");
    if (!params.is_object()) return Done("params: expected an object");
    Place place;
    if (std::string e = MakePlace(config, params, cwd_header, &place); !e.empty()) return Done(e);
    ExecRequest req;
    if (Status st = ParseExec(config, params, &req); !st.ok()) return Done(st.message());
    const ExecOutcome o = RunShell(req.command, place.cwd, req.timeout_s, req.max_output, on_chunk);
    if (!o.spawn_error.empty()) return Done(o.spawn_error);
    if (o.stopped) return Done("stopped: the client went away and the command was killed");
    try {
      on_chunk(ExecTail(o, req));
    } catch (...) {
    }
    return Json{{"done", true}};
  } catch (const std::exception& e) {
    return Done(std::string("exec_shell_command failed: ") + e.what());
  }
}

}  // namespace lazyslot::server
