// The router and the files under it: a model file deleted, truncated or replaced while listed gives that
// model's requests a clear error (until a rescan) while the other models keep serving; a file that fails to
// load is listed as failed with the loader's message and retried by the next request; rescans add, remove
// and relist models.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "router/router.h"
#include "router_test_util.h"

namespace lazyslot {
namespace {

namespace fs = std::filesystem;
using testing::Generate;
using testing::MakeRouter;
using testing::StatusOf;
using testing::TempModelsDir;

bool Contains(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

TEST(RouterFilesTest, ChangedFilesFailOnlyTheirModel) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  REQUIRE_SHARED_FILE("models/qwen2-tiny-f32.gguf");
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "story.gguf");
  const std::string gone = dir.Copy("qwen3-tiny-f32.gguf", "gone.gguf");
  const std::string cut = dir.Copy("qwen3-tiny-f32.gguf", "cut.gguf");
  const std::string swapped = dir.Copy("qwen3-tiny-f32.gguf", "swapped.gguf");
  auto router = MakeRouter(testing::DirConfig(dir.path()));
  ASSERT_TRUE(router);
  for (const char* id : {"story", "gone", "cut", "swapped"}) ASSERT_TRUE(router->Load(id).ok()) << id;
  std::vector<TokenId> want_story, want_qwen;
  {
    Result<ModelLease> s = router->Acquire("story");
    Result<ModelLease> q = router->Acquire("swapped");
    ASSERT_TRUE(s.ok() && q.ok());
    want_story = Generate(*s, 16);
    want_qwen = Generate(*q, 16);
  }
  // A request is running on "swapped" when its file is replaced (a new file renamed over it).
  Result<ModelLease> running = router->Acquire("swapped");
  ASSERT_TRUE(running.ok());

  fs::remove(gone);
  fs::resize_file(cut, fs::file_size(cut) / 2);
  dir.Copy("qwen2-tiny-f32.gguf", "incoming.tmp");
  fs::rename(dir.Path("incoming.tmp"), swapped);

  auto story_still_serves = [&] {
    Result<ModelLease> s = router->Acquire("story");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(Generate(*s, 16), want_story);
  };

  Result<ModelLease> l = router->Acquire("gone");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), Code::kNotFound);
  EXPECT_TRUE(Contains(l.status(), "model 'gone': its file " + gone +
                                       " is gone (No such file or directory) "
                                       "since it was loaded; /models?reload=1 rescans"))
      << l.status().message();
  story_still_serves();

  l = router->Acquire("cut");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), Code::kCorrupt);
  EXPECT_TRUE(Contains(l.status(), "was truncated")) << l.status().message();
  EXPECT_TRUE(Contains(l.status(), "/models?reload=1 rescans")) << l.status().message();
  story_still_serves();

  l = router->Acquire("swapped");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), Code::kCorrupt);
  EXPECT_TRUE(Contains(l.status(), "was replaced")) << l.status().message();
  story_still_serves();

  // The errors stay until a rescan (no reload of a file that changed under the server's feet).
  EXPECT_EQ(router->Acquire("cut").status().code(), Code::kCorrupt);
  EXPECT_EQ(router->Load("cut").code(), Code::kCorrupt);
  for (const char* id : {"gone", "cut", "swapped"}) {
    Result<ModelInfo> m = router->Info(id);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->status, ModelStatus::kUnloaded) << id;
    EXPECT_TRUE(m->failed) << id;
    EXPECT_TRUE(Contains(m->last_error, "since it was loaded")) << id << ": " << m->last_error.message();
    EXPECT_EQ(m->loads, 1u) << id;
  }
  EXPECT_EQ(StatusOf(*router, "story"), ModelStatus::kLoaded);

  // The request that was running keeps its engine (the old file stays mapped) and finishes normally.
  EXPECT_EQ(router->draining(), 1);
  EXPECT_EQ(Generate(*running, 16), want_qwen);
  running->Release();
  EXPECT_EQ(router->draining(), 0);

  // The rescan drops the deleted model and relists the other two; the replaced one loads its new file, the
  // truncated one now fails in the loader, with its message, and is retried by the next request.
  Result<ReloadResult> r = router->Reload();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->removed, std::vector<std::string>{"gone"});
  EXPECT_EQ(r->changed, (std::vector<std::string>{"cut", "swapped"}));
  EXPECT_TRUE(r->added.empty());
  EXPECT_TRUE(r->unloaded.empty());  // they were unloaded when their change was found
  Result<ModelLease> removed = router->Acquire("gone");
  EXPECT_EQ(removed.status().code(), Code::kNotFound);
  EXPECT_TRUE(Contains(removed.status(), "model 'gone' not found (removed by a rescan: its file " + gone +
                                             " is gone); known models: cut, story, swapped"))
      << removed.status().message();
  Result<ModelLease> fresh = router->Acquire("swapped");
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->engine().model().hparams().arch, "qwen2");
  EXPECT_FALSE(Generate(*fresh, 8).empty());
  Result<ModelLease> broken = router->Acquire("cut");
  ASSERT_FALSE(broken.ok());
  EXPECT_TRUE(Contains(broken.status(), "model 'cut' (" + cut + ") failed to load: "))
      << broken.status().message();
  Result<ModelInfo> m = router->Info("cut");
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->failed);
  EXPECT_EQ(m->load_failures, 1u);
  EXPECT_EQ(m->last_error.message(), broken.status().message());
  story_still_serves();
}

TEST(RouterFilesTest, AFileThatFailsToLoadIsRetriedByTheNextRequest) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "story.gguf");
  const std::string bad = dir.Copy("qwen3-tiny-f32.gguf", "bad.gguf");
  fs::resize_file(bad, 5000);  // a GGUF header, tensors missing
  const std::string junk = dir.Write("junk.gguf", "this is not a GGUF file at all");
  auto router = MakeRouter(testing::DirConfig(dir.path(), /*models_max=*/1));
  ASSERT_TRUE(router);
  for (const std::string& id : {std::string("bad"), std::string("junk")}) {
    for (uint64_t attempt = 1; attempt <= 2; ++attempt) {
      Result<ModelLease> l = router->Acquire(id);
      ASSERT_FALSE(l.ok()) << id;
      EXPECT_TRUE(
          Contains(l.status(), "model '" + id + "' (" + dir.Path(id + ".gguf") + ") failed to load: "))
          << l.status().message();
      Result<ModelInfo> m = router->Info(id);
      ASSERT_TRUE(m.ok());
      EXPECT_EQ(m->status, ModelStatus::kUnloaded);
      EXPECT_TRUE(m->failed);
      EXPECT_EQ(m->last_error.message(), l.status().message());
      EXPECT_EQ(m->load_failures, attempt);
    }
  }
  // A failed load held no place under --models-max 1.
  Result<ModelLease> s = router->Acquire("story");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(Generate(*s).empty());
  EXPECT_FALSE(router->Info("story")->failed);
}

TEST(RouterFilesTest, FileChangedBeforeTheFirstLoadIsNoticedToo) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  TempModelsDir dir;
  const std::string p = dir.Copy("qwen3-tiny-f32.gguf", "m.gguf");
  auto router = MakeRouter(testing::DirConfig(dir.path()));
  ASSERT_TRUE(router);
  fs::resize_file(p, 1000);
  Result<ModelLease> l = router->Acquire("m");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), Code::kCorrupt);
  EXPECT_TRUE(Contains(l.status(), "since it was listed")) << l.status().message();
  // Put back and rescan: it loads.
  dir.Copy("qwen3-tiny-f32.gguf", "m.gguf");
  ASSERT_TRUE(router->Reload().ok());
  l = router->Acquire("m");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_FALSE(Generate(*l).empty());
}

TEST(RouterFilesTest, RescanAddsAndRemovesModels) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  TempModelsDir dir;
  const std::string story = dir.Link("stories260K.gguf", "story.gguf");
  auto router = MakeRouter(testing::DirConfig(dir.path()));
  ASSERT_TRUE(router);
  ASSERT_TRUE(router->Load("story").ok());

  Result<ReloadResult> r = router->Reload();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->added.empty() && r->removed.empty() && r->changed.empty());
  EXPECT_EQ(StatusOf(*router, "story"), ModelStatus::kLoaded);  // unchanged: kept loaded
  EXPECT_EQ(router->Info("story")->loads, 1u);

  EXPECT_EQ(router->Acquire("qwen").status().code(), Code::kNotFound);
  dir.Link("qwen3-tiny-f32.gguf", "qwen.gguf");
  r = router->Reload();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->added, std::vector<std::string>{"qwen"});
  Result<ModelLease> q = router->Acquire("qwen");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_FALSE(Generate(*q).empty());

  fs::remove(story);
  r = router->Reload();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->removed, std::vector<std::string>{"story"});
  EXPECT_EQ(r->unloaded, std::vector<std::string>{"story"});
  Result<ModelLease> s = router->Acquire("story");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kNotFound);
  EXPECT_TRUE(Contains(s.status(), "known models: qwen")) << s.status().message();
  ASSERT_EQ(router->List().size(), 1u);
  EXPECT_EQ(router->List()[0].id, "qwen");
  EXPECT_FALSE(Generate(*q).empty());  // the other model was not disturbed

  // A rescan that cannot read the directory changes nothing.
  q->Release();
  const std::string moved = dir.path() + "-moved";
  fs::rename(dir.path(), moved);
  r = router->Reload();
  fs::rename(moved, dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status(), "rescan failed")) << r.status().message();
  EXPECT_EQ(router->List().size(), 1u);
  EXPECT_EQ(StatusOf(*router, "qwen"), ModelStatus::kLoaded);
}

TEST(RouterFilesTest, RescanRelistsAModelWhosePresetChanged) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  TempModelsDir dir;
  dir.Link("qwen3-tiny-f32.gguf", "qwen.gguf");
  const std::string ini = dir.Write("p.ini", "[qwen]\nctx-size = 128\n");
  RouterConfig cfg = testing::DirConfig(dir.path());
  cfg.sources.preset_path = ini;
  auto router = MakeRouter(cfg);
  ASSERT_TRUE(router);
  Result<ModelLease> before = router->Acquire("qwen");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->engine().config().n_ctx, 128);
  dir.Write("p.ini", "[qwen]\nctx-size = 512\nalias = q\n");
  Result<ReloadResult> r = router->Reload();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->changed, std::vector<std::string>{"qwen"});
  EXPECT_EQ(r->unloaded, std::vector<std::string>{"qwen"});
  EXPECT_EQ(router->draining(), 1);  // the old engine serves its lease to the end
  EXPECT_FALSE(Generate(*before).empty());
  before->Release();
  Result<ModelLease> after = router->Acquire("q");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->engine().config().n_ctx, 512);
  EXPECT_EQ(router->draining(), 0);

  // A broken preset makes the rescan fail with its file:line and changes nothing.
  dir.Write("p.ini", "[qwen]\nctx-size = lots\n");
  r = router->Reload();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status(), "p.ini:2: ctx-size: expected an integer")) << r.status().message();
  EXPECT_EQ(StatusOf(*router, "qwen"), ModelStatus::kLoaded);
}

}  // namespace
}  // namespace lazyslot
