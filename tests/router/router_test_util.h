// Helpers of the router tests: a temporary models directory filled with links to (or writable copies of)
// the shared test models, a small base EngineConfig, and a greedy generation through a lease.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/drain.h"
#include "router/router.h"
#include "test_util.h"

namespace lazyslot::testing {

class TempModelsDir {
 public:
  TempModelsDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lazyslot-router-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempModelsDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Path(const std::string& name) const { return path_ + "/" + name; }

  // `name` in the directory, a symlink to the shared model `shared_model` (e.g. "stories260K.gguf").
  std::string Link(const std::string& shared_model, const std::string& name) {
    const std::string to = Path(name);
    std::filesystem::create_symlink(SharedPath("models/" + shared_model), to);
    return to;
  }
  // A writable copy (for the tests that truncate, delete or replace it).
  std::string Copy(const std::string& shared_model, const std::string& name) {
    const std::string to = Path(name);
    std::filesystem::copy_file(SharedPath("models/" + shared_model), to,
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::permissions(to,
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return to;
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string to = Path(name);
    std::ofstream(to, std::ios::binary) << text;
    return to;
  }

 private:
  std::string path_;
};

// A router, or null with the error as a test failure.
inline std::unique_ptr<Router> MakeRouter(RouterConfig config) {
  Result<std::unique_ptr<Router>> r = Router::Create(std::move(config));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

inline EngineConfig SmallBase() {
  EngineConfig c;
  c.n_ctx = 256;
  c.n_parallel = 1;
  c.warmup = false;
  return c;
}

inline RouterConfig DirConfig(const std::string& dir, int models_max = 0) {
  RouterConfig c;
  c.base = SmallBase();
  c.sources.models_dir = dir;
  c.models_max = models_max;
  c.n_threads = 2;
  return c;
}

inline GenerationRequest Greedy(std::vector<TokenId> prompt, int32_t n) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.n_predict = n;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  return r;
}

// n greedy tokens after "Once upon a time" on the leased model; empty (and a test failure) on error.
inline std::vector<TokenId> Generate(const ModelLease& lease, int32_t n = 8) {
  Result<std::vector<TokenId>> prompt = lease.engine().tokenizer().Tokenize("Once upon a time", true, false);
  if (!prompt.ok()) {
    ADD_FAILURE() << prompt.status().ToString();
    return {};
  }
  auto stream = lease.engine().Submit(Greedy(*prompt, n));
  if (!stream.ok()) {
    ADD_FAILURE() << stream.status().ToString();
    return {};
  }
  Collected c = Drain(**stream);
  EXPECT_FALSE(c.error) << c.done.error.ToString();
  return c.tokens;
}

inline const ModelInfo* FindInfo(const std::vector<ModelInfo>& list, const std::string& id) {
  for (const ModelInfo& m : list) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

inline ModelStatus StatusOf(const Router& r, const std::string& id) {
  Result<ModelInfo> m = r.Info(id);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? m->status : ModelStatus::kUnloaded;
}

// The engine publishes its figures between steps, so a status that follows a request may lag a little.
inline bool WaitForStatus(const Router& r, const std::string& id, ModelStatus want) {
  for (int i = 0; i < 200; ++i) {
    if (StatusOf(r, id) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace lazyslot::testing
