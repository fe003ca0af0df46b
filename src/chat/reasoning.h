// Reasoning ("thinking") split in the chat layer, as llama-server does it with `--reasoning-format` and
// `reasoning_content`: which reasoning syntax a chat template's model writes (<think> tags or gpt-oss harmony
// channels), and splitting a finished output, or a stream of chunks, into reasoning and content.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace lazyslot {

// llama-server's --reasoning-format values.
enum class ReasoningFormat {
  kNone,            // reasoning stays in content, verbatim
  kDeepSeek,        // reasoning goes to reasoning_content; its markup is removed from content
  kDeepSeekLegacy,  // finished output: as kDeepSeek. Streamed: the reasoning stays inline in the content
                    // deltas as "<think>REASONING</think>" (gpt-oss: the analysis message verbatim) and no
                    // reasoning delta is sent, as llama-server's `reasoning_in_content = stream && legacy`.
  kAuto,            // llama-server's default; behaves as kDeepSeek
};

// "none", "deepseek", "deepseek-legacy", "auto" (case-sensitive, as llama-server); else InvalidArgument
// naming the valid values.
Result<ReasoningFormat> ParseReasoningFormat(std::string_view name);
const char* ReasoningFormatName(ReasoningFormat format);
// llama-server's -rea/--reasoning value: 1 for on/enabled/true/1, 0 for off/disabled/false/0, -1 for auto/-1;
// anything else is InvalidArgument naming --reasoning.
Result<int> ParseReasoningSwitch(std::string_view value);

// How a model marks its reasoning.
enum class ReasoningSyntax {
  kNone,       // no reasoning markup: everything is content
  kThinkTags,  // <think>...</think> at the start of the output (Qwen3, QwQ, DeepSeek R1 / V3.1, GLM, ...)
  kGptOssChannels,  // harmony: <|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final...
};

const char* ReasoningSyntaxName(ReasoningSyntax syntax);
// From the chat template's source: harmony when it contains "<|channel|>", else think tags when it mentions
// "<think>" or "reasoning_content", else none.
ReasoningSyntax DetectReasoningSyntax(std::string_view template_source);
// The template reads `enable_thinking` (Qwen3, QwQ, DeepSeek R1 distills / V3.1): the thinking switch works.
bool TemplateSupportsThinkingSwitch(std::string_view template_source);
// The template reads `reasoning_effort` (gpt-oss: low / medium / high).
bool TemplateSupportsReasoningEffort(std::string_view template_source);

struct ReasoningOptions {
  ReasoningSyntax syntax = ReasoningSyntax::kNone;
  ReasoningFormat format = ReasoningFormat::kAuto;
  // The prompt ended inside an open <think> (see PromptOpensThink in chat/tool_calls.h): the output starts
  // as reasoning. Think tags only.
  bool in_think_at_start = false;
};

struct ReasoningSplit {
  std::string reasoning;  // for reasoning_content; empty when there is none
  std::string content;
};

// Splits a finished output. With syntax kNone or format kNone the content is `text`, unchanged.
//
// Think tags (llama.cpp common/chat-parser.cpp, try_parse_reasoning): only blocks at the start of the output
// count (after optional whitespace, which stays in the content); consecutive blocks separated by whitespace
// all count and their reasoning is concatenated. Each block's reasoning is stripped of surrounding
// whitespace, and the whitespace after a "</think>" is dropped. A block still open at the end is reasoning
// (the model was cut off); a cut-off "</think>" prefix at its very end is dropped, while an output ending in
// a cut-off "<think>" prefix keeps it as content. A later "<think>" in the
// answer stays content. With in_think_at_start the output starts inside a block; a "<think>" the model
// writes again at its start is consumed.
//
// gpt-oss: analysis messages are reasoning (stripped, concatenated); final message bodies are content
// (verbatim, without their header or end marker: <|end|>, <|return|> or <|call|>); commentary messages and
// messages with a recipient (" to=") are tool-call territory and stay in content verbatim, header and end
// marker included; text outside any harmony message is content verbatim, except whitespace right before a
// message header.
ReasoningSplit SplitReasoning(std::string_view text, const ReasoningOptions& options);

struct ReasoningDelta {
  bool reasoning;  // true: a reasoning_content delta; false: a content delta
  std::string text;
};

// The incremental form of SplitReasoning. Whatever the chunking, the reasoning deltas concatenate to
// SplitReasoning(...).reasoning and the content deltas to .content (for kDeepSeekLegacy: see its comment).
// Text that may still turn out to be markup (a partial "<think>" or "<|channel|>", whitespace that may be
// stripped) is held back until it is decided. Chunks must be whole UTF-8 text. Feed after Finish: nothing.
class ReasoningStreamParser {
 public:
  explicit ReasoningStreamParser(ReasoningOptions options);
  ~ReasoningStreamParser();
  ReasoningStreamParser(ReasoningStreamParser&&) noexcept;
  ReasoningStreamParser& operator=(ReasoningStreamParser&&) noexcept;

  // Adjacent deltas of the same kind are merged; empty deltas are never returned.
  std::vector<ReasoningDelta> Feed(std::string_view chunk);
  // The end of the output: what was held back, decided.
  std::vector<ReasoningDelta> Finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lazyslot
