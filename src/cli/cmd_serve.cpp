// `lazyslot serve`: declares llama-server's flags (read into ServerOptions by serve_options.cpp) and runs the
// HTTP server until SIGINT/SIGTERM (the first drains, the second stops).
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
  sub->add_option("-a,--alias", f->alias,
                  "The model's names, comma-separated (llama-server's): /v1/models lists them as aliases; "
                  "the first in sorted order is the id reported there and in responses")
      ->capture_default_str();
  sub->add_option("--tags", f->tags,
                  "The model's tags, comma-separated (informational: listed by /v1/models)");
  sub->add_option("--ctx-size", o.engine.n_ctx, "Total KV cells; each --parallel slot gets ctx/N (also -c N)")
      ->capture_default_str();
  sub->add_option("--parallel", o.engine.n_parallel, "Slots, i.e. requests served at once (also -np N)")
      ->capture_default_str();
  sub->add_option("--threads", o.engine.n_threads, "Compute threads (0: physical cores; also -t N)")
      ->capture_default_str();
  sub->add_option("--batch-size", o.engine.n_batch,
                  "Most tokens per forward pass; longer prompts go in chunks (also -b N)")
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
                  "Seconds SIGTERM/SIGINT lets requests in flight finish (the port stops accepting at once; a "
                  "request on a connection already open is served with Connection: close) before they are "
                  "cancelled; a second signal stops at once")
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
  sub->add_option("--cors-headers", o.cors_headers,
                  "A CORS preflight's Access-Control-Allow-Headers, comma-separated or * (default: the headers "
                  "the preflight asks for; llama-server's default \"*\" never covers Authorization in a browser)");
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
  sub->add_option("--mcp-servers-config", f->mcp_config_file,
                  "Experimental: a JSON file of MCP servers to run, {\"mcpServers\": {NAME: {\"command\", \"args\", "
                  "\"env\", \"cwd\", \"timeout_ms\"}}} (Claude Desktop's shape); their tools join GET/POST /tools "
                  "as NAME_TOOL. Sets --cors-origins to localhost unless given")
      ->envname("LLAMA_ARG_MCP_SERVERS_CONFIG");
  sub->add_option("--mcp-servers-json", f->mcp_json,
                  "Experimental: the same as --mcp-servers-config, inline")
      ->envname("LLAMA_ARG_MCP_SERVERS_JSON");
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
  sub->add_option("--cache-ram", f->cache_ram,
                  "Accepted for llama-server compatibility (MiB of its RAM prompt cache; -1 no limit, 0 off; "
                  "also -cram): idle slots keep their prompts' KV in place here, released only for room");
  sub->add_flag("--cache-idle-slots,!--no-cache-idle-slots", f->cache_idle_slots,
                "Accepted for llama-server compatibility (it copies idle slots into its RAM cache on each "
                "new task): idle slots keep their KV until a request needs the room");
  sub->add_flag("--context-shift,!--no-context-shift", o.engine.context_shift,
                "A generation that fills its slot drops the oldest cells after the request's n_keep (half of "
                "the rest, or its n_discard) and goes on, reported truncated (llama-server's; default off: "
                "it ends with finish_reason length)");
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
  sub->add_flag("--backend-sampling,--backend_sampling", f->backend_sampling,
                "Accepted for llama-server compatibility (also -bs): lazyslot has one sampler, on the CPU, so "
                "this selects nothing different (as the request field backend_sampling)");
  sub->footer(
      "llama-server spellings also accepted: -np N (= --parallel N), -ctk/-ctv T (= --cache-type-k/v T),\n"
      "-fa X (= --flash-attn X), -t N (= --threads N), -to N (= --timeout N), -ngl N (ignored: CPU only),\n"
      "-b N (= --batch-size N), -bs (= --backend-sampling).\n"
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
