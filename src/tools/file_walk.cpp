// Globs and folder walks for file_glob_search and grep_search (see file_walk.h).
#include "tools/file_walk.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <system_error>
#include <utility>

#include "tools/confine.h"

namespace lazyslot::tools::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kWalkBudgetS = 15;         // time one folder walk may take
constexpr size_t kMaxWalkEntries = 200000;  // entries one walk may visit

// Folders listed but never walked: version control, dependencies, virtual environments, build outputs,
// caches.
bool IsJunkDir(const std::string& name) {
  static const std::set<std::string> kJunk = {".git",   ".svn",  ".hg",    "node_modules", "__pycache__",
                                              ".venv",  "venv",  "dist",   "build",        "target",
                                              ".cache", ".idea", ".vscode"};
  return kJunk.count(name) > 0;
}

}  // namespace

Glob::Glob(const std::string& pattern) {
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

bool Glob::Match(const std::string& s) const {
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

bool Glob::ParseClass(const std::string& p, size_t* i) {
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

bool Glob::InClass(const Tok& k, char ch) {
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

}  // namespace lazyslot::tools::internal
