// PrepareChat: validation, template rendering and the output constraint of a chat request.
#include "server/generation/chat_request.h"

#include <cctype>
#include <ctime>
#include <string_view>

#include "chat/chat_messages.h"

namespace lazyslot::server {
namespace {

// Reasoning switches, as llama-server sets `enable_thinking` (tools/server/server-common.cpp): in templates
// that read it, thinking is on unless -rea/--reasoning off or --reasoning-budget 0 turns it off; a request's
// reasoning_effort goes to the templates that read it (gpt-oss) and switches thinking on or off in those with
// enable_thinking (Qwen3). The client's chat_template_kwargs win over all of these.
Status ReasoningKwargs(const ServerState& st, const ModelContext& m, const Json& body, Json* extra) {
  const std::string& src = m.chat_template.source();
  if (auto it = extra->find("enable_thinking"); it != extra->end() && it->is_string()) {
    return InvalidArgument("invalid type for \"enable_thinking\" (expected boolean, got string)");
  }
  LS_ASSIGN_OR_RETURN(std::string effort, GetString(body, "reasoning_effort", ""));
  if (!effort.empty()) {
    if (effort != "none" && effort != "minimal" && effort != "low" && effort != "medium" &&
        effort != "high") {
      return InvalidArgument("reasoning_effort: '" + effort +
                             "' is not one of none, minimal, low, medium, high");
    }
    if (TemplateSupportsReasoningEffort(src)) {
      if (!extra->contains("reasoning_effort")) (*extra)["reasoning_effort"] = effort;
    } else if (TemplateSupportsThinkingSwitch(src)) {
      if (!extra->contains("enable_thinking")) {
        (*extra)["enable_thinking"] = effort != "none" && effort != "minimal";
      }
    } else {
      return InvalidArgument("reasoning_effort: the chat template '" + m.chat_template.name() +
                             "' has no reasoning switch (neither reasoning_effort nor enable_thinking)");
    }
  }
  if (TemplateSupportsThinkingSwitch(src) && !extra->contains("enable_thinking")) {
    (*extra)["enable_thinking"] = st.opts.reasoning != 0 && st.opts.reasoning_budget != 0;
  }
  return Status::Ok();
}

// Thinking is off for this request: enable_thinking false (from the flags or the client).
bool ThinkingOff(const Json& extra) {
  auto it = extra.find("enable_thinking");
  return it != extra.end() && it->is_boolean() && !it->get<bool>();
}

// With thinking off, a generation prompt that still ends in an open "<think>" (a template that always opens
// one) is closed, as llama-server closes it, so the model answers at once and the reasoning parser does not
// wait for a "</think>".
void CloseOpenThink(std::string* prompt) {
  size_t end = prompt->size();
  while (end > 0 && std::isspace(static_cast<unsigned char>((*prompt)[end - 1]))) --end;
  static constexpr std::string_view kOpen = "<think>";
  if (end >= kOpen.size() && std::string_view(*prompt).substr(end - kOpen.size(), kOpen.size()) == kOpen) {
    *prompt += "</think>";
  }
}

// llama-server's extra template variables (common/chat.cpp, common_chat_extra_context): today's local date
// as `date_string` ("05 Dec 2026", read by Llama 3.x templates) and `datetime` ("Dec 05 2026", firefunction).
void DateKwargs(Json* extra) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  auto format = [&local](const char* fmt) {
    char buf[64];
    const size_t n = std::strftime(buf, sizeof(buf), fmt, &local);
    return std::string(buf, n);
  };
  if (!extra->contains("date_string")) (*extra)["date_string"] = format("%d %b %Y");
  if (!extra->contains("datetime")) (*extra)["datetime"] = format("%b %d %Y");
}

// llama-server refuses a prefill after another assistant message (server-common.cpp): the last message is the
// assistant's, the client did not ask to continue it, and the one before it is the assistant's too.
Status CheckAssistantPair(const Json& body, const Json& wire) {
  const Json* cont = body.contains("continue_final_message") ? &body.at("continue_final_message") : nullptr;
  const bool asked_to_continue = cont != nullptr && cont->is_boolean() && cont->get<bool>();
  if (asked_to_continue || wire.size() < 2) return Status::Ok();
  if (wire.back().value("role", "") == "assistant" && wire[wire.size() - 2].value("role", "") == "assistant") {
    return InvalidArgument("Cannot have 2 or more assistant messages at the end of the list.");
  }
  return Status::Ok();
}

// The rendered prompt. A chat whose last message is the assistant's is continued: the messages before it are
// rendered with the generation prompt and its content is appended, so the model goes on writing that
// message (llama-server's assistant prefill; continue_final_message asks for it explicitly).
Result<std::string> RenderText(const ServerState& st, const ModelContext& m, const Json& body,
                               const ToolRequest& tools) {
  LS_ASSIGN_OR_RETURN(Json wire, ParseChatMessages(body));
  LS_RETURN_IF_ERROR(CheckAssistantPair(body, wire));
  LS_ASSIGN_OR_RETURN(bool add_generation_prompt, GetBool(body, "add_generation_prompt", true));
  const bool last_is_assistant = wire.back().value("role", "") == "assistant";
  const bool continue_given =
      body.contains("continue_final_message") && !body.at("continue_final_message").is_null();
  // By default only a last assistant message with text and no tool calls is continued (llama-server's
  // prefill); one with calls is history, and the model answers after it.
  const Json& last_msg = wire.back();
  const bool prefillable = last_is_assistant && last_msg.contains("content") &&
                           last_msg.at("content").is_string() &&
                           !last_msg.at("content").get<std::string>().empty() &&
                           !(last_msg.contains("tool_calls") && last_msg.at("tool_calls").is_array() &&
                             !last_msg.at("tool_calls").empty());
  LS_ASSIGN_OR_RETURN(bool continue_final, GetBool(body, "continue_final_message", prefillable));
  if (continue_final && !last_is_assistant) {
    return InvalidArgument("continue_final_message: the last message must be the assistant's, got '" +
                           wire.back().value("role", "") + "'");
  }
  if (continue_final && continue_given && body.contains("add_generation_prompt") && add_generation_prompt) {
    return InvalidArgument("continue_final_message: cannot be combined with add_generation_prompt true");
  }
  std::string prefill;
  if (continue_final) {
    const Json& last = wire.back();
    if (last.contains("tool_calls") && last.at("tool_calls").is_array() && !last.at("tool_calls").empty()) {
      return InvalidArgument(
          "continue_final_message: the last message has tool_calls; only text can be continued");
    }
    // llama-server appends the continued message's text parts joined by a blank line (the template's history
    // joins them with "\n"); `messages` is the request's own list, which `wire` follows one to one.
    const Json& sent = body.at("messages").back();
    prefill = ContinuationText(sent.is_object() && sent.contains("content") ? sent.at("content") : Json());
    wire.erase(wire.size() - 1);
    if (wire.empty())
      return InvalidArgument("messages: nothing comes before the assistant message to continue");
    add_generation_prompt = true;
  }
  LS_ASSIGN_OR_RETURN(Json messages, PrepareMessagesForTemplate(wire));
  Json extra = Json::object();
  DateKwargs(&extra);
  extra["bos_token"] = m.bos_text;
  extra["eos_token"] = m.eos_text;
  // Templates get the tools as the client sent them (tojson prints them in the request's key order).
  auto t = body.find("tools");
  if (!tools.tools.empty() && t != body.end()) extra["tools"] = *t;
  auto kwargs = body.find("chat_template_kwargs");
  if (kwargs != body.end() && !kwargs->is_null()) {
    if (!kwargs->is_object()) {
      return InvalidArgument("chat_template_kwargs: expected an object, got " + TypeName(*kwargs));
    }
    for (auto it = kwargs->begin(); it != kwargs->end(); ++it) extra[it.key()] = it.value();
  }
  LS_RETURN_IF_ERROR(ReasoningKwargs(st, m, body, &extra));
  Result<std::string> text = m.chat_template.Apply(messages, add_generation_prompt, extra);
  if (!text.ok()) {
    // Template failures (including the template's own raise_exception) are about the request's messages.
    return InvalidArgument("messages: the chat template '" + m.chat_template.name() +
                           "' could not render them: " + text.status().message());
  }
  if (add_generation_prompt && ThinkingOff(extra)) CloseOpenThink(&*text);
  return *text + prefill;
}

// Renders the chat through the template and tokenizes it (control tokens in the rendered text are parsed).
Result<std::vector<TokenId>> RenderPrompt(const ServerState& st, const ModelContext& m, const Json& body,
                                          const ToolRequest& tools, std::string* rendered) {
  LS_ASSIGN_OR_RETURN(std::string text_value, RenderText(st, m, body, tools));
  const std::string* text = &text_value;
  const Tokenizer& tok = m.engine->tokenizer();
  // Templates that print bos_token themselves must not get a second BOS from the tokenizer.
  const bool add_special = !(tok.add_bos() && !m.bos_text.empty() && text->rfind(m.bos_text, 0) == 0);
  Result<std::vector<TokenId>> ids = tok.Tokenize(*text, add_special, /*parse_special=*/true);
  if (!ids.ok())
    return InvalidArgument("messages: tokenizing the rendered chat failed: " + ids.status().message());
  *rendered = std::move(text_value);
  return ids;
}

}  // namespace

Result<std::string> RenderChat(const ServerState& st, const ModelContext& m, const Json& body) {
  LS_ASSIGN_OR_RETURN(ToolRequest tools, ParseToolRequest(body));
  return RenderText(st, m, body, tools);
}

Result<ChatSetup> PrepareChat(const ServerState& st, const ModelContext& m, const Json& body) {
  ChatSetup out;
  LS_ASSIGN_OR_RETURN(out.tools, ParseToolRequest(body));
  LS_ASSIGN_OR_RETURN(out.constraint, ParseOutputConstraint(body));
  std::string rendered;
  LS_ASSIGN_OR_RETURN(out.prompt, RenderPrompt(st, m, body, out.tools, &rendered));
  ChatParseOptions& o = out.options;
  o.reasoning.syntax = m.reasoning_syntax;
  o.reasoning.format = st.reasoning_format;
  LS_ASSIGN_OR_RETURN(std::string format, GetString(body, "reasoning_format", ""));
  if (!format.empty()) {
    Result<ReasoningFormat> f = ParseReasoningFormat(format);
    if (!f.ok()) return InvalidArgument("reasoning_format: " + f.status().message());
    o.reasoning.format = *f;
  }
  o.reasoning.in_think_at_start = PromptOpensThink(rendered);
  o.tool_options.in_think_at_start = o.reasoning.in_think_at_start;
  o.tools_active = out.tools.active();
  o.tool_format = m.tool_format;
  o.tools = out.tools.tools;
  if (!out.tools.active()) return out;

  if (!out.constraint.gbnf.empty()) {
    // One grammar holds at a time: a call's grammar and a schema for the answer would each reject the other.
    return InvalidArgument(out.constraint.field +
                           ": cannot be combined with tools unless tool_choice is \"none\"");
  }
  Result<ToolGrammar> g =
      BuildToolGrammar(m.tool_format, out.tools.tools, out.tools.choice, out.tools.parallel_tool_calls);
  if (!g.ok()) return g.status();
  out.constraint.gbnf = std::move(g->gbnf);
  out.constraint.field = "tools";
  if (g->lazy) {
    out.constraint.triggers = std::move(g->triggers);
    out.trigger_at_start = g->triggers_only_at_start;
  }
  return out;
}

}  // namespace lazyslot::server
