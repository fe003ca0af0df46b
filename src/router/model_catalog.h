// The router's list of models (issue 16): which GGUF files it may serve under which ids, and the per-model
// settings that override the serve command's defaults. Three sources, as llama-server's router mode:
// a directory scan (--models-dir), explicit paths (repeated -m) and an INI preset file (--models-preset).
// A catalogue is an immutable snapshot; a rescan builds a new one and the router reconciles the two.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"

namespace lazyslot {

// What stat(2) says about a model file (symlinks followed), to notice a file that vanished, was truncated
// or replaced after it was listed or loaded.
struct FileIdentity {
  bool exists = false;
  int error = 0;  // errno of the failed stat when !exists
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0;
};
FileIdentity IdentifyFile(const std::string& path);
// Empty when `now` is the same file as `before`; else what changed, e.g. "was truncated (6834752 -> 1024
// bytes)", "is gone (No such file or directory)", "was replaced (another file, inode 12 -> 40)".
std::string DescribeFileChange(const FileIdentity& before, const FileIdentity& now);

// Model ids and aliases: 1 to 256 bytes, no whitespace, control characters or commas, not starting with '.'
// (so hidden files such as partial downloads are never listed). Slashes and colons are allowed
// (llama-server's ids look like "org/model:Q4_K_M").
bool IsValidModelId(std::string_view id);

// Per-model settings over the router's base EngineConfig (unset: the base's value).
struct ModelOverrides {
  std::optional<int32_t> n_ctx;        // ctx-size
  std::optional<int> n_parallel;       // parallel
  std::optional<bool> embeddings;      // embeddings
  std::optional<PoolingType> pooling;  // pooling
  std::optional<bool> rerank;          // rerank: pooling rank and embeddings on (as --rerank)
  std::optional<TensorType> cache_type_k, cache_type_v;
  // Writes the set fields into `config`. rerank = false only turns off a base rank pooling.
  void ApplyTo(EngineConfig* config) const;
  bool operator==(const ModelOverrides&) const = default;
};

enum class ModelSource { kModelsDir, kArgs, kPreset };  // llama-server's "source": models_dir, -, preset
const char* ModelSourceName(ModelSource source);        // "models_dir", "args", "preset"

struct CatalogEntry {
  std::string id;
  std::string path;  // as found or given (preset paths resolved against the INI's folder)
  std::vector<std::string> aliases;
  std::vector<std::string> tags;                 // the preset's tags, sorted (informational)
  ModelSource source = ModelSource::kModelsDir;  // kPreset as soon as a preset section names the model
  std::string origin;                            // where it was defined, for messages: "-m", "a.ini:12"
  ModelOverrides overrides;
  std::string chat_template;  // chat-template as written (empty: the model's own); the server resolves it
  bool load_on_startup = false;
  std::optional<double> stop_timeout_s;  // stop-timeout: how long Unload waits for running requests
  FileIdentity file;                     // at the time of the scan
  // Non-empty: a preset section that names only a download (PresetSection::remote) and no local file; `path`
  // is empty and the model cannot be loaded (RemoteModelError).
  std::string remote;

  // Everything but `file` and `origin` equal (a rescan then keeps a loaded model, if its file is unchanged).
  bool SameDefinition(const CatalogEntry& other) const;
};

// Why a model listed only by a download key cannot be served (kUnimplemented, so HTTP 501): names the
// model, the key and how to give a local file instead.
Status RemoteModelError(const CatalogEntry& entry);

// One INI section as parsed, with the `[*]` defaults already merged under it. Unset fields stay unset.
struct PresetSection {
  std::string name;
  std::string origin;                // "file:line" of the section header
  std::optional<std::string> model;  // resolved path
  std::optional<std::vector<std::string>> aliases;
  std::optional<std::vector<std::string>> tags;
  ModelOverrides overrides;
  std::optional<std::string> chat_template;
  std::optional<bool> load_on_startup;
  std::optional<double> stop_timeout_s;
  // What a download key asks for (hf-repo, hf-file, model-url), e.g. "hf-repo = org/model:Q4_K_M"; empty
  // when the section has none. lazyslot cannot download: without a `model` file such a section is listed
  // and answers every request with RemoteModelError.
  std::string remote;
};

// INI presets as llama-server's --models-preset: `[section]` per model (the name is the id), `key = value`
// lines, whole-line comments starting with '#' or ';' and trailing ones after whitespace, a `[*]` section of
// defaults for every model (including the directory's and -m's), an optional top-level `version = 1`.
// Keys: model (m), alias (a, comma-separated), tags (comma-separated, informational: listed by /v1/models),
// ctx-size (c), parallel (np), embeddings (embedding), pooling,
// rerank (reranking), chat-template, cache-type-k (ctk), cache-type-v (ctv), load-on-startup, stop-timeout.
// Download keys (hf-repo / hf / hfr, hf-file / hff, model-url / mu; '_' may replace '-') are accepted and
// recorded (PresetSection::remote), never acted on. A per-model api-key is an error: the server's --api-key
// covers every model (llama-server drops it from presets too).
// Booleans: true/false, on/off, enabled/disabled, 1/0. A value in double quotes keeps '#' and ';'.
// Errors (unknown key, bad value, duplicate key or section, key before any section) name file:line.
// `file_name` is used in messages, `base_dir` resolves relative `model` paths (llama-server: the CWD).
// The result lists the sections in file order, each with [*] merged under it, after the [*] section itself
// (name "*") when there is one.
Result<std::vector<PresetSection>> ParsePreset(std::string_view text, const std::string& file_name,
                                               const std::string& base_dir);

struct CatalogSources {
  std::string models_dir;                // every *.gguf directly inside (not recursive), id = name - .gguf
  std::vector<std::string> model_paths;  // -m, id = file name - .gguf
  std::string preset_path;               // --models-preset
  bool empty() const { return models_dir.empty() && model_paths.empty() && preset_path.empty(); }
};

class ModelCatalog {
 public:
  // Builds the list, sorted by id. In the directory, files whose id would be invalid are skipped with a
  // warning (a stray file must not stop the server), as are subdirectories and hidden files. Errors: the
  // directory is missing, a -m path or preset section gives an invalid id, the same id comes from two
  // different files (both named; the same file twice is listed once), an alias collides with an id or another
  // alias, a preset section names no model file, and with `require_files` an explicit file is missing.
  // A preset section whose name is a directory or -m model's id adjusts that model (its `model` key, if any,
  // replaces the path, as in llama-server).
  static Result<ModelCatalog> Build(const CatalogSources& sources, bool require_files = true);

  const std::vector<CatalogEntry>& entries() const { return entries_; }
  const CatalogEntry* Find(std::string_view id_or_alias) const;
  // "a, b, c" (the first `max` ids, then "... and N more"), for not-found messages.
  std::string KnownIds(size_t max = 20) const;

 private:
  std::vector<CatalogEntry> entries_;
};

}  // namespace lazyslot
