// POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API) and POST /v1/responses
// (OpenAI's Responses API, stateless): each request is translated into a chat body (anthropic_api.cpp,
// responses_api.cpp), runs through the same chat pipeline as /v1/chat/completions, and is answered in its own
// API's shapes and stream events by the ResponseFormat adapters here.
#include "server/anthropic_api.h"
#include "server/chat_request.h"
#include "server/errors.h"
#include "server/request_body.h"
#include "server/response_format.h"
#include "server/responses_api.h"

namespace lazyslot::server {
namespace {

using OJson = nlohmann::ordered_json;

void SetAnthropicError(httplib::Response& res, int http_status, const std::string& message) {
  res.status = http_status;
  res.set_content(Dump(AnthropicErrorBody(http_status, message)), "application/json; charset=utf-8");
}

class AnthropicFormat : public ResponseFormat {
 public:
  std::string StreamStart(const Generation& g) override {
    const Choice& c = g.choices[0];
    return writer_.Start(g.id, g.model->model_id, c.n_prompt, c.n_cached);
  }
  std::string StreamToken(const Generation& g, size_t i, const std::vector<ChatDelta>& deltas,
                          const TokenRecord* token) override {
    (void)g, (void)i, (void)token;
    std::string out;
    for (const ChatDelta& d : deltas) out += writer_.Delta(d);
    return out;
  }
  std::string StreamChoiceEnd(const Generation& g, size_t i, const ChatOutcome& o) override {
    (void)g, (void)i;
    return writer_.Finish(o);
  }
  std::string StreamError(int http_status, const std::string& message) override {
    return AnthropicErrorEvent(http_status, message);
  }
  OJson Final(const Generation& g, const std::vector<ChatOutcome>& outcomes) override {
    return AnthropicMessageJson(outcomes[0], g.id, g.model->model_id);
  }
  void SetError(httplib::Response& res, const Status& status) override {
    SetAnthropicError(res, HttpStatusFor(status.code()), AnthropicErrorMessage(status.message()));
  }
  void SetHttpError(httplib::Response& res, int http_status, const std::string& message) override {
    SetAnthropicError(res, http_status, AnthropicErrorMessage(message));
  }
  // Anthropic's wording for a prompt over the context window.
  void SetContextError(httplib::Response& res, int64_t n_prompt, int64_t n_ctx,
                       const std::string& message) override {
    (void)message;
    SetAnthropicError(res, 400,
                      "prompt is too long: " + std::to_string(n_prompt) + " tokens > " +
                          std::to_string(n_ctx - 1) +
                          " maximum (a slot's context, less one generated token)");
  }

 private:
  AnthropicStreamWriter writer_;
};

class ResponsesFormat : public ResponseFormat {
 public:
  ResponsesFormat(std::string id, std::string model, int64_t created, Json echo)
      : id_(id),
        model_(model),
        created_(created),
        echo_(echo),
        writer_(std::move(id), std::move(model), created, std::move(echo)) {}
  std::string StreamStart(const Generation& g) override {
    (void)g;
    return writer_.Start();
  }
  std::string StreamToken(const Generation& g, size_t i, const std::vector<ChatDelta>& deltas,
                          const TokenRecord* token) override {
    (void)g, (void)i, (void)token;
    std::string out;
    for (const ChatDelta& d : deltas) out += writer_.Delta(d);
    return out;
  }
  std::string StreamChoiceEnd(const Generation& g, size_t i, const ChatOutcome& o) override {
    (void)g, (void)i;
    return writer_.Finish(o, UnixNow());
  }
  std::string StreamError(int http_status, const std::string& message) override {
    (void)http_status;
    return writer_.Fail(message);
  }
  OJson Final(const Generation& g, const std::vector<ChatOutcome>& outcomes) override {
    (void)g;
    return ResponsesObjectJson(outcomes[0], id_, model_, created_, echo_, UnixNow());
  }
  void SetError(httplib::Response& res, const Status& status) override {
    SetStatusError(res, ChatErrorToResponses(status));
  }

 private:
  std::string id_, model_;
  int64_t created_;
  Json echo_;
  ResponsesStreamWriter writer_;
};

// The chat part shared by both APIs: the translated body through the chat pipeline, answered in `format`.
void RunChat(ServerState& st, ModelRef model, const Json& chat_body, std::string id,
             std::shared_ptr<ResponseFormat> format, const Deadline& deadline, const httplib::Request& req,
             httplib::Response& res) {
  Result<GenerationParams> params = ParseGenerationParams(chat_body, st.opts.sampling);
  if (!params.ok()) return format->SetError(res, params.status());
  Result<ChatSetup> setup = PrepareChat(st, *model, chat_body);
  if (!setup.ok()) return format->SetError(res, setup.status());
  TextRun run;
  run.id = std::move(id);
  run.deadline = deadline;
  run.params = std::move(*params);
  run.chat = true;
  run.chat_options = std::move(setup->options);
  run.prompts.push_back(std::move(setup->prompt));
  run.constraint = std::move(setup->constraint);
  run.trigger_at_start = setup->trigger_at_start;
  run.format = std::move(format);
  RunTextGeneration(st, std::move(model), std::move(run), req, res);
}

// Reads the body; a failure is answered in Anthropic's error shape.
std::optional<Json> ReadAnthropicBody(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (body) return body;
  Result<Json> err = ParseJsonObject(res.body);
  std::string message = "invalid request body";
  if (err.ok() && err->contains("error") && (*err)["error"].is_object()) {
    message = (*err)["error"].value("message", message);
  }
  SetAnthropicError(res, res.status, message);
  return std::nullopt;
}

void HandleMessages(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  const Deadline deadline(st.opts.request_timeout_s);
  std::optional<Json> body = ReadAnthropicBody(st, req, res);
  if (!body) return;
  Result<Json> chat = AnthropicToChatBody(*body);
  if (!chat.ok()) return SetAnthropicError(res, HttpStatusFor(chat.status().code()), chat.status().message());
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) {
    return SetAnthropicError(res, HttpStatusFor(model.status().code()), model.status().message());
  }
  RunChat(st, std::move(*model), *chat, NewId("msg_"), std::make_shared<AnthropicFormat>(), deadline, req,
          res);
}

void HandleCountTokens(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadAnthropicBody(st, req, res);
  if (!body) return;
  Result<Json> chat = AnthropicCountTokensBody(*body);
  if (!chat.ok()) return SetAnthropicError(res, HttpStatusFor(chat.status().code()), chat.status().message());
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) {
    return SetAnthropicError(res, HttpStatusFor(model.status().code()), model.status().message());
  }
  Result<ChatSetup> setup = PrepareChat(st, **model, *chat);
  if (!setup.ok()) {
    return SetAnthropicError(res, HttpStatusFor(setup.status().code()),
                             AnthropicErrorMessage(setup.status().message()));
  }
  res.set_content(Dump(AnthropicCountTokensJson(static_cast<int32_t>(setup->prompt.size()))),
                  "application/json; charset=utf-8");
}

void HandleResponses(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  const Deadline deadline(st.opts.request_timeout_s);
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  Result<Json> chat = ResponsesToChatBody(*body);
  if (!chat.ok()) return SetStatusError(res, chat.status());
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) return SetStatusError(res, model.status());
  const std::string id = NewId("resp_");
  auto format =
      std::make_shared<ResponsesFormat>(id, (*model)->model_id, UnixNow(), ResponsesRequestEcho(*body));
  RunChat(st, std::move(*model), *chat, id, std::move(format), deadline, req, res);
}

// POST /v1/responses/input_tokens: {"object": "response.input_tokens", "input_tokens": n}.
void HandleResponsesInputTokens(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  Result<Json> chat = ResponsesToChatBody(*body);
  if (!chat.ok()) return SetStatusError(res, chat.status());
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) return SetStatusError(res, model.status());
  Result<ChatSetup> setup = PrepareChat(st, **model, *chat);
  if (!setup.ok()) return SetStatusError(res, ChatErrorToResponses(setup.status()));
  res.set_content(
      Dump(nlohmann::json{{"object", "response.input_tokens"}, {"input_tokens", setup->prompt.size()}}),
      "application/json; charset=utf-8");
}

template <typename F>
httplib::Server::Handler Guarded(ServerState& st, F f, bool anthropic) {
  return [&st, f, anthropic](const httplib::Request& req, httplib::Response& res) {
    try {
      f(st, req, res);
    } catch (const std::exception& e) {
      const std::string message = std::string("internal error: ") + e.what();
      anthropic ? SetAnthropicError(res, 500, message) : SetError(res, 500, message);
    }
  };
}

}  // namespace

void RegisterMessageRoutes(ServerState& st) {
  st.http.Post("/v1/messages", Guarded(st, HandleMessages, true));
  st.http.Post("/v1/messages/count_tokens", Guarded(st, HandleCountTokens, true));
  for (const char* path : {"/v1/responses", "/responses"})
    st.http.Post(path, Guarded(st, HandleResponses, false));
  for (const char* path : {"/v1/responses/input_tokens", "/responses/input_tokens"}) {
    st.http.Post(path, Guarded(st, HandleResponsesInputTokens, false));
  }
}

}  // namespace lazyslot::server
