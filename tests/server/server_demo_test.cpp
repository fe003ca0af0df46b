// Start-up of `lazyslot serve`: with no -m it generates the random-weight demo model with `synth` (once),
// says so, and serves it; /health is 503 while a model loads; --chat-template picks or supplies the template.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>

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
  EXPECT_NE(log.find("random weights"), std::string::npos) << "log: " << log;
  EXPECT_NE(log.find("chat template"), std::string::npos) << log;
  // Until ready, /health answered 503 (or nothing, before the port was bound).
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

// The listener starts before the model loads: a model "file" that is a FIFO keeps the load blocked until the
// test writes to it, so the loading state is observed deterministically.
TEST(ServerDemo, HealthIs503WhileTheModelLoads) {
  const std::string fifo = NewScratchFile("model-fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // --metrics-no-auth: public routes too must wait for the engine (they once ran their handlers early).
  auto srv = ServerProcess::Launch({"-m", fifo, "--metrics-no-auth"});
  HttpResult h;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (h.status == 0 && srv->Running() && std::chrono::steady_clock::now() < deadline) {
    h = srv->Get("/health");
    if (h.status == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(h.status, 503) << h.body << srv->Log();
  EXPECT_EQ(h.Json()["error"]["code"], 503) << h.body;
  EXPECT_EQ(h.Json()["error"]["type"], "unavailable_error") << h.body;
  for (const std::string path : {"/v1/models", "/models", "/props", "/slots", "/metrics"}) {
    EXPECT_EQ(srv->Get(path).status, 503) << path;
  }
  ASSERT_TRUE(srv->Running()) << srv->Log();  // else the open() below would wait for a reader forever
  EXPECT_EQ(srv->Post("/v1/completions", {{"prompt", "x"}}).status, 503);
  // Unblock the load: the loader's open() returns once a writer opens the FIFO, then refuses a file that is
  // not a regular one and exits non-zero. It may close its end before our write, so the write may fail with
  // EPIPE: SIGPIPE is ignored around it (it would kill the test process).
  const int fd = open(fifo.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  const ssize_t written = write(fd, "not a gguf", 10);
  sigaction(SIGPIPE, &old, nullptr);
  EXPECT_TRUE(written == 10 || (written < 0 && errno == EPIPE)) << written;
  close(fd);
  const auto exit_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (srv->Running() && std::chrono::steady_clock::now() < exit_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(srv->Running());
  EXPECT_EQ(srv->exit_status(), 1) << srv->Log();
  EXPECT_NE(srv->Log().find("error"), std::string::npos) << srv->Log();
}

// --chat-template: a built-in name, or Jinja source; a template that does not parse stops the start-up.
TEST(ServerTemplates, ChatTemplateOverride) {
  const std::string model = "models/stories260K.gguf";
  REQUIRE_SHARED_FILE(model);
  {
    START_SERVER(srv, {"-m", SharedPath(model), "--chat-template", "llama3"});
    EXPECT_EQ(srv->Get("/props").Json()["chat_template_name"], "llama3");
    EXPECT_NE(srv->Log().find("llama3"), std::string::npos) << srv->Log();
  }
  {
    START_SERVER(srv, {"-m", SharedPath(model), "--chat-template",
                       "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"});
    EXPECT_EQ(srv->Get("/props").Json()["chat_template_name"], "custom");
    const json msgs = {{{"role", "user"}, {"content", "The cat"}}};
    const json r = srv->Post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 2}}).Json();
    // The template prints BOS itself, so the tokenizer must not add a second one.
    const json ids = srv->Post("/tokenize", {{"content", "<s>user: The cat\n"}}).Json()["tokens"];
    EXPECT_EQ(ids[0], 1);
    EXPECT_EQ(r["usage"]["prompt_tokens"], ids.size()) << r.dump() << ids.dump();
  }
  auto bad = ServerProcess::Launch({"-m", SharedPath(model), "--chat-template", "{% for x in %}"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (bad->Running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(bad->exit_status(), 1);
  EXPECT_NE(bad->Log().find("--chat-template"), std::string::npos) << bad->Log();
}

}  // namespace
}  // namespace lazyslot::testing
