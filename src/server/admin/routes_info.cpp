// The small routes: GET /health, /props, /metrics; POST /tokenize, /detokenize (the model list and the
// router's load/unload routes are in routes_models.cpp).
#include <filesystem>

#include "core/build_info.h"
#include "server/generation/native_params.h"
#include "server/generation/openai_params.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"
#include "server/server_state.h"
#include "server/vertex.h"

namespace lazyslot::server {
namespace {

void SendJson(httplib::Response& res, const nlohmann::json& j) {
  res.set_content(Dump(j), "application/json; charset=utf-8");
}

// A piece as a JSON string when it is valid UTF-8, else as its byte values (as llama-server does).
nlohmann::json PieceJson(const std::string& piece) {
  size_t i = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(piece.data());
  const size_t n = piece.size();
  bool valid = true;
  while (i < n && valid) {
    const unsigned c = p[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > n) {
      valid = false;
      break;
    }
    for (size_t k = 1; k < len; ++k) valid = valid && (p[i + k] >> 6) == 0x2;
    i += len;
  }
  if (valid) return piece;
  nlohmann::json bytes = nlohmann::json::array();
  for (size_t k = 0; k < n; ++k) bytes.push_back(static_cast<int>(p[k]));
  return bytes;
}

void Tokenize(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  if (Status known = CheckKnownFields(*body, RequestKind::kTokenize); !known.ok()) {
    return SetStatusError(res, known);
  }
  Result<std::string> content = GetString(*body, "content", "");
  if (!content.ok()) return SetStatusError(res, content.status());
  Result<bool> add_special = GetBool(*body, "add_special", false);
  if (!add_special.ok()) return SetStatusError(res, add_special.status());
  Result<bool> parse_special = GetBool(*body, "parse_special", true);
  if (!parse_special.ok()) return SetStatusError(res, parse_special.status());
  Result<bool> with_pieces = GetBool(*body, "with_pieces", false);
  if (!with_pieces.ok()) return SetStatusError(res, with_pieces.status());
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) return SetStatusError(res, model.status());
  const Tokenizer& tok = model->engine().tokenizer();
  Result<std::vector<TokenId>> ids = tok.Tokenize(*content, *add_special, *parse_special);
  if (!ids.ok())
    return SetError(res, 400, "content: tokenizing failed: " + ids.status().message(), "content");
  nlohmann::json tokens = nlohmann::json::array();
  for (TokenId id : *ids) {
    if (*with_pieces) {
      tokens.push_back({{"id", id}, {"piece", PieceJson(tok.TokenToPiece(id, true))}});
    } else {
      tokens.push_back(id);
    }
  }
  SendJson(res, {{"tokens", std::move(tokens)}});
}

void Detokenize(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  if (Status known = CheckKnownFields(*body, RequestKind::kDetokenize); !known.ok()) {
    return SetStatusError(res, known);
  }
  std::vector<TokenId> ids;
  auto it = body->find("tokens");
  if (it != body->end() && !it->is_null()) {
    Result<std::vector<TokenId>> parsed = ParseTokenList(*it, "tokens");
    if (!parsed.ok()) return SetStatusError(res, parsed.status());
    ids = std::move(*parsed);
  }
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) return SetStatusError(res, model.status());
  const Tokenizer& tok = model->engine().tokenizer();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= tok.n_vocab()) {
      return SetError(res, 400,
                      "tokens[" + std::to_string(i) + "]: token id " + std::to_string(ids[i]) +
                          " is outside the vocabulary [0, " + std::to_string(tok.n_vocab()) + ")",
                      "tokens");
    }
  }
  SendJson(res, {{"content", tok.Detokenize(ids, /*remove_special=*/false, /*render_special=*/true)}});
}

// GET /props (router mode: of ?model=, loaded for it as llama-server's router does unless ?autoload=false).
void Props(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  if (st.router && req.get_param_value("model").empty()) {
    // The router itself, as llama-server's router answers (clients probe /props at start).
    const RouterConfig& rc = st.router->config();
    const BudgetInfo budget = st.router->budget();
    return SendJson(res,
                    {{"role", "router"},
                     {"max_instances", rc.models_max},
                     {"models_autoload", rc.autoload},
                     {"model_alias", "lazyslot"},
                     {"model_path", "none"},
                     {"default_generation_settings", {{"params", nlohmann::json::object()}, {"n_ctx", 0}}},
                     {"memory_budget", budget.limit},
                     {"sleep_idle_seconds", rc.sleep_idle_s},
                     {"is_draining", st.draining.load()},
                     {"build_info", BuildInfo()}});
  }
  Result<ModelRef> model = ResolveModel(st, req, nullptr);
  if (!model.ok()) return SetStatusError(res, model.status());
  const ModelContext& m = **model;
  const EngineConfig& cfg = m.engine->config();
  // As llama-server: the slot defaults, with the sampling defaults (--temp, --seed, ...) under "params".
  GenerationParams defaults;
  defaults.sampling = st.opts.sampling;
  defaults.n_predict = st.opts.n_predict;
  defaults.repeat_last_n = st.opts.sampling.repeat_last_n;
  nlohmann::json settings = {{"n_ctx", m.engine->n_ctx_slot()},
                             {"n_predict", st.opts.n_predict},
                             {"model", m.model_id},
                             {"is_processing", false},
                             {"params", GenerationSettingsJson(defaults, m)}};
  SendJson(res, {{"default_generation_settings", settings},
                 {"total_slots", cfg.n_parallel},
                 {"n_parallel", cfg.n_parallel},
                 {"n_ctx", cfg.n_ctx},
                 {"n_ctx_slot", m.engine->n_ctx_slot()},
                 {"n_batch", cfg.n_batch},
                 {"max_queue", cfg.max_queue},
                 {"kv_budget", cfg.kv_budget},
                 {"kv_eager", cfg.kv_eager},
                 {"kv_share", cfg.kv_share},
                 {"kv_unified", cfg.kv_unified},
                 {"endpoint_slots", st.opts.slots_endpoint},
                 {"ui", st.opts.webui},
                 {"cors_proxy_enabled", st.opts.ui_mcp_proxy},
                 {"tools", st.opts.tools},
                 {"kv_park", cfg.kv_park_dir},
                 {"kv_park_after", cfg.kv_park_after_s},
                 {"kv_park_max", cfg.kv_park_max},
                 {"idle_timeout", cfg.idle_timeout_s},
                 {"idle_release_weights", cfg.idle_release_weights_s},
                 {"slot_save_path", cfg.slot_save_path},
                 {"flash_attn", cfg.flash_attn},
                 {"model_path", cfg.model_path},
                 {"model_alias", m.model_id},
                 {"embeddings", cfg.embeddings && cfg.pooling != PoolingType::kRank},
                 {"reranking", cfg.pooling == PoolingType::kRank},
                 {"pooling", PoolingName(m.engine->pooling())},
                 {"embd_normalize", st.opts.embd_normalize},
                 {"auto_truncate", st.opts.auto_truncate},
                 {"max_client_batch_size", st.opts.max_client_batch_size},
                 {"max_batch_tokens", st.opts.max_batch_tokens},
                 {"chat_template_name", m.chat_template.name()},
                 {"chat_template", m.chat_template.source()},
                 {"bos_token", m.bos_text},
                 {"eos_token", m.eos_text},
                 {"modalities", {{"vision", false}, {"audio", false}}},
                 {"is_sleeping", m.engine->Stats().weights_released},
                 {"is_draining", st.draining.load()},
                 {"reasoning_format", ReasoningFormatName(st.reasoning_format)},
                 {"reasoning_syntax", ReasoningSyntaxName(m.reasoning_syntax)},
                 {"tool_call_format", ToolCallFormatName(m.tool_format)},
                 {"build_info", BuildInfo()}});
}

}  // namespace

std::string WhyNotReady(const Engine& engine) {
  const EngineStats stats = engine.Stats();
  if (stats.queue_length > 0) return std::to_string(stats.queue_length) + " request(s) waiting for a slot";
  bool idle = false;
  for (const SlotInfo& s : stats.slots) idle = idle || !s.busy;
  if (!idle) return "every slot is busy";
  if (stats.kv_budget_bytes > 0) {
    // Idle slots' kept KV can be evicted; only the busy slots' reservations are spoken for.
    uint64_t reserved = 0;
    for (const SlotInfo& s : stats.slots) reserved += s.busy ? s.budget_bytes : 0;
    if (reserved >= stats.kv_budget_bytes) return "the KV budget is reserved by running requests";
  }
  return "";
}

void AnswerHealth(ServerState& s, const httplib::Request& req, httplib::Response& res) {
  if (!s.ready.load()) return SetError(res, 503, "Loading model");
  if (s.draining.load()) {
    res.status = 503;
    res.set_header("Retry-After", "1");
    return SendJson(res, {{"status", "draining"}});
  }
  // Router mode: readiness of ?model= if named (without loading it), else the router's own.
  if (req.get_param_value("ready") == "1" && (!s.router || req.has_param("model"))) {
    Result<ModelRef> model = PeekModel(s, req.get_param_value("model"));
    if (!model.ok()) {
      res.set_header("Retry-After", "1");
      return SetStatusError(res, model.status());
    }
    const std::string busy = WhyNotReady(model->engine());
    if (!busy.empty()) {
      res.status = 503;
      res.set_header("Retry-After", "1");
      return SendJson(res, {{"status", "busy"}, {"reason", busy}});
    }
  }
  SendJson(res, {{"status", "ok"}});
}

void RegisterInfoRoutes(ServerState& st) {
  // Handlers other than /health run only once the engine is ready (the pre-routing hook answers 503 before).
  auto guard = [&st](RouteHandler fn) { return GuardRoute(st, std::move(fn)); };
  // Liveness; with ?ready=1 also readiness: 503 when a new request would have to wait.
  st.http.Get("/health", guard(AnswerHealth));
  st.http.Get("/v1/health", guard(AnswerHealth));
  if (const std::string vertex = VertexHealthRoute(); !vertex.empty()) st.http.Get(vertex, guard(AnswerHealth));
  st.http.Get("/props", guard(Props));
  st.http.Get("/metrics", guard([](ServerState& s, const httplib::Request& req, httplib::Response& res) {
                // Router mode: ?model= adds that model's engine series; it is not loaded for a scrape.
                std::optional<ModelRef> model;
                if (!s.router || req.has_param("model")) {
                  Result<ModelRef> r = PeekModel(s, req.get_param_value("model"));
                  if (!r.ok()) return SetStatusError(res, r.status());
                  model = std::move(*r);
                }
                res.set_content(RenderMetrics(s, model ? &model->engine() : nullptr),
                                "text/plain; version=0.0.4; charset=utf-8");
              }));
  st.http.Post("/tokenize", guard(Tokenize));
  st.http.Post("/detokenize", guard(Detokenize));
}

}  // namespace lazyslot::server
