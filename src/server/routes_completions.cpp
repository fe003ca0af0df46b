// POST /v1/chat/completions, /v1/completions and llama-server's /completion: request -> prompt tokens ->
// Engine::Submit -> events -> one JSON response, or SSE chunks (`data: {...}\n\n`, then `data: [DONE]`).
// A client that goes away cancels its requests, so its slot frees at once. Also /apply-template (the
// rendered chat prompt only).
#include <chrono>
#include <random>

#include "core/log.h"
#include "server/chat_request.h"
#include "server/connection.h"
#include "server/errors.h"
#include "server/openai_params.h"
#include "server/request_body.h"
#include "server/server_limits.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

using Clock = std::chrono::steady_clock;

enum class Api { kChat, kCompletion, kLlama };

struct Choice {
  std::shared_ptr<RequestStream> stream;
  std::string text;  // non-streamed: accumulated content
  bool done = false;
  Event final;  // the kDone event
  std::unique_ptr<ToolCallStreamParser> calls;  // streamed chat with tools: splits content from calls
};

// One HTTP request's generations (several when `prompt` is a list) and what is needed to answer it.
struct Generation {
  ServerState* st = nullptr;
  Api api = Api::kChat;
  std::string id;
  int64_t created = 0;
  GenerationParams params;
  ToolRequest tools;  // chat: tools.active() -> answers are parsed for calls
  ToolCallParseOptions parse_options;
  std::vector<Choice> choices;
  int fd = -1;           // the client's socket, for noticing a disconnect (-1: unknown)
  Deadline deadline{0};  // --request-timeout, counted from the request's arrival (queue wait included)
  Clock::time_point last_check = Clock::now();
  bool cancelled = false;

  void CancelAll() {
    for (Choice& c : choices) {
      if (!c.done) c.stream->Cancel();
    }
    cancelled = true;
  }
  size_t n_left() const {
    size_t n = 0;
    for (const Choice& c : choices) n += c.done ? 0 : 1;
    return n;
  }
};

enum class Wait { kEvent, kGone, kTimeout };

// Next event from any unfinished choice. Checks the client's socket when idle and at least every 100 ms;
// on a disconnect or server stop, cancels every choice and returns kGone; past the request's deadline,
// cancels every choice and returns kTimeout.
Wait NextEvent(Generation& g, size_t* index, Event* ev) {
  for (;;) {
    if (g.deadline.Expired()) {
      g.st->requests_timed_out.fetch_add(1);
      g.CancelAll();
      return Wait::kTimeout;
    }
    for (size_t i = 0; i < g.choices.size(); ++i) {
      if (!g.choices[i].done && g.choices[i].stream->Pop(ev, std::chrono::milliseconds(0))) {
        *index = i;
        if (Clock::now() - g.last_check < std::chrono::milliseconds(100)) return Wait::kEvent;
        g.last_check = Clock::now();
        if (!PeerClosed(g.fd) && !g.st->stopping.load()) return Wait::kEvent;
        g.CancelAll();
        return Wait::kGone;
      }
    }
    g.last_check = Clock::now();
    if (g.st->stopping.load() || PeerClosed(g.fd)) {
      if (!g.st->stopping.load()) g.st->streams_disconnected.fetch_add(1);
      g.CancelAll();
      return Wait::kGone;
    }
    // Block on one stream; with several, poll briefly so the others are not starved.
    for (size_t i = 0; i < g.choices.size(); ++i) {
      if (g.choices[i].done) continue;
      const auto timeout = std::chrono::milliseconds(g.n_left() == 1 ? 50 : 5);
      if (g.choices[i].stream->Pop(ev, timeout)) {
        *index = i;
        return Wait::kEvent;
      }
      break;
    }
  }
}

nlohmann::json Usage(const Generation& g) {
  int64_t prompt = 0, completion = 0, cached = 0;
  for (const Choice& c : g.choices) {
    prompt += c.final.n_prompt;
    completion += c.final.n_generated;
    cached += c.final.n_cached;
  }
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

nlohmann::json Timings(const Event& done) {
  const double gen_s = done.generation_ms / 1000.0, prompt_s = done.prompt_ms / 1000.0;
  return {{"cache_n", done.n_cached},
          {"prompt_n", done.n_prompt},
          {"prompt_ms", done.prompt_ms},
          {"prompt_per_second", prompt_s > 0 ? done.n_prompt / prompt_s : 0.0},
          {"predicted_n", done.n_generated},
          {"predicted_ms", done.generation_ms},
          {"predicted_per_second", gen_s > 0 ? done.n_generated / gen_s : 0.0}};
}

// llama-server's stop_type: "eos" (end-of-generation token or stop string), "limit" (n_predict or context).
const char* StopType(const Event& done) { return done.finish_reason == "length" ? "limit" : "eos"; }

nlohmann::json ChunkBase(const Generation& g) {
  nlohmann::json j = {{"id", g.id},
                      {"object", g.api == Api::kChat ? "chat.completion.chunk" : "text_completion"},
                      {"created", g.created},
                      {"model", g.st->model_id},
                      {"system_fingerprint", "lazyslot"}};
  if (g.params.include_usage) j["usage"] = nullptr;  // OpenAI: null on every chunk but the last
  return j;
}

// One SSE chunk for choice `i`: new text, or (final) its finish_reason.
nlohmann::json StreamChunk(const Generation& g, size_t i, const std::string& text, const Event* final) {
  if (g.api == Api::kLlama) {
    nlohmann::json j = {{"index", i}, {"content", text}, {"stop", final != nullptr}};
    if (final) {
      j["model"] = g.st->model_id;
      j["tokens_predicted"] = final->n_generated;
      j["tokens_evaluated"] = final->n_prompt;
      j["stop_type"] = StopType(*final);
      j["timings"] = Timings(*final);
    }
    return j;
  }
  nlohmann::json j = ChunkBase(g);
  nlohmann::json choice = {{"index", i}, {"logprobs", nullptr}};
  if (g.api == Api::kChat) {
    choice["delta"] = final ? nlohmann::json::object() : nlohmann::json{{"content", text}};
  } else {
    choice["text"] = text;
  }
  choice["finish_reason"] = final ? nlohmann::json(final->finish_reason) : nlohmann::json(nullptr);
  j["choices"] = nlohmann::json::array({choice});
  if (final) j["timings"] = Timings(*final);
  return j;
}

// OpenAI's finish_reason: "tool_calls" when a chat answer holds calls.
std::string FinishReason(const Generation& g, const Choice& c, size_t n_calls) {
  return g.api == Api::kChat && n_calls > 0 ? "tool_calls" : c.final.finish_reason;
}

// A chat chunk with a ready delta (content or tool-call deltas), or the final one with `finish`.
nlohmann::json ChatChunk(const Generation& g, size_t i, nlohmann::json delta, const std::string* finish) {
  nlohmann::json j = ChunkBase(g);
  j["choices"] =
      nlohmann::json::array({{{"index", i},
                              {"delta", std::move(delta)},
                              {"logprobs", nullptr},
                              {"finish_reason", finish ? nlohmann::json(*finish) : nlohmann::json()}}});
  if (finish) j["timings"] = Timings(g.choices[i].final);
  return j;
}

// The assistant message of a chat answer: content, and tool_calls when the request offered tools.
nlohmann::json ChatMessageJson(const Generation& g, const Choice& c, size_t* n_calls) {
  *n_calls = 0;
  if (!g.tools.active()) return {{"role", "assistant"}, {"content", c.text}};
  ParsedOutput parsed = ParseToolCalls(c.text, g.st->tool_format, g.tools.tools, g.parse_options);
  nlohmann::json m = {{"role", "assistant"}};
  // OpenAI sends content null when the answer is only calls.
  m["content"] = parsed.content.empty() && !parsed.tool_calls.empty() ? nlohmann::json()
                                                                      : nlohmann::json(parsed.content);
  if (!parsed.tool_calls.empty()) {
    nlohmann::json calls = nlohmann::json::array();
    for (const ToolCall& call : parsed.tool_calls) {
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    m["tool_calls"] = std::move(calls);
  }
  *n_calls = parsed.tool_calls.size();
  return m;
}

nlohmann::json FinalResponse(const Generation& g) {
  if (g.api == Api::kLlama) {
    nlohmann::json all = nlohmann::json::array();
    for (size_t i = 0; i < g.choices.size(); ++i) {
      const Event& f = g.choices[i].final;
      all.push_back({{"index", i},
                     {"content", g.choices[i].text},
                     {"model", g.st->model_id},
                     {"stop", true},
                     {"stop_type", StopType(f)},
                     {"tokens_predicted", f.n_generated},
                     {"tokens_evaluated", f.n_prompt},
                     {"truncated", false},
                     {"timings", Timings(f)}});
    }
    return all.size() == 1 ? all[0] : all;
  }
  nlohmann::json choices = nlohmann::json::array();
  for (size_t i = 0; i < g.choices.size(); ++i) {
    const Choice& c = g.choices[i];
    nlohmann::json choice = {{"index", i}, {"logprobs", nullptr}, {"finish_reason", c.final.finish_reason}};
    if (g.api == Api::kChat) {
      size_t n_calls = 0;
      choice["message"] = ChatMessageJson(g, c, &n_calls);
      choice["finish_reason"] = FinishReason(g, c, n_calls);
    } else {
      choice["text"] = c.text;
    }
    choices.push_back(std::move(choice));
  }
  nlohmann::json j = {{"id", g.id},
                      {"object", g.api == Api::kChat ? "chat.completion" : "text_completion"},
                      {"created", g.created},
                      {"model", g.st->model_id},
                      {"system_fingerprint", "lazyslot"},
                      {"choices", std::move(choices)},
                      {"usage", Usage(g)}};
  if (g.choices.size() == 1) j["timings"] = Timings(g.choices[0].final);
  return j;
}

std::string Sse(const nlohmann::json& j) { return "data: " + Dump(j) + "\n\n"; }

Result<std::vector<std::vector<TokenId>>> CompletionPrompts(const ServerState& st, const Json& body) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) return InvalidArgument("prompt: is required");
  LS_ASSIGN_OR_RETURN(std::vector<PromptInput> inputs, ParsePromptList(*it, "prompt"));
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

uint64_t RandomSeed() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

void StreamResponse(std::shared_ptr<Generation> g, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto provider = [g](size_t /*offset*/, httplib::DataSink& sink) -> bool {
    try {
      auto write = [&](const std::string& s) {
        if (sink.write(s.data(), s.size())) return true;
        g->st->streams_disconnected.fetch_add(1);
        g->CancelAll();
        return false;
      };
      if (g->api == Api::kChat) {  // OpenAI opens every chat stream with the role
        for (size_t i = 0; i < g->choices.size(); ++i) {
          nlohmann::json j = ChunkBase(*g);
          j["choices"] = nlohmann::json::array({{{"index", i},
                                                 {"delta", {{"role", "assistant"}, {"content", ""}}},
                                                 {"logprobs", nullptr},
                                                 {"finish_reason", nullptr}}});
          if (!write(Sse(j))) return false;
        }
      }
      while (g->n_left() > 0) {
        size_t i = 0;
        Event ev;
        const Wait w = NextEvent(*g, &i, &ev);
        if (w == Wait::kGone) return false;
        if (w == Wait::kTimeout) {  // an error event, then a clean end of the stream
          write(Sse(ErrorBody(kRequestTimeoutStatus, g->deadline.Message())));
          sink.done();
          return true;
        }
        Choice& c = g->choices[i];
        if (ev.type == Event::kToken && c.calls) {
          for (const ToolStreamDelta& d : c.calls->Feed(ev.text)) {
            if (!write(Sse(ChatChunk(*g, i, d.ToOpenAiJson(), nullptr)))) return false;
          }
        } else if (ev.type == Event::kToken) {
          if (!ev.text.empty() && !write(Sse(StreamChunk(*g, i, ev.text, nullptr)))) return false;
        } else if (ev.type == Event::kDone && c.calls) {
          c.done = true;
          c.final = std::move(ev);
          for (const ToolStreamDelta& d : c.calls->Finish()) {
            if (!write(Sse(ChatChunk(*g, i, d.ToOpenAiJson(), nullptr)))) return false;
          }
          const std::string finish = FinishReason(*g, c, c.calls->result().tool_calls.size());
          if (!write(Sse(ChatChunk(*g, i, nlohmann::json::object(), &finish)))) return false;
        } else if (ev.type == Event::kDone) {
          c.done = true;
          c.final = std::move(ev);
          if (!write(Sse(StreamChunk(*g, i, "", &c.final)))) return false;
        } else {
          c.done = true;
          g->CancelAll();
          write(Sse(ErrorBody(HttpStatusFor(ev.error.code()), ev.error.message())));
          sink.done();
          return true;
        }
      }
      if (g->api != Api::kLlama) {
        if (g->params.include_usage) {
          nlohmann::json j = ChunkBase(*g);
          j["choices"] = nlohmann::json::array();
          j["usage"] = Usage(*g);
          if (!write(Sse(j))) return false;
        }
        if (!write("data: [DONE]\n\n")) return false;
      }
      sink.done();
      return true;
    } catch (const std::exception& e) {
      LS_LOG_ERROR("stream %s: %s", g->id.c_str(), e.what());
      g->CancelAll();
      return false;
    }
  };
  // The releaser runs when the response is destroyed; success=false (client gone, write error) cancels.
  res.set_chunked_content_provider("text/event-stream", provider, [g](bool success) {
    if (!success) g->CancelAll();
  });
}

void HandleGeneration(ServerState& st, Api api, const httplib::Request& req, httplib::Response& res) {
  const Deadline deadline(st.opts.request_timeout_s);
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  if (api != Api::kLlama) {  // llama-server's own route keeps its leniency (its clients send many knobs)
    Status known = CheckKnownFields(*body, api == Api::kChat ? RequestKind::kChat : RequestKind::kCompletion);
    if (!known.ok()) return SetStatusError(res, known);
  }
  Result<GenerationParams> params = ParseGenerationParams(*body);
  if (!params.ok()) return SetStatusError(res, params.status());
  if (api == Api::kCompletion) {
    Result<bool> echo = GetBool(*body, "echo", false);
    if (!echo.ok()) return SetStatusError(res, echo.status());
    if (*echo) return SetError(res, 400, "echo: echoing the prompt is not supported", "echo");
    Result<std::string> suffix = GetString(*body, "suffix", "");
    if (!suffix.ok()) return SetStatusError(res, suffix.status());
    if (!suffix->empty()) return SetError(res, 400, "suffix: insertion (suffix) is not supported", "suffix");
  }

  std::vector<std::vector<TokenId>> prompts;
  ChatSetup chat;
  if (api == Api::kChat) {
    Result<ChatSetup> setup = PrepareChat(st, *body);
    if (!setup.ok()) return SetStatusError(res, setup.status());
    chat = std::move(*setup);
    prompts.push_back(std::move(chat.prompt));
  } else {
    Result<OutputConstraint> constraint = ParseOutputConstraint(*body);
    if (!constraint.ok()) return SetStatusError(res, constraint.status());
    chat.constraint = std::move(*constraint);
    Result<std::vector<std::vector<TokenId>>> ids = CompletionPrompts(st, *body);
    if (!ids.ok()) return SetStatusError(res, ids.status());
    prompts = std::move(*ids);
  }
  grammar::GrammarPtr grammar;
  if (!chat.constraint.gbnf.empty()) {
    Result<grammar::GrammarPtr> compiled = CompileConstraint(chat.constraint);
    if (!compiled.ok()) return SetStatusError(res, compiled.status());
    grammar = std::move(*compiled);
  }
  // Every prompt of a list is submitted at once: more than the slots and queue places can never be
  // accepted together, whatever the load, so that is the request's fault (400), not overload (503).
  const EngineConfig& cfg = st.engine->config();
  const size_t capacity = static_cast<size_t>(std::max(1, cfg.n_parallel + cfg.max_queue));
  if (prompts.size() > capacity) {
    return SetError(res, 400,
                    "prompt: " + std::to_string(prompts.size()) +
                        " prompts in one request, but this server takes at most " + std::to_string(capacity) +
                        " at once (--parallel + --max-queue)",
                    "prompt");
  }

  // Each prompt needs room for one generated token too (the engine checks the same; answered here in
  // llama-server's form, before any stream starts).
  const int32_t n_ctx = st.engine->n_ctx_slot();
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (static_cast<int64_t>(prompts[i].size()) + 1 > n_ctx) {
      return SetContextSizeError(
          res, static_cast<int64_t>(prompts[i].size()), n_ctx,
          std::string(prompts.size() > 1 ? "prompt[" + std::to_string(i) + "]: " : "") +
              "the request exceeds the available context size: the prompt has " +
              std::to_string(prompts[i].size()) + " tokens, but a slot's context holds " +
              std::to_string(n_ctx) + " (including at least one generated token)");
    }
  }

  auto g = std::make_shared<Generation>();
  g->st = &st;
  g->deadline = deadline;
  g->api = api;
  g->id = NewId(api == Api::kChat ? "chatcmpl-" : "cmpl-");
  g->created = UnixNow();
  g->params = std::move(*params);
  g->tools = std::move(chat.tools);
  g->parse_options = chat.parse_options;
  g->fd = FindConnectionSocket(req);
  if (!g->params.seed_given) g->params.sampling.seed = RandomSeed();
  if (st.opts.n_predict >= 0 && (g->params.n_predict < 0 || g->params.n_predict > st.opts.n_predict)) {
    g->params.n_predict = st.opts.n_predict;  // the server's -n: default and cap
  }
  g->params.sampling.repeat_last_n =
      g->params.repeat_last_n < 0 ? st.engine->n_ctx_slot() : g->params.repeat_last_n;
  if (auto lb = body->find("logit_bias"); lb != body->end()) {
    Result<std::vector<std::pair<int32_t, float>>> bias =
        ParseLogitBias(*lb, st.engine->tokenizer(), st.engine->model().hparams().n_vocab);
    if (!bias.ok()) return SetStatusError(res, bias.status());
    g->params.sampling.logit_bias = std::move(*bias);
  }

  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest gr;
    gr.prompt = std::move(prompts[i]);
    gr.sampling = g->params.sampling;
    gr.n_predict = g->params.n_predict;
    gr.stop = g->params.stop;
    gr.ignore_eos = g->params.ignore_eos;
    gr.cache_prompt = g->params.cache_prompt;
    gr.grammar = grammar;
    gr.grammar_triggers = chat.constraint.triggers;
    gr.grammar_trigger_at_start = chat.trigger_at_start;
    Result<std::shared_ptr<RequestStream>> stream = st.engine->Submit(std::move(gr));
    if (!stream.ok()) {
      g->CancelAll();
      Status s = stream.status();
      if (prompts.size() > 1) s = Status(s.code(), "prompt[" + std::to_string(i) + "]: " + s.message());
      return SetStatusError(res, s);
    }
    Choice c{std::move(*stream), "", false, Event{}, nullptr};
    if (api == Api::kChat && g->params.stream && g->tools.active()) {
      c.calls = std::make_unique<ToolCallStreamParser>(st.tool_format, g->tools.tools, g->parse_options);
    }
    g->choices.push_back(std::move(c));
  }

  if (g->params.stream) return StreamResponse(g, res);

  while (g->n_left() > 0) {
    size_t i = 0;
    Event ev;
    const Wait w = NextEvent(*g, &i, &ev);
    if (w == Wait::kGone) {
      return SetError(res, 499, "the client closed the connection; the request was cancelled");
    }
    if (w == Wait::kTimeout) return SetError(res, kRequestTimeoutStatus, g->deadline.Message());
    Choice& c = g->choices[i];
    if (ev.type == Event::kToken) {
      c.text += ev.text;
    } else if (ev.type == Event::kDone) {
      c.done = true;
      c.final = std::move(ev);
    } else {
      c.done = true;
      g->CancelAll();
      return SetStatusError(res, ev.error);
    }
  }
  res.set_content(Dump(FinalResponse(*g)), "application/json; charset=utf-8");
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

}  // namespace

void RegisterCompletionRoutes(ServerState& st) {
  auto route = [&st](Api api) {
    return [&st, api](const httplib::Request& req, httplib::Response& res) {
      try {
        HandleGeneration(st, api, req, res);
      } catch (const std::exception& e) {
        SetError(res, 500, std::string("internal error: ") + e.what());
      } catch (...) {
        SetError(res, 500, "internal error");
      }
    };
  };
  for (const char* path : {"/v1/chat/completions", "/chat/completions"})
    st.http.Post(path, route(Api::kChat));
  for (const char* path : {"/v1/completions", "/completions"}) st.http.Post(path, route(Api::kCompletion));
  st.http.Post("/completion", route(Api::kLlama));
  st.http.Post("/apply-template", [&st](const httplib::Request& req, httplib::Response& res) {
    try {
      HandleApplyTemplate(st, req, res);
    } catch (const std::exception& e) {
      SetError(res, 500, std::string("internal error: ") + e.what());
    }
  });
}

}  // namespace lazyslot::server
