// Globs and folder walks for file_glob_search and grep_search: glob matching that no pattern can make
// exponential, llama-server's include/exclude rules, and a bounded walk that never leaves the tools folder.
// Internal to the tools layer.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace lazyslot::tools::internal {

namespace fs = std::filesystem;

// ---- globs

// '*' and '?' stay within one name, "**" crosses folders, "**/" is zero or more whole folders, [a-z] [!x]
// [^x] are classes. Matched by dynamic programming, so no pattern can take exponential time.
class Glob {
 public:
  explicit Glob(const std::string& pattern);

  bool Match(const std::string& s) const;

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
  bool ParseClass(const std::string& p, size_t* i);

  static bool InClass(const Tok& k, char ch);

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

// Walks `base` (inside the root). Symlinks are listed only when their target is inside the root and are
// never walked (no escape, no loops); junk folders are listed but not walked. max_depth 0 = unlimited.
Listing Walk(const fs::path& root, const fs::path& base, long long max_depth, Kind kind);

}  // namespace lazyslot::tools::internal
