// HttpServer: binds the port, answers /health with 503 while the engine loads, then serves every route.
// Cross-cutting hooks live here: API-key check, loading gate, OpenAI-style 404/500 bodies, response counts,
// and the drain (SIGTERM): the listener closed at once, idle connections closed, later requests refused with
// `Connection: close`; --health-port's listener, which stays open until the process exits.
#include "server/http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <thread>

#include "core/log.h"
#include "server/admin/webui.h"
#include "server/anthropic/anthropic_api.h"
#include "server/embeddings/embed_batch.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"
#include "server/http/server_limits.h"
#include "server/server_state.h"
#include "server/vertex.h"

namespace lazyslot::server {
namespace {

// The key from `Authorization: Bearer <key>` (OpenAI clients) or `X-Api-Key: <key>`.
std::string PresentedKey(const httplib::Request& req) {
  const std::string auth = req.get_header_value("Authorization");
  const std::string bearer = "Bearer ";
  if (auth.size() > bearer.size() && auth.compare(0, bearer.size(), bearer) == 0)
    return auth.substr(bearer.size());
  return req.get_header_value("X-Api-Key");
}

// /health, /v1/health and, under Vertex AI (AIP_HEALTH_ROUTE), its health path: public, answered while the
// model loads and while the server drains.
bool IsHealthPath(const std::string& path) {
  static const std::string vertex = VertexHealthRoute();
  return path == "/health" || path == "/v1/health" || (!vertex.empty() && path == vertex);
}

bool IsPublic(const ServerOptions& o, const std::string& path) {
  // As llama-server: health and the model list answer without a key, and so do the web page's files (the
  // page asks for the key and sends it with its own requests).
  return IsHealthPath(path) || path == "/models" || path == "/v1/models" ||
         (o.metrics_no_auth && path == "/metrics") || (o.webui && IsWebUiPath(path));
}

// Connections served at once: --max-connections, else --http-threads, else one per slot and queue place
// plus a few for /health, /slots and /metrics (every waiting or generating request holds its connection);
// in router mode, for each model that may be loaded at once (--models-max, or 4 without a limit).
size_t MaxConnections(const ServerOptions& o) {
  if (o.max_connections > 0) return static_cast<size_t>(o.max_connections);
  if (o.http_threads > 0) return static_cast<size_t>(o.http_threads);
  const int models = !o.router_mode() ? 1 : o.router.models_max > 0 ? o.router.models_max : 4;
  return static_cast<size_t>(std::min(1024, (o.engine.n_parallel + o.engine.max_queue) * models + 16));
}

// The one model (no router): its engine and context.
Status LoadSingleModel(ServerState& st) {
  LS_ASSIGN_OR_RETURN(st.engine, Engine::Create(st.opts.engine));
  const std::string id = st.opts.model_alias.empty()
                             ? std::filesystem::path(st.opts.engine.model_path).filename().string()
                             : st.opts.model_alias;
  Result<std::shared_ptr<ModelContext>> m =
      MakeModelContext(st.engine.get(), id, st.opts.chat_template, st.opts.chat_template_label);
  if (!m.ok()) {
    st.engine.reset();
    return InvalidArgument("--chat-template: " + m.status().message());
  }
  st.model = std::move(*m);
  st.model->pooling_none = st.opts.pooling_none;
  const EngineConfig& cfg = st.engine->config();
  LS_LOG_INFO("model '%s' ready: %d slot(s) of %d tokens, batch %d, queue %d%s", id.c_str(), cfg.n_parallel,
              st.engine->n_ctx_slot(), cfg.n_batch, cfg.max_queue,
              cfg.pooling == PoolingType::kRank ? ", reranking on"
              : cfg.embeddings                  ? ", embeddings on"
                                                : "");
  return Status::Ok();
}

// Router mode: the catalogue and the router; each model's context is built when it loads (the router's
// attachment), with the preset's chat-template or --chat-template.
Status CreateRouter(ServerState& st) {
  RouterConfig rc = st.opts.router;
  rc.base = st.opts.engine;
  const std::string cli_template = st.opts.chat_template, cli_label = st.opts.chat_template_label;
  const bool pooling_none = st.opts.pooling_none;
  const bool cli_pooling = rc.command_line.pooling.has_value();
  rc.attach = [=](const CatalogEntry& e, Engine& engine) -> Result<std::shared_ptr<void>> {
    // --chat-template on the command line wins over the preset's chat-template (llama-server's precedence).
    const bool own = !e.chat_template.empty() && cli_template.empty();
    LS_ASSIGN_OR_RETURN(std::shared_ptr<ModelContext> m,
                        MakeModelContext(&engine, e.id, own ? e.chat_template : cli_template,
                                         own ? e.origin + " chat-template" : cli_label));
    m->pooling_none =
        cli_pooling || !e.overrides.pooling ? pooling_none : *e.overrides.pooling == PoolingType::kNone;
    return std::shared_ptr<void>(std::move(m));
  };
  LS_ASSIGN_OR_RETURN(st.router, Router::Create(std::move(rc)));
  const std::vector<ModelInfo> models = st.router->List();
  int loaded = 0;
  for (const ModelInfo& m : models) loaded += m.status == ModelStatus::kLoaded ? 1 : 0;
  const BudgetInfo budget = st.router->budget();
  char limit[64] = "none";
  if (budget.limit > 0) std::snprintf(limit, sizeof limit, "%.1f MiB", budget.limit / 1048576.0);
  LS_LOG_INFO(
      "router ready: %zu model(s) listed, %d loaded, at most %d at once (0: no limit), memory budget %s%s",
      models.size(), loaded, st.router->config().models_max, limit,
      st.router->config().autoload ? "" : ", autoload off");
  return Status::Ok();
}

// "localhost" in --cors-origins: an http or https origin on this machine's names, any port.
bool IsLocalOrigin(const std::string& origin) {
  for (const char* scheme : {"http://", "https://"}) {
    if (origin.rfind(scheme, 0) != 0) continue;
    const std::string host = origin.substr(std::strlen(scheme));
    for (const char* name : {"localhost", "127.0.0.1", "[::1]"}) {
      const size_t n = std::strlen(name);
      if (host.compare(0, n, name) == 0 && (host.size() == n || host[n] == ':')) {
        const std::string port = host.size() == n ? "" : host.substr(n + 1);
        if (port.find_first_not_of("0123456789") == std::string::npos) return true;
      }
    }
  }
  return false;
}

// CORS: the allowed origin echoed for a request from one of --cors-origins ("*" allows any); empty if none.
std::string AllowedOrigin(const ServerOptions& o, const httplib::Request& req) {
  if (o.cors_origins.empty() || !req.has_header("Origin")) return "";
  const std::string origin = req.get_header_value("Origin");
  for (const std::string& allowed : o.cors_origins) {
    const bool local = allowed == "localhost" && IsLocalOrigin(origin);
    if (allowed == "*" || allowed == origin || local) return origin;
  }
  return "";
}

// Set by the pre-routing hook on a connection's thread when it refuses a request because the server is
// stopping (its body is left unread, so the connection must close after the 503); read and cleared by the
// logger hook.
thread_local bool t_refused_while_stopping = false;

// Routes that keep answering while the server stops: liveness, readiness and monitoring.
bool AnswersWhileDraining(const std::string& path) {
  return IsHealthPath(path) || path == "/metrics" || path == "/props" ||
         path == "/slots" || path == "/models" || path == "/v1/models";
}

// An error answered before routing (a body over the limit, a wrong method), in the shape of the API the path
// belongs to: Anthropic's for /v1/messages*, TEI's for /embed and /embed_all, else OpenAI's as given.
void InRouteShape(const httplib::Request& req, httplib::Response& res) {
  if (req.path.rfind("/v1/messages", 0) == 0) {
    const nlohmann::json body = nlohmann::json::parse(res.body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return;
    res.set_content(Dump(AnthropicErrorBody(res.status, body["error"].value("message", std::string("error")))),
                    "application/json; charset=utf-8");
  } else if (req.path == "/embed" || req.path == "/embed_all") {
    ConvertToTeiError(res);
  }
}

void InstallHooks(ServerState& st) {
  httplib::Server& http = st.http;
  http.set_pre_routing_handler([&st](const httplib::Request& req, httplib::Response& res) {
    // First of all, before the drain flag is read: Drain() closes only connections not counted here.
    st.connections.Begin(req);
    const std::string origin = AllowedOrigin(st.opts, req);
    if (!origin.empty()) {
      res.set_header("Access-Control-Allow-Origin", origin);
      res.set_header("Access-Control-Allow-Credentials", "true");
      res.set_header("Vary", "Origin");
      res.set_header("Access-Control-Expose-Headers", "Retry-After");
    }
    if (req.method == "OPTIONS") {
      // A CORS preflight, answered 200 without the API key as llama-server does. An origin that is not
      // allowed gets no CORS headers, so the browser refuses the call. The allowed headers are --cors-headers
      // when it is set, else the ones asked for, echoed: llama-server's default "*" never covers
      // Authorization in a browser (Fetch standard), so a page sending its key would be refused.
      res.status = 200;
      if (!origin.empty()) {  // Access-Control-Allow-Origin and -Credentials are set above, once
        res.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
        res.set_header("Access-Control-Allow-Headers",
                       !st.opts.cors_headers.empty() ? st.opts.cors_headers
                       : req.has_header("Access-Control-Request-Headers")
                           ? req.get_header_value("Access-Control-Request-Headers")
                           : "Authorization, Content-Type, X-Api-Key");
        res.set_header("Access-Control-Max-Age", "86400");
      }
      return httplib::Server::HandlerResponse::Handled;
    }
    if (RejectingThisConnection()) {
      res.set_header("Connection", "close");  // the logger hook below also ends the connection
      res.set_header("Retry-After", "1");
      SetError(res, 503,
               "too many connections: the server already serves " + std::to_string(MaxConnections(st.opts)) +
                   " (--max-connections); retry later");
      return httplib::Server::HandlerResponse::Handled;
    }
    // /health and the page answer while loading (the page shows the loading state); every other route,
    // public or not, waits for the engine.
    if (IsHealthPath(req.path) || (st.opts.webui && IsWebUiPath(req.path))) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    // Public paths are public to read only: POST and DELETE /models change the list (llama-server lets them
    // through without a key).
    const bool read_only = req.method == "GET" || req.method == "HEAD";
    if (!(read_only && IsPublic(st.opts, req.path)) && !st.opts.api_keys.empty() &&
        !KeyMatches(PresentedKey(req), st.opts.api_keys)) {
      const std::string message = "invalid or missing API key (send 'Authorization: Bearer <key>')";
      if (req.path.rfind("/v1/messages", 0) == 0) {  // Anthropic clients read Anthropic's error shape
        res.status = 401;
        res.set_content(Dump(AnthropicErrorBody(401, message)), "application/json; charset=utf-8");
      } else {
        SetError(res, 401, message);
      }
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!st.ready.load()) {
      SetError(res, 503, "Loading model");
      return httplib::Server::HandlerResponse::Handled;
    }
    // During a drain a request that reaches a connection opened before it is served (a balancer that already
    // sent a POST does not retry it elsewhere), with `Connection: close`. Once the drain is over, or on a stop
    // without one, it would only be cancelled: it is refused, and its connection closed after the answer.
    if (st.stopping.load() && !AnswersWhileDraining(req.path)) {
      res.set_header("Connection", "close");
      SetError(res, 503, "the server is shutting down and takes no new requests; retry on another replica");
      t_refused_while_stopping = true;
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Called for every response with status >= 400: fill in an OpenAI body where a handler left none
  // (unknown routes, payload too large, ...).
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([&st](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
        if (FillTransportError(req, res, st.opts.max_body_size)) {
          InRouteShape(req, res);
          return httplib::Server::HandlerResponse::Handled;
        }
        if (res.status == 404) {
          SetError(res, 404, "no route for " + req.method + " " + req.path);
        } else if (res.status == 400 && req.path.empty()) {
          // httplib sets the path only once the request line parsed (method, target, HTTP/1.0 or 1.1).
          SetError(res, 400, "malformed HTTP request line (expected 'METHOD /path HTTP/1.1')");
        } else if (res.status == 400) {
          SetError(res, 400,
                   "malformed HTTP request (a POST needs a body with Content-Length or chunked encoding)");
        } else {
          SetError(res, res.status, "HTTP error " + std::to_string(res.status));
        }
        InRouteShape(req, res);
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    SetError(res, 500, "internal error: " + what);
  });
  // While draining, every response whose headers are still to be written says `Connection: close`.
  http.set_post_routing_handler([&st](const httplib::Request&, httplib::Response& res) {
    if ((st.draining.load() || st.stopping.load()) && !res.has_header("Connection")) {
      res.set_header("Connection", "close");
    }
  });
  http.set_logger([&st](const httplib::Request& req, const httplib::Response& res) {
    st.connections.End(req);
    // A refused connection's read side is shut after its 503; httplib's attempt to read another request
    // from it ends in a 400 that is never sent (no request line): not a response, not counted.
    if (!(RejectingThisConnection() && req.method.empty())) {
      std::lock_guard<std::mutex> lock(st.counters_mu);
      ++st.responses_by_status[res.status];
    }
    LS_LOG_DEBUG("%s %s -> %d", req.method.c_str(), req.path.c_str(), res.status);
    // Runs after the response is written: only now may a rejected connection's reads be shut down
    // (httplib writes nothing to a socket whose read side reports end of file).
    const bool refused_while_stopping = t_refused_while_stopping;
    t_refused_while_stopping = false;
    if (RejectingThisConnection() || refused_while_stopping) {
      CloseConnectionAfterResponse(req);
    } else if (st.draining.load() || st.stopping.load()) {
      // Any answer during the drain (a stream whose headers went out before it, or a request that came on a
      // connection opened before): its connection is closed now rather than left idle, where a balancer could
      // send it the next request.
      CloseAfterResponseUnlessPipelined(req);
    }
  });
  http.set_payload_max_length(static_cast<size_t>(st.opts.max_body_size));
  if (st.opts.socket_timeout_s > 0) {
    http.set_read_timeout(st.opts.socket_timeout_s, 0);
    http.set_write_timeout(st.opts.socket_timeout_s, 0);
  }
  const size_t max_connections = MaxConnections(st.opts);
  std::atomic<uint64_t>* rejected = &st.connections_rejected;
  http.new_task_queue = [max_connections, rejected] {
    return new ConnectionQueue(max_connections, rejected);
  };
}

// httplib's stop(), unless the drain already shut the listener (httplib closed that descriptor when its
// accept failed; stop() would close the number again, whatever it names by then). Connections end on their
// own then: each closes after its response, and the idle ones are closed here.
void StopListener(ServerState& st) {
  std::lock_guard<std::mutex> lock(st.listener_mu);
  if (st.listener_closed) {
    st.connections.CloseIdle(st.opts.port);
    return;
  }
  st.listener_stopped = true;
  st.http.stop();
}

// --health-port: GET /health, /v1/health (readiness, as on the main port: 503 while loading or draining) and
// /livez (liveness: 200 while the process runs, loading and draining included) on a listener of its own,
// which the drain leaves open; it is stopped last, just before the engine goes.
class HealthPort {
 public:
  explicit HealthPort(ServerState& st) : st_(st) {}
  ~HealthPort() { Stop(); }

  Status Start() {
    if (st_.opts.health_port <= 0) return Status::Ok();
    st_.health_http = std::make_unique<httplib::Server>();
    httplib::Server& h = *st_.health_http;
    h.new_task_queue = [] { return new httplib::ThreadPool(2); };
    h.set_keep_alive_timeout(1);  // probes open a connection each; an idle one must not delay the exit
    h.set_read_timeout(2, 0);
    h.set_write_timeout(2, 0);
    ServerState& st = st_;
    auto health = [&st](const httplib::Request& req, httplib::Response& res) {
      try {
        AnswerHealth(st, req, res);
      } catch (const std::exception& e) {
        SetError(res, 500, std::string("internal error: ") + e.what());
      }
    };
    h.Get("/health", health);
    h.Get("/v1/health", health);
    h.Get("/livez", [&st](const httplib::Request&, httplib::Response& res) {
      const char* state = !st.ready.load()                           ? "loading"
                          : st.draining.load() || st.stopping.load() ? "draining"
                                                                     : "ok";
      res.set_content(Dump(nlohmann::json{{"status", state}}), "application/json; charset=utf-8");
    });
    h.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (res.body.empty())
        SetError(res, res.status, "the health port serves GET /health and /livez only, not " + req.path);
    });
    if (!h.bind_to_port(st_.opts.host, st_.opts.health_port)) {
      st_.health_http.reset();
      return IoError("--health-port: cannot listen on " + st_.opts.host + ":" +
                     std::to_string(st_.opts.health_port) + " (address in use, or not a local address?)");
    }
    thread_ = std::thread([this] {
      st_.health_http->listen_after_bind();
      done_.store(true);
    });
    return Status::Ok();
  }

  void Stop() {
    if (!thread_.joinable()) return;
    // stop() only acts once the listener runs; repeat until its thread has returned.
    while (!done_.load()) {
      st_.health_http->stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    thread_.join();
  }

 private:
  ServerState& st_;
  std::thread thread_;
  std::atomic<bool> done_{false};
};

}  // namespace

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string NewId(const std::string& prefix) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kChars[rng() % (sizeof(kChars) - 1)];
  return id;
}

HttpServer::HttpServer(ServerOptions options) : state_(std::make_unique<State>()) {
  state_->opts = std::move(options);
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  state_->stopping.store(true);
  StopListener(*state_);
}

void HttpServer::Drain() {
  ServerState& st = *state_;
  if (!st.ready.load()) return Stop();
  if (st.draining.exchange(true)) return;
  // The listener closes at once: a new connection is refused, which every balancer retries on another
  // replica. Connections already open stay, each closed after its next answer; Run closes the idle ones at
  // the drain's end.
  bool closed = false;
  {
    std::lock_guard<std::mutex> lock(st.listener_mu);
    if (!st.listener_stopped && !st.listener_closed && st.listen_fd >= 0) {
      closed = st.listener_closed = StopListening(st.listen_fd);
    }
  }
  LS_LOG_INFO("draining: %s port %d, %d connection(s) open%s",
              closed ? "stopped listening on" : "could not close the listener of", st.opts.port,
              st.connections.CountOpen(st.opts.port),
              st.opts.health_port > 0
                  ? (", /health stays on port " + std::to_string(st.opts.health_port)).c_str()
                  : "");
}

nlohmann::json ShutdownErrorBody(const std::string& message) {
  nlohmann::json body = ErrorBody(503, message);
  body["error"]["type"] = "server_shutdown";
  return body;
}

void SetShutdownError(httplib::Response& res, const std::string& message) {
  res.status = 503;
  res.set_header("Retry-After", "1");
  res.set_content(Dump(ShutdownErrorBody(message)), "application/json; charset=utf-8");
}

Status HttpServer::Run() {
  ServerState& st = *state_;
  std::signal(SIGPIPE, SIG_IGN);  // a client that vanishes must not kill the server on write
  InstallHooks(st);
  RegisterInfoRoutes(st);
  RegisterModelRoutes(st);
  RegisterSlotRoutes(st);
  RegisterMemoryRoutes(st);
  RegisterWebUiRoutes(st);
  RegisterCorsProxyRoutes(st);
  RegisterToolRoutes(st);
  RegisterStreamRoutes(st);
  RegisterCompletionRoutes(st);
  RegisterEmbeddingRoutes(st);
  RegisterRerankRoutes(st);
  RegisterTeiRoutes(st);
  RegisterAnthropicRoutes(st);
  RegisterResponsesRoutes(st);
  RegisterInfillRoute(st);
  if (Status vertex = RegisterVertexRoutes(st); !vertex.ok()) return vertex;  // AIP_MODE=PREDICTION only

  // cpp-httplib listens with a backlog of 5, so a burst of connections gets resets; the socket is kept here
  // and listen() called again with --backlog once it is bound (Linux applies a new backlog that way).
  int listen_fd = -1;
  st.http.set_socket_options([&listen_fd](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = sock;
  });
  if (!st.http.bind_to_port(st.opts.host, st.opts.port)) {
    return IoError("cannot listen on " + st.opts.host + ":" + std::to_string(st.opts.port) +
                   " (address in use, or not a local address?)");
  }
  if (listen_fd >= 0 && ::listen(listen_fd, st.opts.backlog) != 0) {
    LS_LOG_WARN("--backlog %d: listen() failed (%s); keeping cpp-httplib's backlog", st.opts.backlog,
                std::strerror(errno));
  }
  {
    std::lock_guard<std::mutex> lock(st.listener_mu);
    st.listen_fd = listen_fd;  // for Drain(), which shuts it
  }
  std::atomic<bool> listener_done{false};
  std::thread listener([&] {
    st.http.listen_after_bind();
    listener_done.store(true);
  });
  LS_LOG_INFO("listening on http://%s:%d (loading %s ...)", st.opts.host.c_str(), st.opts.port,
              st.opts.router_mode()               ? "the model list"
              : st.opts.engine.model_path.empty() ? "the demo model"
                                                  : st.opts.engine.model_path.c_str());
  auto shutdown = [&] {
    st.stopping.store(true);
    // stop() only acts once the listener runs; repeat until the listener thread has returned (after a drain,
    // once the last connection closed).
    while (!listener_done.load()) {
      StopListener(st);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    listener.join();
  };
  HealthPort health(st);
  if (Status s = health.Start(); !s.ok()) {
    shutdown();
    return s;
  }
  if (st.opts.health_port > 0) {
    LS_LOG_INFO("health on http://%s:%d/health and /livez (--health-port)", st.opts.host.c_str(),
                st.opts.health_port);
  }

  if (st.opts.before_load) {
    if (Status s = st.opts.before_load(&st.opts); !s.ok()) {
      shutdown();
      return s;
    }
  }
  Result<ReasoningFormat> format = ParseReasoningFormat(st.opts.reasoning_format);
  Status loaded = format.ok() ? (st.opts.router_mode() ? CreateRouter(st) : LoadSingleModel(st))
                              : InvalidArgument("--reasoning-format: " + format.status().message());
  if (!loaded.ok()) {
    shutdown();
    st.memory_monitor->Stop();
    return loaded;
  }
  st.reasoning_format = *format;
  // The keys themselves are never logged, only how many there are.
  if (!st.opts.api_keys.empty()) {
    LS_LOG_INFO("API key required (%zu key(s)%s)", st.opts.api_keys.size(),
                st.opts.metrics_no_auth ? ", /metrics public" : "");
  }
  if (!st.opts.cors_origins.empty()) {
    std::string list;
    for (const std::string& o : st.opts.cors_origins) list += (list.empty() ? "" : ", ") + o;
    LS_LOG_INFO("CORS: browser pages from %s may call this server (--cors-origins)", list.c_str());
    const bool any = std::find(st.opts.cors_origins.begin(), st.opts.cors_origins.end(), "*") !=
                     st.opts.cors_origins.end();
    if (any && st.opts.api_keys.empty()) {
      LS_LOG_WARN("CORS allows every origin and no API key is set: any web page a visitor of this machine opens "
                  "can use this server (set --api-key, or --cors-origins localhost)");
    }
  }
  char timeout[32] = "none";
  if (st.opts.request_timeout_s > 0) {
    std::snprintf(timeout, sizeof timeout, "%g s", st.opts.request_timeout_s);
  }
  LS_LOG_INFO("limits: %zu connection(s) at once, request timeout %s, socket timeout %d s",
              MaxConnections(st.opts), timeout, st.opts.socket_timeout_s > 0 ? st.opts.socket_timeout_s : 5);
  st.ready.store(true);

  while (!st.stopping.load() && !listener_done.load() && !st.draining.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (st.draining.load() && !st.stopping.load()) {
    // Graceful: the listener is closed; wait for the running requests (and any that still come on a connection
    // opened before), at most the timeout.
    const int in_flight = st.active_requests.load();
    LS_LOG_INFO("draining: %d request(s) in flight, up to %g s (--drain-timeout)", in_flight,
                st.opts.drain_timeout_s);
    const auto t0 = std::chrono::steady_clock::now();
    const auto limit = std::chrono::duration<double>(st.opts.drain_timeout_s);
    // Then, while kept-alive connections stay open, linger a moment before closing them: a balancer that
    // chose this replica just before the listener closed may be sending on one of them, and the connection
    // it opens next is refused, which makes it stop choosing this replica. Whatever comes meanwhile is served.
    constexpr std::chrono::milliseconds kLinger(500);
    std::optional<std::chrono::steady_clock::time_point> linger_from;
    auto finished = t0;  // when a request was last seen running
    while (!st.stopping.load() && std::chrono::steady_clock::now() - t0 < limit) {
      const auto now = std::chrono::steady_clock::now();
      if (st.active_requests.load() > 0) {
        finished = now;
      } else {
        if (!linger_from) linger_from = now;
        if (now - *linger_from >= kLinger || st.connections.CountOpen(st.opts.port) == 0) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const int left = st.active_requests.load();
    if (left > 0) {
      LS_LOG_WARN("drain: %d request(s) still running after %g s; cancelling them", left,
                  st.opts.drain_timeout_s);
    } else {
      const int idle = st.connections.CloseIdle(st.opts.port);
      LS_LOG_INFO("drain: every request finished in %.2f s; %d idle connection(s) closed after %.2f s",
                  std::chrono::duration<double>(finished - t0).count(), idle,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    st.stopping.store(true);
  }
  const bool unexpected = !st.stopping.load();
  shutdown();     // joins the HTTP workers (they cancel their requests on `stopping`) before the engine goes
  health.Stop();  // its /health?ready=1 reads the engine
  st.memory_monitor->Stop();  // its sampler reads the engines
  st.model.reset();
  st.router.reset();
  st.engine.reset();
  if (unexpected) return IoError("the HTTP listener stopped unexpectedly");
  LS_LOG_INFO("server stopped");
  return Status::Ok();
}

}  // namespace lazyslot::server
