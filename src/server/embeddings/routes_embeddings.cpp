// POST /v1/embeddings: OpenAI's shape; `input` as a string, a list of strings or token-id lists (or
// llama-server's mixed lists of ids and strings); pooled vectors, L2-normalised unless the request says
// otherwise (`normalize`, `embd_normalize`, --embd-normalize), shortened to `dimensions`, as float lists or
// base64 of little-endian f32.
// POST /embedding and /embeddings (as llama-server routes them): its native shape,
// [{"index", "embedding": [[...]]}], one pooled row per input or, under --pooling none, every token's row.
// See docs/embeddings.md.
#include "server/embeddings/embed_batch.h"
#include "server/generation/openai_params.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

// base64 of the floats as little-endian f32 (the host is x86-64, so the in-memory bytes already are).
std::string FloatsBase64(const std::vector<float>& v) {
  static_assert(sizeof(float) == 4);
  return Base64Encode(v.data(), v.size() * sizeof(float));
}

// `input`, else llama-server's `content`; a 400 naming `input` when neither is there.
Result<std::vector<PromptInput>> ReadInputs(const Json& body) {
  auto input = body.find("input");
  if (input == body.end() || input->is_null()) {
    input = body.find("content");
    if (input == body.end() || input->is_null()) return InvalidArgument("input: is required");
    return ParsePromptList(*input, "content");
  }
  return ParsePromptList(*input, "input");
}

// The normalisation a request asks for: `embd_normalize` (llama-server's), or TEI's `normalize` (true: L2,
// false: none), else --embd-normalize.
Result<int> ReadNormalization(const Json& body, int server_default) {
  if (Present(body, "normalize") && Present(body, "embd_normalize")) {
    return InvalidArgument("normalize: give either normalize or embd_normalize, not both");
  }
  if (Present(body, "normalize")) {
    LS_ASSIGN_OR_RETURN(bool normalize, GetBool(body, "normalize", true));
    return normalize ? 2 : -1;
  }
  return ParseEmbdNormalize(body, server_default);
}

void HandleEmbeddings(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  if (Status known = CheckKnownFields(*body, RequestKind::kEmbedding); !known.ok()) {
    return SetStatusError(res, known);
  }
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) return SetStatusError(res, model.status());
  const ModelContext& m = **model;
  if (!CheckEmbeddingsServed(m, res)) return;
  if (m.pooling_none) {
    return SetError(
        res, 400,
        "--pooling none gives one vector per token, which /v1/embeddings cannot return; start the "
        "server with --pooling mean, cls or last (or use POST /embedding or /embed_all)");
  }
  Result<std::vector<PromptInput>> inputs = ReadInputs(*body);
  if (!inputs.ok()) return SetError(res, 400, inputs.status().message(), "input");
  Result<std::string> format = GetString(*body, "encoding_format", "float");
  if (!format.ok()) return SetStatusError(res, format.status());
  if (*format != "float" && *format != "base64") {
    return SetError(res, 400, "encoding_format: must be \"float\" or \"base64\", got \"" + *format + "\"",
                    "encoding_format");
  }
  Result<int64_t> dimensions = ParseDimensions(*body, m);
  if (!dimensions.ok()) return SetError(res, 400, dimensions.status().message(), "dimensions");
  Result<int> norm = ReadNormalization(*body, st.opts.embd_normalize);
  if (!norm.ok()) return SetStatusError(res, norm.status());
  Result<TruncateOptions> truncate = ParseTruncateOptions(*body, st);
  if (!truncate.ok()) return SetStatusError(res, truncate.status());

  PreparedInputs prepared;
  if (!PrepareInputs(st, m, std::move(*inputs), "input", *truncate, res, &prepared)) return;
  const size_t n_inputs = prepared.prompts.size();
  std::vector<EmbedResult> results;
  if (!RunEmbeddings(st, m, req, res, std::move(prepared.prompts), /*unpooled=*/false, "input", &results))
    return;

  nlohmann::json data = nlohmann::json::array();
  int64_t n_tokens = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    std::vector<float>& v = results[i].values;
    if (*dimensions > 0 && static_cast<size_t>(*dimensions) < v.size())
      v.resize(static_cast<size_t>(*dimensions));
    NormalizeEmbedding(&v, *norm);
    n_tokens += results[i].n_prompt;
    nlohmann::json item = {{"object", "embedding"}, {"index", i}};
    if (*format == "base64") {
      item["embedding"] = FloatsBase64(v);
    } else {
      item["embedding"] = std::move(v);
    }
    data.push_back(std::move(item));
  }
  nlohmann::json usage = {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}};
  if (truncate->truncate) usage["truncated"] = prepared.n_truncated;
  ReportTruncation(m, res, "/v1/embeddings", prepared.n_truncated, n_inputs);
  nlohmann::json out = {
      {"object", "list"}, {"data", std::move(data)}, {"model", m.model_id}, {"usage", std::move(usage)}};
  res.set_content(Dump(out), "application/json; charset=utf-8");
}

// llama-server's POST /embedding.
void HandleNativeEmbedding(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  static const std::vector<std::string> kFields = {
      "content", "input", "embd_normalize", "truncate", "truncation_direction", "model"};
  if (Status known = CheckFieldNames(*body, kFields); !known.ok()) return SetStatusError(res, known);
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) return SetStatusError(res, model.status());
  const ModelContext& m = **model;
  if (!CheckEmbeddingsServed(m, res)) return;
  auto content = body->find("content");
  if (Present(*body, "input")) content = body->find("input");
  if (content == body->end() || content->is_null()) {
    return SetError(res, 400, "content: is required", "content");
  }
  Result<std::vector<PromptInput>> inputs = ParsePromptList(*content, content.key());
  if (!inputs.ok()) return SetError(res, 400, inputs.status().message(), content.key());
  Result<int> norm = ParseEmbdNormalize(*body, st.opts.embd_normalize);
  if (!norm.ok()) return SetStatusError(res, norm.status());
  Result<TruncateOptions> truncate = ParseTruncateOptions(*body, st);
  if (!truncate.ok()) return SetStatusError(res, truncate.status());

  const std::string field = content.key();
  PreparedInputs prepared;
  if (!PrepareInputs(st, m, std::move(*inputs), field, *truncate, res, &prepared)) return;
  const size_t n_inputs = prepared.prompts.size();
  const bool unpooled = m.pooling_none;
  std::vector<EmbedResult> results;
  if (!RunEmbeddings(st, m, req, res, std::move(prepared.prompts), unpooled, field, &results)) return;

  const size_t n_embd = static_cast<size_t>(m.engine->model().hparams().n_embd);
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    std::vector<float>& v = results[i].values;
    nlohmann::json rows = nlohmann::json::array();
    if (unpooled) {
      // As llama-server: per-token rows are never normalised.
      for (size_t r = 0; (r + 1) * n_embd <= v.size(); ++r) {
        rows.push_back(std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(r * n_embd),
                                          v.begin() + static_cast<std::ptrdiff_t>((r + 1) * n_embd)));
      }
    } else {
      NormalizeEmbedding(&v, *norm);
      rows.push_back(std::move(v));
    }
    out.push_back({{"index", i}, {"embedding", std::move(rows)}});
  }
  ReportTruncation(m, res, "/embedding", prepared.n_truncated, n_inputs);
  res.set_content(Dump(out), "application/json; charset=utf-8");
}

}  // namespace

void RegisterEmbeddingRoutes(ServerState& st) {
  st.http.Post("/v1/embeddings", GuardRoute(st, HandleEmbeddings, false));
  // As llama-server: /embedding and /embeddings are its native route, /v1/embeddings OpenAI's.
  st.http.Post("/embeddings", GuardRoute(st, HandleNativeEmbedding, false));
  st.http.Post("/embedding", GuardRoute(st, HandleNativeEmbedding, false));
}

}  // namespace lazyslot::server
