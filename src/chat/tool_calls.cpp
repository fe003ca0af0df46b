// The request side of tool calling (OpenAI's `tools`, `tool_choice`, `parallel_tool_calls`, validated with
// messages that name the field) and the choice of call format from a chat template's source text.
#include "chat/tool_calls.h"

#include <string>

namespace lazyslot {
namespace {

using nlohmann::ordered_json;

bool ValidToolName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

bool Has(std::string_view src, std::string_view needle) { return src.find(needle) != std::string_view::npos; }

}  // namespace

Result<std::vector<ToolSpec>> ParseTools(const ordered_json& tools) {
  std::vector<ToolSpec> out;
  if (tools.is_null()) return out;
  if (!tools.is_array())
    return InvalidArgument(std::string("tools: expected a list, got ") + tools.type_name());
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const ordered_json& entry = tools[i];
    if (!entry.is_object()) return InvalidArgument(at + ": expected an object");
    auto type = entry.find("type");
    if (type == entry.end() || !type->is_string() || *type != "function") {
      return InvalidArgument(at + ".type: must be \"function\"");
    }
    auto fn = entry.find("function");
    if (fn == entry.end() || fn->is_null()) return InvalidArgument(at + ".function: is required");
    if (!fn->is_object()) return InvalidArgument(at + ".function: expected an object");
    ToolSpec spec;
    auto name = fn->find("name");
    if (name == fn->end() || name->is_null()) return InvalidArgument(at + ".function.name: is required");
    if (!name->is_string()) return InvalidArgument(at + ".function.name: expected a string");
    spec.name = name->get<std::string>();
    if (!ValidToolName(spec.name)) {
      return InvalidArgument(at + ".function.name: must be 1 to 64 letters, digits, '_', '-' or '.'");
    }
    for (size_t j = 0; j < out.size(); ++j) {
      if (out[j].name == spec.name) {
        return InvalidArgument(at + ".function.name: '" + spec.name + "' duplicates tools[" +
                               std::to_string(j) + "]");
      }
    }
    auto desc = fn->find("description");
    if (desc != fn->end() && !desc->is_null()) {
      if (!desc->is_string()) return InvalidArgument(at + ".function.description: expected a string");
      spec.description = desc->get<std::string>();
    }
    auto params = fn->find("parameters");
    if (params != fn->end() && !params->is_null()) {
      if (!params->is_object()) return InvalidArgument(at + ".function.parameters: expected an object");
      spec.parameters = *params;
    }
    auto strict = fn->find("strict");
    if (strict != fn->end() && !strict->is_null()) {
      if (!strict->is_boolean()) return InvalidArgument(at + ".function.strict: expected a boolean");
      spec.strict = strict->get<bool>();
    }
    out.push_back(std::move(spec));
  }
  return out;
}

Result<ToolChoice> ParseToolChoice(const ordered_json& tool_choice, const std::vector<ToolSpec>& tools) {
  ToolChoice choice;
  if (tool_choice.is_null()) {
    choice.mode = tools.empty() ? ToolChoiceMode::kNone : ToolChoiceMode::kAuto;
    return choice;
  }
  static const char* kShape =
      "tool_choice: must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
      "{\"name\": ...}}";
  if (tool_choice.is_string()) {
    const std::string& s = tool_choice.get_ref<const std::string&>();
    if (s == "auto") {
      choice.mode = ToolChoiceMode::kAuto;
    } else if (s == "none") {
      choice.mode = ToolChoiceMode::kNone;
    } else if (s == "required") {
      choice.mode = ToolChoiceMode::kRequired;
      if (tools.empty()) return InvalidArgument("tool_choice: \"required\" needs tools, and none were given");
    } else {
      return InvalidArgument(kShape);
    }
    return choice;
  }
  if (!tool_choice.is_object()) return InvalidArgument(kShape);
  auto type = tool_choice.find("type");
  if (type == tool_choice.end() || !type->is_string() || *type != "function") {
    return InvalidArgument("tool_choice.type: must be \"function\"");
  }
  auto fn = tool_choice.find("function");
  if (fn == tool_choice.end() || !fn->is_object())
    return InvalidArgument("tool_choice.function: is required");
  auto name = fn->find("name");
  if (name == fn->end() || !name->is_string()) {
    return InvalidArgument("tool_choice.function.name: is required (a string)");
  }
  choice.mode = ToolChoiceMode::kNamed;
  choice.name = name->get<std::string>();
  for (const ToolSpec& t : tools) {
    if (t.name == choice.name) return choice;
  }
  return InvalidArgument("tool_choice: names function '" + choice.name + "', which is not in tools");
}

Result<ToolRequest> ParseToolRequest(const ordered_json& body) {
  if (!body.is_object()) return InvalidArgument("request body must be a JSON object");
  static const ordered_json kNull;
  auto field = [&](const char* key) -> const ordered_json& {
    auto it = body.find(key);
    return it == body.end() ? kNull : *it;
  };
  ToolRequest req;
  LS_ASSIGN_OR_RETURN(req.tools, ParseTools(field("tools")));
  LS_ASSIGN_OR_RETURN(req.choice, ParseToolChoice(field("tool_choice"), req.tools));
  const ordered_json& parallel = field("parallel_tool_calls");
  if (!parallel.is_null()) {
    if (!parallel.is_boolean()) return InvalidArgument("parallel_tool_calls: expected a boolean");
    req.parallel_tool_calls = parallel.get<bool>();
  }
  return req;
}

const char* ToolCallFormatName(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kGeneric:
      return "Generic";
    case ToolCallFormat::kHermes2Pro:
      return "Hermes 2 Pro";
    case ToolCallFormat::kQwen3CoderXml:
      return "Qwen3 Coder";
    case ToolCallFormat::kLlama3x:
      return "Llama 3.x";
    case ToolCallFormat::kLlama3xBuiltinTools:
      return "Llama 3.x with builtin tools";
    case ToolCallFormat::kMistralNemo:
      return "Mistral Nemo";
    case ToolCallFormat::kMagistral:
      return "Magistral";
    case ToolCallFormat::kDeepSeekR1:
      return "DeepSeek R1";
    case ToolCallFormat::kDeepSeekV31:
      return "DeepSeek V3.1";
    case ToolCallFormat::kFunctionaryV31:
      return "Functionary v3.1 Llama 3.1";
    case ToolCallFormat::kFunctionaryV32:
      return "Functionary v3.2";
  }
  return "Generic";
}

// The markers and their order follow llama-server's template probes (common_chat_templates_apply_jinja):
// the first probe that matches wins. Templates with a format of their own in llama-server that this layer
// does not implement are recognised first, so that a shared marker (GLM-4.6 also writes "<tool_call>") does
// not send them to a format whose layout they do not use.
ToolCallFormat DetectToolCallFormat(std::string_view src) {
  if (Has(src, "<｜tool▁calls▁begin｜>")) {
    // V3.1's template is the one that renders an assistant "prefix" message with thinking.
    return Has(src, "message['prefix'] is defined and message['prefix'] and thinking")
               ? ToolCallFormat::kDeepSeekV31
               : ToolCallFormat::kDeepSeekR1;
  }
  if (Has(src, ">>>all") && Has(src, ">>>${recipient}")) return ToolCallFormat::kFunctionaryV32;
  const bool own_format_elsewhere = Has(src, "<|start_of_role|>")                          // Granite
                                    || Has(src, "[gMASK]<sop>")                            // GLM 4.5 / 4.6
                                    || Has(src, "<SPECIAL_10>") || Has(src, "<TOOLCALL>")  // Nemotron V2
                                    || Has(src, "<minimax:tool_call>")                     // MiniMax-M2
                                    || Has(src, "<|tool_calls_section_begin|>")            // Kimi K2
                                    || Has(src, "<|channel|>")   // gpt-oss (harmony)
                                    || Has(src, ">>>all")        // Functionary v3.2
                                    || Has(src, " functools[");  // Firefunction v2
  if (Has(src, "<tool_call>") && Has(src, "<function=") && Has(src, "<parameter=") && !own_format_elsewhere) {
    return ToolCallFormat::kQwen3CoderXml;
  }
  if (own_format_elsewhere) return ToolCallFormat::kGeneric;
  if (Has(src, "<tool_call>")) return ToolCallFormat::kHermes2Pro;
  if (Has(src, "<|start_header_id|>") && Has(src, "<function=")) {
    return ToolCallFormat::kFunctionaryV31;  // its template writes <function=...> after Llama 3.1's headers
  }
  if (Has(src, "<|start_header_id|>ipython<|end_header_id|>")) {
    return Has(src, "<|python_tag|>") ? ToolCallFormat::kLlama3xBuiltinTools : ToolCallFormat::kLlama3x;
  }
  if (Has(src, "[TOOL_CALLS]")) {
    return Has(src, "[ARGS]") ? ToolCallFormat::kMagistral : ToolCallFormat::kMistralNemo;
  }
  return ToolCallFormat::kGeneric;
}

bool PromptOpensThink(std::string_view prompt) {
  const size_t open = prompt.rfind("<think>");
  if (open == std::string_view::npos) return false;
  const size_t close = prompt.rfind("</think>");
  return close == std::string_view::npos || close < open;
}

}  // namespace lazyslot
