// Chat-layer behaviours that llama-server's own test suite checks, through real HTTP: a Functionary v3.1
// style template (it filters `tools`, none without tools, with selectattr; its calls are <function=NAME>{...}
// </function>) renders without tools, its plain answers carry no tool call (streamed or not), and a required
// call comes back as one; an Anthropic image block is a 400 in Anthropic's error shape.
#include <gtest/gtest.h>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

const char* const kModel = "models/stories260K.gguf";

// Written for this test after the shape of meetkai's Functionary v3.1 template: the parts that matter are
// `tools | selectattr(...)` on none, Llama 3.1's headers and the <function=...> call layout.
const char* const kFunctionaryLike =
    "{%- if not tools is defined -%}{%- set tools = none -%}{%- endif -%}"
    "{%- set has_code = tools | selectattr('type', 'equalto', 'code_interpreter') | list | length > 0 -%}"
    "{{- bos_token + '<|start_header_id|>system<|end_header_id|>\\n\\n' -}}"
    "{%- if has_code %}Environment: ipython\n{% endif -%}"
    "{%- if tools %}{% for t in tools %}Use the function '{{ t.function.name }}'\n{% endfor %}"
    "Call as <function=NAME>{...}</function>\n{% endif -%}"
    "{{- '<|eot_id|>' -}}"
    "{%- for m in messages -%}"
    "{{- '<|start_header_id|>' + m.role + '<|end_header_id|>\\n\\n' -}}"
    "{%- if m.content %}{{ m.content }}{% endif -%}"
    "{%- for c in m.tool_calls or [] -%}"
    "{{- '<function=' + c.function.name + '>' + c.function.arguments | tojson + '</function>' -}}"
    "{%- endfor -%}{{- '<|eot_id|>' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif -%}";

json TestTool() {
  return json::parse(R"([{"type": "function", "function": {"name": "test", "description": "",
      "parameters": {"type": "object", "properties": {"success": {"type": "boolean", "const": true}},
                     "required": ["success"]}}}])");
}

json Chat(const json& extra) {
  json body = {{"max_tokens", 48},
               {"messages",
                {{{"role", "system"}, {"content", "You are a coding assistant."}},
                 {{"role", "user"}, {"content", "say hello world with python"}}}}};
  for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = it.value();
  return body;
}

// The tool calls a streamed answer announced (each call's first delta), and the content it sent.
json StreamedCalls(const ServerProcess& srv, const json& body, std::string* content) {
  json b = body;
  b["stream"] = true;
  HttpResult r = srv.Post("/v1/chat/completions", b);
  EXPECT_EQ(r.status, 200) << r.body;
  json calls = json::array();
  for (const std::string& data : SseData(r.body)) {
    if (data == "[DONE]") continue;
    const json chunk = json::parse(data);
    if (!chunk.contains("choices") || chunk["choices"].empty()) continue;
    const json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("content") && delta["content"].is_string())
      *content += delta["content"].get<std::string>();
    if (delta.contains("tool_calls")) {
      for (const json& tc : delta["tool_calls"]) {
        if (tc.contains("id")) calls.push_back(tc);
      }
    }
  }
  return calls;
}

TEST(ServerChatCompat, FunctionaryV31TemplateWithoutToolsAndPlainAnswers) {
  REQUIRE_SHARED_FILE(kModel);
  START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1", "--chat-template", kFunctionaryLike});
  EXPECT_EQ(srv->Get("/props").Json()["tool_call_format"], "Functionary v3.1 Llama 3.1");

  // No tools: `tools` is none and the template filters it (llama-server renders this; Jinja2 would raise).
  HttpResult plain = srv->Post("/v1/chat/completions", Chat({{"tools", nullptr}}));
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_FALSE(plain.Json()["choices"][0]["message"].contains("tool_calls")) << plain.body;
  HttpResult prompt = srv->Post("/apply-template", Chat(json::object()));
  ASSERT_EQ(prompt.status, 200) << prompt.body;
  EXPECT_EQ(prompt.Json()["prompt"].get<std::string>().find("Use the function"), std::string::npos);

  // Tools offered, tool_choice auto: the tiny model writes prose, which is content, never a call; the lazy
  // grammar waits for "<function=", so nothing forces a call either.
  const json with_tool = Chat({{"tools", TestTool()}});
  HttpResult r = srv->Post("/v1/chat/completions", with_tool);
  ASSERT_EQ(r.status, 200) << r.body;
  const json msg = r.Json()["choices"][0]["message"];
  EXPECT_TRUE(!msg.contains("tool_calls") || msg["tool_calls"].is_null()) << r.body;
  ASSERT_TRUE(msg["content"].is_string()) << r.body;
  EXPECT_FALSE(msg["content"].get<std::string>().empty()) << r.body;
  EXPECT_NE(r.Json()["choices"][0]["finish_reason"], "tool_calls") << r.body;
  std::string streamed;
  EXPECT_TRUE(StreamedCalls(*srv, with_tool, &streamed).empty());
  EXPECT_FALSE(streamed.empty());

  // Required: the grammar holds from the first token, and the call it forces parses back, streamed or not.
  const json required = Chat({{"tools", TestTool()},
                              {"tool_choice", "required"},
                              {"parallel_tool_calls", false},
                              {"max_tokens", 96}});
  HttpResult forced = srv->Post("/v1/chat/completions", required);
  ASSERT_EQ(forced.status, 200) << forced.body;
  const json calls = forced.Json()["choices"][0]["message"]["tool_calls"];
  ASSERT_TRUE(calls.is_array() && !calls.empty()) << forced.body;
  EXPECT_EQ(calls[0]["function"]["name"], "test");
  EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()), json({{"success", true}}));
  EXPECT_EQ(forced.Json()["choices"][0]["finish_reason"], "tool_calls") << forced.body;
  std::string none;
  const json scalls = StreamedCalls(*srv, required, &none);
  ASSERT_FALSE(scalls.empty());
  EXPECT_EQ(scalls[0]["function"]["name"], "test");
}

// Functionary v3.2 (meetkai's template): the prompt ends in ">>>", the answer starts with its recipient.
// The tiny model's prose is content under "auto"; a required call is written right after the prompt and
// parses back, streamed or not.
TEST(ServerChatCompat, FunctionaryV32RecipientCalls) {
  const char* const tmpl = "templates/meetkai-functionary-medium-v3.2.jinja";
  REQUIRE_SHARED_FILE(kModel);
  REQUIRE_SHARED_FILE(tmpl);
  START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1", "--chat-template-file", SharedPath(tmpl)});
  EXPECT_EQ(srv->Get("/props").Json()["tool_call_format"], "Functionary v3.2");
  HttpResult prompt = srv->Post("/apply-template", Chat({{"tools", TestTool()}}));
  ASSERT_EQ(prompt.status, 200) << prompt.body;
  const std::string p = prompt.Json()["prompt"];
  EXPECT_EQ(p.substr(p.size() - 3), ">>>") << p;

  const json with_tool = Chat({{"tools", TestTool()}});
  HttpResult r = srv->Post("/v1/chat/completions", with_tool);
  ASSERT_EQ(r.status, 200) << r.body;
  const json msg = r.Json()["choices"][0]["message"];
  EXPECT_TRUE(!msg.contains("tool_calls") || msg["tool_calls"].is_null()) << r.body;
  std::string streamed;
  EXPECT_TRUE(StreamedCalls(*srv, with_tool, &streamed).empty());

  const json required = Chat({{"tools", TestTool()},
                              {"tool_choice", "required"},
                              {"parallel_tool_calls", false},
                              {"max_tokens", 96}});
  HttpResult forced = srv->Post("/v1/chat/completions", required);
  ASSERT_EQ(forced.status, 200) << forced.body;
  const json calls = forced.Json()["choices"][0]["message"]["tool_calls"];
  ASSERT_TRUE(calls.is_array() && calls.size() == 1) << forced.body;
  EXPECT_EQ(calls[0]["function"]["name"], "test");
  EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()), json({{"success", true}}));
  std::string none;
  const json scalls = StreamedCalls(*srv, required, &none);
  ASSERT_EQ(scalls.size(), 1u);
  EXPECT_EQ(scalls[0]["function"]["name"], "test");
}

// An image for a text-only model is the client's error: 400 in Anthropic's shape, naming the block and
// keeping llama-server's phrase (llama-server answers 500 with it).
TEST(ServerChatCompat, AnthropicImageBlockIsAClientError) {
  REQUIRE_SHARED_FILE(kModel);
  START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1"});
  const json image = {
      {"type", "image"},
      {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", "iVBORw0KGgo="}}}};
  const json direct = {
      {"model", "m"},
      {"max_tokens", 8},
      {"messages", {{{"role", "user"}, {"content", {image, {{"type", "text"}, {"text", "What?"}}}}}}}};
  const json in_result = {
      {"model", "m"},
      {"max_tokens", 8},
      {"messages",
       {{{"role", "user"}, {"content", "Look"}},
        {{"role", "assistant"},
         {"content",
          {{{"type", "tool_use"}, {"id", "t1"}, {"name", "read"}, {"input", {{"file", "a.png"}}}}}}},
        {{"role", "user"},
         {"content",
          {{{"type", "tool_result"},
            {"tool_use_id", "t1"},
            {"content", {{{"type", "text"}, {"text", "File: a.png"}}, image}}}}}}}}};
  for (const auto& [body, path] : {std::pair{direct, "messages[0].content[0].type"},
                                   std::pair{in_result, "messages[2].content[0].content[1].type"}}) {
    HttpResult r = srv->Post("/v1/messages", body);
    EXPECT_EQ(r.status, 400) << r.body;
    const json j = r.Json();
    EXPECT_EQ(j["type"], "error") << r.body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error") << r.body;
    const std::string m = j["error"]["message"];
    EXPECT_EQ(m.rfind(std::string(path) + ": 'image' is not supported", 0), 0u) << m;
    EXPECT_NE(m.find("image input is not supported"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace lazyslot::testing
