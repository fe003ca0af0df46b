// The text-generation core every text route ends in (OpenAI chat and completions, /completion, /infill,
// Anthropic Messages, OpenAI Responses): the shared request fields, the checks that need the engine (n against
// --parallel, prompts against the context), the server's defaults, submission and serving (see
// response_format.h). RunChatBody runs a chat-completions body translated from another API.
#include <random>

#include "server/generation/chat_request.h"
#include "server/generation/native_params.h"
#include "server/generation/openai_params.h"
#include "server/generation/output_constraint.h"
#include "server/generation/response_format.h"
#include "server/http/connection.h"
#include "server/http/errors.h"
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

// Refuses prompts that cannot be run (answered before any stream starts): too many for the slots and queue,
// or one without room for a generated token (llama-server's exceed_context_size_error).
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

Status CheckPromptCount(const ModelContext& m, size_t n_prompts, int n) {
  // A request's generations are queued together, before the scheduler admits any of them.
  const size_t capacity = static_cast<size_t>(std::max(1, m.engine->config().max_queue));
  if (n_prompts * n <= capacity) return Status::Ok();
  const std::string what = n == 1           ? "prompt: " + std::to_string(n_prompts) + " prompts"
                           : n_prompts == 1 ? "n: " + std::to_string(n) + " choices"
                                            : "prompt: " + std::to_string(n_prompts) + " prompts x " +
                                                  std::to_string(n) + " choices = " +
                                                  std::to_string(n_prompts * n) + " generations";
  return InvalidArgument(what + " in one request, but this server queues at most " +
                         std::to_string(capacity) + " at once (--max-queue)");
}

void AnswerNatively(const ModelContext& m, const NativeOptions& native, TextRun* run) {
  LlamaFormatOptions fo;
  fo.return_tokens = native.return_tokens;
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
  // More choices than slots run as slots free up: each later one reuses the prompt's KV that an earlier
  // choice left in its slot (or maps it from a choice still running), so the prompt is still read once.
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
  if (params.verbose && !run.prompts.empty()) {
    g->verbose_prompt = m.engine->tokenizer().Detokenize(run.prompts[0], false, true);
  }
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
  base.id_slot = params.id_slot;
  base.n_keep = params.n_keep;
  base.n_discard = params.n_discard;
  base.return_progress = params.return_progress && params.stream;
  Status submitted = SubmitChoices(*g, std::move(run.prompts), base, params.n);
  if (!submitted.ok()) return run.format->SetError(res, submitted);
  if (const std::string conv = req.get_header_value("X-Conversation-Id"); params.stream && !conv.empty()) {
    g->session = st.stream_sessions.Create(conv);  // resumable: GET /v1/stream?conv_id=
    g->fd = -1;  // a client that leaves no longer cancels it
  }
  ServeGeneration(g, std::move(run.format), res);
}

void RunChatBody(ServerState& st, ModelRef model, const Json& chat_body, std::string id,
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

}  // namespace lazyslot::server
