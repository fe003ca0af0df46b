// POST /v1/embeddings (and /embeddings): `input` as a string, a list of strings or token-id lists; pooled,
// L2-normalised vectors as float lists or base64 of little-endian f32 (`encoding_format`).
#include <chrono>
#include <cstring>
#include <deque>

#include "server/connection.h"
#include "server/errors.h"
#include "server/openai_params.h"
#include "server/request_body.h"
#include "server/server_limits.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

// base64 of the floats as little-endian f32 (the host is x86-64, so the in-memory bytes already are).
std::string FloatsBase64(const std::vector<float>& v) {
  static_assert(sizeof(float) == 4);
  return Base64Encode(v.data(), v.size() * sizeof(float));
}

void HandleEmbeddings(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  if (!st.opts.engine.embeddings) {
    return SetError(res, 501, "this server does not serve embeddings; start it with --embeddings");
  }
  if (st.opts.pooling_none) {
    return SetError(
        res, 400,
        "--pooling none gives one vector per token, which /v1/embeddings cannot return; start the "
        "server with --pooling mean, cls or last");
  }
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  if (Status known = CheckKnownFields(*body, RequestKind::kEmbedding); !known.ok()) {
    return SetStatusError(res, known);
  }
  auto input = body->find("input");
  if (input == body->end() || input->is_null()) {
    // llama-server also accepts `content` here.
    input = body->find("content");
    if (input == body->end() || input->is_null()) return SetError(res, 400, "input: is required", "input");
  }
  Result<std::vector<PromptInput>> inputs = ParsePromptList(*input, "input");
  if (!inputs.ok()) return SetStatusError(res, inputs.status());
  Result<std::string> format = GetString(*body, "encoding_format", "float");
  if (!format.ok()) return SetStatusError(res, format.status());
  if (*format != "float" && *format != "base64") {
    return SetError(res, 400, "encoding_format: must be \"float\" or \"base64\", got \"" + *format + "\"",
                    "encoding_format");
  }

  std::vector<std::vector<TokenId>> prompts;
  for (size_t i = 0; i < inputs->size(); ++i) {
    PromptInput& in = (*inputs)[i];
    if (in.is_tokens) {
      prompts.push_back(std::move(in.tokens));
      continue;
    }
    Result<std::vector<TokenId>> ids = st.engine->tokenizer().Tokenize(in.text, true, true);
    if (!ids.ok()) {
      return SetError(res, 400,
                      "input[" + std::to_string(i) + "]: tokenizing failed: " + ids.status().message());
    }
    prompts.push_back(std::move(*ids));
  }

  const int32_t n_ctx = st.engine->n_ctx_slot();
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (static_cast<int64_t>(prompts[i].size()) > n_ctx) {
      return SetContextSizeError(res, static_cast<int64_t>(prompts[i].size()), n_ctx,
                                 std::string(prompts.size() > 1 ? "input[" + std::to_string(i) + "]: " : "") +
                                     "the request exceeds the available context size: the prompt has " +
                                     std::to_string(prompts[i].size()) +
                                     " tokens, but a slot's context holds " + std::to_string(n_ctx));
    }
  }
  // Submit at most n_parallel inputs at a time, so a big batch never fills the queue by itself.
  const size_t window = static_cast<size_t>(std::max(1, st.opts.engine.n_parallel));
  const int fd = FindConnectionSocket(req);
  const Deadline deadline(st.opts.request_timeout_s);  // from here: tokenizing above is bounded by the body
  const ActiveRequest active(&st);                     // the drain waits for it
  std::deque<std::pair<size_t, std::shared_ptr<RequestStream>>> in_flight;
  std::vector<std::vector<float>> vectors(prompts.size());
  int64_t n_tokens = 0;
  size_t next = 0;
  auto cancel_all = [&] {
    for (auto& f : in_flight) f.second->Cancel();
  };
  while (next < prompts.size() || !in_flight.empty()) {
    while (next < prompts.size() && in_flight.size() < window) {
      GenerationRequest gr;
      gr.prompt = std::move(prompts[next]);
      gr.embedding = true;
      Result<std::shared_ptr<RequestStream>> stream = st.engine->Submit(std::move(gr));
      if (!stream.ok()) {
        cancel_all();
        Status s = stream.status();
        if (prompts.size() > 1) s = Status(s.code(), "input[" + std::to_string(next) + "]: " + s.message());
        return SetStatusError(res, s);
      }
      in_flight.emplace_back(next++, std::move(*stream));
    }
    Event ev;
    if (deadline.Expired()) {
      cancel_all();
      st.requests_timed_out.fetch_add(1);
      return SetError(res, kRequestTimeoutStatus, deadline.Message());
    }
    if (!in_flight.front().second->Pop(&ev, std::chrono::milliseconds(50))) {
      if (st.stopping.load()) {
        cancel_all();
        return SetShutdownError(
            res, "the server is shutting down: the request was cancelled at the end of its drain");
      }
      if (PeerClosed(fd)) {
        cancel_all();
        return SetError(res, 499, "the client closed the connection; the request was cancelled");
      }
      continue;
    }
    if (ev.type == Event::kToken) continue;
    if (ev.type == Event::kError) {
      in_flight.front().second->Cancel();
      in_flight.pop_front();
      cancel_all();
      return SetStatusError(res, ev.error);
    }
    vectors[in_flight.front().first] = std::move(ev.embedding);
    n_tokens += ev.n_prompt;
    in_flight.pop_front();
  }

  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    nlohmann::json item = {{"object", "embedding"}, {"index", i}};
    if (*format == "base64") {
      item["embedding"] = FloatsBase64(vectors[i]);
    } else {
      item["embedding"] = std::move(vectors[i]);
    }
    data.push_back(std::move(item));
  }
  nlohmann::json out = {{"object", "list"},
                        {"data", std::move(data)},
                        {"model", st.model_id},
                        {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}};
  res.set_content(Dump(out), "application/json; charset=utf-8");
}

}  // namespace

void RegisterEmbeddingRoutes(ServerState& st) {
  auto handler = [&st](const httplib::Request& req, httplib::Response& res) {
    try {
      HandleEmbeddings(st, req, res);
    } catch (const std::exception& e) {
      SetError(res, 500, std::string("internal error: ") + e.what());
    } catch (...) {
      SetError(res, 500, "internal error");
    }
  };
  st.http.Post("/v1/embeddings", handler);
  st.http.Post("/embeddings", handler);
}

}  // namespace lazyslot::server
