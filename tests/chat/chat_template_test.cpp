// ChatTemplate tests: the models' own templates (from the GGUFs) against the Hugging Face reference renders
// in
// ../shared/reference/chat-template, the built-in templates, ForModel's fallback choice, and error surfacing.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "chat/chat_messages.h"
#include "gguf/gguf.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using nlohmann::ordered_json;
using testing::SharedPath;

ordered_json ReadJson(const std::string& rel) {
  std::ifstream in(SharedPath(rel));
  std::stringstream ss;
  ss << in.rdbuf();
  return ordered_json::parse(ss.str());
}

std::string GgufTemplate(const std::string& rel) {
  auto file = gguf::File::Open(SharedPath(rel));
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return "";
  auto t = (*file)->GetString("tokenizer.chat_template");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : "";
}

// Where two renders first differ, with some context, for a readable failure.
std::string DiffLocation(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  if (i == want.size() && i == got.size()) return "identical";
  size_t from = i < 40 ? 0 : i - 40;
  return "first difference at byte " + std::to_string(i) + " (want " + std::to_string(want.size()) +
         " bytes, got " + std::to_string(got.size()) +
         ")\n  want: " + ordered_json(want.substr(from, 100)).dump() +
         "\n  got:  " + ordered_json(got.substr(from, 100)).dump();
}

// Renders every case of a reference file with `tmpl`; returns how many matched byte for byte.
int RunReferenceCases(const ChatTemplate& tmpl, const ordered_json& ref, int* total) {
  int pass = 0;
  *total = 0;
  for (const auto& c : ref["cases"]) {
    ++*total;
    ordered_json ctx = {{"bos_token", ref["bos_token"]}, {"eos_token", ref["eos_token"]}};
    for (const char* key : {"tools", "enable_thinking"}) {
      if (c.contains(key)) ctx[key] = c[key];
    }
    Result<std::string> got = tmpl.Apply(c["messages"], c["add_generation_prompt"].get<bool>(), ctx);
    const std::string want = c["rendered"].get<std::string>();
    const std::string label = c["name"].get<std::string>() +
                              (c["add_generation_prompt"].get<bool>() ? " (+generation prompt)" : "");
    if (!got.ok()) {
      ADD_FAILURE() << label << ": " << got.status().ToString();
      continue;
    }
    if (*got == want) {
      ++pass;
    } else {
      ADD_FAILURE() << label << ": " << DiffLocation(want, *got);
    }
  }
  return pass;
}

TEST(ChatTemplateReference, Qwen3TemplateFromGgufMatchesAllCases) {
  REQUIRE_SHARED_FILE("reference/chat-template/qwen3.json");
  REQUIRE_SHARED_FILE("models/qwen3-vocab-tiny-q8_0.gguf");
  auto tmpl = ChatTemplate::Parse(GgufTemplate("models/qwen3-vocab-tiny-q8_0.gguf"));
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  int total = 0;
  int pass = RunReferenceCases(*tmpl, ReadJson("reference/chat-template/qwen3.json"), &total);
  EXPECT_EQ(pass, total);
  EXPECT_GE(total, 13);
  std::printf("qwen3 chat template: %d/%d reference cases byte-exact\n", pass, total);
}

TEST(ChatTemplateReference, Llama3TemplateFromGgufMatchesAllCases) {
  REQUIRE_SHARED_FILE("reference/chat-template/llama3.json");
  REQUIRE_SHARED_FILE("models/vocab/ggml-vocab-llama3-derived.gguf");
  auto tmpl = ChatTemplate::Parse(GgufTemplate("models/vocab/ggml-vocab-llama3-derived.gguf"));
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  int total = 0;
  int pass = RunReferenceCases(*tmpl, ReadJson("reference/chat-template/llama3.json"), &total);
  EXPECT_EQ(pass, total);
  EXPECT_GE(total, 10);
  std::printf("llama3 chat template: %d/%d reference cases byte-exact\n", pass, total);
}

TEST(ChatTemplateReference, ForModelPicksTheModelTemplate) {
  REQUIRE_SHARED_FILE("models/qwen3-vocab-tiny-q8_0.gguf");
  std::string chosen;
  ChatTemplate t = ChatTemplate::ForModel(GgufTemplate("models/qwen3-vocab-tiny-q8_0.gguf"), &chosen);
  EXPECT_EQ(chosen, "model");
  EXPECT_EQ(t.name(), "model");
}

// The built-in llama3 template renders Meta's format as llama.cpp's legacy formatter does, without the BOS
// (the tokenizer adds it); the reference llama3 template always appends the assistant header, so the cases
// with add_generation_prompt=true must match it after its BOS.
TEST(ChatTemplateReference, BuiltinLlama3MatchesReferenceWithGenerationPrompt) {
  REQUIRE_SHARED_FILE("reference/chat-template/llama3.json");
  ordered_json ref = ReadJson("reference/chat-template/llama3.json");
  auto tmpl = ChatTemplate::Builtin("llama3");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  int checked = 0;
  for (const auto& c : ref["cases"]) {
    if (!c["add_generation_prompt"].get<bool>()) continue;
    auto got =
        tmpl->Apply(c["messages"], true, {{"bos_token", ref["bos_token"]}, {"eos_token", ref["eos_token"]}});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const std::string with_bos = ref["bos_token"].get<std::string>() + *got;
    EXPECT_EQ(with_bos, c["rendered"].get<std::string>())
        << c["name"] << ": " << DiffLocation(c["rendered"].get<std::string>(), with_bos);
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

// ChatML is Qwen3's format for plain conversations (no tools, no <think> in assistant turns).
TEST(ChatTemplateReference, BuiltinChatmlMatchesQwen3PlainCases) {
  REQUIRE_SHARED_FILE("reference/chat-template/qwen3.json");
  ordered_json ref = ReadJson("reference/chat-template/qwen3.json");
  auto tmpl = ChatTemplate::Builtin("chatml");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  int checked = 0;
  for (const auto& c : ref["cases"]) {
    const std::string name = c["name"];
    if (name != "user-only" && name != "system-user" && name != "multi-turn" && name != "unicode") continue;
    auto got = tmpl->Apply(c["messages"], c["add_generation_prompt"].get<bool>(), nullptr);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, c["rendered"].get<std::string>())
        << name << ": " << DiffLocation(c["rendered"].get<std::string>(), *got);
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

ordered_json Conversation() {
  return ordered_json::array({{{"role", "system"}, {"content", "Sys."}},
                              {{"role", "user"}, {"content", " Hi "}},
                              {{"role", "assistant"}, {"content", "Hello."}},
                              {{"role", "user"}, {"content", "Bye"}}});
}

TEST(ChatTemplateBuiltin, Chatml) {
  auto t = ChatTemplate::Builtin("chatml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto out = t->Apply(Conversation(), true);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(
      *out,
      "<|im_start|>system\nSys.<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n"
      "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateBuiltin, ChatmlTextPartsAndNullContent) {
  auto t = ChatTemplate::Builtin("chatml");
  ASSERT_TRUE(t.ok());
  ordered_json msgs =
      ordered_json::array({{{"role", "user"},
                            {"content", ordered_json::array({{{"type", "text"}, {"text", "a"}},
                                                             {{"type", "image_url"}, {"image_url", "x"}},
                                                             {{"type", "text"}, {"text", "b"}}})}},
                           {{"role", "assistant"}, {"content", nullptr}}});
  auto out = t->Apply(msgs, false);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n");
}

TEST(ChatTemplateBuiltin, Llama2) {
  auto t = ChatTemplate::Builtin("llama2");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto out = t->Apply(Conversation(), true, {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // llama.cpp's "llama2": no <<SYS>> (that is llama2-sys), contents verbatim, no BOS in the text.
  EXPECT_EQ(*out, "[INST] Sys.\n Hi  [/INST]Hello.</s>[INST] Bye [/INST]");
  auto no_sys = t->Apply(ordered_json::array({{{"role", "user"}, {"content", "Q"}}}), true,
                         {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
  ASSERT_TRUE(no_sys.ok());
  EXPECT_EQ(*no_sys, "[INST] Q [/INST]");
}

TEST(ChatTemplateBuiltin, Llama3) {
  auto t = ChatTemplate::Builtin("llama3");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto out = t->Apply(Conversation(), false, {{"bos_token", "<|begin_of_text|>"}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out,
            "<|start_header_id|>system<|end_header_id|>\n\nSys.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>");
}

TEST(ChatTemplateBuiltin, UnknownNameIsNotFound) {
  auto t = ChatTemplate::Builtin("no-such-template");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kNotFound);
  for (const std::string& n : ChatTemplate::BuiltinNames()) EXPECT_TRUE(ChatTemplate::Builtin(n).ok()) << n;
}

TEST(ChatTemplateForModel, FallsBackByMarkers) {
  struct Case {
    std::string source, want;
  };
  const Case cases[] = {
      {"", "chatml"},
      {"{% for m in messages %}<|im_start|>{{ m.role }{% endfor %}", "chatml"},  // does not parse
      {"{{ '<|start_header_id|>' + undefined_fn() }}", "llama3"},                // fails to render
      {"{% if %}[INST]", "llama2"},                                              // does not parse
      {"{{ raise_exception('nope') }}", "chatml"},                               // always raises
      {"{% for m in messages %}{% endfor %}", "chatml"},                         // renders nothing
  };
  for (const Case& c : cases) {
    std::string chosen;
    ChatTemplate t = ChatTemplate::ForModel(c.source, &chosen);
    EXPECT_EQ(chosen, c.want) << c.source;
    EXPECT_EQ(t.name(), c.want);
    EXPECT_TRUE(t.Apply(Conversation(), true).ok());
  }
  std::string chosen;
  ChatTemplate::ForModel("{{ messages[0].content }}", &chosen);
  EXPECT_EQ(chosen, "model");
}

TEST(ChatTemplateApply, ChatMessageOverloadMergesExtraFields) {
  auto t = ChatTemplate::Parse(
      "{% for m in messages %}{{ m.role }}:{{ m.content }}|{{ m.name }}|"
      "{% if m.tool_calls %}{{ m.tool_calls | tojson }}{% endif %};{% endfor %}");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::vector<ChatMessage> msgs(2);
  msgs[0].role = "user";
  msgs[0].content = "hi";
  msgs[0].extra = {{"name", "bob"}};
  msgs[1].role = "assistant";
  msgs[1].content = "";
  msgs[1].extra = {
      {"tool_calls", ordered_json::array({{{"name", "f"}, {"arguments", {{"b", 1}, {"a", 2}}}}})}};
  auto out = t->Apply(msgs, false);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "user:hi|bob|;assistant:||[{\"name\": \"f\", \"arguments\": {\"b\": 1, \"a\": 2}}];");
}

TEST(ChatTemplateApply, ErrorsComeBackAsStatus) {
  auto t = ChatTemplate::Parse(
      "{% for m in messages %}{% if m.role == 'system' %}"
      "{{ raise_exception('System role not supported') }}{% endif %}{{ m.content }}{% endfor %}");
  ASSERT_TRUE(t.ok());
  auto ok = t->Apply(ordered_json::array({{{"role", "user"}, {"content", "x"}}}), false);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "x");
  auto raised = t->Apply(ordered_json::array({{{"role", "system"}, {"content", "x"}}}), false);
  ASSERT_FALSE(raised.ok());
  EXPECT_EQ(raised.status().code(), Code::kInvalidArgument);
  EXPECT_NE(raised.status().message().find("System role not supported"), std::string::npos)
      << raised.status().message();
  EXPECT_NE(raised.status().message().find("line 1, column"), std::string::npos) << raised.status().message();

  EXPECT_FALSE(t->Apply(ordered_json::object(), false).ok());                  // messages not an array
  EXPECT_FALSE(t->Apply(ordered_json::array(), false, ordered_json(5)).ok());  // context not an object
}

TEST(ChatTemplateApply, ParseErrorNamesLineAndColumn) {
  auto t = ChatTemplate::Parse("line one\n{% if x %}\n  {{ x + }}\n{% endif %}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
  EXPECT_NE(t.status().message().find("line 3, column 10"), std::string::npos) << t.status().message();
}

// Wire form (OpenAI: tool-call arguments are JSON text) to template form (transformers: objects).
TEST(PrepareMessagesForTemplate, ParsesToolCallArgumentsKeepingKeyOrder) {
  const ordered_json wire = ordered_json::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"z\":1,\"city\":\"Zürich\",\"a\":[true]}"}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": "18 °C"}])");
  Result<ordered_json> got = PrepareMessagesForTemplate(wire);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const ordered_json& args = (*got)[1]["tool_calls"][0]["function"]["arguments"];
  ASSERT_TRUE(args.is_object());
  EXPECT_EQ(args.dump(), R"({"z":1,"city":"Zürich","a":[true]})");  // key order kept
  EXPECT_EQ((*got)[1]["content"], "");                              // null content becomes ""
  EXPECT_EQ((*got)[0], wire[0]);
  EXPECT_EQ((*got)[2], wire[2]);  // tool message: tool_call_id and name kept, unchanged
  // Already-object arguments and assistant turns without tool calls pass through.
  const ordered_json objects = ordered_json::parse(R"([{"role": "assistant", "content": "x",
      "tool_calls": [{"function": {"name": "f", "arguments": {"k": 1}}}]}])");
  Result<ordered_json> same = PrepareMessagesForTemplate(objects);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, objects);
}

// A continued assistant message's text parts join with a blank line (llama-server's prefill of
// [{"type": "text", "text": "Wh"}, {"type": "text", "text": "ill"}] ends the prompt in "Wh\n\nill").
TEST(ContinuationText, JoinsTextPartsWithABlankLine) {
  EXPECT_EQ(ContinuationText("Whill"), "Whill");
  EXPECT_EQ(ContinuationText(
                ordered_json::parse(R"([{"type": "text", "text": "Wh"}, {"type": "text", "text": "ill"}])")),
            "Wh\n\nill");
  EXPECT_EQ(ContinuationText(ordered_json::parse(
                R"([{"type": "text", "text": ""}, "a", {"type": "image_url", "text": "x"}, {"type": 5},
                    {"type": "text", "text": 7}, {"type": "text", "text": "b"}])")),
            "a\n\nb");
  EXPECT_EQ(ContinuationText(nullptr), "");
  EXPECT_EQ(ContinuationText(ordered_json::object()), "");
}

TEST(PrepareMessagesForTemplate, InvalidArgumentsNameTheirPath) {
  const ordered_json wire = ordered_json::parse(R"([{"role": "user", "content": "a"},
    {"role": "assistant", "content": "b"},
    {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{\"city\": "}}]}])");
  Result<ordered_json> got = PrepareMessagesForTemplate(wire);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(got.status().message().rfind("messages[2].tool_calls[0].function.arguments is not valid JSON", 0),
            0u)
      << got.status().message();
  const ordered_json deep = ordered_json::array(
      {{{"role", "assistant"},
        {"tool_calls", {{{"function", {{"name", "f"}, {"arguments", std::string(200, '[')}}}}}}}});
  EXPECT_FALSE(PrepareMessagesForTemplate(deep).ok());
  EXPECT_FALSE(PrepareMessagesForTemplate(ordered_json::object()).ok());
}

// Templates see `tools` from the extra context, and tool calls whose arguments are objects.
TEST(PrepareMessagesForTemplate, TemplatesSeeToolsAndArgumentObjects) {
  Result<ChatTemplate> t = ChatTemplate::Parse(
      "{{ tools | map(attribute='function.name') | join(',') }}|"
      "{% for m in messages %}{% for tc in m.tool_calls %}{% for k, v in tc.function.arguments.items() %}"
      "{{ k }}={{ v }};{% endfor %}{{ tc.function.arguments | tojson }}{% endfor %}{% endfor %}");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Result<ordered_json> msgs = PrepareMessagesForTemplate(ordered_json::parse(R"([{"role": "assistant",
      "content": null, "tool_calls": [{"function": {"name": "f", "arguments": "{\"city\":\"Paris\"}"}}]}])"));
  ASSERT_TRUE(msgs.ok());
  const ordered_json ctx = {{"tools", ordered_json::parse(R"([{"type": "function", "function": {"name": "f"}},
      {"type": "function", "function": {"name": "g"}}])")}};
  Result<std::string> out = t->Apply(*msgs, false, ctx);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, R"(f,g|city=Paris;{"city": "Paris"})");
}

}  // namespace
}  // namespace lazyslot
