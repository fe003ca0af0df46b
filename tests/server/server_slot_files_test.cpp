// Slot files through POST /slots/{id}?action=restore: a truncated, garbage, wrong-version or other-model
// file gets 400 naming the file and the fault, the slot is then empty and serves the next request; file
// names with a path or ".." get 400 and nothing is written outside --slot-save-path.
#include <gtest/gtest.h>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";

int SlotTokens(ServerProcess& srv) {
  const json slots = srv.Get("/slots").Json();
  return slots.is_array() && !slots.empty() ? slots[0].value("n_tokens", -1) : -1;
}

TEST(ServerSlotFiles, CorruptFilesGet400AndLeaveTheSlotEmptyAndUsable) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string dir = NewScratchFile("slotfiles");
  std::filesystem::create_directories(dir);
  START_SERVER(srv, {"-m", SharedPath(kStories), "-np", "1", "-c", "512", "--slot-save-path", dir});
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}};
  const HttpResult first = srv->Post("/v1/completions", body);
  ASSERT_EQ(first.status, 200) << first.body;
  HttpResult saved = srv->Post("/slots/0?action=save", {{"filename", "good.bin"}});
  ASSERT_EQ(saved.status, 200) << saved.body;
  const int held = saved.Json()["n_saved"];
  ASSERT_GT(held, 0);
  const std::string good = ReadAll(dir + "/good.bin");
  std::string version = good;
  version[8] = 7;  // u32 version after the 8-byte magic
  std::string other_model = good;
  other_model[56] ^= 0x5a;  // a byte of the u64 model identity (header offset 56)
  std::ofstream(dir + "/truncated.bin", std::ios::binary) << good.substr(0, good.size() / 2);
  std::ofstream(dir + "/garbage.bin", std::ios::binary) << std::string(300, '\x7f');
  std::ofstream(dir + "/version.bin", std::ios::binary) << version;
  std::ofstream(dir + "/other.bin", std::ios::binary) << other_model;

  for (const auto& [file, why] :
       std::vector<std::pair<std::string, std::string>>{{"truncated.bin", "truncated"},
                                                        {"garbage.bin", "not a lazyslot slot file"},
                                                        {"version.bin", "version 7"},
                                                        {"other.bin", "different model"}}) {
    SCOPED_TRACE(file);
    ASSERT_EQ(srv->Post("/slots/0?action=restore", {{"filename", "good.bin"}}).status, 200);
    ASSERT_EQ(SlotTokens(*srv), held);
    HttpResult r = srv->Post("/slots/0?action=restore", {{"filename", file}});
    EXPECT_EQ(r.status, 400) << r.body;
    const std::string msg = r.Json()["error"]["message"];
    EXPECT_NE(msg.find(file), std::string::npos) << msg;
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
    EXPECT_EQ(SlotTokens(*srv), 0);
    // Usable: the same request gives the same text, from scratch.
    const HttpResult again = srv->Post("/v1/completions", body);
    ASSERT_EQ(again.status, 200) << again.body;
    EXPECT_EQ(again.Json()["choices"][0]["text"], first.Json()["choices"][0]["text"]);
    EXPECT_EQ(again.Json()["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  }

  // Names with a path or "..": 400 naming the rule, for save and restore, and nothing written outside.
  const std::string outside = std::filesystem::path(dir).parent_path().string();
  for (const std::string name : {"../escape.bin", "sub/x.bin", "/tmp/abs.bin", "a..b", "x\\y.bin"}) {
    for (const char* action : {"save", "restore"}) {
      HttpResult r = srv->Post(std::string("/slots/0?action=") + action, {{"filename", name}});
      EXPECT_EQ(r.status, 400) << action << " " << name << " " << r.body;
      EXPECT_NE(r.body.find("filename"), std::string::npos) << r.body;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(outside + "/escape.bin"));
  // Atomic saves leave no temporary (`<name>.tmp.<pid>`) behind.
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace lazyslot::testing
