// A chat answer's text split into reasoning, content and tool calls, streamed or whole: the reasoning
// parser (chat/reasoning.h) runs first, and the content it leaves goes through the tool-call parser
// (chat/tool_calls.h). Streamed deltas concatenate to what the whole-text split gives.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "chat/reasoning.h"
#include "chat/tool_calls.h"
#include "server/generation/chat_outcome.h"

namespace lazyslot::server {

struct ChatParseOptions {
  ReasoningOptions reasoning;  // syntax kNone or format kNone: no split
  bool tools_active = false;   // the request offered tools (and tool_choice is not none)
  ToolCallFormat tool_format = ToolCallFormat::kGeneric;
  std::vector<ToolSpec> tools;
  ToolCallParseOptions tool_options;
  bool splits_reasoning() const;
};

// The whole output -> outcome->content, reasoning and tool_calls (other fields untouched).
void ParseChatOutput(std::string_view text, const ChatParseOptions& options, ChatOutcome* outcome);

class ChatStream {
 public:
  explicit ChatStream(ChatParseOptions options);
  ~ChatStream();
  std::vector<ChatDelta> Feed(std::string_view text);
  std::vector<ChatDelta> Finish();

 private:
  void Route(const std::vector<ReasoningDelta>& parts, std::vector<ChatDelta>* out);
  void AddToolDeltas(const std::vector<ToolStreamDelta>& deltas, std::vector<ChatDelta>* out);

  ChatParseOptions options_;
  std::unique_ptr<ReasoningStreamParser> reasoning_;
  std::unique_ptr<ToolCallStreamParser> calls_;
};

}  // namespace lazyslot::server
