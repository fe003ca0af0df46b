// OpenAI's Responses API (POST /v1/responses), stateless, as translation around the chat pipeline: a
// Responses request becomes an equivalent chat-completions body, and one chat choice (ChatDelta stream,
// ChatOutcome) becomes a `response` object or the Responses SSE event stream. Pure functions: no I/O, no
// clock, no randomness (ids and times come from the caller). Request side in responses_api.cpp, output
// side in responses_output.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/generation/chat_outcome.h"
#include "server/generation/openai_params.h"

namespace lazyslot::server {

// Validates a Responses request body (an object) and returns the chat-completions body that asks for the
// same generation: `messages` from `instructions` and `input`, `max_tokens` from `max_output_tokens`,
// `response_format` from `text.format`, function `tools` in chat's nested form, `tool_choice`,
// `chat_template_kwargs` from `reasoning.effort`; temperature, top_p, stream, parallel_tool_calls and
// lazyslot's sampling extensions (seed, top_k, min_p, stop, ...) are copied. Every error is
// kInvalidArgument whose message starts with the offending path ("input[2].type: ..."): unknown fields,
// state this server cannot keep (previous_response_id, conversation, item_reference, background, prompt)
// and features it does not have (built-in tools, images, files, logprobs).
Result<Json> ResponsesToChatBody(const Json& body);

// A chat-pipeline error about the body ResponsesToChatBody made, with its field renamed to the Responses
// request's ("response_format.json_schema.schema: ..." -> "text.format.schema: ...", "tools[1].function.x"
// -> "tools[1].x", "max_tokens" -> "max_output_tokens", "messages..." -> "input"). Other statuses pass.
Status ChatErrorToResponses(const Status& status);

// The request settings a `response` object repeats, from a body ResponsesToChatBody accepted, with the
// API's values for absent ones: instructions, max_output_tokens, metadata, parallel_tool_calls, previous_
// response_id, reasoning, store, temperature, text, tool_choice, tools, top_p, truncation, user, ...
// (temperature and top_p are null when absent: the server's defaults apply).
Json ResponsesRequestEcho(const Json& body);

// The `response` object of a finished choice: output items in the order reasoning, message, function
// calls (item ids derived from `id`: "resp_X" -> "rs_X_0", "msg_X_1", "fc_X_2"), status "completed", or
// "incomplete" with incomplete_details.reason "max_output_tokens" when finish_reason is "length" (the last
// item is then "incomplete"), usage, and the `request_echo` fields. With no text and no call, the output
// still holds one message with empty text. `completed_at` < 0: `created`; it is only set when completed.
// output_text is not sent: OpenAI's SDKs compute it from the message items.
Json ResponsesObjectJson(const ChatOutcome& outcome, const std::string& id, const std::string& model,
                         int64_t created, const Json& request_echo, int64_t completed_at = -1);

// The Responses streaming protocol for one choice, as SSE text ("event: NAME\ndata: {json}\n\n"); each event
// has "type" and a "sequence_number" counting from 0. Use: Start(), then Delta() for every ChatDelta in
// order, then Finish() (or Fail()). An output item is opened by the first delta of its kind and closed
// (its .done events) when a delta of another kind arrives or at Finish, so items appear in the order the
// model wrote them. The completed response carries exactly the streamed text: the deltas must hold all of
// it (the outcome supplies only finish_reason and token counts).
class ResponsesStreamWriter {
 public:
  ResponsesStreamWriter(std::string id, std::string model, int64_t created, Json request_echo);

  // response.created and response.in_progress (status "in_progress", empty output).
  std::string Start();
  // llama-server's return_progress: another response.in_progress with `prompt_progress` beside `response`.
  std::string Progress(const Json& prompt_progress);
  // Reasoning -> a reasoning item (response.reasoning_text.delta); content -> a message item with one
  // output_text part (response.output_text.delta); kToolCallStart -> a function_call item, whose arguments
  // arrive as response.function_call_arguments.delta. Empty text adds nothing. `extra` (an object, e.g.
  // llama-server's {"timings": ...}) goes into the delta event beside its fields.
  std::string Delta(const ChatDelta& delta, const Json& extra = Json());
  // Closes the open item and sends response.completed, or response.incomplete when finish_reason is
  // "length" (the open item then ends "incomplete"); `extra` goes into that last event.
  std::string Finish(const ChatOutcome& outcome, int64_t completed_at = -1, const Json& extra = Json());
  // A failure after Start: an `error` event {code, message, param: null}, then response.failed whose
  // response has status "failed", error {code, message} and the items so far.
  std::string Fail(const std::string& message, const std::string& code = "server_error");

  bool finished() const { return finished_; }

 private:
  enum class ItemKind { kNone, kReasoning, kMessage, kFunctionCall };
  struct Item {
    ItemKind kind = ItemKind::kNone;
    std::string id;
    std::string text;           // reasoning or message text; a call's arguments
    std::string call_id, name;  // function calls
    int tool_index = -1;
    std::string status;  // "in_progress" until closed
  };

  std::string Event(const std::string& type, Json payload);
  std::string Open(Item item);
  std::string CloseOpen(const std::string& status);
  // with_parts false: the item as output_item.added sends it (content parts follow as their own events).
  Json ItemJson(const Item& item, bool with_parts) const;
  Json ResponseJson(const std::string& status, int64_t completed_at, Json error, Json usage) const;

  std::string id_, model_;
  int64_t created_ = 0;
  Json echo_;
  int64_t sequence_ = 0;
  std::vector<Item> items_;
  bool open_ = false;  // items_.back() is open
  bool finished_ = false;
};

}  // namespace lazyslot::server
