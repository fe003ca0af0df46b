// The generation loop shared by every text route (OpenAI chat and completions, llama-server's /completion
// and /infill, Anthropic Messages, OpenAI Responses): one HTTP request's choices (a list of prompts, `n`
// choices of each) submitted to the engine, and their events read back in arrival order, with the client's
// disconnect and --request-timeout checked while waiting. The routes only parse requests and shape answers.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/generation/chat_outcome.h"
#include "server/generation/chat_stream.h"
#include "server/generation/openai_params.h"
#include "server/http/server_limits.h"
#include "server/server_state.h"

namespace lazyslot::server {

// One generated token, kept when the request asked for log-probabilities.
struct TokenRecord {
  TokenId id = -1;
  float logprob = 0;
  std::vector<TokenLogprob> top;
};

struct Choice {
  std::shared_ptr<RequestStream> stream;
  size_t prompt_index = 0;                        // which prompt of the request's list
  std::string text;                               // every text delta so far
  std::vector<TokenId> tokens;                    // generated tokens (llama-server's `tokens`)
  std::vector<TokenRecord> probs;                 // per token, with logprobs requested
  int slot = -1;                                  // the engine slot running it (from its events)
  int32_t n_prompt = 0, n_cached = 0;             // from its events (progress, token, done)
  double prompt_ms = 0, generation_ms = 0;        // from its latest token event
  std::chrono::steady_clock::time_point t_first;  // its first token's arrival
  bool done = false;
  Event final;                       // the kDone event
  std::unique_ptr<ChatStream> chat;  // streamed chat: reasoning and tool calls split as text arrives
};

// Log-probabilities a request asked for.
struct LogprobRequest {
  bool enabled = false;
  int32_t n_top = 0;           // alternatives per token
  bool post_sampling = false;  // llama-server's post_sampling_probs: probabilities, after sampling
};

// One HTTP request's generations and what is needed to answer it.
struct Generation {
  ServerState* st = nullptr;
  ModelRef model;  // the model answering (its lease held until the answer is written)
  std::string id;
  int64_t created = 0;
  GenerationParams params;
  bool chat = false;  // a chat API: text is split by ChatStream / ParseChatOutput
  ChatParseOptions chat_options;
  LogprobRequest logprobs;
  int n_per_prompt = 1;  // `n`
  std::string verbose_prompt;  // params.verbose: the first prompt as text, special tokens shown
  std::vector<Choice> choices;
  std::unique_ptr<ActiveRequest> active;  // counted while the answer is being produced (the drain waits)
  int fd = -1;           // the client's socket, for noticing a disconnect (-1: unknown)
  Deadline deadline{0};  // --request-timeout, counted from the request's arrival (queue wait included)
  std::chrono::steady_clock::time_point t_start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_check = std::chrono::steady_clock::now();
  bool cancelled = false;
  // A streamed answer whose request sent X-Conversation-Id: every byte also goes here, and the generation
  // goes on if the client leaves (fd is then -1), until it is done or the session is stopped.
  std::shared_ptr<StreamSession> session;

  void CancelAll();
  size_t n_left() const;
};

// kGone: the client left; kShutdown: the server stops (its drain is over).
enum class Wait { kEvent, kGone, kShutdown, kTimeout };

// Next event from any unfinished choice. Checks the client's socket when idle and at least every 100 ms;
// on a disconnect or server stop, cancels every choice and returns kGone; past the request's deadline,
// cancels every choice and returns kTimeout.
Wait NextEvent(Generation& g, size_t* index, Event* ev);

// Adds a kToken event to its choice: text, token id, and its log-probabilities when requested.
void RecordToken(const Generation& g, Choice& c, const Event& ev);

// A finished choice as a ChatOutcome: counts and reasons from its kDone event; chat text split into
// reasoning, content and tool calls (finish_reason "tool_calls" when there are calls).
ChatOutcome MakeOutcome(const Generation& g, const Choice& c);

// Submits `n` choices of every prompt (prompt-major: choice index = prompt * n + j). Choices after the
// first of a prompt copy its prompt KV (GenerationRequest::share_prompt_of) and draw with seed + j; only the
// first goes to base.id_slot. More choices than slots wait in the queue and reuse the prompt's KV kept in
// the slot they get. On an error nothing stays submitted; with several prompts the message names the prompt.
Status SubmitChoices(Generation& g, std::vector<std::vector<TokenId>> prompts, const GenerationRequest& base,
                     int n);

// OpenAI usage over all choices: prompt_tokens (each prompt once), completion_tokens, total_tokens,
// prompt_tokens_details.cached_tokens.
nlohmann::json Usage(const Generation& g, int n_per_prompt);

// llama-server's timings object; prompt_n counts the prompt tokens computed by this request (cache_n the
// reused ones).
nlohmann::json Timings(const Event& done);

// Choice c's timings so far (its latest token event), for llama-server's timings_per_token: the prompt and
// the tokens generated until now.
nlohmann::json TimingsSoFar(const Choice& c);

// llama-server's prompt_progress object of a kProgress event: {total, cache, processed, time_ms}.
nlohmann::json ProgressJson(const Event& progress);

// One server-sent event: "data: {json}\n\n".
std::string Sse(const nlohmann::json& j);

}  // namespace lazyslot::server
