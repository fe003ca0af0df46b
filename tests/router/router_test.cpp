// The router with real models: autoload and its status transitions, one load for many concurrent callers,
// models_max eviction (least recently used idle model, never a leased one), no-autoload refusals, unknown
// ids, Load/Unload (waiting for leases, then letting the engine drain), per-model settings, an embedding and
// a chat model side by side, two models generating at once on the shared pool, and ReleaseIdle.
#include "router/router.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "router_test_util.h"

namespace lazyslot {
namespace {

using namespace std::chrono_literals;
using testing::FindInfo;
using testing::Generate;
using testing::MakeRouter;
using testing::StatusOf;
using testing::TempModelsDir;

#define REQUIRE_ROUTER_MODELS()                      \
  REQUIRE_SHARED_FILE("models/stories260K.gguf");    \
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf"); \
  REQUIRE_SHARED_FILE("models/qwen2-tiny-f32.gguf"); \
  REQUIRE_SHARED_FILE("models/bert-tiny-f32.gguf")

// Records status changes; can hold one model's load (in its kLoading callback) until released.
struct StatusLog {
  std::mutex mu;
  std::vector<std::pair<std::string, ModelStatus>> events;
  std::string hold_id;
  std::promise<void> entered, release;
  std::atomic<bool> entered_set{false};

  void On(const std::string& id, ModelStatus s) {
    {
      std::lock_guard<std::mutex> lock(mu);
      events.emplace_back(id, s);
    }
    if (s == ModelStatus::kLoading && id == hold_id && !entered_set.exchange(true)) {
      entered.set_value();
      release.get_future().wait();
    }
  }
  std::vector<ModelStatus> For(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<ModelStatus> out;
    for (auto& [i, s] : events) {
      if (i == id) out.push_back(s);
    }
    return out;
  }
};

TEST(RouterTest, AcquireLoadsOnDemandOnceForConcurrentCallers) {
  REQUIRE_ROUTER_MODELS();
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "story.gguf");
  dir.Link("qwen3-tiny-f32.gguf", "qwen.gguf");
  StatusLog log;
  log.hold_id = "qwen";
  RouterConfig cfg = testing::DirConfig(dir.path());
  cfg.on_status = [&log](const std::string& id, ModelStatus s) { log.On(id, s); };
  auto router = MakeRouter(cfg);
  ASSERT_TRUE(router);
  EXPECT_EQ(StatusOf(*router, "qwen"), ModelStatus::kUnloaded);
  EXPECT_EQ(router->List().size(), 2u);

  constexpr int kCallers = 6;
  std::vector<Result<ModelLease>> leases;
  leases.reserve(kCallers);
  for (int i = 0; i < kCallers; ++i) leases.emplace_back(Internal("not run"));
  std::vector<std::thread> threads;
  threads.emplace_back([&] { leases[0] = router->Acquire("qwen"); });
  ASSERT_EQ(log.entered.get_future().wait_for(30s), std::future_status::ready);
  // The first caller is inside the load: the model shows as loading and the others wait for that load.
  EXPECT_EQ(StatusOf(*router, "qwen"), ModelStatus::kLoading);
  for (int i = 1; i < kCallers; ++i) threads.emplace_back([&, i] { leases[i] = router->Acquire("qwen"); });
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(StatusOf(*router, "qwen"), ModelStatus::kLoading);
  log.release.set_value();
  for (auto& t : threads) t.join();

  for (int i = 0; i < kCallers; ++i) {
    ASSERT_TRUE(leases[i].ok()) << leases[i].status().ToString();
    EXPECT_EQ(&leases[i]->engine(), &leases[0]->engine());
  }
  EXPECT_EQ(log.For("qwen"), (std::vector<ModelStatus>{ModelStatus::kLoading, ModelStatus::kLoaded}));
  Result<ModelInfo> info = router->Info("qwen");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->status, ModelStatus::kLoaded);
  EXPECT_EQ(info->loads, 1u);
  EXPECT_EQ(info->leases, kCallers);
  EXPECT_GT(info->loaded_since_ms, 0);
  EXPECT_GT(info->weights_mapped_bytes, 0u);
  EXPECT_GT(info->kv_reserved_bytes, 0u);
  EXPECT_FALSE(info->failed);
  EXPECT_FALSE(Generate(*leases[0]).empty());
  leases.clear();
  EXPECT_EQ(router->Info("qwen")->leases, 0);
  EXPECT_EQ(StatusOf(*router, "story"), ModelStatus::kUnloaded);  // never asked for
  // Every model's engine runs on the router's one pool.
  Result<ModelLease> l = router->Acquire("story");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->engine().config().compute.get(), router->compute().get());
  EXPECT_EQ(router->compute()->pool.n_threads(), 2);
}

TEST(RouterTest, ModelsMaxEvictsTheLeastRecentlyUsedIdleModelNeverALeasedOne) {
  REQUIRE_ROUTER_MODELS();
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "a.gguf");
  dir.Link("qwen3-tiny-f32.gguf", "b.gguf");
  dir.Link("qwen2-tiny-f32.gguf", "c.gguf");
  RouterConfig cfg = testing::DirConfig(dir.path(), /*models_max=*/2);
  cfg.max_wait_s = 0.3;
  auto router = MakeRouter(cfg);
  ASSERT_TRUE(router);
  ASSERT_TRUE(router->Acquire("a").ok());
  ASSERT_TRUE(router->Acquire("b").ok());
  ASSERT_TRUE(router->Acquire("a").ok());  // b is now the least recently used
  ASSERT_TRUE(router->Acquire("c").ok());
  EXPECT_EQ(StatusOf(*router, "a"), ModelStatus::kLoaded);
  EXPECT_EQ(StatusOf(*router, "b"), ModelStatus::kUnloaded);
  EXPECT_EQ(StatusOf(*router, "c"), ModelStatus::kLoaded);

  // Both loaded models leased: nothing may be evicted; after max_wait_s a clear 503 with the figures.
  Result<ModelLease> la = router->Acquire("a");
  Result<ModelLease> lc = router->Acquire("c");
  ASSERT_TRUE(la.ok() && lc.ok());
  const auto t0 = std::chrono::steady_clock::now();
  Result<ModelLease> lb = router->Acquire("b");
  ASSERT_FALSE(lb.ok());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms);
  EXPECT_EQ(lb.status().code(), Code::kUnavailable);
  EXPECT_NE(lb.status().message().find("--models-max 2"), std::string::npos) << lb.status().message();
  EXPECT_NE(lb.status().message().find("a: 1 request(s), c: 1 request(s)"), std::string::npos)
      << lb.status().message();
  EXPECT_EQ(StatusOf(*router, "a"), ModelStatus::kLoaded);
  EXPECT_EQ(StatusOf(*router, "c"), ModelStatus::kLoaded);
  EXPECT_FALSE(Generate(*la).empty());

  // A waiting Acquire takes the model freed while it waits: c is released, so c goes and b comes.
  router.reset();
  cfg.max_wait_s = 30;
  router = MakeRouter(cfg);
  ASSERT_TRUE(router);
  la = router->Acquire("a");
  lc = router->Acquire("c");
  ASSERT_TRUE(la.ok() && lc.ok());
  std::thread releaser([&] {
    std::this_thread::sleep_for(200ms);
    lc->Release();
  });
  lb = router->Acquire("b");
  releaser.join();
  ASSERT_TRUE(lb.ok()) << lb.status().ToString();
  EXPECT_EQ(StatusOf(*router, "a"), ModelStatus::kLoaded);
  EXPECT_EQ(StatusOf(*router, "b"), ModelStatus::kLoaded);
  EXPECT_EQ(StatusOf(*router, "c"), ModelStatus::kUnloaded);
  EXPECT_FALSE(Generate(*la).empty());
  EXPECT_FALSE(Generate(*lb).empty());
}

TEST(RouterTest, WithoutAutoloadAnUnloadedModelIsRefused) {
  REQUIRE_ROUTER_MODELS();
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "story.gguf");
  RouterConfig cfg = testing::DirConfig(dir.path());
  cfg.autoload = false;
  auto router = MakeRouter(cfg);
  ASSERT_TRUE(router);
  Result<ModelLease> l = router->Acquire("story");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), Code::kInvalidArgument);
  EXPECT_NE(l.status().message().find("'story' is not loaded"), std::string::npos) << l.status().message();
  EXPECT_NE(l.status().message().find("/models/load"), std::string::npos) << l.status().message();
  EXPECT_EQ(StatusOf(*router, "story"), ModelStatus::kUnloaded);
  EXPECT_TRUE(router->Acquire("story", /*autoload=*/true).ok());  // per request, as ?autoload=true
  ASSERT_TRUE(router->Unload("story").ok());
  ASSERT_TRUE(router->Load("story").ok());
  l = router->Acquire("story");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_FALSE(Generate(*l).empty());
}

TEST(RouterTest, UnknownIdListsTheKnownOnes) {
  REQUIRE_ROUTER_MODELS();
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "story.gguf");
  dir.Link("qwen3-tiny-f32.gguf", "qwen.gguf");
  auto router = MakeRouter(testing::DirConfig(dir.path()));
  ASSERT_TRUE(router);
  for (const std::string& name : {std::string("gpt-4"), std::string("")}) {
    Result<ModelLease> l = router->Acquire(name);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.status().code(), Code::kNotFound);
    EXPECT_NE(l.status().message().find("model '" + name + "' not found; known models: qwen, story"),
              std::string::npos)
        << l.status().message();
  }
  EXPECT_EQ(router->Load("gpt-4").code(), Code::kNotFound);
  EXPECT_EQ(router->Unload("gpt-4").code(), Code::kNotFound);
  EXPECT_EQ(router->ReleaseIdle("gpt-4", false).status().code(), Code::kNotFound);
  EXPECT_EQ(router->Info("gpt-4").status().code(), Code::kNotFound);
}

TEST(RouterTest, LoadAndUnload) {
  REQUIRE_ROUTER_MODELS();
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "story.gguf");
  RouterConfig cfg = testing::DirConfig(dir.path());
  cfg.stop_timeout_s = 10;
  auto router = MakeRouter(cfg);
  ASSERT_TRUE(router);
  ASSERT_TRUE(router->Load("story").ok());
  EXPECT_EQ(StatusOf(*router, "story"), ModelStatus::kLoaded);
  Status again = router->Load("story");
  EXPECT_EQ(again.code(), Code::kInvalidArgument);
  EXPECT_NE(again.message().find("already loaded"), std::string::npos);
  ASSERT_TRUE(router->Unload("story").ok());
  EXPECT_EQ(StatusOf(*router, "story"), ModelStatus::kUnloaded);
  Status not_loaded = router->Unload("story");
  EXPECT_EQ(not_loaded.code(), Code::kInvalidArgument);
  EXPECT_NE(not_loaded.message().find("not loaded"), std::string::npos);

  // Unload waits for a running request's lease to end.
  Result<ModelLease> l = router->Acquire("story");
  ASSERT_TRUE(l.ok());
  const std::vector<TokenId> want = Generate(*l, 16);
  std::thread releaser([&] {
    std::this_thread::sleep_for(300ms);
    l->Release();
  });
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(router->Unload("story").ok());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms);
  releaser.join();
  EXPECT_EQ(StatusOf(*router, "story"), ModelStatus::kUnloaded);
  EXPECT_EQ(router->draining(), 0);
  EXPECT_EQ(router->Info("story")->loads, 2u);

  // Past the stop timeout the router lets go; the lease's engine keeps serving until it is released.
  router.reset();
  cfg.stop_timeout_s = 0.2;
  router = MakeRouter(cfg);
  ASSERT_TRUE(router);
  l = router->Acquire("story");
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE(router->Unload("story").ok());
  EXPECT_EQ(StatusOf(*router, "story"), ModelStatus::kUnloaded);
  EXPECT_EQ(router->draining(), 1);
  EXPECT_EQ(Generate(*l, 16), want);
  l->Release();
  EXPECT_EQ(router->draining(), 0);
  // The next Acquire loads a fresh engine.
  l = router->Acquire("story");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(Generate(*l, 16), want);
}

TEST(RouterTest, PresetSettingsAliasesAndLoadOnStartup) {
  REQUIRE_ROUTER_MODELS();
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "story.gguf");
  dir.Link("qwen3-tiny-f32.gguf", "qwen.gguf");
  const std::string ini = dir.Write("p.ini",
                                    "[*]\nctx-size = 128\n\n[qwen]\nalias = q\nctx-size = 512\nparallel = 2\n"
                                    "load-on-startup = true\n");
  RouterConfig cfg = testing::DirConfig(dir.path(), /*models_max=*/1);
  cfg.sources.preset_path = ini;
  auto router = MakeRouter(cfg);
  ASSERT_TRUE(router);
  EXPECT_EQ(StatusOf(*router, "qwen"), ModelStatus::kLoaded);  // loaded at start
  EXPECT_EQ(StatusOf(*router, "story"), ModelStatus::kUnloaded);
  Result<ModelLease> q = router->Acquire("q");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->id(), "qwen");
  EXPECT_EQ(q->engine().config().n_ctx, 512);
  EXPECT_EQ(q->engine().config().n_parallel, 2);
  EXPECT_EQ(q->engine().n_ctx_slot(), 256);
  q->Release();
  Result<ModelLease> s = router->Acquire("story");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->engine().config().n_ctx, 128);     // [*]
  EXPECT_EQ(s->engine().config().n_parallel, 1);  // the base
  Result<ModelInfo> info = router->Info("q");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->id, "qwen");
  EXPECT_EQ(info->aliases, std::vector<std::string>{"q"});
  EXPECT_EQ(info->config.n_ctx, 512);
  EXPECT_TRUE(info->load_on_startup);
  EXPECT_EQ(info->source, ModelSource::kPreset);

  // More load-on-startup models than --models-max: refused at start, as llama-server.
  const std::string two = dir.Write("two.ini", "[qwen]\nload-on-startup = 1\n[story]\nload-on-startup = 1\n");
  cfg.sources.preset_path = two;
  Result<std::unique_ptr<Router>> bad = Router::Create(cfg);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("2 models have load-on-startup but --models-max is 1"),
            std::string::npos)
      << bad.status().message();
}

TEST(RouterTest, EmbeddingAndChatModelsServeSideBySide) {
  REQUIRE_ROUTER_MODELS();
  TempModelsDir dir;
  const std::string ini =
      dir.Write("p.ini", "[emb]\nmodel = " + testing::SharedPath("models/bert-tiny-f32.gguf") +
                             "\nembeddings = true\nctx-size = 512\n\n[chat]\nmodel = " +
                             testing::SharedPath("models/qwen3-tiny-f32.gguf") + "\n");
  RouterConfig cfg;
  cfg.base = testing::SmallBase();
  cfg.sources.preset_path = ini;
  cfg.n_threads = 2;
  auto router = MakeRouter(cfg);
  ASSERT_TRUE(router);
  Result<ModelLease> emb = router->Acquire("emb");
  Result<ModelLease> chat = router->Acquire("chat");
  ASSERT_TRUE(emb.ok()) << emb.status().ToString();
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  EXPECT_TRUE(emb->engine().config().embeddings);
  EXPECT_FALSE(chat->engine().config().embeddings);

  Result<std::vector<TokenId>> tokens = emb->engine().tokenizer().Tokenize("hello world", true, false);
  ASSERT_TRUE(tokens.ok());
  GenerationRequest r;
  r.prompt = *tokens;
  r.embedding = true;
  auto stream = emb->engine().Submit(r);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  std::vector<TokenId> generated;
  std::thread chat_thread([&] { generated = Generate(*chat, 16); });
  testing::Collected e = testing::Drain(**stream);
  chat_thread.join();
  ASSERT_FALSE(e.error) << e.done.error.ToString();
  EXPECT_EQ(static_cast<int>(e.done.embedding.size()), emb->engine().model().hparams().n_embd);
  EXPECT_EQ(generated.size(), 16u);
}

TEST(RouterTest, TwoModelsGeneratingAtOnceGiveTheirSoloTokens) {
  REQUIRE_ROUTER_MODELS();
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "story.gguf");
  dir.Link("qwen3-tiny-f32.gguf", "qwen.gguf");
  auto router = MakeRouter(testing::DirConfig(dir.path()));
  ASSERT_TRUE(router);
  Result<ModelLease> a = router->Acquire("story");
  Result<ModelLease> b = router->Acquire("qwen");
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<TokenId> solo_a = Generate(*a, 48), solo_b = Generate(*b, 48);
  ASSERT_EQ(solo_a.size(), 48u);
  ASSERT_EQ(solo_b.size(), 48u);
  for (int round = 0; round < 2; ++round) {
    std::vector<TokenId> ga, gb;
    std::thread ta([&] { ga = Generate(*a, 48); });
    std::thread tb([&] { gb = Generate(*b, 48); });
    ta.join();
    tb.join();
    EXPECT_EQ(ga, solo_a);
    EXPECT_EQ(gb, solo_b);
  }
  // And the same as an engine of its own, outside any router.
  EngineConfig own = testing::SmallBase();
  own.model_path = testing::SharedPath("models/qwen3-tiny-f32.gguf");
  own.n_threads = 1;
  Result<std::unique_ptr<Engine>> e = Engine::Create(own);
  ASSERT_TRUE(e.ok());
  auto prompt = (*e)->tokenizer().Tokenize("Once upon a time", true, false);
  EXPECT_EQ(testing::Drain(**(*e)->Submit(testing::Greedy(*prompt, 48))).tokens, solo_b);
}

TEST(RouterTest, ReleaseIdleLeastRecentlyUsedFirstAndSleepingWakes) {
  REQUIRE_ROUTER_MODELS();
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "story.gguf");
  dir.Link("qwen3-tiny-f32.gguf", "qwen.gguf");
  auto router = MakeRouter(testing::DirConfig(dir.path()));
  ASSERT_TRUE(router);
  std::vector<TokenId> want_story;
  {
    Result<ModelLease> s = router->Acquire("story");
    ASSERT_TRUE(s.ok());
    want_story = Generate(*s, 16);
  }
  {
    Result<ModelLease> q = router->Acquire("qwen");
    ASSERT_TRUE(q.ok());
    Generate(*q, 16);
  }
  EXPECT_GT(router->Info("qwen")->kv_committed_bytes, 0u);  // kept for prompt reuse
  EXPECT_EQ(router->ReleaseIdle("", false).ok(), true);     // KV and scratch only: still loaded
  EXPECT_EQ(StatusOf(*router, "qwen"), ModelStatus::kLoaded);
  EXPECT_EQ(router->Info("qwen")->kv_committed_bytes, 0u);

  // One byte is enough: only the least recently used model (story) goes to sleep.
  Result<uint64_t> one = router->ReleaseIdle("", /*weights=*/true, /*enough_bytes=*/1);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_GT(*one, 0u);
  EXPECT_EQ(StatusOf(*router, "story"), ModelStatus::kSleeping);
  EXPECT_EQ(StatusOf(*router, "qwen"), ModelStatus::kLoaded);
  Result<uint64_t> by_id = router->ReleaseIdle("qwen", /*weights=*/true);
  ASSERT_TRUE(by_id.ok());
  EXPECT_GT(*by_id, 0u);
  EXPECT_EQ(StatusOf(*router, "qwen"), ModelStatus::kSleeping);
  EXPECT_LT(router->Info("qwen")->weights_resident_bytes, 64u * 1024);

  // A request wakes a sleeping model and it answers the same.
  Result<ModelLease> s = router->Acquire("story");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Generate(*s, 16), want_story);
  EXPECT_TRUE(testing::WaitForStatus(*router, "story", ModelStatus::kLoaded));
  EXPECT_EQ(router->Info("story")->loads, 1u);  // woken, not reloaded
}

TEST(RouterTest, ConcurrentCallersNeverPassModelsMax) {
  REQUIRE_ROUTER_MODELS();
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "a.gguf");
  dir.Link("qwen3-tiny-f32.gguf", "b.gguf");
  dir.Link("qwen2-tiny-f32.gguf", "c.gguf");
  std::atomic<int> live{0}, peak{0}, loads{0};
  RouterConfig cfg = testing::DirConfig(dir.path(), /*models_max=*/2);
  cfg.on_status = [&](const std::string&, ModelStatus s) {
    if (s == ModelStatus::kLoaded) {
      ++loads;
      const int now = ++live;
      int p = peak.load();
      while (now > p && !peak.compare_exchange_weak(p, now)) {
      }
    } else if (s == ModelStatus::kUnloaded) {
      --live;
    }
  };
  auto router = MakeRouter(cfg);
  ASSERT_TRUE(router);
  const std::vector<std::string> ids = {"a", "b", "c"};
  std::atomic<int> list_over{0}, unexpected{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      uint32_t rng = 12345u + 7919u * t;
      auto next = [&] { return rng = rng * 1664525u + 1013904223u, (rng >> 8); };
      for (int i = 0; i < 12; ++i) {
        const std::string& id = ids[next() % ids.size()];
        switch (next() % 10) {
          case 6: {
            int running = 0;
            for (const ModelInfo& m : router->List()) running += m.status != ModelStatus::kUnloaded;
            if (running > 2) ++list_over;
            break;
          }
          case 7:
            if (!router->ReleaseIdle("", next() % 2 == 0).ok()) ++unexpected;
            break;
          case 8: {
            Result<ReloadResult> r = router->Reload();
            if (!r.ok() || !r->changed.empty() || !r->removed.empty()) ++unexpected;
            break;
          }
          case 9: {
            Status s = router->Unload(id);
            if (!s.ok() && s.code() != Code::kInvalidArgument) ++unexpected;
            break;
          }
          default: {
            Result<ModelLease> l = router->Acquire(id);
            if (!l.ok()) {
              ADD_FAILURE() << l.status().ToString();
              break;
            }
            if (i % 3 == 0 && Generate(*l, 2).size() != 2u) ++unexpected;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(peak.load(), 2);
  EXPECT_GE(loads.load(), 2);
  EXPECT_EQ(list_over.load(), 0);
  EXPECT_EQ(unexpected.load(), 0);
  int running = 0;
  for (const ModelInfo& m : router->List()) {
    running += m.status != ModelStatus::kUnloaded;
    EXPECT_EQ(m.leases, 0) << m.id;
    EXPECT_FALSE(m.failed) << m.id;
  }
  EXPECT_LE(running, 2);
  EXPECT_EQ(live.load(), running);
}

}  // namespace
}  // namespace lazyslot
