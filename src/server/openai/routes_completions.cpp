// POST /v1/chat/completions, /v1/completions and llama-server's /completion (also at /completions, as in
// llama-server): request -> prompt tokens -> choices submitted to the engine -> the answer in the route's
// format (openai_format.cpp), whole or streamed (serve_generation.cpp). Also /apply-template (the rendered
// chat prompt only).
#include <random>

#include "server/generation/chat_request.h"
#include "server/generation/native_params.h"
#include "server/generation/openai_params.h"
#include "server/generation/output_constraint.h"
#include "server/generation/response_format.h"
#include "server/http/connection.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

Result<std::vector<std::vector<TokenId>>> Tokenized(const ModelContext& m, std::vector<PromptInput> inputs) {
  std::vector<std::vector<TokenId>> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // As llama-server: BOS as the model asks, and control-token text in the prompt becomes those tokens.
    LS_ASSIGN_OR_RETURN(std::vector<TokenId> ids,
                        TokenizePrompt(m.engine->tokenizer(), std::move(inputs[i]),
                                       inputs.size() > 1 ? "prompt[" + std::to_string(i) + "]" : "prompt"));
    out.push_back(std::move(ids));
  }
  return out;
}

void HandleGeneration(ServerState& st, TextApi api, const httplib::Request& req, httplib::Response& res) {
  const Deadline deadline(st.opts.request_timeout_s);
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  const RequestKind kind = api == TextApi::kChat         ? RequestKind::kChat
                           : api == TextApi::kCompletion ? RequestKind::kCompletion
                                                         : RequestKind::kNative;
  Status known = CheckKnownFields(*body, kind);
  if (!known.ok()) return SetStatusError(res, known);
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) return SetStatusError(res, model.status());
  const ModelContext& m = **model;
  TextRun run;
  run.deadline = deadline;
  Status fields = ReadTextFields(st, m, *body, api, &run);
  if (!fields.ok()) return SetStatusError(res, fields);
  if (api == TextApi::kChat) {
    Result<ChatSetup> setup = PrepareChat(st, m, *body);
    if (!setup.ok()) return SetStatusError(res, setup.status());
    run.id = NewId("chatcmpl-");
    run.chat = true;
    run.chat_options = std::move(setup->options);
    run.prompts.push_back(std::move(setup->prompt));
    run.constraint = std::move(setup->constraint);
    run.trigger_at_start = setup->trigger_at_start;
    run.format = MakeOpenAiChatFormat();
    return RunTextGeneration(st, std::move(*model), std::move(run), req, res);
  }
  if (api == TextApi::kCompletion) {
    Status extras = CheckCompletionExtras(*body);
    if (!extras.ok()) return SetStatusError(res, extras);
    auto it = body->find("prompt");
    if (it == body->end() || it->is_null()) return SetError(res, 400, "prompt: is required", "prompt");
    Result<std::vector<PromptInput>> inputs = ParsePromptList(*it, "prompt");
    if (!inputs.ok()) return SetStatusError(res, inputs.status());
    Status count = CheckPromptCount(m, inputs->size(), run.params.n);  // before tokenizing them all
    if (!count.ok()) return SetStatusError(res, count);
    Result<std::vector<std::vector<TokenId>>> ids = Tokenized(m, std::move(*inputs));
    if (!ids.ok()) return SetStatusError(res, ids.status());
    run.prompts = std::move(*ids);
    run.id = NewId("cmpl-");
    run.format = MakeOpenAiCompletionFormat();
    return RunTextGeneration(st, std::move(*model), std::move(run), req, res);
  }
  // A list of prompts (not one mixed prompt, which holds numbers) is counted before it is tokenized.
  if (auto p = body->find("prompt");
      p != body->end() && p->is_array() &&
      std::none_of(p->begin(), p->end(), [](const Json& e) { return e.is_number(); })) {
    Status count = CheckPromptCount(m, p->size(), run.params.n);
    if (!count.ok()) return SetStatusError(res, count);
  }
  Result<NativeOptions> native = ParseNativeOptions(*body, m.engine->tokenizer());
  if (!native.ok()) return SetStatusError(res, native.status());
  run.prompts = std::move(native->prompts);
  run.id = NewId("cmpl-");
  AnswerNatively(m, *native, &run);
  RunTextGeneration(st, std::move(*model), std::move(run), req, res);
}

// POST /apply-template: a chat body in, {"prompt": the rendered text} out (llama-server's route).
void HandleApplyTemplate(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  Status known = CheckKnownFields(*body, RequestKind::kChat);
  if (!known.ok()) return SetStatusError(res, known);
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) return SetStatusError(res, model.status());
  Result<std::string> prompt = RenderChat(st, **model, *body);
  if (!prompt.ok()) return SetStatusError(res, prompt.status());
  res.set_content(Dump(nlohmann::json{{"prompt", *prompt}}), "application/json; charset=utf-8");
}

// POST /v1/chat/completions/input_tokens: the prompt tokens a chat body renders to, without generating.
void HandleChatInputTokens(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  Status known = CheckKnownFields(*body, RequestKind::kChat);
  if (!known.ok()) return SetStatusError(res, known);
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) return SetStatusError(res, model.status());
  Result<ChatSetup> setup = PrepareChat(st, **model, *body);
  if (!setup.ok()) return SetStatusError(res, setup.status());
  res.set_content(Dump(nlohmann::json{{"input_tokens", setup->prompt.size()}}),
                  "application/json; charset=utf-8");
}

template <typename F>
httplib::Server::Handler Guarded(F f) {
  return [f](const httplib::Request& req, httplib::Response& res) {
    try {
      f(req, res);
    } catch (const std::exception& e) {
      SetError(res, 500, std::string("internal error: ") + e.what());
    } catch (...) {
      SetError(res, 500, "internal error");
    }
  };
}

}  // namespace

void RegisterCompletionRoutes(ServerState& st) {
  auto route = [&st](TextApi api) {
    return Guarded([&st, api](const httplib::Request& req, httplib::Response& res) {
      HandleGeneration(st, api, req, res);
    });
  };
  for (const char* path : {"/v1/chat/completions", "/chat/completions"})
    st.http.Post(path, route(TextApi::kChat));
  st.http.Post("/v1/completions", route(TextApi::kCompletion));
  // llama-server serves its native route at /completion and /completions (only /v1/completions is OpenAI's).
  for (const char* path : {"/completion", "/completions"}) st.http.Post(path, route(TextApi::kLlama));
  st.http.Post("/apply-template", Guarded([&st](const httplib::Request& req, httplib::Response& res) {
                 HandleApplyTemplate(st, req, res);
               }));
  for (const char* path : {"/v1/chat/completions/input_tokens", "/chat/completions/input_tokens"}) {
    st.http.Post(path, Guarded([&st](const httplib::Request& req, httplib::Response& res) {
                   HandleChatInputTokens(st, req, res);
                 }));
  }
}

}  // namespace lazyslot::server
