// Chat templates: renders a conversation into the prompt text a model was trained on, using the model's own
// `tokenizer.chat_template` (a Jinja2 template, run by the interpreter in jinja_*.h with the settings of
// Hugging Face transformers) or a built-in one (llama-server's named formats: chatml, llama3, gemma, ...).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace lazyslot {

namespace jinja {
struct Program;
}

// One conversation turn. Callers that parse requests should use nlohmann::ordered_json: templates print
// tool schemas with tojson, and Hugging Face keeps the request's key order there.
struct ChatMessage {
  std::string role;
  nlohmann::ordered_json content;  // a string, a list of parts ({"type": "text", "text": ...}), or null
  nlohmann::ordered_json extra;  // further message fields (tool_calls, reasoning_content, name, ...) or null
  nlohmann::ordered_json ToJson() const;  // {"role", "content", ...extra}
};

class ChatTemplate {
 public:
  // Parses a Jinja template; errors give "line L, column C". `name` is what name() reports.
  static Result<ChatTemplate> Parse(const std::string& source, const std::string& name = "model");
  // Built-ins: llama-server's template names (chatml, llama2, llama3, gemma, mistral-v7, ...; see
  // BuiltinNames() and chat/builtin_templates.h). An unknown name: NotFound listing the known ones.
  static Result<ChatTemplate> Builtin(const std::string& name);
  static std::vector<std::string> BuiltinNames();  // sorted
  static std::string BuiltinNamesList();           // "bailing, bailing-think, ..., zephyr"
  // The model's template if it parses and renders a probe conversation (name "model"); otherwise the built-in
  // its markers point to (<|im_start|> -> chatml, <|start_header_id|> -> llama3, [INST] -> llama2), else
  // chatml. Never fails. `chosen_name_out` (optional) receives name().
  static ChatTemplate ForModel(const std::string& gguf_template, std::string* chosen_name_out);

  // Renders `messages` (a JSON array of message objects). `extra_context` (an object or null) adds template
  // variables: bos_token, eos_token, tools, enable_thinking, ... Template errors, including the template's
  // own raise_exception("..."), come back as InvalidArgument with the line and column; runaway templates
  // (huge output, loops, recursion) as ResourceExhausted. As llama.cpp renders templates, a string plus an
  // undefined or none value is the string (jinja_eval.h's concat_none_as_empty).
  Result<std::string> Apply(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                            const nlohmann::ordered_json& extra_context = nullptr) const;
  Result<std::string> Apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                            const nlohmann::ordered_json& extra_context = nullptr) const;

  // Tests only: strftime_now() in this template reports this instant (seconds since the Unix epoch, UTC)
  // instead of the current time.
  void PinClockForTesting(int64_t unix_seconds) { pinned_now_ = unix_seconds; }

  const std::string& name() const { return name_; }
  const std::string& source() const { return source_; }

 private:
  std::string name_;
  std::string source_;
  std::shared_ptr<const jinja::Program> program_;
  std::optional<int64_t> pinned_now_;
};

}  // namespace lazyslot
