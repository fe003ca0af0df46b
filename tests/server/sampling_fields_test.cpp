// llama-server's extra sampling fields (server/generation/sampling_fields.h): each field read into SamplingParams, the
// samplers list by names, aliases and one-letter codes, every error naming its field, and the
// generation_settings JSON with llama-server's keys and order.
#include "server/generation/sampling_fields.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace lazyslot::server {
namespace {

Json Parse(const std::string& text) { return Json::parse(text); }

// The error message for `body`, or "" if it parses.
std::string ErrorOf(const std::string& body) {
  SamplingParams s;
  const Status st = ParseSamplingFields(Parse(body), &s);
  if (st.ok()) return "";
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  return st.message();
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST(SamplingFields, ReadsEveryField) {
  SamplingParams s;
  const Status st = ParseSamplingFields(Parse(R"({
      "typical_p": 0.9, "top_n_sigma": 1.5, "xtc_probability": 0.5, "xtc_threshold": 0.2,
      "dry_multiplier": 0.8, "dry_base": 2, "dry_allowed_length": 3, "dry_penalty_last_n": -1,
      "dry_sequence_breakers": ["\n", "###"], "mirostat": 2, "mirostat_tau": 4.5, "mirostat_eta": 0.2,
      "samplers": ["top_k", "Temperature"]})"),
                                        &s);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_FLOAT_EQ(s.typical_p, 0.9f);
  EXPECT_FLOAT_EQ(s.top_n_sigma, 1.5f);
  EXPECT_FLOAT_EQ(s.xtc_probability, 0.5f);
  EXPECT_FLOAT_EQ(s.xtc_threshold, 0.2f);
  EXPECT_FLOAT_EQ(s.dry_multiplier, 0.8f);
  EXPECT_FLOAT_EQ(s.dry_base, 2.0f);
  EXPECT_EQ(s.dry_allowed_length, 3);
  EXPECT_EQ(s.dry_penalty_last_n, -1);
  EXPECT_EQ(s.dry_sequence_breakers, (std::vector<std::string>{"\n", "###"}));
  EXPECT_EQ(s.mirostat, 2);
  EXPECT_FLOAT_EQ(s.mirostat_tau, 4.5f);
  EXPECT_FLOAT_EQ(s.mirostat_eta, 0.2f);
  EXPECT_EQ(s.samplers, (std::vector<SamplerStage>{SamplerStage::kTopK, SamplerStage::kTemperature}));
}

TEST(SamplingFields, AbsentAndNullKeepTheDefaults) {
  SamplingParams s;
  ASSERT_TRUE(ParseSamplingFields(Parse(R"({"mirostat": null, "samplers": null, "messages": []})"), &s).ok());
  const SamplingParams d;
  EXPECT_EQ(s.mirostat, 0);
  EXPECT_EQ(s.samplers, d.samplers);
  EXPECT_EQ(s.dry_sequence_breakers, (std::vector<std::string>{"\n", ":", "\"", "*"}));
  EXPECT_FLOAT_EQ(s.typical_p, 1.0f);
  EXPECT_FLOAT_EQ(s.top_n_sigma, -1.0f);
  EXPECT_FLOAT_EQ(s.xtc_threshold, 0.1f);
  EXPECT_FLOAT_EQ(s.dry_base, 1.75f);
  EXPECT_EQ(s.dry_allowed_length, 2);
  EXPECT_EQ(s.dry_penalty_last_n, 64);
  EXPECT_FLOAT_EQ(s.mirostat_tau, 5.0f);
  EXPECT_FLOAT_EQ(s.mirostat_eta, 0.1f);
}

TEST(SamplingFields, SamplersByNameAliasOrCode) {
  SamplingParams s;
  ASSERT_TRUE(ParseSamplingFields(
                  Parse(R"({"samplers": ["penalties", "top-k", "nucleus", "typ", "temp", "minp"]})"), &s)
                  .ok());
  EXPECT_EQ(s.samplers, (std::vector<SamplerStage>{SamplerStage::kPenalties, SamplerStage::kTopK,
                                                   SamplerStage::kTopP, SamplerStage::kTypicalP,
                                                   SamplerStage::kTemperature, SamplerStage::kMinP}));
  ASSERT_TRUE(ParseSamplingFields(Parse(R"({"samplers": "edskypmxt"})"), &s).ok());
  EXPECT_EQ(s.samplers, SamplingParams().samplers);
  ASSERT_TRUE(ParseSamplingFields(Parse(R"({"samplers": "kt"})"), &s).ok());
  EXPECT_EQ(s.samplers, (std::vector<SamplerStage>{SamplerStage::kTopK, SamplerStage::kTemperature}));
  ASSERT_TRUE(ParseSamplingFields(Parse(R"({"samplers": []})"), &s).ok());  // bias and the draw only
  EXPECT_TRUE(s.samplers.empty());
}

TEST(SamplingFields, DryBaseBelowOneKeepsTheDefault) {
  SamplingParams s;
  ASSERT_TRUE(ParseSamplingFields(Parse(R"({"dry_base": 0.5})"), &s).ok());
  EXPECT_FLOAT_EQ(s.dry_base, 1.75f);
}

TEST(SamplingFields, ErrorsNameTheField) {
  struct Case {
    const char* body;
    const char* message;  // exact, or a prefix when it ends with '*'
  };
  const Case cases[] = {
      {R"({"mirostat": 3})", "mirostat: must be 0, 1 or 2, got 3"},
      {R"({"mirostat": -1})", "mirostat: must be 0, 1 or 2, got -1"},
      {R"({"mirostat": 1.5})", "mirostat: must be 0, 1 or 2, got 1.5"},
      {R"({"mirostat": "2"})", "mirostat: expected an integer, got string"},
      {R"({"typical_p": -0.1})", "typical_p: must be at least 0, got -0.1"},
      {R"({"typical_p": "x"})", "typical_p: expected a number, got string"},
      {R"({"top_n_sigma": true})", "top_n_sigma: expected a number, got boolean"},
      {R"({"top_n_sigma": 1e300})", "top_n_sigma: must be a finite number, got 1e+300"},
      {R"({"xtc_probability": 1.5})", "xtc_probability: must be between 0 and 1, got 1.5"},
      {R"({"xtc_threshold": -0.5})", "xtc_threshold: must be between 0 and 1, got -0.5"},
      {R"({"dry_multiplier": -1})", "dry_multiplier: must be at least 0, got -1"},
      {R"({"dry_base": "big"})", "dry_base: expected a number, got string"},
      {R"({"dry_allowed_length": -1})", "dry_allowed_length: must be between 0 and 2147483647, got -1"},
      {R"({"dry_allowed_length": 2.5})", "dry_allowed_length: expected an integer, got 2.5"},
      {R"({"dry_penalty_last_n": -2})", "dry_penalty_last_n: must be between -1 and 2147483647, got -2"},
      {R"({"dry_penalty_last_n": 99999999999})", "dry_penalty_last_n: must be between -1 and 2147483647*"},
      {R"({"dry_sequence_breakers": []})", "dry_sequence_breakers: must be a non-empty list of strings"},
      {R"({"dry_sequence_breakers": "\n"})", "dry_sequence_breakers: expected a non-empty list of strings*"},
      {R"({"dry_sequence_breakers": ["a", 1]})", "dry_sequence_breakers[1]: expected a string, got integer"},
      {R"({"mirostat_tau": -1})", "mirostat_tau: must be at least 0, got -1"},
      {R"({"mirostat_eta": [1]})", "mirostat_eta: expected a number, got array"},
      {R"({"samplers": ["top_k", "warp"]})",
       "samplers[1]: unknown sampler \"warp\" (known: penalties, dry,*"},
      {R"({"samplers": ["infill"]})", "samplers[0]: unknown sampler \"infill\"*"},
      {R"({"samplers": [1]})", "samplers[0]: expected a string, got integer"},
      {R"({"samplers": "kq"})", "samplers: unknown sampler code 'q' at 1 (codes: edskypmxt)"},
      {R"({"samplers": {"a": 1}})",
       "samplers: expected a list of sampler names or a string of codes, got object"},
  };
  for (const Case& c : cases) {
    const std::string got = ErrorOf(c.body);
    std::string want = c.message;
    if (!want.empty() && want.back() == '*') {
      want.pop_back();
      EXPECT_TRUE(StartsWith(got, want)) << c.body << " -> " << got;
    } else {
      EXPECT_EQ(got, want) << c.body;
    }
  }
  EXPECT_TRUE(
      StartsWith(ErrorOf(R"({"samplers": ")" + std::string(65, 't') + "\"}"), "samplers: at most 64 stages"));
  std::string many = R"({"dry_sequence_breakers": [)";
  for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + "\"x\"";
  EXPECT_TRUE(StartsWith(ErrorOf(many + "]}"), "dry_sequence_breakers: at most 64 breakers"));
}

TEST(SamplingFields, NamesCoverEveryField) {
  const std::vector<std::string>& names = SamplingFieldNames();
  const std::vector<std::string> want = {"typical_p",
                                         "top_n_sigma",
                                         "xtc_probability",
                                         "xtc_threshold",
                                         "dry_multiplier",
                                         "dry_base",
                                         "dry_allowed_length",
                                         "dry_penalty_last_n",
                                         "dry_sequence_breakers",
                                         "mirostat",
                                         "mirostat_tau",
                                         "mirostat_eta",
                                         "adaptive_target",
                                         "adaptive_decay",
                                         "samplers"};
  EXPECT_EQ(names, want);
  // Each name is read: a wrong type for it is an error naming it.
  for (const std::string& n : names) {
    const std::string got = ErrorOf(Json{{n, Json::object()}}.dump());
    EXPECT_TRUE(StartsWith(got, n + ": ")) << n << " -> " << got;
  }
}

TEST(SamplingFields, SettingsJsonHasLlamaServersKeys) {
  SamplingParams s;
  s.logit_bias = {{5, -2.0f}};
  s.samplers = {SamplerStage::kDry, SamplerStage::kTopK, SamplerStage::kTemperature};
  const nlohmann::ordered_json j = SamplingParamsJson(s);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  const std::vector<std::string> want = {
      "seed",           "temperature",   "dynatemp_range",     "dynatemp_exponent",  "top_k",
      "top_p",          "min_p",         "top_n_sigma",        "xtc_probability",    "xtc_threshold",
      "typical_p",      "repeat_last_n", "repeat_penalty",     "presence_penalty",   "frequency_penalty",
      "dry_multiplier", "dry_base",      "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers",
      "mirostat",       "mirostat_tau",  "mirostat_eta",       "adaptive_target",    "adaptive_decay",
      "logit_bias",     "samplers"};
  EXPECT_EQ(keys, want);
  EXPECT_EQ(j["samplers"].dump(), R"(["dry","top_k","temperature"])");
  EXPECT_EQ(j["logit_bias"].dump(), R"([{"bias":-2.0,"token":5}])");
  EXPECT_EQ(j["dry_sequence_breakers"].dump(), R"(["\n",":","\"","*"])");
  EXPECT_EQ(j["temperature"].dump(), "0.800000011920929");  // a float, printed as llama-server prints it
  EXPECT_EQ(j["seed"].get<uint64_t>(), 0xFFFFFFFFu);
  EXPECT_EQ(j["dynatemp_range"].get<double>(), 0.0);
  EXPECT_EQ(j["mirostat"].get<int>(), 0);
  EXPECT_EQ(j["top_n_sigma"].get<double>(), -1.0);
  EXPECT_EQ(j["dry_penalty_last_n"].get<int>(), 64);
  EXPECT_EQ(SamplingParamsJson(SamplingParams())["samplers"].size(), 9u);
  EXPECT_EQ(j["adaptive_target"].get<double>(), -1.0);
}

// llama-server's adaptive-p sampler is not implemented: its fields are accepted while they leave it off.
TEST(SamplingFields, AdaptivePOnlyOff) {
  EXPECT_EQ(ErrorOf(R"({"adaptive_target": -1, "adaptive_decay": 0.5})"), "");
  EXPECT_TRUE(StartsWith(ErrorOf(R"({"adaptive_target": 0.3})"),
                         "adaptive_target: the adaptive-p sampler is not supported"));
  EXPECT_TRUE(StartsWith(ErrorOf(R"({"adaptive_target": 1.5})"), "adaptive_target: must be"));
  EXPECT_TRUE(StartsWith(ErrorOf(R"({"adaptive_decay": 1})"), "adaptive_decay: must be between 0 and 0.99"));
}

}  // namespace
}  // namespace lazyslot::server
