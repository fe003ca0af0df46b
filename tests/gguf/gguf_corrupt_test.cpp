// GGUF reader on hostile input: hand-built broken files and truncations of valid ones. Each must be rejected
// with a message naming the problem, and none may crash (these also run under ASan).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "raw_gguf.h"
#include "test_util.h"

namespace lazyslot::gguf {
namespace {

using ::lazyslot::testing::RawGguf;
using ::lazyslot::testing::ReadAll;
using ::lazyslot::testing::ScratchDir;
using ::lazyslot::testing::SharedPath;

class GgufCorrupt : public ::testing::Test {
 protected:
  // Writes `raw`, opens it, and expects a Corrupt error containing every one of `needles`.
  void ExpectRejected(const RawGguf& raw, std::initializer_list<const char*> needles) {
    const std::string path = dir_.WriteFile("case_" + std::to_string(n_++) + ".gguf", raw.bytes());
    auto r = File::Open(path);
    ASSERT_FALSE(r.ok()) << "accepted a broken file";
    EXPECT_EQ(r.status().code(), Code::kCorrupt) << r.status().ToString();
    const std::string m = r.status().message();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    for (const char* n : needles)
      EXPECT_NE(m.find(n), std::string::npos) << "missing '" << n << "' in: " << m;
  }
  void ExpectAccepted(const RawGguf& raw) {
    const std::string path = dir_.WriteFile("ok_" + std::to_string(n_++) + ".gguf", raw.bytes());
    auto r = File::Open(path);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  }
  // A valid single-tensor file: one KV, tensor "t" = f32[8] at offset 0.
  static RawGguf Valid() {
    RawGguf r;
    r.Header(3, 1, 1).KvU32("k", 1).Info("t", {8}, 0, 0).PadTo(32).Zeros(32);
    return r;
  }
  ScratchDir dir_;
  int n_ = 0;
};

TEST_F(GgufCorrupt, ValidBaselineOpens) { ExpectAccepted(Valid()); }

TEST_F(GgufCorrupt, WrongMagic) {
  RawGguf r;
  r.Magic("GGML").Put<uint32_t>(3).Put<int64_t>(0).Put<int64_t>(0);
  ExpectRejected(r, {"bad magic", "47 47 4d 4c"});
}

TEST_F(GgufCorrupt, EmptyAndTinyFiles) {
  ExpectRejected(RawGguf(), {"empty"});
  RawGguf r;
  r.Put<uint16_t>(0x4747);
  ExpectRejected(r, {"too small"});
}

TEST_F(GgufCorrupt, Versions) {
  RawGguf v1, v0, v4, swapped;
  v1.Header(1, 0, 0);
  ExpectRejected(v1, {"version 1"});
  v0.Header(0, 0, 0);
  ExpectRejected(v0, {"version 0"});
  v4.Header(4, 0, 0);
  ExpectRejected(v4, {"version 4"});
  swapped.Header(0x03000000, 0, 0);
  ExpectRejected(swapped, {"byte-swapped"});
  RawGguf v2;
  v2.Header(2, 0, 0);
  ExpectAccepted(v2);
}

TEST_F(GgufCorrupt, AbsurdCounts) {
  RawGguf kv;
  kv.Header(3, 0, int64_t{1} << 60).KvU32("k", 1);
  ExpectRejected(kv, {"n_kv 1152921504606846976", "impossible"});
  RawGguf tensors;
  tensors.Header(3, int64_t{1} << 60, 0);
  ExpectRejected(tensors, {"n_tensors", "impossible"});
  RawGguf negative;
  negative.Header(3, -1, 0);
  ExpectRejected(negative, {"n_tensors", "negative"});
}

TEST_F(GgufCorrupt, StringLengths) {
  RawGguf huge;
  huge.Header(3, 0, 1).Put<uint64_t>(~uint64_t{0}).Zeros(16);
  ExpectRejected(huge, {"key #0", "length 18446744073709551615", "2^30"});
  RawGguf past;
  past.Header(3, 0, 1).Put<uint64_t>(1000).Zeros(20);
  ExpectRejected(past, {"key #0", "runs past the end"});
  RawGguf value;
  value.Header(3, 0, 1).Str("k").Put<uint32_t>(8).Put<uint64_t>(uint64_t{1} << 40).Zeros(8);
  ExpectRejected(value, {"key 'k'", "2^30"});
}

TEST_F(GgufCorrupt, Arrays) {
  RawGguf count;
  count.Header(3, 0, 1)
      .Str("arr")
      .Put<uint32_t>(9)
      .Put<uint32_t>(4)
      .Put<uint64_t>(uint64_t{1} << 40)
      .Zeros(8);
  ExpectRejected(count, {"key 'arr'", "array count 1099511627776", "2^30"});
  RawGguf past;
  past.Header(3, 0, 1).Str("arr").Put<uint32_t>(9).Put<uint32_t>(8).Put<uint64_t>(1000).Zeros(8);
  ExpectRejected(past, {"key 'arr'", "runs past the end"});
  RawGguf nested;
  nested.Header(3, 0, 1).Str("arr").Put<uint32_t>(9).Put<uint32_t>(9).Put<uint64_t>(1).Zeros(16);
  ExpectRejected(nested, {"key 'arr'", "nested arrays"});
  RawGguf elem;
  elem.Header(3, 0, 1).Str("arr").Put<uint32_t>(9).Put<uint32_t>(13).Put<uint64_t>(1).Zeros(16);
  ExpectRejected(elem, {"key 'arr'", "unknown array element type 13"});
  RawGguf strings;  // an array of strings whose second element runs past the end
  strings.Header(3, 0, 1)
      .Str("arr")
      .Put<uint32_t>(9)
      .Put<uint32_t>(8)
      .Put<uint64_t>(2)
      .Str("ok")
      .Put<uint64_t>(100);
  ExpectRejected(strings, {"key 'arr'", "array string length 100"});
}

TEST_F(GgufCorrupt, ValueTypes) {
  RawGguf unknown;
  unknown.Header(3, 0, 1).Str("k").Put<uint32_t>(77).Zeros(8);
  ExpectRejected(unknown, {"key 'k'", "unknown value type 77"});
  RawGguf dup;
  dup.Header(3, 0, 2).KvU32("k", 1).KvU32("k", 2);
  ExpectRejected(dup, {"key 'k'", "duplicate key"});
}

TEST_F(GgufCorrupt, Alignment) {
  RawGguf npot;
  npot.Header(3, 0, 1).KvU32("general.alignment", 48);
  ExpectRejected(npot, {"general.alignment", "48 is not a power of two"});
  RawGguf zero;
  zero.Header(3, 0, 1).KvU32("general.alignment", 0);
  ExpectRejected(zero, {"general.alignment", "not a power of two"});
  RawGguf type;
  type.Header(3, 0, 1).Str("general.alignment").Put<uint32_t>(10).Put<uint64_t>(32);
  ExpectRejected(type, {"general.alignment", "has type u64, expected u32"});
  RawGguf ok;
  ok.Header(3, 1, 1).KvU32("general.alignment", 64).Info("t", {8}, 0, 0).PadTo(64).Zeros(64);
  ExpectAccepted(ok);
}

TEST_F(GgufCorrupt, TensorInfos) {
  RawGguf dims;
  dims.Header(3, 1, 0).Info("t", {1, 1, 1, 1, 8}, 0, 0).PadTo(32).Zeros(32);
  ExpectRejected(dims, {"tensor 't' (info at offset 24)", "n_dims 5"});
  RawGguf type;
  type.Header(3, 1, 0).Info("t", {8}, 99, 0).PadTo(32).Zeros(32);
  ExpectRejected(type, {"tensor 't'", "unknown tensor type id 99"});
  RawGguf retired;
  retired.Header(3, 1, 0).Info("t", {32}, 4, 0).PadTo(32).Zeros(64);
  ExpectRejected(retired, {"unknown tensor type id 4"});
  RawGguf neg;
  neg.Header(3, 1, 0).Info("t", {8, -2}, 0, 0).PadTo(32).Zeros(32);
  ExpectRejected(neg, {"tensor 't'", "ne[1] = -2 is negative"});
  RawGguf overflow;
  overflow.Header(3, 1, 0).Info("t", {int64_t{1} << 32, int64_t{1} << 32}, 0, 0).PadTo(32).Zeros(32);
  ExpectRejected(overflow, {"tensor 't'", "overflows"});
  RawGguf rows_overflow;  // zero elements, but the row count overflows
  rows_overflow.Header(3, 1, 0).Info("t", {0, int64_t{1} << 32, int64_t{1} << 32}, 0, 0).PadTo(32).Zeros(32);
  ExpectRejected(rows_overflow, {"tensor 't'", "overflows"});
  RawGguf bytes_overflow;  // element count fits int64, the byte count does not fit 64 bits
  bytes_overflow.Header(3, 1, 0).Info("t", {int64_t{1} << 61}, 27, 0).PadTo(32).Zeros(32);
  ExpectRejected(bytes_overflow, {"tensor 't'", "overflows"});
  RawGguf block;
  block.Header(3, 1, 0).Info("blk.0.attn_q.weight", {172, 2}, 8, 0).PadTo(32).Zeros(512);
  ExpectRejected(
      block, {"tensor 'blk.0.attn_q.weight'", "row length 172 is not a multiple of the q8_0 block size 32"});
  RawGguf name;
  name.Header(3, 1, 0).Info(std::string(64, 'n'), {8}, 0, 0).PadTo(32).Zeros(32);
  ExpectRejected(name, {"64 bytes", "shorter than 64"});
  RawGguf dup;
  dup.Header(3, 2, 0).Info("t", {8}, 0, 0).Info("t", {8}, 0, 32).PadTo(32).Zeros(64);
  ExpectRejected(dup, {"tensor 't'", "duplicate tensor name"});
}

TEST_F(GgufCorrupt, TensorOffsets) {
  RawGguf misaligned;
  misaligned.Header(3, 1, 0).Info("t", {8}, 0, 16).PadTo(32).Zeros(64);
  ExpectRejected(misaligned, {"tensor 't'", "offset 16 is not a multiple of the alignment 32"});
  RawGguf past;
  past.Header(3, 1, 0).Info("t", {8}, 0, 1 << 20).PadTo(32).Zeros(32);
  ExpectRejected(past, {"tensor 't'", "runs past the end of the file"});
  RawGguf huge;
  huge.Header(3, 1, 0).Info("t", {8}, 0, ~uint64_t{31}).PadTo(32).Zeros(32);
  ExpectRejected(huge, {"tensor 't'", "runs past the end of the file"});
  RawGguf overlap;
  overlap.Header(3, 2, 0).Info("a", {16}, 0, 0).Info("b", {8}, 0, 32).PadTo(32).Zeros(128);
  ExpectRejected(overlap, {"tensor 'b'", "overlaps tensor 'a'"});
  // Not packed in table order, but aligned and disjoint: accepted.
  RawGguf reordered;
  reordered.Header(3, 2, 0).Info("a", {8}, 0, 64).Info("b", {8}, 0, 0).PadTo(32).Zeros(128);
  ExpectAccepted(reordered);
  // The data section itself must exist when there are tensors.
  RawGguf no_data;
  no_data.Header(3, 1, 0).Info("t", {0}, 0, 0);
  ExpectRejected(no_data, {"data section starts at"});
}

// Every prefix of a small valid file fails cleanly, until the last tensor's bytes are all present.
TEST_F(GgufCorrupt, EveryPrefixOfASmallFile) {
  Writer w;
  w.SetString("general.architecture", "llama");
  w.SetArrayString("tokenizer.ggml.tokens", {"a", "bb", "ccc"});
  w.SetArrayF32("tokenizer.ggml.scores", {0, 1, 2});
  w.SetU32("general.alignment", 32);
  ASSERT_TRUE(w.AddTensor("x", TensorType::kF32, {8}, std::vector<uint8_t>(32, 1)).ok());
  ASSERT_TRUE(w.AddTensor("y", TensorType::kQ8_0, {32}, std::vector<uint8_t>(34, 2)).ok());
  const std::string full_path = dir_.Path("small.gguf");
  ASSERT_TRUE(w.Write(full_path).ok());
  const std::vector<uint8_t> full = ReadAll(full_path);
  auto whole = File::Open(full_path);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  const TensorInfo& last = (*whole)->tensors().back();
  const size_t needed = (*whole)->file_size() - (*whole)->data_size() + last.offset + last.nbytes;
  for (size_t cut = 0; cut < full.size(); ++cut) {
    const std::string p = dir_.WriteFile("prefix.gguf", full.data(), cut);
    auto r = File::Open(p);
    if (cut < needed) {
      ASSERT_FALSE(r.ok()) << "prefix of " << cut << " bytes accepted";
      EXPECT_FALSE(r.status().message().empty());
    } else {
      EXPECT_TRUE(r.ok()) << cut << ": " << r.status().ToString();
    }
  }
}

// ~200 cut points across a real model's header and metadata, plus cuts inside its tensor data.
TEST_F(GgufCorrupt, TruncatedRealModel) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-q8_0.gguf");
  const std::vector<uint8_t> full = ReadAll(SharedPath("models/qwen3-tiny-q8_0.gguf"));
  auto whole = File::Open(SharedPath("models/qwen3-tiny-q8_0.gguf"));
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  const size_t data_start = (*whole)->file_size() - (*whole)->data_size();
  std::vector<size_t> cuts;
  for (size_t k = 0; k < 200; ++k) cuts.push_back(data_start * k / 200);
  for (size_t k = 1; k < 20; ++k) cuts.push_back(data_start + (full.size() - data_start) * k / 20);
  cuts.push_back(full.size() - 1);
  for (size_t cut : cuts) {
    const std::string p = dir_.WriteFile("cut.gguf", full.data(), cut);
    auto r = File::Open(p);
    ASSERT_FALSE(r.ok()) << "truncation at " << cut << " accepted";
    const std::string m = r.status().message();
    const bool named = m.find("truncated") != std::string::npos || m.find("runs past") != std::string::npos ||
                       m.find("impossible") != std::string::npos || m.find("empty") != std::string::npos ||
                       m.find("too small") != std::string::npos;
    EXPECT_TRUE(named) << cut << ": " << m;
  }
}

// Flipping single header bytes of a real model must never crash (accepting is fine if still consistent).
TEST_F(GgufCorrupt, ByteFlipsInRealHeaderDoNotCrash) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-q4_k_m.gguf");
  std::vector<uint8_t> bytes = ReadAll(SharedPath("models/qwen3-tiny-q4_k_m.gguf"));
  auto whole = File::Open(SharedPath("models/qwen3-tiny-q4_k_m.gguf"));
  ASSERT_TRUE(whole.ok());
  const size_t data_start = (*whole)->file_size() - (*whole)->data_size();
  uint64_t state = 12345;
  for (int k = 0; k < 300; ++k) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const size_t at = (state >> 33) % data_start;
    const uint8_t old = bytes[at];
    bytes[at] ^= static_cast<uint8_t>(1u << ((state >> 20) & 7));
    const std::string p = dir_.WriteFile("flip.gguf", bytes);
    auto r = File::Open(p);
    if (!r.ok()) {
      EXPECT_FALSE(r.status().message().empty());
    }
    bytes[at] = old;
  }
}

}  // namespace
}  // namespace lazyslot::gguf
