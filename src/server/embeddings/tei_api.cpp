// Hugging Face text-embeddings-inference (TEI) routes: POST /embed (pooled vectors, `normalize`,
// `dimensions`, `truncate`, `truncation_direction`) -> [[floats], ...], and POST /embed_all (every token's
// hidden state, not normalised) -> [[[floats], ...], ...]; errors in TEI's shape {"error", "error_type"}
// with its status codes. TEI's /rerank shares the rerank route (routes_rerank.cpp). See docs/embeddings.md.
#include "server/embeddings/embed_batch.h"
#include "server/generation/openai_params.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

// The fields /embed and /embed_all share, read into PreparedInputs; false: `res` holds the error.
// The model is resolved into `model`.
bool ReadTeiInputs(ServerState& st, const httplib::Request& req, httplib::Response& res, bool pooled,
                   Json* body_out, ModelRef* model, PreparedInputs* prepared) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return false;
  static const std::vector<std::string> kEmbed = {
      "inputs", "normalize", "truncate", "truncation_direction", "dimensions", "prompt_name", "model"};
  static const std::vector<std::string> kEmbedAll = {"inputs", "truncate", "truncation_direction",
                                                     "prompt_name", "model"};
  if (Status s = CheckFieldNames(*body, pooled ? kEmbed : kEmbedAll); !s.ok()) {
    SetStatusError(res, s);
    return false;
  }
  Result<ModelRef> resolved = ResolveModel(st, req, &*body);
  if (!resolved.ok()) {
    SetStatusError(res, resolved.status());
    return false;
  }
  *model = std::move(*resolved);
  const ModelContext& m = **model;
  if (!CheckEmbeddingsServed(m, res)) return false;
  if (pooled && m.pooling_none) {
    SetError(
        res, 400,
        "--pooling none gives one vector per token, which /embed cannot return; use /embed_all, or start "
        "the server with --pooling mean, cls or last");
    return false;
  }
  if (Present(*body, "prompt_name")) {
    SetError(
        res, 400,
        "prompt_name: not supported: a GGUF carries no sentence-transformers prompts; prepend the prompt "
        "text to the inputs instead",
        "prompt_name");
    return false;
  }
  if (!Present(*body, "inputs")) {
    SetError(res, 400, "inputs: is required", "inputs");
    return false;
  }
  const Json& inputs = body->at("inputs");
  if (inputs.is_array() && inputs.empty()) {
    SetTeiError(res, 400, "`inputs` cannot be empty", "Empty");
    return false;
  }
  Result<std::vector<PromptInput>> parsed = ParsePromptList(inputs, "inputs");
  if (!parsed.ok()) {
    SetError(res, 400, parsed.status().message(), "inputs");
    return false;
  }
  Result<TruncateOptions> truncate = ParseTruncateOptions(*body, st);
  if (!truncate.ok()) {
    SetStatusError(res, truncate.status());
    return false;
  }
  if (!PrepareInputs(st, m, std::move(*parsed), "inputs", *truncate, res, prepared)) return false;
  *body_out = std::move(*body);
  return true;
}

void SetTeiJson(httplib::Response& res, const nlohmann::json& out, int64_t n_tokens) {
  res.set_header("x-compute-tokens", std::to_string(n_tokens));  // as TEI
  res.set_content(Dump(out), "application/json; charset=utf-8");
}

void HandleEmbed(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  Json body;
  ModelRef model;
  PreparedInputs prepared;
  if (!ReadTeiInputs(st, req, res, /*pooled=*/true, &body, &model, &prepared)) return;
  const ModelContext& m = *model;
  Result<bool> normalize = GetBool(body, "normalize", true);
  if (!normalize.ok()) return SetStatusError(res, normalize.status());
  Result<int64_t> dimensions = ParseDimensions(body, m);
  if (!dimensions.ok()) return SetError(res, 400, dimensions.status().message(), "dimensions");
  const size_t n_inputs = prepared.prompts.size();
  std::vector<EmbedResult> results;
  if (!RunEmbeddings(st, m, req, res, std::move(prepared.prompts), /*unpooled=*/false, "inputs", &results))
    return;
  nlohmann::json out = nlohmann::json::array();
  for (EmbedResult& r : results) {
    // As TEI: Matryoshka truncation first, then the normalisation of what is left.
    if (*dimensions > 0 && static_cast<size_t>(*dimensions) < r.values.size()) {
      r.values.resize(static_cast<size_t>(*dimensions));
    }
    if (*normalize) NormalizeEmbedding(&r.values, 2);
    out.push_back(std::move(r.values));
  }
  ReportTruncation(m, res, "/embed", prepared.n_truncated, n_inputs);
  SetTeiJson(res, out, prepared.n_tokens);
}

void HandleEmbedAll(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  Json body;
  ModelRef model;
  PreparedInputs prepared;
  if (!ReadTeiInputs(st, req, res, /*pooled=*/false, &body, &model, &prepared)) return;
  const ModelContext& m = *model;
  const size_t n_inputs = prepared.prompts.size();
  std::vector<EmbedResult> results;
  if (!RunEmbeddings(st, m, req, res, std::move(prepared.prompts), /*unpooled=*/true, "inputs", &results))
    return;
  const size_t n_embd = static_cast<size_t>(m.engine->model().hparams().n_embd);
  nlohmann::json out = nlohmann::json::array();
  for (const EmbedResult& r : results) {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t t = 0; (t + 1) * n_embd <= r.values.size(); ++t) {
      rows.push_back(std::vector<float>(r.values.begin() + static_cast<std::ptrdiff_t>(t * n_embd),
                                        r.values.begin() + static_cast<std::ptrdiff_t>((t + 1) * n_embd)));
    }
    out.push_back(std::move(rows));
  }
  ReportTruncation(m, res, "/embed_all", prepared.n_truncated, n_inputs);
  SetTeiJson(res, out, prepared.n_tokens);
}

}  // namespace

void RegisterTeiRoutes(ServerState& st) {
  st.http.Post("/embed", GuardRoute(st, HandleEmbed, true));
  st.http.Post("/embed_all", GuardRoute(st, HandleEmbedAll, true));
}

}  // namespace lazyslot::server
