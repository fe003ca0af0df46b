// The 20 real chat templates of ../shared/templates against reference renders: every conversation of
// tests/chat/reference/conversations.json (OpenAI wire form), with and without add_generation_prompt, goes
// through PrepareMessagesForTemplate and ChatTemplate and must equal expected.json byte for byte
// (@huggingface/jinja's output, or Python Jinja2's where that renderer has a known gap; see generate.mjs).
// Where the reference failed, ours must fail too, with the same raise_exception message if it raised.
#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_messages.h"
#include "chat/chat_template.h"
#include "chat/jinja/jinja_eval.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using nlohmann::ordered_json;

const std::string kReferenceDir = std::string(LAZYSLOT_SOURCE_DIR) + "/tests/chat/reference/";

ordered_json ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  std::stringstream ss;
  ss << in.rdbuf();
  return ordered_json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

const ordered_json& Conversations() {
  static const ordered_json* doc = new ordered_json(ReadJsonFile(kReferenceDir + "conversations.json"));
  return *doc;
}

// "2026-07-26T09:41:00Z" -> seconds since the epoch.
int64_t ParseUtc(const std::string& iso) {
  std::tm tm{};
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec) != 6) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm));
}

struct Case {
  std::string name;  // gtest-safe: template, conversation and prompt flag
  ordered_json expected;
};

std::string Sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

std::vector<Case> LoadCases() {
  std::vector<Case> cases;
  const ordered_json doc = ReadJsonFile(kReferenceDir + "expected.json");
  if (!doc.is_object() || !doc.contains("cases")) return cases;
  for (const auto& c : doc["cases"]) {
    std::string tmpl = c["template"].get<std::string>();
    tmpl = tmpl.substr(0, tmpl.rfind(".jinja"));
    cases.push_back({Sanitize(tmpl) + "__" + Sanitize(c["conversation"].get<std::string>()) +
                         (c["add_generation_prompt"].get<bool>() ? "__gen" : "__nogen"),
                     c});
  }
  return cases;
}

const ordered_json* FindConversation(const std::string& name) {
  for (const auto& c : Conversations()["conversations"]) {
    if (c["name"] == name) return &c;
  }
  return nullptr;
}

// Parsed templates, one per file, shared by its cases.
const Result<ChatTemplate>& TemplateFor(const std::string& file) {
  static auto* cache = new std::map<std::string, Result<ChatTemplate>>();
  auto it = cache->find(file);
  if (it == cache->end()) {
    std::ifstream in(testing::SharedPath("templates/" + file), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    Result<ChatTemplate> t = ChatTemplate::Parse(ss.str(), file);
    if (t.ok()) t->PinClockForTesting(ParseUtc(Conversations()["now"].get<std::string>()));
    it = cache->emplace(file, std::move(t)).first;
  }
  return it->second;
}

std::string DiffLocation(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const size_t from = i < 60 ? 0 : i - 60;
  return "first difference at byte " + std::to_string(i) + " (want " + std::to_string(want.size()) +
         " bytes, got " + std::to_string(got.size()) +
         ")\n  want: " + ordered_json(want.substr(from, 160)).dump() +
         "\n  got:  " + ordered_json(got.substr(from, 160)).dump();
}

class TemplateReference : public ::testing::TestWithParam<Case> {};

TEST_P(TemplateReference, MatchesReferenceRender) {
  const ordered_json& c = GetParam().expected;
  const std::string file = c["template"].get<std::string>();
  REQUIRE_SHARED_FILE("templates/" + file);
  const ordered_json* conv = FindConversation(c["conversation"].get<std::string>());
  ASSERT_NE(conv, nullptr) << "conversation missing from conversations.json: " << c["conversation"];

  const Result<ChatTemplate>& tmpl = TemplateFor(file);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  Result<ordered_json> messages = PrepareMessagesForTemplate((*conv)["messages"]);
  ASSERT_TRUE(messages.ok()) << messages.status().ToString();
  ordered_json ctx = Conversations()["context"];
  if (conv->contains("tools")) ctx["tools"] = (*conv)["tools"];
  Result<std::string> got = tmpl->Apply(*messages, c["add_generation_prompt"].get<bool>(), ctx);

  if (c.contains("output")) {
    ASSERT_TRUE(got.ok()) << "reference renders, ours fails: " << got.status().ToString();
    const std::string want = c["output"].get<std::string>();
    EXPECT_TRUE(*got == want) << DiffLocation(want, *got);
    return;
  }
  ASSERT_TRUE(c.contains("error")) << "expected.json case has neither output nor error";
  ASSERT_FALSE(got.ok()) << "reference fails (" << c["error"].get<std::string>() << "), ours renders:\n"
                         << *got;
  if (c.value("raised", false)) {
    const std::string want = std::string(jinja::kRaisedPrefix) + c["error"].get<std::string>();
    EXPECT_NE(got.status().message().find(want), std::string::npos)
        << "want raise_exception message '" << want << "', got: " << got.status().ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(SharedTemplates, TemplateReference, ::testing::ValuesIn(LoadCases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// The data files exist and cover every template in ../shared/templates for every conversation, twice.
TEST(TemplateReferenceData, CoversEveryTemplateAndConversation) {
  ASSERT_TRUE(Conversations().is_object()) << "cannot read " << kReferenceDir << "conversations.json";
  const std::vector<Case> cases = LoadCases();
  ASSERT_FALSE(cases.empty()) << "cannot read " << kReferenceDir << "expected.json";
  REQUIRE_SHARED_FILE("templates");
  size_t n_templates = 0;
  for (const auto& entry : std::filesystem::directory_iterator(testing::SharedPath("templates"))) {
    n_templates += entry.path().extension() == ".jinja";
  }
  EXPECT_EQ(cases.size(), n_templates * Conversations()["conversations"].size() * 2)
      << "expected.json is stale: regenerate it (tests/chat/reference/generate.mjs)";
}

}  // namespace
}  // namespace lazyslot
