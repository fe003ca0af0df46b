// File::OpenBuffer: the in-memory reader (used by fuzz/gguf_fuzz.cpp) must accept and reject exactly what
// File::Open does, and expose the same metadata, tensor table and tensor bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "gguf/gguf.h"
#include "test_util.h"

namespace lazyslot::gguf {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(GgufBuffer, MatchesOpenOnARealModel) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  const std::string path = testing::SharedPath("models/stories260K.gguf");
  auto mapped = File::Open(path);
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  const std::string bytes = ReadAll(path);
  ASSERT_EQ(bytes.size(), (*mapped)->file_size());
  auto buffered = File::OpenBuffer(bytes, "in-memory");
  ASSERT_TRUE(buffered.ok()) << buffered.status().message();
  const File& a = **mapped;
  const File& b = **buffered;
  EXPECT_EQ(b.path(), "in-memory");
  EXPECT_EQ(b.version(), a.version());
  EXPECT_EQ(b.alignment(), a.alignment());
  EXPECT_EQ(b.data_size(), a.data_size());
  ASSERT_EQ(b.metadata().size(), a.metadata().size());
  for (size_t k = 0; k < a.metadata().size(); ++k) {
    EXPECT_EQ(b.metadata()[k].key, a.metadata()[k].key);
    EXPECT_EQ(b.metadata()[k].value.array_size(), a.metadata()[k].value.array_size());
  }
  ASSERT_EQ(b.tensors().size(), a.tensors().size());
  ASSERT_GT(a.tensors().size(), 0u);
  for (size_t k = 0; k < a.tensors().size(); ++k) {
    const TensorInfo& ta = a.tensors()[k];
    const TensorInfo& tb = b.tensors()[k];
    EXPECT_EQ(tb.name, ta.name);
    EXPECT_EQ(tb.offset, ta.offset);
    ASSERT_EQ(tb.nbytes, ta.nbytes);
    EXPECT_EQ(std::memcmp(b.TensorData(tb), a.TensorData(ta), ta.nbytes), 0) << ta.name;
    // The copy is 64-byte aligned, so tensor data is at least as aligned as its offset allows.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.TensorData(tb)) % 32, 0u) << ta.name;
  }
  EXPECT_TRUE(b.ReleaseResidentPages().ok());
}

TEST(GgufBuffer, TruncatedCopyFailsLikeTheFileAndNamesTheLabel) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  const std::string bytes = ReadAll(testing::SharedPath("models/stories260K.gguf"));
  for (size_t cut : {size_t{3}, size_t{20}, size_t{1000}, bytes.size() - 1}) {
    auto f = File::OpenBuffer(std::string_view(bytes).substr(0, cut), "cut.gguf");
    ASSERT_FALSE(f.ok()) << "cut at " << cut;
    EXPECT_EQ(f.status().code(), Code::kCorrupt) << f.status().message();
    EXPECT_NE(f.status().message().find("cut.gguf"), std::string::npos) << f.status().message();
  }
}

TEST(GgufBuffer, EmptyBufferIsRejected) {
  auto f = File::OpenBuffer("", "empty");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("empty"), std::string::npos);
}

TEST(GgufBuffer, HeaderOnlyFileIsAccepted) {
  // magic, version 3, zero tensors, zero key-values: a valid (if useless) file.
  std::string bytes = "GGUF";
  const uint32_t version = 3;
  const int64_t zero = 0;
  bytes.append(reinterpret_cast<const char*>(&version), 4);
  bytes.append(reinterpret_cast<const char*>(&zero), 8);
  bytes.append(reinterpret_cast<const char*>(&zero), 8);
  auto f = File::OpenBuffer(bytes, "header-only");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->version(), 3u);
  EXPECT_TRUE((*f)->metadata().empty());
  EXPECT_TRUE((*f)->tensors().empty());
}

}  // namespace
}  // namespace lazyslot::gguf
