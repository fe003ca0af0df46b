// `lazyslot serve` with no -m: generates the random-weight demo model with `synth` (once; reused after),
// says so in its log, answers 503 on /health until ready, then serves chat with the demo's ChatML template.
#include <gtest/gtest.h>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

TEST(ServerDemo, ServesAGeneratedDemoModelWithoutFlags) {
  const std::string cache = NewScratchFile("xdg-cache");
  std::string err;
  auto srv = ServerProcess::StartWithEnv({}, {{"XDG_CACHE_HOME", cache}}, &err);
  ASSERT_NE(srv, nullptr) << err;
  const std::string model = cache + "/lazyslot/demo.gguf";
  EXPECT_TRUE(std::filesystem::exists(model));
  const std::string log = srv->Log();
  EXPECT_NE(log.find("random weights"), std::string::npos) << log;
  EXPECT_NE(log.find("chat template"), std::string::npos) << log;
  // The listener was up before the model: the first health probes that connected saw 503, never an error.
  for (int code : srv->health_codes()) EXPECT_TRUE(code == 0 || code == 503 || code == 200) << code;

  EXPECT_EQ(srv->Get("/v1/models").Json()["data"][0]["id"], "demo");
  const json props = srv->Get("/props").Json();
  EXPECT_EQ(props["model_path"], model);
  HttpResult r = srv->Post("/v1/chat/completions",
                           {{"messages", {{{"role", "user"}, {"content", "hello"}}}}, {"max_tokens", 8}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(srv->Stop(), 0) << "SIGTERM must stop the server cleanly";

  // A second start reuses the file.
  const auto mtime = std::filesystem::last_write_time(model);
  auto again = ServerProcess::StartWithEnv({}, {{"XDG_CACHE_HOME", cache}}, &err);
  ASSERT_NE(again, nullptr) << err;
  EXPECT_EQ(std::filesystem::last_write_time(model), mtime);
  EXPECT_EQ(again->Get("/health").status, 200);
}

}  // namespace
}  // namespace lazyslot::testing
