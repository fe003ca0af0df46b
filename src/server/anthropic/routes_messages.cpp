// POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API): each request is translated into
// a chat-completions body (anthropic_api.cpp), runs through the chat pipeline (RunChatBody) and is answered in
// Anthropic's shapes, stream events and error bodies by AnthropicFormat.
#include "server/anthropic/anthropic_api.h"
#include "server/generation/chat_request.h"
#include "server/generation/response_format.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"

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
  RunChatBody(st, std::move(*model), *chat, NewId("msg_"), std::make_shared<AnthropicFormat>(), deadline, req,
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

// A handler whose exceptions become Anthropic-shaped 500s.
template <typename F>
httplib::Server::Handler Guarded(ServerState& st, F f) {
  return [&st, f](const httplib::Request& req, httplib::Response& res) {
    try {
      f(st, req, res);
    } catch (const std::exception& e) {
      SetAnthropicError(res, 500, std::string("internal error: ") + e.what());
    }
  };
}

}  // namespace

void RegisterAnthropicRoutes(ServerState& st) {
  st.http.Post("/v1/messages", Guarded(st, HandleMessages));
  st.http.Post("/v1/messages/count_tokens", Guarded(st, HandleCountTokens));
}

}  // namespace lazyslot::server
