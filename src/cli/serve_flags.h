// ServeFlags: what `lazyslot serve`'s command line holds (ServerOptions plus the flags that still need reading:
// sizes, lists, llama-server's spellings), and PrepareOptions, which checks them and turns them into the
// ServerOptions the HTTP server runs with (cmd_serve.cpp declares the flags; serve_options.cpp reads them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/http_server.h"

namespace lazyslot::cli {

struct ServeFlags {
  server::ServerOptions opts;
  std::string pooling = "";
  bool rerank = false;  // --rerank/--reranking (= --pooling rank): the rerank routes, engine pooling kRank
  std::string chat_template;
  std::string chat_template_file;
  std::string reasoning;  // -rea/--reasoning on|off|auto (llama-server's); empty: not given (auto)
  bool jinja = false;    // accepted for llama-server compatibility: templates are always Jinja here
  bool no_jinja = false;  // llama-server's legacy, non-Jinja formatting: not implemented, said at start
  int ubatch = 0;         // -ub/--ubatch-size (llama-server's physical batch); 0: not given
  bool metrics = false;  // accepted for compatibility: /metrics is always on
  bool backend_sampling = false;  // -bs/--backend-sampling: accepted; one sampler here (its results either way)
  std::string kv_budget;
  std::string kv_park_max;
  std::string max_body_size;
  std::string flash_attn;
  std::string cache_type_k, cache_type_v;
  bool no_warmup = false;
  bool verbose = false;
  std::vector<std::string> api_keys;  // --api-key, repeatable
  std::string api_key_file;
  int64_t seed = -1;  // --seed; -1: each request draws a random seed
  std::string cors_origins;  // --cors-origins, comma-separated
  std::string tools;         // --tools, comma-separated or "all"
  std::string tools_dir;     // --tools-dir (default: the current directory)
  std::string mcp_config_file, mcp_json;  // --mcp-servers-config FILE, --mcp-servers-json JSON
  std::string alias;         // -a/--alias, comma-separated (llama-server's): the one model's names
  std::string tags;          // --tags, comma-separated: informational, listed by /v1/models
  // llama-server's RAM prompt cache: -cram/--cache-ram MiB (-1: no limit, 0: off) and --cache-idle-slots.
  // Accepted and checked; lazyslot's idle slots keep their prompts' KV in place instead (PrepareOptions).
  std::string cache_ram;
  bool cache_idle_slots = true;
  double sleep_idle_s = -1;  // --sleep-idle-seconds (llama-server's name): both idle releases at once
  // Router mode (several models): more than one -m, --models-dir or --models-preset.
  std::vector<std::string> models;  // -m, repeatable
  std::string memory_budget;        // --memory-budget SIZE
  // Per-model flags given on the command line (CLI11's count or the llama-style spellings), which in
  // router mode win over the preset's values.
  bool ctx_given = false, parallel_given = false, embeddings_given = false;
};

// Reads what the flags left for later (sizes, lists, `extras`: llama-server's multi-letter spellings), checks
// every value and fills f->opts; an error names its flag (kInvalidArgument: a usage error, exit 2).
Status PrepareOptions(ServeFlags* f, const std::vector<std::string>& extras);

}  // namespace lazyslot::cli
