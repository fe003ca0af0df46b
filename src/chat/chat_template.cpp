// ChatTemplate: model or built-in Jinja chat templates, rendered by the jinja_* interpreter.
#include "chat/chat_template.h"

#include <utility>

#include "chat/builtin_templates.h"
#include "chat/jinja/jinja_eval.h"
#include "chat/jinja/jinja_parser.h"
#include "core/log.h"

namespace lazyslot {

namespace {

// A short conversation every usable chat template must accept.
nlohmann::ordered_json ProbeConversation(bool with_system) {
  nlohmann::ordered_json m = nlohmann::ordered_json::array();
  if (with_system) m.push_back({{"role", "system"}, {"content", "You are a helpful assistant."}});
  m.push_back({{"role", "user"}, {"content", "Hello"}});
  m.push_back({{"role", "assistant"}, {"content", "Hi there."}});
  m.push_back({{"role", "user"}, {"content", "How are you?"}});
  return m;
}

}  // namespace

nlohmann::ordered_json ChatMessage::ToJson() const {
  nlohmann::ordered_json m = nlohmann::ordered_json::object();
  m["role"] = role;
  m["content"] = content;
  if (extra.is_object()) {
    for (const auto& [k, v] : extra.items()) {
      if (k != "role" && k != "content") m[k] = v;
    }
  }
  return m;
}

Result<ChatTemplate> ChatTemplate::Parse(const std::string& source, const std::string& name) {
  auto program = jinja::ParseTemplate(source);
  if (!program.ok()) {
    return Status(program.status().code(), "chat template '" + name + "': " + program.status().message());
  }
  ChatTemplate t;
  t.name_ = name;
  t.source_ = source;
  t.program_ = std::move(program).value();
  return t;
}

std::vector<std::string> ChatTemplate::BuiltinNames() { return BuiltinTemplateNames(); }

std::string ChatTemplate::BuiltinNamesList() {
  std::string list;
  for (const std::string& n : BuiltinTemplateNames()) list += (list.empty() ? "" : ", ") + n;
  return list;
}

Result<ChatTemplate> ChatTemplate::Builtin(const std::string& name) {
  const std::string body = BuiltinTemplateSource(name);
  if (body.empty()) {
    return NotFound("no built-in chat template named '" + name + "' (known: " + BuiltinNamesList() + ")");
  }
  return Parse(body, name);
}

ChatTemplate ChatTemplate::ForModel(const std::string& gguf_template, std::string* chosen_name_out) {
  auto choose = [&](ChatTemplate t) {
    if (chosen_name_out) *chosen_name_out = t.name();
    return t;
  };
  if (!gguf_template.empty()) {
    Result<ChatTemplate> parsed = Parse(gguf_template, "model");
    if (parsed.ok()) {
      const nlohmann::ordered_json ctx = {{"bos_token", ""}, {"eos_token", ""}};
      Result<std::string> probe = parsed->Apply(ProbeConversation(false), true, ctx);
      if (!probe.ok()) probe = parsed->Apply(ProbeConversation(true), true, ctx);
      if (probe.ok() && !probe->empty()) return choose(std::move(parsed).value());
      LS_LOG_WARN("model chat template fails on a probe conversation (%s); using a built-in template",
                  probe.ok() ? "empty output" : probe.status().message().c_str());
    } else {
      LS_LOG_WARN("model chat template does not parse (%s); using a built-in template",
                  parsed.status().message().c_str());
    }
  }
  std::string name = "chatml";
  if (gguf_template.find("<|start_header_id|>") != std::string::npos) {
    name = "llama3";
  } else if (gguf_template.find("[INST]") != std::string::npos) {
    name = "llama2";
  }
  Result<ChatTemplate> builtin = Builtin(name);
  LS_CHECK(builtin.ok());  // built-ins are constants covered by tests
  return choose(std::move(builtin).value());
}

Result<std::string> ChatTemplate::Apply(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                        const nlohmann::ordered_json& extra_context) const {
  if (!program_) return Internal("chat template used before Parse()");
  if (!messages.is_array()) return InvalidArgument("chat messages must be a JSON array");
  if (!extra_context.is_null() && !extra_context.is_object()) {
    return InvalidArgument("chat template context must be a JSON object");
  }
  nlohmann::ordered_json ctx = extra_context.is_object() ? extra_context : nlohmann::ordered_json::object();
  ctx["messages"] = messages;
  ctx["add_generation_prompt"] = add_generation_prompt;
  LS_ASSIGN_OR_RETURN(jinja::Value context, jinja::Value::FromJson(ctx));
  jinja::RenderLimits limits;
  limits.now_unix = pinned_now_;
  limits.concat_none_as_empty = true;  // as llama.cpp renders chat templates (firefunction-v2's `functions`)
  limits.none_filters_as_empty = true;  // and Functionary v3.1's `tools | selectattr(...)` without tools
  jinja::Evaluator evaluator(*program_, limits);
  Result<std::string> out = evaluator.Render(context);
  if (!out.ok()) {
    return Status(out.status().code(), "chat template '" + name_ + "': " + out.status().message());
  }
  return out;
}

Result<std::string> ChatTemplate::Apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                        const nlohmann::ordered_json& extra_context) const {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) arr.push_back(m.ToJson());
  return Apply(arr, add_generation_prompt, extra_context);
}

}  // namespace lazyslot
