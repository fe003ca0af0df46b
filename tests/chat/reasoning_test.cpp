// Reasoning split tests: --reasoning-format names, syntax detection on the real templates in
// ../shared/templates, whole-output splits (think tags and gpt-oss channels) against llama-server's rules,
// and the streaming invariant: every chunking of an output gives the same reasoning and content.
#include "chat/reasoning.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using testing::SharedPath;

constexpr ReasoningOptions kThink = {ReasoningSyntax::kThinkTags, ReasoningFormat::kDeepSeek, false};
constexpr ReasoningOptions kThinkOpen = {ReasoningSyntax::kThinkTags, ReasoningFormat::kDeepSeek, true};
constexpr ReasoningOptions kHarmony = {ReasoningSyntax::kGptOssChannels, ReasoningFormat::kDeepSeek, false};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Append(const std::vector<ReasoningDelta>& deltas, ReasoningSplit* out) {
  for (const ReasoningDelta& d : deltas) (d.reasoning ? out->reasoning : out->content).append(d.text);
}

// Streams `text` cut at `cuts` (ascending byte offsets); checks the deltas' shape on the way.
ReasoningSplit Stream(std::string_view text, const ReasoningOptions& options,
                      const std::vector<size_t>& cuts) {
  ReasoningStreamParser parser(options);
  ReasoningSplit got;
  size_t from = 0;
  auto check = [](const std::vector<ReasoningDelta>& deltas) {
    for (size_t i = 0; i < deltas.size(); ++i) {
      EXPECT_FALSE(deltas[i].text.empty());
      if (i > 0) {
        EXPECT_NE(deltas[i].reasoning, deltas[i - 1].reasoning) << "adjacent deltas not merged";
      }
    }
  };
  for (size_t cut : cuts) {
    auto deltas = parser.Feed(text.substr(from, cut - from));
    check(deltas);
    Append(deltas, &got);
    from = cut;
  }
  auto deltas = parser.Feed(text.substr(from));
  check(deltas);
  Append(deltas, &got);
  deltas = parser.Finish();
  check(deltas);
  Append(deltas, &got);
  return got;
}

std::string Show(const std::vector<size_t>& cuts) {
  std::string s;
  for (size_t c : cuts) s += std::to_string(c) + " ";
  return s;
}

// Every chunking into two and three pieces, one-byte chunks and random chunkings give `want`.
void ExpectEveryChunking(std::string_view text, const ReasoningOptions& options, const ReasoningSplit& want) {
  auto expect = [&](const std::vector<size_t>& cuts) {
    const ReasoningSplit got = Stream(text, options, cuts);
    EXPECT_EQ(got.reasoning, want.reasoning) << "text: " << text << "\ncuts: " << Show(cuts);
    EXPECT_EQ(got.content, want.content) << "text: " << text << "\ncuts: " << Show(cuts);
    return got.reasoning == want.reasoning && got.content == want.content;
  };
  for (size_t i = 0; i <= text.size(); ++i) {
    for (size_t j = i; j <= text.size(); ++j) {
      if (!expect({i, j})) return;
    }
  }
  std::vector<size_t> bytes;
  for (size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
  if (!expect(bytes)) return;
  std::mt19937 rng(1234);
  for (int round = 0; round < 200; ++round) {
    std::vector<size_t> cuts;
    size_t at = 0;
    while (true) {
      at += std::uniform_int_distribution<size_t>(1, 9)(rng);
      if (at >= text.size()) break;
      cuts.push_back(at);
    }
    if (!expect(cuts)) return;
  }
}

// ---- Names and detection ----------------------------------------------------------------------------------

TEST(ReasoningFormat, ParsesLlamaServerNames) {
  for (ReasoningFormat f : {ReasoningFormat::kNone, ReasoningFormat::kDeepSeek,
                            ReasoningFormat::kDeepSeekLegacy, ReasoningFormat::kAuto}) {
    Result<ReasoningFormat> parsed = ParseReasoningFormat(ReasoningFormatName(f));
    ASSERT_TRUE(parsed.ok()) << ReasoningFormatName(f);
    EXPECT_EQ(*parsed, f);
  }
  EXPECT_STREQ(ReasoningFormatName(ReasoningFormat::kDeepSeekLegacy), "deepseek-legacy");
  EXPECT_EQ(*ParseReasoningFormat("auto"), ReasoningFormat::kAuto);
}

TEST(ReasoningFormat, RejectsUnknownNamesListingTheValidOnes) {
  for (const char* bad : {"", "DeepSeek", "deepseek_legacy", "r1", "none "}) {
    Result<ReasoningFormat> parsed = ParseReasoningFormat(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument);
    for (const char* name : {"none", "deepseek", "deepseek-legacy", "auto"}) {
      EXPECT_NE(parsed.status().message().find(name), std::string::npos) << parsed.status().message();
    }
  }
}

struct TemplateCase {
  const char* file;
  ReasoningSyntax syntax;
  bool thinking_switch;
  bool reasoning_effort;
};

TEST(ReasoningDetect, RealTemplates) {
  const TemplateCase cases[] = {
      {"Qwen-Qwen3-0.6B.jinja", ReasoningSyntax::kThinkTags, true, false},
      {"Qwen-QwQ-32B.jinja", ReasoningSyntax::kThinkTags, true, false},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", ReasoningSyntax::kThinkTags, true, false},
      {"deepseek-ai-DeepSeek-V3.1.jinja", ReasoningSyntax::kThinkTags, true, false},
      {"GLM-4.6.jinja", ReasoningSyntax::kThinkTags, true, false},
      {"MiniMax-M2.jinja", ReasoningSyntax::kThinkTags, false, false},
      {"openai-gpt-oss-120b.jinja", ReasoningSyntax::kGptOssChannels, false, true},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ReasoningSyntax::kNone, false, false},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ReasoningSyntax::kNone, false, false},
      {"google-gemma-2-2b-it.jinja", ReasoningSyntax::kNone, false, false},
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ReasoningSyntax::kNone, false, false},
      {"Qwen3-Coder.jinja", ReasoningSyntax::kNone, false, false},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ReasoningSyntax::kNone, false, false},
  };
  for (const TemplateCase& c : cases) {
    const std::string rel = std::string("templates/") + c.file;
    REQUIRE_SHARED_FILE(rel);
    const std::string source = ReadFile(SharedPath(rel));
    ASSERT_FALSE(source.empty()) << rel;
    EXPECT_EQ(DetectReasoningSyntax(source), c.syntax)
        << c.file << ": got " << ReasoningSyntaxName(DetectReasoningSyntax(source));
    EXPECT_EQ(TemplateSupportsThinkingSwitch(source), c.thinking_switch) << c.file;
    EXPECT_EQ(TemplateSupportsReasoningEffort(source), c.reasoning_effort) << c.file;
  }
}

TEST(ReasoningDetect, Markers) {
  EXPECT_EQ(DetectReasoningSyntax("{{ '<think>\\n' }}"), ReasoningSyntax::kThinkTags);
  EXPECT_EQ(DetectReasoningSyntax("{% if message.reasoning_content %}"), ReasoningSyntax::kThinkTags);
  EXPECT_EQ(DetectReasoningSyntax("<|channel|>analysis <think>"), ReasoningSyntax::kGptOssChannels);
  EXPECT_EQ(DetectReasoningSyntax("<|im_start|>assistant\n"), ReasoningSyntax::kNone);
  EXPECT_EQ(DetectReasoningSyntax(""), ReasoningSyntax::kNone);
}

// ---- Think tags -------------------------------------------------------------------------------------------

struct SplitCase {
  const char* name;
  const char* text;
  ReasoningOptions options;
  const char* reasoning;
  const char* content;
};

const SplitCase kThinkCases[] = {
    {"closed", "<think>\nI reason.\n</think>\n\nHello!", kThink, "I reason.", "Hello!"},
    {"qwen3 thinking off", "<think>\n\n</think>\n\nHi", kThink, "", "Hi"},
    {"open at start", "I reason\n</think>\n\nAnswer", kThinkOpen, "I reason", "Answer"},
    {"open at start, tag repeated", "\n<think>\nabc</think>x", kThinkOpen, "abc", "x"},
    {"open at start, never closed", "  still going \n", kThinkOpen, "still going", ""},
    {"open at start, whitespace only", " \n ", kThinkOpen, "", ""},
    {"close without open", "I reason\n</think>\n\nAnswer", kThink, "", "I reason\n</think>\n\nAnswer"},
    {"unclosed", "<think>\nStill thinking about", kThink, "Still thinking about", ""},
    {"unclosed, cut in the close tag", "<think>abc </thi", kThink, "abc", ""},
    {"no block", "Just an answer.\n", kThink, "", "Just an answer.\n"},
    {"whitespace only", " \n", kThink, "", " \n"},
    {"later think is content", "Answer. <think>not reasoning</think> tail", kThink, "",
     "Answer. <think>not reasoning</think> tail"},
    {"space before the block stays", "\n\n<think>r</think>c", kThink, "r", "\n\nc"},
    {"inner whitespace kept", "<think>  line1\n\n  line2  \n</think>  \n answer  \n", kThink,
     "line1\n\n  line2", "answer  \n"},
    {"nested-looking", "<think>a <think> b</think>c</think>d", kThink, "a <think> b", "c</think>d"},
    {"consecutive blocks", "<think>a</think>\n<think> b </think>\nc", kThink, "ab", "c"},
    {"block after text is content", "<think>a</think>x<think>b</think>", kThink, "a", "x<think>b</think>"},
    {"partial open tag at the end", "<thi", kThink, "", "<thi"},
    {"lookalike tag", "<thinking>x</thinking>", kThink, "", "<thinking>x</thinking>"},
    {"empty block only", "<think></think>", kThink, "", ""},
    {"utf-8", "<think>\n思考中…\n</think>\n\n答え", kThink, "思考中…", "答え"},
    {"auto is deepseek",
     "<think>r</think>c",
     {ReasoningSyntax::kThinkTags, ReasoningFormat::kAuto},
     "r",
     "c"},
    {"legacy whole output is deepseek",
     "<think>r</think>\nc",
     {ReasoningSyntax::kThinkTags, ReasoningFormat::kDeepSeekLegacy},
     "r",
     "c"},
    {"format none",
     "<think>r</think>\nc",
     {ReasoningSyntax::kThinkTags, ReasoningFormat::kNone},
     "",
     "<think>r</think>\nc"},
    {"syntax none",
     "<think>r</think>\nc",
     {ReasoningSyntax::kNone, ReasoningFormat::kDeepSeek},
     "",
     "<think>r</think>\nc"},
};

const SplitCase kHarmonyCases[] = {
    {"analysis then final",
     "<|channel|>analysis<|message|>Think.<|end|>"
     "<|start|>assistant<|channel|>final<|message|>Answer.<|return|>",
     kHarmony, "Think.", "Answer."},
    {"final ends with end",
     "<|channel|>analysis<|message|>T<|end|><|start|>assistant<|channel|>final<|message|>A<|end|>", kHarmony,
     "T", "A"},
    {"final unterminated",
     "<|channel|>analysis<|message|> T \n<|end|><|start|>assistant<|channel|>final<|message|> A ", kHarmony,
     "T", " A "},
    {"constrained final", "<|channel|>final <|constrain|>json<|message|>{\"a\":1}", kHarmony, "",
     "{\"a\":1}"},
    {"tool call stays in content",
     "<|channel|>analysis<|message|>Need a tool.<|end|><|start|>assistant<|channel|>commentary "
     "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
     kHarmony, "Need a tool.",
     "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
     "{\"city\":\"Paris\"}<|call|>"},
    {"preamble stays in content", "<|channel|>commentary<|message|>Let me check.<|end|>", kHarmony, "",
     "<|channel|>commentary<|message|>Let me check.<|end|>"},
    {"unclosed analysis", "<|channel|>analysis<|message|>Thinking a lot \n", kHarmony, "Thinking a lot", ""},
    {"unclosed analysis, cut end marker", "<|channel|>analysis<|message|>abc<|en", kHarmony, "abc", ""},
    {"two analysis messages",
     "<|channel|>analysis<|message|>one<|end|><|start|>assistant<|channel|>analysis<|message|>two<|end|>"
     "<|start|>assistant<|channel|>final<|message|>done",
     kHarmony, "onetwo", "done"},
    {"plain text", "Hello <|there|> world", kHarmony, "", "Hello <|there|> world"},
    {"header never ends", "<|channel|>analysis and more", kHarmony, "", "<|channel|>analysis and more"},
    {"whitespace between messages dropped",
     "\n<|channel|>analysis<|message|>r<|end|>\n<|start|>assistant<|channel|>final<|message|>c", kHarmony,
     "r", "c"},
    {"text between messages kept",
     "<|channel|>final<|message|>A<|end|>note \n<|start|>assistant<|channel|>final"
     "<|message|>B",
     kHarmony, "", "Anote \nB"},
    {"format none",
     "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>final<|message|>c",
     {ReasoningSyntax::kGptOssChannels, ReasoningFormat::kNone},
     "",
     "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>final<|message|>c"},
};

TEST(ReasoningSplit, ThinkTags) {
  for (const SplitCase& c : kThinkCases) {
    const ReasoningSplit got = SplitReasoning(c.text, c.options);
    EXPECT_EQ(got.reasoning, c.reasoning) << c.name;
    EXPECT_EQ(got.content, c.content) << c.name;
  }
}

TEST(ReasoningSplit, GptOssChannels) {
  for (const SplitCase& c : kHarmonyCases) {
    const ReasoningSplit got = SplitReasoning(c.text, c.options);
    EXPECT_EQ(got.reasoning, c.reasoning) << c.name;
    EXPECT_EQ(got.content, c.content) << c.name;
  }
}

TEST(ReasoningSplit, LongHarmonyHeaderIsText) {
  const std::string text = "<|start|>" + std::string(300, 'x') + "<|message|>body";
  const ReasoningSplit got = SplitReasoning(text, kHarmony);
  EXPECT_EQ(got.reasoning, "");
  EXPECT_EQ(got.content, text);
}

TEST(ReasoningSplit, PromptOpensThinkDrivesTheStart) {
  // DeepSeek R1's generation prompt leaves the block open; the output then has no "<think>" of its own.
  const std::string prompt = "<｜User｜>Hi<｜Assistant｜><think>\n";
  ReasoningOptions options = kThink;
  options.in_think_at_start = PromptOpensThink(prompt);
  ASSERT_TRUE(options.in_think_at_start);
  const ReasoningSplit got = SplitReasoning("Okay, the user greets me.\n</think>\n\nHello!", options);
  EXPECT_EQ(got.reasoning, "Okay, the user greets me.");
  EXPECT_EQ(got.content, "Hello!");
  // Qwen3 with enable_thinking=false closes the block in the prompt: nothing is open.
  EXPECT_FALSE(PromptOpensThink("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
}

// ---- Streaming --------------------------------------------------------------------------------------------

TEST(ReasoningStream, EveryChunkingMatchesTheWholeSplit) {
  std::vector<const SplitCase*> cases;
  for (const SplitCase& c : kThinkCases) cases.push_back(&c);
  for (const SplitCase& c : kHarmonyCases) cases.push_back(&c);
  for (const SplitCase* c : cases) {
    ReasoningOptions options = c->options;
    if (options.format == ReasoningFormat::kDeepSeekLegacy) continue;  // streams differently, tested below
    SCOPED_TRACE(c->name);
    ExpectEveryChunking(c->text, options, {c->reasoning, c->content});
  }
}

TEST(ReasoningStream, ReasoningFlowsBeforeTheBlockCloses) {
  ReasoningStreamParser parser(kThink);
  EXPECT_TRUE(parser.Feed("<thi").empty());  // may be the open tag
  std::vector<ReasoningDelta> d = parser.Feed("nk>\nabc");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].reasoning);
  EXPECT_EQ(d[0].text, "abc");
  EXPECT_TRUE(parser.Feed(" \n").empty());   // trailing spaces wait: they go if the block closes
  EXPECT_TRUE(parser.Feed("</th").empty());  // may be the close tag
  d = parser.Feed("ink>\n\nHel");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].reasoning);
  EXPECT_EQ(d[0].text, "Hel");
  d = parser.Feed("lo <think>");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].text, "lo <think>");  // the answer: no hold-back any more
  EXPECT_TRUE(parser.Finish().empty());
  EXPECT_TRUE(parser.Feed("more").empty());  // after Finish
}

TEST(ReasoningStream, SpacesInsideReasoningAreReleasedByLaterText) {
  ReasoningStreamParser parser(kThinkOpen);
  ReasoningSplit got;
  Append(parser.Feed("a  "), &got);
  EXPECT_EQ(got.reasoning, "a");
  Append(parser.Feed("b"), &got);
  EXPECT_EQ(got.reasoning, "a  b");
  Append(parser.Finish(), &got);
  EXPECT_EQ(got.content, "");
}

TEST(ReasoningStream, HarmonyHoldsPartialMarkers) {
  ReasoningStreamParser parser(kHarmony);
  EXPECT_TRUE(parser.Feed("<|chan").empty());
  EXPECT_TRUE(parser.Feed("nel|>analysis<|mess").empty());
  std::vector<ReasoningDelta> d = parser.Feed("age|>Hmm<|e");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].reasoning);
  EXPECT_EQ(d[0].text, "Hmm");
  EXPECT_TRUE(parser.Feed("nd|><|start|>assistant<|channel|>final<|message|>").empty());
  d = parser.Feed("Yes<|ret");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].reasoning);
  EXPECT_EQ(d[0].text, "Yes");
  EXPECT_TRUE(parser.Feed("urn|>").empty());
  EXPECT_TRUE(parser.Finish().empty());
}

TEST(ReasoningStream, PassthroughIsImmediateAndVerbatim) {
  ReasoningStreamParser parser({ReasoningSyntax::kThinkTags, ReasoningFormat::kNone});
  std::vector<ReasoningDelta> d = parser.Feed("<thi");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].text, "<thi");
  EXPECT_FALSE(d[0].reasoning);
}

TEST(ReasoningStream, MovedParserKeepsItsState) {
  ReasoningStreamParser first(kThink);
  EXPECT_TRUE(first.Feed("<think").empty());
  ReasoningStreamParser second = std::move(first);
  ReasoningSplit got;
  Append(second.Feed(">r</think>c"), &got);
  Append(second.Finish(), &got);
  EXPECT_EQ(got.reasoning, "r");
  EXPECT_EQ(got.content, "c");
}

// deepseek-legacy streamed: llama-server's reasoning_in_content; the reasoning stays inline in the content.
TEST(ReasoningStream, LegacyKeepsReasoningInlineInContent) {
  const ReasoningOptions legacy = {ReasoningSyntax::kThinkTags, ReasoningFormat::kDeepSeekLegacy};
  ReasoningOptions legacy_open = legacy;
  legacy_open.in_think_at_start = true;
  const ReasoningOptions legacy_harmony = {ReasoningSyntax::kGptOssChannels,
                                           ReasoningFormat::kDeepSeekLegacy};
  const SplitCase cases[] = {
      {"closed", "<think>\nabc\n</think>\n\nHi", legacy, "", "<think>abc</think>Hi"},
      {"empty block", "<think>\n\n</think>\n\nHi", legacy, "", "Hi"},
      {"unclosed is closed at the end", "<think>abc ", legacy, "", "<think>abc</think>"},
      {"open at start", "abc</think>\nHi", legacy_open, "", "<think>abc</think>Hi"},
      {"later tags", "x<think>y</think>", legacy, "", "x<think>y</think>"},
      {"harmony analysis verbatim",
       "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>final<|message|>c<|return|>",
       legacy_harmony, "", "<|channel|>analysis<|message|>r<|end|>c"},
  };
  for (const SplitCase& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectEveryChunking(c.text, c.options, {c.reasoning, c.content});
  }
}

}  // namespace
}  // namespace lazyslot
