// A sliding-window model (gemma3-tiny, window 64) through the real server: greedy continuations equal
// llama.cpp's (reference/gemma3-tiny-*.json, decoded with the server's flash attention), 4,096 held tokens
// leave /metrics' committed KV equal to the kernel's count and far under what global layers would hold, and
// prompt reuse follows the window: a continuation reuses what it can, an earlier branch is recomputed and
// says so in timings.cache_n, and both give the text a fresh slot gives.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kGemmaQ8[] = "models/gemma3-tiny-q8_0.gguf";
constexpr char kGemmaF32[] = "models/gemma3-tiny-f32.gguf";

json Complete(ServerProcess& srv, const json& prompt, int n, bool cache_prompt = true) {
  HttpResult r = srv.Post("/completion", {{"prompt", prompt},
                                          {"n_predict", n},
                                          {"temperature", 0},
                                          {"return_tokens", true},
                                          {"cache_prompt", cache_prompt}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.Json() : json::object();
}

std::vector<int> Tokens(int n, int salt) {
  std::vector<int> t = {1};
  for (int i = 1; i < n; ++i) t.push_back(3 + (i * 53 + salt * 17) % 500);
  return t;
}

TEST(ServerWindow, GreedyEqualsLlamaCppQ8) { ExpectServerGreedyMatchesReference(kGemmaQ8, "gemma3-tiny-q8_0"); }
TEST(ServerWindow, GreedyEqualsLlamaCppF32) { ExpectServerGreedyMatchesReference(kGemmaF32, "gemma3-tiny-f32"); }

TEST(ServerWindow, HeldTokensCommitOnlyTheWindowOnLocalLayers) {
  REQUIRE_SHARED_FILE(kGemmaQ8);
  START_SERVER(srv, {"-m", SharedPath(kGemmaQ8), "-np", "1", "-c", "8192"});
  const json out = Complete(*srv, Tokens(4096, 1), 4);
  ASSERT_EQ(out["tokens"].size(), 4u) << out.dump();
  // The figures are published at the end of the scheduler's step: poll until they agree with mincore.
  double committed = -1, resident = -2;
  for (int i = 0; i < 200 && committed != resident; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::string body = srv->Get("/metrics").body;
    committed = Metric(body, "lazyslot:kv_committed_bytes");
    resident = Metric(body, "lazyslot:kv_resident_bytes");
  }
  EXPECT_EQ(committed, resident) << "tracking == mincore";
  // One KV head of 64 f16 values: 128-byte rows. The global layer holds every cell (K and V); each of the
  // five local layers its 64-cell window, at most four pages per run.
  json slot;
  for (int i = 0; i < 200; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    slot = srv->Get("/slots").Json()[0];
    if (slot["memory"]["kv_committed_bytes"].get<double>() == committed) break;
  }
  const double cells = slot["n_tokens"].get<double>();
  ASSERT_GE(cells, 4096);
  const double page = 4096, global = 2 * std::ceil(cells * 128 / page) * page;
  EXPECT_GE(committed, global + 5 * 2 * 2 * page);
  EXPECT_LE(committed, global + 5 * 2 * 4 * page);
  EXPECT_EQ(slot["memory"]["kv_committed_bytes"].get<double>(), committed) << slot.dump();
}

TEST(ServerWindow, ReuseFollowsTheWindow) {
  REQUIRE_SHARED_FILE(kGemmaQ8);
  START_SERVER(srv, {"-m", SharedPath(kGemmaQ8), "-np", "1", "-c", "2048"});
  START_SERVER(fresh, {"-m", SharedPath(kGemmaQ8), "-np", "1", "-c", "2048"});
  const std::vector<int> a = Tokens(300, 2);
  const json first = Complete(*srv, a, 8);
  ASSERT_EQ(first["tokens"].size(), 8u);
  // A continuation of the conversation: its prompt extends what the slot holds, which is reused.
  std::vector<int> cont = a;
  for (int t : first["tokens"]) cont.push_back(t);
  for (int t : Tokens(20, 3)) cont.push_back(t);
  json r = Complete(*srv, cont, 8);
  EXPECT_GE(r["timings"]["cache_n"].get<int>(), 300) << r["timings"].dump();
  EXPECT_EQ(r["tokens"], Complete(*fresh, cont, 8, false)["tokens"]);
  // A branch 200 tokens back: the local layers no longer hold that window, so all of it is recomputed.
  std::vector<int> branch(cont.begin(), cont.begin() + 100);
  for (int t : Tokens(50, 4)) branch.push_back(t);
  r = Complete(*srv, branch, 8);
  EXPECT_EQ(r["timings"]["cache_n"], 0) << "a branch behind the window is recomputed: " << r["timings"].dump();
  EXPECT_EQ(r["tokens"], Complete(*fresh, branch, 8, false)["tokens"]);
  // The same prompt again (regenerate): the window slid on over the 8 generated tokens, so the prompt's end
  // is gone from the local layers too (llama-server recomputes it as well, short of --swa-full).
  r = Complete(*srv, branch, 8);
  EXPECT_EQ(r["timings"]["cache_n"], 0) << r["timings"].dump();
  EXPECT_EQ(r["tokens"], Complete(*fresh, branch, 8, false)["tokens"]);
  // Without generation in between (one token's answer), the prompt's end is still held, and all but its
  // last token come from the cache.
  std::vector<int> shortp(branch.begin(), branch.begin() + 120);
  (void)Complete(*srv, shortp, 1);
  r = Complete(*srv, shortp, 8);
  EXPECT_EQ(r["timings"]["cache_n"], 119) << r["timings"].dump();
  EXPECT_EQ(r["tokens"], Complete(*fresh, shortp, 8, false)["tokens"]);
}

// --swa-full: the local layers keep every cell, so an early branch reuses the prefix, and the slot commits
// the whole context on every layer.
TEST(ServerWindow, SwaFullReusesAnyPrefix) {
  REQUIRE_SHARED_FILE(kGemmaQ8);
  START_SERVER(srv, {"-m", SharedPath(kGemmaQ8), "-np", "1", "-c", "2048", "--swa-full"});
  START_SERVER(fresh, {"-m", SharedPath(kGemmaQ8), "-np", "1", "-c", "2048"});
  const std::vector<int> a = Tokens(300, 6);
  ASSERT_EQ(Complete(*srv, a, 8)["tokens"].size(), 8u);
  // Every layer holds every cell (the figures are published at the end of the scheduler's step: poll).
  json slot;
  double cells = 0, expect = 0;
  for (int i = 0; i < 200; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    slot = srv->Get("/slots").Json()[0];
    cells = slot["n_tokens"].get<double>();
    expect = 6 * 2 * std::ceil(cells * 128 / 4096) * 4096;
    if (cells > 0 && slot["memory"]["kv_committed_bytes"].get<double>() == expect) break;
  }
  EXPECT_EQ(slot["memory"]["kv_committed_bytes"].get<double>(), expect) << slot.dump();
  std::vector<int> branch(a.begin(), a.begin() + 100);
  for (int t : Tokens(50, 7)) branch.push_back(t);
  const json r = Complete(*srv, branch, 8);
  EXPECT_EQ(r["timings"]["cache_n"], 100) << r["timings"].dump();
  EXPECT_EQ(r["tokens"], Complete(*fresh, branch, 8, false)["tokens"]);
}

// n choices of one prompt share its computation where the window allows (KvCache::CopyCells) and compute
// their own where it moved on; either way, with greedy sampling, every choice is the single answer.
TEST(ServerWindow, ChoicesOfOnePromptAllGiveTheGreedyAnswer) {
  REQUIRE_SHARED_FILE(kGemmaQ8);
  START_SERVER(srv, {"-m", SharedPath(kGemmaQ8), "-np", "3", "-c", "3072"});
  const std::vector<int> prompt = Tokens(300, 5);
  const json one = Complete(*srv, prompt, 12, false);
  HttpResult r = srv->Post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"n", 3}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json choices = r.Json()["choices"];
  ASSERT_EQ(choices.size(), 3u);
  for (const json& c : choices) EXPECT_EQ(c["text"], one["content"]) << r.body;
}

// The Gemma chat template of ../shared/templates renders through the server and a chat completion runs on
// the model; the template's own refusal of a system turn comes back as a 400 naming it.
TEST(ServerWindow, GemmaChatTemplateRendersAndAnswers) {
  REQUIRE_SHARED_FILE(kGemmaQ8);
  REQUIRE_SHARED_FILE("templates/google-gemma-2-2b-it.jinja");
  START_SERVER(srv, {"-m", SharedPath(kGemmaQ8), "-np", "1", "-c", "1024", "--chat-template-file",
                     SharedPath("templates/google-gemma-2-2b-it.jinja")});
  const json messages = json::array({{{"role", "user"}, {"content", "Hello there"}},
                                     {{"role", "assistant"}, {"content", "Hi"}},
                                     {{"role", "user"}, {"content", "Tell me a story"}}});
  HttpResult r = srv->Post("/apply-template", {{"messages", messages}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string prompt = r.Json()["prompt"];
  EXPECT_NE(prompt.find("<start_of_turn>user\nHello there<end_of_turn>\n<start_of_turn>model\nHi<end_of_turn>\n"),
            std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("Tell me a story<end_of_turn>\n<start_of_turn>model\n"), std::string::npos) << prompt;
  r = srv->Post("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 8}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["usage"]["completion_tokens"], 8);
  r = srv->Post("/v1/chat/completions",
                {{"messages", json::array({{{"role", "system"}, {"content", "Be brief."}},
                                           {{"role", "user"}, {"content", "Hi"}}})},
                 {"max_tokens", 4}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("System role not supported"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace lazyslot::testing
