// llama-server's template flags and rules through real HTTP: -rea/--reasoning on|off|auto (the templates'
// enable_thinking, a request's chat_template_kwargs over it, a closed thinking block that the reasoning
// parser then does not wait for), today's date in templates (strftime_now, date_string, datetime), a template
// that adds an undefined variable to a string (firefunction-v2's `functions`), llama-server's built-in
// template names for --chat-template (any other value is Jinja source), and the refusal of two assistant
// messages at the end of a chat.
#include <gtest/gtest.h>

#include <ctime>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

const char* const kModel = "models/stories260K.gguf";
const char* const kR1 = "templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja";
const char* const kQwq = "templates/Qwen-QwQ-32B.jinja";
const char* const kQwen3 = "templates/Qwen-Qwen3-0.6B.jinja";
const char* const kLlama32 = "templates/meta-llama-Llama-3.2-3B-Instruct.jinja";

json UserAsks() { return json::array({{{"role", "user"}, {"content", "What is today?"}}}); }

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The prompt /apply-template renders for `body` (messages: UserAsks() unless given).
std::string Prompt(const ServerProcess& srv, json body = json::object()) {
  if (!body.contains("messages")) body["messages"] = UserAsks();
  HttpResult r = srv.Post("/apply-template", body);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.Json()["prompt"].get<std::string>() : "";
}

// Starts a server that must fail at start-up; returns its log.
std::string FailedStartLog(const std::vector<std::string>& args,
                           const std::vector<std::pair<std::string, std::string>>& env = {}) {
  auto bad = ServerProcess::Launch(args, env);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (bad->Running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(bad->Running());
  EXPECT_EQ(bad->exit_status(), 2) << bad->Log();  // a usage error, before anything loads
  return bad->Log();
}

std::string Today(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[64];
  return std::string(buf, std::strftime(buf, sizeof(buf), format, &local));
}

// --reasoning off closes DeepSeek-R1's thinking block (its template reads enable_thinking); a request's
// chat_template_kwargs.enable_thinking overrides the flag, with or without tools. Thinking closed in the
// prompt, the answer is content; left open, it is reasoning until a "</think>".
TEST(ServerTemplateFlags, ReasoningOffClosesThinkingAndKwargsOverride) {
  REQUIRE_SHARED_FILE(kModel);
  REQUIRE_SHARED_FILE(kR1);
  START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1", "--chat-template-file", SharedPath(kR1),
                     "--reasoning", "off"});
  const json tool = {{"type", "function"},
                     {"function", {{"name", "today"}, {"parameters", {{"type", "object"}}}}}};
  for (const json& tools : {json(nullptr), json::array(), json::array({tool})}) {
    json body = {{"tools", tools}};
    EXPECT_TRUE(EndsWith(Prompt(*srv, body), "<think>\n</think>")) << Prompt(*srv, body);
  }
  EXPECT_TRUE(EndsWith(Prompt(*srv, {{"chat_template_kwargs", {{"enable_thinking", true}}}}), "<think>\n"));
  HttpResult bad = srv->Post("/apply-template", {{"messages", UserAsks()},
                                                 {"chat_template_kwargs", {{"enable_thinking", "no"}}}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("enable_thinking"), std::string::npos) << bad.body;

  const json ask = {{"messages", UserAsks()}, {"max_tokens", 6}, {"temperature", 0}};
  json r = srv->Post("/v1/chat/completions", ask).Json();
  const json& msg = r["choices"][0]["message"];
  EXPECT_FALSE(msg.contains("reasoning_content") && !msg["reasoning_content"].get<std::string>().empty())
      << r.dump();
  EXPECT_FALSE(msg["content"].get<std::string>().empty()) << r.dump();
  json open = ask;
  open["chat_template_kwargs"] = {{"enable_thinking", true}};
  r = srv->Post("/v1/chat/completions", open).Json();
  EXPECT_FALSE(r["choices"][0]["message"]["reasoning_content"].get<std::string>().empty()) << r.dump();
}

// Without the flag (auto) thinking stays open; a request can close it.
TEST(ServerTemplateFlags, ReasoningAutoLeavesThinkingOpen) {
  REQUIRE_SHARED_FILE(kModel);
  REQUIRE_SHARED_FILE(kR1);
  START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1", "--chat-template-file", SharedPath(kR1)});
  EXPECT_TRUE(EndsWith(Prompt(*srv), "<｜Assistant｜><think>\n")) << Prompt(*srv);
  EXPECT_TRUE(EndsWith(Prompt(*srv, {{"chat_template_kwargs", {{"enable_thinking", false}}}}), "<think>\n</think>"));
}

// llama-server's spellings: -rea with a falsy word (QwQ), LLAMA_ARG_REASONING (Qwen3, whose template writes
// its own empty block), "on" keeps QwQ's block open.
TEST(ServerTemplateFlags, ReasoningAliasesAndEnvironment) {
  REQUIRE_SHARED_FILE(kModel);
  REQUIRE_SHARED_FILE(kQwq);
  REQUIRE_SHARED_FILE(kQwen3);
  {
    START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1", "--chat-template-file", SharedPath(kQwq), "-rea",
                       "disabled"});
    EXPECT_TRUE(EndsWith(Prompt(*srv), "<|im_start|>assistant\n<think>\n</think>")) << Prompt(*srv);
  }
  {
    std::string err;
    auto srv = ServerProcess::StartWithEnv(
        {"-m", SharedPath(kModel), "-np", "1", "--chat-template-file", SharedPath(kQwen3)},
        {{"LLAMA_ARG_REASONING", "off"}}, &err);
    ASSERT_NE(srv, nullptr) << err;
    EXPECT_TRUE(EndsWith(Prompt(*srv), "<|im_start|>assistant\n<think>\n\n</think>\n\n")) << Prompt(*srv);
  }
  {
    START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1", "--chat-template-file", SharedPath(kQwq),
                       "--reasoning", "on"});
    EXPECT_TRUE(EndsWith(Prompt(*srv), "<|im_start|>assistant\n<think>\n")) << Prompt(*srv);
  }
  const std::string log = FailedStartLog({"-m", SharedPath(kModel), "--reasoning", "maybe"});
  EXPECT_NE(log.find("--reasoning"), std::string::npos) << log;
  EXPECT_NE(log.find("maybe"), std::string::npos) << log;
}

// Today's date: Llama 3.2 calls strftime_now("%d %b %Y"); llama-server also passes date_string and datetime,
// which Llama 3.3 and firefunction-v2 read. A template that adds an undefined variable to a string renders
// (firefunction-v2 adds `functions`, which nobody defines, to its system text).
TEST(ServerTemplateFlags, TodaysDateAndUndefinedConcatenation) {
  REQUIRE_SHARED_FILE(kModel);
  REQUIRE_SHARED_FILE(kLlama32);
  {
    START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1", "--chat-template-file", SharedPath(kLlama32)});
    const std::string p = Prompt(*srv);
    EXPECT_NE(p.find("Today Date: " + Today("%d %b %Y") + "\n"), std::string::npos) << p;
  }
  START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1", "--chat-template",
                     "{%- set s = 'Functions:' + '\\n' + functions -%}{{- s + ' Today is ' + datetime + ', ' + "
                     "date_string + ', ' + strftime_now('%B %d, %Y %H') + '.' -}}{%- for m in messages -%}"
                     "{{- m['content'] -}}{%- endfor -%}"});
  const std::string p = Prompt(*srv);
  const std::string want = "Functions:\n Today is " + Today("%b %d %Y") + ", " + Today("%d %b %Y") + ", ";
  EXPECT_EQ(p.rfind(want, 0), 0u) << p;
  EXPECT_NE(p.find(Today("%B %d, %Y")), std::string::npos) << p;
  // A client's kwargs win over the server's date.
  EXPECT_NE(Prompt(*srv, {{"chat_template_kwargs", {{"datetime", "Jan 01 2000"}}}}).find("Jan 01 2000"),
            std::string::npos);
}

// --chat-template takes llama-server's built-in names; an unknown name stops the start-up, listing them.
TEST(ServerTemplateFlags, BuiltinTemplateNames) {
  REQUIRE_SHARED_FILE(kModel);
  {
    START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1", "--chat-template", "gemma"});
    EXPECT_EQ(srv->Get("/props").Json()["chat_template_name"], "gemma");
    const json msgs = {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}};
    EXPECT_EQ(Prompt(*srv, {{"messages", msgs}}),
              "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n");
  }
  {
    START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1", "--chat-template", "mistral-v7"});
    EXPECT_EQ(Prompt(*srv), "[INST] What is today?[/INST]");
  }
  const std::string log = FailedStartLog({"-m", SharedPath(kModel), "--chat-template", "llama-9"});
  EXPECT_NE(log.find("--chat-template"), std::string::npos) << log;
  EXPECT_NE(log.find("llama-9"), std::string::npos) << log;
  EXPECT_NE(log.find("mistral-v7-tekken"), std::string::npos) << log;
}

// Any other --chat-template value is Jinja source, as llama-server (--jinja) takes it: a sentence without
// tags is a template that renders itself, whatever the chat (llama.cpp's test_chat_completion case "This is
// not a chat template, it is"); the server says so at start-up and counts those tokens as the prompt.
TEST(ServerTemplateFlags, SentenceIsInlineJinjaSource) {
  REQUIRE_SHARED_FILE(kModel);
  const std::string text = "This is not a chat template, it is";
  START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1", "--chat-template", text});
  EXPECT_NE(srv->Log().find("rendered as it is"), std::string::npos) << srv->Log();
  EXPECT_EQ(srv->Get("/props").Json()["chat_template"], text);
  EXPECT_EQ(Prompt(*srv), text);
  const json msgs = {{{"role", "system"}, {"content", "Book"}}, {{"role", "user"}, {"content", "Hey"}}};
  HttpResult r = srv->Post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json ids = srv->Post("/tokenize", {{"content", text}, {"add_special", true}}).Json()["tokens"];
  EXPECT_EQ(r.Json()["usage"]["prompt_tokens"], ids.size()) << r.body << ids.dump();
}

// Two assistant messages at the end: llama-server's 400 (it would prefill the last one after another
// assistant turn), on the chat route and /apply-template; asking to continue explicitly is allowed.
TEST(ServerTemplateFlags, TwoAssistantMessagesAtTheEndAreRefused) {
  REQUIRE_SHARED_FILE(kModel);
  START_SERVER(srv, {"-m", SharedPath(kModel), "-np", "1", "--chat-template", "chatml"});
  const json msgs = {{{"role", "user"}, {"content", "Hi"}},
                     {{"role", "assistant"}, {"content", "Hello."}},
                     {{"role", "assistant"}, {"content", "How"}}};
  for (const char* route : {"/v1/chat/completions", "/apply-template"}) {
    HttpResult r = srv->Post(route, {{"messages", msgs}, {"max_tokens", 2}});
    EXPECT_EQ(r.status, 400) << route << " " << r.body;
    EXPECT_NE(r.body.find("Cannot have 2 or more assistant messages at the end of the list."), std::string::npos)
        << r.body;
    EXPECT_EQ(r.Json()["error"]["type"], "invalid_request_error") << r.body;
  }
  HttpResult ok = srv->Post("/v1/chat/completions",
                            {{"messages", msgs}, {"max_tokens", 2}, {"continue_final_message", true},
                             {"add_generation_prompt", false}});
  EXPECT_EQ(ok.status, 200) << ok.body;
  // One assistant message between users is an ordinary history.
  const json fine = {{{"role", "user"}, {"content", "Hi"}},
                     {{"role", "assistant"}, {"content", "Hello."}},
                     {{"role", "user"}, {"content", "Bye"}}};
  EXPECT_EQ(srv->Post("/v1/chat/completions", {{"messages", fine}, {"max_tokens", 2}}).status, 200);
}

}  // namespace
}  // namespace lazyslot::testing
