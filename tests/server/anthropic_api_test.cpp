// Anthropic Messages API translation (server/anthropic/anthropic_api.h): request bodies -> OpenAI chat bodies (each
// block type, system forms, tools and tool_choice, thinking, tool-result order, every error naming its path,
// and acceptance of the result by the chat pipeline's own parsers), the message JSON for each stop_reason,
// the exact SSE event sequences of the stream writer, and the error bodies.
#include "server/anthropic/anthropic_api.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "chat/chat_messages.h"
#include "chat/tool_calls.h"
#include "chat_body_check.h"
#include "server/generation/output_constraint.h"
#include "sse_events.h"

namespace lazyslot::server {
namespace {

Json Parse(const std::string& text) { return Json::parse(text); }

// A minimal valid request with `extra` fields merged in.
Json Request(const Json& extra = Json::object()) {
  Json body = {{"model", "m"}, {"max_tokens", 16}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = it.value();
  return body;
}

Json Translate(const Json& body) {
  Result<Json> r = AnthropicToChatBody(body);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Json();
}

// The error message for a body that must be refused.
std::string ErrorOf(const Json& body) {
  Result<Json> r = AnthropicToChatBody(body);
  EXPECT_FALSE(r.ok()) << "accepted: " << body.dump();
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  return r.status().message();
}

void ExpectError(const Json& body, const std::string& prefix, const std::string& needle = "") {
  const std::string m = ErrorOf(body);
  EXPECT_EQ(m.rfind(prefix, 0), 0u) << "message: " << m << "\nexpected prefix: " << prefix;
  if (!needle.empty()) {
    EXPECT_NE(m.find(needle), std::string::npos) << m;
  }
}

using testing::ExpectChatPipelineAccepts;

TEST(AnthropicRequest, MinimalRequest) {
  const Json chat = Translate(Request());
  EXPECT_EQ(chat,
            Parse(R"({"model": "m", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16})"));
  ExpectChatPipelineAccepts(chat);
}

TEST(AnthropicRequest, SystemAsStringAndAsTextBlocks) {
  Json chat = Translate(Request({{"system", "Be brief."}}));
  EXPECT_EQ(chat["messages"][0], Parse(R"({"role": "system", "content": "Be brief."})"));
  EXPECT_EQ(chat["messages"][1]["role"], "user");

  chat = Translate(Request({{"system", Parse(R"([{"type": "text", "text": "One."},
      {"type": "text", "text": "Two.", "cache_control": {"type": "ephemeral"}}])")}}));
  EXPECT_EQ(chat["messages"][0], Parse(R"({"role": "system", "content": "One.\nTwo."})"));
  ExpectChatPipelineAccepts(chat);

  // An empty system prompt adds no message.
  chat = Translate(Request({{"system", ""}}));
  EXPECT_EQ(chat["messages"].size(), 1u);
}

TEST(AnthropicRequest, TextBlocksAreJoined) {
  const Json chat = Translate(Request({{"messages", Parse(R"([
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]},
      {"role": "user", "content": "next"}])")}}));
  EXPECT_EQ(chat["messages"], Parse(R"([{"role": "user", "content": "a\nb"},
      {"role": "assistant", "content": "xy"}, {"role": "user", "content": "next"}])"));
}

TEST(AnthropicRequest, ToolUseAndToolResultRoundTrip) {
  const Json chat = Translate(Request({{"messages", Parse(R"([
      {"role": "user", "content": "Weather in Paris and Rome?"},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Two cities.", "signature": "sig"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris", "n": [1, 2]}},
        {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21C"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
         "content": [{"type": "text", "text": "no"}, {"type": "text", "text": "data"}]},
        {"type": "text", "text": "Thanks."}]}])")}}));
  EXPECT_EQ(chat["messages"], Parse(R"([
      {"role": "user", "content": "Weather in Paris and Rome?"},
      {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "toolu_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"n\":[1,2]}"}},
        {"id": "toolu_2", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
       "reasoning_content": "Two cities."},
      {"role": "tool", "tool_call_id": "toolu_1", "content": "21C"},
      {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: no\ndata"},
      {"role": "user", "content": "Thanks."}])"));
  ExpectChatPipelineAccepts(chat);
}

TEST(AnthropicRequest, ToolResultsKeepTheirPlaceAmongTextBlocks) {
  const Json chat = Translate(Request({{"messages", Parse(R"([
      {"role": "user", "content": "go"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}},
                                        {"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
      {"role": "user", "content": [
        {"type": "text", "text": "before"},
        {"type": "tool_result", "tool_use_id": "b"},
        {"type": "text", "text": "between"},
        {"type": "tool_result", "tool_use_id": "a", "content": []},
        {"type": "text", "text": "after1"}, {"type": "text", "text": "after2"}]}])")}}));
  const Json& m = chat["messages"];
  ASSERT_EQ(m.size(), 7u) << m.dump();
  EXPECT_EQ(m[1]["content"], "");  // an assistant turn of calls only
  EXPECT_EQ(m[2], Parse(R"({"role": "user", "content": "before"})"));
  EXPECT_EQ(m[3], Parse(R"({"role": "tool", "tool_call_id": "b", "content": ""})"));
  EXPECT_EQ(m[4], Parse(R"({"role": "user", "content": "between"})"));
  EXPECT_EQ(m[5], Parse(R"({"role": "tool", "tool_call_id": "a", "content": ""})"));
  EXPECT_EQ(m[6], Parse(R"({"role": "user", "content": "after1\nafter2"})"));
}

TEST(AnthropicRequest, ThinkingBlocksAndRedactedThinking) {
  const Json chat = Translate(Request({{"messages", Parse(R"([
      {"role": "user", "content": "q"},
      {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "opaque"},
                                        {"type": "thinking", "thinking": "first"},
                                        {"type": "thinking", "thinking": "second", "signature": ""},
                                        {"type": "text", "text": "answer"}]},
      {"role": "user", "content": "q2"}])")}}));
  EXPECT_EQ(chat["messages"][1],
            Parse(R"({"role": "assistant", "content": "answer", "reasoning_content": "first\nsecond"})"));
}

TEST(AnthropicRequest, SystemRoleInMessagesAndFinalEmptyAssistant) {
  Json chat = Translate(Request({{"messages", Parse(R"([
      {"role": "system", "content": [{"type": "text", "text": "rules"}]},
      {"role": "user", "content": "q"}, {"role": "assistant", "content": "The answer is ("}])")}}));
  EXPECT_EQ(chat["messages"][0], Parse(R"({"role": "system", "content": "rules"})"));
  EXPECT_EQ(chat["messages"][2], Parse(R"({"role": "assistant", "content": "The answer is ("})"));
  // A final empty assistant turn is dropped; an empty earlier one is an error.
  chat = Translate(Request({{"messages", Parse(R"([{"role": "user", "content": "q"},
      {"role": "assistant", "content": []}])")}}));
  EXPECT_EQ(chat["messages"].size(), 1u);
  ExpectError(Request({{"messages", Parse(R"([{"role": "user", "content": "q"},
      {"role": "assistant", "content": ""}, {"role": "user", "content": "r"}])")}}),
              "messages[1].content: must not be empty");
}

TEST(AnthropicRequest, SamplingFieldsStopSequencesAndStream) {
  const Json chat = Translate(Request({{"temperature", 0.5},
                                       {"top_p", 0.9},
                                       {"top_k", 40},
                                       {"stream", true},
                                       {"stop_sequences", {"END", "\n\n"}},
                                       {"metadata", {{"user_id", "u1"}}},
                                       {"service_tier", "auto"},
                                       {"cache_control", {{"type", "ephemeral"}}}}));
  EXPECT_EQ(chat["temperature"], 0.5);
  EXPECT_EQ(chat["top_p"], 0.9);
  EXPECT_EQ(chat["top_k"], 40);
  EXPECT_EQ(chat["stream"], true);
  EXPECT_EQ(chat["stop"], Parse(R"(["END", "\n\n"])"));
  EXPECT_FALSE(chat.contains("metadata"));
  EXPECT_FALSE(chat.contains("service_tier"));
  EXPECT_FALSE(chat.contains("cache_control"));
  ExpectChatPipelineAccepts(chat);
}

const char kTools[] = R"([
    {"name": "get_weather", "description": "Weather in a city.", "cache_control": {"type": "ephemeral"},
     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    {"name": "add", "input_schema": {"type": "object"}, "strict": true, "type": "custom"}])";

TEST(AnthropicRequest, ToolsBecomeFunctionTools) {
  const Json chat = Translate(Request({{"tools", Parse(kTools)}}));
  EXPECT_EQ(chat["tools"], Parse(R"([
      {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
      {"type": "function",
       "function": {"name": "add", "parameters": {"type": "object"}, "strict": true}}])"));
  EXPECT_FALSE(chat.contains("tool_choice"));  // OpenAI's default with tools is auto, as Anthropic's
  ExpectChatPipelineAccepts(chat);
}

TEST(AnthropicRequest, EachToolChoice) {
  const Json tools = Parse(kTools);
  struct Case {
    const char* anthropic;
    const char* tool_choice;
    bool parallel_off;
  } cases[] = {
      {R"({"type": "auto"})", R"("auto")", false},
      {R"({"type": "any"})", R"("required")", false},
      {R"({"type": "tool", "name": "add"})", R"({"type": "function", "function": {"name": "add"}})", false},
      {R"({"type": "none"})", R"("none")", false},
      {R"({"type": "auto", "disable_parallel_tool_use": true})", R"("auto")", true},
      {R"({"type": "any", "disable_parallel_tool_use": true})", R"("required")", true},
      {R"({"type": "tool", "name": "get_weather", "disable_parallel_tool_use": false})",
       R"({"type": "function", "function": {"name": "get_weather"}})", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.anthropic);
    const Json chat = Translate(Request({{"tools", tools}, {"tool_choice", Parse(c.anthropic)}}));
    EXPECT_EQ(chat["tool_choice"], Parse(c.tool_choice));
    if (c.parallel_off) {
      EXPECT_EQ(chat["parallel_tool_calls"], false);
    } else {
      EXPECT_FALSE(chat.contains("parallel_tool_calls"));
    }
    ExpectChatPipelineAccepts(chat);
    Result<ToolRequest> req = ParseToolRequest(chat);
    ASSERT_TRUE(req.ok());
    EXPECT_EQ(req->parallel_tool_calls, !c.parallel_off);
  }
}

TEST(AnthropicRequest, ThinkingMapsToEnableThinking) {
  EXPECT_EQ(Translate(Request(
                {{"thinking", {{"type", "enabled"}, {"budget_tokens", 2048}}}}))["chat_template_kwargs"],
            Parse(R"({"enable_thinking": true})"));
  EXPECT_EQ(Translate(Request({{"thinking", {{"type", "disabled"}}}}))["chat_template_kwargs"],
            Parse(R"({"enable_thinking": false})"));
  EXPECT_EQ(Translate(Request({{"thinking", {{"type", "adaptive"}}}}))["chat_template_kwargs"],
            Parse(R"({"enable_thinking": true})"));
  EXPECT_FALSE(Translate(Request()).contains("chat_template_kwargs"));  // absent: the template's default
  // The lazyslot extension merges; thinking decides enable_thinking.
  const Json chat = Translate(Request({{"thinking", {{"type", "disabled"}}},
                                       {"chat_template_kwargs", {{"enable_thinking", true}, {"x", 1}}}}));
  EXPECT_EQ(chat["chat_template_kwargs"], Parse(R"({"enable_thinking": false, "x": 1})"));
  ExpectChatPipelineAccepts(chat);
}

TEST(AnthropicRequest, OutputConfigFormatBecomesResponseFormat) {
  const Json schema =
      Parse(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})");
  const Json chat = Translate(Request(
      {{"output_config", {{"format", {{"type", "json_schema"}, {"schema", schema}}}, {"effort", "low"}}}}));
  EXPECT_EQ(chat["response_format"],
            Json({{"type", "json_schema"}, {"json_schema", {{"name", "output"}, {"schema", schema}}}}));
  ExpectChatPipelineAccepts(chat);
  Result<OutputConstraint> c = ParseOutputConstraint(chat);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->gbnf.empty());
}

TEST(AnthropicRequest, TopLevelErrorsNameTheField) {
  Json no_model = Request();
  no_model.erase("model");
  ExpectError(no_model, "model: is required");
  ExpectError(Request({{"model", 3}}), "model: expected a string");
  Json no_max = Request();
  no_max.erase("max_tokens");
  ExpectError(no_max, "max_tokens: is required");
  ExpectError(Request({{"max_tokens", 0}}), "max_tokens: must be between 1");
  ExpectError(Request({{"max_tokens", 1.5}}), "max_tokens: expected an integer");
  ExpectError(Request({{"max_tokens", "8"}}), "max_tokens: expected an integer");
  ExpectError(Request({{"max_token", 8}}), "max_token: unknown field (did you mean 'max_tokens'?)");
  ExpectError(Request({{"frequency_penalty", 1}}), "frequency_penalty: unknown field", "refuses fields");
  ExpectError(Request({{"container", "x"}}), "container: unknown field");
  ExpectError(Request({{"messages", Json::array()}}), "messages: must contain at least one message");
  ExpectError(Request({{"messages", "hi"}}), "messages: expected a list");
  ExpectError(Request({{"system", 5}}), "system: expected a string or a list of text blocks");
  ExpectError(Request({{"system", Parse(R"([{"type": "image"}])")}}),
              "system[0].type: 'image' is not supported");
  ExpectError(Request({{"stop_sequences", "END"}}), "stop_sequences: expected a list of strings");
  ExpectError(Request({{"stop_sequences", {"a", 1}}}), "stop_sequences[1]: expected a string");
  ExpectError(Request({{"stop_sequences", std::vector<std::string>(kMaxStopStrings + 1, "x")}}),
              "stop_sequences: at most");
  ExpectError(Request({{"stop_sequences", {std::string(kMaxStopBytes + 1, 'x')}}}),
              "stop_sequences[0]: a stop");
  ExpectError(Request({{"temperature", "hot"}}), "temperature: expected a number");
  ExpectError(Request({{"top_k", true}}), "top_k: expected a number");
  ExpectError(Request({{"stream", "yes"}}), "stream: expected a boolean");
  ExpectError(Request({{"metadata", "x"}}), "metadata: expected an object");
  ExpectError(Request({{"service_tier", 1}}), "service_tier: expected a string");
  ExpectError(Request({{"cache_control", 1}}), "cache_control: expected an object");
  ExpectError(Request({{"chat_template_kwargs", 1}}), "chat_template_kwargs: expected an object");
  ExpectError(Json::array(), "the request body must be a JSON object");
}

TEST(AnthropicRequest, MessageErrorsNameThePath) {
  auto with = [](const char* messages) { return Request({{"messages", Parse(messages)}}); };
  ExpectError(with(R"([3])"), "messages[0]: expected a message");
  ExpectError(with(R"([{"content": "x"}])"), "messages[0].role: is required");
  ExpectError(with(R"([{"role": "tool", "content": "x"}])"), "messages[0].role: 'tool' is not a role");
  ExpectError(with(R"([{"role": "user"}])"), "messages[0].content: is required");
  ExpectError(with(R"([{"role": "user", "content": 5}])"),
              "messages[0].content: expected a string or a list");
  ExpectError(with(R"([{"role": "user", "content": []}])"), "messages[0].content: must not be empty");
  ExpectError(with(R"([{"role": "user", "content": "a"}, {"role": "user", "content": ["x"]}])"),
              "messages[1].content[0]: expected a content block");
  ExpectError(with(R"([{"role": "user", "content": [{"text": "x"}]}])"),
              "messages[0].content[0].type: is required");
  ExpectError(with(R"([{"role": "user", "content": [{"type": "text"}]}])"),
              "messages[0].content[0].text: is required");
  ExpectError(with(R"([{"role": "user", "content": [{"type": "text", "text": 1}]}])"),
              "messages[0].content[0].text: expected a string");
  ExpectError(
      with(R"([{"role": "user", "content": "a"}, {"role": "user", "content": [{"type": "text", "text": "x"},
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}])"),
      "messages[1].content[1].type: 'image' is not supported", "text only: image input is not supported");
  ExpectError(with(R"([{"role": "user", "content": [{"type": "document", "source": {}}]}])"),
              "messages[0].content[0].type: 'document' is not supported");
  ExpectError(with(R"([{"role": "user", "content": [{"type": "search_result"}]}])"),
              "messages[0].content[0].type: 'search_result' is not supported here");
  ExpectError(
      with(R"([{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}])"),
      "messages[0].content[0].type: 'tool_use' blocks belong in assistant messages");
  ExpectError(with(R"([{"role": "user", "content": [{"type": "thinking", "thinking": "x"}]}])"),
              "messages[0].content[0].type: 'thinking' blocks belong in assistant messages");
  ExpectError(with(R"([{"role": "user", "content": "q"},
      {"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "a"}]}])"),
              "messages[1].content[0].type: 'tool_result' blocks belong in user messages");
  ExpectError(
      with(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "image"}]}])"),
      "messages[1].content[0].type: 'image' is not supported");
}

TEST(AnthropicRequest, ToolBlockErrorsNameThePath) {
  auto assistant = [](const char* block) {
    return Request(
        {{"messages", Json::array({Json{{"role", "user"}, {"content", "q"}},
                                   Json{{"role", "assistant"}, {"content", Json::array({Parse(block)})}},
                                   Json{{"role", "user"}, {"content", "r"}}})}});
  };
  ExpectError(assistant(R"({"type": "tool_use", "name": "f", "input": {}})"),
              "messages[1].content[0].id: is required");
  ExpectError(assistant(R"({"type": "tool_use", "id": "", "name": "f", "input": {}})"),
              "messages[1].content[0].id: must not be empty");
  ExpectError(assistant(R"({"type": "tool_use", "id": "a", "input": {}})"),
              "messages[1].content[0].name: is required");
  ExpectError(assistant(R"({"type": "tool_use", "id": "a", "name": "f"})"),
              "messages[1].content[0].input: is required");
  ExpectError(assistant(R"({"type": "tool_use", "id": "a", "name": "f", "input": "{}"})"),
              "messages[1].content[0].input: expected an object");
  ExpectError(assistant(R"({"type": "thinking"})"), "messages[1].content[0].thinking: is required");
  ExpectError(assistant(R"({"type": "thinking", "thinking": "t", "signature": 3})"),
              "messages[1].content[0].signature: expected a string");

  auto result = [](const char* block) {
    return Request(
        {{"messages", Json::array({Json{{"role", "user"}, {"content", "q"}}, Parse(R"({"role": "assistant",
                           "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]})"),
                                   Json{{"role", "user"}, {"content", Json::array({Parse(block)})}}})}});
  };
  ExpectError(result(R"({"type": "tool_result"})"), "messages[2].content[0].tool_use_id: is required");
  ExpectError(result(R"({"type": "tool_result", "tool_use_id": "t9"})"),
              "messages[2].content[0].tool_use_id: 't9' matches no tool_use block");
  ExpectError(result(R"({"type": "tool_result", "tool_use_id": "t1", "content": 4})"),
              "messages[2].content[0].content: expected a string or a list of text blocks");
  ExpectError(result(R"({"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "image"}]})"),
              "messages[2].content[0].content[0].type: 'image' is not supported",
              "image input is not supported");
  ExpectError(result(R"({"type": "tool_result", "tool_use_id": "t1", "is_error": "yes"})"),
              "messages[2].content[0].is_error: expected a boolean");
}

TEST(AnthropicRequest, ToolAndChoiceErrorsNameThePath) {
  const Json tools = Parse(kTools);
  ExpectError(Request({{"tools", Json::object()}}), "tools: expected a list");
  ExpectError(Request({{"tools", {1}}}), "tools[0]: expected a tool");
  ExpectError(Request({{"tools", Parse(R"([{"input_schema": {}}])")}}), "tools[0].name: is required");
  ExpectError(Request({{"tools", Parse(R"([{"name": "a b", "input_schema": {}}])")}}),
              "tools[0].name: must be 1 to 64");
  ExpectError(Request({{"tools",
                        Parse(R"([{"name": "f", "input_schema": {}}, {"name": "f", "input_schema": {}}])")}}),
              "tools[1].name: 'f' is given twice");
  ExpectError(Request({{"tools", Parse(R"([{"name": "f"}])")}}), "tools[0].input_schema: is required");
  ExpectError(Request({{"tools", Parse(R"([{"name": "f", "input_schema": []}])")}}),
              "tools[0].input_schema: expected a JSON schema object");
  ExpectError(Request({{"tools", Parse(R"([{"name": "f", "input_schema": {}, "description": 1}])")}}),
              "tools[0].description: expected a string");
  ExpectError(Request({{"tools", Parse(R"([{"name": "f", "input_schema": {}, "strict": 1}])")}}),
              "tools[0].strict: expected a boolean");
  ExpectError(Request({{"tools", Parse(R"([{"type": "web_search_20250305", "name": "web_search"}])")}}),
              "tools[0].type: 'web_search_20250305' is a server tool");
  ExpectError(Request({{"tools", tools}, {"tool_choice", "auto"}}), "tool_choice: expected an object");
  ExpectError(Request({{"tools", tools}, {"tool_choice", Json::object()}}), "tool_choice.type: is required");
  ExpectError(Request({{"tools", tools}, {"tool_choice", {{"type", "required"}}}}),
              "tool_choice.type: 'required' is not a tool choice");
  ExpectError(Request({{"tools", tools}, {"tool_choice", {{"type", "tool"}}}}),
              "tool_choice.name: is required");
  ExpectError(Request({{"tools", tools}, {"tool_choice", {{"type", "tool"}, {"name", "nope"}}}}),
              "tool_choice.name: 'nope' is not in tools");
  ExpectError(Request({{"tool_choice", {{"type", "any"}}}}), "tool_choice.type: 'any' needs tools");
  ExpectError(
      Request({{"tools", tools}, {"tool_choice", {{"type", "auto"}, {"disable_parallel_tool_use", 1}}}}),
      "tool_choice.disable_parallel_tool_use: expected a boolean");
}

TEST(AnthropicRequest, ThinkingAndOutputConfigErrorsNameThePath) {
  ExpectError(Request({{"thinking", true}}), "thinking: expected an object");
  ExpectError(Request({{"thinking", Json::object()}}), "thinking.type: is required");
  ExpectError(Request({{"thinking", {{"type", "on"}}}}), "thinking.type: 'on' is not a thinking type");
  ExpectError(Request({{"thinking", {{"type", "enabled"}}}}), "thinking.budget_tokens: is required");
  ExpectError(Request({{"thinking", {{"type", "enabled"}, {"budget_tokens", 0}}}}),
              "thinking.budget_tokens: must be between 1");
  ExpectError(Request({{"output_config", 1}}), "output_config: expected an object");
  ExpectError(Request({{"output_config", {{"speed", "fast"}}}}), "output_config.speed: unknown field");
  ExpectError(Request({{"output_config", {{"effort", 2}}}}), "output_config.effort: expected a string");
  ExpectError(Request({{"output_config", {{"format", {{"type", "text"}}}}}}),
              "output_config.format.type: expected 'json_schema'");
  ExpectError(Request({{"output_config", {{"format", {{"type", "json_schema"}}}}}}),
              "output_config.format.schema: is required");
}

TEST(AnthropicRequest, CountTokensBodyRendersLikeTheCreateBody) {
  const Json fields = {{"system", "sys"},
                       {"tools", Parse(kTools)},
                       {"tool_choice", {{"type", "auto"}}},
                       {"thinking", {{"type", "disabled"}}}};
  Json count_req = fields;
  count_req["model"] = "m";
  count_req["messages"] = Parse(R"([{"role": "user", "content": "Hi"}])");
  Result<Json> count = AnthropicCountTokensBody(count_req);
  ASSERT_TRUE(count.ok()) << count.status().message();
  Json create = Translate(Request(fields));
  create.erase("max_tokens");
  EXPECT_EQ(*count, create);
  ExpectChatPipelineAccepts(*count);
  // count_tokens has no max_tokens (so it is not required) and refuses generation fields.
  count_req["max_tokens"] = 5;
  Result<Json> bad = AnthropicCountTokensBody(count_req);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("max_tokens: unknown field", 0), 0u) << bad.status().message();
  Result<Json> no_messages = AnthropicCountTokensBody(Json{{"model", "m"}});
  ASSERT_FALSE(no_messages.ok());
  EXPECT_EQ(no_messages.status().message(), "messages: is required");
}

TEST(AnthropicRequest, PipelineErrorsAreRenamedToAnthropicPaths) {
  EXPECT_EQ(AnthropicErrorMessage("tools[3].function.parameters: 'patternProperties' is not supported"),
            "tools[3].input_schema: 'patternProperties' is not supported");
  EXPECT_EQ(AnthropicErrorMessage("tools[0].function.name: bad"), "tools[0].name: bad");
  EXPECT_EQ(AnthropicErrorMessage("response_format.json_schema.schema: bad"),
            "output_config.format.schema: bad");
  EXPECT_EQ(AnthropicErrorMessage("stop[2]: too long"), "stop_sequences[2]: too long");
  EXPECT_EQ(AnthropicErrorMessage("stop_sequences: x"), "stop_sequences: x");
  EXPECT_EQ(AnthropicErrorMessage("parallel_tool_calls: x"), "tool_choice.disable_parallel_tool_use: x");
  EXPECT_EQ(AnthropicErrorMessage("messages: the template failed"), "messages: the template failed");
  EXPECT_EQ(AnthropicErrorMessage("tools[x].function: y"), "tools[x].function: y");

  // A schema the output grammar cannot enforce, reported by the pipeline under the OpenAI path.
  const Json chat = Translate(
      Request({{"output_config", {{"format", {{"type", "json_schema"}, {"schema", {{"type", 12}}}}}}}}));
  Result<OutputConstraint> c = ParseOutputConstraint(chat);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(AnthropicErrorMessage(c.status().message()).rfind("output_config.format.schema", 0), 0u)
      << c.status().message();
}

// ---- Responses
// -----------------------------------------------------------------------------------------------

ChatOutcome Outcome(const std::string& finish, const std::string& content = "Hello") {
  ChatOutcome o;
  o.content = content;
  o.finish_reason = finish;
  o.n_prompt = 12;
  o.n_cached = 4;
  o.n_generated = 7;
  return o;
}

TEST(AnthropicResponse, EndTurnMessage) {
  const Json m = AnthropicMessageJson(Outcome("stop"), "msg_1", "qwen");
  EXPECT_EQ(m, Parse(R"({"id": "msg_1", "type": "message", "role": "assistant", "model": "qwen",
      "content": [{"type": "text", "text": "Hello"}], "stop_reason": "end_turn", "stop_sequence": null,
      "usage": {"input_tokens": 8, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 4,
                "output_tokens": 7}})"));
  EXPECT_EQ(m.dump(), Parse(m.dump()).dump());  // key order as documented: id, type, role, model, ...
}

TEST(AnthropicResponse, StopSequenceMaxTokensAndToolUse) {
  ChatOutcome stop = Outcome("stop");
  stop.stop_word = "END";
  Json m = AnthropicMessageJson(stop, "msg_2", "qwen");
  EXPECT_EQ(m["stop_reason"], "stop_sequence");
  EXPECT_EQ(m["stop_sequence"], "END");

  m = AnthropicMessageJson(Outcome("length"), "msg_3", "qwen");
  EXPECT_EQ(m["stop_reason"], "max_tokens");
  EXPECT_TRUE(m["stop_sequence"].is_null());

  ChatOutcome tools = Outcome("tool_calls", "");
  tools.reasoning = "Need the weather.";
  tools.tool_calls = {{"call_a", "get_weather", R"({"city":"Paris","unit":"celsius"})"},
                      {"call_b", "add", "{}"}};
  m = AnthropicMessageJson(tools, "msg_4", "qwen");
  EXPECT_EQ(m["stop_reason"], "tool_use");
  EXPECT_EQ(m["content"], Parse(R"([
      {"type": "thinking", "thinking": "Need the weather.", "signature": ""},
      {"type": "tool_use", "id": "call_a", "name": "get_weather",
       "input": {"city": "Paris", "unit": "celsius"}},
      {"type": "tool_use", "id": "call_b", "name": "add", "input": {}}])"));
  EXPECT_EQ(m["content"][1]["input"].begin().key(), "city");  // argument order kept

  // Calls with a "stop" finish (e.g. a stop string after them) are still tool_use.
  ChatOutcome calls_then_stop = Outcome("stop", "");
  calls_then_stop.tool_calls = {{"c", "f", "{}"}};
  EXPECT_STREQ(AnthropicStopReason(calls_then_stop), "tool_use");
  // Nothing generated: an empty content list.
  EXPECT_EQ(AnthropicMessageJson(Outcome("stop", ""), "m", "q")["content"], Json::array());
}

TEST(AnthropicResponse, UsageTotalsAreTheSumOfItsParts) {
  const Json u = AnthropicUsageJson(100, 60, 5);
  EXPECT_EQ(u["input_tokens"].get<int>() + u["cache_read_input_tokens"].get<int>() +
                u["cache_creation_input_tokens"].get<int>(),
            100);
  EXPECT_EQ(u["cache_read_input_tokens"], 60);
  EXPECT_EQ(AnthropicUsageJson(10, 20, 0)["input_tokens"], 0);  // never negative
  EXPECT_EQ(AnthropicCountTokensJson(42), Parse(R"({"input_tokens": 42})"));
}

// ---- Streaming
// -----------------------------------------------------------------------------------------------

using Event = testing::SseEvent;

std::vector<Event> Events(const std::string& sse) { return testing::ParseNamedSse(sse); }

// "name" or "name:index:delta type" per event, to compare whole sequences.
std::vector<std::string> Shape(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& e : events) {
    std::vector<std::string> parts = {e.name};
    if (e.data.contains("index")) parts.push_back(std::to_string(e.data["index"].get<int>()));
    if (e.name == "content_block_start") parts.push_back(e.data["content_block"]["type"].get<std::string>());
    if (e.name == "content_block_delta") parts.push_back(e.data["delta"]["type"].get<std::string>());
    std::string s;
    for (const std::string& p : parts) s.append(s.empty() ? "" : ":").append(p);
    out.push_back(s);
  }
  return out;
}

ChatDelta Text(const std::string& t) { return ChatDelta{ChatDelta::kContent, -1, t, "", ""}; }
ChatDelta Thought(const std::string& t) { return ChatDelta{ChatDelta::kReasoning, -1, t, "", ""}; }
ChatDelta CallStart(int i, const std::string& id, const std::string& name) {
  return ChatDelta{ChatDelta::kToolCallStart, i, "", id, name};
}
ChatDelta CallArgs(int i, const std::string& args) {
  return ChatDelta{ChatDelta::kToolCallArguments, i, args, "", ""};
}

TEST(AnthropicStream, TextOnlyExactBytes) {
  AnthropicStreamWriter w;
  std::string sse = w.Start("msg_9", "qwen", 12, 0);
  sse += w.Delta(Text("Hel"));
  sse += w.Delta(Text(""));  // nothing to send
  sse += w.Delta(Text("lo"));
  ChatOutcome o = Outcome("stop");
  o.n_cached = 0;
  sse += w.Finish(o);
  EXPECT_EQ(
      sse,
      "event: message_start\n"
      "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_9\",\"type\":\"message\",\"role\":"
      "\"assistant\",\"model\":\"qwen\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":"
      "{\"input_tokens\":12,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_"
      "tokens\":"
      "0}}}\n\n"
      "event: content_block_start\n"
      "data: "
      "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}"
      "\n\n"
      "event: content_block_delta\n"
      "data: "
      "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}"
      "\n\n"
      "event: content_block_delta\n"
      "data: "
      "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}"
      "\n\n"
      "event: content_block_stop\n"
      "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
      "event: message_delta\n"
      "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},"
      "\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,"
      "\"output_tokens\":7}}\n\n"
      "event: message_stop\n"
      "data: {\"type\":\"message_stop\"}\n\n");
  Events(sse);
  EXPECT_EQ(w.Finish(o), "");  // finished: nothing more
  EXPECT_EQ(w.Delta(Text("late")), "");
}

TEST(AnthropicStream, ThinkingThenText) {
  AnthropicStreamWriter w;
  std::string sse = w.Start("msg_t", "qwen", 5, 2);
  sse += w.Delta(Thought("Let me "));
  sse += w.Delta(Thought("think."));
  sse += w.Delta(Text("Answer."));
  sse += w.Finish(Outcome("stop", "Answer."));
  const std::vector<Event> ev = Events(sse);
  EXPECT_EQ(Shape(ev),
            (std::vector<std::string>{
                "message_start", "content_block_start:0:thinking", "content_block_delta:0:thinking_delta",
                "content_block_delta:0:thinking_delta", "content_block_delta:0:signature_delta",
                "content_block_stop:0", "content_block_start:1:text", "content_block_delta:1:text_delta",
                "content_block_stop:1", "message_delta", "message_stop"}));
  EXPECT_EQ(ev[0].data["message"]["usage"]["input_tokens"], 3);
  EXPECT_EQ(ev[0].data["message"]["usage"]["cache_read_input_tokens"], 2);
  EXPECT_EQ(ev[1].data["content_block"], Parse(R"({"type": "thinking", "thinking": ""})"));
  EXPECT_EQ(ev[3].data["delta"]["thinking"], "think.");
  EXPECT_EQ(ev[4].data["delta"], Parse(R"({"type": "signature_delta", "signature": ""})"));
  EXPECT_EQ(ev[7].data["delta"]["text"], "Answer.");
  EXPECT_EQ(ev[9].data["delta"]["stop_reason"], "end_turn");
  EXPECT_EQ(w.blocks_opened(), 2);
}

TEST(AnthropicStream, TextThenTwoToolCalls) {
  AnthropicStreamWriter w;
  std::string sse = w.Start("msg_c", "qwen", 30);
  sse += w.Delta(Text("Checking."));
  sse += w.Delta(CallStart(0, "call_a", "get_weather"));
  sse += w.Delta(CallArgs(0, "{\"city\":"));
  sse += w.Delta(CallArgs(0, "\"Paris\"}"));
  sse += w.Delta(CallStart(1, "call_b", "add"));
  sse += w.Delta(CallArgs(0, "stray"));  // call 0's block is closed: dropped
  sse += w.Delta(CallArgs(1, "{}"));
  ChatOutcome o = Outcome("tool_calls", "Checking.");
  o.tool_calls = {{"call_a", "get_weather", "{\"city\":\"Paris\"}"}, {"call_b", "add", "{}"}};
  sse += w.Finish(o);
  const std::vector<Event> ev = Events(sse);
  EXPECT_EQ(Shape(ev), (std::vector<std::string>{
                           "message_start", "content_block_start:0:text", "content_block_delta:0:text_delta",
                           "content_block_stop:0", "content_block_start:1:tool_use",
                           "content_block_delta:1:input_json_delta", "content_block_delta:1:input_json_delta",
                           "content_block_stop:1", "content_block_start:2:tool_use",
                           "content_block_delta:2:input_json_delta", "content_block_stop:2", "message_delta",
                           "message_stop"}));
  EXPECT_EQ(ev[4].data["content_block"],
            Parse(R"({"type": "tool_use", "id": "call_a", "name": "get_weather", "input": {}})"));
  EXPECT_EQ(ev[5].data["delta"], Parse(R"({"type": "input_json_delta", "partial_json": "{\"city\":"})"));
  EXPECT_EQ(ev[6].data["delta"]["partial_json"], "\"Paris\"}");
  EXPECT_EQ(ev[8].data["content_block"]["id"], "call_b");
  EXPECT_EQ(ev[9].data["delta"]["partial_json"], "{}");
  EXPECT_EQ(ev[11].data["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(ev[11].data["usage"]["output_tokens"], 7);
}

TEST(AnthropicStream, MaxTokensAndStopSequence) {
  AnthropicStreamWriter w;
  std::string sse = w.Start("msg_l", "qwen", 4);
  sse += w.Delta(Text("a b c"));
  ChatOutcome o = Outcome("length", "a b c");
  o.n_generated = 3;
  sse += w.Finish(o);
  std::vector<Event> ev = Events(sse);
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(ev[4].data["delta"], Parse(R"({"stop_reason": "max_tokens", "stop_sequence": null})"));
  EXPECT_EQ(ev[4].data["usage"]["output_tokens"], 3);
  EXPECT_EQ(ev[5].name, "message_stop");

  AnthropicStreamWriter s;
  ChatOutcome stop = Outcome("stop", "");
  stop.stop_word = "END";
  std::string two = s.Start("msg_s", "qwen", 4);
  two += s.Finish(stop);  // no block was opened
  ev = Events(two);
  EXPECT_EQ(Shape(ev), (std::vector<std::string>{"message_start", "message_delta", "message_stop"}));
  EXPECT_EQ(ev[1].data["delta"], Parse(R"({"stop_reason": "stop_sequence", "stop_sequence": "END"})"));
}

TEST(AnthropicStream, ThinkingClosedByAToolCall) {
  AnthropicStreamWriter w;
  std::string sse = w.Delta(Thought("hmm"));  // one call per statement: the writer is stateful
  sse += w.Delta(CallStart(0, "c", "f"));
  sse += w.Delta(CallArgs(0, "{}"));
  sse += w.Delta(Thought("again"));
  sse += w.Finish(Outcome("tool_calls", ""));
  EXPECT_EQ(
      Shape(Events(sse)),
      (std::vector<std::string>{
          "content_block_start:0:thinking", "content_block_delta:0:thinking_delta",
          "content_block_delta:0:signature_delta", "content_block_stop:0", "content_block_start:1:tool_use",
          "content_block_delta:1:input_json_delta", "content_block_stop:1", "content_block_start:2:thinking",
          "content_block_delta:2:thinking_delta", "content_block_delta:2:signature_delta",
          "content_block_stop:2", "message_delta", "message_stop"}));
  EXPECT_EQ(AnthropicStreamWriter::Ping(), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
}

// ---- Errors
// --------------------------------------------------------------------------------------------------

TEST(AnthropicErrors, StatusMapping) {
  const std::pair<int, const char*> cases[] = {{400, "invalid_request_error"},
                                               {401, "authentication_error"},
                                               {402, "billing_error"},
                                               {403, "permission_error"},
                                               {404, "not_found_error"},
                                               {413, "request_too_large"},
                                               {415, "invalid_request_error"},
                                               {429, "rate_limit_error"},
                                               {500, "api_error"},
                                               {501, "api_error"},
                                               {503, "overloaded_error"},
                                               {504, "timeout_error"},
                                               {529, "overloaded_error"}};
  for (const auto& [status, type] : cases) EXPECT_STREQ(AnthropicErrorType(status), type) << status;
  EXPECT_EQ(AnthropicErrorBody(400, "max_tokens: is required"), Parse(
                                                                    R"({"type": "error",
              "error": {"type": "invalid_request_error", "message": "max_tokens: is required"}})"));
  EXPECT_EQ(AnthropicErrorEvent(529, "Overloaded"),
            "event: error\ndata: "
            "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"
            "\n\n");
  // Invalid UTF-8 in a message does not throw.
  EXPECT_NE(AnthropicErrorEvent(500, std::string("bad \xff byte")).find("bad"), std::string::npos);
}

}  // namespace
}  // namespace lazyslot::server
