// State shared by the route handlers of one HttpServer (internal to src/server): options, the engine once
// loaded, the chat template, HTTP counters for /metrics, and the registration functions of each route file.
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
#include "server/http_server.h"
#include "server/httplib_include.h"

namespace lazyslot::server {

struct HttpServer::State {
  ServerOptions opts;
  httplib::Server http;
  std::atomic<bool> ready{false};     // engine and template loaded
  std::atomic<bool> stopping{false};  // Stop() called: handlers cancel their requests and return
  std::atomic<bool> draining{false};  // Drain() called: new requests are refused, running ones finish
  std::atomic<int> active_requests{0};  // generation and embedding requests being answered (ActiveRequest)
  std::unique_ptr<Engine> engine;     // set once before `ready`; read-only afterwards
  std::optional<ChatTemplate> chat_template;
  ToolCallFormat tool_format = ToolCallFormat::kGeneric;  // how the template's model writes tool calls
  ReasoningSyntax reasoning_syntax = ReasoningSyntax::kNone;  // how it marks reasoning (from the template)
  ReasoningFormat reasoning_format = ReasoningFormat::kAuto;  // --reasoning-format
  std::string model_id;
  std::string bos_text, eos_text;  // passed to chat templates as bos_token / eos_token
  std::chrono::system_clock::time_point started = std::chrono::system_clock::now();

  // HTTP responses by status code, counted by the logger hook after each response.
  mutable std::mutex counters_mu;
  std::map<int, uint64_t> responses_by_status;
  std::atomic<uint64_t> streams_disconnected{0};  // clients that left mid-request
  std::atomic<uint64_t> connections_rejected{0};  // connections over --max-connections (answered 503)
  std::atomic<uint64_t> requests_timed_out{0};    // requests cancelled by --request-timeout

  // DRY sequence breakers resolved to tokens (a scan of the vocabulary), per breaker list, so the scan runs
  // once per list and on an HTTP thread, never on the scheduler's. At most kMaxDryLists lists are kept.
  static constexpr size_t kMaxDryLists = 32;
  std::mutex dry_mu;
  std::map<std::vector<std::string>, std::shared_ptr<const DryBreakers>> dry_breakers;
};
using ServerState = HttpServer::State;

void RegisterCompletionRoutes(ServerState& st);    // /v1/chat/completions, /v1/completions, /completion,
                                                   // /apply-template
void RegisterEmbeddingRoutes(ServerState& st);     // /v1/embeddings, /embeddings, /embedding
void RegisterRerankRoutes(ServerState& st);        // /v1/rerank, /rerank, /reranking, /v1/reranking
void RegisterTeiRoutes(ServerState& st);           // /embed, /embed_all (TEI)
void RegisterMessageRoutes(ServerState& st);       // /v1/messages (Anthropic), /v1/responses
void RegisterInfillRoute(ServerState& st);         // /infill
void RegisterInfoRoutes(ServerState& st);          // /health, /v1/models, /props, /metrics, /tokenize, ...
void RegisterSlotRoutes(ServerState& st);          // GET /slots, POST /slots/{id}?action=save|restore|erase
std::string RenderMetrics(const ServerState& st);  // Prometheus text for GET /metrics

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

// Why a new request would have to wait now (queue not empty, no idle slot, KV budget reserved), or "" when
// it would start at once: the readiness of /health?ready=1 and /slots?fail_on_no_slot=1.
std::string WhyNotReady(const ServerState& st);

// The answer to a request cancelled by the shutdown: 503 with type "server_shutdown".
nlohmann::json ShutdownErrorBody(const std::string& message);
void SetShutdownError(httplib::Response& res, const std::string& message);

// Seconds since the epoch, for OpenAI's `created`.
int64_t UnixNow();
// "chatcmpl-" + 24 random characters.
std::string NewId(const std::string& prefix);

}  // namespace lazyslot::server
