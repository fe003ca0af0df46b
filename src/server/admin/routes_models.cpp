// The model list and, in router mode, llama-server's router routes: GET /v1/models and /models (every listed
// model with its status: unloaded, loading, loaded, sleeping; ?reload=1 rescans the sources first),
// POST /models/load and POST /models/unload with {"model": id}. docs/models.md describes them.
#include <filesystem>

#include "server/generation/openai_params.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

void SendJson(httplib::Response& res, const nlohmann::json& j) {
  res.set_content(Dump(j), "application/json; charset=utf-8");
}

nlohmann::json ModelMeta(const Engine& engine) {
  const HParams& hp = engine.model().hparams();
  return {{"n_vocab", hp.n_vocab},
          {"n_ctx_train", hp.n_ctx_train},
          {"n_embd", hp.n_embd},
          {"n_layer", hp.n_layer},
          {"arch", hp.arch}};
}

// The settings a model runs with, as the serve flags that would give them (llama-server lists its child's
// command line here).
nlohmann::json ModelArgs(const ModelInfo& m) {
  const EngineConfig& c = m.config;
  nlohmann::json args = {
      "-m", m.path, "--ctx-size", std::to_string(c.n_ctx), "--parallel", std::to_string(c.n_parallel)};
  if (c.pooling == PoolingType::kRank) {
    args.push_back("--rerank");
  } else if (c.embeddings) {
    args.push_back("--embeddings");
  }
  return args;
}

nlohmann::json RouterEntry(const ModelInfo& m, int64_t created) {
  nlohmann::json status = {{"value", ModelStatusName(m.status)}, {"args", ModelArgs(m)}};
  if (m.failed) {
    status["failed"] = true;
    status["error"] = m.last_error.message();
  }
  nlohmann::json memory = {{"weights_mapped_bytes", m.weights_mapped_bytes},
                           {"weights_resident_bytes", m.weights_resident_bytes},
                           {"kv_reserved_bytes", m.kv_reserved_bytes},
                           {"kv_committed_bytes", m.kv_committed_bytes},
                           {"scratch_bytes", m.scratch_bytes},
                           {"budget_charged_bytes", m.budget_charged_bytes},
                           {"budget_charge",
                            {{"weights", m.budget_charge.weights},
                             {"kv", m.budget_charge.kv},
                             {"scratch", m.budget_charge.scratch},
                             {"overhead", m.budget_charge.overhead}}}};
  return {{"id", m.id},
          {"aliases", m.aliases},
          {"tags", nlohmann::json::array()},
          {"object", "model"},
          {"owned_by", "lazyslot"},
          {"created", m.loaded_since_ms > 0 ? m.loaded_since_ms / 1000 : created},
          {"status", std::move(status)},
          {"source", ModelSourceName(m.source)},
          {"path", m.path},
          {"load_on_startup", m.load_on_startup},
          {"requests_active", m.leases},
          {"memory", std::move(memory)}};
}

void ListModels(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(st.started.time_since_epoch()).count();
  if (!st.router) {
    return SendJson(res, {{"object", "list"},
                          {"data", nlohmann::json::array({{{"id", st.model->model_id},
                                                           {"object", "model"},
                                                           {"created", created},
                                                           {"owned_by", "lazyslot"},
                                                           {"meta", ModelMeta(*st.engine)}}})}});
  }
  nlohmann::json reloaded;
  if (!req.get_param_value("reload").empty() && req.get_param_value("reload") != "0") {
    Result<ReloadResult> r = st.router->Reload();
    if (!r.ok()) return SetStatusError(res, r.status());
    reloaded = {
        {"added", r->added}, {"removed", r->removed}, {"changed", r->changed}, {"unloaded", r->unloaded}};
  }
  nlohmann::json data = nlohmann::json::array();
  for (const ModelInfo& m : st.router->List()) data.push_back(RouterEntry(m, created));
  nlohmann::json out = {{"data", std::move(data)}, {"object", "list"}};
  const BudgetInfo budget = st.router->budget();
  if (budget.limit > 0) {
    out["memory_budget"] = {{"limit_bytes", budget.limit},
                            {"used_bytes", budget.used},
                            {"peak_bytes", budget.peak},
                            {"waiting", budget.waiting}};
  }
  if (!reloaded.is_null()) out["reload"] = std::move(reloaded);
  SendJson(res, out);
}

// POST /models/load and /models/unload: {"model": id or alias}. Load returns once the model is loaded
// (llama-server answers at once and loads in the background; here a failed load is the answer's error).
void LoadOrUnload(ServerState& st, bool load, const httplib::Request& req, httplib::Response& res) {
  if (!st.router) {
    return SetError(
        res, 501,
        "this server serves one model (-m); start it with --models-dir, --models-preset or several -m "
        "to load and unload models");
  }
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  if (Status known = CheckFieldNames(*body, {"model"}); !known.ok()) return SetStatusError(res, known);
  Result<std::string> name = GetString(*body, "model", "");
  if (!name.ok()) return SetStatusError(res, name.status());
  if (name->empty()) return SetError(res, 400, "model: is required", "model");
  Status s = load ? st.router->Load(*name) : st.router->Unload(*name);
  if (!s.ok()) return SetStatusError(res, s);
  SendJson(res, {{"success", true}});
}

}  // namespace

void RegisterModelRoutes(ServerState& st) {
  auto guard = [&st](RouteHandler fn) { return GuardRoute(st, std::move(fn)); };
  st.http.Get("/v1/models", guard(ListModels));
  st.http.Get("/models", guard(ListModels));
  st.http.Post("/models/load", guard([](ServerState& s, const httplib::Request& req, httplib::Response& res) {
                 LoadOrUnload(s, true, req, res);
               }));
  st.http.Post("/models/unload", guard([](ServerState& s, const httplib::Request& req,
                                          httplib::Response& res) { LoadOrUnload(s, false, req, res); }));
}

}  // namespace lazyslot::server
