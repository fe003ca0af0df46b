// ChatStream and ParseChatOutput: reasoning split first, then tool calls in the content that is left.
#include "server/generation/chat_stream.h"

namespace lazyslot::server {
namespace {

// The tool parser sees content only once reasoning is split out, so no think block is open at its start.
ToolCallParseOptions ToolOptions(const ChatParseOptions& o) {
  ToolCallParseOptions t = o.tool_options;
  if (o.splits_reasoning()) t.in_think_at_start = false;
  return t;
}

}  // namespace

bool ChatParseOptions::splits_reasoning() const {
  return reasoning.syntax != ReasoningSyntax::kNone && reasoning.format != ReasoningFormat::kNone;
}

void ParseChatOutput(std::string_view text, const ChatParseOptions& options, ChatOutcome* outcome) {
  std::string content(text);
  if (options.splits_reasoning()) {
    ReasoningSplit split = SplitReasoning(text, options.reasoning);
    outcome->reasoning = std::move(split.reasoning);
    content = std::move(split.content);
  }
  if (!options.tools_active) {
    outcome->content = std::move(content);
    return;
  }
  ParsedOutput parsed = ParseToolCalls(content, options.tool_format, options.tools, ToolOptions(options));
  outcome->content = std::move(parsed.content);
  outcome->tool_calls = std::move(parsed.tool_calls);
}

ChatStream::ChatStream(ChatParseOptions options) : options_(std::move(options)) {
  if (options_.splits_reasoning()) {
    reasoning_ = std::make_unique<ReasoningStreamParser>(options_.reasoning);
  }
  if (options_.tools_active) {
    calls_ =
        std::make_unique<ToolCallStreamParser>(options_.tool_format, options_.tools, ToolOptions(options_));
  }
}

ChatStream::~ChatStream() = default;

void ChatStream::AddToolDeltas(const std::vector<ToolStreamDelta>& deltas, std::vector<ChatDelta>* out) {
  for (const ToolStreamDelta& d : deltas) {
    ChatDelta c;
    if (d.tool_index < 0) {
      if (d.content.empty()) continue;
      c.kind = ChatDelta::kContent;
      c.text = d.content;
      out->push_back(std::move(c));
      continue;
    }
    c.tool_index = d.tool_index;
    if (!d.name.empty()) {
      c.kind = ChatDelta::kToolCallStart;
      c.id = d.id;
      c.name = d.name;
      out->push_back(c);
    }
    if (!d.arguments.empty()) {
      ChatDelta a;
      a.kind = ChatDelta::kToolCallArguments;
      a.tool_index = d.tool_index;
      a.text = d.arguments;
      out->push_back(std::move(a));
    }
  }
}

void ChatStream::Route(const std::vector<ReasoningDelta>& parts, std::vector<ChatDelta>* out) {
  for (const ReasoningDelta& p : parts) {
    if (p.text.empty()) continue;
    if (p.reasoning) {
      ChatDelta d;
      d.kind = ChatDelta::kReasoning;
      d.text = p.text;
      out->push_back(std::move(d));
    } else if (calls_) {
      AddToolDeltas(calls_->Feed(p.text), out);
    } else {
      ChatDelta d;
      d.kind = ChatDelta::kContent;
      d.text = p.text;
      out->push_back(std::move(d));
    }
  }
}

std::vector<ChatDelta> ChatStream::Feed(std::string_view text) {
  std::vector<ChatDelta> out;
  if (reasoning_) {
    Route(reasoning_->Feed(text), &out);
  } else {
    Route({ReasoningDelta{false, std::string(text)}}, &out);
  }
  return out;
}

std::vector<ChatDelta> ChatStream::Finish() {
  std::vector<ChatDelta> out;
  if (reasoning_) Route(reasoning_->Finish(), &out);
  if (calls_) AddToolDeltas(calls_->Finish(), &out);
  return out;
}

}  // namespace lazyslot::server
