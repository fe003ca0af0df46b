// Anthropic's Messages API (POST /v1/messages and /v1/messages/count_tokens) as pure translations: an
// Anthropic request body becomes the equivalent OpenAI chat-completions body, which the chat pipeline runs,
// and a ChatOutcome (or its stream of ChatDeltas) becomes Anthropic's message JSON or its SSE events.
// Nothing here touches HTTP or the engine; errors are kInvalidArgument naming the Anthropic field path
// ("messages[1].content[0].type: ...").
#pragma once

#include <cstdint>
#include <string>

#include "server/generation/chat_outcome.h"
#include "server/generation/openai_params.h"

namespace lazyslot::server {

// ---- Requests
// ----------------------------------------------------------------------------------------------

// Validates a /v1/messages body and returns the OpenAI chat body that asks for the same generation:
//   model -> model; max_tokens (required, >= 1) -> max_tokens; system (a string or text blocks) -> a leading
//   system message; messages (user/assistant/system; content a string or blocks) -> messages, where text is
//   joined, an assistant's tool_use blocks -> tool_calls, its thinking blocks -> reasoning_content
//   (redacted_thinking is dropped: the model cannot read it), and each user tool_result block -> a `tool`
//   message in place (text blocks around them -> user messages); stop_sequences -> stop; temperature, top_p,
//   top_k, stream as they are; tools -> function tools (input_schema -> parameters); tool_choice
//   {auto|any|tool|none} -> "auto" | "required" | {function name} | "none", disable_parallel_tool_use ->
//   parallel_tool_calls false; thinking {enabled|adaptive|disabled} -> chat_template_kwargs.enable_thinking;
//   output_config.format (json_schema) -> response_format. Ignored: metadata, service_tier, cache_control
//   (the slot's prefix cache works without breakpoints), output_config.effort, the signature of thinking
//   blocks. Accepted as a lazyslot extension: chat_template_kwargs (merged; thinking wins on
//   enable_thinking).
// Refused (400 naming the path): unknown top-level fields, image/document and other non-text blocks, server
// tools, a tool_result whose tool_use_id no earlier tool_use block has.
Result<Json> AnthropicToChatBody(const Json& body);

// The same for /v1/messages/count_tokens (its fields: model, messages, system, tools, tool_choice, thinking,
// output_config, cache_control): the chat body whose rendered prompt is counted. It renders exactly as the
// /v1/messages body with the same fields does.
Result<Json> AnthropicCountTokensBody(const Json& body);

// Rewrites an error that the chat pipeline reports with an OpenAI path into the Anthropic request's path:
// "tools[1].function.parameters: ..." -> "tools[1].input_schema: ...", "tools[1].function.name" ->
// "tools[1].name", "response_format.json_schema.schema" -> "output_config.format.schema", "stop" ->
// "stop_sequences", "parallel_tool_calls" -> "tool_choice.disable_parallel_tool_use". Other text unchanged.
std::string AnthropicErrorMessage(const std::string& message);

// ---- Responses
// ---------------------------------------------------------------------------------------------

// "end_turn" (end of generation), "stop_sequence" (a stop string; stop_word set), "max_tokens" (finish
// "length": max_tokens or the slot's context) or "tool_use" (the answer holds calls).
const char* AnthropicStopReason(const ChatOutcome& outcome);

// {input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens}. Anthropic's total
// input is the sum of the first three, so input_tokens = n_prompt - n_cached and cache_read_input_tokens =
// n_cached; nothing is written to a cache on request, so cache_creation_input_tokens is 0.
Json AnthropicUsageJson(int32_t n_prompt, int32_t n_cached, int32_t n_generated);

// The non-streamed answer: {id, type "message", role "assistant", model, content: [thinking block (signature
// ""), text block, tool_use blocks (input parsed)], stop_reason, stop_sequence (string or null), usage}.
Json AnthropicMessageJson(const ChatOutcome& outcome, const std::string& id, const std::string& model);

// The SSE text of one streamed answer. Each call returns zero or more events, "event: NAME\ndata: JSON\n\n":
//   Start   -> message_start (content [], stop_reason null, usage with the prompt's tokens);
//   Delta   -> content_block_start / content_block_delta (text_delta, thinking_delta, input_json_delta) and a
//              content_block_stop for the block it leaves; a thinking block gets an empty signature_delta
//              before its stop; a tool_use block starts with input {} and its arguments stream as
//              partial_json; empty texts send nothing;
//   Finish  -> the open block's stop, message_delta (stop_reason, stop_sequence, usage), message_stop.
// Block indices count from 0 in the order blocks open. Argument fragments of a call whose block is no
// longer open are dropped (the loop sends each call's arguments right after its start).
class AnthropicStreamWriter {
 public:
  std::string Start(const std::string& id, const std::string& model, int32_t n_prompt_tokens,
                    int32_t n_cached_tokens = 0);
  std::string Delta(const ChatDelta& delta);
  std::string Finish(const ChatOutcome& outcome);
  // A keep-alive the SDKs skip ("event: ping"), e.g. while a long prompt is read.
  static std::string Ping();

  int blocks_opened() const { return next_index_; }

 private:
  enum class Block { kNone, kThinking, kText, kToolUse };
  std::string OpenBlock(Block kind, const Json& content_block);
  std::string CloseBlock();

  Block open_ = Block::kNone;
  int open_index_ = -1;
  int open_tool_ = -1;  // tool_index of the open tool_use block
  int next_index_ = 0;
  bool finished_ = false;  // after Finish, every call returns ""
};

// One SSE event: "event: NAME\ndata: JSON\n\n".
std::string AnthropicSseEvent(const std::string& name, const Json& data);

// ---- Errors and count_tokens
// -------------------------------------------------------------------------------

// Anthropic's error type for an HTTP status (docs "Errors"): 400 invalid_request_error (also other 4xx),
// 401 authentication_error, 402 billing_error, 403 permission_error, 404 not_found_error, 413
// request_too_large, 429 rate_limit_error, 500 api_error (also other 5xx), 504 timeout_error, 503 and 529
// overloaded_error.
const char* AnthropicErrorType(int http_status);

// {"type": "error", "error": {"type", "message"}}.
Json AnthropicErrorBody(int http_status, const std::string& message);

// The same as a streamed event: "event: error\ndata: {...}\n\n".
std::string AnthropicErrorEvent(int http_status, const std::string& message);

// {"input_tokens": n}.
Json AnthropicCountTokensJson(int32_t n);

}  // namespace lazyslot::server
