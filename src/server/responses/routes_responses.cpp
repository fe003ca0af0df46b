// POST /v1/responses and /v1/responses/input_tokens (OpenAI's Responses API, stateless; also without /v1):
// each request is translated into a chat-completions body (responses_api.cpp), runs through the chat pipeline
// (RunChatBody) and is answered as a `response` object or its SSE events (responses_output.cpp) by
// ResponsesFormat.
#include "server/generation/chat_request.h"
#include "server/generation/response_format.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"
#include "server/responses/responses_api.h"

namespace lazyslot::server {
namespace {

using OJson = nlohmann::ordered_json;

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
  std::string StreamProgress(const Generation& g, size_t i, const Event& progress) override {
    (void)g, (void)i;
    return writer_.Progress(ProgressJson(progress));
  }
  std::string StreamToken(const Generation& g, size_t i, const std::vector<ChatDelta>& deltas,
                          const TokenRecord* token) override {
    (void)token;
    // llama-server's timings_per_token: the timings so far on each delta event.
    const Json extra = g.params.timings_per_token ? Json{{"timings", TimingsSoFar(g.choices[i])}} : Json();
    std::string out;
    for (const ChatDelta& d : deltas) out += writer_.Delta(d, extra);
    return out;
  }
  std::string StreamChoiceEnd(const Generation& g, size_t i, const ChatOutcome& o) override {
    // As llama-server: the final timings beside the completed response.
    return writer_.Finish(o, UnixNow(), Json{{"timings", Timings(g.choices[i].final)}});
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
  RunChatBody(st, std::move(*model), *chat, id, std::move(format), deadline, req, res);
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

// A handler whose exceptions become OpenAI-shaped 500s.
template <typename F>
httplib::Server::Handler Guarded(ServerState& st, F f) {
  return [&st, f](const httplib::Request& req, httplib::Response& res) {
    try {
      f(st, req, res);
    } catch (const std::exception& e) {
      SetError(res, 500, std::string("internal error: ") + e.what());
    }
  };
}

}  // namespace

void RegisterResponsesRoutes(ServerState& st) {
  for (const char* path : {"/v1/responses", "/responses"}) st.http.Post(path, Guarded(st, HandleResponses));
  for (const char* path : {"/v1/responses/input_tokens", "/responses/input_tokens"}) {
    st.http.Post(path, Guarded(st, HandleResponsesInputTokens));
  }
}

}  // namespace lazyslot::server
