// gguf::Mapping through File: the huge-page copy holds the file's bytes at the very addresses the mapping
// had, gives its memory back on release (the file mapping serves meanwhile) and comes back on restore, and a
// reader running through all of it never sees other bytes; a copy transform rewrites each copy, never the
// file.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "core/vm.h"
#include "gguf/gguf.h"
#include "test_util.h"

namespace lazyslot::gguf {
namespace {

// 16 MiB: several 2 MiB pages, and a tail past the last whole one.
constexpr const char* kModel = "models/qwen3-vocab-tiny-q8_0.gguf";

std::string Bytes(const File& f) {
  return std::string(reinterpret_cast<const char*>(f.data_begin()), f.data_size());
}

uint64_t MappingBytes(const File& f, const char* field) {
  Result<uint64_t> b = vm::MappingFieldBytes(f.data_begin(), field);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? *b : 0;
}

TEST(GgufMapping, CopyOntoHugePagesKeepsAddressesAndBytes) {
  REQUIRE_SHARED_FILE(kModel);
  auto r = File::Open(testing::SharedPath(kModel));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const File& f = **r;
  EXPECT_FALSE(f.on_huge_pages());
  const std::string before = Bytes(f);
  const uint8_t* at = f.data_begin();
  const Status st = f.CopyToHugePages();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(f.on_huge_pages());
  EXPECT_EQ(f.data_begin(), at);
  EXPECT_TRUE(Bytes(f) == before);
  // The kernel may always fall back to small pages, but on a machine with free memory it does not.
  EXPECT_GE(MappingBytes(f, "AnonHugePages"), uint64_t{2} << 20);
  EXPECT_TRUE(f.CopyToHugePages().ok()) << "a second copy is a no-op";
}

TEST(GgufMapping, ReleaseGivesTheCopyBackAndRestoreBringsItAgain) {
  REQUIRE_SHARED_FILE(kModel);
  auto r = File::Open(testing::SharedPath(kModel));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const File& f = **r;
  const std::string before = Bytes(f);
  ASSERT_TRUE(f.CopyToHugePages().ok());
  EXPECT_GE(MappingBytes(f, "Rss"), f.data_size());

  ASSERT_TRUE(f.ReleaseResidentPages().ok());
  EXPECT_FALSE(f.on_huge_pages());
  EXPECT_EQ(MappingBytes(f, "Rss"), 0u) << "the copy's memory went back; nothing is paged in yet";
  EXPECT_TRUE(Bytes(f) == before) << "the file mapping serves the same bytes";

  ASSERT_TRUE(f.RestoreAfterRelease().ok());
  EXPECT_TRUE(f.on_huge_pages());
  EXPECT_TRUE(Bytes(f) == before);
  EXPECT_GE(MappingBytes(f, "AnonHugePages"), uint64_t{2} << 20);
}

TEST(GgufMapping, AFileMappingReleasesAndNeedsNoRestore) {
  REQUIRE_SHARED_FILE(kModel);
  auto r = File::Open(testing::SharedPath(kModel));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const File& f = **r;
  const std::string before = Bytes(f);
  EXPECT_GE(MappingBytes(f, "Rss"), f.data_size());
  ASSERT_TRUE(f.ReleaseResidentPages().ok());
  EXPECT_EQ(MappingBytes(f, "Rss"), 0u);
  ASSERT_TRUE(f.RestoreAfterRelease().ok());
  EXPECT_FALSE(f.on_huge_pages()) << "restore copies only a file that was copied before";
  EXPECT_TRUE(Bytes(f) == before);
}

// A copy transform (docs/decisions/0012) rewrites the copy that serves now and every later one, never the
// file mapping; removed, the next copy holds the file's bytes again.
TEST(GgufMapping, ACopyTransformRewritesEveryCopyAndNeverTheFile) {
  REQUIRE_SHARED_FILE(kModel);
  auto r = File::Open(testing::SharedPath(kModel));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const File& f = **r;
  const std::string before = Bytes(f);
  ASSERT_GT(before.size(), 4096u);
  std::string rewritten = before;
  for (size_t i = 0; i < 4096; ++i) rewritten[i] = static_cast<char>(~rewritten[i]);
  const auto flip = [](uint8_t* data) {
    for (size_t i = 0; i < 4096; ++i) data[i] = static_cast<uint8_t>(~data[i]);
  };
  EXPECT_TRUE(f.SetCopyTransform(flip).ok());
  EXPECT_TRUE(Bytes(f) == before) << "the file mapping is never rewritten";
  ASSERT_TRUE(f.CopyToHugePages().ok());
  EXPECT_TRUE(Bytes(f) == rewritten) << "the copy is";

  ASSERT_TRUE(f.ReleaseResidentPages().ok());
  EXPECT_TRUE(Bytes(f) == before);
  ASSERT_TRUE(f.RestoreAfterRelease().ok());
  EXPECT_TRUE(Bytes(f) == rewritten) << "and so is each copy after a release";

  ASSERT_TRUE(f.SetCopyTransform(nullptr).ok());
  EXPECT_TRUE(Bytes(f) == rewritten) << "removing it leaves the current copy";
  ASSERT_TRUE(f.ReleaseResidentPages().ok());
  ASSERT_TRUE(f.RestoreAfterRelease().ok());
  EXPECT_TRUE(Bytes(f) == before) << "the next copy holds the file's bytes";

  EXPECT_TRUE(f.SetCopyTransform(flip).ok());
  EXPECT_TRUE(Bytes(f) == rewritten) << "set on a serving copy, it rewrites that copy at once";
}

TEST(GgufMapping, AReaderSeesTheSameBytesThroughReleaseAndRestore) {
  REQUIRE_SHARED_FILE(kModel);
  auto r = File::Open(testing::SharedPath(kModel));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const File& f = **r;
  auto sum = [&f] {
    uint64_t s = 0;
    for (uint64_t i = 0; i < f.data_size(); ++i) s = s * 31 + f.data_begin()[i];
    return s;
  };
  const uint64_t want = sum();
  ASSERT_TRUE(f.CopyToHugePages().ok());
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, wrong{0};
  std::thread reader([&] {
    while (!stop.load()) {
      if (sum() != want) wrong.fetch_add(1);
      reads.fetch_add(1);
    }
  });
  // At least 6 round trips, and on until the reader has made 6 passes through them.
  for (int i = 0; i < 6 || (reads.load() < 6 && i < 10000); ++i) {
    ASSERT_TRUE(f.ReleaseResidentPages().ok());
    ASSERT_TRUE(f.RestoreAfterRelease().ok());
  }
  stop = true;
  reader.join();
  EXPECT_EQ(wrong.load(), 0) << "of " << reads.load() << " passes";
  EXPECT_TRUE(f.on_huge_pages());
}

TEST(GgufMapping, TensorsLeftToTheFileStayOffTheCopyThroughReleaseAndRestore) {
  REQUIRE_SHARED_FILE(kModel);
  auto r = File::Open(testing::SharedPath(kModel));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const File& f = **r;
  const TensorInfo* big = &f.tensors().front();
  for (const TensorInfo& t : f.tensors()) {
    if (t.nbytes > big->nbytes) big = &t;
  }
  ASSERT_GT(big->nbytes, uint64_t{1} << 20);
  const std::string before = Bytes(f);
  const uint8_t* mid = f.TensorData(*big) + big->nbytes / 2;
  const uint8_t* header = f.data_begin() - 4096;  // the vocabulary's strings, ahead of the tensors
  ASSERT_TRUE(f.CopyToHugePages({big}).ok());
  for (int round = 0; round < 2; ++round) {
    Result<uint64_t> anon = vm::MappingFieldBytes(mid, "Anonymous");
    ASSERT_TRUE(anon.ok());
    EXPECT_EQ(*anon, 0u) << "round " << round << ": the tensor is the file's pages";
    Result<uint64_t> rss = vm::MappingRssBytes(mid);
    ASSERT_TRUE(rss.ok());
    EXPECT_EQ(*rss, 0u) << "round " << round << ": nothing of it was read into this mapping yet";
    Result<uint64_t> copy = vm::MappingFieldBytes(header, "Anonymous");
    ASSERT_TRUE(copy.ok());
    EXPECT_GT(*copy, 0u) << "round " << round << ": the rest is the copy";
    EXPECT_TRUE(Bytes(f) == before) << "round " << round;
    ASSERT_TRUE(f.ReleaseResidentPages().ok());
    ASSERT_TRUE(f.RestoreAfterRelease().ok());
  }
}

TEST(GgufMapping, AnInMemoryFileHasNothingToCopy) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  std::ifstream in(testing::SharedPath("models/stories260K.gguf"), std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto b = File::OpenBuffer(whole, "in-memory");
  ASSERT_TRUE(b.ok()) << b.status().message();
  const Status st = (*b)->CopyToHugePages();
  EXPECT_EQ(st.code(), Code::kUnimplemented) << st.message();
  EXPECT_FALSE((*b)->on_huge_pages());
  EXPECT_TRUE((*b)->ReleaseResidentPages().ok());
  EXPECT_TRUE((*b)->RestoreAfterRelease().ok());
}

}  // namespace
}  // namespace lazyslot::gguf
