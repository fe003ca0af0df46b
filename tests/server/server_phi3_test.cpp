// phi3 (fused projections, partial rotary, LongRoPE) through the real server: greedy continuations equal
// llama.cpp's for every weight type (the server's 1,024-cell slot rotates with the short factors, as the
// references were made), and the Phi-3.5 chat template of ../shared/templates, carried in the file as real
// Phi-3.5 GGUFs carry it, renders and its end-of-turn token ends generation.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/model_variant.h"
#include "server_harness.h"

namespace lazyslot::testing {
namespace {

TEST(ServerPhi3, GreedyEqualsLlamaCppF32) {
  ExpectServerGreedyMatchesReference("models/phi3-tiny-f32.gguf", "phi3-tiny-f32");
}
TEST(ServerPhi3, GreedyEqualsLlamaCppQ8) {
  ExpectServerGreedyMatchesReference("models/phi3-tiny-q8_0.gguf", "phi3-tiny-q8_0");
}
TEST(ServerPhi3, GreedyEqualsLlamaCppQ4KM) {
  ExpectServerGreedyMatchesReference("models/phi3-tiny-q4_k_m.gguf", "phi3-tiny-q4_k_m");
}

// phi3-tiny's vocabulary with the last five of its 512 pieces made Phi-3.5's control tokens (as Phi-3.5's
// vocabulary has them, after its SentencePiece pieces) and the Phi-3.5 template in tokenizer.chat_template.
constexpr int kAssistant = 507, kEnd = 508, kSystem = 509, kUser = 510, kEndOfText = 511;

std::string WritePhi35Chat() {
  const std::string tmpl = ReadAll(SharedPath("templates/microsoft-Phi-3.5-mini-instruct.jinja"));
  return WriteModelVariant("models/phi3-tiny-q8_0.gguf", "phi35_chat", {.edit = [&](gguf::Writer& w) {
    const gguf::Value* tokens = w.Find("tokenizer.ggml.tokens");
    const gguf::Value* types = w.Find("tokenizer.ggml.token_type");
    ASSERT_TRUE(tokens && types);
    std::vector<std::string> t = tokens->strings;
    std::vector<int32_t> ty(types->ints.begin(), types->ints.end());
    ASSERT_EQ(t.size(), 512u);
    const std::pair<int, const char*> controls[] = {{kAssistant, "<|assistant|>"}, {kEnd, "<|end|>"},
                                                    {kSystem, "<|system|>"},       {kUser, "<|user|>"},
                                                    {kEndOfText, "<|endoftext|>"}};
    for (const auto& [id, piece] : controls) {
      t[id] = piece;
      ty[id] = 3;  // control
    }
    w.SetArrayString("tokenizer.ggml.tokens", t);
    w.SetArrayI32("tokenizer.ggml.token_type", ty);
    w.SetU32("tokenizer.ggml.eos_token_id", kEndOfText);
    w.SetString("tokenizer.chat_template", tmpl);
  }});
}

TEST(ServerPhi3, Phi35TemplateRendersAndItsEndTokenStopsGeneration) {
  REQUIRE_SHARED_FILE("models/phi3-tiny-q8_0.gguf");
  REQUIRE_SHARED_FILE("templates/microsoft-Phi-3.5-mini-instruct.jinja");
  const std::string model = WritePhi35Chat();
  START_SERVER(srv, {"-m", model, "-np", "1", "-c", "1024"});
  const json messages = json::array({{{"role", "system"}, {"content", "Be brief."}},
                                     {{"role", "user"}, {"content", "Hello there"}},
                                     {{"role", "assistant"}, {"content", "Hi"}},
                                     {{"role", "user"}, {"content", "Tell me a story"}}});
  HttpResult r = srv->Post("/apply-template", {{"messages", messages}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["prompt"],
            "<|system|>\nBe brief.<|end|>\n<|user|>\nHello there<|end|>\n<|assistant|>\nHi<|end|>\n"
            "<|user|>\nTell me a story<|end|>\n<|assistant|>\n");
  // The tags are single control tokens, not spelled out.
  r = srv->Post("/tokenize", {{"content", "<|user|>\nHi<|end|>\n<|assistant|>\n"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json ids = r.Json()["tokens"];
  ASSERT_GE(ids.size(), 4u) << r.body;
  EXPECT_EQ(ids[0], kUser) << r.body;
  EXPECT_NE(std::find(ids.begin(), ids.end(), json(kEnd)), ids.end()) << r.body;
  EXPECT_NE(std::find(ids.begin(), ids.end(), json(kAssistant)), ids.end()) << r.body;

  // Without a push towards them the reply runs to max_tokens; when the model gives <|end|> (or
  // <|endoftext|>, the file's EOS) the turn is over: finish_reason stop, and the token is not in the text.
  r = srv->Post("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json free = r.Json();
  const std::string free_text = free["choices"][0]["message"]["content"];
  for (int stop : {kEnd, kEndOfText}) {
    SCOPED_TRACE("stop token " + std::to_string(stop));
    r = srv->Post("/v1/chat/completions", {{"messages", messages},
                                           {"max_tokens", 6},
                                           {"temperature", 0},
                                           {"logit_bias", {{std::to_string(stop), 100}}}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = r.Json();
    EXPECT_EQ(j["choices"][0]["finish_reason"], "stop") << r.body;
    EXPECT_EQ(j["choices"][0]["message"]["content"], "") << r.body;
    EXPECT_LE(j["usage"]["completion_tokens"].get<int>(), 1) << r.body;
  }
  // Streamed the same: the last chunk says stop, and no text carries the tag.
  r = srv->Post("/v1/chat/completions", {{"messages", messages},
                                         {"max_tokens", 6},
                                         {"temperature", 0},
                                         {"stream", true},
                                         {"logit_bias", {{std::to_string(kEnd), 100}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"finish_reason\":\"stop\""), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("<|end|>"), std::string::npos) << r.body;
  if (free["choices"][0]["finish_reason"] == "length") {
    EXPECT_EQ(free["usage"]["completion_tokens"], 6) << free.dump();
    EXPECT_EQ(free_text.find("<|end|>"), std::string::npos) << free_text;
  }
}

}  // namespace
}  // namespace lazyslot::testing
