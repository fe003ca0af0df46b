// The pieces shared by the embedding and rerank routes (see embed_batch.h).
#include "server/embeddings/embed_batch.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <thread>

#include "core/log.h"
#include "server/http/connection.h"
#include "server/http/errors.h"
#include "server/http/server_limits.h"

namespace lazyslot::server {

Result<TruncateOptions> ParseTruncateOptions(const Json& body, const ServerState& st) {
  TruncateOptions t;
  LS_ASSIGN_OR_RETURN(t.truncate, GetBool(body, "truncate", st.opts.auto_truncate));
  LS_ASSIGN_OR_RETURN(std::string side, GetString(body, "truncation_direction", "right"));
  for (char& c : side) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (side == "left") {
    t.side = TruncateSide::kLeft;
  } else if (side != "right") {
    return InvalidArgument("truncation_direction: must be \"Right\" or \"Left\", got \"" + side + "\"");
  }
  return t;
}

int32_t MaxInputTokens(const ModelContext& m) {
  const HParams& hp = m.engine->model().hparams();
  int32_t limit = m.engine->n_ctx_slot();
  // Learned absolute positions (BERT) have no row past the trained context; RoPE models are bounded by the
  // slot only, as in llama-server.
  if (!hp.causal && hp.n_ctx_train > 0) limit = std::min(limit, hp.n_ctx_train);
  return limit;
}

std::pair<size_t, size_t> AddedSpecialTokens(const Tokenizer& tok, const std::vector<TokenId>& ids) {
  size_t head = 0, tail = 0;
  if (!ids.empty() && tok.bos() >= 0 && ids.front() == tok.bos() && tok.IsControl(ids.front())) head = 1;
  // EOS and SEP may both close a sequence (a BERT pair's end); at most two, never the head.
  while (tail < 2 && head + tail < ids.size()) {
    const TokenId id = ids[ids.size() - 1 - tail];
    if (!((id == tok.eos() || id == tok.sep()) && id >= 0 && tok.IsControl(id))) break;
    ++tail;
  }
  return {head, tail};
}

void CutTokens(std::vector<TokenId>* ids, size_t limit, size_t n_head, size_t n_tail, TruncateSide side) {
  if (ids->size() <= limit) return;
  if (n_head + n_tail >= limit) n_head = n_tail = 0;  // no room for the text: cut as plain tokens
  const size_t keep = limit - n_head - n_tail;        // tokens of the text between head and tail
  const size_t body_begin = n_head, body_end = ids->size() - n_tail;
  const size_t from = side == TruncateSide::kRight ? body_begin : body_end - keep;
  std::vector<TokenId> out;
  out.reserve(limit);
  out.insert(out.end(), ids->begin(), ids->begin() + static_cast<std::ptrdiff_t>(n_head));
  out.insert(out.end(), ids->begin() + static_cast<std::ptrdiff_t>(from),
             ids->begin() + static_cast<std::ptrdiff_t>(from + keep));
  out.insert(out.end(), ids->end() - static_cast<std::ptrdiff_t>(n_tail), ids->end());
  *ids = std::move(out);
}

bool CheckInputCount(const ServerState& st, size_t n_inputs, const std::string& field,
                     httplib::Response& res) {
  const int limit = st.opts.max_client_batch_size;
  if (limit <= 0 || n_inputs <= static_cast<size_t>(limit)) return true;
  SetError(res, 413,
           field + ": " + std::to_string(n_inputs) +
               " inputs in one request, but this server takes at most " + std::to_string(limit) +
               " (--max-client-batch-size); split the request",
           field);
  return false;
}

bool CheckTokenCount(const ServerState& st, int64_t n_tokens, const std::string& field,
                     httplib::Response& res) {
  const int64_t limit = st.opts.max_batch_tokens;
  if (limit <= 0 || n_tokens <= limit) return true;
  SetError(res, 413,
           field + ": the request has " + std::to_string(n_tokens) +
               " tokens in all, but this server takes at most " + std::to_string(limit) +
               " per request (--max-batch-tokens); split the request",
           field);
  return false;
}

void SetInputTooLong(const ModelContext& m, httplib::Response& res, const std::string& name, int64_t n_tokens,
                     const std::string& what) {
  const int32_t limit = MaxInputTokens(m);
  const bool by_slot = limit == m.engine->n_ctx_slot();
  SetContextSizeError(res, n_tokens, limit,
                      (name.empty() ? std::string() : name + ": ") +
                          "the request exceeds the available context size: " + what + " has " +
                          std::to_string(n_tokens) + " tokens, too large for " +
                          (by_slot ? "a slot's context of " : "the model's trained context of ") +
                          std::to_string(limit) +
                          " (send \"truncate\": true, or start the server with --auto-truncate, to cut it)");
}

bool PrepareInputs(const ServerState& st, const ModelContext& m, std::vector<PromptInput> inputs,
                   const std::string& field, const TruncateOptions& t, httplib::Response& res,
                   PreparedInputs* out) {
  if (!CheckInputCount(st, inputs.size(), field, res)) return false;
  const Tokenizer& tok = m.engine->tokenizer();
  const size_t limit = static_cast<size_t>(MaxInputTokens(m));
  out->prompts.clear();
  out->prompts.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = field + "[" + std::to_string(i) + "]";
    const bool given_ids = inputs[i].is_tokens;
    Result<std::vector<TokenId>> tokenized = TokenizePrompt(tok, std::move(inputs[i]), name);
    if (!tokenized.ok()) {
      SetError(res, 400, tokenized.status().message(), field);
      return false;
    }
    std::vector<TokenId> ids = std::move(*tokenized);
    if (ids.size() > limit) {
      if (!t.truncate) {
        SetInputTooLong(m, res, inputs.size() > 1 ? name : "", static_cast<int64_t>(ids.size()));
        return false;
      }
      const auto [head, tail] = given_ids ? std::pair<size_t, size_t>{0, 0} : AddedSpecialTokens(tok, ids);
      CutTokens(&ids, limit, head, tail, t.side);
      ++out->n_truncated;
    }
    out->n_tokens += static_cast<int64_t>(ids.size());
    out->prompts.push_back(std::move(ids));
  }
  return CheckTokenCount(st, out->n_tokens, field, res);
}

void ReportTruncation(const ModelContext& m, httplib::Response& res, const char* route, size_t n_truncated,
                      size_t n_inputs) {
  if (n_truncated == 0) return;
  res.set_header("X-Truncated-Inputs", std::to_string(n_truncated));
  LS_LOG_INFO("%s: %zu of %zu input(s) longer than %d tokens were truncated", route, n_truncated, n_inputs,
              MaxInputTokens(m));
}

bool RunEmbeddings(ServerState& st, const ModelContext& m, const httplib::Request& req,
                   httplib::Response& res, std::vector<std::vector<TokenId>> prompts, bool unpooled,
                   const std::string& field, std::vector<EmbedResult>* out) {
  const EngineConfig& cfg = m.engine->config();
  // Enough inputs in the engine for it to pack short ones together, without filling its queue alone.
  const size_t window = static_cast<size_t>(std::max({1, cfg.n_parallel, cfg.max_queue / 2}));
  const size_t n = prompts.size();
  const int64_t n_embd = m.engine->model().hparams().n_embd;
  auto named = [&](size_t i, const std::string& message) {
    return n > 1 ? field + "[" + std::to_string(i) + "]: " + message : message;
  };
  const int fd = FindConnectionSocket(req);
  const Deadline deadline(st.opts.request_timeout_s);  // from here: tokenizing was bounded by the body
  const ActiveRequest active(&st);                     // the drain waits for it
  std::deque<std::pair<size_t, std::shared_ptr<RequestStream>>> in_flight;
  out->assign(n, EmbedResult{});
  size_t next = 0;
  // The engine's queue is full: wait for one of ours to finish (or, with none left, a moment) rather than
  // fail a request that has started. Only a request refused at its first input gets the 503.
  bool queue_full = false;
  auto cancel_all = [&] {
    for (auto& f : in_flight) f.second->Cancel();
  };
  while (next < n || !in_flight.empty()) {
    while (!queue_full && next < n && in_flight.size() < window) {
      // A full queue once the request has started: wait rather than be refused (which would count in
      // /metrics' requests_rejected_total). The refusal below covers the race.
      if (next > 0 && m.engine->Stats().queue_length >= cfg.max_queue) {
        queue_full = true;
        break;
      }
      GenerationRequest gr;
      gr.prompt = prompts[next];  // a copy: a refused submit is retried
      gr.embedding = true;
      gr.unpooled = unpooled;
      Result<std::shared_ptr<RequestStream>> stream = m.engine->Submit(std::move(gr));
      if (!stream.ok()) {
        if (stream.status().code() == Code::kUnavailable && next > 0) {
          queue_full = true;
          break;
        }
        cancel_all();
        SetStatusError(res, Status(stream.status().code(), named(next, stream.status().message())));
        return false;
      }
      std::vector<TokenId>().swap(prompts[next]);
      in_flight.emplace_back(next++, std::move(*stream));
    }
    if (deadline.Expired()) {
      cancel_all();
      st.requests_timed_out.fetch_add(1);
      SetError(res, kRequestTimeoutStatus, deadline.Message());
      return false;
    }
    Event ev;
    if (in_flight.empty()) {  // the queue is full of other requests and none of ours is left in it
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      queue_full = false;
    }
    if (in_flight.empty() || !in_flight.front().second->Pop(&ev, std::chrono::milliseconds(50))) {
      if (st.stopping.load()) {
        cancel_all();
        SetShutdownError(res,
                         "the server is shutting down: the request was cancelled at the end of its drain");
        return false;
      }
      if (PeerClosed(fd)) {
        cancel_all();
        SetError(res, 499, "the client closed the connection; the request was cancelled");
        return false;
      }
      continue;
    }
    const size_t i = in_flight.front().first;
    if (ev.type == Event::kError) {
      in_flight.pop_front();
      cancel_all();
      SetStatusError(res, Status(ev.error.code(), named(i, ev.error.message())));
      return false;
    }
    if (ev.type != Event::kDone) continue;
    const size_t want = unpooled ? static_cast<size_t>(ev.n_prompt) * static_cast<size_t>(n_embd) : 1;
    if (ev.embedding.size() < want || (unpooled && ev.embedding.size() != want)) {
      in_flight.pop_front();
      cancel_all();
      SetError(res, 500,
               named(i, "internal error: the engine returned " + std::to_string(ev.embedding.size()) +
                            " values for " + std::to_string(ev.n_prompt) + " tokens"));
      return false;
    }
    (*out)[i] = EmbedResult{std::move(ev.embedding), ev.n_prompt};
    in_flight.pop_front();
    queue_full = false;
  }
  return true;
}

void NormalizeEmbedding(std::vector<float>* v, int norm) {
  if (norm < 0) return;
  const size_t n = v->size();
  const float* x = v->data();
  double sum = 0.0;
  if (norm == 0) {
    for (size_t i = 0; i < n; ++i) sum = std::max(sum, static_cast<double>(std::fabs(x[i])));
    sum /= 32760.0;  // the largest component becomes 32760: an int16 range
  } else if (norm == 2) {
    for (size_t i = 0; i < n; ++i) sum += x[i] * x[i];
    sum = std::sqrt(sum);
  } else {
    for (size_t i = 0; i < n; ++i) sum += std::pow(std::fabs(x[i]), norm);
    sum = std::pow(sum, 1.0 / norm);
  }
  const float scale = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
  for (float& f : *v) f *= scale;
}

Result<int> ParseEmbdNormalize(const Json& body, int def) {
  if (!Present(body, "embd_normalize")) return def;
  LS_ASSIGN_OR_RETURN(int64_t v, GetInteger(body, "embd_normalize", -1, 100));
  return static_cast<int>(v);
}

Result<int64_t> ParseDimensions(const Json& body, const ModelContext& m) {
  if (!Present(body, "dimensions")) return int64_t{0};
  const int64_t n_embd = m.engine->model().hparams().n_embd;
  Result<int64_t> d = GetInteger(body, "dimensions", 1, n_embd);
  if (!d.ok()) {
    return InvalidArgument(d.status().message() + " (this model's embeddings have " + std::to_string(n_embd) +
                           " dimensions; a smaller value keeps the first ones, renormalised)");
  }
  return d;
}

bool CheckEmbeddingsServed(const ModelContext& m, httplib::Response& res) {
  if (m.engine->config().pooling == PoolingType::kRank) {
    SetError(res, 501,
             "this server was started with --rerank: it serves relevance scores on /v1/rerank, not "
             "embeddings; start it with --embeddings (and an embedding model) for those");
    return false;
  }
  // An encoder (BERT) computes nothing else, so it needs no --embeddings.
  if (!m.engine->config().embeddings && !m.engine->model().arch().encoder) {
    SetError(res, 501,
             "model '" + m.model_id +
                 "' does not serve embeddings; start the server with --embeddings (router mode: or set "
                 "embeddings = true in its --models-preset section)");
    return false;
  }
  return true;
}

void SetTeiError(httplib::Response& res, int status, const std::string& message, const char* error_type) {
  res.status = status;
  res.set_content(Dump(nlohmann::json{{"error", message}, {"error_type", error_type}}),
                  "application/json; charset=utf-8");
}

void ConvertToTeiError(httplib::Response& res) {
  if (res.status < 400) return;
  const nlohmann::json body = nlohmann::json::parse(res.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return;  // TEI's already
  const nlohmann::json& err = body["error"];
  const std::string message = err.value("message", std::string("error"));
  const std::string type = err.value("type", std::string());
  int status = res.status;
  const char* tei_type = "Backend";
  if (status == 400 || status == 413 || status == 415) {
    tei_type = "Validation";
    if (status == 400) status = 422;
  } else if (status == 501) {
    status = 424;  // TEI: "the model is not an embedding model" / "not a re-ranker model"
  } else if (status == 503) {
    if (type == "server_shutdown") {
      tei_type = "Unhealthy";
    } else {
      status = 429;
      tei_type = "Overloaded";
    }
  }
  SetTeiError(res, status, message, tei_type);
}

httplib::Server::Handler GuardRoute(ServerState& st, RouteHandler fn, bool tei) {
  return [&st, fn = std::move(fn), tei](const httplib::Request& req, httplib::Response& res) {
    try {
      fn(st, req, res);
    } catch (const std::exception& e) {
      SetError(res, 500, std::string("internal error: ") + e.what());
    } catch (...) {
      SetError(res, 500, "internal error");
    }
    if (tei) ConvertToTeiError(res);
  };
}

}  // namespace lazyslot::server
