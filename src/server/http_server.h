// `lazyslot serve`: an OpenAI-compatible HTTP server (llama-server's routes and flags) over one Engine, or
// over a Router of many models (router mode, as llama-server's `--models-dir`). The listener starts before
// the model loads, so /health answers 503 while loading and 200 once ready.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "router/router.h"
#include "tools/mcp/mcp_config.h"

namespace lazyslot::server {

struct ServerOptions {
  EngineConfig engine;
  // Router mode (docs/models.md): several models from --models-dir, repeated -m or --models-preset, loaded on
  // demand, each request routed by its `model`. `router.base` is ignored: every model starts from `engine`
  // (its model_path unused), with its preset section's settings over it. Off while router.sources is empty.
  RouterConfig router;
  bool router_mode() const { return !router.sources.empty(); }
  std::string host = "127.0.0.1";
  int port = 8080;
  // Accepted API keys (--api-key, repeatable, and --api-key-file); empty: no authentication. Never logged.
  std::vector<std::string> api_keys;
  bool metrics_no_auth = false;  // --metrics-no-auth: GET /metrics answers without a key
  bool slots_endpoint = true;    // --slots / --no-slots (llama-server's): off, GET /slots answers 501
  bool webui = true;             // --webui / --no-webui (llama-server's; --no-ui too): the page at /
  bool ui_mcp_proxy = false;     // --ui-mcp-proxy: GET/POST /cors-proxy?url= forwards the page's requests
  // --tools (llama-server's built-in tools, routes_tools.cpp): the enabled names, each confined to tools_dir
  // (--tools-dir, default the current directory). Empty: GET/POST /tools answer 403.
  std::vector<std::string> tools;
  std::string tools_dir;
  // --mcp-servers-config / --mcp-servers-json (llama-server's): MCP servers over stdio whose tools GET/POST
  // /tools also serve, as "SERVER_TOOL" (tools/mcp/). Non-empty: /tools answers even without --tools.
  std::vector<tools::mcp::ServerConfig> mcp_servers;
  // Chat template override: empty = the model's own `tokenizer.chat_template`; a built-in name (chatml,
  // llama3, gemma, ...: ChatTemplate::BuiltinNames()); or Jinja source, labelled `chat_template_label` in /props and the log.
  std::string chat_template;
  std::string chat_template_label = "custom";
  std::string model_alias;    // id in /v1/models and responses; empty = the model file's name
  // -a/--alias a,b,c and --tags x,y (llama-server's, one model): every alias and tag, sorted and unique, as
  // /v1/models lists them; the id (model_alias) is the first alias in that order.
  std::vector<std::string> model_aliases, model_tags;
  bool pooling_none = false;  // --pooling none: per-token vectors, which /v1/embeddings refuses
  // Embedding and rerank routes (docs/embeddings.md). Reranking is on when engine.pooling is kRank
  // (--rerank). embd_normalize: llama-server's --embd-normalize, the default of /v1/embeddings and /embedding
  // (-1 none, 0 max-abs int16, 1 taxicab, 2 euclidean, > 2 p-norm). auto_truncate: inputs longer than a slot
  // are cut instead of refused unless a request says `truncate: false`. max_client_batch_size: inputs
  // (documents) per request; max_batch_tokens: tokens per request after truncation; 0: no limit; more: 413.
  int embd_normalize = 2;
  bool auto_truncate = false;
  int max_client_batch_size = 2048;
  int64_t max_batch_tokens = 0;
  // -n/--n-predict: tokens a completion request generates when it names no limit, as llama-server; -1: until
  // end of generation or the context is full. --max-tokens-cap: the most any request may generate (larger
  // limits are lowered to it); 0: no cap.
  int32_t n_predict = -1;
  int32_t max_tokens_cap = 0;
  // Sampling defaults for requests that do not set a field (--temp, --top-k, --top-p, --min-p, --seed,
  // --repeat-penalty, ...), reported by /props.
  SamplingParams sampling;
  // --reasoning-format none|deepseek|deepseek-legacy|auto (a request's reasoning_format overrides it) and
  // --reasoning-budget: -1 unrestricted, 0 thinking off (the template's enable_thinking = false).
  std::string reasoning_format = "auto";
  int reasoning_budget = -1;
  // -rea/--reasoning on|off|auto (llama-server's): 1 on, 0 off, -1 auto. On and off set the templates'
  // enable_thinking (a request's chat_template_kwargs.enable_thinking overrides it); auto leaves thinking on
  // where the template has the switch. Off also closes a <think> the generation prompt leaves open.
  int reasoning = -1;
  // Largest request body (--max-body-size); a bigger one is answered 413 without being read.
  uint64_t max_body_size = uint64_t{8} << 20;
  int http_threads = 0;  // 0: n_parallel + max_queue + 16 (every waiting request holds a thread)
  // Limits (server_limits.h). max_connections: connections served at once, each on its own HTTP thread;
  // more get 503 at once (0: http_threads). request_timeout_s: a completion or embedding request still
  // running after this is cancelled and answered 504 (0: none). socket_timeout_s: read/write timeout of
  // a connection (-to/--timeout; 0: cpp-httplib's 5 s).
  int max_connections = 0;
  double request_timeout_s = 600;
  int socket_timeout_s = 0;
  // Operations (docs/deploy.md). drain_timeout_s: after SIGTERM/SIGINT (Drain()), new requests get 503 and
  // in-flight ones may finish for this long before they are cancelled. backlog: the listening socket's
  // queue of connections not yet accepted (--backlog). cors_origins: origins that may call the API from a
  // browser (exact, "*", or "localhost": http(s) on localhost, 127.0.0.1 or [::1], any port); empty: no CORS
  // headers, or "localhost" when --tools is on (as llama-server).
  // The drain closes the main port's listener at once (new connections are refused, which every balancer
  // retries elsewhere), closes idle kept-alive connections, and answers a request that still arrives on an
  // open connection 503 with `Connection: close`. health_port (--health-port; 0: none): /health (readiness:
  // 503 "draining") and /livez (liveness: 200 until the process exits) on --host:health_port, which stays
  // open for the whole drain.
  double drain_timeout_s = 30;
  int health_port = 0;
  int backlog = 512;
  std::vector<std::string> cors_origins;
  // --cors-headers: a preflight's Access-Control-Allow-Headers; empty (the default): the headers the preflight
  // asks for, echoed. llama-server's default is "*", which browsers never let cover Authorization.
  std::string cors_headers;
  // Runs after the listener starts and before the engine loads (while /health says 503), e.g. to generate
  // the demo model. May set engine.model_path.
  std::function<Status(ServerOptions*)> before_load;
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port, starts answering (503 while loading), loads the engine and the chat template, then
  // serves until Stop(). Errors: the port cannot be bound, the model or the template fails to load.
  Status Run();
  // Thread-safe; makes Run() return after in-flight requests are cancelled.
  void Stop();
  // Thread-safe graceful stop: close the listening socket (new connections are refused) and the idle
  // kept-alive connections, answer requests still arriving on open connections 503 with Retry-After and
  // `Connection: close` (/health says "draining", also on --health-port), let the requests in flight finish
  // within drain_timeout_s, then Stop(). Before the model is ready: Stop().
  void Drain();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace lazyslot::server
