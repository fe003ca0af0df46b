// ChatTemplate: model or built-in Jinja chat templates, rendered by the jinja_* interpreter.
#include "chat/chat_template.h"

#include <utility>

#include "chat/jinja/jinja_eval.h"
#include "chat/jinja/jinja_parser.h"
#include "core/log.h"

namespace lazyslot {

namespace {

// Shared by the built-ins: message content as text (a string, or the text parts of a parts list).
constexpr const char* kTextOfMacro = R"JINJA(
{%- macro text_of(content) -%}
  {%- if content is string -%}
    {{- content -}}
  {%- elif content is iterable and content is not mapping -%}
    {%- for part in content -%}
      {%- if part is mapping and part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}
    {%- endfor -%}
  {%- endif -%}
{%- endmacro -%}
)JINJA";

// <|im_start|>role\ncontent<|im_end|>\n per turn; the generation prompt opens an assistant turn.
constexpr const char* kChatml = R"JINJA(
{%- for message in messages -%}
  {{- '<|im_start|>' + message['role'] + '\n' + text_of(message['content']) + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|im_start|>assistant\n' -}}
{%- endif -%}
)JINJA";

// Llama 2 chat: <s>[INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] answer </s><s>[INST] user [/INST]
// The system prompt goes inside the first user turn; generation continues after "[/INST]".
constexpr const char* kLlama2 = R"JINJA(
{%- set bos = bos_token if bos_token is defined else '' -%}
{%- set eos = eos_token if eos_token is defined else '' -%}
{%- set ns = namespace(system='', system_done=false) -%}
{%- if messages and messages[0]['role'] == 'system' -%}
  {%- set ns.system = text_of(messages[0]['content']) | trim -%}
  {%- set turns = messages[1:] -%}
{%- else -%}
  {%- set turns = messages -%}
{%- endif -%}
{%- for message in turns -%}
  {%- if message['role'] == 'user' -%}
    {{- bos + '[INST] ' -}}
    {%- if ns.system and not ns.system_done -%}
      {{- '<<SYS>>\n' + ns.system + '\n<</SYS>>\n\n' -}}
      {%- set ns.system_done = true -%}
    {%- endif -%}
    {{- text_of(message['content']) | trim + ' [/INST]' -}}
  {%- elif message['role'] == 'assistant' -%}
    {{- ' ' + text_of(message['content']) | trim + ' ' + eos -}}
  {%- endif -%}
{%- endfor -%}
)JINJA";

// Llama 3: bos, then <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|> per turn.
constexpr const char* kLlama3 = R"JINJA(
{{- bos_token if bos_token is defined -}}
{%- for message in messages -%}
  {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + text_of(message['content']) | trim + '<|eot_id|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
{%- endif -%}
)JINJA";

const char* BuiltinSource(const std::string& name) {
  if (name == "chatml") return kChatml;
  if (name == "llama2") return kLlama2;
  if (name == "llama3") return kLlama3;
  return nullptr;
}

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

std::vector<std::string> ChatTemplate::BuiltinNames() { return {"chatml", "llama2", "llama3"}; }

Result<ChatTemplate> ChatTemplate::Builtin(const std::string& name) {
  const char* body = BuiltinSource(name);
  if (!body) return NotFound("no built-in chat template named '" + name + "' (have chatml, llama2, llama3)");
  return Parse(std::string(kTextOfMacro) + body, name);
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
