// `lazyslot serve`: llama-server's flags -> ServerOptions; with no -m, generates a random-weight demo model
// with this executable's `synth` subcommand. Runs the HTTP server until SIGINT/SIGTERM.
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
#include "core/log.h"
#include "gguf/tensor_type.h"
#include "server/http/server_limits.h"
#include "server/http_server.h"
#include "server/vertex.h"
#include "tools/builtin_tools.h"

namespace lazyslot::cli {
namespace {

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
  double sleep_idle_s = -1;  // --sleep-idle-seconds (llama-server's name): both idle releases at once
  // Router mode (several models): more than one -m, --models-dir or --models-preset.
  std::vector<std::string> models;  // -m, repeatable
  std::string memory_budget;        // --memory-budget SIZE
  // Per-model flags given on the command line (CLI11's count or the llama-style spellings), which in
  // router mode win over the preset's values.
  bool ctx_given = false, parallel_given = false, embeddings_given = false;
};

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
// declare; they arrive as extras and are read here. -c, -t and -n are read here too, because CLI11 would take
// "-ctk" as "-c tk" (and "-to", "-np" likewise). Returns a usage error for anything else left over.
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
  if (!o.model_alias.empty()) {
    return InvalidArgument("--alias names the one model; in router mode give aliases in --models-preset");
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
// or with --tools or --ui-mcp-proxy (the server's files, or a proxy into its network), "localhost": any port of
// localhost, 127.0.0.1 and [::1], so local apps work and remote pages cannot use the server as the visitor.
void DefaultCorsOrigins(server::ServerOptions* o) {
  if (!o->cors_origins.empty()) return;
  const bool local = o->api_keys.empty() || !o->tools.empty() || o->ui_mcp_proxy;
  o->cors_origins = {local ? "localhost" : "*"};
}

Status PrepareOptions(ServeFlags* f, const std::vector<std::string>& extras) {
  if (f->verbose) SetLogLevel(LogLevel::kDebug);
  LS_RETURN_IF_ERROR(ReadLlamaStyleExtras(extras, f));
  server::ServerOptions& o = f->opts;
  if (f->seed != -1) o.sampling.seed = static_cast<uint64_t>(f->seed);
  LS_RETURN_IF_ERROR(PrepareRouter(f));
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
    } else if (f->chat_template.find("{") == std::string::npos) {
      // Not Jinja and not a file: one of llama-server's template names, or a mistake said at once.
      if (!ChatTemplate::Builtin(f->chat_template).ok()) {
        return InvalidArgument("--chat-template: '" + f->chat_template +
                               "' is neither a file, Jinja source nor a built-in template name (known: " +
                               ChatTemplate::BuiltinNamesList() + ")");
      }
      o.chat_template = f->chat_template;
    } else {
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

// Blocks SIGINT/SIGTERM in every thread (set before any thread starts) and waits for them in one thread,
// which drains the server on the first and stops it on the second; this runs outside signal context.
class SignalWatcher {
 public:
  explicit SignalWatcher(server::HttpServer* srv) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    thread_ = std::thread([this, srv] {
      bool draining = false;
      while (!done_.load()) {
        timespec ts{0, 200 * 1000 * 1000};
        const int sig = sigtimedwait(&set_, nullptr, &ts);
        if ((sig == SIGINT || sig == SIGTERM) && !draining) {
          LS_LOG_INFO("signal %d: draining (a second signal stops at once)", sig);
          draining = true;
          srv->Drain();
        } else if (sig == SIGINT || sig == SIGTERM) {
          LS_LOG_INFO("signal %d again: stopping now", sig);
          srv->Stop();
          return;
        }
      }
    });
  }
  ~SignalWatcher() {
    done_.store(true);
    thread_.join();
    pthread_sigmask(SIG_UNBLOCK, &set_, nullptr);
  }

 private:
  sigset_t set_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace

void AddServeCommand(CLI::App& root, int* exit_code) {
  auto f = std::make_shared<ServeFlags>();
  server::ServerOptions& o = f->opts;
  CLI::App* sub = root.add_subcommand(
      "serve", "Serve a GGUF model over an OpenAI-compatible HTTP API (llama-server's routes and flags)");
  sub->allow_extras();  // for -np / -ngl, see ReadLlamaStyleExtras
  sub->add_option("-m,--model", f->models,
                  "GGUF model to serve; without it a random-weight demo model is generated (text is noise). "
                  "Repeated: router mode, one model per file (id: the file name without .gguf)");
  sub->add_option("--models-dir", o.router.sources.models_dir,
                  "Router mode: serve every *.gguf in this directory, loaded on demand (id: the file name "
                  "without .gguf); requests name their model in `model` (docs/models.md)");
  sub->add_option(
      "--models-preset", o.router.sources.preset_path,
      "Router mode: an INI file as llama-server's, a [section] per model (model, alias, ctx-size, "
      "parallel, embeddings, pooling, rerank, chat-template, cache-type-k/v, load-on-startup) "
      "and [*] defaults");
  sub->add_option("--models-max", o.router.models_max,
                  "Router mode: most models loaded at once; the least recently used idle one is unloaded "
                  "(0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  sub->add_flag("--models-autoload,!--no-models-autoload", o.router.autoload,
                "Router mode: load a model when a request names it (default on; off: POST /models/load "
                "first)");
  sub->add_option("--memory-budget", f->memory_budget,
                  "Router mode: most memory for all models' resident weights, KV and scratch, e.g. 1GiB; "
                  "idle memory is released to make room (decision 0007)");
  sub->add_option("-a,--alias", o.model_alias, "Model id reported by /v1/models and in responses")
      ->capture_default_str();
  sub->add_option("--ctx-size", o.engine.n_ctx, "Total KV cells; each --parallel slot gets ctx/N (also -c N)")
      ->capture_default_str();
  sub->add_option("--parallel", o.engine.n_parallel, "Slots, i.e. requests served at once (also -np N)")
      ->capture_default_str();
  sub->add_option("--threads", o.engine.n_threads, "Compute threads (0: physical cores; also -t N)")
      ->capture_default_str();
  sub->add_option("-b,--batch-size", o.engine.n_batch,
                  "Most tokens per forward pass; longer prompts go in chunks")
      ->capture_default_str();
  sub->add_option("--ubatch-size", f->ubatch,
                  "llama-server's physical batch (also -ub N): lazyslot has one batch size, the smaller of "
                  "--batch-size and this one")
      ->check(CLI::Range(1, 1 << 30));
  sub->add_option(
         "--n-predict", o.n_predict,
         "Tokens a request generates when it sets no max_tokens (-1: until the end or a full context; "
         "also -n N)")
      ->capture_default_str()
      ->check(CLI::Range(-1, std::numeric_limits<int32_t>::max()));
  sub->add_option("--max-tokens-cap", o.max_tokens_cap,
                  "The most tokens any request may generate; larger max_tokens are lowered to it (0: no cap)")
      ->capture_default_str()
      ->check(CLI::Range(0, std::numeric_limits<int32_t>::max()));
  // Sampling defaults for requests that do not set the field (llama-server's flags).
  SamplingParams& sp = o.sampling;
  sub->add_option("--temp", sp.temperature, "Default temperature")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  sub->add_option("--top-k", sp.top_k, "Default top_k (<= 0: off)")->capture_default_str();
  sub->add_option("--top-p", sp.top_p, "Default top_p (1: off)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--min-p", sp.min_p, "Default min_p (0: off)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--typical", sp.typical_p, "Default typical_p (1: off)")->capture_default_str();
  sub->add_option("--repeat-penalty", sp.repeat_penalty, "Default repeat_penalty (1: off)")
      ->capture_default_str();
  sub->add_option("--repeat-last-n", sp.repeat_last_n, "Default repeat_last_n (-1: the context)")
      ->capture_default_str()
      ->check(CLI::Range(-1, std::numeric_limits<int32_t>::max()));
  sub->add_option("--presence-penalty", sp.presence_penalty, "Default presence_penalty")
      ->capture_default_str()
      ->check(CLI::Range(-2.0, 2.0));
  sub->add_option("--frequency-penalty", sp.frequency_penalty, "Default frequency_penalty")
      ->capture_default_str()
      ->check(CLI::Range(-2.0, 2.0));
  sub->add_option("-s,--seed", f->seed, "Default seed (-1: random per request)")->capture_default_str();
  sub->add_option("--reasoning-format", o.reasoning_format,
                  "Where reasoning goes: none (left in content), deepseek or auto (reasoning_content), "
                  "deepseek-legacy (also left in streamed content)")
      ->capture_default_str();
  sub->add_option("--reasoning-budget", o.reasoning_budget,
                  "-1: unrestricted thinking; 0: thinking off where the template has enable_thinking")
      ->capture_default_str()
      ->check(CLI::Range(-1, 0));
  sub->add_option("--reasoning", f->reasoning,
                  "Thinking (also -rea): on, off or auto (default; on where the template has enable_thinking); "
                  "sets the templates' enable_thinking, which a request's chat_template_kwargs overrides")
      ->envname("LLAMA_ARG_REASONING");
  sub->add_option("--drain-timeout", o.drain_timeout_s,
                  "Seconds SIGTERM/SIGINT lets requests in flight finish (the port stops accepting at once; "
                  "requests on open connections get 503) before they are cancelled; a second signal stops at once")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  sub->add_option("--health-port", o.health_port,
                  "Also serve GET /health (readiness: 503 while loading or draining) and /livez (liveness: 200 "
                  "until the process exits) on this port, which stays open while SIGTERM's drain closes the "
                  "main port (for Kubernetes probes; 0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  sub->add_option("--backlog", o.backlog, "Connections the kernel queues before they are accepted")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option(
      "--cors-origins", f->cors_origins,
      "Browser origins allowed to call the API, comma-separated (exact scheme://host[:port], *, or "
      "localhost: any port of localhost, 127.0.0.1 and [::1]); default none, or localhost with --tools");
  sub->add_option(
         "--sleep-idle-seconds", f->sleep_idle_s,
         "llama-server's sleep: after S idle seconds release KV, scratch and weights (= --idle-timeout S "
         "--idle-release-weights S)")
      ->check(CLI::Range(0.0, 1e9));
  sub->add_option("--host", o.host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", o.port, "Port to listen on")->capture_default_str()->check(CLI::Range(1, 65535));
  sub->add_option("--api-key", f->api_keys,
                  "Require 'Authorization: Bearer KEY' on every route but /health; repeat for several keys "
                  "(env LAZYSLOT_API_KEY)")
      ->envname("LAZYSLOT_API_KEY")
      ->expected(1)
      ->allow_extra_args(false)  // one key per --api-key; a following word is not another key
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--api-key-file", f->api_key_file,
                  "File of API keys, one per line (blank lines and #comments ignored)");
  sub->add_flag("--metrics-no-auth", o.metrics_no_auth, "GET /metrics answers without an API key");
  sub->add_flag("--slots,!--no-slots", o.slots_endpoint,
                "Serve GET /slots, the slots' state (default on, as llama-server); --no-slots: 501");
  sub->add_flag("--webui,!--no-webui,--ui,!--no-ui", o.webui,
                "Serve the web page at / (chat and the live memory view; default on, as llama-server); "
                "--no-webui / --no-ui: / answers 404");
  sub->add_option("--tools", f->tools,
                  "Experimental: llama-server's built-in tools for agents (GET/POST /tools): read_file, "
                  "file_glob_search, grep_search, write_file, edit_file, get_datetime, get_info, or all of "
                  "those; exec_shell_command only when named (a shell is not confined to --tools-dir). Sets "
                  "--cors-origins to localhost unless given");
  sub->add_option("--tools-dir", f->tools_dir,
                  "The folder every built-in tool's file paths must stay inside (default: the current "
                  "directory)");
  sub->add_flag("--ui-mcp-proxy,--webui-mcp-proxy,!--no-ui-mcp-proxy,!--no-webui-mcp-proxy", o.ui_mcp_proxy,
                "Experimental, off by default: GET/POST /cors-proxy?url= forwards the page's requests to "
                "other servers (MCP servers without CORS), with only the headers the page names explicitly");
  sub->add_flag("-v,--verbose", f->verbose, "Debug logging (per-request details such as grammar statistics)");
  sub->add_flag("--embeddings,--embedding", o.engine.embeddings,
                "Serve embeddings: /v1/embeddings, /embedding, and TEI's /embed and /embed_all");
  sub->add_flag("--rerank,--reranking", f->rerank,
                "Serve reranking with the model's classifier head: /v1/rerank, /rerank (Jina, Cohere and TEI "
                "shapes); = --pooling rank");
  sub->add_option("--pooling", f->pooling,
                  "Embedding pooling: none, mean, cls, last or rank (default: the model's, else mean)")
      ->check(CLI::IsMember({"none", "mean", "cls", "last", "rank"}));
  sub->add_option("--embd-normalize", o.embd_normalize,
                  "Default normalisation of /v1/embeddings and /embedding: -1 none, 0 max-abs int16, "
                  "1 taxicab, 2 euclidean, >2 p-norm")
      ->capture_default_str()
      ->check(CLI::Range(-1, 100));
  sub->add_flag("--auto-truncate", o.auto_truncate,
                "Cut embedding and rerank inputs longer than a slot instead of refusing them (a request's "
                "\"truncate\": false still refuses)");
  sub->add_option("--max-client-batch-size", o.max_client_batch_size,
                  "Most inputs (or documents) in one embedding or rerank request; more get 413 (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  sub->add_option("--max-batch-tokens", o.max_batch_tokens,
                  "Most tokens in one embedding or rerank request, all inputs together; more get 413 "
                  "(0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  sub->add_option(
      "--chat-template", f->chat_template,
      "Chat template: a Jinja file, Jinja source or one of llama-server's names (chatml, llama2, llama3, "
      "llama4, gemma, mistral-v7, phi4, deepseek3, command-r, ...; an unknown name lists them) "
      "(default: the model's)");
  sub->add_option("--chat-template-file", f->chat_template_file, "Chat template from a Jinja file");
  sub->add_option("--max-queue", o.engine.max_queue, "Requests that may wait for a slot; more get 503")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  sub->add_flag("--kv-eager", o.engine.kv_eager, "Commit the whole KV cache at start (default: lazily)");
  sub->add_flag("--no-kv-share{false}", o.engine.kv_share,
                "Each slot copies a common prompt prefix's KV instead of mapping one copy (for comparison)");
  sub->add_flag("--swa-full", o.engine.swa_full,
                "Sliding-window models: keep every cell of the local layers too, so a prompt can be reused "
                "from any point (default: only the window, given back as it slides)");
  sub->add_flag("--kv-unified,!--no-kv-unified", o.engine.kv_unified,
                "One pool of --ctx-size cells for all slots (llama-server's -kvu): each slot may grow to the whole "
                "context while the others leave room (default: --ctx-size / --parallel cells per slot)");
  sub->add_option("--kv-park", o.engine.kv_park_dir,
                  "Write an idle conversation's KV to DIR before releasing it, and read it back when the "
                  "conversation returns (router mode: a subfolder per model); created if missing");
  sub->add_option("--kv-park-after", o.engine.kv_park_after_s,
                  "With --kv-park: park and release a slot idle for this many seconds (default 0: only when "
                  "its KV would be released anyway)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--kv-park-max", f->kv_park_max,
                  "With --kv-park: most disk used by parked conversations, e.g. 8GiB (default 0: no cap); "
                  "the least recently used go first");
  sub->add_option("--kv-budget", f->kv_budget,
                  "Most KV-cache memory committed over all slots, e.g. 512M or 2G (default 0: no cap)");
  sub->add_option("--max-body-size", f->max_body_size,
                  "Largest request body, e.g. 8MiB or 65536 (default 8 MiB); larger ones get 413");
  sub->add_option("--idle-timeout", o.engine.idle_timeout_s,
                  "Seconds without work after which the KV cache and scratch memory are released (0: never)")
      ->capture_default_str();
  sub->add_option("--idle-release-weights", o.engine.idle_release_weights_s,
                  "Seconds without work after which the weights' pages are dropped (0: never)")
      ->capture_default_str();
  sub->add_option("--slot-save-path", o.engine.slot_save_path,
                  "Directory for POST /slots/{id}?action=save|restore (default: disabled)");
  sub->add_option("--flash-attn", f->flash_attn,
                  "Attention with online softmax: on, off or auto (= on; also -fa)");
  sub->add_flag("--no-warmup", f->no_warmup, "Skip the warm-up token at start");
  sub->add_flag("--mmap,!--no-mmap", o.engine.mmap,
                "Weights stay a mapping of the GGUF file on 4 KiB pages, shared by every process mapping it "
                "(default --no-mmap: a private copy on 2 MiB pages, faster generation; decision 0010)");
  sub->add_option("--cache-type-k", f->cache_type_k,
                  "KV cache type for K: f16 (default), f32 or q8_0 (also -ctk)");
  sub->add_option("--cache-type-v", f->cache_type_v,
                  "KV cache type for V: f16 (default), f32 or q8_0 (also -ctv)");
  sub->add_option("--http-threads", o.http_threads, "HTTP worker threads (0: parallel + max-queue + 16)")
      ->capture_default_str();
  sub->add_option("--max-connections", o.max_connections,
                  "Connections served at once, one HTTP thread each; more get 503 at once "
                  "(0: --http-threads)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  sub->add_option("--request-timeout", o.request_timeout_s,
                  "Seconds a completion or embedding request may run, queue wait included; then it is "
                  "cancelled and answered 504 (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  sub->add_option("--timeout", o.socket_timeout_s,
                  "Socket read/write timeout in seconds (also -to N; 0: cpp-httplib's 5 s)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  sub->add_flag("--jinja", f->jinja, "Accepted for llama-server compatibility (templates are always Jinja)");
  sub->add_flag("--no-jinja", f->no_jinja,
                "Accepted for llama-server compatibility with a warning: the model's Jinja template is still "
                "used (llama-server's built-in non-Jinja formats are not implemented)");
  sub->add_flag("--metrics", f->metrics, "Accepted for llama-server compatibility (/metrics is always on)");
  sub->footer(
      "llama-server spellings also accepted: -np N (= --parallel N), -ctk/-ctv T (= --cache-type-k/v T),\n"
      "-fa X (= --flash-attn X), -t N (= --threads N), -to N (= --timeout N), -ngl N (ignored: CPU only).\n"
      "Routes: POST /v1/chat/completions /v1/completions /completion /infill /v1/messages /v1/responses\n"
      "/v1/embeddings /embedding /embed /embed_all /v1/rerank /rerank /tokenize /detokenize "
      "/apply-template;\n"
      "POST /slots/{id}?action=save|restore|erase; GET /health /v1/models /props /slots /metrics.\n"
      "Router mode: POST /models/load /models/unload {\"model\": id}; GET /models?reload=1 rescans.");
  sub->callback([f, sub, exit_code] {
    f->ctx_given = f->ctx_given || sub->count("--ctx-size") > 0;
    f->parallel_given = f->parallel_given || sub->count("--parallel") > 0;
    f->embeddings_given = sub->count("--embeddings") > 0;
    Status s = PrepareOptions(f.get(), sub->remaining());
    if (!s.ok()) {
      std::fprintf(stderr, "lazyslot serve: error: %s\n", s.message().c_str());
      *exit_code = s.code() == Code::kInvalidArgument ? 2 : 1;
      return;
    }
    server::HttpServer srv(f->opts);
    {
      SignalWatcher watcher(&srv);
      s = srv.Run();
    }
    if (!s.ok()) {
      std::fprintf(stderr, "lazyslot serve: error: %s\n", s.message().c_str());
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace lazyslot::cli
