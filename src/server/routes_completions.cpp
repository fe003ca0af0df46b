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

// DRY's breakers as tokens, resolved once per list (a scan of the vocabulary) on this HTTP thread.
std::shared_ptr<const DryBreakers> DryBreakersFor(ModelContext& m, const std::vector<std::string>& list) {
  {
    std::lock_guard<std::mutex> lock(m.dry_mu);
    auto it = m.dry_breakers.find(list);
    if (it != m.dry_breakers.end()) return it->second;
  }
  auto resolved = std::make_shared<const DryBreakers>(ResolveDryBreakers(m.engine->tokenizer(), list));
  std::lock_guard<std::mutex> lock(m.dry_mu);
  if (m.dry_breakers.size() >= ModelContext::kMaxDryLists) m.dry_breakers.clear();
  m.dry_breakers.emplace(list, resolved);
  return resolved;
}

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
  } else if (api == TextApi::kCompletion) {
    if (present("top_logprobs")) {
      return InvalidArgument("top_logprobs: /v1/completions takes the count in logprobs (an integer, 0-20)");
    }
    if (present("logprobs")) {
      LS_ASSIGN_OR_RETURN(int64_t n, GetInteger(body, "logprobs", 0, 20));
      lp.enabled = true;
      lp.n_top = static_cast<int32_t>(n);
    }
  } else {
    for (const char* f : {"logprobs", "top_logprobs"}) {
      if (present(f))
        return InvalidArgument(std::string(f) + ": this route reads n_probs (llama-server's field)");
    }
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

Result<std::vector<std::vector<TokenId>>> Tokenized(const ModelContext& m, std::vector<PromptInput> inputs) {
  std::vector<std::vector<TokenId>> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_tokens) {
      out.push_back(std::move(inputs[i].tokens));
      continue;
    }
    // As llama-server: BOS as the model asks, and control-token text in the prompt becomes those tokens.
    Result<std::vector<TokenId>> ids = m.engine->tokenizer().Tokenize(inputs[i].text, true, true);
    if (!ids.ok()) return InvalidArgument("prompt: tokenizing failed: " + ids.status().message());
    out.push_back(std::move(*ids));
  }
  return out;
}

// Refuses a request whose prompts cannot be run: more prompts x choices than slots + queue can ever take
// (the request's fault, 400, not overload), or a prompt without room for one generated token (llama-server's
// exceed_context_size_error, answered before any stream starts).
Status CheckPromptCount(const ModelContext& m, size_t n_prompts, int n) {
  const EngineConfig& cfg = m.engine->config();
  const size_t capacity = static_cast<size_t>(std::max(1, cfg.n_parallel + cfg.max_queue));
  if (n_prompts * n <= capacity) return Status::Ok();
  const std::string what = n == 1 ? std::to_string(n_prompts) + " prompts"
                                  : std::to_string(n_prompts) + " prompts x " + std::to_string(n) +
                                        " choices = " + std::to_string(n_prompts * n) + " generations";
  return InvalidArgument("prompt: " + what + " in one request, but this server takes at most " +
                         std::to_string(capacity) + " at once (--parallel + --max-queue)");
}

bool CheckPrompts(const ModelContext& m, const std::vector<std::vector<TokenId>>& prompts, int n,
                  ResponseFormat& format, httplib::Response& res) {
  Status count = CheckPromptCount(m, prompts.size(), n);
  if (!count.ok()) {
    format.SetError(res, count);
    return false;
  }
  const int32_t n_ctx = m.engine->n_ctx_slot();
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

void AnswerNatively(const ModelContext& m, const NativeOptions& native, TextRun* run) {
  run->id_slot = native.id_slot;
  run->return_progress = native.return_progress;
  LlamaFormatOptions fo;
  fo.return_tokens = native.return_tokens;
  fo.timings_per_token = native.timings_per_token;
  fo.response_fields = native.response_fields;
  if (run->prompts.size() == 1) {
    fo.prompt_text = m.engine->tokenizer().Detokenize(run->prompts[0], false, true);
  }
  run->format = MakeLlamaFormat(std::move(fo));
}

Status ReadTextFields(const ServerState& st, const ModelContext& m, const Json& body, TextApi api,
                      TextRun* run) {
  LS_ASSIGN_OR_RETURN(run->params, ParseGenerationParams(body, st.opts.sampling));
  LS_ASSIGN_OR_RETURN(run->logprobs, ParseLogprobs(body, api));
  if (auto lb = body.find("logit_bias"); lb != body.end()) {
    LS_ASSIGN_OR_RETURN(run->params.sampling.logit_bias,
                        ParseLogitBias(*lb, m.engine->tokenizer(), m.engine->model().hparams().n_vocab));
  }
  if (api != TextApi::kChat) {
    LS_ASSIGN_OR_RETURN(run->constraint, ParseOutputConstraint(body));
  }
  return Status::Ok();
}

void RunTextGeneration(ServerState& st, ModelRef model, TextRun run, const httplib::Request& req,
                       httplib::Response& res) {
  ModelContext& m = *model;
  GenerationParams& params = run.params;
  if (params.n > m.engine->config().n_parallel) {
    return run.format->SetError(
        res, InvalidArgument("n: " + std::to_string(params.n) + " choices, but this server runs at most " +
                             std::to_string(m.engine->config().n_parallel) +
                             " at once (--parallel); ask for fewer"));
  }
  if (!CheckPrompts(m, run.prompts, params.n, *run.format, res)) return;
  if (run.logprobs.post_sampling && !run.constraint.gbnf.empty()) {
    return run.format->SetError(
        res, InvalidArgument("post_sampling_probs: not available with " + run.constraint.field +
                             " (the grammar may pick a token the sampler did not draw)"));
  }
  grammar::GrammarPtr grammar;
  if (!run.constraint.gbnf.empty()) {
    Result<grammar::GrammarPtr> compiled = CompileConstraint(run.constraint);
    if (!compiled.ok()) return run.format->SetError(res, compiled.status());
    grammar = std::move(*compiled);
  }
  auto g = std::make_shared<Generation>();
  g->st = &st;
  g->model = std::move(model);
  g->active = std::make_unique<ActiveRequest>(&st);
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
  params.sampling.repeat_last_n = params.repeat_last_n < 0 ? m.engine->n_ctx_slot() : params.repeat_last_n;
  if (UsesDry(params.sampling))
    params.sampling.dry_breakers = DryBreakersFor(m, params.sampling.dry_sequence_breakers);
  g->params = params;

  GenerationRequest base;
  base.sampling = params.sampling;
  base.n_predict = params.n_predict;
  base.stop = params.stop;
  base.ignore_eos = params.ignore_eos;
  base.cache_prompt = params.cache_prompt;
  base.cache_scope = CacheScope(params.cache_salt);
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
