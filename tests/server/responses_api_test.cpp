// OpenAI Responses API translation (server/responses/responses_api.h): request bodies -> chat bodies (string and item
// inputs, the function_call / function_call_output round trip, instructions, tools, tool_choice, text.format,
// reasoning), each refusal naming its path, the chat pipeline accepting every translation, chat errors
// renamed to Responses fields, the response object (completed, incomplete, calls, reasoning) and the exact
// SSE event sequences of the stream writer, whose final response equals the non-streamed object.
#include "server/responses/responses_api.h"

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

Json Body(const Json& extra = Json::object()) {
  Json b = {{"model", "m"}, {"input", "Hello"}};
  for (auto it = extra.begin(); it != extra.end(); ++it) b[it.key()] = it.value();
  return b;
}

Json Translate(const Json& body) {
  Result<Json> r = ResponsesToChatBody(body);
  EXPECT_TRUE(r.ok()) << r.status().message() << "\nbody: " << body.dump();
  return r.ok() ? *r : Json::object();
}

void ExpectChatAccepts(const Json& chat) { testing::ExpectChatPipelineAccepts(chat); }

void ExpectRefused(const Json& body, const std::string& prefix, const std::string& needle = "") {
  Result<Json> r = ResponsesToChatBody(body);
  ASSERT_FALSE(r.ok()) << "accepted: " << body.dump();
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  const std::string m = r.status().message();
  EXPECT_EQ(m.rfind(prefix + ": ", 0), 0u) << "message: " << m << "\nexpected path: " << prefix;
  if (!needle.empty()) {
    EXPECT_NE(m.find(needle), std::string::npos) << m;
  }
}

const Json kWeatherParams = {
    {"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}};

// ---- requests ---------------------------------------------------------------------------------------------

TEST(ResponsesRequest, StringInputIsOneUserMessage) {
  const Json chat = Translate(Body());
  EXPECT_EQ(chat.dump(), R"({"model":"m","messages":[{"role":"user","content":"Hello"}]})");
  ExpectChatAccepts(chat);
}

TEST(ResponsesRequest, InstructionsLeadAndDeveloperBecomesSystem) {
  const Json chat = Translate(
      Body({{"instructions", "Be brief."},
            {"input",
             {{{"role", "developer"}, {"content", "Use French."}},
              {{"type", "message"},
               {"role", "user"},
               {"content",
                {{{"type", "input_text"}, {"text", "a"}}, {{"type", "input_text"}, {"text", "b"}}}}}}}}));
  const Json want = Json::parse(R"([{"role":"system","content":"Be brief."},
      {"role":"system","content":"Use French."},{"role":"user","content":"a\nb"}])");
  EXPECT_EQ(chat["messages"], want);
  ExpectChatAccepts(chat);
  // Empty instructions add no message.
  EXPECT_EQ(Translate(Body({{"instructions", ""}}))["messages"].size(), 1u);
}

TEST(ResponsesRequest, FunctionCallRoundTripMergesOneAssistantTurn) {
  const Json input = Json::parse(R"([
    {"role": "user", "content": "Weather in Paris and Rome?"},
    {"type": "reasoning", "id": "rs_1", "summary": [],
     "content": [{"type": "reasoning_text", "text": "Two calls."}]},
    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Checking.", "annotations": [], "logprobs": []}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "get_weather",
     "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
    {"type": "function_call", "call_id": "call_b", "name": "get_weather", "arguments": "{\"city\":\"Rome\"}"},
    {"type": "function_call_output", "call_id": "call_a", "output": "21C"},
    {"type": "function_call_output", "call_id": "call_b", "output": [{"type": "input_text", "text": "18C"}]}
  ])");
  const Json chat = Translate(
      Body({{"input", input},
            {"tools", {{{"type", "function"}, {"name", "get_weather"}, {"parameters", kWeatherParams}}}}}));
  const Json want = Json::parse(R"([
    {"role": "user", "content": "Weather in Paris and Rome?"},
    {"role": "assistant", "reasoning_content": "Two calls.", "content": "Checking.", "tool_calls": [
      {"id": "call_a", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
      {"id": "call_b", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}]},
    {"role": "tool", "tool_call_id": "call_a", "name": "get_weather", "content": "21C"},
    {"role": "tool", "tool_call_id": "call_b", "name": "get_weather", "content": "18C"}
  ])");
  EXPECT_EQ(chat["messages"], want) << chat["messages"].dump(1);
  ExpectChatAccepts(chat);
}

TEST(ResponsesRequest, ResponseOutputReplaysAsInput) {
  // A client appends a response's output items and its tool results to the next request's input.
  ChatOutcome o;
  o.reasoning = "think";
  o.tool_calls = {ToolCall{"call_x", "get_weather", R"({"city":"Oslo"})"}};
  o.finish_reason = "tool_calls";
  const Json resp = ResponsesObjectJson(o, "resp_abc", "m", 1, ResponsesRequestEcho(Body()));
  Json input = Json::array({{{"role", "user"}, {"content", "Weather?"}}});
  for (const Json& item : resp["output"]) input.push_back(item);
  input.push_back({{"type", "function_call_output"}, {"call_id", "call_x"}, {"output", "sunny"}});
  const Json chat = Translate(Body({{"input", input}}));
  ASSERT_EQ(chat["messages"].size(), 3u) << chat.dump();
  EXPECT_EQ(chat["messages"][1]["reasoning_content"], "think");
  EXPECT_EQ(chat["messages"][1]["tool_calls"][0]["id"], "call_x");
  EXPECT_EQ(chat["messages"][2]["tool_call_id"], "call_x");
  ExpectChatAccepts(chat);
}

TEST(ResponsesRequest, ToolsFlattenAndToolChoiceNests) {
  const Json tools = {{{"type", "function"},
                       {"name", "get_weather"},
                       {"description", "Weather."},
                       {"parameters", kWeatherParams},
                       {"strict", true}},
                      {{"type", "function"}, {"name", "noop"}, {"parameters", nullptr}}};
  Json chat = Translate(Body({{"tools", tools},
                              {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}},
                              {"parallel_tool_calls", false}}));
  EXPECT_EQ(chat["tools"][0], Json::parse(R"({"type":"function","function":{"name":"get_weather",
      "description":"Weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}},
      "required":["city"]},"strict":true}})"));
  EXPECT_EQ(chat["tools"][1].dump(), R"({"type":"function","function":{"name":"noop"}})");
  EXPECT_EQ(chat["tool_choice"].dump(), R"({"type":"function","function":{"name":"get_weather"}})");
  EXPECT_EQ(chat["parallel_tool_calls"], false);
  ExpectChatAccepts(chat);
  Result<ToolRequest> tr = ParseToolRequest(chat);
  ASSERT_TRUE(tr.ok());
  EXPECT_EQ(tr->choice.mode, ToolChoiceMode::kNamed);
  EXPECT_EQ(tr->choice.name, "get_weather");

  for (const char* mode : {"auto", "none", "required"}) {
    EXPECT_EQ(Translate(Body({{"tools", tools}, {"tool_choice", mode}}))["tool_choice"], mode);
  }
  // allowed_tools narrows the offered functions.
  chat = Translate(Body({{"tools", tools},
                         {"tool_choice",
                          {{"type", "allowed_tools"},
                           {"mode", "required"},
                           {"tools", {{{"type", "function"}, {"name", "noop"}}}}}}}));
  ASSERT_EQ(chat["tools"].size(), 1u);
  EXPECT_EQ(chat["tools"][0]["function"]["name"], "noop");
  EXPECT_EQ(chat["tool_choice"], "required");
  ExpectChatAccepts(chat);
  // No tools: no chat field.
  EXPECT_FALSE(Translate(Body({{"tools", Json::array()}})).contains("tools"));
}

TEST(ResponsesRequest, TextFormatBecomesResponseFormat) {
  const Json schema = {{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}};
  Json chat = Translate(
      Body({{"text",
             {{"format", {{"type", "json_schema"}, {"name", "thing"}, {"schema", schema}, {"strict", true}}},
              {"verbosity", "medium"}}}}));
  EXPECT_EQ(chat["response_format"],
            (Json{{"type", "json_schema"},
                  {"json_schema", {{"name", "thing"}, {"schema", schema}, {"strict", true}}}}));
  ExpectChatAccepts(chat);
  Result<OutputConstraint> oc = ParseOutputConstraint(chat);
  ASSERT_TRUE(oc.ok());
  EXPECT_FALSE(oc->gbnf.empty());

  chat = Translate(Body({{"text", {{"format", {{"type", "json_object"}}}}}}));
  EXPECT_EQ(chat["response_format"].dump(), R"({"type":"json_object"})");
  ExpectChatAccepts(chat);
  EXPECT_FALSE(Translate(Body({{"text", {{"format", {{"type", "text"}}}}}})).contains("response_format"));
}

TEST(ResponsesRequest, SamplingFieldsAndLimits) {
  const Json chat = Translate(Body({{"max_output_tokens", 3},
                                    {"temperature", 0.5},
                                    {"top_p", 0.9},
                                    {"stream", true},
                                    {"seed", 7},
                                    {"top_k", 5}}));
  EXPECT_EQ(chat["max_tokens"], 3);
  EXPECT_FALSE(chat.contains("max_output_tokens"));
  ExpectChatAccepts(chat);
  Result<GenerationParams> g = ParseGenerationParams(chat);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->n_predict, 3);
  EXPECT_TRUE(g->stream);
  EXPECT_FLOAT_EQ(g->sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(g->sampling.top_p, 0.9f);
  EXPECT_EQ(g->sampling.seed, 7u);
  EXPECT_EQ(g->sampling.top_k, 5);
}

TEST(ResponsesRequest, ReasoningEffortBecomesTemplateVariables) {
  Json chat = Translate(Body({{"reasoning", {{"effort", "low"}, {"summary", "auto"}}}}));
  EXPECT_EQ(chat["chat_template_kwargs"].dump(), R"({"enable_thinking":true,"reasoning_effort":"low"})");
  ExpectChatAccepts(chat);
  chat = Translate(Body({{"reasoning", {{"effort", "none"}}}}));
  EXPECT_EQ(chat["chat_template_kwargs"]["enable_thinking"], false);
  // The client's own template variables win.
  chat = Translate(
      Body({{"reasoning", {{"effort", "none"}}}, {"chat_template_kwargs", {{"enable_thinking", true}}}}));
  EXPECT_EQ(chat["chat_template_kwargs"].dump(), R"({"enable_thinking":true,"reasoning_effort":"none"})");
  EXPECT_FALSE(Translate(Body({{"reasoning", {{"effort", nullptr}}}})).contains("chat_template_kwargs"));
}

TEST(ResponsesRequest, BookkeepingFieldsAreAccepted) {
  const Json chat = Translate(Body({{"store", true},
                                    {"metadata", {{"k", "v"}}},
                                    {"user", "u1"},
                                    {"safety_identifier", "s"},
                                    {"prompt_cache_key", "p"},
                                    {"service_tier", "auto"},
                                    {"truncation", "disabled"},
                                    {"background", false},
                                    {"previous_response_id", nullptr},
                                    {"include", Json::array({"reasoning.encrypted_content"})},
                                    {"top_logprobs", 0},
                                    {"stream_options", {{"include_obfuscation", false}}}}));
  EXPECT_EQ(chat.dump(), R"({"model":"m","messages":[{"role":"user","content":"Hello"}]})");
  ExpectChatAccepts(chat);
}

TEST(ResponsesRequest, RefusalsNameTheirPath) {
  ExpectRefused(Body({{"inptu", 1}}), "inptu", "did you mean 'input'");
  ExpectRefused(Body({{"max_tokens", 5}}), "max_tokens", "unknown field");
  ExpectRefused(Body({{"previous_response_id", "resp_1"}}), "previous_response_id", "stateless");
  ExpectRefused(Body({{"conversation", "conv_1"}}), "conversation", "stateless");
  ExpectRefused(Body({{"background", true}}), "background");
  ExpectRefused(Body({{"prompt", {{"id", "pmpt_1"}}}}), "prompt");
  ExpectRefused(Body({{"include", {"message.output_text.logprobs"}}}), "include[0]");
  ExpectRefused(Body({{"truncation", "auto"}}), "truncation");
  ExpectRefused(Body({{"top_logprobs", 3}}), "top_logprobs");
  ExpectRefused(Body({{"store", "yes"}}), "store");
  ExpectRefused(Body({{"model", 5}}), "model");
  ExpectRefused(Body({{"metadata", {{"k", 1}}}}), "metadata.k");
  ExpectRefused(Body({{"stream_options", {{"include_usage", true}}}}), "stream_options.include_usage");
  ExpectRefused(Body({{"instructions", 5}}), "instructions");
  ExpectRefused(Body({{"max_output_tokens", 0}}), "max_output_tokens");
  ExpectRefused(Body({{"max_output_tokens", "5"}}), "max_output_tokens");

  ExpectRefused(Json{{"model", "m"}}, "input", "required");
  ExpectRefused(Body({{"input", Json::array()}}), "input");
  ExpectRefused(Body({{"input", 5}}), "input");
  const Json user = {{"role", "user"}, {"content", "hi"}};
  ExpectRefused(Body({{"input", {user, 5}}}), "input[1]");
  ExpectRefused(Body({{"input", {user, {{"content", "x"}}}}}), "input[1].type", "required");
  ExpectRefused(Body({{"input", {{{"type", "web_search_call"}, {"id", "ws"}}}}}), "input[0].type",
                "web_search_call");
  ExpectRefused(Body({{"input", {{{"type", "item_reference"}, {"id", "msg_1"}}}}}), "input[0].type",
                "stateless");
  ExpectRefused(Body({{"input", {{{"role", "tool"}, {"content", "x"}}}}}), "input[0].role");
  ExpectRefused(Body({{"input", {{{"role", "user"}}}}}), "input[0].content", "required");
  ExpectRefused(Body({{"input", {{{"role", "user"}, {"content", "x"}, {"name", "bob"}}}}}), "input[0].name");
  ExpectRefused(Body({{"input",
                       {user,
                        {{"role", "user"},
                         {"content",
                          {{{"type", "input_text"}, {"text", "a"}},
                           {{"type", "input_image"}, {"image_url", "http://x"}}}}}}}}),
                "input[1].content[1].type", "text only");
  ExpectRefused(Body({{"input", {{{"role", "user"}, {"content", {{{"type", "input_text"}}}}}}}}),
                "input[0].content[0].text");
  const Json call = {{"type", "function_call"}, {"call_id", "c1"}, {"name", "f"}, {"arguments", "{}"}};
  Json bad_args = call;
  bad_args["arguments"] = "{oops";
  ExpectRefused(Body({{"input", {user, user, bad_args}}}), "input[2].arguments", "JSON");
  Json no_name = call;
  no_name.erase("name");
  ExpectRefused(Body({{"input", {user, no_name}}}), "input[1].name", "required");
  ExpectRefused(
      Body({{"input", {user, {{"type", "function_call_output"}, {"call_id", "zz"}, {"output", "x"}}}}}),
      "input[1].call_id", "zz");
  ExpectRefused(Body({{"input", {call, {{"type", "function_call_output"}, {"call_id", "c1"}}}}}),
                "input[1].output", "required");
  ExpectRefused(
      Body(
          {{"input", {{{"type", "reasoning"}, {"summary", Json::array()}, {"content", {{{"type", "x"}}}}}}}}),
      "input[0].content[0].type");

  const Json fn = {{"type", "function"}, {"name", "f"}};
  ExpectRefused(Body({{"tools", {fn, {{"type", "web_search"}}}}}), "tools[1].type", "function tools only");
  ExpectRefused(Body({{"tools", {{{"type", "function"}}}}}), "tools[0].name", "required");
  ExpectRefused(Body({{"tools", {{{"type", "function"}, {"name", "f"}, {"function", {}}}}}}),
                "tools[0].function");
  ExpectRefused(Body({{"tools", {{{"type", "function"}, {"name", "f"}, {"parameters", "x"}}}}}),
                "tools[0].parameters");
  ExpectRefused(Body({{"tools", 5}}), "tools");
  ExpectRefused(Body({{"tools", {fn}}, {"tool_choice", "sometimes"}}), "tool_choice");
  ExpectRefused(Body({{"tools", {fn}}, {"tool_choice", {{"type", "file_search"}}}}), "tool_choice.type");
  ExpectRefused(Body({{"tools", {fn}}, {"tool_choice", {{"type", "function"}}}}), "tool_choice.name");
  ExpectRefused(Body({{"tools", {fn}},
                      {"tool_choice",
                       {{"type", "allowed_tools"},
                        {"mode", "auto"},
                        {"tools", {{{"type", "function"}, {"name", "g"}}}}}}}),
                "tool_choice.tools[0].name", "'g'");

  ExpectRefused(Body({{"text", {{"format", {{"type", "xml"}}}}}}), "text.format.type");
  ExpectRefused(Body({{"text", {{"format", {{"type", "json_schema"}, {"json_schema", {}}}}}}}),
                "text.format.json_schema");
  ExpectRefused(Body({{"text", {{"format", {{"type", "json_schema"}, {"name", 3}}}}}}), "text.format.name");
  ExpectRefused(Body({{"text", {{"verbosity", "low"}}}}), "text.verbosity");
  ExpectRefused(Body({{"text", {{"color", "red"}}}}), "text.color");
  ExpectRefused(Body({{"reasoning", {{"effort", "extreme"}}}}), "reasoning.effort");
  ExpectRefused(Body({{"reasoning", {{"summary", "detailed"}}}}), "reasoning.summary", "summaries");
  ExpectRefused(Body({{"chat_template_kwargs", 3}}), "chat_template_kwargs");
}

TEST(ResponsesRequest, ChatErrorsAreRenamedToResponsesFields) {
  auto renamed = [](const std::string& m) { return ChatErrorToResponses(InvalidArgument(m)).message(); };
  EXPECT_EQ(renamed("tools[1].function.name: must be 1 to 64 letters"),
            "tools[1].name: must be 1 to 64 letters");
  EXPECT_EQ(renamed("tool_choice.function.name: is required"), "tool_choice.name: is required");
  EXPECT_EQ(renamed("response_format.json_schema.schema: bad"), "text.format.schema: bad");
  EXPECT_EQ(renamed("response_format: cannot be combined with tools"),
            "text.format: cannot be combined with tools");
  EXPECT_EQ(renamed("max_tokens: must be at least 1"), "max_output_tokens: must be at least 1");
  EXPECT_EQ(renamed("messages: the chat template 'x' could not render them"),
            "input: the chat template 'x' could not render them");
  EXPECT_EQ(renamed("messages[3].content: bad"), "input: bad");
  EXPECT_EQ(renamed("temperature: must be between 0 and 2"), "temperature: must be between 0 and 2");
  EXPECT_EQ(renamed("tools: cannot be combined"), "tools: cannot be combined");
  const Status other = ResourceExhausted("messages: queue full");
  EXPECT_EQ(ChatErrorToResponses(other).message(), "messages: queue full");

  // A real chat-pipeline error on a translated body: a schema keyword the grammar cannot enforce.
  const Json chat = Translate(Body(
      {{"text",
        {{"format",
          {{"type", "json_schema"}, {"name", "x"}, {"schema", {{"type", "object"}, {"properties", 3}}}}}}}}));
  Result<OutputConstraint> oc = ParseOutputConstraint(chat);
  ASSERT_FALSE(oc.ok());
  const std::string m = ChatErrorToResponses(oc.status()).message();
  EXPECT_EQ(m.rfind("text.format.schema", 0), 0u) << m;
}

// ---- response object -------------------------------------------------------------------------------------

ChatOutcome Outcome(std::string content, std::string finish = "stop") {
  ChatOutcome o;
  o.content = std::move(content);
  o.finish_reason = std::move(finish);
  o.n_prompt = 10;
  o.n_generated = 4;
  o.n_cached = 2;
  return o;
}

TEST(ResponsesObject, CompletedText) {
  const Json echo = ResponsesRequestEcho(Body({{"temperature", 0.5}, {"instructions", "Be brief."}}));
  const Json r = ResponsesObjectJson(Outcome("Hi there"), "resp_abc", "m", 100, echo, 105);
  EXPECT_EQ(r["id"], "resp_abc");
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["created_at"], 100);
  EXPECT_EQ(r["completed_at"], 105);
  EXPECT_EQ(r["status"], "completed");
  EXPECT_TRUE(r["error"].is_null());
  EXPECT_TRUE(r["incomplete_details"].is_null());
  EXPECT_EQ(r["model"], "m");
  EXPECT_FALSE(r.contains("output_text"));  // the SDKs compute it
  EXPECT_EQ(r["output"], Json::parse(R"([{"type":"message","id":"msg_abc_0","status":"completed",
      "role":"assistant","content":[{"type":"output_text","text":"Hi there","annotations":[],
      "logprobs":[]}]}])"));
  EXPECT_EQ(r["usage"], Json::parse(R"({"input_tokens":10,"input_tokens_details":{"cached_tokens":2},
      "output_tokens":4,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":14})"));
  EXPECT_EQ(r["temperature"], 0.5);
  EXPECT_EQ(r["instructions"], "Be brief.");
  EXPECT_TRUE(r["top_p"].is_null());
  EXPECT_EQ(r["tool_choice"], "auto");
  EXPECT_EQ(r["tools"], Json::array());
  EXPECT_EQ(r["parallel_tool_calls"], true);
  EXPECT_EQ(r["text"].dump(), R"({"format":{"type":"text"},"verbosity":"medium"})");
  EXPECT_EQ(r["metadata"], Json::object());
  EXPECT_EQ(r["truncation"], "disabled");
  EXPECT_EQ(r["store"], false);
  // completed_at defaults to created_at.
  EXPECT_EQ(ResponsesObjectJson(Outcome("x"), "resp_abc", "m", 100, echo)["completed_at"], 100);
}

TEST(ResponsesObject, IncompleteAtMaxOutputTokens) {
  const Json r = ResponsesObjectJson(Outcome("Hi", "length"), "resp_abc", "m", 100,
                                     ResponsesRequestEcho(Body({{"max_output_tokens", 3}})));
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["incomplete_details"].dump(), R"({"reason":"max_output_tokens"})");
  EXPECT_TRUE(r["completed_at"].is_null());
  EXPECT_EQ(r["max_output_tokens"], 3);
  ASSERT_EQ(r["output"].size(), 1u);
  EXPECT_EQ(r["output"][0]["status"], "incomplete");
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "Hi");
}

TEST(ResponsesObject, ReasoningAndToolCalls) {
  ChatOutcome o = Outcome("", "tool_calls");
  o.reasoning = "Need weather.";
  o.tool_calls = {ToolCall{"call_1", "get_weather", R"({"city":"Paris"})"},
                  ToolCall{"call_2", "get_weather", R"({"city":"Rome"})"}};
  const Json r = ResponsesObjectJson(o, "resp_abc", "m", 1, ResponsesRequestEcho(Body()));
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(r["output"], Json::parse(R"([
    {"type":"reasoning","id":"rs_abc_0","status":"completed","summary":[],
     "content":[{"type":"reasoning_text","text":"Need weather."}]},
    {"type":"function_call","id":"fc_abc_1","status":"completed","call_id":"call_1","name":"get_weather",
     "arguments":"{\"city\":\"Paris\"}"},
    {"type":"function_call","id":"fc_abc_2","status":"completed","call_id":"call_2","name":"get_weather",
     "arguments":"{\"city\":\"Rome\"}"}])"))
      << r["output"].dump(1);
  // Text and a call: the message comes first.
  o.content = "Checking.";
  o.reasoning.clear();
  const Json r2 = ResponsesObjectJson(o, "resp_abc", "m", 1, Json::object());
  ASSERT_EQ(r2["output"].size(), 3u);
  EXPECT_EQ(r2["output"][0]["type"], "message");
  EXPECT_EQ(r2["output"][1]["id"], "fc_abc_1");
}

TEST(ResponsesObject, ReasoningOnlyStillHasAMessage) {
  ChatOutcome o = Outcome("", "length");
  o.reasoning = "Hmm";
  const Json r = ResponsesObjectJson(o, "resp_abc", "m", 1, Json::object());
  ASSERT_EQ(r["output"].size(), 2u);
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_EQ(r["output"][0]["status"], "incomplete");  // the model stopped while thinking
  EXPECT_EQ(r["output"][1]["type"], "message");
  EXPECT_EQ(r["output"][1]["content"][0]["text"], "");
  EXPECT_EQ(r["output"][1]["status"], "incomplete");
}

TEST(ResponsesObject, EchoRepeatsTheRequest) {
  const Json tools = {{{"type", "function"}, {"name", "f"}}};
  const Json format = {{"type", "json_object"}};
  const Json e = ResponsesRequestEcho(Body({{"tools", tools},
                                            {"tool_choice", "required"},
                                            {"parallel_tool_calls", false},
                                            {"top_p", 0.5},
                                            {"text", {{"format", format}}},
                                            {"reasoning", {{"effort", "high"}}},
                                            {"metadata", {{"a", "b"}}},
                                            {"user", "u"}}));
  EXPECT_EQ(e["tools"], tools);
  EXPECT_EQ(e["tool_choice"], "required");
  EXPECT_EQ(e["parallel_tool_calls"], false);
  EXPECT_EQ(e["top_p"], 0.5);
  EXPECT_EQ(e["text"]["format"], format);
  EXPECT_EQ(e["reasoning"].dump(), R"({"effort":"high","summary":null})");
  EXPECT_EQ(e["metadata"].dump(), R"({"a":"b"})");
  EXPECT_EQ(e["user"], "u");
  EXPECT_TRUE(e["previous_response_id"].is_null());
  EXPECT_TRUE(e["max_output_tokens"].is_null());
}

// ---- stream -----------------------------------------------------------------------------------------------

using testing::ParseNamedSse;
using testing::SseEvent;

std::vector<SseEvent> ParseSse(const std::string& text) { return ParseNamedSse(text); }

std::vector<std::string> Types(const std::vector<SseEvent>& events) {
  std::vector<std::string> t;
  for (const SseEvent& e : events) t.push_back(e.name);
  return t;
}

ChatDelta Text(ChatDelta::Kind kind, std::string text, int tool_index = -1) {
  ChatDelta d;
  d.kind = kind;
  d.text = std::move(text);
  d.tool_index = tool_index;
  return d;
}

ChatDelta CallStart(int index, std::string id, std::string name) {
  ChatDelta d;
  d.kind = ChatDelta::kToolCallStart;
  d.tool_index = index;
  d.id = std::move(id);
  d.name = std::move(name);
  return d;
}

// Runs the writer over `deltas` and `outcome`; checks sequence numbers (0, 1, 2, ...) and that the final
// response equals ResponsesObjectJson of the same outcome.
std::vector<SseEvent> Stream(const std::vector<ChatDelta>& deltas, const ChatOutcome& outcome) {
  const Json echo = ResponsesRequestEcho(Body({{"stream", true}}));
  ResponsesStreamWriter w("resp_abc", "m", 100, echo);
  std::string sse = w.Start();
  for (const ChatDelta& d : deltas) sse += w.Delta(d);
  sse += w.Finish(outcome, 101);
  EXPECT_TRUE(w.finished());
  EXPECT_EQ(w.Finish(outcome), "");
  EXPECT_EQ(w.Delta(Text(ChatDelta::kContent, "late")), "");
  std::vector<SseEvent> events = ParseSse(sse);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].data["sequence_number"], i);
  if (events.size() >= 2) {
    EXPECT_EQ(events[0].data["response"]["status"], "in_progress");
    EXPECT_EQ(events[0].data["response"]["output"], Json::array());
    EXPECT_TRUE(events[0].data["response"]["usage"].is_null());
    EXPECT_EQ(events[1].data["response"], events[0].data["response"]);
    EXPECT_EQ(events.back().data["response"], ResponsesObjectJson(outcome, "resp_abc", "m", 100, echo, 101))
        << events.back().data["response"].dump(1);
  }
  return events;
}

TEST(ResponsesStream, TextOnly) {
  const auto events = Stream(
      {Text(ChatDelta::kContent, "Hel"), Text(ChatDelta::kContent, ""), Text(ChatDelta::kContent, "lo")},
      Outcome("Hello"));
  EXPECT_EQ(Types(events),
            (std::vector<std::string>{"response.created", "response.in_progress",
                                      "response.output_item.added", "response.content_part.added",
                                      "response.output_text.delta", "response.output_text.delta",
                                      "response.output_text.done", "response.content_part.done",
                                      "response.output_item.done", "response.completed"}));
  ASSERT_EQ(events.size(), 10u);
  EXPECT_EQ(events[2].data["output_index"], 0);
  EXPECT_EQ(events[2].data["item"].dump(),
            R"({"type":"message","id":"msg_abc_0","status":"in_progress","role":"assistant","content":[]})");
  EXPECT_EQ(events[3].data["part"].dump(),
            R"({"type":"output_text","text":"","annotations":[],"logprobs":[]})");
  for (size_t i = 3; i <= 7; ++i) {
    EXPECT_EQ(events[i].data["item_id"], "msg_abc_0");
    EXPECT_EQ(events[i].data["output_index"], 0);
    EXPECT_EQ(events[i].data["content_index"], 0);
  }
  EXPECT_EQ(events[4].data["delta"], "Hel");
  EXPECT_EQ(events[4].data["logprobs"], Json::array());
  EXPECT_EQ(events[5].data["delta"], "lo");
  EXPECT_EQ(events[6].data["text"], "Hello");
  EXPECT_EQ(events[7].data["part"]["text"], "Hello");
  EXPECT_EQ(events[8].data["item"]["status"], "completed");
  EXPECT_EQ(events[9].data["response"]["status"], "completed");
  EXPECT_EQ(events[9].data["response"]["usage"]["total_tokens"], 14);
}

TEST(ResponsesStream, ReasoningThenText) {
  ChatOutcome o = Outcome("Yes.");
  o.reasoning = "Let me think";
  const auto events = Stream({Text(ChatDelta::kReasoning, "Let me "), Text(ChatDelta::kReasoning, "think"),
                              Text(ChatDelta::kContent, "Yes.")},
                             o);
  EXPECT_EQ(Types(events),
            (std::vector<std::string>{
                "response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added", "response.reasoning_text.delta",
                "response.reasoning_text.delta", "response.reasoning_text.done", "response.content_part.done",
                "response.output_item.done", "response.output_item.added", "response.content_part.added",
                "response.output_text.delta", "response.output_text.done", "response.content_part.done",
                "response.output_item.done", "response.completed"}));
  ASSERT_EQ(events.size(), 16u);
  EXPECT_EQ(events[2].data["item"].dump(),
            R"({"type":"reasoning","id":"rs_abc_0","status":"in_progress","summary":[],"content":[]})");
  EXPECT_EQ(events[3].data["part"].dump(), R"({"type":"reasoning_text","text":""})");
  EXPECT_EQ(events[4].data["item_id"], "rs_abc_0");
  EXPECT_EQ(events[4].data["content_index"], 0);
  EXPECT_EQ(events[6].data["text"], "Let me think");
  EXPECT_EQ(events[8].data["item"]["content"][0]["text"], "Let me think");
  EXPECT_EQ(events[9].data["output_index"], 1);
  EXPECT_EQ(events[11].data["item_id"], "msg_abc_1");
  EXPECT_EQ(events[11].data["output_index"], 1);
}

TEST(ResponsesStream, FunctionCall) {
  ChatOutcome o = Outcome("Checking.", "tool_calls");
  o.tool_calls = {ToolCall{"call_1", "get_weather", R"({"city":"Paris"})"}};
  const auto events =
      Stream({Text(ChatDelta::kContent, "Checking."), CallStart(0, "call_1", "get_weather"),
              Text(ChatDelta::kToolCallArguments, R"({"city":)", 0),
              Text(ChatDelta::kToolCallArguments, R"("Paris"})", 0),
              Text(ChatDelta::kToolCallArguments, "ignored: no open call with this index", 5)},
             o);
  EXPECT_EQ(Types(events),
            (std::vector<std::string>{
                "response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added", "response.output_text.delta", "response.output_text.done",
                "response.content_part.done", "response.output_item.done", "response.output_item.added",
                "response.function_call_arguments.delta", "response.function_call_arguments.delta",
                "response.function_call_arguments.done", "response.output_item.done", "response.completed"}));
  ASSERT_EQ(events.size(), 14u);
  EXPECT_EQ(events[8].data["output_index"], 1);
  EXPECT_EQ(events[8].data["item"].dump(),
            R"({"type":"function_call","id":"fc_abc_1","status":"in_progress",)"
            R"("call_id":"call_1","name":"get_weather","arguments":""})");
  EXPECT_EQ(events[9].data["item_id"], "fc_abc_1");
  EXPECT_EQ(events[9].data["output_index"], 1);
  EXPECT_EQ(events[9].data["delta"], R"({"city":)");
  EXPECT_EQ(events[11].data["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(events[11].data["name"], "get_weather");
  EXPECT_EQ(events[12].data["item"]["status"], "completed");
}

TEST(ResponsesStream, MaxOutputTokensEndsIncomplete) {
  const auto events = Stream({Text(ChatDelta::kContent, "Once")}, Outcome("Once", "length"));
  EXPECT_EQ(Types(events),
            (std::vector<std::string>{
                "response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added", "response.output_text.delta", "response.output_text.done",
                "response.content_part.done", "response.output_item.done", "response.incomplete"}));
  ASSERT_EQ(events.size(), 9u);
  EXPECT_EQ(events[7].data["item"]["status"], "incomplete");
  EXPECT_EQ(events[8].data["response"]["status"], "incomplete");
  EXPECT_EQ(events[8].data["response"]["incomplete_details"]["reason"], "max_output_tokens");
}

TEST(ResponsesStream, NothingWrittenStillSendsAnEmptyMessage) {
  const auto events = Stream({}, Outcome(""));
  EXPECT_EQ(Types(events),
            (std::vector<std::string>{"response.created", "response.in_progress",
                                      "response.output_item.added", "response.content_part.added",
                                      "response.output_text.done", "response.content_part.done",
                                      "response.output_item.done", "response.completed"}));
  ChatOutcome o = Outcome("", "length");
  o.reasoning = "Hm";
  const auto thinking = Stream({Text(ChatDelta::kReasoning, "Hm")}, o);  // final object checked in Stream
  EXPECT_EQ(thinking.back().name, "response.incomplete");
}

TEST(ResponsesStream, FailSendsErrorThenFailed) {
  ResponsesStreamWriter w("resp_abc", "m", 100, Json::object());
  std::string sse = w.Start() + w.Delta(Text(ChatDelta::kContent, "Par"));
  sse += w.Fail("the engine stopped");
  EXPECT_EQ(w.Finish(Outcome("x")), "");
  const auto events = ParseSse(sse);
  ASSERT_EQ(events.size(), 7u);
  EXPECT_EQ(events[5].data.dump(),
            R"({"type":"error","sequence_number":5,"code":"server_error","message":"the engine stopped",)"
            R"("param":null})");
  const Json& r = events[6].data["response"];
  EXPECT_EQ(events[6].name, "response.failed");
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["error"].dump(), R"({"code":"server_error","message":"the engine stopped"})");
  EXPECT_EQ(r["output"][0]["status"], "incomplete");
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "Par");
}

}  // namespace
}  // namespace lazyslot::server
