// Slot files through the engine: saves are atomic (no temporary left behind, a failed save leaves nothing),
// and a truncated, foreign, garbage, wrong-version, over-long or out-of-vocabulary file is each refused with
// an error naming the file and what is wrong, after which the slot is empty and still restores and serves.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "drain.h"
#include "engine/engine.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using testing::Collected;
using testing::Drain;

constexpr char kStories[] = "models/stories260K.gguf";
constexpr char kOther[] = "models/qwen3-tiny-q8_0.gguf";

EngineConfig Config(const std::string& model, const std::string& dir) {
  EngineConfig cfg;
  cfg.model_path = testing::SharedPath(model);
  cfg.n_parallel = 1;
  cfg.n_ctx = 256;
  cfg.n_threads = 2;
  cfg.slot_save_path = dir;
  return cfg;
}

std::unique_ptr<Engine> Make(const EngineConfig& cfg) {
  auto e = Engine::Create(cfg);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(e).value() : nullptr;
}

Collected Generate(Engine& e, const std::vector<TokenId>& prompt, int32_t n) {
  GenerationRequest r;
  r.prompt = prompt;
  r.n_predict = n;
  r.ignore_eos = true;
  r.sampling.temperature = 0;
  auto s = e.Submit(std::move(r));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) {
    Collected failed;
    failed.error = true;
    return failed;
  }
  return Drain(**s);
}

// Slot 0's cell count once the scheduler has published it (it does so after every slot task and step).
int32_t SlotTokens(Engine& e, int32_t want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int32_t n = e.Stats().slots[0].n_tokens;
  while (n != want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    n = e.Stats().slots[0].n_tokens;
  }
  return n;
}

std::string ReadBytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

class SlotFileCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("lazyslot_slotfiles_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<std::string> Listing() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::filesystem::path dir_;
};

TEST_F(SlotFileCorruption, SavesAreAtomic) {
  REQUIRE_SHARED_FILE(kStories);
  auto e = Make(Config(kStories, dir_.string()));
  ASSERT_TRUE(e);
  std::vector<TokenId> prompt;
  for (int i = 0; i < 30; ++i) prompt.push_back(1 + (i * 37) % 500);
  ASSERT_FALSE(Generate(*e, prompt, 5).error);
  auto first = e->SaveSlot(0, "conv.bin");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  // Overwriting replaces the file whole; no temporary (`conv.bin.tmp.<pid>`) is left behind.
  ASSERT_FALSE(Generate(*e, prompt, 9).error);
  auto second = e->SaveSlot(0, "conv.bin");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(Listing(), std::vector<std::string>{"conv.bin"});
  EXPECT_EQ(std::filesystem::file_size(dir_ / "conv.bin"), second->n_bytes);
  EXPECT_GT(second->n_bytes, first->n_bytes);

  // A save that cannot be renamed into place (the name is a non-empty directory) fails with the path and
  // leaves neither a temporary nor a partial file.
  std::filesystem::create_directories(dir_ / "taken" / "inside");
  auto blocked = e->SaveSlot(0, "taken");
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.status().code(), Code::kIo);
  EXPECT_NE(blocked.status().message().find("taken"), std::string::npos) << blocked.status().message();
  EXPECT_EQ(Listing(), (std::vector<std::string>{"conv.bin", "taken"}));
  EXPECT_TRUE(std::filesystem::is_directory(dir_ / "taken" / "inside"));
}

TEST_F(SlotFileCorruption, BadFilesAreRefusedAndLeaveTheSlotEmptyAndUsable) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_SHARED_FILE(kOther);
  auto e = Make(Config(kStories, dir_.string()));
  ASSERT_TRUE(e);
  std::vector<TokenId> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(1 + (i * 53) % 500);
  const Collected reference = Generate(*e, prompt, 6);
  ASSERT_FALSE(reference.error);
  // 40 prompt + 6 generated tokens; the last sampled one may have no cell yet.
  const int32_t held = SlotTokens(*e, 45);
  ASSERT_GE(held, 45);
  ASSERT_LE(held, 46);
  ASSERT_TRUE(e->SaveSlot(0, "good.bin").ok());
  const std::string good = ReadBytes(dir_ / "good.bin");
  ASSERT_GT(good.size(), 88u + 45 * 4);

  // Another model's slot file, written by that model's engine into the same directory.
  {
    auto other = Make(Config(kOther, dir_.string()));
    ASSERT_TRUE(other);
    ASSERT_FALSE(Generate(*other, {1, 2, 3, 4, 5, 6, 7, 8}, 2).error);
    ASSERT_TRUE(other->SaveSlot(0, "other-model.bin").ok());
  }
  std::mt19937 rng(7);
  std::string garbage(4096, '\0');
  for (char& c : garbage) c = static_cast<char>(rng());
  std::string wrong_version = good;
  wrong_version[8] = 99;  // u32 version right after the 8-byte magic
  std::string bad_token = good;
  const int32_t huge = 1 << 30;
  std::memcpy(&bad_token[88], &huge, sizeof huge);  // the first token id, right after the 88-byte header
  std::string flipped = good;
  flipped[good.size() - 7] ^= 0x10;  // one bit of the last V row
  WriteBytes(dir_ / "flipped.bin", flipped);
  WriteBytes(dir_ / "truncated.bin", good.substr(0, good.size() - 100));
  WriteBytes(dir_ / "header-only.bin", good.substr(0, 40));
  WriteBytes(dir_ / "garbage.bin", garbage);
  WriteBytes(dir_ / "version.bin", wrong_version);
  WriteBytes(dir_ / "trailing.bin", good + std::string(16, 'x'));
  WriteBytes(dir_ / "badtoken.bin", bad_token);
  WriteBytes(dir_ / "empty.bin", "");

  struct Case {
    const char* file;
    const char* why;  // in the message
  };
  for (const Case& c : {Case{"truncated.bin", "(truncated)"}, Case{"header-only.bin", "too short"},
                        Case{"empty.bin", "too short"}, Case{"garbage.bin", "not a lazyslot slot file"},
                        Case{"version.bin", "version 99, this build reads version 2"},
                        Case{"other-model.bin", "different model"}, Case{"trailing.bin", "trailing bytes"},
                        Case{"badtoken.bin", "corrupt"}, Case{"flipped.bin", "corrupt"}}) {
    SCOPED_TRACE(c.file);
    // Start from a full slot, so that "empty afterwards" means the failed restore emptied it.
    ASSERT_TRUE(e->RestoreSlot(0, "good.bin").ok());
    ASSERT_EQ(SlotTokens(*e, held), held);
    auto r = e->RestoreSlot(0, c.file);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.file), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.why), std::string::npos) << r.status().message();
    EXPECT_EQ(SlotTokens(*e, 0), 0);
    EXPECT_EQ(e->Stats().kv_committed_bytes, 0u);
  }
  // A missing file is kNotFound, and also leaves the slot empty.
  ASSERT_TRUE(e->RestoreSlot(0, "good.bin").ok());
  auto missing = e->RestoreSlot(0, "missing.bin");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find("missing.bin"), std::string::npos);
  EXPECT_EQ(SlotTokens(*e, 0), 0);

  // Usable afterwards: a plain request gives the reference continuation, and a good file restores and is
  // reused as the prompt's cached prefix.
  const Collected fresh = Generate(*e, prompt, 6);
  EXPECT_EQ(fresh.tokens, reference.tokens);
  EXPECT_EQ(fresh.done.n_cached, 0);
  ASSERT_TRUE(e->EraseSlot(0).ok());
  auto restored = e->RestoreSlot(0, "good.bin");
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->n_tokens, held);
  const Collected again = Generate(*e, prompt, 6);
  EXPECT_EQ(again.tokens, reference.tokens);
  EXPECT_GT(again.done.n_cached, 0);
}

TEST_F(SlotFileCorruption, PathsAndDotDotAreRefused) {
  REQUIRE_SHARED_FILE(kStories);
  auto e = Make(Config(kStories, dir_.string()));
  ASSERT_TRUE(e);
  for (const char* bad : {"../up.bin", "a/b.bin", "/etc/passwd", "x\\y.bin", "a..b", "..", "sub/../c.bin"}) {
    for (bool save : {true, false}) {
      auto r = save ? e->SaveSlot(0, bad) : e->RestoreSlot(0, bad);
      ASSERT_FALSE(r.ok()) << bad;
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
      EXPECT_EQ(r.status().message().rfind("filename:", 0), 0u) << r.status().message();
    }
  }
  EXPECT_TRUE(Listing().empty());
}

}  // namespace
}  // namespace lazyslot
