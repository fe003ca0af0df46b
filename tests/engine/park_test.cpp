// Parking (--kv-park, engine/park_store.h) through the engine on a real model: a conversation whose slot is
// reassigned, evicted, idle past --kv-park-after or past the idle timeout is written to disk first and read
// back when it returns, giving exactly the tokens a server computing it would (greedy); the restored tokens
// count as cached. Files survive the engine; corrupt, truncated, foreign and half-written files are never
// used (deleted, the request computes); --kv-park-max holds; a failed write only costs a recompute.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <filesystem>
#include <fstream>
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
namespace fs = std::filesystem;

constexpr char kQwen[] = "models/qwen3-tiny-q8_0.gguf";
constexpr char kOther[] = "models/stories260K.gguf";

std::vector<TokenId> Tokens(int n, int salt) {
  std::vector<TokenId> t;
  for (int i = 0; i < n; ++i) t.push_back(3 + (i * 29 + salt * 13) % 450);
  return t;
}

std::vector<TokenId> Cat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class ParkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lazyslot_park_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  EngineConfig Config(int n_parallel = 1, const char* model = kQwen) const {
    EngineConfig cfg;
    cfg.model_path = testing::SharedPath(model);
    cfg.n_parallel = n_parallel;
    cfg.n_ctx = 2048 * n_parallel;
    cfg.n_threads = 2;
    cfg.kv_park_dir = dir_.string();
    return cfg;
  }
  static std::unique_ptr<Engine> Make(const EngineConfig& cfg) {
    auto e = Engine::Create(cfg);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(e).value() : nullptr;
  }
  // Greedy continuation; *cached: the prompt tokens the engine did not compute.
  static Collected Run(Engine& e, const std::vector<TokenId>& prompt, int32_t* cached = nullptr,
                       uint64_t scope = 0) {
    GenerationRequest r;
    r.prompt = prompt;
    r.cache_scope = scope;
    r.n_predict = 8;
    r.ignore_eos = true;
    r.sampling.temperature = 0;
    auto s = e.Submit(std::move(r));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) {
      Collected failed;
      failed.error = true;
      return failed;
    }
    Collected c = Drain(**s);
    EXPECT_FALSE(c.error) << c.done.error.ToString();
    if (cached) *cached = c.done.n_cached;
    return c;
  }
  // What an engine without parking (and a fresh cache) answers.
  std::vector<TokenId> Reference(const std::vector<TokenId>& prompt) {
    EngineConfig cfg = Config();
    cfg.kv_park_dir.clear();
    auto e = Make(cfg);
    return e ? Run(*e, prompt).tokens : std::vector<TokenId>{};
  }
  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    if (!fs::exists(dir_)) return names;
    for (const auto& d : fs::directory_iterator(dir_)) names.push_back(d.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  // Waits for the scheduler's published figures to satisfy `ok`.
  static bool WaitFor(Engine& e, const std::function<bool(const EngineStats&)>& ok) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (ok(e.Stats())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  fs::path dir_;
};

// One slot, two conversations taking turns: each is parked when the other takes the slot and resumed when
// it returns, with the tokens of a computed answer.
TEST_F(ParkTest, AReassignedConversationIsParkedAndResumedExactly) {
  REQUIRE_SHARED_FILE(kQwen);
  auto e = Make(Config());
  ASSERT_TRUE(e);
  const std::vector<TokenId> a = Tokens(300, 1), b = Tokens(280, 2);
  const Collected a1 = Run(*e, a);
  EXPECT_TRUE(Files().empty()) << "nothing parked while nothing is released";
  Run(*e, b);  // takes the only slot: a's 307 cells go to disk first
  ASSERT_EQ(Files().size(), 1u);
  const std::vector<TokenId> a_next = Cat(Cat(a, a1.tokens), Tokens(20, 3));
  int32_t cached = 0;
  const Collected a2 = Run(*e, a_next, &cached);  // b is parked, a read back
  EXPECT_EQ(cached, 300 + 7) << "a's prompt and the generated tokens that have cells";
  EXPECT_EQ(a2.tokens, Reference(a_next));
  const EngineStats st = e->Stats();
  EXPECT_EQ(st.kv_resumes, 1u);
  EXPECT_EQ(st.kv_parks, 2u);
  EXPECT_EQ(st.kv_parked_files, 2u);
  EXPECT_EQ(st.prompt_tokens_cached_total, 307u);
  // A branch off a parked conversation (an edit) reads it back and keeps only the shared part.
  const std::vector<TokenId> b_edit = Cat(std::vector<TokenId>(b.begin(), b.begin() + 200), Tokens(30, 4));
  const Collected b2 = Run(*e, b_edit, &cached);
  EXPECT_EQ(cached, 200);
  EXPECT_EQ(b2.tokens, Reference(b_edit));
}

// --kv-park-after parks and releases an idle slot; the idle timeout parks before it releases everything.
TEST_F(ParkTest, IdleSlotsAreParkedBeforeTheirPagesGo) {
  REQUIRE_SHARED_FILE(kQwen);
  for (const bool after : {true, false}) {
    SCOPED_TRACE(after ? "--kv-park-after" : "--idle-timeout");
    fs::remove_all(dir_);
    EngineConfig cfg = Config();
    (after ? cfg.kv_park_after_s : cfg.idle_timeout_s) = 0.3;
    auto e = Make(cfg);
    ASSERT_TRUE(e);
    const std::vector<TokenId> a = Tokens(250, 5);
    const Collected a1 = Run(*e, a);
    ASSERT_TRUE(WaitFor(*e, [](const EngineStats& s) { return s.kv_parked_files == 1 && s.kv_committed_bytes == 0; }))
        << "parked files " << e->Stats().kv_parked_files << ", KV " << e->Stats().kv_committed_bytes;
    const std::vector<TokenId> next = Cat(Cat(a, a1.tokens), Tokens(10, 6));
    int32_t cached = 0;
    EXPECT_EQ(Run(*e, next, &cached).tokens, Reference(next));
    EXPECT_EQ(cached, 257);
  }
}

// Files outlive the engine (idle conversations are parked at shutdown) and the next engine of the model
// resumes them; another model's engine in the same folder deletes them as foreign.
TEST_F(ParkTest, ParkedFilesSurviveARestart) {
  REQUIRE_SHARED_FILE(kQwen);
  REQUIRE_SHARED_FILE(kOther);
  const std::vector<TokenId> a = Tokens(400, 7);
  std::vector<TokenId> first;
  {
    auto e = Make(Config());
    ASSERT_TRUE(e);
    first = Run(*e, a).tokens;
  }
  ASSERT_EQ(Files().size(), 1u) << "parked at shutdown";
  const std::vector<TokenId> next = Cat(Cat(a, first), Tokens(12, 8));
  {
    auto e = Make(Config());
    ASSERT_TRUE(e);
    EXPECT_EQ(e->Stats().kv_parked_files, 1u);
    int32_t cached = 0;
    EXPECT_EQ(Run(*e, next, &cached).tokens, Reference(next));
    EXPECT_EQ(cached, 407);
  }
  auto other = Make(Config(1, kOther));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->Stats().kv_parked_files, 0u);
  EXPECT_TRUE(Files().empty()) << "another model's files are deleted, not used";
}

// A corrupt file is found out when it is read (checksum): deleted, the request computes and answers right.
// Truncated files, foreign bytes and temporaries of a write that never finished are deleted at start.
TEST_F(ParkTest, BadFilesAreNeverUsed) {
  REQUIRE_SHARED_FILE(kQwen);
  const std::vector<TokenId> a = Tokens(320, 9);
  std::vector<TokenId> first;
  {
    auto e = Make(Config());
    ASSERT_TRUE(e);
    first = Run(*e, a).tokens;
  }
  ASSERT_EQ(Files().size(), 1u);
  const fs::path good = dir_ / Files()[0];
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::vector<TokenId> next = Cat(Cat(a, first), Tokens(9, 10));
  // One flipped bit in the last row.
  {
    std::string flipped = bytes;
    flipped[flipped.size() - 3] ^= 0x04;
    std::ofstream(good, std::ios::binary) << flipped;
  }
  {
    auto e = Make(Config());
    ASSERT_TRUE(e);
    ASSERT_EQ(e->Stats().kv_parked_files, 1u) << "its header is sound: indexed";
    int32_t cached = -1;
    EXPECT_EQ(Run(*e, next, &cached).tokens, Reference(next));
    EXPECT_EQ(cached, 0) << "computed, not read from a corrupt file";
    EXPECT_EQ(e->Stats().kv_park_failures, 1u);
    EXPECT_EQ(e->Stats().kv_resumes, 0u);
  }
  EXPECT_FALSE(fs::exists(good)) << "the corrupt file was deleted";
  // Truncated, junk with the suffix, and a temporary left by a write killed midway: none survives a start.
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  std::ofstream(good, std::ios::binary) << bytes.substr(0, bytes.size() - 4096);
  std::ofstream(dir_ / "park-0000000000000001-9.lzkv", std::ios::binary) << std::string(5000, 'x');
  std::ofstream(dir_ / (good.filename().string() + ".tmp.4242"), std::ios::binary) << bytes.substr(0, 1000);
  std::ofstream(dir_ / "notes.txt") << "not ours: left alone";
  {
    auto e = Make(Config());
    ASSERT_TRUE(e);
    EXPECT_EQ(e->Stats().kv_parked_files, 0u);
    int32_t cached = -1;
    EXPECT_EQ(Run(*e, next, &cached).tokens, Reference(next));
    EXPECT_EQ(cached, 0);
  }
  std::vector<std::string> left = Files();
  left.erase(std::remove_if(left.begin(), left.end(), [](const std::string& n) { return n.rfind("park-", 0) == 0; }),
             left.end());
  EXPECT_EQ(left, std::vector<std::string>{"notes.txt"});
}

// --kv-park-max: the least recently used files go first, and the disk used never passes the cap.
TEST_F(ParkTest, TheDiskCapHolds) {
  REQUIRE_SHARED_FILE(kQwen);
  EngineConfig cfg = Config();
  // qwen3-tiny: 1,024 bytes of rows and 4 of token id per cell; a 300-token conversation (307 cells) is
  // 88 + 307 * 1,028 = 315,684 bytes. The cap holds two of them.
  cfg.kv_park_max = 700000;
  auto e = Make(cfg);
  ASSERT_TRUE(e);
  for (int i = 0; i < 5; ++i) {
    Run(*e, Tokens(300, 20 + i));
    const EngineStats st = e->Stats();
    EXPECT_LE(st.kv_parked_bytes, cfg.kv_park_max) << "after conversation " << i;
    uint64_t on_disk = 0;
    for (const std::string& f : Files()) on_disk += fs::file_size(dir_ / f);
    EXPECT_EQ(on_disk, st.kv_parked_bytes);
  }
  EXPECT_EQ(e->Stats().kv_parked_files, 2u);
  // The most recent parked ones are kept: conversation 3 (parked when 4 came) resumes, conversation 0 not.
  int32_t cached = -1;
  Run(*e, Cat(Tokens(300, 23), Tokens(5, 1)), &cached);
  EXPECT_EQ(cached, 300);
  Run(*e, Cat(Tokens(300, 20), Tokens(5, 1)), &cached);
  EXPECT_EQ(cached, 0);
}

// A write that fails (here the file's name is taken by a directory) is logged and costs only a recompute.
TEST_F(ParkTest, AFailedWriteOnlyCostsARecompute) {
  REQUIRE_SHARED_FILE(kQwen);
  const std::vector<TokenId> a = Tokens(260, 30);
  std::vector<TokenId> first;
  std::string name;
  {
    auto e = Make(Config());
    ASSERT_TRUE(e);
    first = Run(*e, a).tokens;
  }
  ASSERT_EQ(Files().size(), 1u);
  name = Files()[0];
  fs::remove(dir_ / name);
  fs::create_directories(dir_ / name / "blocker");
  auto e = Make(Config());
  ASSERT_TRUE(e);
  EXPECT_EQ(Run(*e, a).tokens, first);
  Run(*e, Tokens(260, 31));  // a's slot is reassigned: its write fails
  EXPECT_GE(e->Stats().kv_park_failures, 1u);
  const std::vector<TokenId> next = Cat(Cat(a, first), Tokens(7, 2));
  int32_t cached = -1;
  EXPECT_EQ(Run(*e, next, &cached).tokens, Reference(next));
  EXPECT_EQ(cached, 0);
}

TEST_F(ParkTest, AnUnwritableFolderIsAStartupError) {
  REQUIRE_SHARED_FILE(kQwen);
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  EngineConfig cfg = Config();
  cfg.kv_park_dir = (dir_ / "file" / "sub").string();
  auto e = Engine::Create(cfg);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("--kv-park"), std::string::npos) << e.status().message();
  cfg.kv_park_dir.clear();
  cfg.kv_park_after_s = 5;
  e = Engine::Create(cfg);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("need --kv-park"), std::string::npos) << e.status().message();
}

// A parked conversation whose slot mapped a shared prefix from another slot: its file holds the rows it
// read through the mapping, and it resumes exactly.
TEST_F(ParkTest, AConversationThatMappedASharedPrefixParksAndResumes) {
  REQUIRE_SHARED_FILE(kQwen);
  auto e = Make(Config(2));
  ASSERT_TRUE(e);
  const std::vector<TokenId> system = Tokens(400, 40);
  const std::vector<TokenId> a = Cat(system, Tokens(30, 41)), b = Cat(system, Tokens(30, 42));
  Run(*e, a);
  int32_t cached = 0;
  const Collected b1 = Run(*e, b, &cached);
  ASSERT_EQ(cached, 400) << "b mapped the system prompt from a's slot";
  ASSERT_GT(e->Stats().kv_shared_bytes, 0u);
  // Two new conversations take both slots: a and b are parked.
  Run(*e, Tokens(300, 43));
  Run(*e, Tokens(300, 44));
  ASSERT_GE(e->Stats().kv_parked_files, 2u);
  const std::vector<TokenId> next = Cat(Cat(b, b1.tokens), Tokens(6, 45));
  EXPECT_EQ(Run(*e, next, &cached).tokens, Reference(next));
  EXPECT_EQ(cached, 437);
}

// A file deleted behind the server's back after it was indexed: the resume fails on opening it, the slot it
// was to fill (which held another conversation, parked first) is emptied, and the request computes.
TEST_F(ParkTest, AFileGoneAfterStartIsComputed) {
  REQUIRE_SHARED_FILE(kQwen);
  const std::vector<TokenId> a = Tokens(300, 60), b = Tokens(300, 61);
  std::vector<TokenId> first;
  {
    auto e = Make(Config());
    ASSERT_TRUE(e);
    first = Run(*e, a).tokens;
  }
  ASSERT_EQ(Files().size(), 1u);
  const std::string a_file = Files()[0];
  auto e = Make(Config());
  ASSERT_TRUE(e);
  Run(*e, b);  // the slot holds b
  fs::remove(dir_ / a_file);
  const std::vector<TokenId> next = Cat(Cat(a, first), Tokens(6, 62));
  int32_t cached = -1;
  EXPECT_EQ(Run(*e, next, &cached).tokens, Reference(next));
  EXPECT_EQ(cached, 0);
  EXPECT_EQ(e->Stats().kv_park_failures, 1u);
  // b was parked before the attempt and still resumes.
  Run(*e, Cat(b, Tokens(4, 63)), &cached);
  EXPECT_EQ(cached, 300);
}

// A parked conversation keeps its cache scope (cache_salt): only a request of that scope resumes it, also
// when it was parked by a resume of another conversation into its slot.
TEST_F(ParkTest, ParkedConversationsKeepTheirScope) {
  REQUIRE_SHARED_FILE(kQwen);
  auto e = Make(Config());
  ASSERT_TRUE(e);
  const std::vector<TokenId> a = Tokens(300, 50), b = Tokens(300, 51);
  Run(*e, a, nullptr, 7);
  Run(*e, b, nullptr, 0);         // a (scope 7) is parked
  int32_t cached = -1;
  Run(*e, Cat(a, Tokens(5, 1)), &cached, 0);  // scope 0: a's file is not its own; b is parked
  EXPECT_EQ(cached, 0);
  Run(*e, Cat(b, Tokens(5, 2)), &cached, 0);  // b resumed into the slot: the unscoped a is parked
  EXPECT_EQ(cached, 300);
  Run(*e, Cat(a, Tokens(5, 3)), &cached, 7);  // scope 7: its own file
  EXPECT_EQ(cached, 300);
  const std::vector<TokenId> next = Cat(a, Tokens(5, 4));
  Run(*e, next, &cached, 8);
  EXPECT_EQ(cached, 0) << "another scope";
}

}  // namespace
}  // namespace lazyslot
