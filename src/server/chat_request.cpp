// PrepareChat: validation, template rendering and the output constraint of a chat request.
#include "server/chat_request.h"

#include "chat/chat_messages.h"

namespace lazyslot::server {
namespace {

Result<std::string> RenderText(const ServerState& st, const Json& body, const ToolRequest& tools) {
  LS_ASSIGN_OR_RETURN(Json wire, ParseChatMessages(body));
  LS_ASSIGN_OR_RETURN(Json messages, PrepareMessagesForTemplate(wire));
  Json extra = Json::object();
  extra["bos_token"] = st.bos_text;
  extra["eos_token"] = st.eos_text;
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
  Result<std::string> text = st.chat_template->Apply(messages, /*add_generation_prompt=*/true, extra);
  if (!text.ok()) {
    // Template failures (including the template's own raise_exception) are about the request's messages.
    return InvalidArgument("messages: the chat template '" + st.chat_template->name() +
                           "' could not render them: " + text.status().message());
  }
  return text;
}

// Renders the chat through the template and tokenizes it (control tokens in the rendered text are parsed).
Result<std::vector<TokenId>> RenderPrompt(const ServerState& st, const Json& body, const ToolRequest& tools,
                                          std::string* rendered) {
  LS_ASSIGN_OR_RETURN(std::string text_value, RenderText(st, body, tools));
  const std::string* text = &text_value;
  const Tokenizer& tok = st.engine->tokenizer();
  // Templates that print bos_token themselves must not get a second BOS from the tokenizer.
  const bool add_special = !(tok.add_bos() && !st.bos_text.empty() && text->rfind(st.bos_text, 0) == 0);
  Result<std::vector<TokenId>> ids = tok.Tokenize(*text, add_special, /*parse_special=*/true);
  if (!ids.ok())
    return InvalidArgument("messages: tokenizing the rendered chat failed: " + ids.status().message());
  *rendered = std::move(text_value);
  return ids;
}

}  // namespace

Result<std::string> RenderChat(const ServerState& st, const Json& body) {
  LS_ASSIGN_OR_RETURN(ToolRequest tools, ParseToolRequest(body));
  return RenderText(st, body, tools);
}

Result<ChatSetup> PrepareChat(const ServerState& st, const Json& body) {
  ChatSetup out;
  LS_ASSIGN_OR_RETURN(out.tools, ParseToolRequest(body));
  LS_ASSIGN_OR_RETURN(out.constraint, ParseOutputConstraint(body));
  std::string rendered;
  LS_ASSIGN_OR_RETURN(out.prompt, RenderPrompt(st, body, out.tools, &rendered));
  out.parse_options.in_think_at_start = PromptOpensThink(rendered);
  if (!out.tools.active()) return out;

  if (!out.constraint.gbnf.empty()) {
    // One grammar holds at a time: a call's grammar and a schema for the answer would each reject the other.
    return InvalidArgument(out.constraint.field +
                           ": cannot be combined with tools unless tool_choice is \"none\"");
  }
  Result<ToolGrammar> g =
      BuildToolGrammar(st.tool_format, out.tools.tools, out.tools.choice, out.tools.parallel_tool_calls);
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
