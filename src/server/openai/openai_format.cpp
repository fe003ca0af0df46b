// Answers in OpenAI's shapes (chat.completion, chat.completion.chunk, text_completion) and llama-server's
// native /completion shape, with log-probabilities as each defines them: chat `logprobs.content[]`,
// completions' legacy {tokens, token_logprobs, top_logprobs, text_offset} (plus llama-server's `content`),
// native `completion_probabilities`.
#include <cmath>

#include "core/build_info.h"
#include "server/generation/native_params.h"
#include "server/generation/response_format.h"
#include "server/http/errors.h"

namespace lazyslot::server {
namespace {

using OJson = nlohmann::ordered_json;

OJson Bytes(const std::string& s) {
  OJson b = OJson::array();
  for (unsigned char ch : s) b.push_back(static_cast<int>(ch));
  return b;
}

// One token as llama-server and OpenAI list it: {id, token, bytes, logprob} (post-sampling: prob).
OJson TokenEntry(const Generation& g, TokenId id, float logprob) {
  const std::string piece = g.model->engine->tokenizer().TokenToPiece(id, true);
  OJson e = {{"id", id}, {"token", piece}, {"bytes", Bytes(piece)}};
  if (g.logprobs.post_sampling) {
    e["prob"] = std::exp(logprob);
  } else {
    e["logprob"] = logprob;
  }
  return e;
}

OJson ProbEntry(const Generation& g, const TokenRecord& t) {
  OJson e = TokenEntry(g, t.id, t.logprob);
  OJson top = OJson::array();
  for (const TokenLogprob& p : t.top) top.push_back(TokenEntry(g, p.id, p.logprob));
  e[g.logprobs.post_sampling ? "top_probs" : "top_logprobs"] = std::move(top);
  return e;
}

OJson ProbEntries(const Generation& g, const std::vector<TokenRecord>& tokens) {
  OJson out = OJson::array();
  for (const TokenRecord& t : tokens) out.push_back(ProbEntry(g, t));
  return out;
}

// OpenAI's legacy completions logprobs, with llama-server's `content` list beside it.
OJson CompletionLogprobs(const Generation& g, const std::vector<TokenRecord>& tokens, size_t text_offset) {
  const Tokenizer& tk = g.model->engine->tokenizer();
  OJson pieces = OJson::array(), lps = OJson::array(), tops = OJson::array(), offsets = OJson::array();
  for (const TokenRecord& t : tokens) {
    const std::string piece = tk.TokenToPiece(t.id, true);
    pieces.push_back(piece);
    lps.push_back(t.logprob);
    OJson top = OJson::object();
    for (const TokenLogprob& p : t.top) top[tk.TokenToPiece(p.id, true)] = p.logprob;
    tops.push_back(std::move(top));
    offsets.push_back(text_offset);
    text_offset += piece.size();
  }
  return {{"tokens", std::move(pieces)},
          {"token_logprobs", std::move(lps)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)},
          {"content", ProbEntries(g, tokens)}};
}

OJson ChunkBase(const Generation& g, const char* object) {
  OJson j = {{"id", g.id},
             {"object", object},
             {"created", g.created},
             {"model", g.model->model_id},
             {"system_fingerprint", BuildInfo()}};
  if (g.params.include_usage) j["usage"] = nullptr;  // OpenAI: null on every chunk but the last
  return j;
}

std::string UsageAndDone(const Generation& g, const char* object) {
  std::string out;
  if (g.params.include_usage) {
    OJson j = ChunkBase(g, object);
    j["choices"] = OJson::array();
    j["usage"] = Usage(g, g.n_per_prompt);
    // As llama-server: the timings ride on the stream's last chunk (a single choice's; each choice's own
    // are on its finishing chunk too).
    if (g.choices.size() == 1) j["timings"] = Timings(g.choices[0].final);
    out += Sse(j);
  }
  return out + "data: [DONE]\n\n";
}

// llama-server's stop_type: "word" (a stop string), "eos" (end-of-generation token), "limit" (n_predict or
// the context).
const char* StopType(const ChatOutcome& o) {
  if (o.finish_reason == "length") return "limit";
  return o.stop_word.empty() ? "eos" : "word";
}

// llama-server's response_fields: only the listed paths ("a/b" reads j["a"]["b"]), keyed by the path.
OJson SelectFields(const OJson& j, const std::vector<std::string>& paths) {
  OJson out = OJson::object();
  for (const std::string& path : paths) {
    const OJson* cur = &j;
    size_t start = 0;
    bool found = true;
    while (found) {
      const size_t slash = path.find('/', start);
      const std::string key =
          path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      auto it = cur->is_object() ? cur->find(key) : cur->end();
      if (!cur->is_object() || it == cur->end()) {
        found = false;
        break;
      }
      cur = &*it;
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    if (found) out[path] = *cur;
  }
  return out;
}

// llama-server's native answer for choice i: the /completion body, and the `__verbose` of the OpenAI ones.
OJson NativeResult(const Generation& g, size_t i, const ChatOutcome& o, const LlamaFormatOptions& opts,
                   bool streamed) {
  const Choice& c = g.choices[i];
  const Event& f = c.final;
  OJson toks = OJson::array();
  if (opts.return_tokens && !streamed) {
    for (TokenId t : c.tokens) toks.push_back(t);
  }
  // The settings this choice ran with: the server's defaults applied, its own seed.
  OJson settings = GenerationSettingsJson(g.params, *g.model);
  settings["seed"] = g.params.sampling.seed + (i % std::max(1, g.n_per_prompt));
  settings["n_probs"] = g.logprobs.enabled ? g.logprobs.n_top : 0;
  settings["post_sampling_probs"] = g.logprobs.post_sampling;
  settings["timings_per_token"] = g.params.timings_per_token;
  settings["backend_sampling"] = g.params.backend_sampling;
  OJson j = {{"index", i},
             {"content", streamed ? std::string() : o.content},
             {"tokens", std::move(toks)},
             {"id_slot", f.slot},
             {"stop", true},
             {"model", g.model->model_id},
             {"tokens_predicted", f.n_generated},
             {"tokens_evaluated", f.n_prompt},
             {"generation_settings", std::move(settings)},
             {"prompt", opts.prompt_text},
             {"has_new_line", c.text.find('\n') != std::string::npos},
             {"truncated", f.truncated},
             {"stop_type", StopType(o)},
             {"stopping_word", o.stop_word},
             {"tokens_cached", f.n_prompt + std::max(0, f.n_generated - 1)},
             {"timings", Timings(f)}};
  if (!streamed && g.logprobs.enabled) {
    j["completion_probabilities"] = ProbEntries(g, c.probs);
  }
  return opts.response_fields.empty() ? j : SelectFields(j, opts.response_fields);
}

// A whole OpenAI answer around its choices: id, object, created, model, usage (and llama-server's timings
// for a single choice).
OJson FinalBody(const Generation& g, const char* object, OJson choices) {
  OJson j = {{"id", g.id},
             {"object", object},
             {"created", g.created},
             {"model", g.model->model_id},
             {"system_fingerprint", BuildInfo()},
             {"choices", std::move(choices)},
             {"usage", Usage(g, g.n_per_prompt)}};
  if (g.choices.size() == 1) j["timings"] = Timings(g.choices[0].final);
  return j;
}

// llama-server's `verbose`: the first choice's native answer beside the OpenAI one.
void AddVerbose(const Generation& g, const std::vector<ChatOutcome>& outcomes, OJson* body) {
  if (!g.params.verbose || outcomes.empty()) return;
  LlamaFormatOptions opts;
  opts.return_tokens = true;
  opts.prompt_text = g.verbose_prompt;
  (*body)["__verbose"] = NativeResult(g, 0, outcomes[0], opts, false);
}

OJson ToolCallsJson(const std::vector<ToolCall>& calls) {
  OJson out = OJson::array();
  for (const ToolCall& call : calls) {
    out.push_back({{"id", call.id},
                   {"type", "function"},
                   {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  }
  return out;
}

class OpenAiChatFormat : public ResponseFormat {
 public:
  std::string StreamStart(const Generation& g) override {
    pending_.assign(g.choices.size(), {});
    std::string out;
    // Every chat stream opens with the role and no content yet (null, as llama-server sends it).
    for (size_t i = 0; i < g.choices.size(); ++i) {
      out += Chunk(g, i, {{"role", "assistant"}, {"content", nullptr}}, nullptr, nullptr);
    }
    return out;
  }

  std::string StreamToken(const Generation& g, size_t i, const std::vector<ChatDelta>& deltas,
                          const TokenRecord* token) override {
    if (token) pending_[i].push_back(*token);
    std::string out;
    for (const ChatDelta& d : deltas) {
      OJson delta;
      switch (d.kind) {
        case ChatDelta::kReasoning:
          delta = {{"reasoning_content", d.text}};
          break;
        case ChatDelta::kContent:
          delta = {{"content", d.text}};
          break;
        case ChatDelta::kToolCallStart:
          delta = {{"tool_calls", OJson::array({{{"index", d.tool_index},
                                                 {"id", d.id},
                                                 {"type", "function"},
                                                 {"function", {{"name", d.name}, {"arguments", ""}}}}})}};
          break;
        case ChatDelta::kToolCallArguments:
          delta = {{"tool_calls",
                    OJson::array({{{"index", d.tool_index}, {"function", {{"arguments", d.text}}}}})}};
          break;
      }
      // Log-probabilities ride on the next content or reasoning chunk (text held back by the tool-call
      // parser keeps its tokens' records until then).
      const bool text = d.kind == ChatDelta::kContent || d.kind == ChatDelta::kReasoning;
      out +=
          Chunk(g, i, std::move(delta), text ? &pending_[i] : nullptr, nullptr, g.params.timings_per_token);
    }
    return out;
  }

  std::string StreamProgress(const Generation& g, size_t i, const Event& p) override {
    OJson j = ChunkBase(g, "chat.completion.chunk");
    j["choices"] = OJson::array(
        {{{"index", i}, {"delta", OJson::object()}, {"logprobs", nullptr}, {"finish_reason", nullptr}}});
    j["prompt_progress"] = ProgressJson(p);
    return Sse(j);
  }

  std::string StreamChoiceEnd(const Generation& g, size_t i, const ChatOutcome& o) override {
    return Chunk(g, i, OJson::object(), &pending_[i], &o);
  }

  std::string StreamClose(const Generation& g) override { return UsageAndDone(g, "chat.completion.chunk"); }

  OJson Final(const Generation& g, const std::vector<ChatOutcome>& outcomes) override {
    OJson choices = OJson::array();
    for (size_t i = 0; i < outcomes.size(); ++i) {
      const ChatOutcome& o = outcomes[i];
      OJson m = {{"role", "assistant"}};
      // OpenAI sends content null when the answer is only calls.
      m["content"] = o.content.empty() && !o.tool_calls.empty() ? OJson() : OJson(o.content);
      if (!o.reasoning.empty()) m["reasoning_content"] = o.reasoning;
      if (!o.tool_calls.empty()) m["tool_calls"] = ToolCallsJson(o.tool_calls);
      OJson lp;
      if (g.logprobs.enabled) lp = {{"content", ProbEntries(g, g.choices[i].probs)}, {"refusal", nullptr}};
      choices.push_back({{"index", i},
                         {"message", std::move(m)},
                         {"logprobs", std::move(lp)},
                         {"finish_reason", o.finish_reason}});
    }
    OJson body = FinalBody(g, "chat.completion", std::move(choices));
    AddVerbose(g, outcomes, &body);
    return body;
  }

 private:
  // One chunk for choice i; `probs` (taken and cleared) become its logprobs; `end` makes it the last;
  // `timings`: the choice's timings so far (timings_per_token).
  std::string Chunk(const Generation& g, size_t i, OJson delta, std::vector<TokenRecord>* probs,
                    const ChatOutcome* end, bool timings = false) {
    OJson j = ChunkBase(g, "chat.completion.chunk");
    OJson lp;
    if (g.logprobs.enabled && probs && !probs->empty()) {
      lp = {{"content", ProbEntries(g, *probs)}, {"refusal", nullptr}};
      probs->clear();
    }
    j["choices"] = OJson::array({{{"index", i},
                                  {"delta", std::move(delta)},
                                  {"logprobs", std::move(lp)},
                                  {"finish_reason", end ? OJson(end->finish_reason) : OJson()}}});
    if (end) {
      j["timings"] = Timings(g.choices[i].final);
    } else if (timings) {
      j["timings"] = TimingsSoFar(g.choices[i]);
    }
    return Sse(j);
  }

  std::vector<std::vector<TokenRecord>> pending_;
};

class OpenAiCompletionFormat : public ResponseFormat {
 public:
  std::string StreamStart(const Generation& g) override {
    offsets_.assign(g.choices.size(), 0);
    return "";
  }

  std::string StreamToken(const Generation& g, size_t i, const std::vector<ChatDelta>& deltas,
                          const TokenRecord* token) override {
    std::string text;
    for (const ChatDelta& d : deltas) text += d.text;
    if (text.empty() && !token) return "";
    OJson lp;
    if (g.logprobs.enabled && token) lp = CompletionLogprobs(g, {*token}, offsets_[i]);
    offsets_[i] += text.size();
    return Chunk(g, i, text, std::move(lp), nullptr);
  }

  std::string StreamProgress(const Generation& g, size_t i, const Event& p) override {
    OJson j = ChunkBase(g, "text_completion");
    j["choices"] =
        OJson::array({{{"text", ""}, {"index", i}, {"logprobs", nullptr}, {"finish_reason", nullptr}}});
    j["prompt_progress"] = ProgressJson(p);
    return Sse(j);
  }

  std::string StreamChoiceEnd(const Generation& g, size_t i, const ChatOutcome& o) override {
    return Chunk(g, i, "", OJson(), &o);
  }

  std::string StreamClose(const Generation& g) override { return UsageAndDone(g, "text_completion"); }

  OJson Final(const Generation& g, const std::vector<ChatOutcome>& outcomes) override {
    OJson choices = OJson::array();
    for (size_t i = 0; i < outcomes.size(); ++i) {
      OJson lp;
      if (g.logprobs.enabled) lp = CompletionLogprobs(g, g.choices[i].probs, 0);
      choices.push_back({{"text", outcomes[i].content},
                         {"index", i},
                         {"logprobs", std::move(lp)},
                         {"finish_reason", outcomes[i].finish_reason}});
    }
    OJson body = FinalBody(g, "text_completion", std::move(choices));
    AddVerbose(g, outcomes, &body);
    return body;
  }

 private:
  std::string Chunk(const Generation& g, size_t i, const std::string& text, OJson lp,
                    const ChatOutcome* end) {
    OJson j = ChunkBase(g, "text_completion");
    j["choices"] = OJson::array({{{"text", text},
                                  {"index", i},
                                  {"logprobs", std::move(lp)},
                                  {"finish_reason", end ? OJson(end->finish_reason) : OJson()}}});
    if (end) {
      j["timings"] = Timings(g.choices[i].final);
    } else if (g.params.timings_per_token) {
      j["timings"] = TimingsSoFar(g.choices[i]);
    }
    return Sse(j);
  }

  std::vector<size_t> offsets_;
};

class LlamaFormat : public ResponseFormat {
 public:
  explicit LlamaFormat(LlamaFormatOptions o) : o_(std::move(o)) {}

  std::string StreamStart(const Generation& g) override {
    n_sent_.assign(g.choices.size(), 0);
    return "";
  }

  std::string StreamToken(const Generation& g, size_t i, const std::vector<ChatDelta>& deltas,
                          const TokenRecord* token) override {
    std::string text;
    for (const ChatDelta& d : deltas) text += d.text;
    const Choice& c = g.choices[i];
    const bool has_token = token != nullptr || (!c.tokens.empty() && n_sent_[i] < c.tokens.size());
    if (text.empty() && !has_token) return "";
    // The token ids since the last chunk (llama-server streams them whatever return_tokens says).
    OJson toks = OJson::array();
    for (size_t k = n_sent_[i]; k < c.tokens.size(); ++k) toks.push_back(c.tokens[k]);
    n_sent_[i] = c.tokens.size();
    OJson j = {{"index", i},
               {"content", text},
               {"tokens", std::move(toks)},
               {"stop", false},
               {"id_slot", c.slot},
               {"tokens_predicted", c.tokens.size()},
               {"tokens_evaluated", c.n_prompt}};
    if (g.logprobs.enabled && token) j["completion_probabilities"] = OJson::array({ProbEntry(g, *token)});
    if (g.params.timings_per_token) j["timings"] = TimingsSoFar(c);
    return Sse(j);
  }

  std::string StreamProgress(const Generation& g, size_t i, const Event& p) override {
    (void)g;
    OJson j = {{"index", i}, {"content", ""}, {"stop", false}, {"prompt_progress", ProgressJson(p)}};
    return Sse(j);
  }

  std::string StreamChoiceEnd(const Generation& g, size_t i, const ChatOutcome& o) override {
    return Sse(Result(g, i, o, /*streamed=*/true));
  }

  OJson Final(const Generation& g, const std::vector<ChatOutcome>& outcomes) override {
    OJson all = OJson::array();
    for (size_t i = 0; i < outcomes.size(); ++i) all.push_back(Result(g, i, outcomes[i], false));
    return all.size() == 1 ? all[0] : all;
  }

 private:
  OJson Result(const Generation& g, size_t i, const ChatOutcome& o, bool streamed) const {
    return NativeResult(g, i, o, o_, streamed);
  }

  LlamaFormatOptions o_;
  std::vector<size_t> n_sent_;
};

}  // namespace

std::string ResponseFormat::StreamError(int http_status, const std::string& message) {
  return Sse(ErrorBody(http_status, message));
}

void ResponseFormat::SetError(httplib::Response& res, const Status& status) { SetStatusError(res, status); }
void ResponseFormat::SetContextError(httplib::Response& res, int64_t n_prompt, int64_t n_ctx,
                                     const std::string& message) {
  SetContextSizeError(res, n_prompt, n_ctx, message);
}
void ResponseFormat::SetHttpError(httplib::Response& res, int http_status, const std::string& message) {
  server::SetError(res, http_status, message);
}

std::unique_ptr<ResponseFormat> MakeOpenAiChatFormat() { return std::make_unique<OpenAiChatFormat>(); }
std::unique_ptr<ResponseFormat> MakeOpenAiCompletionFormat() {
  return std::make_unique<OpenAiCompletionFormat>();
}
std::unique_ptr<ResponseFormat> MakeLlamaFormat(LlamaFormatOptions options) {
  return std::make_unique<LlamaFormat>(std::move(options));
}

}  // namespace lazyslot::server
