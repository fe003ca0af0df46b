// Anthropic Messages API <-> OpenAI chat translation (see anthropic_api.h). Never throws: every nlohmann
// access is preceded by a type check, parsing uses the non-throwing overload, and output goes through Dump.
#include "server/anthropic/anthropic_api.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "server/http/errors.h"

namespace lazyslot::server {
namespace {

Status FieldError(const std::string& field, const std::string& why) {
  return InvalidArgument(field + ": " + why);
}

// The value of `key` in object `obj`, or nullptr when absent or null.
const Json* Find(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string Index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// The same refusal as the OpenAI routes' CheckKnownFields, with Anthropic's field names as hints.
Status CheckFields(const Json& body, const std::vector<std::string>& known) {
  return CheckFieldNames(body, known);
}

// A number with an integer value within [lo, hi].
Result<int64_t> Integer(const Json& v, const std::string& field, int64_t lo, int64_t hi) {
  return IntegerValue(v, field, lo, hi);
}

Result<std::string> String(const Json& obj, const char* key, const std::string& path, bool required) {
  const Json* v = Find(obj, key);
  const std::string name = path.empty() ? std::string(key) : path + "." + key;
  if (v == nullptr) {
    if (required) return FieldError(name, "is required");
    return std::string();
  }
  if (!v->is_string()) return FieldError(name, "expected a string, got " + TypeName(*v));
  return v->get<std::string>();
}

Result<std::string> BlockType(const Json& block, const std::string& path) {
  if (!block.is_object())
    return FieldError(path, "expected a content block (an object), got " + TypeName(block));
  return String(block, "type", path, /*required=*/true);
}

Status Unsupported(const std::string& path, const std::string& type, const std::string& allowed) {
  if (type == "image" || type == "document") {
    // A client error (400), where llama-server's text-only model answers 500 with "image input is not
    // supported"; that phrase is kept for clients that look for it.
    return FieldError(path + ".type", "'" + type + "' is not supported (this server reads text only: " +
                                          type + " input is not supported)");
  }
  return FieldError(path + ".type", "'" + type + "' is not supported here (expected " + allowed + ")");
}

void Append(std::string* text, const std::string& part) {
  if (!text->empty()) *text += "\n";
  *text += part;
}

// `system` or a tool_result's content: a string or a list of text blocks, joined with newlines.
Result<std::string> TextOf(const Json& v, const std::string& path) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array())
    return FieldError(path, "expected a string or a list of text blocks, got " + TypeName(v));
  std::string text;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = Index(path, i);
    LS_ASSIGN_OR_RETURN(std::string type, BlockType(v[i], at));
    if (type != "text") return Unsupported(at, type, "'text'");
    LS_ASSIGN_OR_RETURN(std::string part, String(v[i], "text", at, /*required=*/true));
    Append(&text, part);
  }
  return text;
}

bool ValidToolName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

// Messages in OpenAI form, built turn by turn.
class MessageTranslator {
 public:
  Json& out() { return out_; }

  Status Add(const Json& m, const std::string& path, bool last) {
    if (!m.is_object()) return FieldError(path, "expected a message (an object), got " + TypeName(m));
    LS_ASSIGN_OR_RETURN(std::string role, String(m, "role", path, /*required=*/true));
    if (role != "user" && role != "assistant" && role != "system") {
      return FieldError(path + ".role", "'" + role + "' is not a role (user, assistant or system)");
    }
    const Json* content = Find(m, "content");
    const std::string cpath = path + ".content";
    if (content == nullptr) return FieldError(cpath, "is required");
    if (!content->is_string() && !content->is_array()) {
      return FieldError(cpath, "expected a string or a list of content blocks, got " + TypeName(*content));
    }
    if (content->empty() || (content->is_string() && content->get_ref<const std::string&>().empty())) {
      // Anthropic's rule: only a final assistant turn (the start the answer continues) may be empty.
      if (role == "assistant" && last) return Status::Ok();
      return FieldError(cpath, "must not be empty (only a final assistant message may be)");
    }
    if (role == "system") {
      LS_ASSIGN_OR_RETURN(std::string text, TextOf(*content, cpath));
      out_.push_back(Json{{"role", "system"}, {"content", text}});
      return Status::Ok();
    }
    if (content->is_string()) {
      out_.push_back(Json{{"role", role}, {"content", *content}});
      return Status::Ok();
    }
    return role == "user" ? AddUser(*content, cpath) : AddAssistant(*content, cpath);
  }

 private:
  Status AddUser(const Json& blocks, const std::string& path) {
    std::string text;
    bool has_text = false;
    auto flush = [&] {
      if (has_text) out_.push_back(Json{{"role", "user"}, {"content", text}});
      text.clear();
      has_text = false;
    };
    for (size_t i = 0; i < blocks.size(); ++i) {
      const std::string at = Index(path, i);
      LS_ASSIGN_OR_RETURN(std::string type, BlockType(blocks[i], at));
      if (type == "text") {
        LS_ASSIGN_OR_RETURN(std::string part, String(blocks[i], "text", at, /*required=*/true));
        Append(&text, part);
        has_text = true;
      } else if (type == "tool_result") {
        flush();  // text written before a result stays before it
        LS_ASSIGN_OR_RETURN(Json tool_message, ToolResult(blocks[i], at));
        out_.push_back(std::move(tool_message));
      } else if (type == "tool_use" || type == "thinking" || type == "redacted_thinking") {
        return FieldError(at + ".type", "'" + type + "' blocks belong in assistant messages");
      } else {
        return Unsupported(at, type, "'text' or 'tool_result' in a user message");
      }
    }
    flush();
    return Status::Ok();
  }

  Result<Json> ToolResult(const Json& block, const std::string& at) {
    LS_ASSIGN_OR_RETURN(std::string id, String(block, "tool_use_id", at, /*required=*/true));
    if (tool_use_ids_.count(id) == 0) {
      return FieldError(at + ".tool_use_id",
                        "'" + id + "' matches no tool_use block of an earlier assistant message");
    }
    std::string text;
    if (const Json* c = Find(block, "content")) {
      LS_ASSIGN_OR_RETURN(text, TextOf(*c, at + ".content"));
    }
    if (const Json* e = Find(block, "is_error")) {
      if (!e->is_boolean()) return FieldError(at + ".is_error", "expected a boolean, got " + TypeName(*e));
      // OpenAI tool messages have no error flag; the model learns of the failure from the text.
      if (e->get<bool>()) text = text.empty() ? "Error" : "Error: " + text;
    }
    return Json{{"role", "tool"}, {"tool_call_id", id}, {"content", text}};
  }

  Status AddAssistant(const Json& blocks, const std::string& path) {
    std::string text, reasoning;
    Json calls = Json::array();
    for (size_t i = 0; i < blocks.size(); ++i) {
      const std::string at = Index(path, i);
      const Json& b = blocks[i];
      LS_ASSIGN_OR_RETURN(std::string type, BlockType(b, at));
      if (type == "text") {
        LS_ASSIGN_OR_RETURN(std::string part, String(b, "text", at, /*required=*/true));
        text += part;  // one answer split into blocks: joined as written
      } else if (type == "thinking") {
        LS_ASSIGN_OR_RETURN(std::string part, String(b, "thinking", at, /*required=*/true));
        LS_RETURN_IF_ERROR(String(b, "signature", at, /*required=*/false).status());
        Append(&reasoning, part);
      } else if (type == "redacted_thinking") {
        LS_RETURN_IF_ERROR(
            String(b, "data", at, /*required=*/false).status());  // encrypted: nothing to render
      } else if (type == "tool_use") {
        LS_ASSIGN_OR_RETURN(std::string id, String(b, "id", at, /*required=*/true));
        LS_ASSIGN_OR_RETURN(std::string name, String(b, "name", at, /*required=*/true));
        if (id.empty()) return FieldError(at + ".id", "must not be empty");
        if (name.empty()) return FieldError(at + ".name", "must not be empty");
        const Json* input = Find(b, "input");
        if (input == nullptr) return FieldError(at + ".input", "is required (an object)");
        if (!input->is_object())
          return FieldError(at + ".input", "expected an object, got " + TypeName(*input));
        tool_use_ids_.insert(id);
        calls.push_back(Json{{"id", id},
                             {"type", "function"},
                             {"function", Json{{"name", name}, {"arguments", Dump(*input)}}}});
      } else if (type == "tool_result") {
        return FieldError(at + ".type", "'tool_result' blocks belong in user messages");
      } else {
        return Unsupported(at, type,
                           "'text', 'thinking', 'redacted_thinking' or 'tool_use' in an assistant message");
      }
    }
    Json msg = Json{{"role", "assistant"}, {"content", text}};
    if (!calls.empty()) msg["tool_calls"] = std::move(calls);
    if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
    out_.push_back(std::move(msg));
    return Status::Ok();
  }

  Json out_ = Json::array();
  std::set<std::string> tool_use_ids_;
};

Result<Json> Messages(const Json& body) {
  const Json* messages = Find(body, "messages");
  if (messages == nullptr) return FieldError("messages", "is required");
  if (!messages->is_array())
    return FieldError("messages", "expected a list of messages, got " + TypeName(*messages));
  if (messages->empty()) return FieldError("messages", "must contain at least one message");
  MessageTranslator t;
  if (const Json* system = Find(body, "system")) {
    LS_ASSIGN_OR_RETURN(std::string text, TextOf(*system, "system"));
    if (!text.empty()) t.out().push_back(Json{{"role", "system"}, {"content", text}});
  }
  for (size_t i = 0; i < messages->size(); ++i) {
    LS_RETURN_IF_ERROR(t.Add((*messages)[i], Index("messages", i), i + 1 == messages->size()));
  }
  return std::move(t.out());
}

// tools -> OpenAI function tools; `names` receives the tool names.
Result<Json> Tools(const Json& tools, std::vector<std::string>* names) {
  if (!tools.is_array()) return FieldError("tools", "expected a list of tools, got " + TypeName(tools));
  Json out = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = Index("tools", i);
    const Json& t = tools[i];
    if (!t.is_object()) return FieldError(at, "expected a tool (an object), got " + TypeName(t));
    LS_ASSIGN_OR_RETURN(std::string type, String(t, "type", at, /*required=*/false));
    if (!type.empty() && type != "custom") {
      return FieldError(at + ".type", "'" + type +
                                          "' is a server tool, which this server does not run (only "
                                          "client tools: {name, description, input_schema})");
    }
    LS_ASSIGN_OR_RETURN(std::string name, String(t, "name", at, /*required=*/true));
    if (!ValidToolName(name)) {
      return FieldError(at + ".name", "must be 1 to 64 letters, digits, '_', '-' or '.'");
    }
    if (std::find(names->begin(), names->end(), name) != names->end()) {
      return FieldError(at + ".name", "'" + name + "' is given twice");
    }
    names->push_back(name);
    LS_ASSIGN_OR_RETURN(std::string description, String(t, "description", at, /*required=*/false));
    const Json* schema = Find(t, "input_schema");
    if (schema == nullptr) return FieldError(at + ".input_schema", "is required (a JSON schema object)");
    if (!schema->is_object()) {
      return FieldError(at + ".input_schema", "expected a JSON schema object, got " + TypeName(*schema));
    }
    Json fn = Json{{"name", name}};
    if (!description.empty()) fn["description"] = description;
    fn["parameters"] = *schema;
    if (const Json* strict = Find(t, "strict")) {
      if (!strict->is_boolean())
        return FieldError(at + ".strict", "expected a boolean, got " + TypeName(*strict));
      fn["strict"] = *strict;
    }
    out.push_back(Json{{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

// tool_choice -> the OpenAI body's tool_choice (and parallel_tool_calls).
Status ToolChoice(const Json& tc, const std::vector<std::string>& names, Json* out) {
  if (!tc.is_object())
    return FieldError("tool_choice", "expected an object {\"type\": ...}, got " + TypeName(tc));
  LS_ASSIGN_OR_RETURN(std::string type, String(tc, "type", "tool_choice", /*required=*/true));
  if (type == "auto") {
    (*out)["tool_choice"] = "auto";
  } else if (type == "none") {
    (*out)["tool_choice"] = "none";
  } else if (type == "any" || type == "tool") {
    if (names.empty())
      return FieldError("tool_choice.type", "'" + type + "' needs tools, and none were given");
    if (type == "any") {
      (*out)["tool_choice"] = "required";
    } else {
      LS_ASSIGN_OR_RETURN(std::string name, String(tc, "name", "tool_choice", /*required=*/true));
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        return FieldError("tool_choice.name", "'" + name + "' is not in tools");
      }
      (*out)["tool_choice"] = Json{{"type", "function"}, {"function", Json{{"name", name}}}};
    }
  } else {
    return FieldError("tool_choice.type", "'" + type + "' is not a tool choice (auto, any, tool or none)");
  }
  if (const Json* d = Find(tc, "disable_parallel_tool_use")) {
    if (!d->is_boolean()) {
      return FieldError("tool_choice.disable_parallel_tool_use", "expected a boolean, got " + TypeName(*d));
    }
    if (d->get<bool>() && type != "none") (*out)["parallel_tool_calls"] = false;
  }
  return Status::Ok();
}

// thinking -> chat_template_kwargs.enable_thinking (the switch Qwen3-style templates read). The budget cannot
// be enforced; it is only checked to be a count.
Status Thinking(const Json& th, Json* kwargs) {
  if (!th.is_object())
    return FieldError("thinking", "expected an object {\"type\": ...}, got " + TypeName(th));
  LS_ASSIGN_OR_RETURN(std::string type, String(th, "type", "thinking", /*required=*/true));
  if (type == "enabled") {
    const Json* budget = Find(th, "budget_tokens");
    if (budget == nullptr) return FieldError("thinking.budget_tokens", "is required when type is 'enabled'");
    LS_RETURN_IF_ERROR(
        Integer(*budget, "thinking.budget_tokens", 1, std::numeric_limits<int32_t>::max()).status());
    (*kwargs)["enable_thinking"] = true;
  } else if (type == "adaptive" || type == "between_tools") {
    (*kwargs)["enable_thinking"] = true;
  } else if (type == "disabled") {
    (*kwargs)["enable_thinking"] = false;
  } else {
    return FieldError("thinking.type",
                      "'" + type + "' is not a thinking type (enabled, adaptive, between_tools or disabled)");
  }
  return Status::Ok();
}

// output_config: format {type: json_schema, schema} -> response_format; effort is a hint, ignored.
Status OutputConfig(const Json& oc, Json* out) {
  if (!oc.is_object()) return FieldError("output_config", "expected an object, got " + TypeName(oc));
  for (auto it = oc.begin(); it != oc.end(); ++it) {
    if (it.key() != "format" && it.key() != "effort")
      return FieldError("output_config." + it.key(), "unknown field");
  }
  LS_RETURN_IF_ERROR(String(oc, "effort", "output_config", /*required=*/false).status());
  const Json* format = Find(oc, "format");
  if (format == nullptr) return Status::Ok();
  if (!format->is_object())
    return FieldError("output_config.format", "expected an object, got " + TypeName(*format));
  LS_ASSIGN_OR_RETURN(std::string type, String(*format, "type", "output_config.format", /*required=*/true));
  if (type != "json_schema")
    return FieldError("output_config.format.type", "expected 'json_schema', got '" + type + "'");
  const Json* schema = Find(*format, "schema");
  if (schema == nullptr) return FieldError("output_config.format.schema", "is required");
  if (!schema->is_object()) {
    return FieldError("output_config.format.schema",
                      "expected a JSON schema object, got " + TypeName(*schema));
  }
  (*out)["response_format"] =
      Json{{"type", "json_schema"}, {"json_schema", Json{{"name", "output"}, {"schema", *schema}}}};
  return Status::Ok();
}

Status StopSequences(const Json& v, Json* out) {
  if (!v.is_array()) return FieldError("stop_sequences", "expected a list of strings, got " + TypeName(v));
  if (v.size() > kMaxStopStrings) {
    return FieldError("stop_sequences", "at most " + std::to_string(kMaxStopStrings) +
                                            " stop sequences, got " + std::to_string(v.size()));
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = Index("stop_sequences", i);
    if (!v[i].is_string()) return FieldError(at, "expected a string, got " + TypeName(v[i]));
    if (v[i].get_ref<const std::string&>().size() > kMaxStopBytes) {
      return FieldError(at, "a stop sequence may have at most " + std::to_string(kMaxStopBytes) + " bytes");
    }
  }
  (*out)["stop"] = v;
  return Status::Ok();
}

Result<Json> Translate(const Json& body, bool count_tokens) {
  if (!body.is_object()) return InvalidArgument("the request body must be a JSON object");
  static const std::vector<std::string> kCreate = {
      "model",    "max_tokens",   "messages",      "system",        "stop_sequences",      "temperature",
      "top_p",    "top_k",        "stream",        "tools",         "tool_choice",         "thinking",
      "metadata", "service_tier", "output_config", "cache_control", "chat_template_kwargs"};
  static const std::vector<std::string> kCount = {"model",         "messages",      "system",
                                                  "tools",         "tool_choice",   "thinking",
                                                  "output_config", "cache_control", "chat_template_kwargs"};
  LS_RETURN_IF_ERROR(CheckFields(body, count_tokens ? kCount : kCreate));

  Json out = Json::object();
  LS_ASSIGN_OR_RETURN(out["model"], String(body, "model", "", /*required=*/true));
  LS_ASSIGN_OR_RETURN(out["messages"], Messages(body));
  if (!count_tokens) {
    const Json* max_tokens = Find(body, "max_tokens");
    if (max_tokens == nullptr) return FieldError("max_tokens", "is required");
    LS_ASSIGN_OR_RETURN(out["max_tokens"],
                        Integer(*max_tokens, "max_tokens", 1, std::numeric_limits<int32_t>::max()));
    if (const Json* stop = Find(body, "stop_sequences")) LS_RETURN_IF_ERROR(StopSequences(*stop, &out));
    for (const char* f : {"temperature", "top_p", "top_k"}) {
      const Json* v = Find(body, f);
      if (v == nullptr) continue;
      if (!v->is_number()) return FieldError(f, "expected a number, got " + TypeName(*v));
      out[f] = *v;  // ranges are checked with the chat request's own fields
    }
    if (const Json* s = Find(body, "stream")) {
      if (!s->is_boolean()) return FieldError("stream", "expected a boolean, got " + TypeName(*s));
      out["stream"] = *s;
    }
    if (const Json* md = Find(body, "metadata"); md != nullptr && !md->is_object()) {
      return FieldError("metadata", "expected an object, got " + TypeName(*md));
    }
    LS_RETURN_IF_ERROR(String(body, "service_tier", "", /*required=*/false).status());
  }
  std::vector<std::string> names;
  if (const Json* tools = Find(body, "tools")) {
    LS_ASSIGN_OR_RETURN(Json t, Tools(*tools, &names));
    if (!t.empty()) out["tools"] = std::move(t);
  }
  if (const Json* tc = Find(body, "tool_choice")) LS_RETURN_IF_ERROR(ToolChoice(*tc, names, &out));

  Json kwargs = Json::object();
  if (const Json* k = Find(body, "chat_template_kwargs")) {
    if (!k->is_object()) return FieldError("chat_template_kwargs", "expected an object, got " + TypeName(*k));
    kwargs = *k;
  }
  if (const Json* th = Find(body, "thinking")) LS_RETURN_IF_ERROR(Thinking(*th, &kwargs));
  if (!kwargs.empty()) out["chat_template_kwargs"] = std::move(kwargs);
  if (const Json* oc = Find(body, "output_config")) LS_RETURN_IF_ERROR(OutputConfig(*oc, &out));
  if (const Json* cc = Find(body, "cache_control"); cc != nullptr && !cc->is_object()) {
    return FieldError("cache_control", "expected an object, got " + TypeName(*cc));
  }
  return out;
}

// Replaces `from` at the start of `s` by `to` when what follows it ends a path segment.
bool ReplacePrefix(std::string* s, const std::string& from, const std::string& to) {
  if (s->rfind(from, 0) != 0) return false;
  if (s->size() > from.size()) {
    const char next = (*s)[from.size()];
    if (next != ':' && next != '.' && next != '[' && next != ' ') return false;
  }
  s->replace(0, from.size(), to);
  return true;
}

std::string StopSequence(const ChatOutcome& o, const char* reason) {
  return std::string(reason) == "stop_sequence" ? o.stop_word : std::string();
}

}  // namespace

Result<Json> AnthropicToChatBody(const Json& body) { return Translate(body, /*count_tokens=*/false); }

Result<Json> AnthropicCountTokensBody(const Json& body) { return Translate(body, /*count_tokens=*/true); }

std::string AnthropicErrorMessage(const std::string& message) {
  std::string s = message;
  // tools[N].function.X -> tools[N].X (parameters -> input_schema)
  if (s.rfind("tools[", 0) == 0) {
    const size_t close = s.find(']');
    if (close != std::string::npos && close > 6 &&
        std::all_of(s.begin() + 6, s.begin() + static_cast<std::ptrdiff_t>(close),
                    [](char c) { return c >= '0' && c <= '9'; })) {
      std::string rest = s.substr(close + 1);
      if (ReplacePrefix(&rest, ".function.parameters", ".input_schema") ||
          ReplacePrefix(&rest, ".function", "")) {
        return s.substr(0, close + 1) + rest;
      }
    }
    return s;
  }
  static const std::pair<const char*, const char*> kRenames[] = {
      {"response_format.json_schema.schema", "output_config.format.schema"},
      {"response_format", "output_config.format"},
      {"stop", "stop_sequences"},
      {"tool_choice.function.name", "tool_choice.name"},
      {"parallel_tool_calls", "tool_choice.disable_parallel_tool_use"}};
  for (const auto& [from, to] : kRenames) {
    if (ReplacePrefix(&s, from, to)) break;
  }
  return s;
}

const char* AnthropicStopReason(const ChatOutcome& o) {
  if (o.finish_reason == "length") return "max_tokens";
  if (o.finish_reason == "tool_calls" || !o.tool_calls.empty()) return "tool_use";
  if (!o.stop_word.empty()) return "stop_sequence";
  return "end_turn";
}

Json AnthropicUsageJson(int32_t n_prompt, int32_t n_cached, int32_t n_generated) {
  const int32_t cached = std::clamp(n_cached, 0, std::max(n_prompt, 0));
  return Json{{"input_tokens", std::max(n_prompt, 0) - cached},
              {"cache_creation_input_tokens", 0},
              {"cache_read_input_tokens", cached},
              {"output_tokens", std::max(n_generated, 0)}};
}

Json AnthropicMessageJson(const ChatOutcome& outcome, const std::string& id, const std::string& model) {
  Json content = Json::array();
  if (!outcome.reasoning.empty()) {
    content.push_back(Json{{"type", "thinking"}, {"thinking", outcome.reasoning}, {"signature", ""}});
  }
  if (!outcome.content.empty()) content.push_back(Json{{"type", "text"}, {"text", outcome.content}});
  for (const ToolCall& call : outcome.tool_calls) {
    Json input = Json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
    if (!input.is_object()) input = Json::object();  // the call parser only emits objects
    content.push_back(
        Json{{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", std::move(input)}});
  }
  const char* reason = AnthropicStopReason(outcome);
  const std::string stop = StopSequence(outcome, reason);
  return Json{{"id", id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", model},
              {"content", std::move(content)},
              {"stop_reason", reason},
              {"stop_sequence", stop.empty() ? Json(nullptr) : Json(stop)},
              {"usage", AnthropicUsageJson(outcome.n_prompt, outcome.n_cached, outcome.n_generated)}};
}

std::string AnthropicSseEvent(const std::string& name, const Json& data) {
  return "event: " + name + "\ndata: " + Dump(data) + "\n\n";
}

std::string AnthropicStreamWriter::Start(const std::string& id, const std::string& model,
                                         int32_t n_prompt_tokens, int32_t n_cached_tokens) {
  Json message = Json{{"id", id},
                      {"type", "message"},
                      {"role", "assistant"},
                      {"model", model},
                      {"content", Json::array()},
                      {"stop_reason", nullptr},
                      {"stop_sequence", nullptr},
                      {"usage", AnthropicUsageJson(n_prompt_tokens, n_cached_tokens, 0)}};
  return AnthropicSseEvent("message_start", Json{{"type", "message_start"}, {"message", std::move(message)}});
}

std::string AnthropicStreamWriter::OpenBlock(Block kind, const Json& content_block) {
  std::string out = CloseBlock();
  open_ = kind;
  open_index_ = next_index_++;
  out += AnthropicSseEvent(
      "content_block_start",
      Json{{"type", "content_block_start"}, {"index", open_index_}, {"content_block", content_block}});
  return out;
}

std::string AnthropicStreamWriter::CloseBlock() {
  if (open_ == Block::kNone) return "";
  std::string out;
  if (open_ == Block::kThinking) {
    // Anthropic sends a thinking block's signature just before its stop; a local model has none to give.
    out += AnthropicSseEvent("content_block_delta",
                             Json{{"type", "content_block_delta"},
                                  {"index", open_index_},
                                  {"delta", Json{{"type", "signature_delta"}, {"signature", ""}}}});
  }
  out +=
      AnthropicSseEvent("content_block_stop", Json{{"type", "content_block_stop"}, {"index", open_index_}});
  open_ = Block::kNone;
  open_index_ = -1;
  open_tool_ = -1;
  return out;
}

std::string AnthropicStreamWriter::Delta(const ChatDelta& d) {
  if (finished_) return "";
  std::string out;
  auto delta = [&](const Json& body) {
    out += AnthropicSseEvent("content_block_delta",
                             Json{{"type", "content_block_delta"}, {"index", open_index_}, {"delta", body}});
  };
  switch (d.kind) {
    case ChatDelta::kReasoning:
      if (d.text.empty()) break;
      if (open_ != Block::kThinking)
        out += OpenBlock(Block::kThinking, Json{{"type", "thinking"}, {"thinking", ""}});
      delta(Json{{"type", "thinking_delta"}, {"thinking", d.text}});
      break;
    case ChatDelta::kContent:
      if (d.text.empty()) break;
      if (open_ != Block::kText) out += OpenBlock(Block::kText, Json{{"type", "text"}, {"text", ""}});
      delta(Json{{"type", "text_delta"}, {"text", d.text}});
      break;
    case ChatDelta::kToolCallStart:
      out += OpenBlock(Block::kToolUse,
                       Json{{"type", "tool_use"}, {"id", d.id}, {"name", d.name}, {"input", Json::object()}});
      open_tool_ = d.tool_index;
      break;
    case ChatDelta::kToolCallArguments:
      if (d.text.empty() || open_ != Block::kToolUse || open_tool_ != d.tool_index) break;
      delta(Json{{"type", "input_json_delta"}, {"partial_json", d.text}});
      break;
  }
  return out;
}

std::string AnthropicStreamWriter::Finish(const ChatOutcome& outcome) {
  if (finished_) return "";
  finished_ = true;
  std::string out = CloseBlock();
  const char* reason = AnthropicStopReason(outcome);
  const std::string stop = StopSequence(outcome, reason);
  Json delta = Json{{"stop_reason", reason}, {"stop_sequence", stop.empty() ? Json(nullptr) : Json(stop)}};
  out += AnthropicSseEvent(
      "message_delta",
      Json{{"type", "message_delta"},
           {"delta", std::move(delta)},
           {"usage", AnthropicUsageJson(outcome.n_prompt, outcome.n_cached, outcome.n_generated)}});
  out += AnthropicSseEvent("message_stop", Json{{"type", "message_stop"}});
  return out;
}

std::string AnthropicStreamWriter::Ping() { return AnthropicSseEvent("ping", Json{{"type", "ping"}}); }

const char* AnthropicErrorType(int http_status) {
  switch (http_status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 504:
      return "timeout_error";
    case 503:  // this server's "busy or loading"
    case 529:
      return "overloaded_error";
    default:
      return http_status >= 500 ? "api_error" : "invalid_request_error";
  }
}

Json AnthropicErrorBody(int http_status, const std::string& message) {
  return Json{{"type", "error"},
              {"error", Json{{"type", AnthropicErrorType(http_status)}, {"message", message}}}};
}

std::string AnthropicErrorEvent(int http_status, const std::string& message) {
  return AnthropicSseEvent("error", AnthropicErrorBody(http_status, message));
}

Json AnthropicCountTokensJson(int32_t n) { return Json{{"input_tokens", n}}; }

}  // namespace lazyslot::server
