// The router's model catalogue: directory scan, -m paths and the INI preset parser (model_catalog.h).
#include "router/model_catalog.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "core/log.h"

namespace lazyslot {
namespace fs = std::filesystem;

FileIdentity IdentifyFile(const std::string& path) {
  FileIdentity id;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    id.error = errno;
    return id;
  }
  if (!S_ISREG(st.st_mode)) {
    id.error = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    return id;
  }
  id.exists = true;
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return id;
}

std::string DescribeFileChange(const FileIdentity& before, const FileIdentity& now) {
  if (!now.exists) {
    if (!before.exists && before.error == now.error) return "";
    return std::string(before.exists ? "is gone (" : "is not a readable file (") + std::strerror(now.error) +
           ")";
  }
  if (!before.exists) return "appeared after it was listed";
  if (now.device != before.device || now.inode != before.inode) {
    return "was replaced (another file: inode " + std::to_string(before.inode) + " -> " +
           std::to_string(now.inode) + ")";
  }
  if (now.size < before.size) {
    return "was truncated (" + std::to_string(before.size) + " -> " + std::to_string(now.size) + " bytes)";
  }
  if (now.size != before.size) {
    return "was rewritten (" + std::to_string(before.size) + " -> " + std::to_string(now.size) + " bytes)";
  }
  if (now.mtime_ns != before.mtime_ns) return "was modified (same size, new modification time)";
  return "";
}

bool IsValidModelId(std::string_view id) {
  if (id.empty() || id.size() > 256 || id[0] == '.') return false;
  for (unsigned char c : id) {
    if (c < 0x20 || c == 0x7f || c == ' ' || c == ',') return false;
  }
  return true;
}

void ModelOverrides::ApplyTo(EngineConfig* config) const {
  if (n_ctx) config->n_ctx = *n_ctx;
  if (n_parallel) config->n_parallel = *n_parallel;
  if (embeddings) config->embeddings = *embeddings;
  if (pooling) config->pooling = *pooling;
  if (rerank) {
    if (*rerank) {
      config->pooling = PoolingType::kRank;
      config->embeddings = true;
    } else if (config->pooling == PoolingType::kRank) {
      config->pooling = PoolingType::kNone;
    }
  }
  if (cache_type_k) config->cache_type_k = *cache_type_k;
  if (cache_type_v) config->cache_type_v = *cache_type_v;
}

const char* ModelSourceName(ModelSource source) {
  switch (source) {
    case ModelSource::kModelsDir:
      return "models_dir";
    case ModelSource::kArgs:
      return "args";
    case ModelSource::kPreset:
      return "preset";
  }
  return "unknown";
}

bool CatalogEntry::SameDefinition(const CatalogEntry& o) const {
  return id == o.id && path == o.path && aliases == o.aliases && tags == o.tags && source == o.source &&
         overrides == o.overrides && chat_template == o.chat_template &&
         load_on_startup == o.load_on_startup && stop_timeout_s == o.stop_timeout_s && remote == o.remote;
}

Status RemoteModelError(const CatalogEntry& e) {
  return Unimplemented("model '" + e.id + "' (" + e.origin + ": " + e.remote +
                       ") needs a download, and downloads are not supported: lazyslot has no model hub "
                       "client and never uses the network. Download the .gguf yourself and give `model = "
                       "/path/file.gguf` in its preset section (or put the file in --models-dir), then "
                       "GET /models?reload=1");
}

namespace {

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

// A value: double-quoted (kept as is between the quotes, then only a comment may follow), or up to a '#' or
// ';' that follows whitespace.
Result<std::string> ParseValue(std::string_view raw, const std::string& where) {
  std::string v = Trim(raw);
  if (!v.empty() && v[0] == '"') {
    size_t close = v.find('"', 1);
    if (close == std::string::npos) return InvalidArgument(where + ": unterminated quoted value");
    std::string rest = Trim(std::string_view(v).substr(close + 1));
    if (!rest.empty() && rest[0] != '#' && rest[0] != ';') {
      return InvalidArgument(where + ": unexpected text after the quoted value: '" + rest + "'");
    }
    return v.substr(1, close - 1);
  }
  for (size_t i = 1; i < v.size(); ++i) {
    if ((v[i] == '#' || v[i] == ';') && (v[i - 1] == ' ' || v[i - 1] == '\t')) return Trim(v.substr(0, i));
  }
  return v;
}

// Canonical key names and their llama-server short forms.
const std::map<std::string, std::string>& KeyNames() {
  static const std::map<std::string, std::string> names = {
      {"model", "model"},
      {"m", "model"},
      {"alias", "alias"},
      {"a", "alias"},
      {"tags", "tags"},
      {"ctx-size", "ctx-size"},
      {"c", "ctx-size"},
      {"parallel", "parallel"},
      {"np", "parallel"},
      {"embeddings", "embeddings"},
      {"embedding", "embeddings"},
      {"pooling", "pooling"},
      {"rerank", "rerank"},
      {"reranking", "rerank"},
      {"chat-template", "chat-template"},
      {"cache-type-k", "cache-type-k"},
      {"ctk", "cache-type-k"},
      {"cache-type-v", "cache-type-v"},
      {"ctv", "cache-type-v"},
      {"load-on-startup", "load-on-startup"},
      {"stop-timeout", "stop-timeout"},
      // llama-server's download keys: recorded, never acted on (PresetSection::remote).
      {"hf-repo", "hf-repo"},
      {"hf_repo", "hf-repo"},
      {"hf", "hf-repo"},
      {"hfr", "hf-repo"},
      {"LLAMA_ARG_HF_REPO", "hf-repo"},
      {"hf-file", "hf-file"},
      {"hf_file", "hf-file"},
      {"hff", "hf-file"},
      {"LLAMA_ARG_HF_FILE", "hf-file"},
      {"model-url", "model-url"},
      {"model_url", "model-url"},
      {"mu", "model-url"},
      {"LLAMA_ARG_MODEL_URL", "model-url"},
      // Refused with a reason (SetKey).
      {"api-key", "api-key"},
      {"api_key", "api-key"},
      {"LLAMA_API_KEY", "api-key"},
  };
  return names;
}

Result<bool> ParseBool(const std::string& v, const std::string& where) {
  if (v == "true" || v == "on" || v == "enabled" || v == "1") return true;
  if (v == "false" || v == "off" || v == "disabled" || v == "0") return false;
  return InvalidArgument(where + ": expected a boolean (true/false, on/off, enabled/disabled, 1/0), got '" +
                         v + "'");
}

Result<int64_t> ParseInt(const std::string& v, int64_t lo, int64_t hi, const std::string& where) {
  if (v.empty()) return InvalidArgument(where + ": expected an integer, got nothing");
  int64_t x = 0;
  size_t i = v[0] == '-' ? 1 : 0;
  if (i == v.size()) return InvalidArgument(where + ": expected an integer, got '" + v + "'");
  for (; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9' || x > (int64_t{1} << 40)) {
      return InvalidArgument(where + ": expected an integer, got '" + v + "'");
    }
    x = x * 10 + (v[i] - '0');
  }
  if (v[0] == '-') x = -x;
  if (x < lo || x > hi) {
    return InvalidArgument(where + ": " + v + " is out of range [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  }
  return x;
}

Result<std::vector<std::string>> ParseAliases(const std::string& v, const std::string& where) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string a;
  while (std::getline(ss, a, ',')) {
    a = Trim(a);
    if (a.empty()) continue;
    if (!IsValidModelId(a)) {
      return InvalidArgument(where + ": invalid alias '" + a +
                             "' (no spaces or control characters, not starting with '.')");
    }
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  return out;
}

// "b, a,,b" -> {"a", "b"}: trimmed, sorted, unique (as llama-server's set); no control characters.
Result<std::vector<std::string>> ParseTags(const std::string& v, const std::string& where) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string t;
  while (std::getline(ss, t, ',')) {
    t = Trim(t);
    if (t.empty()) continue;
    for (unsigned char c : t) {
      if (c < 0x20 || c == 0x7f) return InvalidArgument(where + ": a control character in tag '" + t + "'");
    }
    out.push_back(t);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Sets one key of `s` (canonical name), checking its value.
Status SetKey(PresetSection* s, const std::string& key, const std::string& v, const std::string& where,
              const std::string& base_dir) {
  ModelOverrides& o = s->overrides;
  if (key == "model") {
    if (v.empty()) return InvalidArgument(where + ": model needs a path");
    fs::path p(v);
    s->model = (p.is_absolute() || base_dir.empty() ? p : fs::path(base_dir) / p).lexically_normal().string();
  } else if (key == "alias") {
    LS_ASSIGN_OR_RETURN(s->aliases, ParseAliases(v, where));
  } else if (key == "tags") {
    LS_ASSIGN_OR_RETURN(s->tags, ParseTags(v, where));
  } else if (key == "ctx-size") {
    LS_ASSIGN_OR_RETURN(int64_t n, ParseInt(v, 1, int64_t{1} << 30, where));
    o.n_ctx = static_cast<int32_t>(n);
  } else if (key == "parallel") {
    LS_ASSIGN_OR_RETURN(int64_t n, ParseInt(v, 1, 4096, where));
    o.n_parallel = static_cast<int>(n);
  } else if (key == "embeddings") {
    LS_ASSIGN_OR_RETURN(bool b, ParseBool(v, where));
    o.embeddings = b;
  } else if (key == "pooling") {
    PoolingType p;
    if (!ParsePooling(v, &p)) {
      return InvalidArgument(where + ": pooling must be none, mean, cls, last or rank, got '" + v + "'");
    }
    o.pooling = p;
  } else if (key == "rerank") {
    LS_ASSIGN_OR_RETURN(bool b, ParseBool(v, where));
    o.rerank = b;
  } else if (key == "chat-template") {
    s->chat_template = v;
  } else if (key == "cache-type-k" || key == "cache-type-v") {
    TensorType t;
    if (!ParseTypeName(v, &t))
      return InvalidArgument(where + ": unknown type '" + v + "' (f16, f32 or q8_0)");
    (key == "cache-type-k" ? o.cache_type_k : o.cache_type_v) = t;
  } else if (key == "load-on-startup") {
    LS_ASSIGN_OR_RETURN(bool b, ParseBool(v, where));
    s->load_on_startup = b;
  } else if (key == "stop-timeout") {
    LS_ASSIGN_OR_RETURN(int64_t n, ParseInt(v, 0, 86400, where));
    s->stop_timeout_s = static_cast<double>(n);
  } else if (key == "hf-repo" || key == "hf-file" || key == "model-url") {
    if (v.empty()) return InvalidArgument(where + ": needs a value");
    s->remote += (s->remote.empty() ? "" : ", ") + key + " = " + v;
  } else if (key == "api-key") {
    return InvalidArgument(where +
                           ": per-model API keys are not supported (llama-server's router drops them "
                           "too): --api-key or --api-key-file on the command line covers every model");
  }
  return Status::Ok();
}

template <typename T>
void Inherit(std::optional<T>* mine, const std::optional<T>& defaults) {
  if (!mine->has_value()) *mine = defaults;
}

void MergeDefaults(PresetSection* s, const PresetSection& d) {
  Inherit(&s->overrides.n_ctx, d.overrides.n_ctx);
  Inherit(&s->overrides.n_parallel, d.overrides.n_parallel);
  Inherit(&s->overrides.embeddings, d.overrides.embeddings);
  Inherit(&s->overrides.pooling, d.overrides.pooling);
  Inherit(&s->overrides.rerank, d.overrides.rerank);
  Inherit(&s->overrides.cache_type_k, d.overrides.cache_type_k);
  Inherit(&s->overrides.cache_type_v, d.overrides.cache_type_v);
  Inherit(&s->chat_template, d.chat_template);
  Inherit(&s->load_on_startup, d.load_on_startup);
  Inherit(&s->stop_timeout_s, d.stop_timeout_s);
  Inherit(&s->tags, d.tags);
}

Status CheckRerank(const PresetSection& s) {
  const ModelOverrides& o = s.overrides;
  if (o.rerank.value_or(false) && o.pooling && *o.pooling != PoolingType::kRank) {
    return InvalidArgument(s.origin + ": [" + s.name + "]: rerank cannot be combined with pooling " +
                           PoolingName(*o.pooling) +
                           " (reranking scores with the classifier head: pooling rank)");
  }
  return Status::Ok();
}

std::string IdFromFileName(const std::string& name) {
  static constexpr std::string_view kExt = ".gguf";
  if (name.size() > kExt.size() && name.compare(name.size() - kExt.size(), kExt.size(), kExt) == 0) {
    return name.substr(0, name.size() - kExt.size());
  }
  return name;
}

bool SameFile(const std::string& a, const std::string& b) {
  if (a == b) return true;
  std::error_code ec;
  bool same = fs::equivalent(a, b, ec);
  if (ec) return fs::path(a).lexically_normal() == fs::path(b).lexically_normal();
  return same;
}

// Settings of a preset section (already merged with [*]) onto an entry.
void ApplySection(const PresetSection& s, CatalogEntry* e) {
  const ModelOverrides& o = s.overrides;
  ModelOverrides& t = e->overrides;
  if (o.n_ctx) t.n_ctx = o.n_ctx;
  if (o.n_parallel) t.n_parallel = o.n_parallel;
  if (o.embeddings) t.embeddings = o.embeddings;
  if (o.pooling) t.pooling = o.pooling;
  if (o.rerank) t.rerank = o.rerank;
  if (o.cache_type_k) t.cache_type_k = o.cache_type_k;
  if (o.cache_type_v) t.cache_type_v = o.cache_type_v;
  if (s.chat_template) e->chat_template = *s.chat_template;
  if (s.load_on_startup) e->load_on_startup = *s.load_on_startup;
  if (s.stop_timeout_s) e->stop_timeout_s = s.stop_timeout_s;
  if (s.aliases) e->aliases = *s.aliases;
  if (s.tags) e->tags = *s.tags;
}

}  // namespace

Result<std::vector<PresetSection>> ParsePreset(std::string_view text, const std::string& file_name,
                                               const std::string& base_dir) {
  std::vector<PresetSection> sections;
  PresetSection defaults;
  defaults.name = "*";
  bool have_defaults = false;
  PresetSection* cur = nullptr;
  std::map<std::string, int> key_lines;  // canonical key -> line, in the current section
  std::map<std::string, int> section_lines;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string line = Trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    const std::string where = file_name + ":" + std::to_string(line_no);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      size_t close = line.find(']');
      if (close == std::string::npos) return InvalidArgument(where + ": section header without ']'");
      std::string rest = Trim(std::string_view(line).substr(close + 1));
      if (!rest.empty() && rest[0] != '#' && rest[0] != ';') {
        return InvalidArgument(where + ": unexpected text after the section header: '" + rest + "'");
      }
      std::string name = Trim(std::string_view(line).substr(1, close - 1));
      if (name != "*" && !IsValidModelId(name)) {
        return InvalidArgument(where + ": invalid model id '" + name +
                               "' (no spaces, commas or control characters, not starting with '.')");
      }
      auto [it, fresh] = section_lines.emplace(name, line_no);
      if (!fresh) {
        return InvalidArgument(where + ": section [" + name + "] appears twice (first at line " +
                               std::to_string(it->second) + ")");
      }
      if (name == "*") {
        cur = &defaults;
        have_defaults = true;
      } else {
        sections.emplace_back();
        cur = &sections.back();
        cur->name = name;
      }
      cur->origin = where;
      key_lines.clear();
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) {
      return InvalidArgument(where + ": expected 'key = value', a [section] or a comment, got '" + line +
                             "'");
    }
    std::string key = Trim(std::string_view(line).substr(0, eq));
    LS_ASSIGN_OR_RETURN(std::string value, ParseValue(std::string_view(line).substr(eq + 1), where));
    if (key == "version") {
      if (cur != nullptr) return InvalidArgument(where + ": 'version' belongs before the first section");
      continue;  // reserved by llama-server for later formats
    }
    auto name = KeyNames().find(key);
    if (name == KeyNames().end()) {
      return InvalidArgument(where + ": unknown key '" + key +
                             "' (known: model, alias, tags, ctx-size, parallel, embeddings, pooling, rerank, "
                             "chat-template, cache-type-k, cache-type-v, load-on-startup, stop-timeout; "
                             "hf-repo, hf-file and model-url are listed but not downloaded)");
    }
    if (cur == nullptr) {
      return InvalidArgument(where + ": '" + key + "' before any [section] (defaults go in a [*] section)");
    }
    const std::string& canon = name->second;
    if (cur == &defaults && (canon == "model" || canon == "alias" || canon == "hf-repo" ||
                             canon == "hf-file" || canon == "model-url")) {
      return InvalidArgument(where + ": '" + key + "' cannot be a default in [*]; give it per model");
    }
    auto [kit, fresh] = key_lines.emplace(canon, line_no);
    if (!fresh) {
      return InvalidArgument(where + ": '" + key + "' is set twice in [" + cur->name + "] (first at line " +
                             std::to_string(kit->second) + ")");
    }
    LS_RETURN_IF_ERROR(SetKey(cur, canon, value, where + ": " + key, base_dir));
  }
  if (have_defaults) LS_RETURN_IF_ERROR(CheckRerank(defaults));
  for (PresetSection& s : sections) {
    MergeDefaults(&s, defaults);
    LS_RETURN_IF_ERROR(CheckRerank(s));
  }
  if (have_defaults) sections.insert(sections.begin(), std::move(defaults));
  return sections;
}

Result<ModelCatalog> ModelCatalog::Build(const CatalogSources& sources, bool require_files) {
  std::map<std::string, CatalogEntry> by_id;
  if (!sources.models_dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(sources.models_dir, ec)) {
      return NotFound("--models-dir " + sources.models_dir + ": not a directory" +
                      (ec ? " (" + ec.message() + ")" : std::string()));
    }
    fs::directory_iterator it(sources.models_dir, ec), end;
    if (ec) return IoError("--models-dir " + sources.models_dir + ": cannot list it: " + ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec) return IoError("--models-dir " + sources.models_dir + ": listing failed: " + ec.message());
      const std::string file = it->path().filename().string();
      if (file.size() <= 5 || file.compare(file.size() - 5, 5, ".gguf") != 0) continue;
      std::error_code sec;
      if (!it->is_regular_file(sec)) continue;  // subdirectories, dangling links
      const std::string id = IdFromFileName(file);
      if (file[0] == '.') continue;  // hidden: partial downloads, editors' temporaries
      if (!IsValidModelId(id)) {
        LS_LOG_WARN(
            "--models-dir: skipping '%s': not a valid model id (no spaces, commas or control "
            "characters)",
            file.c_str());
        continue;
      }
      CatalogEntry e;
      e.id = id;
      e.path = it->path().string();
      e.source = ModelSource::kModelsDir;
      e.origin = "--models-dir " + sources.models_dir;
      by_id.emplace(id, std::move(e));
    }
  }
  for (const std::string& p : sources.model_paths) {
    const std::string id = IdFromFileName(fs::path(p).filename().string());
    if (!IsValidModelId(id)) {
      return InvalidArgument(
          "-m " + p + ": '" + id +
          "' is not a valid model id (no spaces, commas or control characters, not starting "
          "with '.'); rename the file or list it in --models-preset");
    }
    if (require_files && !IdentifyFile(p).exists) {
      return NotFound("-m " + p + ": " + std::strerror(IdentifyFile(p).error));
    }
    auto it = by_id.find(id);
    if (it != by_id.end()) {
      if (SameFile(it->second.path, p)) continue;
      return InvalidArgument("model id '" + id + "' comes from two files: " + it->second.path + " (" +
                             it->second.origin + ") and " + p + " (-m); rename one or use --models-preset");
    }
    CatalogEntry e;
    e.id = id;
    e.path = p;
    e.source = ModelSource::kArgs;
    e.origin = "-m";
    by_id.emplace(id, std::move(e));
  }
  if (!sources.preset_path.empty()) {
    std::ifstream in(sources.preset_path, std::ios::binary);
    if (!in) {
      return NotFound("--models-preset " + sources.preset_path + ": cannot open (" + std::strerror(errno) +
                      ")");
    }
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string base_dir = fs::path(sources.preset_path).parent_path().string();
    LS_ASSIGN_OR_RETURN(std::vector<PresetSection> sections,
                        ParsePreset(ss.str(), sources.preset_path, base_dir));
    const PresetSection* defaults = nullptr;
    for (const PresetSection& s : sections) {
      if (s.name == "*") {
        defaults = &s;
        continue;
      }
      auto it = by_id.find(s.name);
      if (!s.remote.empty() && (s.model || it != by_id.end())) {
        LS_LOG_WARN("%s: [%s]: ignoring %s (downloads are not supported) and serving the local file %s",
                    s.origin.c_str(), s.name.c_str(), s.remote.c_str(),
                    (s.model ? *s.model : it->second.path).c_str());
      }
      if (it == by_id.end()) {
        if (!s.model && s.remote.empty()) {
          return InvalidArgument(s.origin + ": [" + s.name +
                                 "] has no 'model' key, and no model file with id '" + s.name +
                                 "' comes from --models-dir or -m");
        }
        CatalogEntry e;
        e.id = s.name;
        if (s.model) {
          e.path = *s.model;
        } else {
          // Listed so clients see it, but every request for it is answered RemoteModelError (a download-only
          // section must not stop the other models from serving, as llama-server lists it and fails it
          // alone).
          e.remote = s.remote;
          LS_LOG_WARN(
              "%s: [%s] names only a download (%s): listed, but it cannot be loaded until it gets "
              "`model = /path/file.gguf`",
              s.origin.c_str(), s.name.c_str(), s.remote.c_str());
        }
        it = by_id.emplace(s.name, std::move(e)).first;
      } else if (s.model) {
        it->second.path = *s.model;  // the preset wins, as llama-server merges the preset over the source
      }
      if (s.model && require_files && !IdentifyFile(*s.model).exists) {
        return NotFound(s.origin + ": [" + s.name + "] model " + *s.model + ": " +
                        std::strerror(IdentifyFile(*s.model).error));
      }
      it->second.source = ModelSource::kPreset;
      it->second.origin = s.origin;
      ApplySection(s, &it->second);
    }
    if (defaults) {  // [*] also covers the directory's and -m's models that have no section
      for (auto& [id, e] : by_id) {
        if (e.source != ModelSource::kPreset) ApplySection(*defaults, &e);
      }
    }
  }
  // Aliases must not name another model or another model's alias.
  std::map<std::string, std::string> names;  // id or alias -> model id
  for (const auto& [id, e] : by_id) names.emplace(id, id);
  for (auto& [id, e] : by_id) {
    std::vector<std::string> kept;
    for (const std::string& a : e.aliases) {
      if (a == id) continue;
      auto [it, fresh] = names.emplace(a, id);
      if (!fresh) {
        const bool is_id = it->first == it->second;
        return InvalidArgument(e.origin + ": alias '" + a + "' of model '" + id + "' is already " +
                               (is_id ? "a model id" : "an alias of model '" + it->second + "'"));
      }
      kept.push_back(a);
    }
    e.aliases = std::move(kept);
  }
  ModelCatalog catalog;
  for (auto& [id, e] : by_id) {
    if (e.remote.empty()) e.file = IdentifyFile(e.path);
    catalog.entries_.push_back(std::move(e));
  }
  return catalog;
}

const CatalogEntry* ModelCatalog::Find(std::string_view id_or_alias) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), id_or_alias,
                             [](const CatalogEntry& e, std::string_view id) { return e.id < id; });
  if (it != entries_.end() && it->id == id_or_alias) return &*it;
  for (const CatalogEntry& e : entries_) {
    if (std::find(e.aliases.begin(), e.aliases.end(), id_or_alias) != e.aliases.end()) return &e;
  }
  return nullptr;
}

std::string ModelCatalog::KnownIds(size_t max) const {
  if (entries_.empty()) return "(none)";
  std::string out;
  for (size_t i = 0; i < entries_.size() && i < max; ++i) {
    if (i) out += ", ";
    out += entries_[i].id;
  }
  if (entries_.size() > max) out += ", ... and " + std::to_string(entries_.size() - max) + " more";
  return out;
}

}  // namespace lazyslot
