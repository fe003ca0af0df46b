// Regression runner for the libFuzzer targets in fuzz/: built with the normal compiler (no libFuzzer), it feeds
// every seed in fuzz/corpus/<target>/ and every saved crash in fuzz/regressions/<target>/ through the target.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test_util.h"

// Each target's LLVMFuzzerTestOneInput, renamed per target by CMake (they cannot share one name here).
extern "C" int LazyslotFuzzGguf(const uint8_t* data, size_t size);
extern "C" int LazyslotFuzzTokenizer(const uint8_t* data, size_t size);
extern "C" int LazyslotFuzzRequest(const uint8_t* data, size_t size);
extern "C" int LazyslotFuzzChatTemplate(const uint8_t* data, size_t size);
extern "C" int LazyslotFuzzJsonSchema(const uint8_t* data, size_t size);
extern "C" int LazyslotFuzzGbnf(const uint8_t* data, size_t size);
extern "C" int LazyslotFuzzPreset(const uint8_t* data, size_t size);
extern "C" int LazyslotFuzzKvState(const uint8_t* data, size_t size);
extern "C" int LazyslotFuzzAnthropic(const uint8_t* data, size_t size);
extern "C" int LazyslotFuzzResponses(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;
using FuzzFn = int (*)(const uint8_t*, size_t);

// GGUF inputs are files, so they are not kept in the repository: the gguf target replays the files in
// ../shared (every malformed file of models/invalid/, a small model and an SPM and a BPE vocabulary).
const char* const kSharedGgufInputs[] = {"models/stories260K.gguf", "models/vocab/ggml-vocab-llama-spm.gguf",
                                         "models/vocab/ggml-vocab-gpt-2.gguf"};

std::vector<fs::path> InputsOf(const std::string& target) {
  std::vector<fs::path> files;
  if (target == "gguf") {
    for (const char* rel : kSharedGgufInputs) files.push_back(lazyslot::testing::SharedPath(rel));
    const fs::path invalid = lazyslot::testing::SharedPath("models/invalid");
    if (fs::is_directory(invalid)) {
      for (const auto& e : fs::directory_iterator(invalid)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    }
  }
  for (const char* kind : {"corpus", "regressions"}) {
    const fs::path dir = fs::path(LAZYSLOT_SOURCE_DIR) / "fuzz" / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Runs every input; stops at the first one that throws (a failed property or an escaping exception).
void RunAll(const std::string& target, FuzzFn fn) {
  const std::vector<fs::path> files = InputsOf(target);
  ASSERT_FALSE(files.empty()) << "no seed corpus for " << target;
  for (const fs::path& p : files) {
    std::ifstream in(p, std::ios::binary);
    ASSERT_TRUE(in) << "cannot read " << p;
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      EXPECT_EQ(fn(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0) << p;
    } catch (const std::exception& e) {
      FAIL() << target << " input " << p << ": " << e.what();
    } catch (...) {
      FAIL() << target << " input " << p << ": unknown exception";
    }
  }
  std::printf("[ fuzz     ] %s: %zu inputs\n", target.c_str(), files.size());
}

TEST(FuzzRegression, Gguf) {
  for (const char* rel : kSharedGgufInputs) REQUIRE_SHARED_FILE(rel);
  REQUIRE_SHARED_FILE("models/invalid");
  RunAll("gguf", LazyslotFuzzGguf);
}

TEST(FuzzRegression, Tokenizer) {
  REQUIRE_SHARED_FILE("models/vocab/ggml-vocab-llama-spm.gguf");
  REQUIRE_SHARED_FILE("models/vocab/ggml-vocab-qwen3-derived.gguf");
  REQUIRE_SHARED_FILE("models/vocab/ggml-vocab-llama3-derived.gguf");
  REQUIRE_SHARED_FILE("models/vocab/ggml-vocab-gpt-2.gguf");
  RunAll("tokenizer", LazyslotFuzzTokenizer);
}

TEST(FuzzRegression, Request) { RunAll("request", LazyslotFuzzRequest); }

TEST(FuzzRegression, ChatTemplate) { RunAll("chat_template", LazyslotFuzzChatTemplate); }

TEST(FuzzRegression, JsonSchema) { RunAll("json_schema", LazyslotFuzzJsonSchema); }

TEST(FuzzRegression, Gbnf) { RunAll("gbnf", LazyslotFuzzGbnf); }

TEST(FuzzRegression, Preset) { RunAll("preset", LazyslotFuzzPreset); }

TEST(FuzzRegression, KvState) { RunAll("kv_state", LazyslotFuzzKvState); }

TEST(FuzzRegression, Anthropic) { RunAll("anthropic", LazyslotFuzzAnthropic); }

TEST(FuzzRegression, Responses) { RunAll("responses", LazyslotFuzzResponses); }

}  // namespace
