// The shared generation loop (see generation.h): submitting choices, waiting for their events, usage and
// timings.
#include "server/generation/generation.h"

#include "server/http/connection.h"
#include "server/http/errors.h"

namespace lazyslot::server {

using Clock = std::chrono::steady_clock;

void Generation::CancelAll() {
  for (Choice& c : choices) {
    if (!c.done) c.stream->Cancel();
  }
  cancelled = true;
}

size_t Generation::n_left() const {
  size_t n = 0;
  for (const Choice& c : choices) n += c.done ? 0 : 1;
  return n;
}

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
        if (g.st->stopping.load()) {
          g.CancelAll();
          return Wait::kShutdown;
        }
        if (!PeerClosed(g.fd) && !(g.session && g.session->cancelled())) return Wait::kEvent;
        g.CancelAll();
        return Wait::kGone;
      }
    }
    g.last_check = Clock::now();
    if (g.st->stopping.load()) {
      g.CancelAll();
      return Wait::kShutdown;
    }
    if (PeerClosed(g.fd) || (g.session && g.session->cancelled())) {  // DELETE /v1/stream stops it too
      g.st->streams_disconnected.fetch_add(1);
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

void RecordToken(const Generation& g, Choice& c, const Event& ev) {
  if (ev.slot >= 0) c.slot = ev.slot;
  if (c.tokens.empty() && ev.token >= 0) c.t_first = Clock::now();
  if (ev.token >= 0 && ev.n_prompt > 0) {
    c.n_prompt = ev.n_prompt;
    c.n_cached = ev.n_cached;
    c.prompt_ms = ev.prompt_ms;
    c.generation_ms = ev.generation_ms;
  }
  c.text += ev.text;
  if (ev.token < 0) return;
  c.tokens.push_back(ev.token);
  if (g.logprobs.enabled) c.probs.push_back({ev.token, ev.logprob, ev.top_logprobs});
}

Status SubmitChoices(Generation& g, std::vector<std::vector<TokenId>> prompts, const GenerationRequest& base,
                     int n) {
  for (size_t i = 0; i < prompts.size(); ++i) {
    const int32_t n_prompt = static_cast<int32_t>(prompts[i].size());
    uint64_t first = 0;
    for (int j = 0; j < n; ++j) {
      GenerationRequest gr = base;
      gr.prompt = j + 1 < n ? prompts[i] : std::move(prompts[i]);
      gr.sampling.seed = base.sampling.seed + static_cast<uint64_t>(j);
      gr.share_prompt_of = first;
      // id_slot places the prompt's first choice (as llama-server places its parent task); the others take
      // any slot, copying the prompt from it.
      if (j > 0) gr.id_slot = -1;
      Result<std::shared_ptr<RequestStream>> stream = g.model->engine->Submit(std::move(gr));
      if (!stream.ok()) {
        g.CancelAll();
        Status s = stream.status();
        if (prompts.size() > 1) s = Status(s.code(), "prompt[" + std::to_string(i) + "]: " + s.message());
        return s;
      }
      if (j == 0) first = (*stream)->id();
      Choice c;
      c.stream = std::move(*stream);
      c.prompt_index = i;
      c.n_prompt = n_prompt;
      g.choices.push_back(std::move(c));
    }
  }
  return Status::Ok();
}

nlohmann::json Usage(const Generation& g, int n_per_prompt) {
  int64_t prompt = 0, completion = 0, cached = 0;
  for (size_t i = 0; i < g.choices.size(); ++i) {
    const Choice& c = g.choices[i];
    // n choices of one prompt read it once (the others copy its KV), as OpenAI counts it.
    if (n_per_prompt <= 1 || i % n_per_prompt == 0) {
      prompt += c.final.n_prompt;
      cached += c.final.n_cached;
    }
    completion += c.final.n_generated;
  }
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

nlohmann::json Timings(const Event& done) {
  const double gen_s = done.generation_ms / 1000.0, prompt_s = done.prompt_ms / 1000.0;
  const int32_t computed = done.n_prompt - done.n_cached;
  return {{"cache_n", done.n_cached},
          {"prompt_n", computed},
          {"prompt_ms", done.prompt_ms},
          {"prompt_per_token_ms", computed > 0 ? done.prompt_ms / computed : 0.0},
          {"prompt_per_second", prompt_s > 0 ? computed / prompt_s : 0.0},
          {"predicted_n", done.n_generated},
          {"predicted_ms", done.generation_ms},
          {"predicted_per_token_ms", done.n_generated > 0 ? done.generation_ms / done.n_generated : 0.0},
          {"predicted_per_second", gen_s > 0 ? done.n_generated / gen_s : 0.0}};
}

nlohmann::json TimingsSoFar(const Choice& c) {
  Event partial;  // the prompt is done, generation is under way
  partial.n_prompt = c.n_prompt;
  partial.n_cached = c.n_cached;
  partial.n_generated = static_cast<int32_t>(c.tokens.size());
  partial.prompt_ms = c.prompt_ms;
  partial.generation_ms = c.generation_ms;
  return Timings(partial);
}

nlohmann::json ProgressJson(const Event& p) {
  return {{"total", p.n_prompt},
          {"cache", p.n_cached},
          {"processed", p.n_prompt_processed},
          {"time_ms", p.prompt_ms}};
}

ChatOutcome MakeOutcome(const Generation& g, const Choice& c) {
  const Event& done = c.final;
  ChatOutcome o;
  o.finish_reason = done.finish_reason;
  o.stop_word = done.stop_word;
  o.n_prompt = done.n_prompt;
  o.n_generated = done.n_generated;
  o.n_cached = done.n_cached;
  if (!g.chat) {
    o.content = c.text;
    return o;
  }
  ParseChatOutput(c.text, g.chat_options, &o);
  if (!o.tool_calls.empty()) o.finish_reason = "tool_calls";
  return o;
}

std::string Sse(const nlohmann::json& j) { return "data: " + Dump(j) + "\n\n"; }

}  // namespace lazyslot::server
