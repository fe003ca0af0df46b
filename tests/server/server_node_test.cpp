// Drives the real server with the official `openai` npm client (tests/server/openai_client_test.mjs):
// chat (plain, streamed, stream helper), completions, embeddings (float and the client's default base64),
// models, a 400 and a 401. `npm install` runs here when tests/server/node_modules is missing.
#include <gtest/gtest.h>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kQwenVocab[] = "models/qwen3-vocab-tiny-q8_0.gguf";

bool HaveCommand(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

TEST(ServerNodeClient, OfficialOpenAiPackage) {
  REQUIRE_SHARED_FILE(kQwenVocab);
  if (!HaveCommand("node") || !HaveCommand("npm")) {
    if (InCi()) FAIL() << "node and npm are required in CI (CI=true)";
    GTEST_SKIP() << "node/npm not installed";
  }
  const std::string dir = std::string(LAZYSLOT_SOURCE_DIR) + "/tests/server";
  std::string out;
  if (!std::filesystem::exists(dir + "/node_modules/openai/package.json")) {
    const int rc = RunShell("cd " + ShellQuote(dir) + " && npm install --no-audit --no-fund", &out);
    ASSERT_EQ(rc, 0) << "npm install failed:\n" << out;
  }
  START_SERVER(srv, {"-m", SharedPath(kQwenVocab), "-np", "2", "--embeddings", "--api-key", "node-test-key"});
  out.clear();
  const int rc = RunShell("cd " + ShellQuote(dir) + " && LAZYSLOT_URL=" + ShellQuote(srv->Url("")) +
                              " LAZYSLOT_API_KEY=node-test-key node openai_client_test.mjs",
                          &out);
  std::fprintf(stderr, "%s", out.c_str());
  EXPECT_EQ(rc, 0) << out << "\nserver log:\n" << srv->Log();
}

}  // namespace
}  // namespace lazyslot::testing
