// libFuzzer target: any bytes as a JSON schema (response_format.json_schema.schema, a tool's parameters)
// through grammar::JsonSchemaToGbnf, as the routes call it. Any outcome is fine except a crash, an escaping
// exception, an error that is not a named InvalidArgument, or accepted output that is not a usable grammar:
// every rule must carry the prefix, ParseGbnf must accept the text (alone, and combined under another root
// as the tool-call grammars do), and random walks through the compiled grammar must give JSON that the
// tests' independent checker (tests/grammar/schema_checker.h) validates against the schema.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "grammar/grammar.h"
#include "grammar/schema_checker.h"

namespace {

using lazyslot::grammar::GrammarPtr;
using OJ = nlohmann::ordered_json;

// As the request parser (server/openai_params.cpp, kMaxJsonDepth): deeper bodies never reach the converter.
bool TooDeep(std::string_view s, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

void CheckError(const lazyslot::Status& s) {
  FUZZ_CHECK(!s.ok(), "error path with an OK status");
  FUZZ_CHECK(s.code() == lazyslot::Code::kInvalidArgument, "code " + std::to_string(static_cast<int>(s.code())) +
                                                                ": " + s.message());
  // The chat route strips this prefix and puts the field's name in its place (output_constraint.cpp).
  FUZZ_CHECK(s.message().rfind("json_schema: ", 0) == 0 && s.message().size() > 13,
             "message " + lazyslot::fuzz::Escape(s.message()));
}

// Every rule the converter writes is `prefix` or `prefix-...` (so several schemas combine into one grammar).
void CheckRuleNames(const std::string& gbnf, const std::string& prefix) {
  size_t pos = 0;
  while (pos < gbnf.size()) {
    size_t end = gbnf.find('\n', pos);
    if (end == std::string::npos) end = gbnf.size();
    const std::string_view line(gbnf.data() + pos, end - pos);
    const size_t def = line.find(" ::= ");
    if (def != std::string_view::npos && !line.empty() && line[0] != ' ' && line[0] != '#') {
      const std::string_view name = line.substr(0, def);
      FUZZ_CHECK(name == prefix || (name.size() > prefix.size() + 1 && name.substr(0, prefix.size()) == prefix &&
                                    name[prefix.size()] == '-'),
                 "rule " + std::string(name) + " outside prefix " + prefix);
    }
    pos = end + 1;
  }
}

const lazyslot::grammar::VocabIndex& Vocab() {
  static const auto* v = new lazyslot::grammar::VocabIndex(lazyslot::grammar::testing::SyntheticVocab());
  return *v;
}

// Samples a few outputs; each complete one must be JSON and, where the independent checker can judge the
// schema (no $ref: it follows references without a depth limit; no pattern: std::regex differs from the
// converter's ECMA-262 subset on corner cases), valid against it.
void CheckSamples(const GrammarPtr& g, const OJ& schema, uint32_t seed) {
  const std::string dumped = schema.dump();
  const bool judge = dumped.find("\"$ref\"") == std::string::npos && dumped.find("\"pattern\"") == std::string::npos;
  std::mt19937 rng(seed);
  std::string out;
  for (int i = 0; i < 3; ++i) {
    if (!lazyslot::grammar::testing::Sample(g, Vocab(), rng, &out, 512)) continue;
    nlohmann::json v = nlohmann::json::parse(out, nullptr, false);
    FUZZ_CHECK(!v.is_discarded(), "grammar output is not JSON: " + lazyslot::fuzz::Escape(out));
    if (!judge) continue;
    bool valid = true;
    try {
      valid = lazyslot::grammar::testing::Validate(schema, schema, v);
    } catch (const std::exception&) {
      continue;  // the checker cannot read this schema (not the converter's fault)
    }
    FUZZ_CHECK(valid, "output " + lazyslot::fuzz::Escape(out) + " fails schema " + lazyslot::fuzz::Escape(dumped));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string raw(reinterpret_cast<const char*>(data), size);
  if (TooDeep(raw, 128)) return 0;
  const OJ schema = OJ::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;

  auto gbnf = lazyslot::grammar::JsonSchemaToGbnf(schema, "root");
  // The same schema under another prefix must be accepted or refused alike (messages may name rules).
  auto other = lazyslot::grammar::JsonSchemaToGbnf(schema, "tool-0-args");
  FUZZ_CHECK(gbnf.ok() == other.ok(), "the prefix changed the verdict");
  if (!gbnf.ok()) {
    CheckError(gbnf.status());
    CheckError(other.status());
    return 0;
  }
  CheckRuleNames(*gbnf, "root");
  CheckRuleNames(*other, "tool-0-args");
  auto g = lazyslot::grammar::ParseGbnf(*gbnf);
  FUZZ_CHECK(g.ok(), "accepted schema gives bad GBNF: " + g.status().message() + "\n" +
                         lazyslot::fuzz::Escape(*gbnf, 2000));
  // As the tool-call grammars combine them: a root over a prefixed schema, beside another schema.
  const std::string combined = "root ::= tool-0-args | \"x\" root-x\nroot-x ::= \"y\"\n" + *other;
  auto c = lazyslot::grammar::ParseGbnf(combined);
  FUZZ_CHECK(c.ok(), "prefixed grammar does not combine: " + c.status().message());

  uint32_t seed = 2166136261u;
  for (size_t i = 0; i < size; ++i) seed = (seed ^ data[i]) * 16777619u;
  CheckSamples(*g, schema, seed);
  return 0;
}
