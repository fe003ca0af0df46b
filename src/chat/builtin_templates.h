// Built-in chat templates: llama-server's named formats (`--chat-template chatml`, `gemma`, `mistral-v7`, ...,
// the names of llama.cpp's LLM_CHAT_TEMPLATES table) as Jinja templates written for lazyslot, each rendering
// what llama.cpp's legacy formatter (llm_chat_apply_template) writes for system, user and assistant turns.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lazyslot {

// The Jinja source of a built-in template (including the text_of macro it uses), or empty when `name` is not
// one. The source reads `messages` and `add_generation_prompt` only.
std::string BuiltinTemplateSource(std::string_view name);
// Every built-in name, sorted.
std::vector<std::string> BuiltinTemplateNames();

}  // namespace lazyslot
