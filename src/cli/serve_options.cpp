// `lazyslot serve`'s flags -> ServerOptions (PrepareOptions): sizes, lists and llama-server's spellings read
// and checked, each error naming its flag; router mode, MCP servers and the demo model (with no -m, a
// random-weight model generated with this executable's `synth` subcommand) prepared.
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "chat/chat_template.h"
#include "chat/reasoning.h"
#include "cli/commands.h"
#include "cli/serve_flags.h"
#include "core/log.h"
#include "gguf/tensor_type.h"
#include "server/http/server_limits.h"
#include "server/http_server.h"
#include "server/vertex.h"
#include "tools/builtin_tools.h"
#include "tools/mcp/mcp_config.h"

namespace lazyslot::cli {
namespace {

// "0", "4096", "512M", "1.5G", "2GiB" -> bytes (K/M/G/T are binary multiples, as memory is counted).
// `flag` names the option in errors.
Result<uint64_t> ParseSize(const std::string& flag, const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return InvalidArgument(flag + ": expected a size such as 512M or 2G, got '" + text + "'");
  }
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && (unit.substr(1) == "IB" || unit.substr(1) == "B")) unit = unit.substr(0, 1);
  double mult = 1;
  if (unit == "K") {
    mult = 1024.0;
  } else if (unit == "M") {
    mult = 1024.0 * 1024;
  } else if (unit == "G") {
    mult = 1024.0 * 1024 * 1024;
  } else if (unit == "T") {
    mult = 1024.0 * 1024 * 1024 * 1024;
  } else if (!unit.empty() && unit != "B") {
    return InvalidArgument(flag + ": unknown unit '" + text.substr(used) + "' (use K, M, G or T)");
  }
  if (!(v >= 0) || v * mult > 1.8e19) return InvalidArgument(flag + ": out of range: '" + text + "'");
  return static_cast<uint64_t>(v * mult);
}

// Where the demo model lives: $XDG_CACHE_HOME/lazyslot, ~/.cache/lazyslot, else ./models.
std::string DemoModelPath() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return (std::filesystem::path(xdg) / "lazyslot" / "demo.gguf").string();
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return (std::filesystem::path(home) / ".cache" / "lazyslot" / "demo.gguf").string();
  }
  return "models/demo.gguf";
}

// Runs `<this executable> synth -o <tmp>` and renames the result into place, so a half-written file is
// never reused. Reuses an existing file.
Status EnsureDemoModel(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    LS_LOG_INFO("no -m given: serving the demo model %s (random weights: its text is noise)", path.c_str());
    return Status::Ok();
  }
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return IoError("cannot create the directory for " + path + ": " + ec.message());
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  LS_LOG_INFO(
      "no -m given: generating a demo model with random weights at %s (its text will be noise; "
      "pass -m model.gguf to serve a real model)",
      path.c_str());
  const char* tmp_path = tmp.c_str();
  const pid_t pid = fork();
  if (pid < 0) return IoError(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    // Only async-signal-safe calls here (the parent has threads): restore the signal mask, exec.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execl("/proc/self/exe", "lazyslot", "synth", "-o", tmp_path, static_cast<char*>(nullptr));
    static const char kMsg[] = "lazyslot serve: cannot run /proc/self/exe synth\n";
    ssize_t ignored = write(2, kMsg, sizeof(kMsg) - 1);
    (void)ignored;
    _exit(127);
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    std::filesystem::remove(tmp, ec);
    return Internal("`lazyslot synth -o " + tmp + "` failed (exit status " +
                    std::to_string(WEXITSTATUS(wstatus)) + ")");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return IoError("cannot move " + tmp + " to " + path + ": " + ec.message());
  return Status::Ok();
}

Status ParseInt(const std::string& flag, const std::string& v, int32_t* out) {
  try {
    size_t used = 0;
    const long n = std::stol(v, &used);
    if (used != v.size() || n < INT32_MIN || n > INT32_MAX) throw std::invalid_argument(v);
    *out = static_cast<int32_t>(n);
  } catch (const std::exception&) {
    return InvalidArgument(flag + ": expected an integer, got '" + v + "'");
  }
  return Status::Ok();
}

// llama-server spells some options with several letters after one dash (-np, -ctk), which CLI11 2.1 cannot
// declare; they arrive as extras and are read here. -c, -t, -n and -b are read here too, because CLI11 would
// take "-ctk" as "-c tk" (and "-to", "-np", "-bs" likewise). Returns a usage error for anything else left over.
Status ReadLlamaStyleExtras(const std::vector<std::string>& extras, ServeFlags* f) {
  for (size_t i = 0; i < extras.size(); ++i) {
    const std::string& a = extras[i];
    auto value = [&](std::string* out) -> Status {
      if (i + 1 >= extras.size()) return InvalidArgument(a + " needs a value");
      *out = extras[++i];
      return Status::Ok();
    };
    std::string v;
    if (a == "-np") {
      f->parallel_given = true;
      LS_RETURN_IF_ERROR(value(&v));
      LS_RETURN_IF_ERROR(ParseInt(a, v, &f->opts.engine.n_parallel));
    } else if (a == "-c") {
      f->ctx_given = true;
      LS_RETURN_IF_ERROR(value(&v));
      LS_RETURN_IF_ERROR(ParseInt(a, v, &f->opts.engine.n_ctx));
    } else if (a.size() > 2 && a.rfind("-c", 0) == 0 && std::isdigit(static_cast<unsigned char>(a[2]))) {
      f->ctx_given = true;
      LS_RETURN_IF_ERROR(ParseInt("-c", a.substr(2), &f->opts.engine.n_ctx));  // -c4096
    } else if (a == "-t") {  // declared here, not to CLI11, which would read "-to" as "-t o"
      LS_RETURN_IF_ERROR(value(&v));
      LS_RETURN_IF_ERROR(ParseInt(a, v, &f->opts.engine.n_threads));
    } else if (a.size() > 2 && a.rfind("-t", 0) == 0 && std::isdigit(static_cast<unsigned char>(a[2]))) {
      LS_RETURN_IF_ERROR(ParseInt("-t", a.substr(2), &f->opts.engine.n_threads));  // -t4
    } else if (a == "-n") {  // declared here, not to CLI11, which would read "-np" as "-n p"
      LS_RETURN_IF_ERROR(value(&v));
      LS_RETURN_IF_ERROR(ParseInt(a, v, &f->opts.n_predict));
      if (f->opts.n_predict < -1) return InvalidArgument("-n: must be >= -1, got '" + v + "'");
    } else if (a == "-to") {  // llama-server's socket timeout (= --timeout)
      LS_RETURN_IF_ERROR(value(&v));
      LS_RETURN_IF_ERROR(ParseInt(a, v, &f->opts.socket_timeout_s));
      if (f->opts.socket_timeout_s < 0) return InvalidArgument("-to: must be >= 0, got '" + v + "'");
    } else if (a == "-ctk") {
      LS_RETURN_IF_ERROR(value(&f->cache_type_k));
    } else if (a == "-ctv") {
      LS_RETURN_IF_ERROR(value(&f->cache_type_v));
    } else if (a == "-fa") {
      LS_RETURN_IF_ERROR(value(&f->flash_attn));
    } else if (a == "-ub") {  // declared here, not to CLI11, which would read "-ub" as "-u b"
      LS_RETURN_IF_ERROR(value(&v));
      LS_RETURN_IF_ERROR(ParseInt(a, v, &f->ubatch));
      if (f->ubatch < 1) return InvalidArgument("-ub: must be at least 1, got '" + v + "'");
    } else if (a == "-rea") {  // llama-server's short name of --reasoning
      LS_RETURN_IF_ERROR(value(&f->reasoning));
    } else if (a == "-bs") {  // llama-server's --backend-sampling: accepted, nothing to select here
      f->backend_sampling = true;
    } else if (a == "-b") {  // declared here, not to CLI11, which would read "-bs" as "-b s"
      LS_RETURN_IF_ERROR(value(&v));
      LS_RETURN_IF_ERROR(ParseInt(a, v, &f->opts.engine.n_batch));
    } else if (a.size() > 2 && a.rfind("-b", 0) == 0 && std::isdigit(static_cast<unsigned char>(a[2]))) {
      LS_RETURN_IF_ERROR(ParseInt("-b", a.substr(2), &f->opts.engine.n_batch));  // -b512
    } else if (a == "-cram") {  // llama-server's short name of --cache-ram
      LS_RETURN_IF_ERROR(value(&f->cache_ram));
    } else if (a == "-kvu") {
      f->opts.engine.kv_unified = true;
    } else if (a == "-no-kvu") {
      f->opts.engine.kv_unified = false;
    } else if (a == "-ngl") {
      LS_RETURN_IF_ERROR(value(&v));
      LS_LOG_WARN("-ngl %s ignored: lazyslot runs on the CPU", v.c_str());
    } else {
      return InvalidArgument("unknown option or argument '" + a + "' (see lazyslot serve --help)");
    }
  }
  return Status::Ok();
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One -m: that model. Several -m, --models-dir or --models-preset: router mode, where the engine flags are
// every model's defaults and --sleep-idle-seconds unloads an idle model (listed as sleeping).
Status PrepareRouter(ServeFlags* f) {
  server::ServerOptions& o = f->opts;
  CatalogSources& src = o.router.sources;
  if (f->models.size() == 1 && src.models_dir.empty() && src.preset_path.empty()) {
    o.engine.model_path = f->models[0];
  } else {
    src.model_paths = f->models;
  }
  if (!f->memory_budget.empty()) {
    LS_ASSIGN_OR_RETURN(o.router.memory_budget, ParseSize("--memory-budget", f->memory_budget));
  }
  if (!o.router_mode()) {
    if (o.router.memory_budget > 0) {
      return InvalidArgument(
          "--memory-budget applies to router mode (--models-dir, --models-preset or several -m); with one "
          "model, cap the KV cache with --kv-budget");
    }
    if (f->sleep_idle_s >= 0) o.engine.idle_timeout_s = o.engine.idle_release_weights_s = f->sleep_idle_s;
    return Status::Ok();
  }
  if (!f->alias.empty()) {
    return InvalidArgument("--alias names the one model; in router mode give aliases in --models-preset");
  }
  if (!f->tags.empty()) {
    return InvalidArgument("--tags describes the one model; in router mode give tags in --models-preset");
  }
  if (f->sleep_idle_s >= 0) o.router.sleep_idle_s = f->sleep_idle_s;
  o.router.n_threads = o.engine.n_threads;
  return Status::Ok();
}

// Router mode: the per-model settings given explicitly, which win over the preset's (as llama-server).
ModelOverrides CommandLineOverrides(const ServeFlags& f) {
  const EngineConfig& e = f.opts.engine;
  ModelOverrides m;
  if (f.ctx_given) m.n_ctx = e.n_ctx;
  if (f.parallel_given) m.n_parallel = e.n_parallel;
  if (f.embeddings_given) m.embeddings = e.embeddings;
  if (!f.pooling.empty()) m.pooling = e.pooling;
  if (f.rerank) m.rerank = true;
  if (!f.cache_type_k.empty()) m.cache_type_k = e.cache_type_k;
  if (!f.cache_type_v.empty()) m.cache_type_v = e.cache_type_v;
  return m;
}

// The browser origins allowed without --cors-origins (docs/llama-server-compat.md, "CORS"). llama-server allows
// any origin ("*", credentials too) unless built-in tools or MCP servers are on, then "localhost", and warns
// when "*" meets no API key. Here "*" only with an API key (a page from anywhere still needs it); without one,
// or with --tools, MCP servers or --ui-mcp-proxy (the server's files and commands, or a proxy into its
// network), "localhost": any port of localhost, 127.0.0.1 and [::1], so local apps work and remote pages
// cannot use the server as the visitor.
void DefaultCorsOrigins(server::ServerOptions* o) {
  if (!o->cors_origins.empty()) return;
  const bool local =
      o->api_keys.empty() || !o->tools.empty() || o->ui_mcp_proxy || !o->mcp_servers.empty();
  o->cors_origins = {local ? "localhost" : "*"};
}

// "b, a,,b" -> {"a", "b"}: a comma-separated list of names, trimmed, sorted and unique (llama-server keeps
// them in a std::set, so its model id, the first alias, is the first in byte order). Given but naming
// nothing, or a name with a control character: an error naming `flag`.
Result<std::vector<std::string>> ParseNameList(const std::string& flag, const std::string& text) {
  std::vector<std::string> names;
  std::stringstream ss(text);
  for (std::string name; std::getline(ss, name, ',');) {
    const size_t b = name.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    name = name.substr(b, name.find_last_not_of(" \t") - b + 1);
    for (unsigned char c : name) {
      if (c < 0x20 || c == 0x7f) return InvalidArgument(flag + ": a control character in '" + name + "'");
    }
    names.push_back(name);
  }
  if (names.empty()) return InvalidArgument(flag + ": expected comma-separated names, got '" + text + "'");
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// --mcp-servers-config FILE and --mcp-servers-json JSON (both may be given; a name in both is an error).
Status PrepareMcpServers(ServeFlags* f) {
  std::vector<tools::mcp::ServerConfig>& out = f->opts.mcp_servers;
  for (auto [flag, text, is_file] : {std::tuple{"--mcp-servers-config", &f->mcp_config_file, true},
                                     std::tuple{"--mcp-servers-json", &f->mcp_json, false}}) {
    if (text->empty()) continue;
    std::string doc = *text;
    if (is_file) {
      Result<std::string> read = ReadFile(*text);
      if (!read.ok()) return InvalidArgument(std::string(flag) + ": " + read.status().message());
      doc = std::move(*read);
    }
    Result<std::vector<tools::mcp::ServerConfig>> parsed = tools::mcp::ParseMcpServers(doc);
    if (!parsed.ok()) {
      return InvalidArgument(std::string(flag) + (is_file ? " " + *text : std::string()) + ": " +
                             parsed.status().message());
    }
    for (tools::mcp::ServerConfig& c : *parsed) {
      for (const tools::mcp::ServerConfig& seen : out) {
        if (seen.name == c.name) {
          return InvalidArgument(std::string(flag) + ": MCP server '" + c.name + "' is defined twice");
        }
      }
      out.push_back(std::move(c));
    }
  }
  if (!out.empty()) {
    std::string names;
    for (const tools::mcp::ServerConfig& c : out) names += (names.empty() ? "" : ", ") + c.name;
    LS_LOG_WARN("MCP servers on (%s): their tools are served by GET/POST /tools to anyone with access to this "
                "server", names.c_str());
  }
  return Status::Ok();
}

}  // namespace

Status PrepareOptions(ServeFlags* f, const std::vector<std::string>& extras) {
  if (f->verbose) SetLogLevel(LogLevel::kDebug);
  LS_RETURN_IF_ERROR(ReadLlamaStyleExtras(extras, f));
  server::ServerOptions& o = f->opts;
  if (f->seed != -1) o.sampling.seed = static_cast<uint64_t>(f->seed);
  LS_RETURN_IF_ERROR(PrepareRouter(f));
  if (!f->alias.empty()) {
    LS_ASSIGN_OR_RETURN(o.model_aliases, ParseNameList("--alias", f->alias));
    o.model_alias = o.model_aliases.front();
  }
  if (!f->tags.empty()) {
    LS_ASSIGN_OR_RETURN(o.model_tags, ParseNameList("--tags", f->tags));
  }
  for (size_t start = 0; start < f->cors_origins.size();) {
    size_t comma = f->cors_origins.find(',', start);
    if (comma == std::string::npos) comma = f->cors_origins.size();
    std::string origin = f->cors_origins.substr(start, comma - start);
    while (!origin.empty() && origin.back() == ' ') origin.pop_back();
    while (!origin.empty() && origin.front() == ' ') origin.erase(0, 1);
    if (origin.empty())
      return InvalidArgument("--cors-origins: an empty origin in '" + f->cors_origins + "'");
    if (origin != "*" && origin != "localhost" && origin.find("://") == std::string::npos) {
      return InvalidArgument("--cors-origins: '" + origin +
                             "' is not an origin (scheme://host[:port], *, or localhost)");
    }
    o.cors_origins.push_back(origin);
    start = comma + 1;
  }
  if (!f->cache_ram.empty()) {
    int32_t mib = 0;
    LS_RETURN_IF_ERROR(ParseInt("--cache-ram", f->cache_ram, &mib));
    if (mib < -1) {
      return InvalidArgument("--cache-ram: expected MiB, -1 (no limit) or 0 (off), got '" + f->cache_ram +
                             "'");
    }
  }
  if (!f->cache_ram.empty() || !f->cache_idle_slots) {
    // llama-server copies prompts into a RAM cache (and idle slots on each new task, clearing them under
    // --kv-unified). Here an idle slot's KV stays where it is, reused in place by a prompt that starts with
    // it, and is given up (least recently used first, parked on disk first with --kv-park) only when a
    // request needs the room: there is no second copy to size or fill.
    LS_LOG_INFO("--cache-ram / --cache-idle-slots: accepted; idle slots keep their prompts' KV in place and "
                "release it only when a request needs the room (--kv-park keeps it on disk; docs/memory.md)");
  }
  if (o.engine.context_shift && (o.engine.embeddings || f->rerank)) {
    return InvalidArgument(std::string("--context-shift applies to text generation, not to ") +
                           (f->rerank ? "--rerank" : "--embeddings"));
  }
  if ((!o.cors_headers.empty() && o.cors_headers.find_first_not_of(" ,") == std::string::npos) ||
      std::any_of(o.cors_headers.begin(), o.cors_headers.end(),
                  [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
    return InvalidArgument("--cors-headers: expected comma-separated header names or *, got '" +
                           o.cors_headers + "'");
  }
  // llama-server computes a --batch-size pass in --ubatch-size pieces, and an encoder's input must fit one
  // piece; lazyslot's single batch size takes the smaller of the two.
  if (f->ubatch > 0 && f->ubatch < o.engine.n_batch) o.engine.n_batch = f->ubatch;
  if (f->no_jinja) {
    LS_LOG_WARN("--no-jinja: lazyslot always renders the chat template as Jinja (the model's, or "
                "--chat-template's); llama-server's built-in non-Jinja formats are not implemented");
  }
  if (!f->tools.empty()) {
    Result<std::vector<std::string>> parsed = tools::ParseToolList(f->tools);
    if (!parsed.ok()) return InvalidArgument("--tools: " + parsed.status().message());
    o.tools = *parsed;
    std::error_code ec;
    const std::filesystem::path dir =
        std::filesystem::canonical(f->tools_dir.empty() ? std::filesystem::current_path()
                                                        : std::filesystem::path(f->tools_dir),
                                   ec);
    if (ec || !std::filesystem::is_directory(dir)) {
      return InvalidArgument("--tools-dir: '" + f->tools_dir + "' is not a folder" +
                             (ec ? " (" + ec.message() + ")" : ""));
    }
    o.tools_dir = dir.string();

    std::string names;
    for (const std::string& t : o.tools) names += (names.empty() ? "" : ",") + t;
    LS_LOG_WARN("built-in tools on (%s), confined to %s: anyone with access to this server may use them%s",
                names.c_str(), o.tools_dir.c_str(),
                std::find(o.tools.begin(), o.tools.end(), "exec_shell_command") != o.tools.end()
                    ? "; exec_shell_command runs any shell command, which the folder does not confine"
                    : "");
  } else if (!f->tools_dir.empty()) {
    return InvalidArgument("--tools-dir needs --tools");
  }
  LS_RETURN_IF_ERROR(PrepareMcpServers(f));
  o.port = server::VertexPort(o.port);  // AIP_HTTP_PORT, when Vertex AI starts the container
  if (o.health_port != 0 && o.health_port == o.port) {
    return InvalidArgument("--health-port must differ from --port (the drain closes --port, not the health port)");
  }
  if (o.sampling.repeat_penalty <= 0) return InvalidArgument("--repeat-penalty: must be greater than 0");
  Result<ReasoningFormat> reasoning = ParseReasoningFormat(o.reasoning_format);
  if (!reasoning.ok()) return InvalidArgument("--reasoning-format: " + reasoning.status().message());
  if (!f->reasoning.empty()) {
    Result<int> on = ParseReasoningSwitch(f->reasoning);
    if (!on.ok()) return InvalidArgument(on.status().message());
    o.reasoning = *on;
  }
  // Keys are never echoed: errors name the flag or file only.
  for (const std::string& k : f->api_keys) {
    if (!k.empty()) o.api_keys.push_back(k);
  }
  if (!f->api_key_file.empty()) {
    LS_ASSIGN_OR_RETURN(std::vector<std::string> keys, server::ReadApiKeyFile(f->api_key_file));
    o.api_keys.insert(o.api_keys.end(), keys.begin(), keys.end());
  }
  DefaultCorsOrigins(&o);
  if (!f->kv_park_max.empty()) {
    LS_ASSIGN_OR_RETURN(o.engine.kv_park_max, ParseSize("--kv-park-max", f->kv_park_max));
  }
  if (!f->kv_budget.empty()) {
    LS_ASSIGN_OR_RETURN(o.engine.kv_budget, ParseSize("--kv-budget", f->kv_budget));
  }
  if (!f->max_body_size.empty()) {
    LS_ASSIGN_OR_RETURN(o.max_body_size, ParseSize("--max-body-size", f->max_body_size));
    if (o.max_body_size == 0) return InvalidArgument("--max-body-size: must be at least 1 byte");
  }
  if (!f->flash_attn.empty()) {
    if (f->flash_attn != "on" && f->flash_attn != "off" && f->flash_attn != "auto") {
      return InvalidArgument("--flash-attn must be on, off or auto, got '" + f->flash_attn + "'");
    }
    o.engine.flash_attn = f->flash_attn != "off";
  }
  o.engine.warmup = !f->no_warmup;
  // The engine checks which cache types it supports; here only the name.
  for (auto [flag, text, out] : {std::tuple{"--cache-type-k", &f->cache_type_k, &o.engine.cache_type_k},
                                 std::tuple{"--cache-type-v", &f->cache_type_v, &o.engine.cache_type_v}}) {
    if (!text->empty() && !ParseTypeName(*text, out)) {
      return InvalidArgument(std::string(flag) + ": unknown type '" + *text + "' (f16, f32 or q8_0)");
    }
  }
  if (!f->pooling.empty()) {
    PoolingType p;
    if (!ParsePooling(f->pooling, &p)) {
      return InvalidArgument("--pooling must be none, mean, cls, last or rank, got '" + f->pooling + "'");
    }
    if (f->rerank && p != PoolingType::kRank) {
      return InvalidArgument("--rerank cannot be combined with --pooling " + f->pooling +
                             " (reranking scores with the classifier head: pooling rank)");
    }
    o.engine.pooling = p;
    o.pooling_none = p == PoolingType::kNone;
    f->rerank = f->rerank || p == PoolingType::kRank;
  }
  if (f->rerank) {  // as llama-server's --reranking: embeddings on, rank pooling
    o.engine.pooling = PoolingType::kRank;
    o.engine.embeddings = true;
  }
  if (!f->chat_template_file.empty()) {
    LS_ASSIGN_OR_RETURN(o.chat_template, ReadFile(f->chat_template_file));
    o.chat_template_label = std::filesystem::path(f->chat_template_file).filename().string();
  } else if (!f->chat_template.empty()) {
    // A built-in name, a file that exists, or the Jinja source itself.
    std::error_code ec;
    if (f->chat_template.find("{") == std::string::npos &&
        std::filesystem::is_regular_file(f->chat_template, ec)) {
      LS_ASSIGN_OR_RETURN(o.chat_template, ReadFile(f->chat_template));
      o.chat_template_label = std::filesystem::path(f->chat_template).filename().string();
    } else if (f->chat_template.find("{") == std::string::npos &&
               f->chat_template.find_first_of(" \t\r\n") == std::string::npos) {
      // One word, not Jinja and not a file: one of llama-server's template names, or a mistake said at once
      // (llama-server would render the word itself as every prompt).
      if (!ChatTemplate::Builtin(f->chat_template).ok()) {
        return InvalidArgument("--chat-template: '" + f->chat_template +
                               "' is neither a file, Jinja source nor a built-in template name (known: " +
                               ChatTemplate::BuiltinNamesList() + ")");
      }
      o.chat_template = f->chat_template;
    } else {
      // Jinja source, as llama-server (--jinja) takes any other value; text without tags renders as itself.
      if (f->chat_template.find("{") == std::string::npos) {
        LS_LOG_WARN("--chat-template: no Jinja tags and not a file or a built-in name: rendered as it is, "
                    "the same text for every chat");
      }
      o.chat_template = f->chat_template;
    }
  }
  if (o.router_mode()) o.router.command_line = CommandLineOverrides(*f);
  if (o.engine.model_path.empty() && !o.router_mode()) {
    // Generated after the listener is up, so /health answers 503 meanwhile.
    if (o.model_alias.empty()) o.model_alias = "demo";
    o.before_load = [](server::ServerOptions* opts) {
      opts->engine.model_path = DemoModelPath();
      return EnsureDemoModel(opts->engine.model_path);
    };
  }
  return Status::Ok();
}

}  // namespace lazyslot::cli
