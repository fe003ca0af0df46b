// Built-in chat templates (builtin_templates.h): llama-server's named formats, each a Jinja template written
// here from the behaviour of llama.cpp's legacy formatter (src/llama-chat.cpp, llm_chat_apply_template at
// d32676d): the same text for system, user and assistant turns, the same trimming, the same generation prompt.
#include "chat/builtin_templates.h"

#include <algorithm>
#include <map>

namespace lazyslot {
namespace {

// Message content as text: a string, or the text parts of a parts list joined (null: empty).
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

// A template whose turns are `prefix role middle content suffix` with the same shape for every role, and a
// fixed generation prompt. `trim` strips the content as llama.cpp's trim() does.
std::string Uniform(const std::string& prefix, const std::string& middle, const std::string& suffix,
                    const std::string& generation, bool trim = false) {
  return "{%- for m in messages -%}{{- '" + prefix + "' + m['role'] + '" + middle + "' + text_of(m['content'])" +
         (trim ? " | trim" : "") + " + '" + suffix + "' -}}{%- endfor -%}" +
         "{%- if add_generation_prompt -%}{{- '" + generation + "' -}}{%- endif -%}";
}

// Llama 2 and its variants: "[INST] " opens the first turn (no BOS), a system message goes inside it (with
// <<SYS>> where supported, else as a line), "</s>" ends an assistant turn and the next turn opens again
// (with "<s>" for -sys-bos); no generation prompt (the text already ends in "[/INST]").
std::string Llama2(bool system_tags, bool bos_inside, bool strip) {
  const std::string content = strip ? "text_of(m['content']) | trim" : "text_of(m['content'])";
  return std::string("{%- set ns = namespace(inside=true) -%}{{- '[INST] ' -}}") +
         "{%- for m in messages -%}{%- set c = " + content + " -%}" +
         "{%- if not ns.inside -%}{%- set ns.inside = true -%}{{- '" + (bos_inside ? "<s>[INST] " : "[INST] ") +
         "' -}}{%- endif -%}" + "{%- if m['role'] == 'system' -%}" +
         (system_tags ? "{{- '<<SYS>>\\n' + c + '\\n<</SYS>>\\n\\n' -}}" : "{{- c + '\\n' -}}") +
         "{%- elif m['role'] == 'user' -%}{{- c + ' [/INST]' -}}"
         "{%- else -%}{{- c + '</s>' -}}{%- set ns.inside = false -%}{%- endif -%}{%- endfor -%}";
}

// Mistral v1 / v3 / v3-tekken: "[INST]" opens a turn that holds the system and user messages; the
// assistant's answer closes it with "</s>". No generation prompt.
std::string MistralV1V3(const std::string& lead, const std::string& trail, bool trim_assistant) {
  return std::string("{%- set ns = namespace(inside=false) -%}{%- for m in messages -%}") +
         "{%- set c = text_of(m['content']) -%}" +
         "{%- if not ns.inside -%}{{- '" + lead + "[INST]" + trail + "' -}}{%- set ns.inside = true -%}{%- endif -%}" +
         "{%- if m['role'] == 'system' -%}{{- c + '\\n\\n' -}}" + "{%- elif m['role'] == 'user' -%}{{- c + '" + lead +
         "[/INST]' -}}" + "{%- else -%}{{- '" + trail + "' + " + (trim_assistant ? "c | trim" : "c") +
         " + '</s>' -}}{%- set ns.inside = false -%}{%- endif -%}{%- endfor -%}";
}

// Mistral v7 (" " after each tag) and v7-tekken (none). No generation prompt.
std::string MistralV7(const std::string& sp) {
  return "{%- for m in messages -%}{%- set c = text_of(m['content']) -%}"
         "{%- if m['role'] == 'system' -%}{{- '[SYSTEM_PROMPT]" + sp + "' + c + '[/SYSTEM_PROMPT]' -}}"
         "{%- elif m['role'] == 'user' -%}{{- '[INST]" + sp + "' + c + '[/INST]' -}}"
         "{%- else -%}{{- '" + sp + "' + c + '</s>' -}}{%- endif -%}{%- endfor -%}";
}

// Vicuna: a system message is a paragraph ("SYSTEM: " line in the Orca variant), then USER:/ASSISTANT: lines.
std::string Vicuna(bool orca) {
  return std::string("{%- for m in messages -%}{%- set c = text_of(m['content']) -%}") +
         "{%- if m['role'] == 'system' -%}" +
         (orca ? "{{- 'SYSTEM: ' + c + '\\n' -}}" : "{{- c + '\\n\\n' -}}") +
         "{%- elif m['role'] == 'user' -%}{{- 'USER: ' + c + '\\n' -}}"
         "{%- elif m['role'] == 'assistant' -%}{{- 'ASSISTANT: ' + c + '</s>\\n' -}}{%- endif -%}{%- endfor -%}"
         "{%- if add_generation_prompt -%}{{- 'ASSISTANT:' -}}{%- endif -%}";
}

// EXAONE 3 and 4: [|role|] tags; a user turn ends with a newline only. EXAONE 4 adds the tool role.
std::string Exaone(bool tool_role) {
  return std::string("{%- for m in messages -%}{%- set c = text_of(m['content']) | trim -%}") +
         "{%- if m['role'] == 'system' -%}{{- '[|system|]' + c + '[|endofturn|]\\n' -}}"
         "{%- elif m['role'] == 'user' -%}{{- '[|user|]' + c + '\\n' -}}"
         "{%- elif m['role'] == 'assistant' -%}{{- '[|assistant|]' + c + '[|endofturn|]\\n' -}}" +
         (tool_role ? "{%- elif m['role'] == 'tool' -%}{{- '[|tool|]' + c + '[|endofturn|]\\n' -}}" : "") +
         "{%- endif -%}{%- endfor -%}{%- if add_generation_prompt -%}{{- '[|assistant|]' -}}{%- endif -%}";
}

// Bailing (Ling/Ring): <role>HUMAN</role> for the user, the role in capitals otherwise; -think opens <think>.
std::string Bailing(bool think) {
  return std::string(
             "{%- for m in messages -%}{{- '<role>' + ('HUMAN' if m['role'] == 'user' else m['role'] | upper) + "
             "'</role>' + text_of(m['content']) -}}{%- endfor -%}"
             "{%- if add_generation_prompt -%}{{- '<role>ASSISTANT</role>") +
         (think ? "<think>" : "") + "' -}}{%- endif -%}";
}

// Granite 3.x and 4.x: <|start_of_role|>role<|end_of_role|>content<|end_of_text|>\n; the pseudo-role
// assistant_tool_call adds <|tool_call|> (4.x also writes its role as "assistant").
std::string Granite(bool v4) {
  return std::string("{%- for m in messages -%}") +
         (v4 ? "{%- if m['role'] == 'assistant_tool_call' -%}"
               "{{- '<|start_of_role|>assistant<|end_of_role|><|tool_call|>' -}}"
               "{%- else -%}{{- '<|start_of_role|>' + m['role'] + '<|end_of_role|>' -}}{%- endif -%}"
             : "{{- '<|start_of_role|>' + m['role'] + '<|end_of_role|>' -}}"
               "{%- if m['role'] == 'assistant_tool_call' -%}{{- '<|tool_call|>' -}}{%- endif -%}") +
         "{{- text_of(m['content']) + '<|end_of_text|>\\n' -}}{%- endfor -%}"
         "{%- if add_generation_prompt -%}{{- '<|start_of_role|>assistant<|end_of_role|>' -}}{%- endif -%}";
}

// Templates whose whole text is written out here.
const std::map<std::string, std::string>& FixedSources() {
  static const std::map<std::string, std::string> sources = {
      // Gemma: no system role; system text joins the next user turn; the assistant is "model".
      {"gemma", R"JINJA(
{%- set ns = namespace(system='') -%}
{%- for m in messages -%}
  {%- if m['role'] == 'system' -%}
    {%- set ns.system = ns.system + text_of(m['content']) | trim -%}
  {%- else -%}
    {%- set role = 'model' if m['role'] == 'assistant' else m['role'] -%}
    {{- '<start_of_turn>' + role + '\n' -}}
    {%- if ns.system and role != 'model' -%}{{- ns.system + '\n\n' -}}{%- set ns.system = '' -%}{%- endif -%}
    {{- text_of(m['content']) | trim + '<end_of_turn>\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<start_of_turn>model\n' -}}{%- endif -%}
)JINJA"},
      // Orion: system text joins the next user turn; the user turn ends with the assistant's cue.
      {"orion", R"JINJA(
{%- set ns = namespace(system='') -%}
{%- for m in messages -%}
  {%- if m['role'] == 'system' -%}
    {%- set ns.system = ns.system + text_of(m['content']) -%}
  {%- elif m['role'] == 'user' -%}
    {{- 'Human: ' -}}
    {%- if ns.system -%}{{- ns.system + '\n\n' -}}{%- set ns.system = '' -%}{%- endif -%}
    {{- text_of(m['content']) + '\n\nAssistant: </s>' -}}
  {%- else -%}
    {{- text_of(m['content']) + '</s>' -}}
  {%- endif -%}
{%- endfor -%}
)JINJA"},
      {"openchat", R"JINJA(
{%- for m in messages -%}
  {%- if m['role'] == 'system' -%}
    {{- text_of(m['content']) + '<|end_of_turn|>' -}}
  {%- else -%}
    {{- 'GPT4 Correct ' + m['role'][:1] | upper + m['role'][1:] + ': ' + text_of(m['content']) + '<|end_of_turn|>' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- 'GPT4 Correct Assistant:' -}}{%- endif -%}
)JINJA"},
      {"monarch", R"JINJA(
{%- for m in messages -%}
  {{- ('' if loop.first else '<s>') + m['role'] + '\n' + text_of(m['content']) + '</s>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<s>assistant\n' -}}{%- endif -%}
)JINJA"},
      {"deepseek", R"JINJA(
{%- for m in messages -%}
  {%- if m['role'] == 'system' -%}{{- text_of(m['content']) -}}
  {%- elif m['role'] == 'user' -%}{{- '### Instruction:\n' + text_of(m['content']) + '\n' -}}
  {%- elif m['role'] == 'assistant' -%}{{- '### Response:\n' + text_of(m['content']) + '\n<|EOT|>\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '### Response:\n' -}}{%- endif -%}
)JINJA"},
      {"deepseek2", R"JINJA(
{%- for m in messages -%}
  {%- if m['role'] == 'system' -%}{{- text_of(m['content']) + '\n\n' -}}
  {%- elif m['role'] == 'user' -%}{{- 'User: ' + text_of(m['content']) + '\n\n' -}}
  {%- elif m['role'] == 'assistant' -%}{{- 'Assistant: ' + text_of(m['content']) + '<｜end▁of▁sentence｜>' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}
)JINJA"},
      {"deepseek3", R"JINJA(
{%- for m in messages -%}
  {%- if m['role'] == 'system' -%}{{- text_of(m['content']) + '\n\n' -}}
  {%- elif m['role'] == 'user' -%}{{- '<｜User｜>' + text_of(m['content']) -}}
  {%- elif m['role'] == 'assistant' -%}{{- '<｜Assistant｜>' + text_of(m['content']) + '<｜end▁of▁sentence｜>' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<｜Assistant｜>' -}}{%- endif -%}
)JINJA"},
      // No template: the contents one after the other.
      {"deepseek-ocr", "{%- for m in messages -%}{{- text_of(m['content']) -}}{%- endfor -%}"},
      {"command-r", R"JINJA(
{%- for m in messages -%}
  {%- set c = text_of(m['content']) | trim -%}
  {%- if m['role'] == 'system' -%}{{- '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' + c + '<|END_OF_TURN_TOKEN|>' -}}
  {%- elif m['role'] == 'user' -%}{{- '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + c + '<|END_OF_TURN_TOKEN|>' -}}
  {%- elif m['role'] == 'assistant' -%}{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' + c + '<|END_OF_TURN_TOKEN|>' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' -}}{%- endif -%}
)JINJA"},
      {"chatglm3", R"JINJA(
{{- '[gMASK]sop' -}}
{%- for m in messages -%}{{- '<|' + m['role'] + '|>\n ' + text_of(m['content']) -}}{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}
)JINJA"},
      {"chatglm4", R"JINJA(
{{- '[gMASK]<sop>' -}}
{%- for m in messages -%}{{- '<|' + m['role'] + '|>\n' + text_of(m['content']) -}}{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>\n' -}}{%- endif -%}
)JINJA"},
      {"minicpm", R"JINJA(
{%- for m in messages -%}
  {%- if m['role'] == 'user' -%}{{- '<用户>' + text_of(m['content']) | trim + '<AI>' -}}
  {%- else -%}{{- text_of(m['content']) | trim -}}{%- endif -%}
{%- endfor -%}
)JINJA"},
      {"exaone-moe", R"JINJA(
{%- for m in messages -%}
  {%- if m['role'] in ['system', 'user', 'assistant', 'tool'] -%}
    {{- '<|' + m['role'] + '|>\n' + text_of(m['content']) | trim + '<|endofturn|>\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>\n' -}}{%- endif -%}
)JINJA"},
      // RWKV World: the cue "Assistant:" follows a last user message whatever add_generation_prompt says.
      {"rwkv-world", R"JINJA(
{%- for m in messages -%}
  {%- set c = text_of(m['content']) | trim -%}
  {%- if m['role'] == 'system' -%}{{- 'System: ' + c + '\n\n' -}}
  {%- elif m['role'] == 'user' -%}{{- 'User: ' + c + '\n\n' -}}{%- if loop.last -%}{{- 'Assistant:' -}}{%- endif -%}
  {%- elif m['role'] == 'assistant' -%}{{- 'Assistant: ' + c + '\n\n' -}}
  {%- endif -%}
{%- endfor -%}
)JINJA"},
      {"gigachat", R"JINJA(
{%- set has_system = messages | length > 0 and messages[0]['role'] == 'system' -%}
{%- if has_system -%}{{- '<s>' + text_of(messages[0]['content']) + '<|message_sep|>' -}}{%- else -%}{{- '<s>' -}}{%- endif -%}
{%- for m in messages -%}
  {%- if not (loop.first and has_system) -%}
    {%- if m['role'] == 'user' -%}
      {{- 'user<|role_sep|>' + text_of(m['content']) + '<|message_sep|>available functions<|role_sep|>[]<|message_sep|>' -}}
    {%- elif m['role'] == 'assistant' -%}
      {{- 'assistant<|role_sep|>' + text_of(m['content']) + '<|message_sep|>' -}}
    {%- endif -%}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- 'assistant<|role_sep|>' -}}{%- endif -%}
)JINJA"},
      {"yandex", R"JINJA(
{%- for m in messages -%}
  {%- if m['role'] == 'user' -%}{{- ' Пользователь: ' + text_of(m['content']) + '\n\n' -}}
  {%- elif m['role'] == 'assistant' -%}{{- ' Ассистент: ' + text_of(m['content']) + '\n\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- ' Ассистент:[SEP]' -}}{%- endif -%}
)JINJA"},
      {"bailing2", R"JINJA(
{%- if not (messages | length > 0 and messages[0]['role'] == 'system') -%}
  {{- '<role>SYSTEM</role>detailed thinking off<|role_end|>' -}}
{%- endif -%}
{%- for m in messages -%}
  {{- '<role>' + ('HUMAN' if m['role'] == 'user' else m['role'] | upper) + '</role>' + text_of(m['content']) + '<|role_end|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<role>ASSISTANT</role>' -}}{%- endif -%}
)JINJA"},
      // SmolVLM: <|im_start|> is its BOS; the turns are not ChatML.
      {"smolvlm", R"JINJA(
{{- '<|im_start|>' -}}
{%- for m in messages -%}
  {%- if m['role'] == 'system' -%}{{- text_of(m['content']) + '\n\n' -}}
  {%- elif m['role'] == 'user' -%}{{- 'User: ' + text_of(m['content']) + '<end_of_utterance>\n' -}}
  {%- else -%}{{- 'Assistant: ' + text_of(m['content']) + '<end_of_utterance>\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}
)JINJA"},
      {"hunyuan-moe", R"JINJA(
{%- for m in messages -%}
  {%- if m['role'] == 'system' -%}{{- '<|startoftext|>' + text_of(m['content']) + '<|extra_4|>' -}}
  {%- elif m['role'] == 'assistant' -%}{{- text_of(m['content']) + '<|eos|>' -}}
  {%- else -%}{{- '<|startoftext|>' + text_of(m['content']) + '<|extra_0|>' -}}
  {%- endif -%}
{%- endfor -%}
)JINJA"},
      {"gpt-oss", R"JINJA(
{%- for m in messages -%}
  {{- '<|start|>' + m['role'] + '<|message|>' + text_of(m['content']) + ('<|return|>' if m['role'] == 'assistant' else '<|end|>') -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|start|>assistant' -}}{%- endif -%}
)JINJA"},
      {"hunyuan-dense", R"JINJA(
{%- for m in messages -%}
  {%- if loop.first and m['role'] == 'system' -%}{{- text_of(m['content']) + '<｜hy_place▁holder▁no▁3｜>' -}}{%- endif -%}
  {%- if m['role'] == 'assistant' -%}{{- '<｜hy_Assistant｜>' + text_of(m['content']) + '<｜hy_place▁holder▁no▁2｜>' -}}
  {%- elif m['role'] == 'user' -%}{{- '<｜hy_User｜>' + text_of(m['content']) + '<｜hy_Assistant｜>' -}}
  {%- endif -%}
{%- endfor -%}
)JINJA"},
      {"hunyuan-vl", R"JINJA(
{{- '<｜hy_begin▁of▁sentence｜>' -}}
{%- for m in messages -%}
  {%- if loop.first and m['role'] == 'system' -%}{{- text_of(m['content']) + '<｜hy_place▁holder▁no▁3｜>' -}}
  {%- elif m['role'] == 'user' -%}{{- text_of(m['content']) + '<｜hy_User｜>' -}}
  {%- elif m['role'] == 'assistant' -%}{{- text_of(m['content']) + '<｜hy_Assistant｜>' -}}
  {%- endif -%}
{%- endfor -%}
)JINJA"},
      {"kimi-k2", R"JINJA(
{%- set tags = {'system': '<|im_system|>system<|im_middle|>', 'user': '<|im_user|>user<|im_middle|>',
                'assistant': '<|im_assistant|>assistant<|im_middle|>', 'tool': '<|im_system|>tool<|im_middle|>'} -%}
{%- for m in messages -%}
  {{- tags[m['role']] if m['role'] in tags else '' -}}{{- text_of(m['content']) + '<|im_end|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_assistant|>assistant<|im_middle|>' -}}{%- endif -%}
)JINJA"},
      {"seed_oss", R"JINJA(
{%- for m in messages -%}
  {{- '<seed:bos>' + m['role'] + '\n' + (text_of(m['content']) | trim if m['role'] == 'assistant' else text_of(m['content'])) + '<seed:eos>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<seed:bos>assistant\n' -}}{%- endif -%}
)JINJA"},
      {"grok-2", R"JINJA(
{%- for m in messages -%}
  {%- if m['role'] == 'system' -%}{{- 'System: ' + text_of(m['content']) | trim + '<|separator|>\n\n' -}}
  {%- elif m['role'] == 'user' -%}{{- 'Human: ' + text_of(m['content']) | trim + '<|separator|>\n\n' -}}
  {%- elif m['role'] == 'assistant' -%}{{- 'Assistant: ' + text_of(m['content']) + '<|separator|>\n\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}
)JINJA"},
      {"pangu-embedded", R"JINJA(
{%- set names = {'system': '系统', 'user': '用户', 'assistant': '助手', 'tool': '工具', 'function': '方法'} -%}
{%- for m in messages -%}
  {%- if loop.first and m['role'] != 'system' -%}{{- '[unused9]系统：[unused10]' -}}{%- endif -%}
  {%- if m['role'] in names -%}{{- '[unused9]' + names[m['role']] + '：' + text_of(m['content']) + '[unused10]' -}}{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '[unused9]助手：' -}}{%- endif -%}
)JINJA"},
  };
  return sources;
}

std::map<std::string, std::string> AllSources() {
  std::map<std::string, std::string> s = FixedSources();
  s["chatml"] = Uniform("<|im_start|>", "\\n", "<|im_end|>\\n", "<|im_start|>assistant\\n");
  s["llama2"] = Llama2(false, false, false);
  s["llama2-sys"] = Llama2(true, false, false);
  s["llama2-sys-bos"] = Llama2(true, true, false);
  s["llama2-sys-strip"] = Llama2(true, false, true);
  s["mistral-v1"] = MistralV1V3(" ", " ", false);
  s["mistral-v3"] = MistralV1V3("", " ", true);
  s["mistral-v3-tekken"] = MistralV1V3("", "", false);
  s["mistral-v7"] = MistralV7(" ");
  s["mistral-v7-tekken"] = MistralV7("");
  s["phi3"] = Uniform("<|", "|>\\n", "<|end|>\\n", "<|assistant|>\\n");
  s["phi4"] = Uniform("<|im_start|>", "<|im_sep|>", "<|im_end|>", "<|im_start|>assistant<|im_sep|>");
  s["falcon3"] = Uniform("<|", "|>\\n", "\\n", "<|assistant|>\\n");
  s["zephyr"] = Uniform("<|", "|>\\n", "<|endoftext|>\\n", "<|assistant|>\\n");
  s["vicuna"] = Vicuna(false);
  s["vicuna-orca"] = Vicuna(true);
  s["llama3"] = Uniform("<|start_header_id|>", "<|end_header_id|>\\n\\n", "<|eot_id|>",
                        "<|start_header_id|>assistant<|end_header_id|>\\n\\n", /*trim=*/true);
  s["llama4"] = Uniform("<|header_start|>", "<|header_end|>\\n\\n", "<|eot|>",
                        "<|header_start|>assistant<|header_end|>\\n\\n", /*trim=*/true);
  s["glmedge"] = Uniform("<|", "|>\\n", "", "<|assistant|>");
  s["exaone3"] = Exaone(false);
  s["exaone4"] = Exaone(true);
  s["granite"] = Granite(false);
  s["granite-4.0"] = Granite(true);
  s["granite-4.1"] = Granite(true);
  s["megrez"] = Uniform("<|role_start|>", "<|role_end|>", "<|turn_end|>", "<|role_start|>assistant<|role_end|>");
  s["bailing"] = Bailing(false);
  s["bailing-think"] = Bailing(true);
  s["solar-open"] = Uniform("<|begin|>", "<|content|>", "<|end|>", "<|begin|>assistant");
  return s;
}

const std::map<std::string, std::string>& Sources() {
  static const std::map<std::string, std::string> sources = AllSources();
  return sources;
}

}  // namespace

std::string BuiltinTemplateSource(std::string_view name) {
  auto it = Sources().find(std::string(name));
  if (it == Sources().end()) return "";
  return std::string(kTextOfMacro) + it->second;
}

std::vector<std::string> BuiltinTemplateNames() {
  std::vector<std::string> names;
  for (const auto& [name, source] : Sources()) names.push_back(name);
  return names;  // std::map: sorted
}

}  // namespace lazyslot
