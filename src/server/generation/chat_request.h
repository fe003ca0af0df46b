// A chat completion request made ready for the engine: messages in template form (tool-call arguments as
// objects), rendered with `tools` through the model's template and tokenized; the tool request (tools,
// tool_choice, parallel_tool_calls) and the one grammar that constrains the answer (response_format,
// json_schema, grammar or the tool-call grammar).
#pragma once

#include <vector>

#include "chat/tool_calls.h"
#include "server/generation/chat_stream.h"
#include "server/generation/openai_params.h"
#include "server/generation/output_constraint.h"
#include "server/server_state.h"

namespace lazyslot::server {

struct ChatSetup {
  std::vector<TokenId> prompt;
  ToolRequest tools;                   // tools.active(): the answer is parsed for calls
  ChatParseOptions options;            // how the answer splits into reasoning, content and tool calls
  OutputConstraint constraint;         // gbnf empty: free text
  bool trigger_at_start = false;       // lazy tool grammar of a bare-JSON format: only at the output's start
};

Result<ChatSetup> PrepareChat(const ServerState& st, const ModelContext& m, const Json& body);

// The prompt text a chat body renders to (llama-server's POST /apply-template): the same template, messages
// and tools as PrepareChat, before tokenization.
Result<std::string> RenderChat(const ServerState& st, const ModelContext& m, const Json& body);

}  // namespace lazyslot::server
