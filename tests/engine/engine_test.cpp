// Engine tests on real models: llama-server's greedy text for TinyLLama, batching invariance over slots,
// embeddings, prompt-length errors, the queue bound and cancellation.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "drain.h"
#include "greedy_reference.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using namespace std::chrono_literals;

using testing::Collected;
using testing::Drain;

std::unique_ptr<Engine> MakeEngine(const std::string& model, int n_parallel, int32_t n_ctx,
                                   int max_queue = 64) {
  EngineConfig cfg;
  cfg.model_path = testing::SharedPath(model);
  cfg.n_parallel = n_parallel;
  cfg.n_ctx = n_ctx;
  cfg.n_threads = 2;
  cfg.max_queue = max_queue;
  auto e = Engine::Create(cfg);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(e).value() : nullptr;
}

GenerationRequest Greedy(std::vector<TokenId> prompt, int32_t n) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.n_predict = n;
  r.sampling.temperature = 0;
  return r;
}

TEST(EngineTest, TinyLlamaGreedyMatchesLlamaServer) {
  REQUIRE_SHARED_FILE("models/TinyLLama-v0-Q4_0.gguf");
  REQUIRE_SHARED_FILE("reference/server-greedy/TinyLLama-v0-Q4_0.llamacpp-greedy.json");
  std::ifstream in(testing::SharedPath("reference/server-greedy/TinyLLama-v0-Q4_0.llamacpp-greedy.json"));
  const auto ref = nlohmann::json::parse(in);
  auto engine = MakeEngine("models/TinyLLama-v0-Q4_0.gguf", 1, 512);
  ASSERT_TRUE(engine);
  for (const auto& c : ref) {
    auto prompt = engine->tokenizer().Tokenize(c["prompt"].get<std::string>(), true, true);
    ASSERT_TRUE(prompt.ok());
    EXPECT_EQ(*prompt, c["tokens_with_bos"].get<std::vector<TokenId>>());
    const auto expect = c["greedy_tokens"].get<std::vector<TokenId>>();
    auto stream = engine->Submit(Greedy(*prompt, static_cast<int32_t>(expect.size())));
    ASSERT_TRUE(stream.ok());
    Collected got = Drain(**stream);
    ASSERT_FALSE(got.error) << got.done.error.ToString();
    // Equal up to the first near tie in the reference; there, one of its two best tokens.
    const size_t clear = testing::ClearGreedySteps(c);
    ASSERT_EQ(got.tokens.size(), expect.size());
    const std::vector<TokenId> got_clear(got.tokens.begin(), got.tokens.begin() + clear);
    EXPECT_EQ(got_clear, std::vector<TokenId>(expect.begin(), expect.begin() + clear)) << c["prompt"];
    if (clear < expect.size()) {
      EXPECT_TRUE(testing::IsTopTwo(c, clear, got.tokens[clear])) << c["prompt"] << " step " << clear;
    } else {
      EXPECT_EQ(got.text, c["greedy_text"].get<std::string>());
    }
    EXPECT_EQ(got.text.rfind(testing::GreedyPrefixText(c, clear), 0), 0u) << got.text;
    EXPECT_EQ(got.done.finish_reason, "length");
    EXPECT_EQ(got.done.n_prompt, static_cast<int32_t>(prompt->size()));
    EXPECT_EQ(got.done.n_generated, static_cast<int32_t>(expect.size()));
  }
}

TEST(EngineTest, ConcurrentRequestsOverTwoSlotsEqualEachAlone) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  auto engine = MakeEngine("models/stories260K.gguf", 2, 512);
  ASSERT_TRUE(engine);
  std::vector<std::vector<TokenId>> prompts;
  for (int i = 0; i < 8; ++i) {
    std::vector<TokenId> p = {1};
    for (int j = 0; j <= i * 3; ++j) p.push_back(10 + (i * 37 + j * 11) % 400);
    prompts.push_back(p);
  }
  std::vector<std::string> alone;
  for (const auto& p : prompts) {
    auto s = engine->Submit(Greedy(p, 24));
    ASSERT_TRUE(s.ok());
    alone.push_back(Drain(**s).text);
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& p : prompts) {
    auto s = engine->Submit(Greedy(p, 24));
    ASSERT_TRUE(s.ok());
    streams.push_back(*s);
  }
  for (size_t i = 0; i < streams.size(); ++i) EXPECT_EQ(Drain(*streams[i]).text, alone[i]) << "request " << i;
}

TEST(EngineTest, StopStringEndsGenerationBeforeIt) {
  REQUIRE_SHARED_FILE("models/TinyLLama-v0-Q4_0.gguf");
  auto engine = MakeEngine("models/TinyLLama-v0-Q4_0.gguf", 1, 512);
  ASSERT_TRUE(engine);
  auto prompt = engine->tokenizer().Tokenize("Once upon a time", true, true);
  ASSERT_TRUE(prompt.ok());
  GenerationRequest r = Greedy(*prompt, 32);
  r.stop = {"little gi"};  // spans the tokens " little" and " girl"
  auto s = engine->Submit(r);
  ASSERT_TRUE(s.ok());
  Collected got = Drain(**s);
  EXPECT_EQ(got.text, ", there was a ");
  EXPECT_EQ(got.done.finish_reason, "stop");
}

TEST(EngineTest, PromptLongerThanSlotIsRejectedWithBothNumbers) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  auto engine = MakeEngine("models/stories260K.gguf", 2, 64);  // 32 cells per slot
  ASSERT_TRUE(engine);
  auto s = engine->Submit(Greedy(std::vector<TokenId>(40, 5), 4));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kOutOfRange);
  EXPECT_NE(s.status().message().find("40"), std::string::npos);
  EXPECT_NE(s.status().message().find("32"), std::string::npos);
  // Context full during generation ends with "length", not an error.
  auto ok = engine->Submit(Greedy(std::vector<TokenId>(30, 5), 100));
  ASSERT_TRUE(ok.ok());
  Collected got = Drain(**ok);
  EXPECT_FALSE(got.error);
  EXPECT_EQ(got.done.finish_reason, "length");
  // As llama-server, the slot's last cell stays unused: cell 30 takes the first generated token, and the
  // second ends the generation (30 + 1 + 1 >= 32), truncated.
  EXPECT_EQ(got.done.n_generated, 2);
  EXPECT_TRUE(got.done.truncated);
}

// n > 1 choices: the later ones copy the first one's prompt KV (all but the last prompt token) instead of
// computing it, and their greedy answers equal the first one's and a lone run's.
TEST(EngineTest, ChoicesOfOnePromptCopyItsKvInsteadOfRecomputing) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  std::vector<TokenId> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back(100 + 7 * i);
  // Long enough answers that the first choice is still running when the others arrive (a finished first
  // choice has no prompt KV left to copy).
  constexpr int kTokens = 160;
  std::string alone;
  {
    auto single = MakeEngine("models/stories260K.gguf", 1, 256);
    ASSERT_TRUE(single);
    auto s = single->Submit(Greedy(prompt, kTokens));
    ASSERT_TRUE(s.ok());
    alone = Drain(**s).text;
  }
  auto engine = MakeEngine("models/stories260K.gguf", 3, 3 * 256);
  ASSERT_TRUE(engine);
  auto first = engine->Submit(Greedy(prompt, kTokens));
  ASSERT_TRUE(first.ok());
  std::vector<std::shared_ptr<RequestStream>> others;
  for (int j = 0; j < 2; ++j) {
    GenerationRequest r = Greedy(prompt, kTokens);
    r.share_prompt_of = (*first)->id();
    auto s = engine->Submit(std::move(r));
    ASSERT_TRUE(s.ok());
    others.push_back(*s);
  }
  Collected lead = Drain(**first);
  EXPECT_EQ(lead.done.n_cached, 0);
  EXPECT_EQ(lead.text, alone);
  std::set<int> slots = {lead.done.slot};
  for (auto& s : others) {
    Collected c = Drain(*s);
    ASSERT_FALSE(c.error);
    EXPECT_EQ(c.done.n_cached, 19) << "the prompt's KV was recomputed, not copied";
    EXPECT_EQ(c.text, alone);
    slots.insert(c.done.slot);
  }
  EXPECT_EQ(slots.size(), 3u) << "each choice runs in its own slot";
}

// Two conversations that share only their first tokens (a template's preamble) go to different slots while
// slots are empty, so each next turn reuses its whole previous prompt.
TEST(EngineTest, AnotherConversationTakesAnEmptySlotNotOnesCache) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  auto engine = MakeEngine("models/stories260K.gguf", 4, 4 * 256);
  ASSERT_TRUE(engine);
  const std::vector<TokenId> preamble = {1, 400, 401, 402};
  auto turn = [&](std::vector<TokenId> prompt) {
    auto s = engine->Submit(Greedy(std::move(prompt), 4));
    EXPECT_TRUE(s.ok());
    return s.ok() ? Drain(**s) : Collected{};
  };
  std::vector<TokenId> a = preamble, b = preamble;
  for (int i = 0; i < 40; ++i) a.push_back(100 + i);
  for (int i = 0; i < 40; ++i) b.push_back(300 + i);
  Collected a1 = turn(a);
  Collected b1 = turn(b);
  EXPECT_NE(a1.done.slot, b1.done.slot) << "b shares 4 tokens with a; it must not evict a's 44";
  a.insert(a.end(), a1.tokens.begin(), a1.tokens.end());
  a.push_back(7);
  Collected a2 = turn(a);
  EXPECT_EQ(a2.done.slot, a1.done.slot);
  EXPECT_GE(a2.done.n_cached, 44) << "a's second turn reuses its first prompt";
}

// A request waiting for the slot it named does not hold up the requests behind it.
TEST(EngineTest, AWaitForANamedSlotLetsOthersPass) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  auto engine = MakeEngine("models/stories260K.gguf", 2, 2 * 2048);
  ASSERT_TRUE(engine);
  GenerationRequest a = Greedy(std::vector<TokenId>(8, 300), 2000);
  a.ignore_eos = true;
  a.id_slot = 0;
  auto sa = engine->Submit(a);
  ASSERT_TRUE(sa.ok());
  GenerationRequest b = Greedy(std::vector<TokenId>(8, 301), 3);
  b.id_slot = 0;  // waits for a
  auto sb = engine->Submit(b);
  ASSERT_TRUE(sb.ok());
  auto sc = engine->Submit(Greedy(std::vector<TokenId>(8, 302), 3));
  ASSERT_TRUE(sc.ok());
  Collected c = Drain(**sc);
  ASSERT_FALSE(c.error);
  EXPECT_EQ(c.done.slot, 1);
  EXPECT_TRUE(engine->Stats().slots[0].busy) << "c should finish while a (2000 tokens) still runs";
  Collected bb = Drain(**sb);
  EXPECT_EQ(bb.done.slot, 0);
  Collected aa = Drain(**sa);
  EXPECT_EQ(aa.done.n_generated, 2000);
}

TEST(EngineTest, IdSlotProgressAndLogprobs) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  auto engine = MakeEngine("models/stories260K.gguf", 2, 128);
  ASSERT_TRUE(engine);
  GenerationRequest r = Greedy(std::vector<TokenId>(12, 300), 5);
  r.id_slot = 1;
  r.return_progress = true;
  r.n_probs = 3;
  auto s = engine->Submit(r);
  ASSERT_TRUE(s.ok());
  Collected c = Drain(**s);
  ASSERT_FALSE(c.error);
  EXPECT_EQ(c.done.slot, 1);
  ASSERT_FALSE(c.progress.empty());
  EXPECT_EQ(c.progress.back().n_prompt_processed, 12);
  EXPECT_EQ(c.progress.back().n_prompt, 12);
  ASSERT_EQ(c.token_events.size(), 5u);
  for (const Event& ev : c.token_events) {
    ASSERT_EQ(ev.top_logprobs.size(), 3u);
    EXPECT_EQ(ev.top_logprobs[0].id, ev.token) << "greedy draws the most probable token";
    EXPECT_FLOAT_EQ(ev.logprob, ev.top_logprobs[0].logprob);
    double mass = 0;
    for (const TokenLogprob& t : ev.top_logprobs) mass += std::exp(t.logprob);
    EXPECT_LE(mass, 1.0 + 1e-6);
    EXPECT_GE(ev.top_logprobs[0].logprob, ev.top_logprobs[1].logprob);
  }
  r.id_slot = 2;
  auto bad = engine->Submit(r);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("id_slot"), std::string::npos);
}

// The engine returns the pooled vector unnormalised (the API layer normalises); normalised, it is the
// reference's.
TEST(EngineTest, EmbeddingIsPooledAsTheReference) {
  REQUIRE_SHARED_FILE("models/qwen3-hd128-f32.gguf");
  REQUIRE_SHARED_FILE("reference/qwen3-hd128-f32.json");
  auto engine = MakeEngine("models/qwen3-hd128-f32.gguf", 2, 256);
  ASSERT_TRUE(engine);
  std::ifstream in(testing::SharedPath("reference/qwen3-hd128-f32.json"));
  const nlohmann::json ref = nlohmann::json::parse(in);
  for (const char* name : {"mean", "last"}) {
    GenerationRequest r;
    r.prompt = ref["embed"][name]["tokens"].get<std::vector<TokenId>>();
    r.embedding = true;
    ASSERT_TRUE(ParsePooling(name, &r.pooling));
    auto s = engine->Submit(r);
    ASSERT_TRUE(s.ok());
    Collected got = Drain(**s);
    ASSERT_FALSE(got.error);
    const auto want = ref["embed"][name]["embedding"].get<std::vector<float>>();
    ASSERT_EQ(got.done.embedding.size(), want.size());
    double dot = 0, na = 0, nb = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      dot += double(got.done.embedding[i]) * want[i];
      na += double(got.done.embedding[i]) * got.done.embedding[i];
      nb += double(want[i]) * want[i];
    }
    EXPECT_LE(1 - dot / std::sqrt(na * nb), 1e-5) << name;
    EXPECT_GT(std::fabs(std::sqrt(na) - 1.0), 1e-3) << name << ": the engine should not normalise";
  }
}

TEST(EngineTest, QueueBoundAndCancellationFreeSlots) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  auto engine = MakeEngine("models/stories260K.gguf", 1, 4096, /*max_queue=*/1);
  ASSERT_TRUE(engine);
  auto running = engine->Submit(Greedy({1, 20, 30}, 3000));
  ASSERT_TRUE(running.ok());
  // Wait until the slot is busy, then fill the queue.
  for (int i = 0; i < 200 && !engine->Stats().slots[0].busy; ++i) std::this_thread::sleep_for(5ms);
  GenerationRequest no_cache = Greedy({1, 20}, 4);
  no_cache.cache_prompt = false;  // its KV is dropped when it ends (memory_test covers the kept case)
  auto queued = engine->Submit(no_cache);
  ASSERT_TRUE(queued.ok());
  auto rejected = engine->Submit(Greedy({1, 20}, 4));
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.status().code(), Code::kUnavailable);
  (*running)->Cancel();
  Collected q = Drain(**queued);  // the queued request runs once the cancelled one left its slot
  EXPECT_FALSE(q.error);
  EXPECT_EQ(q.done.n_generated, 4);
  for (int i = 0; i < 200 && engine->Stats().slots[0].busy; ++i) std::this_thread::sleep_for(5ms);
  EngineStats st = engine->Stats();
  EXPECT_FALSE(st.slots[0].busy);
  EXPECT_EQ(st.slots[0].n_tokens, 0);
  EXPECT_EQ(st.kv_committed_bytes, 0u);
  EXPECT_EQ(st.requests_cancelled, 1u);
}

}  // namespace
}  // namespace lazyslot
