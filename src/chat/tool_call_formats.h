// Internal to src/chat/tool_call*.cpp: each format's markers and the matcher that reads one call (or one
// block of calls) at a position of the output, shared by the streaming and the one-shot parser.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_calls.h"

namespace lazyslot::tool_call_internal {

// The DeepSeek special tokens (full-width bars and U+2581 as in the tokenizer).
inline constexpr std::string_view kDsCallsBegin = "<｜tool▁calls▁begin｜>";
inline constexpr std::string_view kDsCallsEnd = "<｜tool▁calls▁end｜>";
inline constexpr std::string_view kDsCallBegin = "<｜tool▁call▁begin｜>";
inline constexpr std::string_view kDsCallEnd = "<｜tool▁call▁end｜>";
inline constexpr std::string_view kDsSep = "<｜tool▁sep｜>";

// kNeedMore: the text so far is a proper prefix of a possible call; more output decides. Every decision is a
// function of the bytes read so far only, so any chunking of the output reaches the same decisions.
enum class Scan { kComplete, kNeedMore, kInvalid };

struct RawCall {
  std::string id;  // empty: the parser assigns one
  std::string name;
  nlohmann::ordered_json arguments;  // an object
};

struct CallMatch {
  Scan scan = Scan::kInvalid;
  size_t end = 0;  // kComplete: one past the call's last byte
  std::vector<RawCall> calls;
  bool has_content = false;  // kGeneric {"response": ...}: the output's content instead of calls
  std::string content;
};

struct FormatMarkers {
  std::vector<std::string> triggers;  // a call starts where one of these appears (outside <think>)
  bool bare_json = false;             // a '{' at the start of the output (ignoring whitespace) may start one
  // The output's first bytes may be a segment header without its trigger (the prompt ended in it):
  // Functionary v3.2's recipient line after the generation prompt's ">>>".
  bool header_at_start = false;
};

const FormatMarkers& MarkersFor(ToolCallFormat format);

// Reads the call that starts at text[pos] (a trigger, '{' for bare JSON, or a header at the output's start).
// `final`: no more text follows, so an unfinished call is kInvalid rather than kNeedMore.
CallMatch MatchCallAt(ToolCallFormat format, std::string_view text, size_t pos, bool final,
                      const std::vector<ToolSpec>& tools);

// A raw Qwen3-Coder parameter value as JSON, per the property's schema type (strings stay strings; numbers,
// booleans, null, objects and arrays are parsed when the schema says so, or when no type is given and the
// text parses; Python's True/False/None, as the template's `|string` writes them, count as JSON's).
nlohmann::ordered_json XmlValueToJson(std::string_view raw, const nlohmann::ordered_json* property_schema);

}  // namespace lazyslot::tool_call_internal
