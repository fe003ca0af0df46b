// OpenAI wire-form chat messages to the form Hugging Face chat templates expect (what transformers'
// apply_chat_template is given): tool-call arguments as objects, never null assistant content.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace lazyslot {

// Returns a copy of `messages` (a JSON array of message objects) in which, for each assistant message:
//   - tool_calls[i].function.arguments, when a string, is parsed as JSON (objects keep their key order);
//     text that is not valid JSON is InvalidArgument naming it, e.g.
//     "messages[2].tool_calls[0].function.arguments is not valid JSON: ...";
//   - content that is null or missing (a turn that only calls tools) becomes "": templates test and
//     concatenate content as a string (Qwen3's `'</think>' in message.content` fails on None).
// Every other field and message (tool messages with tool_call_id and name included) is copied unchanged.
// Cost: one deep copy of the messages plus the parsed arguments.
Result<nlohmann::ordered_json> PrepareMessagesForTemplate(const nlohmann::ordered_json& messages);

// The text that a continued (prefilled) assistant message adds after the generation prompt, as llama-server
// appends it (common_chat_msg::render_content): a string as it is; a list of parts, the "text" of its
// {"type": "text"} parts (and plain string parts) joined by a blank line, "\n\n", where a template's history
// gets them joined by "\n". Anything else adds nothing.
// E.g. [{"type": "text", "text": "Wh"}, {"type": "text", "text": "ill"}] -> "Wh\n\nill".
std::string ContinuationText(const nlohmann::ordered_json& content);

}  // namespace lazyslot
