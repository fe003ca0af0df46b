// Shared prefix pages through the real server (KvCache::ShareCells, docs/decisions/0019): the n choices of one
// prompt, and conversations that start with one system prompt, map one copy of its KV, from an idle slot or
// from one still generating. They read exactly what copies would give (greedy text equal with
// --no-kv-share), /slots and /metrics count each shared page once, and a slot keeps its rows when the slot it
// mapped them from is reassigned to another conversation.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kQwen[] = "models/qwen3-tiny-q8_0.gguf";

std::vector<int> Tokens(int n, int salt) {
  std::vector<int> t;
  for (int i = 0; i < n; ++i) t.push_back(3 + (i * 53 + salt * 17) % 500);
  return t;
}

json Choices(ServerProcess& srv, const std::vector<int>& prompt, int n) {
  HttpResult r = srv.Post("/v1/completions",
                          {{"prompt", prompt}, {"n", n}, {"max_tokens", 8}, {"temperature", 0}, {"seed", 1}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.Json()["choices"] : json::array();
}

json Complete(ServerProcess& srv, const std::vector<int>& prompt, int id_slot) {
  HttpResult r = srv.Post("/completion", {{"prompt", prompt},
                                          {"n_predict", 8},
                                          {"temperature", 0},
                                          {"id_slot", id_slot},
                                          {"return_tokens", true}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.Json() : json::object();
}

TEST(ServerShare, ChoicesMapOnePromptAndReadWhatCopiesWould) {
  REQUIRE_SHARED_FILE(kQwen);
  START_SERVER(on, {"-m", SharedPath(kQwen), "-np", "4", "-c", "4096", "--metrics"});
  START_SERVER(off, {"-m", SharedPath(kQwen), "-np", "4", "-c", "4096", "--metrics", "--no-kv-share"});
  EXPECT_EQ(on->Get("/props").Json()["kv_share"], true);
  EXPECT_EQ(off->Get("/props").Json()["kv_share"], false);
  const std::vector<int> prompt = Tokens(600, 1);
  const json shared = Choices(*on, prompt, 4);
  const json copied = Choices(*off, prompt, 4);
  ASSERT_EQ(shared.size(), 4u);
  ASSERT_EQ(copied.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(shared[i]["text"], shared[0]["text"]) << "greedy choices agree";
    EXPECT_EQ(shared[i]["text"], copied[i]["text"]) << "choice " << i;
  }

  // The slots keep the prompt: three of them map the first one's whole pages (599 cells of 256-byte rows:
  // 37 pages of each of the 2 layers' K and V runs), and the distinct total counts them once.
  const json slots = on->Get("/slots").Json();
  uint64_t sum = 0, shared_sum = 0;
  int sharers = 0;
  for (const json& s : slots) {
    const json& m = s["memory"];
    sum += m["kv_committed_bytes"].get<uint64_t>();
    shared_sum += m["kv_shared_bytes"].get<uint64_t>();
    if (m["kv_shared_bytes"].get<uint64_t>() > 0) {
      ++sharers;
      EXPECT_EQ(m["kv_shared_bytes"], 37u * 4 * 4096) << m.dump();
    }
  }
  EXPECT_EQ(sharers, 3) << slots.dump();
  const std::string metrics = on->Get("/metrics").body;
  EXPECT_EQ(Metric(metrics, "lazyslot:kv_shared_bytes"), static_cast<double>(shared_sum));
  EXPECT_EQ(Metric(metrics, "lazyslot:kv_committed_bytes"), static_cast<double>(sum - shared_sum));
  EXPECT_EQ(Metric(metrics, "lazyslot:kv_resident_bytes"), static_cast<double>(sum - shared_sum));
  const std::string metrics_off = off->Get("/metrics").body;
  EXPECT_EQ(Metric(metrics_off, "lazyslot:kv_shared_bytes"), 0.0);
  EXPECT_EQ(Metric(metrics_off, "lazyslot:kv_committed_bytes"), static_cast<double>(sum));

  // Every slot now runs another conversation but one: whichever slot owned the pages hands them over, and
  // the remaining slot still continues the prompt as a fresh computation does.
  for (int id = 0; id < 3; ++id) Complete(*on, Tokens(300, 10 + id), id);
  const json again = Complete(*on, prompt, 3);
  EXPECT_GE(again["timings"]["cache_n"].get<int>(), 599) << again["timings"].dump();
  EXPECT_EQ(again["content"], Complete(*off, prompt, 3)["content"]);
  EXPECT_EQ(again["content"], shared[0]["text"]);
  const std::string after = on->Get("/metrics").body;
  EXPECT_EQ(Metric(after, "lazyslot:kv_shared_bytes"), 0.0);
  EXPECT_EQ(Metric(after, "lazyslot:kv_committed_bytes"), Metric(after, "lazyslot:kv_resident_bytes"));
}

std::vector<int> Cat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

json CompleteAny(ServerProcess& srv, const std::vector<int>& prompt, int n_predict = 8) {
  HttpResult r = srv.Post("/completion", {{"prompt", prompt}, {"n_predict", n_predict}, {"temperature", 0}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.Json() : json::object();
}

// Four conversations with one 600-token system prompt: each after the first maps the prompt's whole pages from
// a slot that holds it, into a slot of its own, and every conversation keeps its slot for its next turn.
TEST(ServerShare, ConversationsWithOneSystemPromptHoldItOnce) {
  REQUIRE_SHARED_FILE(kQwen);
  START_SERVER(on, {"-m", SharedPath(kQwen), "-np", "4", "-c", "4096", "--metrics"});
  START_SERVER(off, {"-m", SharedPath(kQwen), "-np", "4", "-c", "4096", "--metrics", "--no-kv-share"});
  const std::vector<int> system = Tokens(600, 1);
  std::vector<std::vector<int>> prompts;
  for (int i = 0; i < 4; ++i) prompts.push_back(Cat(system, Tokens(40, 100 + i)));
  std::vector<std::string> answers;
  for (int i = 0; i < 4; ++i) {
    const json a = CompleteAny(*on, prompts[i]);
    const json b = CompleteAny(*off, prompts[i]);
    EXPECT_EQ(a["content"], b["content"]) << "conversation " << i;
    EXPECT_EQ(a["timings"]["cache_n"], i == 0 ? 0 : 600) << a["timings"].dump();
    EXPECT_EQ(b["timings"]["cache_n"], i == 0 ? 0 : 600) << "a slot of the same conversation's prefix";
    answers.push_back(a["content"]);
  }
  const json slots = on->Get("/slots").Json();
  uint64_t sum = 0, shared_sum = 0;
  int sharers = 0;
  for (const json& s : slots) {
    const json& m = s["memory"];
    EXPECT_GE(m["n_cells"].get<int>(), 640) << "every conversation kept: " << slots.dump();
    sum += m["kv_committed_bytes"].get<uint64_t>();
    shared_sum += m["kv_shared_bytes"].get<uint64_t>();
    if (m["kv_shared_bytes"].get<uint64_t>() > 0) {
      ++sharers;
      EXPECT_EQ(m["kv_shared_bytes"], 37u * 4 * 4096) << m.dump();  // 600 cells of 256-byte rows, 4 runs
    }
  }
  EXPECT_EQ(sharers, 3);
  // Copies of the prefix would cost `sum`; it is held once. (Without sharing the conversations replace each
  // other's slots instead: each keeps its prefix only by taking over the last one's.)
  const std::string metrics = on->Get("/metrics").body;
  EXPECT_EQ(Metric(metrics, "lazyslot:kv_committed_bytes"), static_cast<double>(sum - shared_sum));
  EXPECT_EQ(Metric(metrics, "lazyslot:kv_resident_bytes"), static_cast<double>(sum - shared_sum));
  // Each conversation's next turn continues in its own slot, from everything it holds.
  const json next = CompleteAny(*on, Cat(prompts[2], Tokens(20, 7)));
  EXPECT_GE(next["timings"]["cache_n"].get<int>(), 640) << next["timings"].dump();
  EXPECT_EQ(next["content"], CompleteAny(*off, Cat(prompts[2], Tokens(20, 7)))["content"]);
}

// A request whose prefix a busy slot is still generating after maps what that slot has computed.
TEST(ServerShare, APrefixIsMappedFromASlotStillGenerating) {
  REQUIRE_SHARED_FILE(kQwen);
  START_SERVER(srv, {"-m", SharedPath(kQwen), "-np", "2", "-c", "2048"});
  const std::vector<int> system = Tokens(600, 3);
  json first;
  std::thread long_one([&] {
    HttpResult r = srv->Post("/completion", {{"prompt", Cat(system, Tokens(10, 1))},
                                             {"n_predict", 400},
                                             {"ignore_eos", true},
                                             {"temperature", 0}});
    first = r.Json();
  });
  bool seen_busy = false;
  for (int i = 0; i < 2000 && !seen_busy; ++i) {
    const json slots = srv->Get("/slots").Json();
    for (const json& s : slots) {
      seen_busy = seen_busy || (s["is_processing"] == true && s["n_tokens"].get<int>() > 610);
    }
    if (!seen_busy) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const json second = CompleteAny(*srv, Cat(system, Tokens(10, 2)));
  long_one.join();
  EXPECT_TRUE(seen_busy) << "the first request was seen generating";
  EXPECT_EQ(second["timings"]["cache_n"], 600) << second["timings"].dump();
  EXPECT_EQ(first["timings"]["predicted_n"], 400) << first.dump();
  // The same text as a server computing it alone.
  START_SERVER(alone, {"-m", SharedPath(kQwen), "-np", "1", "-c", "1024"});
  EXPECT_EQ(second["content"], CompleteAny(*alone, Cat(system, Tokens(10, 2)))["content"]);
}

// --kv-budget counts a mapped prefix once: beside a request that reserved most of the budget, a second request
// with the same 600-token prefix needs only its own pages and runs at once; without sharing it needs the whole
// prefix again and waits for the first to finish. The cache never holds more than the budget either way.
TEST(ServerShare, TheBudgetCountsAMappedPrefixOnce) {
  REQUIRE_SHARED_FILE(kQwen);
  // qwen3-tiny's KV: 4 runs of 256-byte rows, 16 rows a page. The first request (610 + 3,000 cells) reserves
  // 226 pages a run, 3,702,784 bytes; the second (618 cells) 39 pages a run, 638,976 bytes, of which 37 pages
  // a run (606,208 bytes) are the mapped prefix. 4 MiB leaves 491,520 bytes beside the first.
  const uint64_t budget = 4u << 20;
  const std::vector<int> system = Tokens(600, 5);
  for (const bool share : {true, false}) {
    SCOPED_TRACE(share ? "sharing" : "--no-kv-share");
    std::vector<std::string> args = {"-m", SharedPath(kQwen), "-np", "2", "-c", "8192", "--metrics",
                                     "--kv-budget", std::to_string(budget)};
    if (!share) args.push_back("--no-kv-share");
    START_SERVER(srv, args);
    json first;
    std::thread long_one([&] {
      first = srv->Post("/completion", {{"prompt", Cat(system, Tokens(10, 1))},
                                        {"n_predict", 3000},
                                        {"ignore_eos", true},
                                        {"temperature", 0}})
                  .Json();
    });
    bool generating = false;
    for (int i = 0; i < 5000 && !generating; ++i) {
      for (const json& s : srv->Get("/slots").Json()) {
        generating = generating || (s["is_processing"] == true && s["n_tokens"].get<int>() > 610);
      }
      if (!generating) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    const json second = CompleteAny(*srv, Cat(system, Tokens(10, 2)));
    // Who is still generating when the second answer is back.
    bool first_running = false;
    for (const json& s : srv->Get("/slots").Json()) first_running = first_running || s["is_processing"] == true;
    long_one.join();
    EXPECT_TRUE(generating);
    EXPECT_EQ(first["timings"]["predicted_n"], 3000) << first.dump().substr(0, 300);
    if (share) {
      EXPECT_TRUE(first_running) << "the second request ran beside the first";
      EXPECT_EQ(second["timings"]["cache_n"], 600) << second["timings"].dump();
    } else {
      EXPECT_FALSE(first_running) << "without sharing the second waited for the first's reservation";
    }
    const std::string metrics = srv->Get("/metrics").body;
    EXPECT_LE(Metric(metrics, "lazyslot:kv_peak_committed_bytes"), static_cast<double>(budget));
  }
}

// Requests that arrive together for one prefix (three prompts in one request, queued at once): one computes
// the prefix, the others wait for it and map it, and each answer is what a server without sharing gives.
TEST(ServerShare, RequestsArrivingTogetherComputeTheirPrefixOnce) {
  REQUIRE_SHARED_FILE(kQwen);
  START_SERVER(on, {"-m", SharedPath(kQwen), "-np", "3", "-c", "6144", "--metrics"});
  START_SERVER(off, {"-m", SharedPath(kQwen), "-np", "3", "-c", "6144", "--no-kv-share"});
  const std::vector<int> system = Tokens(900, 6);
  const json prompts = {Cat(system, Tokens(12, 1)), Cat(system, Tokens(12, 2)), Cat(system, Tokens(12, 3))};
  const json body = {{"prompt", prompts}, {"n_predict", 8}, {"temperature", 0}};
  HttpResult a = on->Post("/completion", body);
  HttpResult b = off->Post("/completion", body);
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(b.status, 200) << b.body;
  const json ra = a.Json(), rb = b.Json();
  ASSERT_TRUE(ra.is_array() && ra.size() == 3) << a.body.substr(0, 300);
  std::vector<int> cache_n;
  for (size_t i = 0; i < 3; ++i) {
    cache_n.push_back(ra[i]["timings"]["cache_n"].get<int>());
    EXPECT_EQ(ra[i]["content"], rb[i]["content"]) << "prompt " << i;
    EXPECT_EQ(rb[i]["timings"]["cache_n"], 0) << "without sharing each computes it";
  }
  std::sort(cache_n.begin(), cache_n.end());
  EXPECT_EQ(cache_n, (std::vector<int>{0, 900, 900})) << "one computed the prefix, two mapped it";
  EXPECT_EQ(Metric(on->Get("/metrics").body, "lazyslot:prompt_tokens_cached_total"), 1800.0);
}

json CompleteSalted(ServerProcess& srv, const std::vector<int>& prompt, const std::string& salt, int id_slot = -1) {
  json body = {{"prompt", prompt}, {"n_predict", 8}, {"temperature", 0}, {"id_slot", id_slot}};
  if (!salt.empty()) body["cache_salt"] = salt;
  HttpResult r = srv.Post("/completion", body);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.Json() : json::object();
}

// cache_salt (vLLM's field) scopes reuse and sharing: a prompt prefix held for one salt is neither mapped nor
// reused for another salt or for none, so a client cannot learn through cache_n (or speed) what others sent.
// A request of the same salt maps it. The answers are the same either way. Malformed salts, and the engine's
// own sharing fields, get a 400.
TEST(ServerShare, ACacheSaltKeepsPrefixesApart) {
  REQUIRE_SHARED_FILE(kQwen);
  START_SERVER(srv, {"-m", SharedPath(kQwen), "-np", "4", "-c", "8192"});
  const std::vector<int> system = Tokens(600, 8);
  const json alice = CompleteSalted(*srv, Cat(system, Tokens(10, 1)), "alice");
  EXPECT_EQ(alice["timings"]["cache_n"], 0);
  const int alice_slot = alice["id_slot"].get<int>();
  const json bob = CompleteSalted(*srv, Cat(system, Tokens(10, 2)), "bob");
  EXPECT_EQ(bob["timings"]["cache_n"], 0) << "alice's prefix is not bob's to map";
  const json none = CompleteSalted(*srv, Cat(system, Tokens(10, 3)), "");
  EXPECT_EQ(none["timings"]["cache_n"], 0) << "nor an unsalted request's";
  const json alice2 = CompleteSalted(*srv, Cat(system, Tokens(10, 5)), "alice");
  EXPECT_EQ(alice2["timings"]["cache_n"], 600) << "the same salt maps it";
  const json bob2 = CompleteSalted(*srv, Cat(system, Tokens(10, 5)), "bob");
  EXPECT_EQ(bob2["timings"]["cache_n"], 600) << "bob's own prefix";
  EXPECT_EQ(alice2["content"], bob2["content"]) << "the salt changes what is reused, never the answer";
  const json eve = CompleteSalted(*srv, Cat(system, Tokens(10, 4)), "eve", alice_slot);
  EXPECT_EQ(eve["timings"]["cache_n"], 0) << "nor reused by naming alice's slot";
  for (const char* route : {"/completion", "/v1/completions", "/v1/chat/completions"}) {
    for (const json& bad : {json(""), json(17), json(std::string(1025, 'x')), json::array({"a"})}) {
      json body = {{"cache_salt", bad}, {"max_tokens", 2}};
      if (std::string(route) == "/v1/chat/completions") {
        body["messages"] = json::array({{{"role", "user"}, {"content", "hi"}}});
      } else {
        body["prompt"] = "hi";
      }
      HttpResult r = srv->Post(route, body);
      EXPECT_EQ(r.status, 400) << route << " " << bad.dump().substr(0, 20) << ": " << r.body;
      EXPECT_NE(r.body.find("cache_salt"), std::string::npos) << r.body;
    }
  }
  // The engine's own sharing controls are not request fields.
  for (const char* field : {"cache_scope", "share_prompt_of"}) {
    HttpResult r = srv->Post("/completion", {{"prompt", "hi"}, {field, 1}, {"n_predict", 2}});
    EXPECT_EQ(r.status, 400) << field << ": " << r.body;
    EXPECT_NE(r.body.find(field), std::string::npos) << r.body;
  }
  EXPECT_EQ(srv->Get("/health").status, 200);
}

}  // namespace
}  // namespace lazyslot::testing
