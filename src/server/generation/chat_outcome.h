// One chat choice in API-neutral form: what the generation loop hands to the formatter of each chat API
// (OpenAI chat completions, Anthropic Messages, OpenAI Responses). The loop splits reasoning from content
// (chat/reasoning.h) and tool calls from content (chat/tool_calls.h); formatters only shape JSON and SSE.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/tool_calls.h"

namespace lazyslot::server {

// One streamed change of a choice, in the order the model wrote it.
struct ChatDelta {
  enum Kind {
    kReasoning,          // `text`: more reasoning (thinking) text
    kContent,            // `text`: more answer text
    kToolCallStart,      // a new call: `tool_index` (0, 1, ...), `id`, `name`
    kToolCallArguments,  // `text`: a fragment of call `tool_index`'s arguments (JSON text)
  };
  Kind kind = kContent;
  int tool_index = -1;
  std::string text;
  std::string id, name;
};

// A finished choice.
struct ChatOutcome {
  std::string content;    // the answer text (reasoning and tool-call markup removed)
  std::string reasoning;  // the reasoning text; empty when the model did not think or it was not split
  std::vector<ToolCall> tool_calls;
  // "stop": end-of-generation token or a stop string; "length": max_tokens or the slot's context;
  // "tool_calls": the answer holds calls.
  std::string finish_reason;
  std::string stop_word;    // the stop string that ended generation, empty otherwise
  int32_t n_prompt = 0;     // prompt tokens
  int32_t n_generated = 0;  // generated tokens
  int32_t n_cached = 0;     // prompt tokens whose KV was reused
};

}  // namespace lazyslot::server
