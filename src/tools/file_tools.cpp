// The file tools (see file_tools.h): read_file, file_glob_search, grep_search, write_file, edit_file.
#include "tools/file_tools.h"

#include <fcntl.h>
#include <regex.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "tools/file_walk.h"
#include "tools/tool_support.h"

namespace lazyslot::tools::internal {
namespace {

constexpr size_t kMaxGlobResults = 100;     // entries file_glob_search shows (llama-server's cap)
constexpr size_t kMaxGrepMatches = 100;     // matches grep_search shows
constexpr size_t kMaxWholeFile = 16 << 20;  // files edit_file and grep_search read whole
constexpr size_t kMaxShownLine = 2000;      // bytes of one matching line grep_search prints
constexpr size_t kMaxPattern = 1000;        // glob pattern length (matching costs pattern x path)

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace lazyslot::tools::internal
