// POST /v1/chat/completions, /v1/completions and llama-server's /completion (also at /completions, as in
// llama-server): request -> prompt tokens -> choices submitted to the engine -> the answer in the route's
// format (openai_format.cpp), whole or streamed (serve_generation.cpp). Also /apply-template (the rendered
// chat prompt only).
#include <random>

#include "server/chat_request.h"
#include "server/connection.h"
#include "server/errors.h"
#include "server/native_params.h"
#include "server/openai_params.h"
#include "server/output_constraint.h"
#include "server/request_body.h"
#include "server/response_format.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

uint64_t RandomSeed() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

// Log-probability fields: chat's boolean `logprobs` + `top_logprobs` (0-20), completions' integer `logprobs`
// (0-20), llama-server's `n_probs` + `post_sampling_probs` (every route reads the last two, as it does).
Result<LogprobRequest> ParseLogprobs(const Json& body, TextApi api) {
  LogprobRequest lp;
  auto present = [&body](const char* f) { return body.contains(f) && !body.at(f).is_null(); };
  if (api == TextApi::kChat) {
    LS_ASSIGN_OR_RETURN(lp.enabled, GetBool(body, "logprobs", false));
    if (present("top_logprobs")) {
      LS_ASSIGN_OR_RETURN(int64_t n, GetInteger(body, "top_logprobs", 0, 20));
      if (!lp.enabled) return InvalidArgument("top_logprobs: requires logprobs to be true");
      lp.n_top = static_cast<int32_t>(n);
    }
  } else if (api == TextApi::kCompletion && present("logprobs")) {
    LS_ASSIGN_OR_RETURN(int64_t n, GetInteger(body, "logprobs", 0, 20));
    lp.enabled = true;
    lp.n_top = static_cast<int32_t>(n);
  }
  if (present("n_probs")) {
    LS_ASSIGN_OR_RETURN(int64_t n, GetInteger(body, "n_probs", 0, 100));
    if (n > 0) {
      lp.enabled = true;
      lp.n_top = static_cast<int32_t>(n);
    }
  }
  LS_ASSIGN_OR_RETURN(lp.post_sampling, GetBool(body, "post_sampling_probs", false));
  return lp;
}

Result<std::vector<std::vector<TokenId>>> Tokenized(const ServerState& st, std::vector<PromptInput> inputs) {
  std::vector<std::vector<TokenId>> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_tokens) {
      out.push_back(std::move(inputs[i].tokens));
      continue;
    }
    // As llama-server: BOS as the model asks, and control-token text in the prompt becomes those tokens.
    Result<std::vector<TokenId>> ids = st.engine->tokenizer().Tokenize(inputs[i].text, true, true);
    if (!ids.ok()) return InvalidArgument("prompt: tokenizing failed: " + ids.status().message());
    out.push_back(std::move(*ids));
  }
  return out;
}

// Refuses a request whose prompts cannot be run: more prompts x choices than slots + queue can ever take
// (the request's fault, 400, not overload), or a prompt without room for one generated token (llama-server's
// exceed_context_size_error, answered before any stream starts).
bool CheckPrompts(const ServerState& st, const std::vector<std::vector<TokenId>>& prompts, int n,
                  ResponseFormat& format, httplib::Response& res) {
  const EngineConfig& cfg = st.engine->config();
  const size_t capacity = static_cast<size_t>(std::max(1, cfg.n_parallel + cfg.max_queue));
  if (prompts.size() * n > capacity) {
    const std::string what = n == 1 ? std::to_string(prompts.size()) + " prompts"
                                    : std::to_string(prompts.size()) + " prompts x " + std::to_string(n) +
                                          " choices = " + std::to_string(prompts.size() * n) + " generations";
    format.SetHttpError(res, 400,
                        "prompt: " + what + " in one request, but this server takes at most " +
                            std::to_string(capacity) + " at once (--parallel + --max-queue)");
    return false;
  }
  const int32_t n_ctx = st.engine->n_ctx_slot();
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (static_cast<int64_t>(prompts[i].size()) + 1 > n_ctx) {
      format.SetContextError(res, static_cast<int64_t>(prompts[i].size()), n_ctx,
                             std::string(prompts.size() > 1 ? "prompt[" + std::to_string(i) + "]: " : "") +
                                 "the request exceeds the available context size: the prompt has " +
                                 std::to_string(prompts[i].size()) + " tokens, but a slot's context holds " +
                                 std::to_string(n_ctx) + " (including at least one generated token)");
      return false;
    }
  }
  return true;
}

}  // namespace

void RunTextGeneration(ServerState& st, TextRun run, const httplib::Request& req, httplib::Response& res) {
  GenerationParams& params = run.params;
  if (params.n > st.engine->config().n_parallel) {
    return run.format->SetError(
        res, InvalidArgument("n: " + std::to_string(params.n) + " choices, but this server runs at most " +
                             std::to_string(st.engine->config().n_parallel) +
                             " at once (--parallel); ask for fewer"));
  }
  if (!CheckPrompts(st, run.prompts, params.n, *run.format, res)) return;
  grammar::GrammarPtr grammar;
  if (!run.constraint.gbnf.empty()) {
    Result<grammar::GrammarPtr> compiled = CompileConstraint(run.constraint);
    if (!compiled.ok()) return run.format->SetError(res, compiled.status());
    grammar = std::move(*compiled);
  }
  auto g = std::make_shared<Generation>();
  g->st = &st;
  g->deadline = run.deadline;
  g->id = run.id;
  g->created = UnixNow();
  g->chat = run.chat;
  g->chat_options = std::move(run.chat_options);
  g->logprobs = run.logprobs;
  g->n_per_prompt = params.n;
  g->fd = FindConnectionSocket(req);
  if (!params.seed_given) params.sampling.seed = RandomSeed();
  if (params.n_predict < 0) params.n_predict = st.opts.n_predict;  // the server's -n: the default
  if (st.opts.max_tokens_cap > 0 && (params.n_predict < 0 || params.n_predict > st.opts.max_tokens_cap)) {
    params.n_predict = st.opts.max_tokens_cap;  // --max-tokens-cap: a hard cap
  }
  params.sampling.repeat_last_n = params.repeat_last_n < 0 ? st.engine->n_ctx_slot() : params.repeat_last_n;
  g->params = params;

  GenerationRequest base;
  base.sampling = params.sampling;
  base.n_predict = params.n_predict;
  base.stop = params.stop;
  base.ignore_eos = params.ignore_eos;
  base.cache_prompt = params.cache_prompt;
  base.grammar = grammar;
  base.grammar_triggers = run.constraint.triggers;
  base.grammar_trigger_at_start = run.trigger_at_start;
  base.n_probs = run.logprobs.enabled ? run.logprobs.n_top : -1;
  base.post_sampling_probs = run.logprobs.post_sampling;
  base.id_slot = run.id_slot;
  base.return_progress = run.return_progress && params.stream;
  Status submitted = SubmitChoices(*g, std::move(run.prompts), base, params.n);
  if (!submitted.ok()) return run.format->SetError(res, submitted);
  ServeGeneration(g, std::move(run.format), res);
}

namespace {

void HandleGeneration(ServerState& st, TextApi api, const httplib::Request& req, httplib::Response& res) {
  const Deadline deadline(st.opts.request_timeout_s);
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  const RequestKind kind = api == TextApi::kChat         ? RequestKind::kChat
                           : api == TextApi::kCompletion ? RequestKind::kCompletion
                                                         : RequestKind::kNative;
  Status known = CheckKnownFields(*body, kind);
  if (!known.ok()) return SetStatusError(res, known);
  Result<GenerationParams> params = ParseGenerationParams(*body, st.opts.sampling);
  if (!params.ok()) return SetStatusError(res, params.status());
  Result<LogprobRequest> logprobs = ParseLogprobs(*body, api);
  if (!logprobs.ok()) return SetStatusError(res, logprobs.status());
  if (auto lb = body->find("logit_bias"); lb != body->end()) {
    Result<std::vector<std::pair<int32_t, float>>> bias =
        ParseLogitBias(*lb, st.engine->tokenizer(), st.engine->model().hparams().n_vocab);
    if (!bias.ok()) return SetStatusError(res, bias.status());
    params->sampling.logit_bias = std::move(*bias);
  }

  TextRun run;
  run.deadline = deadline;
  run.params = std::move(*params);
  run.logprobs = *logprobs;
  if (api == TextApi::kChat) {
    Result<ChatSetup> setup = PrepareChat(st, *body);
    if (!setup.ok()) return SetStatusError(res, setup.status());
    run.id = NewId("chatcmpl-");
    run.chat = true;
    run.chat_options = std::move(setup->options);
    run.prompts.push_back(std::move(setup->prompt));
    run.constraint = std::move(setup->constraint);
    run.trigger_at_start = setup->trigger_at_start;
    run.format = MakeOpenAiChatFormat();
    return RunTextGeneration(st, std::move(run), req, res);
  }
  Result<OutputConstraint> constraint = ParseOutputConstraint(*body);
  if (!constraint.ok()) return SetStatusError(res, constraint.status());
  run.constraint = std::move(*constraint);
  if (api == TextApi::kCompletion) {
    Status extras = CheckCompletionExtras(*body);
    if (!extras.ok()) return SetStatusError(res, extras);
    auto it = body->find("prompt");
    if (it == body->end() || it->is_null()) return SetError(res, 400, "prompt: is required", "prompt");
    Result<std::vector<PromptInput>> inputs = ParsePromptList(*it, "prompt");
    if (!inputs.ok()) return SetStatusError(res, inputs.status());
    Result<std::vector<std::vector<TokenId>>> ids = Tokenized(st, std::move(*inputs));
    if (!ids.ok()) return SetStatusError(res, ids.status());
    run.prompts = std::move(*ids);
    run.id = NewId("cmpl-");
    run.format = MakeOpenAiCompletionFormat();
    return RunTextGeneration(st, std::move(run), req, res);
  }
  Result<NativeOptions> native = ParseNativeOptions(*body, st.engine->tokenizer());
  if (!native.ok()) return SetStatusError(res, native.status());
  run.prompts = std::move(native->prompts);
  run.id_slot = native->id_slot;
  run.return_progress = native->return_progress;
  run.id = NewId("cmpl-");
  LlamaFormatOptions fo;
  fo.return_tokens = native->return_tokens;
  fo.timings_per_token = native->timings_per_token;
  fo.response_fields = std::move(native->response_fields);
  fo.generation_settings = GenerationSettingsJson(run.params, st);
  if (run.prompts.size() == 1)
    fo.prompt_text = st.engine->tokenizer().Detokenize(run.prompts[0], false, true);
  run.format = MakeLlamaFormat(std::move(fo));
  RunTextGeneration(st, std::move(run), req, res);
}

// POST /apply-template: a chat body in, {"prompt": the rendered text} out (llama-server's route).
void HandleApplyTemplate(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  Status known = CheckKnownFields(*body, RequestKind::kChat);
  if (!known.ok()) return SetStatusError(res, known);
  Result<std::string> prompt = RenderChat(st, *body);
  if (!prompt.ok()) return SetStatusError(res, prompt.status());
  res.set_content(Dump(nlohmann::json{{"prompt", *prompt}}), "application/json; charset=utf-8");
}

// POST /v1/chat/completions/input_tokens: the prompt tokens a chat body renders to, without generating.
void HandleChatInputTokens(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  Status known = CheckKnownFields(*body, RequestKind::kChat);
  if (!known.ok()) return SetStatusError(res, known);
  Result<ChatSetup> setup = PrepareChat(st, *body);
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
