// GET /slots and llama-server's slot actions through the real server: POST /slots/{id}?action=save|restore|
// erase with --slot-save-path; refused without it, for bad file names, bad actions and unknown slots.
#include <gtest/gtest.h>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";

TEST(ServerSlots, SaveEraseRestore) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string dir = NewScratchFile("slots");
  std::filesystem::create_directories(dir);
  // llama-server's short spellings: -c and -np.
  START_SERVER(srv, {"-m", SharedPath(kStories), "-c", "1024", "-np", "2", "--slot-save-path", dir});
  const json props = srv->Get("/props").Json();
  EXPECT_EQ(props["n_ctx"], 1024);
  EXPECT_EQ(props["n_ctx_slot"], 512);

  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}};
  const json first = srv->Post("/v1/completions", body).Json();
  ASSERT_TRUE(first.contains("choices")) << first.dump();
  // The slot that served it keeps its tokens (cache_prompt); find it.
  int id = -1, held = 0;
  for (const json& s : srv->Get("/slots").Json()) {
    if (s["n_tokens"].get<int>() > 0) {
      id = s["id"];
      held = s["n_tokens"];
    }
  }
  ASSERT_GE(id, 0) << srv->Get("/slots").body;
  const std::string slot = "/slots/" + std::to_string(id);

  HttpResult saved = srv->Post(slot + "?action=save", {{"filename", "story.bin"}});
  ASSERT_EQ(saved.status, 200) << saved.body;
  EXPECT_EQ(saved.Json()["id_slot"], id);
  EXPECT_EQ(saved.Json()["n_saved"], held);
  EXPECT_GT(saved.Json()["n_written"].get<int64_t>(), 0);
  EXPECT_TRUE(std::filesystem::exists(dir + "/story.bin"));

  HttpResult erased = srv->Post(slot + "?action=erase", json::object());
  ASSERT_EQ(erased.status, 200) << erased.body;
  EXPECT_EQ(erased.Json()["n_erased"], held);
  EXPECT_EQ(srv->Get("/slots").Json()[id]["n_tokens"], 0);

  HttpResult restored = srv->Post(slot + "?action=restore", {{"filename", "story.bin"}});
  ASSERT_EQ(restored.status, 200) << restored.body;
  EXPECT_EQ(restored.Json()["n_restored"], held);
  EXPECT_EQ(srv->Get("/slots").Json()[id]["n_tokens"], held);
  // Same result after the restore (the kept prefix is reused or recomputed: no difference).
  EXPECT_EQ(srv->Post("/v1/completions", body).Json()["choices"][0]["text"], first["choices"][0]["text"]);

  for (const auto& [path, req] :
       std::vector<std::pair<std::string, json>>{{slot + "?action=save", {{"filename", "../escape.bin"}}},
                                                 {slot + "?action=save", json::object()},
                                                 {slot + "?action=fly", {{"filename", "x.bin"}}},
                                                 {"/slots/99?action=erase", json::object()}}) {
    HttpResult r = srv->Post(path, req);
    EXPECT_EQ(r.status, 400) << path << " " << r.body;
    EXPECT_TRUE(r.Json().contains("error")) << r.body;
  }
  EXPECT_EQ(srv->Post(slot + "?action=restore", {{"filename", "missing.bin"}}).status, 404);
}

TEST(ServerSlots, SaveNeedsSlotSavePath) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories)});
  HttpResult r = srv->Post("/slots/0?action=save", {{"filename", "a.bin"}});
  EXPECT_EQ(r.status, 501) << r.body;
  EXPECT_NE(r.body.find("--slot-save-path"), std::string::npos) << r.body;
}

// llama-server's --no-slots: GET /slots is a 501 with llama-server's message; --slots (the default) serves it;
// /props says which.
TEST(ServerSlots, NoSlotsAnswers501) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(off, {"-m", SharedPath(kStories), "-c", "256", "--no-slots"});
  HttpResult r = off->Get("/slots");
  EXPECT_EQ(r.status, 501) << r.body;
  EXPECT_EQ(r.Json()["error"]["type"], "not_supported_error") << r.body;
  EXPECT_NE(r.body.find("Start it with `--slots`"), std::string::npos) << r.body;
  EXPECT_EQ(off->Get("/props").Json()["endpoint_slots"], false);
  EXPECT_EQ(off->Post("/completion", {{"prompt", "Once"}, {"n_predict", 2}}).status, 200) << "serving goes on";
  START_SERVER(on, {"-m", SharedPath(kStories), "-c", "256", "--slots"});
  EXPECT_EQ(on->Get("/slots").status, 200);
  EXPECT_EQ(on->Get("/props").Json()["endpoint_slots"], true);
}

}  // namespace
}  // namespace lazyslot::testing
