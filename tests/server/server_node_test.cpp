// Drives the real server with the official `openai` npm client (tests/server/openai_client_test.mjs):
// chat (plain, streamed, stream helper), completions, embeddings (float, the client's default base64,
// dimensions), models, a 400 and a 401; and tests/server/openai_agents_test.mjs (tool calls, structured
// output) on two models. `npm install` runs here when a package in tests/server/node_modules is missing.
#include <gtest/gtest.h>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kQwenVocab[] = "models/qwen3-vocab-tiny-q8_0.gguf";

// Skips (or fails in CI) without node/npm; installs the npm packages when one is missing.
void RequireNodePackages(const std::string& dir) {
  if (!HaveCommand("node") || !HaveCommand("npm")) {
    if (InCi()) FAIL() << "node and npm are required in CI (CI=true)";
    GTEST_SKIP() << "node/npm not installed";
  }
  for (const char* pkg : {"openai", "ajv", "@anthropic-ai/sdk"}) {
    if (std::filesystem::exists(dir + "/node_modules/" + pkg + "/package.json")) continue;
    std::string out;
    const int rc = RunShell("cd " + ShellQuote(dir) + " && npm install --no-audit --no-fund", &out);
    ASSERT_EQ(rc, 0) << "npm install failed:\n" << out;
    break;
  }
}

std::string TestDir() { return std::string(LAZYSLOT_SOURCE_DIR) + "/tests/server"; }

TEST(ServerNodeClient, OfficialOpenAiPackage) {
  REQUIRE_SHARED_FILE(kQwenVocab);
  const std::string dir = TestDir();
  RequireNodePackages(dir);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  START_SERVER(srv, {"-m", SharedPath(kQwenVocab), "-np", "2", "--embeddings", "--api-key", "node-test-key"});
  std::string out;
  const int rc = RunShell("cd " + ShellQuote(dir) + " && LAZYSLOT_URL=" + ShellQuote(srv->Url("")) +
                              " LAZYSLOT_API_KEY=node-test-key node openai_client_test.mjs",
                          &out);
  std::fprintf(stderr, "%s", out.c_str());
  EXPECT_EQ(rc, 0) << out << "\nserver log:\n" << srv->Log();
}

// tests/server/openai_agents_test.mjs on one model: tool calls, structured output and their 400s.
void RunAgentChecks(const char* model) {
  REQUIRE_SHARED_FILE(model);
  const std::string dir = TestDir();
  RequireNodePackages(dir);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  START_SERVER(srv, {"-m", SharedPath(model), "-np", "2", "-c", "4096", "--api-key", "agent-key"});
  std::string out;
  const int rc = RunShell("cd " + ShellQuote(dir) + " && LAZYSLOT_URL=" + ShellQuote(srv->Url("")) +
                              " LAZYSLOT_API_KEY=agent-key node openai_agents_test.mjs",
                          &out);
  std::fprintf(stderr, "%s", out.c_str());
  EXPECT_EQ(rc, 0) << out << "\nserver log:\n" << srv->Log();
}

TEST(ServerNodeClient, AgentsQwen3Vocab) { RunAgentChecks(kQwenVocab); }

// A node script against a server on the Qwen3-vocabulary model with `np` slots.
void RunScript(const char* script, const char* np) {
  REQUIRE_SHARED_FILE(kQwenVocab);
  const std::string dir = TestDir();
  RequireNodePackages(dir);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  START_SERVER(srv, {"-m", SharedPath(kQwenVocab), "-np", np, "-c", "6144", "--api-key", "script-key"});
  std::string out;
  const int rc = RunShell("cd " + ShellQuote(dir) + " && LAZYSLOT_URL=" + ShellQuote(srv->Url("")) +
                              " LAZYSLOT_API_KEY=script-key node " + script,
                          &out);
  std::fprintf(stderr, "%s", out.c_str());
  EXPECT_EQ(rc, 0) << out << "\nserver log:\n" << srv->Log();
}

// openai_dropin_test.mjs: logprobs, n, logit_bias, penalties, seeds, reasoning, native fields.
TEST(ServerNodeClient, DropIn) { RunScript("openai_dropin_test.mjs", "3"); }
// openai_responses_test.mjs: the Responses API through the openai client.
TEST(ServerNodeClient, ResponsesApi) { RunScript("openai_responses_test.mjs", "2"); }
// anthropic_sdk_test.mjs: the Messages API through @anthropic-ai/sdk.
TEST(ServerNodeClient, AnthropicMessages) { RunScript("anthropic_sdk_test.mjs", "2"); }
TEST(ServerNodeClient, AgentsTinyLlama) { RunAgentChecks("models/TinyLLama-v0-Q4_0.gguf"); }

}  // namespace
}  // namespace lazyslot::testing
