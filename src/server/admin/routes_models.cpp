// The model list and, in router mode, llama-server's router routes: GET /v1/models and /models (every listed
// model with its status: unloaded, loading, loaded, sleeping; ?reload=1 rescans the sources first),
// POST /models/load and POST /models/unload with {"model": id}; POST /models (llama-server: download from the
// hub) and DELETE /models?model= (llama-server: delete a download) are refused with how to add or remove a
// model instead: lazyslot never downloads and never deletes a user's file. docs/models.md describes them.
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
  nlohmann::json args = nlohmann::json::array();
  if (!m.path.empty()) args = {"-m", m.path};  // empty: listed by a download key only
  for (const std::string& a : {std::string("--ctx-size"), std::to_string(c.n_ctx), std::string("--parallel"),
                               std::to_string(c.n_parallel)}) {
    args.push_back(a);
  }
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
          {"tags", m.tags},
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
    // As llama-server: every --alias (the id alone without one) and every --tags.
    const std::vector<std::string>& given = st.opts.model_aliases;
    const nlohmann::json aliases =
        given.empty() ? nlohmann::json::array({st.model->model_id}) : nlohmann::json(given);
    return SendJson(res, {{"object", "list"},
                          {"data", nlohmann::json::array({{{"id", st.model->model_id},
                                                           {"aliases", aliases},
                                                           {"tags", st.opts.model_tags},
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

// The body {"model": id or alias} of POST /models, /models/load and /models/unload; nullopt once `res` holds
// the 400 (not JSON, another field, no model).
std::optional<std::string> ReadModelName(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return std::nullopt;
  if (Status known = CheckFieldNames(*body, {"model"}); !known.ok()) {
    SetStatusError(res, known);
    return std::nullopt;
  }
  Result<std::string> name = GetString(*body, "model", "");
  if (!name.ok()) {
    SetStatusError(res, name.status());
    return std::nullopt;
  }
  if (name->empty()) {
    SetError(res, 400, "model: is required", "model");
    return std::nullopt;
  }
  return *name;
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
  const std::optional<std::string> name = ReadModelName(st, req, res);
  if (!name) return;
  Status s = load ? st.router->Load(*name) : st.router->Unload(*name);
  if (!s.ok()) return SetStatusError(res, s);
  SendJson(res, {{"success", true}});
}

// How a model is added to this router's list, for POST /models' refusal.
std::string HowToAdd(const ServerState& st) {
  const CatalogSources& src = st.router->config().sources;
  std::string how;
  if (!src.models_dir.empty()) how = "put its .gguf file in --models-dir " + src.models_dir;
  if (!src.preset_path.empty()) {
    how += (how.empty() ? "" : ", or ") + std::string("add a [section] with `model = /path/file.gguf` to ") +
           "--models-preset " + src.preset_path;
  }
  if (how.empty()) return "restart with one more -m FILE (--models-dir and --models-preset can be rescanned)";
  return how + ", then GET /models?reload=1";
}

// How a listed model leaves the list, for DELETE /models' refusal.
std::string HowToRemove(const ServerState& st, const ModelInfo& m) {
  const CatalogSources& src = st.router->config().sources;
  switch (m.source) {
    case ModelSource::kModelsDir:
      return "move its file out of --models-dir " + src.models_dir + ", then GET /models?reload=1";
    case ModelSource::kPreset:
      return "remove its section from --models-preset " + src.preset_path + ", then GET /models?reload=1";
    case ModelSource::kArgs:
      break;
  }
  return "restart without its -m";
}

// POST /models {"model": "org/repo:quant"}: llama-server downloads it from the hub. Not here: 501.
void AddModel(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  if (!st.router) {
    return SetError(res, 501,
                    "downloading models is not supported, and this server serves one model (-m); start it "
                    "with --models-dir or --models-preset to serve several");
  }
  const std::optional<std::string> name = ReadModelName(st, req, res);
  if (!name) return;
  if (st.router->Info(*name).ok()) {
    return SetError(res, 400, "model '" + *name + "' already exists (GET /models lists it)", "model");
  }
  SetError(res, 501,
           "model '" + *name +
               "': downloading models is not supported (lazyslot has no model hub client and never uses the "
               "network). To add a model, download the .gguf yourself and " +
               HowToAdd(st));
}

// DELETE /models?model=ID: llama-server deletes a model it downloaded (its cache only; any other source is
// refused). lazyslot downloads nothing, so every model is a user's own file: never deleted, always refused.
void DeleteModel(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  if (!st.router) {
    return SetError(res, 501, "deleting models is not supported, and this server serves one model (-m)");
  }
  const std::string name = req.get_param_value("model");
  if (name.empty()) return SetError(res, 400, "model: is required (DELETE /models?model=ID)", "model");
  Result<ModelInfo> info = st.router->Info(name);
  if (!info.ok()) return SetStatusError(res, info.status());
  const std::string what = info->path.empty() ? std::string("it has no file, only a --models-preset section")
                                              : "its file " + info->path + " is yours and is left alone";
  SetError(res, 501,
           "model '" + info->id + "' cannot be deleted: lazyslot downloads nothing and never deletes model " +
               "files (" + what + "). To stop serving it, POST /models/unload and " + HowToRemove(st, *info));
}

}  // namespace

void RegisterModelRoutes(ServerState& st) {
  auto guard = [&st](RouteHandler fn) { return GuardRoute(st, std::move(fn)); };
  st.http.Get("/v1/models", guard(ListModels));
  st.http.Get("/models", guard(ListModels));
  st.http.Post("/models", guard(AddModel));
  st.http.Delete("/models", guard(DeleteModel));
  st.http.Post("/models/load", guard([](ServerState& s, const httplib::Request& req, httplib::Response& res) {
                 LoadOrUnload(s, true, req, res);
               }));
  st.http.Post("/models/unload", guard([](ServerState& s, const httplib::Request& req,
                                          httplib::Response& res) { LoadOrUnload(s, false, req, res); }));
}

}  // namespace lazyslot::server
