// State shared by the route handlers of one HttpServer (internal to src/server): options, the model (one
// engine) or the router (many), what each loaded model's routes need (ModelContext: chat template, tool-call
// format, ...), HTTP counters for /metrics, and the registration functions of each route file.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "chat/chat_template.h"
#include "chat/reasoning.h"
#include "chat/tool_calls.h"
#include "engine/engine.h"
#include "engine/sampler_dry.h"
#include "router/router.h"
#include "server/http/drain.h"
#include "server/http/stream_sessions.h"
#include "server/http/httplib_include.h"
#include "server/http_server.h"
#include "server/memory_monitor.h"
#include "tools/mcp/mcp_servers.h"

namespace lazyslot::server {

// What the routes derive once from a loaded model: built when its engine is created (one per load in router
// mode, kept with the engine as the router's attachment) and read-only afterwards, except the caches.
struct ModelContext {
  Engine* engine = nullptr;  // owned by State::engine (one model) or by the router (kept alive by a lease)
  std::string model_id;      // the id in /v1/models and in responses
  ChatTemplate chat_template;
  ToolCallFormat tool_format = ToolCallFormat::kGeneric;      // how the template's model writes tool calls
  ReasoningSyntax reasoning_syntax = ReasoningSyntax::kNone;  // how it marks reasoning (from the template)
  std::string bos_text, eos_text;  // passed to chat templates as bos_token / eos_token
  bool pooling_none = false;       // --pooling none (or the preset's): per-token vectors only

  // DRY sequence breakers resolved to tokens (a scan of the vocabulary), per breaker list, so the scan runs
  // once per list and on an HTTP thread, never on the scheduler's. At most kMaxDryLists lists are kept.
  static constexpr size_t kMaxDryLists = 32;
  std::mutex dry_mu;
  std::map<std::vector<std::string>, std::shared_ptr<const DryBreakers>> dry_breakers;
};

// The template (`chat_template`: empty = the model's own, a built-in name or Jinja source labelled
// `template_label`), its tool-call format and reasoning syntax, and the BOS/EOS texts of `engine`.
Result<std::shared_ptr<ModelContext>> MakeModelContext(Engine* engine, std::string model_id,
                                                       const std::string& chat_template,
                                                       const std::string& template_label);

// One model for the length of a request. In router mode the lease keeps it loaded (and its engine alive)
// until the request is answered, streamed answers included.
struct ModelRef {
  ModelLease lease;  // empty with one model
  std::shared_ptr<ModelContext> ctx;
  ModelContext* operator->() const { return ctx.get(); }
  ModelContext& operator*() const { return *ctx; }
  Engine& engine() const { return *ctx->engine; }
};

struct HttpServer::State {
  ServerOptions opts;
  httplib::Server http;
  std::atomic<bool> ready{false};     // the model and its template loaded (router mode: the router created)
  std::atomic<bool> stopping{false};  // Stop() called: handlers cancel their requests and return
  std::atomic<bool> draining{false};  // Drain() called: new requests are refused, running ones finish
  std::atomic<int> active_requests{0};  // generation and embedding requests being answered (ActiveRequest)
  // One model: its engine and context, set once before `ready`, read-only afterwards. Router mode: `router`
  // (set once before `ready`) and no engine.
  std::unique_ptr<Engine> engine;
  std::shared_ptr<ModelContext> model;
  std::unique_ptr<Router> router;
  ReasoningFormat reasoning_format = ReasoningFormat::kAuto;  // --reasoning-format
  std::chrono::system_clock::time_point started = std::chrono::system_clock::now();

  // HTTP responses by status code, counted by the logger hook after each response.
  mutable std::mutex counters_mu;
  std::map<int, uint64_t> responses_by_status;
  std::atomic<uint64_t> streams_disconnected{0};  // clients that left mid-request
  std::atomic<uint64_t> connections_rejected{0};  // connections over --max-connections (answered 503)
  std::atomic<uint64_t> requests_timed_out{0};    // requests cancelled by --request-timeout
  // The memory view's sampler and history (GET /memory, /memory/stream); stopped before the engines go.
  std::unique_ptr<MemoryMonitor> memory_monitor;

  // The drain's sockets (http/drain.h), under listener_mu: the main port's listening descriptor (from
  // httplib's socket-options hook); listener_closed: Drain() shut it, after which httplib closes it itself
  // and http.stop() must never run (it would close the number again); listener_stopped: http.stop() was
  // called, after which the descriptor may be gone and must not be shut.
  std::mutex listener_mu;
  int listen_fd = -1;
  bool listener_closed = false;
  bool listener_stopped = false;
  ConnectionTracker connections;  // requests being answered on the main port, for closing idle connections
  StreamSessions stream_sessions;  // streams of requests with X-Conversation-Id, resumable by GET /v1/stream
  // --health-port: /health and /livez on a port of their own, open until the process exits.
  std::unique_ptr<httplib::Server> health_http;
  // The MCP servers (opts.mcp_servers), created with the /tools routes; declared last, so destroyed first:
  // after the HTTP workers are joined, which kills their processes.
  std::unique_ptr<tools::mcp::McpServers> mcp;
};
using ServerState = HttpServer::State;

// The model a request names (router.h's Acquire: loads it on demand), or the one model. `name` is the
// body's `model` or the query's `?model=`; with one model it is not checked (as llama-server). Router-mode
// errors: a missing name (400, naming the known ids), an unknown id (404), autoload off (400), the model's
// file changed (404/500), no room (503), a failed load (its code). `autoload`: the query's ?autoload=.
Result<ModelRef> ResolveModel(ServerState& st, const std::string& name,
                              std::optional<bool> autoload = std::nullopt);
// The model only if it is loaded now, without loading it or counting a use (Router::Peek): for /health
// and /metrics, so that probes and scrapes neither wake nor keep awake an idle model. kUnavailable (503)
// when it is not loaded.
Result<ModelRef> PeekModel(ServerState& st, const std::string& name);
// The same, reading the name from a POST body's `model` (a non-string is a 400) or, for a GET, `?model=`,
// and ?autoload=true|false from the query.
Result<ModelRef> ResolveModel(ServerState& st, const httplib::Request& req,
                              const nlohmann::ordered_json* body);

void RegisterCompletionRoutes(ServerState& st);    // /v1/chat/completions, /v1/completions, /completion,
                                                   // /apply-template
void RegisterEmbeddingRoutes(ServerState& st);     // /v1/embeddings, /embeddings, /embedding
void RegisterRerankRoutes(ServerState& st);        // /v1/rerank, /rerank, /reranking, /v1/reranking
void RegisterTeiRoutes(ServerState& st);           // /embed, /embed_all (TEI)
void RegisterAnthropicRoutes(ServerState& st);     // /v1/messages, /v1/messages/count_tokens (Anthropic)
void RegisterResponsesRoutes(ServerState& st);     // /v1/responses, /v1/responses/input_tokens
void RegisterInfillRoute(ServerState& st);         // /infill
void RegisterInfoRoutes(ServerState& st);          // /health, /props, /metrics, /tokenize, /detokenize
void RegisterModelRoutes(ServerState& st);         // /v1/models, /models, POST /models/load|unload
void RegisterSlotRoutes(ServerState& st);          // GET /slots, POST /slots/{id}?action=save|restore|erase
void RegisterMemoryRoutes(ServerState& st);        // GET /memory, /memory/stream (the page's memory view)
void RegisterWebUiRoutes(ServerState& st);         // GET /, /index.html, /ui/* (the web page; --no-webui)
void RegisterCorsProxyRoutes(ServerState& st);     // GET/POST /cors-proxy (--ui-mcp-proxy)
void RegisterToolRoutes(ServerState& st);          // GET/POST /tools (--tools)
void RegisterStreamRoutes(ServerState& st);        // GET/DELETE /v1/stream, POST /v1/streams/lookup
// Prometheus text for GET /metrics: `engine`'s series (router mode: ?model='s, or null for the router's
// per-model series only), the router's and the HTTP counters.
std::string RenderMetrics(const ServerState& st, const Engine* engine);

// Counts one request in ServerState::active_requests for its lifetime (the drain waits for the count to
// reach zero).
class ActiveRequest {
 public:
  explicit ActiveRequest(ServerState* st) : st_(st) { st_->active_requests.fetch_add(1); }
  ~ActiveRequest() { st_->active_requests.fetch_sub(1); }
  ActiveRequest(const ActiveRequest&) = delete;
  ActiveRequest& operator=(const ActiveRequest&) = delete;

 private:
  ServerState* st_;
};

using RouteHandler = std::function<void(ServerState&, const httplib::Request&, httplib::Response&)>;
// Wraps a route: exceptions become 500, and with `tei` every error leaves in TEI's shape (embed_batch.cpp).
httplib::Server::Handler GuardRoute(ServerState& st, RouteHandler fn, bool tei = false);

// GET /health (and /v1/health): 503 "Loading model" while loading, 503 {"status": "draining"} while draining,
// with ?ready=1 503 {"status": "busy"} when a new request would wait, else 200 {"status": "ok"}. Served on the
// main port and on --health-port.
void AnswerHealth(ServerState& st, const httplib::Request& req, httplib::Response& res);

// Why a new request would have to wait now (queue not empty, no idle slot, KV budget reserved), or "" when
// it would start at once: the readiness of /health?ready=1 and /slots?fail_on_no_slot=1.
std::string WhyNotReady(const Engine& engine);

// The answer to a request cancelled by the shutdown: 503 with type "server_shutdown".
nlohmann::json ShutdownErrorBody(const std::string& message);
void SetShutdownError(httplib::Response& res, const std::string& message);

// Seconds since the epoch, for OpenAI's `created`.
int64_t UnixNow();
// "chatcmpl-" + 24 random characters.
std::string NewId(const std::string& prefix);

}  // namespace lazyslot::server
