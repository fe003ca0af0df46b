// BuildToolGrammar: every format's GBNF parses (grammar::ParseGbnf), accepts the calls it is meant to (which
// ParseToolCalls reads back as the same calls) and rejects the rest: other tools, missing required
// parameters, text before a required call, a second call when parallel calls are off.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "grammar/grammar.h"

namespace lazyslot {
namespace {

using nlohmann::ordered_json;

std::vector<ToolSpec> Tools() {
  auto tools = ParseTools(ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object",
      "properties": {"query": {"type": "string"}}, "required": ["query"]}}}])"));
  EXPECT_TRUE(tools.ok()) << tools.status().ToString();
  return tools.ok() ? *tools : std::vector<ToolSpec>{};
}

ToolGrammar Build(ToolCallFormat f, ToolChoiceMode mode, bool parallel, const std::string& name = "") {
  ToolChoice choice;
  choice.mode = mode;
  choice.name = name;
  auto g = BuildToolGrammar(f, Tools(), choice, parallel);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : ToolGrammar{};
}

// Whether `text` is a whole sentence of the grammar.
bool Accepts(const ToolGrammar& g, const std::string& text) {
  auto parsed = grammar::ParseGbnf(g.gbnf);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << g.gbnf;
  if (!parsed.ok()) return false;
  grammar::Matcher m(*parsed);
  return m.Accept(text) && m.CanEnd();
}

struct Case {
  ToolCallFormat format;
  std::string one;  // a call to get_weather
  std::string two;  // that call and one to search, in the format's parallel layout
};

std::vector<Case> Cases() {
  const std::string ds_b = "<｜tool▁calls▁begin｜>", ds_e = "<｜tool▁calls▁end｜>",
                    cb = "<｜tool▁call▁begin｜>", ce = "<｜tool▁call▁end｜>", sep = "<｜tool▁sep｜>";
  return {
      {ToolCallFormat::kHermes2Pro,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
       "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}\n</tool_call>"},
      {ToolCallFormat::kQwen3CoderXml,
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar</is>\n</parameter>\n<parameter=days>\n3\n"
       "</parameter>\n</function>\n</tool_call>",
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</"
       "tool_call>\n"
       "<tool_call>\n<function=search>\n<parameter=query>\n</p <x\n</parameter>\n</function>\n</tool_call>"},
      {ToolCallFormat::kLlama3x, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n"
       "{\"name\": \"search\", \"parameters\": {\"query\": \"x\"}}"},
      {ToolCallFormat::kMistralNemo,
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
       "\"abcDEF123\"}]",
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
       "\"abcDEF123\"}, "
       "{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}, \"id\": \"XYZ987abc\"}]"},
      {ToolCallFormat::kMagistral, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
       "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]search[ARGS]{\"query\": \"x\"}"},
      {ToolCallFormat::kDeepSeekR1,
       ds_b + cb + "function" + sep + "get_weather\n```json\n{\"city\": \"Paris\"}\n```" + ce + ds_e,
       ds_b + cb + "function" + sep + "get_weather\n```json\n{\"city\": \"Paris\"}\n```" + ce + "\n" + cb +
           "function" + sep + "search\n```json\n{\"query\": \"x\"}\n```" + ce + ds_e},
      {ToolCallFormat::kDeepSeekV31, ds_b + cb + "get_weather" + sep + "{\"city\": \"Paris\"}" + ce + ds_e,
       ds_b + cb + "get_weather" + sep + "{\"city\": \"Paris\"}" + ce + cb + "search" + sep +
           "{\"query\": \"x\"}" + ce + ds_e},
      {ToolCallFormat::kFunctionaryV31, "<function=get_weather>{\"city\": \"Paris\"}</function>",
       "<function=get_weather>{\"city\": \"Paris\"}</function><function=search>{\"query\": "
       "\"x\"}</function>"},
      {ToolCallFormat::kGeneric,
       "{\"tool_call\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}",
       "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
       "{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}]}"},
  };
}

TEST(ToolCallGrammar, AcceptsValidCallsThatParseBack) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(ToolCallFormatName(c.format));
    const ToolGrammar single = Build(c.format, ToolChoiceMode::kRequired, false);
    const ToolGrammar parallel = Build(c.format, ToolChoiceMode::kRequired, true);
    EXPECT_FALSE(single.lazy);
    EXPECT_TRUE(Accepts(single, c.one));
    EXPECT_FALSE(Accepts(single, c.two)) << "a second call without parallel_tool_calls";
    EXPECT_TRUE(Accepts(parallel, c.one));
    EXPECT_TRUE(Accepts(parallel, c.two));
    EXPECT_TRUE(Accepts(single, "\n" + c.one)) << "leading whitespace";
    EXPECT_FALSE(Accepts(single, "Sure. " + c.one)) << "text before a required call";
    auto parsed = ParseToolCalls(c.two, c.format, Tools());
    ASSERT_EQ(parsed.tool_calls.size(), 2u);
    EXPECT_EQ(parsed.tool_calls[0].name, "get_weather");
    EXPECT_EQ(parsed.tool_calls[1].name, "search");
  }
}

TEST(ToolCallGrammar, NamedChoiceAllowsOnlyThatTool) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(ToolCallFormatName(c.format));
    EXPECT_TRUE(Accepts(Build(c.format, ToolChoiceMode::kNamed, false, "get_weather"), c.one));
    EXPECT_FALSE(Accepts(Build(c.format, ToolChoiceMode::kNamed, false, "search"), c.one));
  }
}

TEST(ToolCallGrammar, LazyTriggersStartTheSentences) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(ToolCallFormatName(c.format));
    const ToolGrammar g = Build(c.format, ToolChoiceMode::kAuto, true);
    if (c.format == ToolCallFormat::kGeneric) {
      EXPECT_FALSE(g.lazy);
      EXPECT_TRUE(Accepts(g, "{\"response\": \"Hello\"}"));
      EXPECT_TRUE(Accepts(g, c.two));
      continue;
    }
    EXPECT_TRUE(g.lazy);
    ASSERT_FALSE(g.triggers.empty());
    bool starts = false;
    for (const std::string& t : g.triggers) starts = starts || c.one.rfind(t, 0) == 0;
    EXPECT_TRUE(starts) << c.one;
    EXPECT_TRUE(Accepts(g, c.one));
  }
}

// Functionary v3.2: required calls start at once (the prompt ends in ">>>"), later ones after ">>>"; under
// "auto" the grammar starts at ">>>NAME\n" for an offered tool, never at ">>>all".
TEST(ToolCallGrammar, FunctionaryV32Recipients) {
  const ToolCallFormat f = ToolCallFormat::kFunctionaryV32;
  const std::string one = "get_weather\n{\"city\": \"Paris\"}";
  const std::string two = one + ">>>search\n{\"query\": \"x\"}";
  const ToolGrammar single = Build(f, ToolChoiceMode::kRequired, false);
  EXPECT_FALSE(single.lazy);
  EXPECT_TRUE(Accepts(single, one));
  EXPECT_FALSE(Accepts(single, two));
  EXPECT_FALSE(Accepts(single, "all\nHi"));
  EXPECT_TRUE(Accepts(Build(f, ToolChoiceMode::kRequired, true), two));
  EXPECT_EQ(ParseToolCalls(two, f, Tools()).tool_calls.size(), 2u);
  EXPECT_FALSE(Accepts(Build(f, ToolChoiceMode::kNamed, false, "search"), one));

  const ToolGrammar lazy = Build(f, ToolChoiceMode::kAuto, true);
  EXPECT_TRUE(lazy.lazy);
  EXPECT_EQ(lazy.triggers, (std::vector<std::string>{">>>get_weather\n", ">>>search\n"}));
  EXPECT_TRUE(Accepts(lazy, ">>>" + two));
  EXPECT_FALSE(Accepts(lazy, ">>>all\nHi"));
}

TEST(ToolCallGrammar, Qwen3ThinkBlockAndXmlConstraints) {
  const ToolGrammar g = Build(ToolCallFormat::kQwen3CoderXml, ToolChoiceMode::kRequired, false);
  const std::string call =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";
  EXPECT_TRUE(Accepts(g, "<think>\n\n</think>\n\n" + call));
  EXPECT_FALSE(Accepts(g,
                       "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n"
                       "</tool_call>"))
      << "required parameter city missing";
  EXPECT_FALSE(Accepts(g,
                       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                       "<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call>"))
      << "days must be an integer";
  EXPECT_FALSE(Accepts(g,
                       "<tool_call>\n<function=get_weather>\n<parameter=city>\na</parameter>b\n</parameter>\n"
                       "</function>\n</tool_call>"))
      << "a string value cannot contain </parameter>";
  EXPECT_FALSE(Accepts(g, "<tool_call>\n<function=nope>\n</function>\n</tool_call>"));
}

TEST(ToolCallGrammar, RejectsNoToolsOrNone) {
  ToolChoice none;
  none.mode = ToolChoiceMode::kNone;
  EXPECT_FALSE(BuildToolGrammar(ToolCallFormat::kHermes2Pro, Tools(), none, true).ok());
  EXPECT_FALSE(BuildToolGrammar(ToolCallFormat::kHermes2Pro, {}, ToolChoice{}, true).ok());
  ToolChoice named;
  named.mode = ToolChoiceMode::kNamed;
  named.name = "missing";
  EXPECT_FALSE(BuildToolGrammar(ToolCallFormat::kHermes2Pro, Tools(), named, true).ok());
}

}  // namespace
}  // namespace lazyslot
