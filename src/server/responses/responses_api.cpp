// Responses request -> chat-completions body (see responses_api.h). Never throws: every nlohmann access is
// guarded by a type check, and JSON text is parsed with exceptions off.
#include "server/responses/responses_api.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "server/generation/sampling_fields.h"

namespace lazyslot::server {
namespace {

Status Err(const std::string& path, const std::string& why) { return InvalidArgument(path + ": " + why); }

std::string Shown(const std::string& key) { return key.size() > 64 ? key.substr(0, 64) + "..." : key; }

// Every key of `obj` must be in `allowed`; errors name "prefix.key" (or "key" with an empty prefix).
Status CheckKeys(const Json& obj, const std::string& prefix, const std::vector<std::string_view>& allowed) {
  return CheckFieldNames(obj, std::vector<std::string>(allowed.begin(), allowed.end()), prefix);
}

Status ExpectString(const Json& obj, const char* key, const std::string& path, bool required) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return required ? Err(path, "is required") : Status::Ok();
  if (!it->is_string()) return Err(path, "expected a string, got " + TypeName(*it));
  return Status::Ok();
}

// An integer (1 and 1.0 both) in [lo, hi].
Result<int64_t> Integer(const Json& v, const std::string& path, int64_t lo, int64_t hi) {
  return IntegerValue(v, path, lo, hi);
}

// lazyslot / llama-server sampling extensions, copied to the chat body unchanged: the chat pipeline
// validates them under the same names.
const std::vector<std::string>& CopiedFields() {
  static const std::vector<std::string> kFields = [] {
    std::vector<std::string> f = {"temperature",
                                  "top_p",
                                  "stream",
                                  "parallel_tool_calls",
                                  "seed",
                                  "top_k",
                                  "min_p",
                                  "stop",
                                  "repeat_penalty",
                                  "repeat_last_n",
                                  "presence_penalty",
                                  "frequency_penalty",
                                  "logit_bias",
                                  "ignore_eos",
                                  "cache_prompt",
                                  "cache_salt",
                                  "timings_per_token",
                                  "return_progress"};
    for (const std::string& name : SamplingFieldNames()) {
      if (std::find(f.begin(), f.end(), name) == f.end()) f.push_back(name);
    }
    return f;
  }();
  return kFields;
}

const std::vector<std::string_view>& TopLevelFields() {
  static const std::vector<std::string_view> kFields = [] {
    // The Responses API's fields this server uses or accepts (some only with their default value).
    std::vector<std::string_view> f = {"model",
                                       "input",
                                       "instructions",
                                       "max_output_tokens",
                                       "stream_options",
                                       "tools",
                                       "tool_choice",
                                       "text",
                                       "reasoning",
                                       "store",
                                       "previous_response_id",
                                       "conversation",
                                       "metadata",
                                       "user",
                                       "safety_identifier",
                                       "prompt_cache_key",
                                       "prompt_cache_retention",
                                       "service_tier",
                                       "truncation",
                                       "background",
                                       "include",
                                       "top_logprobs",
                                       "prompt",
                                       "context_management",
                                       "moderation",
                                       "max_tool_calls",
                                       "chat_template_kwargs"};
    for (const std::string& name : CopiedFields()) f.push_back(name);
    return f;
  }();
  return kFields;
}

// Top-level fields whose non-default values ask for something this server does not do.
Status CheckUnsupported(const Json& body) {
  const std::string stateless =
      "this server is stateless and keeps no responses or conversations; send the "
      "whole conversation in `input`";
  if (Present(body, "previous_response_id")) return Err("previous_response_id", stateless);
  if (Present(body, "conversation")) return Err("conversation", stateless);
  if (Present(body, "prompt")) return Err("prompt", "stored prompt templates are not supported (stateless)");
  if (Present(body, "context_management")) return Err("context_management", "is not supported");
  if (Present(body, "moderation")) return Err("moderation", "is not supported");
  if (Present(body, "max_tool_calls")) return Err("max_tool_calls", "is not supported");
  if (Present(body, "background")) {
    const Json& v = body.at("background");
    if (!v.is_boolean()) return Err("background", "expected a boolean, got " + TypeName(v));
    if (v.get<bool>()) return Err("background", "background responses are not supported (stateless)");
  }
  if (Present(body, "store") && !body.at("store").is_boolean()) {
    return Err("store", "expected a boolean, got " + TypeName(body.at("store")));
  }
  for (const char* f :
       {"model", "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "service_tier"}) {
    LS_RETURN_IF_ERROR(ExpectString(body, f, f, false));
  }
  if (Present(body, "truncation")) {
    const Json& v = body.at("truncation");
    if (!v.is_string()) return Err("truncation", "expected a string, got " + TypeName(v));
    if (v.get<std::string>() == "auto") {
      return Err("truncation",
                 "\"auto\" is not supported: this server never drops input; a prompt longer "
                 "than the context is a 400 (use \"disabled\")");
    }
    if (v.get<std::string>() != "disabled") {
      return Err("truncation", "expected \"disabled\" or \"auto\", got \"" + v.get<std::string>() + "\"");
    }
  }
  if (Present(body, "top_logprobs")) {
    LS_ASSIGN_OR_RETURN(int64_t n, Integer(body.at("top_logprobs"), "top_logprobs", 0, 20));
    if (n != 0) return Err("top_logprobs", "log-probabilities are not supported on /v1/responses");
  }
  if (Present(body, "include")) {
    const Json& inc = body.at("include");
    if (!inc.is_array()) return Err("include", "expected a list, got " + TypeName(inc));
    for (size_t i = 0; i < inc.size(); ++i) {
      const std::string path = "include[" + std::to_string(i) + "]";
      if (!inc[i].is_string()) return Err(path, "expected a string, got " + TypeName(inc[i]));
      // Reasoning items always carry their text in the clear, so replaying them needs nothing encrypted.
      if (inc[i].get<std::string>() == "reasoning.encrypted_content") continue;
      return Err(path, "'" + Shown(inc[i].get<std::string>()) + "' is not supported");
    }
  }
  if (Present(body, "metadata")) {
    const Json& m = body.at("metadata");
    if (!m.is_object()) return Err("metadata", "expected an object, got " + TypeName(m));
    if (m.size() > 16) return Err("metadata", "at most 16 keys, got " + std::to_string(m.size()));
    for (auto it = m.begin(); it != m.end(); ++it) {
      const std::string path = "metadata." + Shown(it.key());
      if (it.key().size() > 64) return Err(path, "keys are at most 64 characters");
      if (!it->is_string()) return Err(path, "expected a string, got " + TypeName(*it));
      if (it->get_ref<const std::string&>().size() > 512)
        return Err(path, "values are at most 512 characters");
    }
  }
  if (Present(body, "stream_options")) {
    const Json& so = body.at("stream_options");
    if (!so.is_object()) return Err("stream_options", "expected an object, got " + TypeName(so));
    LS_RETURN_IF_ERROR(CheckKeys(so, "stream_options", {"include_obfuscation"}));
    if (Present(so, "include_obfuscation") && !so.at("include_obfuscation").is_boolean()) {
      return Err("stream_options.include_obfuscation", "expected a boolean");
    }
  }
  return Status::Ok();
}

// ---- input ------------------------------------------------------------------------------------------------

// Text of a message's `content` (a string or a list of text parts, joined with newlines).
Result<std::string> ContentText(const Json& content, const std::string& path) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return Err(path, "expected a string or a list of parts, got " + TypeName(content));
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string part_path = path + "[" + std::to_string(i) + "]";
    const Json& part = content[i];
    if (!part.is_object()) return Err(part_path, "expected an object, got " + TypeName(part));
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) return Err(part_path + ".type", "is required");
    const std::string& t = type->get_ref<const std::string&>();
    if (t != "input_text" && t != "output_text") {
      return Err(part_path + ".type", "'" + Shown(t) +
                                          "' is not supported (this server reads text only: "
                                          "input_text, output_text)");
    }
    LS_RETURN_IF_ERROR(ExpectString(part, "text", part_path + ".text", true));
    if (i > 0) text += "\n";
    text += part.at("text").get_ref<const std::string&>();
  }
  return text;
}

// Appends `text` to a string field of a chat message, newline-separated.
void AppendText(Json& msg, const char* key, const std::string& text) {
  auto it = msg.find(key);
  if (it != msg.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
    *it = it->get<std::string>() + "\n" + text;
  } else {
    msg[key] = text;
  }
}

// The assistant message that reasoning, assistant text and function calls belong to: the last chat message
// when it is the assistant's (one turn of a response's output spans several items), else a new one.
Json& AssistantTurn(Json& messages) {
  if (!messages.empty()) {
    Json& last = messages.back();
    auto role = last.find("role");
    if (role != last.end() && role->is_string() && role->get_ref<const std::string&>() == "assistant") {
      return last;
    }
  }
  messages.push_back(Json{{"role", "assistant"}});
  return messages.back();
}

Status MessageItem(const Json& item, const std::string& path, Json& messages) {
  LS_RETURN_IF_ERROR(CheckKeys(item, path, {"type", "role", "content", "status", "id", "phase"}));
  auto role = item.find("role");
  if (role == item.end() || role->is_null()) return Err(path + ".role", "is required");
  if (!role->is_string()) return Err(path + ".role", "expected a string, got " + TypeName(*role));
  std::string r = role->get<std::string>();
  if (r != "user" && r != "assistant" && r != "system" && r != "developer") {
    return Err(path + ".role", "'" + Shown(r) + "' is not a role (user, assistant, system or developer)");
  }
  auto content = item.find("content");
  if (content == item.end() || content->is_null()) return Err(path + ".content", "is required");
  LS_ASSIGN_OR_RETURN(std::string text, ContentText(*content, path + ".content"));
  if (r == "assistant") {
    AppendText(AssistantTurn(messages), "content", text);
    return Status::Ok();
  }
  // Chat templates know "system"; many (Qwen's among them) render no "developer" turn at all.
  if (r == "developer") r = "system";
  messages.push_back(Json{{"role", r}, {"content", text}});
  return Status::Ok();
}

Status FunctionCallItem(const Json& item, const std::string& path, Json& messages, Json& call_names) {
  LS_RETURN_IF_ERROR(CheckKeys(item, path, {"type", "id", "call_id", "name", "arguments", "status"}));
  for (const char* f : {"call_id", "name", "arguments"}) {
    LS_RETURN_IF_ERROR(ExpectString(item, f, path + "." + f, true));
  }
  const std::string& call_id = item.at("call_id").get_ref<const std::string&>();
  const std::string& name = item.at("name").get_ref<const std::string&>();
  if (call_id.empty()) return Err(path + ".call_id", "must not be empty");
  if (name.empty()) return Err(path + ".name", "must not be empty");
  const std::string& args = item.at("arguments").get_ref<const std::string&>();
  if (Json::parse(args, nullptr, /*allow_exceptions=*/false).is_discarded()) {
    return Err(path + ".arguments", "is not valid JSON");
  }
  Json& turn = AssistantTurn(messages);
  if (!turn.contains("tool_calls")) turn["tool_calls"] = Json::array();
  turn["tool_calls"].push_back(
      Json{{"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}});
  call_names[call_id] = name;
  return Status::Ok();
}

Status FunctionCallOutputItem(const Json& item, const std::string& path, Json& messages,
                              const Json& call_names) {
  LS_RETURN_IF_ERROR(CheckKeys(item, path, {"type", "id", "call_id", "output", "status"}));
  LS_RETURN_IF_ERROR(ExpectString(item, "call_id", path + ".call_id", true));
  const std::string& call_id = item.at("call_id").get_ref<const std::string&>();
  auto name = call_names.find(call_id);
  if (name == call_names.end()) {
    return Err(path + ".call_id", "no function_call item with call_id '" + Shown(call_id) +
                                      "' comes before it in input (this server is stateless)");
  }
  auto output = item.find("output");
  if (output == item.end() || output->is_null()) return Err(path + ".output", "is required");
  LS_ASSIGN_OR_RETURN(std::string text, ContentText(*output, path + ".output"));
  messages.push_back(Json{{"role", "tool"}, {"tool_call_id", call_id}, {"name", *name}, {"content", text}});
  return Status::Ok();
}

// A reasoning item's text becomes the assistant turn's reasoning_content (templates such as Qwen3's render
// it for the turns after the last user message). Summaries and encrypted_content are not model text here.
Status ReasoningItem(const Json& item, const std::string& path, Json& messages) {
  LS_RETURN_IF_ERROR(
      CheckKeys(item, path, {"type", "id", "summary", "content", "encrypted_content", "status"}));
  if (Present(item, "summary") && !item.at("summary").is_array()) {
    return Err(path + ".summary", "expected a list, got " + TypeName(item.at("summary")));
  }
  LS_RETURN_IF_ERROR(ExpectString(item, "encrypted_content", path + ".encrypted_content", false));
  if (!Present(item, "content")) return Status::Ok();
  const Json& content = item.at("content");
  if (!content.is_array()) return Err(path + ".content", "expected a list, got " + TypeName(content));
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string part_path = path + ".content[" + std::to_string(i) + "]";
    const Json& part = content[i];
    if (!part.is_object()) return Err(part_path, "expected an object, got " + TypeName(part));
    auto type = part.find("type");
    if (type == part.end() || !type->is_string() || type->get_ref<const std::string&>() != "reasoning_text") {
      return Err(part_path + ".type", "expected \"reasoning_text\"");
    }
    LS_RETURN_IF_ERROR(ExpectString(part, "text", part_path + ".text", true));
    if (i > 0) text += "\n";
    text += part.at("text").get_ref<const std::string&>();
  }
  if (!text.empty()) AppendText(AssistantTurn(messages), "reasoning_content", text);
  return Status::Ok();
}

Result<Json> InputMessages(const Json& input) {
  Json messages = Json::array();
  if (input.is_string()) {
    messages.push_back(Json{{"role", "user"}, {"content", input}});
    return messages;
  }
  if (!input.is_array()) return Err("input", "expected a string or a list of items, got " + TypeName(input));
  if (input.empty()) return Err("input", "must contain at least one item");
  Json call_names = Json::object();  // call_id -> function name, for the tool messages
  for (size_t k = 0; k < input.size(); ++k) {
    const std::string path = "input[" + std::to_string(k) + "]";
    const Json& item = input[k];
    if (!item.is_object()) return Err(path, "expected an object, got " + TypeName(item));
    auto type = item.find("type");
    std::string t;
    if (type != item.end() && !type->is_null()) {
      if (!type->is_string()) return Err(path + ".type", "expected a string, got " + TypeName(*type));
      t = type->get<std::string>();
    } else if (item.contains("role")) {
      t = "message";  // EasyInputMessage: {role, content}
    } else {
      return Err(path + ".type", "is required");
    }
    if (t == "message") {
      LS_RETURN_IF_ERROR(MessageItem(item, path, messages));
    } else if (t == "function_call") {
      LS_RETURN_IF_ERROR(FunctionCallItem(item, path, messages, call_names));
    } else if (t == "function_call_output") {
      LS_RETURN_IF_ERROR(FunctionCallOutputItem(item, path, messages, call_names));
    } else if (t == "reasoning") {
      LS_RETURN_IF_ERROR(ReasoningItem(item, path, messages));
    } else if (t == "item_reference") {
      return Err(path + ".type",
                 "'item_reference' points at a stored item; this server is stateless (send "
                 "the item itself)");
    } else {
      return Err(path + ".type", "'" + Shown(t) +
                                     "' is not supported (message, function_call, "
                                     "function_call_output and reasoning items are)");
    }
  }
  return messages;
}

// ---- tools, text, reasoning ------------------------------------------------------------------------------

Result<Json> ChatTools(const Json& tools) {
  if (!tools.is_array()) return Err("tools", "expected a list, got " + TypeName(tools));
  Json out = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string path = "tools[" + std::to_string(i) + "]";
    const Json& t = tools[i];
    if (!t.is_object()) return Err(path, "expected an object, got " + TypeName(t));
    LS_RETURN_IF_ERROR(ExpectString(t, "type", path + ".type", true));
    const std::string& type = t.at("type").get_ref<const std::string&>();
    if (type != "function") {
      return Err(path + ".type", "'" + Shown(type) +
                                     "' is not supported (this server runs function tools "
                                     "only; built-in tools such as web_search need OpenAI's servers)");
    }
    LS_RETURN_IF_ERROR(CheckKeys(t, path, {"type", "name", "description", "parameters", "strict"}));
    LS_RETURN_IF_ERROR(ExpectString(t, "name", path + ".name", true));
    LS_RETURN_IF_ERROR(ExpectString(t, "description", path + ".description", false));
    if (Present(t, "parameters") && !t.at("parameters").is_object()) {
      return Err(path + ".parameters", "expected an object, got " + TypeName(t.at("parameters")));
    }
    if (Present(t, "strict") && !t.at("strict").is_boolean()) {
      return Err(path + ".strict", "expected a boolean, got " + TypeName(t.at("strict")));
    }
    Json fn = Json::object();
    for (const char* f : {"name", "description", "parameters", "strict"}) {
      if (Present(t, f)) fn[f] = t.at(f);
    }
    out.push_back(Json{{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

// Sets chat's tool_choice (and, for allowed_tools, narrows `chat["tools"]` to the allowed functions).
Status ChatToolChoice(const Json& choice, Json& chat) {
  if (choice.is_string()) {
    const std::string& c = choice.get_ref<const std::string&>();
    if (c != "auto" && c != "none" && c != "required") {
      return Err("tool_choice",
                 "expected \"auto\", \"none\", \"required\" or an object, got \"" + Shown(c) + "\"");
    }
    chat["tool_choice"] = c;
    return Status::Ok();
  }
  if (!choice.is_object())
    return Err("tool_choice", "expected a string or an object, got " + TypeName(choice));
  LS_RETURN_IF_ERROR(ExpectString(choice, "type", "tool_choice.type", true));
  const std::string& type = choice.at("type").get_ref<const std::string&>();
  if (type == "function") {
    LS_RETURN_IF_ERROR(CheckKeys(choice, "tool_choice", {"type", "name"}));
    LS_RETURN_IF_ERROR(ExpectString(choice, "name", "tool_choice.name", true));
    chat["tool_choice"] = Json{{"type", "function"}, {"function", {{"name", choice.at("name")}}}};
    return Status::Ok();
  }
  if (type != "allowed_tools") {
    return Err("tool_choice.type", "'" + Shown(type) + "' is not supported (function and allowed_tools are)");
  }
  LS_RETURN_IF_ERROR(CheckKeys(choice, "tool_choice", {"type", "mode", "tools"}));
  LS_RETURN_IF_ERROR(ExpectString(choice, "mode", "tool_choice.mode", true));
  const std::string& mode = choice.at("mode").get_ref<const std::string&>();
  if (mode != "auto" && mode != "required") {
    return Err("tool_choice.mode", "expected \"auto\" or \"required\", got \"" + Shown(mode) + "\"");
  }
  auto allowed = choice.find("tools");
  if (allowed == choice.end() || !allowed->is_array()) return Err("tool_choice.tools", "expected a list");
  const Json offered = chat.contains("tools") ? chat["tools"] : Json::array();
  Json kept = Json::array();
  for (size_t j = 0; j < allowed->size(); ++j) {
    const std::string path = "tool_choice.tools[" + std::to_string(j) + "]";
    const Json& a = (*allowed)[j];
    if (!a.is_object()) return Err(path, "expected an object, got " + TypeName(a));
    LS_RETURN_IF_ERROR(ExpectString(a, "type", path + ".type", true));
    if (a.at("type").get_ref<const std::string&>() != "function") {
      return Err(path + ".type", "only function tools are supported");
    }
    LS_RETURN_IF_ERROR(CheckKeys(a, path, {"type", "name"}));
    LS_RETURN_IF_ERROR(ExpectString(a, "name", path + ".name", true));
    const std::string& name = a.at("name").get_ref<const std::string&>();
    auto found = std::find_if(offered.begin(), offered.end(), [&](const Json& t) {
      auto fn = t.find("function");
      if (fn == t.end() || !fn->is_object()) return false;
      auto n = fn->find("name");
      return n != fn->end() && n->is_string() && n->get_ref<const std::string&>() == name;
    });
    if (found == offered.end()) return Err(path + ".name", "'" + Shown(name) + "' is not among tools");
    kept.push_back(*found);
  }
  if (kept.empty()) return Err("tool_choice.tools", "must name at least one function");
  chat["tools"] = std::move(kept);
  chat["tool_choice"] = mode;
  return Status::Ok();
}

Status TextConfig(const Json& text, Json& chat) {
  if (!text.is_object()) return Err("text", "expected an object, got " + TypeName(text));
  LS_RETURN_IF_ERROR(CheckKeys(text, "text", {"format", "verbosity"}));
  if (Present(text, "verbosity")) {
    const Json& v = text.at("verbosity");
    if (!v.is_string()) return Err("text.verbosity", "expected a string, got " + TypeName(v));
    if (v.get<std::string>() != "medium") {
      return Err("text.verbosity", "only \"medium\" is supported (this server cannot steer verbosity)");
    }
  }
  if (!Present(text, "format")) return Status::Ok();
  const Json& f = text.at("format");
  if (!f.is_object()) return Err("text.format", "expected an object, got " + TypeName(f));
  LS_RETURN_IF_ERROR(ExpectString(f, "type", "text.format.type", true));
  const std::string& type = f.at("type").get_ref<const std::string&>();
  if (type == "text" || type == "json_object") {
    LS_RETURN_IF_ERROR(CheckKeys(f, "text.format", {"type"}));
    if (type == "json_object") chat["response_format"] = Json{{"type", "json_object"}};
    return Status::Ok();
  }
  if (type != "json_schema") {
    return Err("text.format.type",
               "expected \"text\", \"json_object\" or \"json_schema\", got \"" + Shown(type) + "\"");
  }
  LS_RETURN_IF_ERROR(CheckKeys(f, "text.format", {"type", "name", "schema", "description", "strict"}));
  LS_RETURN_IF_ERROR(ExpectString(f, "name", "text.format.name", false));
  LS_RETURN_IF_ERROR(ExpectString(f, "description", "text.format.description", false));
  if (Present(f, "strict") && !f.at("strict").is_boolean()) {
    return Err("text.format.strict", "expected a boolean, got " + TypeName(f.at("strict")));
  }
  Json js = Json::object();
  for (const char* k : {"name", "description", "schema", "strict"}) {
    if (Present(f, k)) js[k] = f.at(k);
  }
  chat["response_format"] = Json{{"type", "json_schema"}, {"json_schema", std::move(js)}};
  return Status::Ok();
}

// reasoning.effort -> template variables: `enable_thinking` (Qwen3 and other hybrid thinkers) and
// `reasoning_effort` (templates that print an effort level, e.g. gpt-oss). The client's own
// chat_template_kwargs win over both.
Status ReasoningConfig(const Json& reasoning, Json& kwargs) {
  if (!reasoning.is_object()) return Err("reasoning", "expected an object, got " + TypeName(reasoning));
  LS_RETURN_IF_ERROR(CheckKeys(reasoning, "reasoning", {"effort", "summary", "generate_summary"}));
  for (const char* f : {"summary", "generate_summary"}) {
    const std::string path = std::string("reasoning.") + f;
    LS_RETURN_IF_ERROR(ExpectString(reasoning, f, path, false));
    if (!Present(reasoning, f)) continue;
    const std::string& s = reasoning.at(f).get_ref<const std::string&>();
    if (s == "concise" || s == "detailed") {
      return Err(path, "\"" + s +
                           "\" is not supported: this server returns the reasoning text itself, never "
                           "summaries (use \"auto\" or omit it)");
    }
    if (s != "auto")
      return Err(path, "expected \"auto\", \"concise\" or \"detailed\", got \"" + Shown(s) + "\"");
  }
  LS_RETURN_IF_ERROR(ExpectString(reasoning, "effort", "reasoning.effort", false));
  if (!Present(reasoning, "effort")) return Status::Ok();
  const std::string& e = reasoning.at("effort").get_ref<const std::string&>();
  static const char* kEfforts[] = {"none", "minimal", "low", "medium", "high", "xhigh", "max"};
  if (std::find(std::begin(kEfforts), std::end(kEfforts), e) == std::end(kEfforts)) {
    return Err("reasoning.effort",
               "expected none, minimal, low, medium, high, xhigh or max, got \"" + Shown(e) + "\"");
  }
  if (!kwargs.contains("enable_thinking")) kwargs["enable_thinking"] = e != "none";
  if (!kwargs.contains("reasoning_effort")) kwargs["reasoning_effort"] = e;
  return Status::Ok();
}

// Replaces `from` at the start of `m` (followed by '.', '[', ':' or the end) with `to`.
bool RenamePrefix(std::string& m, std::string_view from, std::string_view to) {
  if (m.compare(0, from.size(), from) != 0) return false;
  if (m.size() > from.size() && std::string_view(".[: ").find(m[from.size()]) == std::string_view::npos) {
    return false;
  }
  m.replace(0, from.size(), to);
  return true;
}

}  // namespace

Result<Json> ResponsesToChatBody(const Json& body) {
  if (!body.is_object()) return InvalidArgument("the request body must be a JSON object");
  LS_RETURN_IF_ERROR(CheckKeys(body, "", TopLevelFields()));
  LS_RETURN_IF_ERROR(CheckUnsupported(body));
  Json chat = Json::object();
  if (Present(body, "model")) chat["model"] = body.at("model");

  Json messages = Json::array();
  LS_RETURN_IF_ERROR(ExpectString(body, "instructions", "instructions", false));
  if (Present(body, "instructions") && !body.at("instructions").get_ref<const std::string&>().empty()) {
    messages.push_back(Json{{"role", "system"}, {"content", body.at("instructions")}});
  }
  if (!Present(body, "input")) return Err("input", "is required");
  LS_ASSIGN_OR_RETURN(Json input_messages, InputMessages(body.at("input")));
  for (Json& m : input_messages) messages.push_back(std::move(m));
  chat["messages"] = std::move(messages);

  if (Present(body, "max_output_tokens")) {
    LS_ASSIGN_OR_RETURN(int64_t n, Integer(body.at("max_output_tokens"), "max_output_tokens", 1,
                                           std::numeric_limits<int32_t>::max()));
    chat["max_tokens"] = n;
  }
  for (const std::string& f : CopiedFields()) {
    if (Present(body, f.c_str())) chat[f] = body.at(f);
  }
  if (Present(body, "tools")) {
    LS_ASSIGN_OR_RETURN(Json tools, ChatTools(body.at("tools")));
    if (!tools.empty()) chat["tools"] = std::move(tools);
  }
  if (Present(body, "tool_choice")) LS_RETURN_IF_ERROR(ChatToolChoice(body.at("tool_choice"), chat));
  if (Present(body, "text")) LS_RETURN_IF_ERROR(TextConfig(body.at("text"), chat));

  Json kwargs = Json::object();
  if (Present(body, "chat_template_kwargs")) {
    const Json& k = body.at("chat_template_kwargs");
    if (!k.is_object()) return Err("chat_template_kwargs", "expected an object, got " + TypeName(k));
    kwargs = k;
  }
  if (Present(body, "reasoning")) LS_RETURN_IF_ERROR(ReasoningConfig(body.at("reasoning"), kwargs));
  if (!kwargs.empty()) chat["chat_template_kwargs"] = std::move(kwargs);
  return chat;
}

Status ChatErrorToResponses(const Status& status) {
  if (status.ok() || status.code() != Code::kInvalidArgument) return status;
  std::string m = status.message();
  // tools[i].function.x -> tools[i].x
  if (m.rfind("tools[", 0) == 0) {
    const size_t close = m.find(']');
    const std::string_view fn = ".function";
    if (close != std::string::npos && m.compare(close + 1, fn.size(), fn) == 0) m.erase(close + 1, fn.size());
    return Status(status.code(), m);
  }
  if (RenamePrefix(m, "tool_choice.function.name", "tool_choice.name") ||
      RenamePrefix(m, "response_format.json_schema", "text.format") ||
      RenamePrefix(m, "response_format.schema", "text.format.schema") ||
      RenamePrefix(m, "response_format", "text.format") ||
      RenamePrefix(m, "max_completion_tokens", "max_output_tokens") ||
      RenamePrefix(m, "max_tokens", "max_output_tokens")) {
    return Status(status.code(), m);
  }
  if (m.rfind("messages", 0) == 0) {
    // A chat message index does not map back to one input item (instructions and merged items): name the
    // whole input.
    const size_t colon = m.find(':');
    const size_t space = m.find(' ');
    const size_t end = std::min(colon, space);
    if (end != std::string::npos) m.replace(0, end, "input");
    return Status(status.code(), m);
  }
  return status;
}

}  // namespace lazyslot::server
