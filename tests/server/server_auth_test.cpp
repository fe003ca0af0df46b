// API keys through the real server: several --api-key flags, --api-key-file (blank lines and #comments
// ignored), LAZYSLOT_API_KEY; /health always public, /metrics public only with --metrics-no-auth; no key
// ever appears in the server's output, also when start-up fails on a bad key file.
#include <gtest/gtest.h>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";

// Distinctive keys, so that finding one in a log cannot be a coincidence.
const std::vector<std::string> kFlagKeys = {"sk-flag-1-Qm9vYmFy7", "sk-flag-2-WnVjY2hp3"};
const std::vector<std::string> kFileKeys = {"sk-file-1-TG9yZW1p9", "sk-file-2-SXBzdW0x4"};

std::string WriteKeyFile(const std::string& text) {
  const std::string path = NewScratchFile("keys");
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

void ExpectUnauthorized(const HttpResult& r, const std::string& what) {
  EXPECT_EQ(r.status, 401) << what << ": " << r.body;
  const json j = r.Json();
  EXPECT_TRUE(j.contains("error")) << what << ": " << r.body;
  if (j.contains("error")) {
    EXPECT_EQ(j["error"]["type"], "authentication_error") << r.body;
  }
}

void ExpectNoKeyIn(const std::string& text, const std::vector<std::string>& keys) {
  for (const std::string& k : keys) {
    EXPECT_EQ(text.find(k), std::string::npos) << "key " << k << " appears in:\n" << text;
    // Not even a recognisable part of one.
    EXPECT_EQ(text.find(k.substr(k.size() - 10)), std::string::npos) << k;
  }
}

TEST(ServerAuth, SeveralKeysFromFlagsAndFileAndNoneInTheLogs) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string key_file = WriteKeyFile("# keys for the test\n\n   " + kFileKeys[0] + "  \n#" +
                                            "sk-commented-out-key\n\t\n" + kFileKeys[1] + "\r\n");
  START_SERVER(srv, {"-m", SharedPath(kStories), "--api-key", kFlagKeys[0], "--api-key", kFlagKeys[1],
                     "--api-key-file", key_file, "--slot-save-path", ScratchDir()});
  std::vector<std::string> all = kFlagKeys;
  all.insert(all.end(), kFileKeys.begin(), kFileKeys.end());

  EXPECT_EQ(srv->Get("/health").status, 200);
  const json completion = {{"prompt", "Once"}, {"max_tokens", 3}};
  for (const std::vector<std::string>& headers : std::vector<std::vector<std::string>>{
           {},
           {"Authorization: Bearer sk-commented-out-key"},
           {"Authorization: Basic " + kFileKeys[0]},
           {"Authorization: Bearer " + kFlagKeys[0].substr(0, kFlagKeys[0].size() - 1)},
           {"Authorization: Bearer " + kFlagKeys[0] + kFlagKeys[1]},
           {"X-Api-Key: # keys for the test"}}) {
    const std::string what = headers.empty() ? "no key" : headers[0];
    ExpectUnauthorized(srv->Get("/props", headers), what);
    EXPECT_EQ(srv->Get("/v1/models", headers).status, 200) << what << ": /v1/models is public";
    ExpectUnauthorized(srv->Get("/metrics", headers), what + " /metrics");
    ExpectUnauthorized(srv->Post("/v1/completions", completion, headers), what);
  }
  for (const std::string& k : all) {
    EXPECT_EQ(srv->Get("/props", {"Authorization: Bearer " + k}).status, 200) << k;
    EXPECT_EQ(srv->Get("/metrics", {"X-Api-Key: " + k}).status, 200) << k;
    EXPECT_EQ(srv->Post("/v1/completions", completion, {"Authorization: Bearer " + k}).status, 200) << k;
  }
  // Errors and slot actions with a key: their messages and log lines carry no key either.
  const std::string auth = "Authorization: Bearer " + kFileKeys[1];
  EXPECT_EQ(srv->PostRaw("/v1/completions", "{not json", {auth}).status, 400);
  EXPECT_EQ(srv->Post("/slots/0?action=restore", {{"filename", "absent.bin"}}, {auth}).status, 404);
  EXPECT_EQ(srv->Post("/slots/0?action=save", {{"filename", "../" + kFlagKeys[0]}}, {auth}).status, 400);
  EXPECT_EQ(srv->Stop(), 0);
  const std::string log = srv->Log();
  EXPECT_NE(log.find("API key required (4 key(s))"), std::string::npos) << log;
  ExpectNoKeyIn(log, all);
}

TEST(ServerAuth, MetricsNoAuthMakesMetricsPublicToo) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "--api-key", kFlagKeys[0], "--metrics-no-auth"});
  HttpResult m = srv->Get("/metrics");
  EXPECT_EQ(m.status, 200) << m.body;
  EXPECT_NE(m.body.find("lazyslot:requests_total"), std::string::npos);
  EXPECT_EQ(srv->Get("/health").status, 200);
  EXPECT_EQ(srv->Get("/v1/models").status, 200);  // public, as in llama-server
  EXPECT_EQ(srv->Get("/models").status, 200);
  ExpectUnauthorized(srv->Get("/slots"), "/slots");
  ExpectUnauthorized(srv->Get("/props"), "/props");
  ExpectUnauthorized(srv->Post("/v1/completions", {{"prompt", "x"}}), "/v1/completions");
  EXPECT_EQ(srv->Get("/props", {"Authorization: Bearer " + kFlagKeys[0]}).status, 200);
  srv->Stop();
  ExpectNoKeyIn(srv->Log(), {kFlagKeys[0]});
}

TEST(ServerAuth, EnvironmentKeyAndNoKeyMeansOpen) {
  REQUIRE_SHARED_FILE(kStories);
  {
    std::string error;
    auto srv = ServerProcess::StartWithEnv({"-m", SharedPath(kStories)}, {{"LAZYSLOT_API_KEY", kFileKeys[0]}},
                                           &error);
    ASSERT_NE(srv, nullptr) << error;
    ExpectUnauthorized(srv->Get("/metrics"), "/metrics without key");
    EXPECT_EQ(srv->Get("/metrics", {"Authorization: Bearer " + kFileKeys[0]}).status, 200);
    srv->Stop();
    ExpectNoKeyIn(srv->Log(), {kFileKeys[0]});
  }
  START_SERVER(srv, {"-m", SharedPath(kStories)});
  EXPECT_EQ(srv->Get("/metrics").status, 200);
  EXPECT_EQ(srv->Get("/v1/models").status, 200);
}

TEST(ServerAuth, BadKeyFilesStopStartUpWithoutPrintingKeys) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string secret = "sk-inner blank-S2V5cw5";
  struct Case {
    std::string file;
    std::string says;
  };
  for (const Case& c : {Case{WriteKeyFile("# only a comment\n\n"), "no keys"},
                        Case{WriteKeyFile(kFileKeys[0] + "\n" + secret + "\n"), "line 2"},
                        Case{ScratchDir() + "/no-such-key-file", "cannot read"}}) {
    SCOPED_TRACE(c.says);
    auto srv = ServerProcess::Launch(
        {"-m", SharedPath(kStories), "--api-key-file", c.file, "--api-key", kFlagKeys[1]});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (srv->Running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_FALSE(srv->Running()) << "the server started with a bad key file";
    EXPECT_NE(srv->exit_status(), 0);
    const std::string log = srv->Log();
    EXPECT_NE(log.find(c.says), std::string::npos) << log;
    EXPECT_NE(log.find(c.file), std::string::npos) << log;
    ExpectNoKeyIn(log, {kFileKeys[0], kFlagKeys[1], secret});
  }
}

}  // namespace
}  // namespace lazyslot::testing
