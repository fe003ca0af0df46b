// Parking (--kv-park) through the real server: a conversation parked by --kv-park-after survives a kill -9 and
// the next server of the model resumes it, with the restored tokens in timings.cache_n and in the OpenAI
// usage's cached_tokens, and the answer of a server that computed everything; /metrics counts it; a folder
// that cannot be written is a startup error naming the flag; in router mode each model parks in its own
// subfolder.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

namespace fs = std::filesystem;
constexpr char kQwen[] = "models/qwen3-tiny-q8_0.gguf";
constexpr char kStories[] = "models/stories260K.gguf";

std::vector<int> Tokens(int n, int salt) {
  std::vector<int> t;
  for (int i = 0; i < n; ++i) t.push_back(3 + (i * 41 + salt * 11) % 450);
  return t;
}

// Polls /metrics until `name` reaches `want` (10 s).
bool WaitMetric(const ServerProcess& srv, const std::string& name, double want) {
  for (int i = 0; i < 500; ++i) {
    if (Metric(srv.Get("/metrics").body, name) >= want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int ParkedFiles(const std::string& dir) {
  int n = 0;
  for (const auto& d : fs::recursive_directory_iterator(dir)) n += d.path().extension() == ".lzkv" ? 1 : 0;
  return n;
}

TEST(ServerPark, AParkedConversationOutlivesAKill9) {
  REQUIRE_SHARED_FILE(kQwen);
  const std::string dir = NewScratchFile("park");
  const std::vector<int> prompt = Tokens(500, 1);
  const json body = {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}};
  {
    START_SERVER(srv, {"-m", SharedPath(kQwen), "-np", "2", "-c", "4096", "--metrics", "--kv-park", dir,
                       "--kv-park-after", "0.2"});
    ASSERT_EQ(srv->Post("/v1/completions", body).status, 200);
    ASSERT_TRUE(WaitMetric(*srv, "lazyslot:kv_parks_total", 1)) << srv->Get("/metrics").body;
    const std::string m = srv->Get("/metrics").body;
    EXPECT_EQ(Metric(m, "lazyslot:kv_parked_files"), 1.0);
    EXPECT_EQ(Metric(m, "lazyslot:kv_committed_bytes"), 0.0) << "parked and released";
    EXPECT_EQ(Metric(m, "lazyslot:kv_parked_bytes"), static_cast<double>(fs::file_size(
                                                         fs::directory_iterator(dir)->path())));
    const json props = srv->Get("/props").Json();
    EXPECT_EQ(props["kv_park"], dir);
    srv->Signal(SIGKILL);
    for (int i = 0; i < 200 && srv->Running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  START_SERVER(next, {"-m", SharedPath(kQwen), "-np", "2", "-c", "4096", "--metrics", "--kv-park", dir});
  // The next turn: the first prompt with new text after it (the answer is left out: its tokens are not
  // needed here) reads the 500 prompt tokens back.
  json body2 = body;
  std::vector<int> longer = prompt;
  for (int t : Tokens(30, 2)) longer.push_back(t);
  body2["prompt"] = longer;
  HttpResult r = next->Post("/v1/completions", body2);
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.Json();
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 500) << j["usage"].dump();
  EXPECT_EQ(Metric(next->Get("/metrics").body, "lazyslot:kv_resumes_total"), 1.0);
  START_SERVER(plain, {"-m", SharedPath(kQwen), "-np", "1", "-c", "2048"});
  EXPECT_EQ(j["choices"][0]["text"], plain->Post("/v1/completions", body2).Json()["choices"][0]["text"]);
  // The native route says the same in timings.cache_n (a third turn, resumed from the slot now).
  std::vector<int> third = longer;
  for (int t : Tokens(10, 3)) third.push_back(t);
  const json native = next->Post("/completion", {{"prompt", third}, {"n_predict", 4}, {"temperature", 0}}).Json();
  EXPECT_GE(native["timings"]["cache_n"].get<int>(), 530) << native["timings"].dump();
}

TEST(ServerPark, AFolderThatCannotBeWrittenIsAStartupError) {
  REQUIRE_SHARED_FILE(kQwen);
  const std::string file = NewScratchFile("not-a-dir");
  std::ofstream(file) << "x";
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--kv-park", file + "/sub"}, {"--kv-park-after", "3"}, {"--kv-park-max", "1GiB"}}) {
    std::vector<std::string> args = {"-m", SharedPath(kQwen), "-c", "512"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto srv = ServerProcess::Launch(args);
    for (int i = 0; i < 1500 && srv->Running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_FALSE(srv->Running()) << extra[0];
    EXPECT_NE(srv->exit_status(), 0);
    EXPECT_NE(srv->Log().find("--kv-park"), std::string::npos) << srv->Log();
  }
}

TEST(ServerPark, EachRouterModelParksInItsOwnFolder) {
  REQUIRE_SHARED_FILE(kQwen);
  REQUIRE_SHARED_FILE(kStories);
  const std::string models = NewScratchFile("models");
  fs::create_directories(models);
  fs::copy_file(SharedPath(kQwen), models + "/qwen.gguf");
  fs::copy_file(SharedPath(kStories), models + "/tale.gguf");
  const std::string dir = NewScratchFile("park");
  START_SERVER(srv, {"--models-dir", models, "-c", "1024", "-np", "1", "--kv-park", dir, "--kv-park-after", "0.2"});
  for (const char* model : {"qwen", "tale"}) {
    HttpResult r = srv->Post("/v1/completions", {{"model", model}, {"prompt", Tokens(100, 4)}, {"max_tokens", 4}});
    ASSERT_EQ(r.status, 200) << r.body;
  }
  for (int i = 0; i < 500 && ParkedFiles(dir) < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ParkedFiles(dir + "/qwen"), 1);
  EXPECT_EQ(ParkedFiles(dir + "/tale"), 1);
}

}  // namespace
}  // namespace lazyslot::testing
