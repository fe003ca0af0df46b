// Tool calling in the chat layer, as llama-server does it: the request's OpenAI `tools` / `tool_choice`,
// which call format a chat template's model writes, parsing a finished output (or a stream of chunks) into
// content and tool calls, and the GBNF grammar that constrains generation to valid calls.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace lazyslot {

// ---- Request side (OpenAI chat completions: `tools`, `tool_choice`, `parallel_tool_calls`) ----------------

// One entry of `tools`: {"type": "function", "function": {"name", "description"?, "parameters"?, "strict"?}}.
struct ToolSpec {
  std::string name;  // 1..64 of [A-Za-z0-9_.-]
  std::string description;
  nlohmann::ordered_json parameters = {{"type", "object"}, {"properties", nlohmann::ordered_json::object()}};
  bool strict = false;
};

enum class ToolChoiceMode { kAuto, kNone, kRequired, kNamed };

struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::kAuto;
  std::string name;  // kNamed only
};

struct ToolRequest {
  std::vector<ToolSpec> tools;
  ToolChoice choice;  // default: auto with tools, none without
  bool parallel_tool_calls = true;
  bool active() const { return !tools.empty() && choice.mode != ToolChoiceMode::kNone; }
};

// `tools` (an array; null is no tools). Errors name the path: "tools[1].function.name is required".
Result<std::vector<ToolSpec>> ParseTools(const nlohmann::ordered_json& tools);
// `tool_choice` (absent/null: auto when tools are offered, else none), checked against the offered tools.
Result<ToolChoice> ParseToolChoice(const nlohmann::ordered_json& tool_choice,
                                   const std::vector<ToolSpec>& tools);
// The three fields from a request body object (other fields are ignored here).
Result<ToolRequest> ParseToolRequest(const nlohmann::ordered_json& body);

// ---- Formats
// -----------------------------------------------------------------------------------------------

// How a model writes its calls. Names in the comments are llama-server's common_chat_format values.
enum class ToolCallFormat {
  kGeneric,        // COMMON_CHAT_FORMAT_GENERIC: the whole output is {"tool_call(s)": ...} or {"response"}
  kHermes2Pro,     // HERMES_2_PRO: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
  kQwen3CoderXml,  // QWEN3_CODER_XML: <tool_call>\n<function=N>\n<parameter=K>\nV\n</parameter>...
  kLlama3x,        // LLAMA_3_X: bare {"name": ..., "parameters": {...}} at the start of the output
  kLlama3xBuiltinTools,  // LLAMA_3_X_WITH_BUILTIN_TOOLS: the same, plus <|python_tag|>name.call(k="v")
  kMistralNemo,          // MISTRAL_NEMO: [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": "..."}]
  kMagistral,            // MAGISTRAL: [TOOL_CALLS]name[CALL_ID]id[ARGS]{...} (Mistral Small 3.2 layout)
  kDeepSeekR1,  // DEEPSEEK_R1: <｜tool▁call▁begin｜>function<｜tool▁sep｜>N\n```json\n{...}\n```...
  kDeepSeekV31,  // DEEPSEEK_V3_1: <｜tool▁call▁begin｜>N<｜tool▁sep｜>{...}<｜tool▁call▁end｜>
  // Functionary v3.1 (Llama 3.1 based; llama-server's autoparser "Functionary 3.1" patch): calls anywhere in
  // the output as <function=N>{...}</function>, back to back; plain text around them is content.
  kFunctionaryV31,
  // Functionary v3.2 (llama-server's specialized parser): the generation prompt ends in ">>>", so the output
  // starts with a recipient line; "all\n" then content, or NAME "\n" {...} for a call; later segments start
  // with ">>>" again.
  kFunctionaryV32,
};

// A stable name for logs and /props ("Hermes 2 Pro", "Qwen3 Coder", ...).
const char* ToolCallFormatName(ToolCallFormat format);
// Chooses the format from the chat template's source text, with llama-server's markers and precedence.
// Templates whose format llama-server has but this layer does not (GLM 4.5, MiniMax-M2, Kimi K2, gpt-oss,
// Granite, Nemotron V2) get kGeneric.
ToolCallFormat DetectToolCallFormat(std::string_view template_source);

// ---- Parsing model output
// ------------------------------------------------------------------------------------

struct ToolCall {
  std::string id;  // "call_" + 24 alphanumerics, or the id the format carries (Mistral)
  std::string name;
  std::string arguments;  // compact JSON text of an object, as OpenAI sends it: {"city":"Paris"}
};

struct ParsedOutput {
  std::string content;  // text outside the calls; whitespace next to a call and at both ends removed
  std::vector<ToolCall> tool_calls;
};

struct ToolCallParseOptions {
  // The prompt ended inside an open <think> (e.g. DeepSeek R1's generation prompt "<think>\n"): the output
  // starts as reasoning, and no call is looked for before the first </think>.
  bool in_think_at_start = false;
  uint64_t id_seed = 0;  // 0: ids from std::random_device; else a fixed sequence (tests)
};

// Whether a rendered prompt leaves a <think> block open (its last "<think>" comes after its last "</think>").
bool PromptOpensThink(std::string_view prompt);

// Splits a finished output. Never fails: call text that is malformed or unterminated (bad JSON, a missing
// closing tag, an unknown layout) stays in `content` verbatim, so nothing the model wrote is dropped.
// <think>...</think> blocks stay in content, and no call is recognised inside one. `tools` gives the
// parameter types that the XML format (Qwen3-Coder) needs to turn raw values into JSON.
ParsedOutput ParseToolCalls(std::string_view text, ToolCallFormat format, const std::vector<ToolSpec>& tools,
                            const ToolCallParseOptions& options = {});

// One streamed change, shaped as the `delta` of an OpenAI chat.completion.chunk.
struct ToolStreamDelta {
  int tool_index = -1;    // -1: a content delta; else the call's index among this output's calls
  std::string content;    // content text (tool_index == -1)
  std::string id, name;   // a call's first delta only
  std::string arguments;  // a fragment of the call's arguments
  // {"content": "..."} or {"tool_calls": [{"index", "id", "type": "function", "function": {"name",
  // "arguments": ""}}]} for a call's first delta, then {"tool_calls": [{"index", "function":
  // {"arguments"}}]}.
  nlohmann::ordered_json ToOpenAiJson() const;
};

// Incremental parser over chunks of generated text. The deltas it emits concatenate to exactly what
// ParseToolCalls returns for the whole text, whatever the chunking: content deltas to `content`, and each
// call's argument fragments to its `arguments`. Text that may begin a call (a trailing "<tool_" or, for the
// bare-JSON formats, a leading "{") is held back until decided, and call markup is never sent as content.
// A call is sent once its text is complete (name delta, then its arguments), so a call that turns out to be
// malformed can still become content, as in ParseToolCalls; its bytes are held back meanwhile.
// Cost: an undecided call is re-scanned from its start on every Feed (O(call length) each).
class ToolCallStreamParser {
 public:
  ToolCallStreamParser(ToolCallFormat format, std::vector<ToolSpec> tools, ToolCallParseOptions options = {});
  ~ToolCallStreamParser();
  ToolCallStreamParser(ToolCallStreamParser&&) noexcept;
  ToolCallStreamParser& operator=(ToolCallStreamParser&&) noexcept;

  std::vector<ToolStreamDelta> Feed(std::string_view chunk);
  // End of output: decides what was held back (an unfinished call becomes content).
  std::vector<ToolStreamDelta> Finish();
  // Everything decided so far (after Finish: the same as ParseToolCalls of the whole text).
  const ParsedOutput& result() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- Constrained generation
// ----------------------------------------------------------------------------------

struct ToolGrammar {
  std::string gbnf;  // llama.cpp GBNF, start rule "root"; its sentences are exactly valid calls
  // Texts that start a call. With `lazy`, the engine applies the grammar only once the output contains one
  // (the grammar's sentences begin with that trigger text, so it is fed to the matcher too).
  std::vector<std::string> triggers;
  bool lazy = false;                    // tool_choice auto; else the grammar holds from the first token
  bool triggers_only_at_start = false;  // bare-JSON formats: a trigger counts only at the output's start
  std::vector<std::string> notes;       // call layouts the grammar leaves out (e.g. <|python_tag|>)
};

// GBNF for `choice` over `tools` in `format`: one call (one or more when `parallel_tool_calls`) to an offered
// tool (only the named one for kNamed), arguments per the tool's parameter schema
// (grammar::JsonSchemaToGbnf). kNone or no tools is InvalidArgument (no grammar applies), and so is a
// schema it cannot enforce, named "tools[i].function.parameters: ..." (never loosened).
Result<ToolGrammar> BuildToolGrammar(ToolCallFormat format, const std::vector<ToolSpec>& tools,
                                     const ToolChoice& choice, bool parallel_tool_calls);

}  // namespace lazyslot
