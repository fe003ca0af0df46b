// How one API shapes a generation's answer: the whole JSON body, or the SSE text of a stream. The loop in
// serve_generation.cpp calls these in order: StreamStart once, StreamToken per engine token (with the
// deltas its text produced), StreamProgress for prompt progress (when asked), StreamChoiceEnd per finished
// choice, StreamClose after the last; or Final once. Formats: OpenAI chat and completions and llama-server's
// native answer (openai_format.cpp), Anthropic Messages (anthropic/routes_messages.cpp) and OpenAI Responses
// (responses/routes_responses.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/generation/generation.h"
#include "server/generation/native_params.h"
#include "server/generation/output_constraint.h"

namespace lazyslot::server {

class ResponseFormat {
 public:
  virtual ~ResponseFormat() = default;
  virtual std::string StreamStart(const Generation& g) = 0;
  // Choice i produced `deltas` from one token (`token`: its record, null without logprobs or for text
  // flushed at the end).
  virtual std::string StreamToken(const Generation& g, size_t i, const std::vector<ChatDelta>& deltas,
                                  const TokenRecord* token) = 0;
  virtual std::string StreamProgress(const Generation& g, size_t i, const Event& progress) {
    (void)g, (void)i, (void)progress;
    return "";
  }
  virtual std::string StreamChoiceEnd(const Generation& g, size_t i, const ChatOutcome& outcome) = 0;
  // After the last choice (OpenAI: usage and [DONE]); nothing by default.
  virtual std::string StreamClose(const Generation& g) {
    (void)g;
    return "";
  }
  // A failure after the stream started (the HTTP status is already 200); by default an OpenAI error body.
  virtual std::string StreamError(int http_status, const std::string& message);
  // The whole answer; outcomes[i] belongs to g.choices[i].
  virtual nlohmann::ordered_json Final(const Generation& g, const std::vector<ChatOutcome>& outcomes) = 0;
  // An error answer before any stream started (or instead of the whole answer).
  virtual void SetError(httplib::Response& res, const Status& status);
  virtual void SetHttpError(httplib::Response& res, int http_status, const std::string& message);
  // A prompt longer than the context (llama-server's exceed_context_size_error by default).
  virtual void SetContextError(httplib::Response& res, int64_t n_prompt, int64_t n_ctx,
                               const std::string& message);
};

enum class TextApi { kChat, kCompletion, kLlama };

// Options of llama-server's native answer (/completion, /infill).
struct LlamaFormatOptions {
  bool return_tokens = false;
  std::vector<std::string> response_fields;  // non-empty: only these (paths like "generation_settings/seed")
  std::string prompt_text;
};

std::unique_ptr<ResponseFormat> MakeOpenAiChatFormat();
std::unique_ptr<ResponseFormat> MakeOpenAiCompletionFormat();
std::unique_ptr<ResponseFormat> MakeLlamaFormat(LlamaFormatOptions options);

// Runs a submitted generation to its end and writes the answer with `format`: SSE when g->params.stream.
void ServeGeneration(std::shared_ptr<Generation> g, std::shared_ptr<ResponseFormat> format,
                     httplib::Response& res);

// A parsed text request, ready to run (run_text.cpp; the routes of each API fill it).
struct TextRun {
  std::string id;
  Deadline deadline{0};
  GenerationParams params;
  LogprobRequest logprobs;
  bool chat = false;
  ChatParseOptions chat_options;
  std::vector<std::vector<TokenId>> prompts;
  OutputConstraint constraint;
  bool trigger_at_start = false;
  std::shared_ptr<ResponseFormat> format;
};

// The fields every text route reads into `run` (route-specific ones aside): generation parameters over the
// server's defaults, log-probabilities, logit_bias, and for the non-chat routes the output constraint.
Status ReadTextFields(const ServerState& st, const ModelContext& m, const Json& body, TextApi api,
                      TextRun* run);

// llama-server's native answer for `run` (its prompts already set): the native format with return_tokens,
// response_fields and the prompt text.
void AnswerNatively(const ModelContext& m, const NativeOptions& native, TextRun* run);

// Checks what needs the engine (prompts x n against the slots and queue, prompts against the context),
// applies the server's
// defaults (random seed, -n, --max-tokens-cap, repeat_last_n -1), submits and serves the answer. The request
// keeps `model` (its lease) until the answer is written.
void RunTextGeneration(ServerState& st, ModelRef model, TextRun run, const httplib::Request& req,
                       httplib::Response& res);

// A chat-completions body translated from another API (Anthropic Messages, OpenAI Responses) run through the
// chat pipeline and answered by `format` in that API's shapes.
void RunChatBody(ServerState& st, ModelRef model, const Json& chat_body, std::string id,
                 std::shared_ptr<ResponseFormat> format, const Deadline& deadline, const httplib::Request& req,
                 httplib::Response& res);

// InvalidArgument when n_prompts x n choices exceed what the queue can ever hold at once (--max-queue: they
// are all queued before any is admitted; the request's fault, 400, not overload).
Status CheckPromptCount(const ModelContext& m, size_t n_prompts, int n);

}  // namespace lazyslot::server
