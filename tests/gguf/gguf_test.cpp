// GGUF reader and writer on well-formed input: the shared model files, the two invalid shared files, a round
// trip of every value type through the writer, the typed getters and the tensor-type table.
#include "gguf/gguf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "gguf/writer.h"
#include "raw_gguf.h"
#include "test_util.h"

namespace lazyslot::gguf {
namespace {

using ::lazyslot::testing::ReadAll;
using ::lazyslot::testing::ScratchDir;
using ::lazyslot::testing::SharedPath;

std::vector<std::string> GgufFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".gguf") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

TEST(TensorType, TableMatchesGgml) {
  struct Want {
    uint32_t id;
    const char* name;
    int64_t block;
    size_t bytes;
  };
  const Want want[] = {
      {0, "f32", 1, 4},       {1, "f16", 1, 2},       {2, "q4_0", 32, 18},    {3, "q4_1", 32, 20},
      {6, "q5_0", 32, 22},    {7, "q5_1", 32, 24},    {8, "q8_0", 32, 34},    {9, "q8_1", 32, 36},
      {10, "q2_K", 256, 84},  {11, "q3_K", 256, 110}, {12, "q4_K", 256, 144}, {13, "q5_K", 256, 176},
      {14, "q6_K", 256, 210}, {15, "q8_K", 256, 292}, {24, "i8", 1, 1},       {25, "i16", 1, 2},
      {26, "i32", 1, 4},      {27, "i64", 1, 8},      {28, "f64", 1, 8},      {30, "bf16", 1, 2}};
  for (const Want& w : want) {
    const TypeTraits* t = LookupType(w.id);
    ASSERT_NE(t, nullptr) << w.id;
    EXPECT_STREQ(t->name, w.name);
    EXPECT_EQ(t->block_size, w.block) << w.name;
    EXPECT_EQ(t->block_bytes, w.bytes) << w.name;
  }
  for (uint32_t retired : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 1000u}) {
    EXPECT_EQ(LookupType(retired), nullptr) << retired;
  }
  TensorType t;
  ASSERT_TRUE(ParseTypeName("Q8_0", &t));
  EXPECT_EQ(t, TensorType::kQ8_0);
  ASSERT_TRUE(ParseTypeName("q4_k", &t));
  EXPECT_EQ(t, TensorType::kQ4_K);
  EXPECT_FALSE(ParseTypeName("q8", &t));
  EXPECT_FALSE(ParseTypeName("q8_00", &t));
  EXPECT_EQ(RowBytes(TensorType::kQ6_K, 512), 420u);
}

TEST(GgufReader, EverySharedModelOpens) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  std::vector<std::string> files = GgufFilesIn(SharedPath("models"));
  ASSERT_GE(files.size(), 10u);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    auto r = File::Open(path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const File& f = **r;
    EXPECT_TRUE(f.version() == 2 || f.version() == 3);
    ASSERT_FALSE(f.tensors().empty());
    EXPECT_NE(f.Find("general.architecture"), nullptr);
    EXPECT_NE(f.FindTensor("token_embd.weight"), nullptr);
    // llama.cpp's layout: offsets packed in table order, each padded to the alignment.
    uint64_t expect_offset = 0;
    for (const TensorInfo& t : f.tensors()) {
      EXPECT_EQ(t.offset, expect_offset) << t.name;
      expect_offset = t.offset + AlignUp(t.nbytes, f.alignment());
      EXPECT_EQ(t.nbytes, t.row_bytes() * static_cast<uint64_t>(t.n_rows())) << t.name;
      EXPECT_EQ(f.FindTensor(t.name), &t);
    }
    EXPECT_LE(f.tensors().back().offset + f.tensors().back().nbytes, f.data_size());
    EXPECT_EQ(f.data_begin() + f.data_size(),
              f.data_begin() + (f.file_size() - (f.file_size() - f.data_size())));
  }
}

TEST(GgufReader, VocabOnlyFilesOpen) {
  REQUIRE_SHARED_FILE("models/vocab/ggml-vocab-gpt-2.gguf");
  std::vector<std::string> files = GgufFilesIn(SharedPath("models/vocab"));
  ASSERT_GE(files.size(), 4u);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    auto r = File::Open(path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto tokens = (*r)->GetArray("tokenizer.ggml.tokens", ValueType::kString);
    ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
    EXPECT_GT((*tokens)->strings.size(), 100u);
    EXPECT_EQ((*tokens)->array_size(), (*tokens)->strings.size());
  }
}

TEST(GgufReader, Qwen3TinyMetadataAndTensors) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-q8_0.gguf");
  auto r = File::Open(SharedPath("models/qwen3-tiny-q8_0.gguf"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const File& f = **r;
  EXPECT_EQ(*f.GetString("general.architecture"), "qwen3");
  EXPECT_EQ(*f.GetU32("qwen3.embedding_length"), 256u);
  EXPECT_EQ(*f.GetU32("qwen3.block_count"), 2u);
  EXPECT_EQ(*f.GetU32("qwen3.attention.key_length"), 64u);
  EXPECT_EQ(*f.GetU32("general.file_type"), 7u);
  EXPECT_NEAR(*f.GetF32("qwen3.rope.freq_base"), 1e6f, 1.0f);
  auto heads = f.GetU32PerLayer("qwen3.attention.head_count", 2);
  ASSERT_TRUE(heads.ok());
  EXPECT_EQ(*heads, (std::vector<uint32_t>{4, 4}));
  // Wrong types are reported, never converted.
  auto wrong = f.GetU32("qwen3.rope.freq_base");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("has type f32, expected u32"), std::string::npos)
      << wrong.status().message();
  EXPECT_EQ(f.GetU32("no.such.key").status().code(), Code::kNotFound);
  EXPECT_EQ(*f.GetU32Or("no.such.key", 7), 7u);
  EXPECT_FALSE(f.GetU32Or("qwen3.rope.freq_base", 7).ok());
  EXPECT_EQ(*f.GetBoolOr("no.such.key", true), true);
  EXPECT_EQ(*f.GetU32PerLayerOr("no.such.key", 3, 5), (std::vector<uint32_t>{5, 5, 5}));

  const TensorInfo* embd = f.FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->type, TensorType::kQ8_0);
  EXPECT_EQ(embd->n_dims, 2u);
  EXPECT_EQ(embd->ne[0], 256);
  EXPECT_EQ(embd->ne[1], 512);
  EXPECT_EQ(embd->nbytes, 512u * 8 * 34);
  const TensorInfo* norm = f.FindTensor("blk.0.attn_q_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->type, TensorType::kF32);
  EXPECT_EQ(norm->ne[0], 64);
  // Data is readable in place, and stays readable after dropping the resident pages.
  const float* w = reinterpret_cast<const float*>(f.TensorData(*norm));
  std::vector<float> before(w, w + 64);
  for (float x : before) EXPECT_TRUE(std::isfinite(x));
  ASSERT_TRUE(f.ReleaseResidentPages().ok());
  EXPECT_EQ(std::vector<float>(w, w + 64), before);
  EXPECT_EQ(f.FindTensor("output.weight"), nullptr);  // tied
}

TEST(GgufReader, SharedInvalidFilesAreRejected) {
  REQUIRE_SHARED_FILE("models/invalid/gguf-v1.gguf");
  auto v1 = File::Open(SharedPath("models/invalid/gguf-v1.gguf"));
  ASSERT_FALSE(v1.ok());
  EXPECT_NE(v1.status().message().find("version 1"), std::string::npos) << v1.status().message();
  EXPECT_NE(v1.status().message().find("gguf-v1.gguf"), std::string::npos);

  REQUIRE_SHARED_FILE("models/invalid/q8_0-row-not-multiple-of-block.gguf");
  auto row = File::Open(SharedPath("models/invalid/q8_0-row-not-multiple-of-block.gguf"));
  ASSERT_FALSE(row.ok());
  const std::string m = row.status().message();
  EXPECT_NE(m.find("multiple of"), std::string::npos) << m;
  EXPECT_NE(m.find("172"), std::string::npos) << m;
  EXPECT_NE(m.find("q8_0 block size 32"), std::string::npos) << m;
  EXPECT_NE(m.find("tensor '"), std::string::npos) << m;
  EXPECT_NE(m.find("offset"), std::string::npos) << m;
}

TEST(GgufReader, MissingFileIsNotFound) {
  auto r = File::Open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos);
}

// Every value type, scalar and array, through Writer -> File.
TEST(GgufWriter, RoundTripEveryValueType) {
  ScratchDir dir;
  Writer w;
  w.SetU8("t.u8", 200);
  w.SetI8("t.i8", -100);
  w.SetU16("t.u16", 60000);
  w.SetI16("t.i16", -30000);
  w.SetU32("t.u32", 4000000000u);
  w.SetI32("t.i32", -2000000000);
  w.SetU64("t.u64", 18000000000000000000ull);
  w.SetI64("t.i64", -9000000000000000000ll);
  w.SetF32("t.f32", 1.5f);
  w.SetF64("t.f64", 3.141592653589793);
  w.SetBool("t.bool", true);
  w.SetBool("t.bool_false", false);
  w.SetString("t.str", "hello \xc4\xa0world");
  w.SetString("t.empty_str", "");
  w.SetArrayU32("t.arr_u32", {1, 2, 4000000000u});
  w.SetArrayI32("t.arr_i32", {-1, 0, 7});
  w.SetArrayF32("t.arr_f32", {0.25f, -2.0f});
  w.SetArrayString("t.arr_str", {"a", "", "<|im_end|>"});
  w.SetArrayString("t.arr_empty", {});
  w.SetU32("t.replaced", 1);
  w.SetU32("t.replaced", 2);
  const ValueType array_elems[] = {ValueType::kU8,  ValueType::kI8,  ValueType::kU16, ValueType::kI16,
                                   ValueType::kU64, ValueType::kI64, ValueType::kF64, ValueType::kBool};
  for (ValueType e : array_elems) {
    Value v;
    v.type = ValueType::kArray;
    v.elem_type = e;
    if (e == ValueType::kI8 || e == ValueType::kI16 || e == ValueType::kI64)
      v.ints = {-3, 0, 5};
    else if (e == ValueType::kF64)
      v.floats = {1e300, -0.5, 0};
    else
      v.uints = {1, 0, 1};
    ASSERT_TRUE(w.SetValue(std::string("t.arr_") + ValueTypeName(e), v).ok());
  }
  Value nested;
  nested.type = ValueType::kArray;
  nested.elem_type = ValueType::kArray;
  EXPECT_FALSE(w.SetValue("t.nested", nested).ok());

  // Tensors: an eager f32, a lazily filled q8_0 (34-byte blocks, so padding follows), an f16 3-D tensor.
  std::vector<uint8_t> f32(4 * 8 * 2);
  for (size_t k = 0; k < f32.size(); ++k) f32[k] = static_cast<uint8_t>(k);
  ASSERT_TRUE(w.AddTensor("a.weight", TensorType::kF32, {8, 2}, f32).ok());
  ASSERT_TRUE(w.AddTensor("b.weight", TensorType::kQ8_0, {64, 3}, [](uint8_t* dst, size_t n) {
                 for (size_t k = 0; k < n; ++k) dst[k] = static_cast<uint8_t>(k * 7);
                 return Status::Ok();
               }).ok());
  ASSERT_TRUE(w.AddTensor("c.weight", TensorType::kF16, {4, 3, 2}, std::vector<uint8_t>(48, 0xAB)).ok());
  // The writer refuses what the reader would reject.
  EXPECT_FALSE(w.AddTensor("a.weight", TensorType::kF32, {8, 2}, f32).ok());
  EXPECT_FALSE(w.AddTensor("bad", TensorType::kQ8_0, {33}, std::vector<uint8_t>(34)).ok());
  EXPECT_FALSE(w.AddTensor("short", TensorType::kF32, {8}, std::vector<uint8_t>(31)).ok());
  EXPECT_FALSE(w.AddTensor(std::string(64, 'x'), TensorType::kF32, {8}, std::vector<uint8_t>(32)).ok());
  EXPECT_FALSE(w.AddTensor("dims", TensorType::kF32, {1, 1, 1, 1, 1}, std::vector<uint8_t>(4)).ok());

  const std::string path = dir.Path("round_trip.gguf");
  std::vector<std::pair<uint64_t, uint64_t>> progress;
  ASSERT_TRUE(w.Write(path, [&](uint64_t d, uint64_t t) { progress.emplace_back(d, t); }).ok());
  EXPECT_EQ(std::filesystem::file_size(path), w.FileSize());
  ASSERT_EQ(progress.size(), 4u);
  EXPECT_EQ(progress.back().first, progress.back().second);
  EXPECT_EQ(progress.back().second, 64u + 3 * 2 * 34 + 48);

  auto r = File::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const File& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  auto get = [&](const char* key) -> const Value& {
    const Value* v = f.Find(key);
    EXPECT_NE(v, nullptr) << key;
    static const Value kEmpty;
    return v ? *v : kEmpty;
  };
  EXPECT_EQ(get("t.u8").type, ValueType::kU8);
  EXPECT_EQ(get("t.u8").u, 200u);
  EXPECT_EQ(get("t.i8").i, -100);
  EXPECT_EQ(get("t.u16").u, 60000u);
  EXPECT_EQ(get("t.i16").i, -30000);
  EXPECT_EQ(*f.GetU32("t.u32"), 4000000000u);
  EXPECT_EQ(get("t.i32").type, ValueType::kI32);
  EXPECT_EQ(get("t.i32").i, -2000000000);
  EXPECT_EQ(get("t.u64").u, 18000000000000000000ull);
  EXPECT_EQ(get("t.i64").i, -9000000000000000000ll);
  EXPECT_EQ(*f.GetF32("t.f32"), 1.5f);
  EXPECT_EQ(get("t.f64").type, ValueType::kF64);
  EXPECT_EQ(get("t.f64").f, 3.141592653589793);
  EXPECT_EQ(*f.GetBool("t.bool"), true);
  EXPECT_EQ(*f.GetBool("t.bool_false"), false);
  EXPECT_EQ(*f.GetString("t.str"), "hello \xc4\xa0world");
  EXPECT_EQ(*f.GetString("t.empty_str"), "");
  EXPECT_EQ(*f.GetU32("t.replaced"), 2u);
  EXPECT_EQ(get("t.arr_u32").uints, (std::vector<uint64_t>{1, 2, 4000000000u}));
  EXPECT_EQ(get("t.arr_i32").ints, (std::vector<int64_t>{-1, 0, 7}));
  EXPECT_EQ(get("t.arr_f32").floats, (std::vector<double>{0.25, -2.0}));
  EXPECT_EQ(get("t.arr_str").strings, (std::vector<std::string>{"a", "", "<|im_end|>"}));
  EXPECT_EQ(get("t.arr_empty").elem_type, ValueType::kString);
  EXPECT_EQ(get("t.arr_empty").array_size(), 0u);
  EXPECT_EQ(get("t.arr_i8").ints, (std::vector<int64_t>{-3, 0, 5}));
  EXPECT_EQ(get("t.arr_i16").ints, (std::vector<int64_t>{-3, 0, 5}));
  EXPECT_EQ(get("t.arr_i64").ints, (std::vector<int64_t>{-3, 0, 5}));
  EXPECT_EQ(get("t.arr_u8").uints, (std::vector<uint64_t>{1, 0, 1}));
  EXPECT_EQ(get("t.arr_u16").uints, (std::vector<uint64_t>{1, 0, 1}));
  EXPECT_EQ(get("t.arr_u64").uints, (std::vector<uint64_t>{1, 0, 1}));
  EXPECT_EQ(get("t.arr_bool").uints, (std::vector<uint64_t>{1, 0, 1}));
  EXPECT_EQ(get("t.arr_f64").floats, (std::vector<double>{1e300, -0.5, 0}));
  // Metadata keeps the writer's order (first set wins the position).
  EXPECT_EQ(f.metadata().front().key, "t.u8");
  EXPECT_EQ(f.Find("t.nested"), nullptr);

  ASSERT_EQ(f.tensors().size(), 3u);
  const TensorInfo& a = f.tensors()[0];
  const TensorInfo& b = f.tensors()[1];
  const TensorInfo& c = f.tensors()[2];
  EXPECT_EQ(a.name, "a.weight");
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.offset, 64u);
  EXPECT_EQ(b.type, TensorType::kQ8_0);
  EXPECT_EQ(b.ne[0], 64);
  EXPECT_EQ(b.ne[1], 3);
  EXPECT_EQ(b.nbytes, 204u);
  EXPECT_EQ(c.offset, 64u + 224);
  EXPECT_EQ(c.n_dims, 3u);
  EXPECT_EQ(c.ne[2], 2);
  EXPECT_EQ(c.ne[3], 1);
  EXPECT_EQ(std::vector<uint8_t>(f.TensorData(a), f.TensorData(a) + a.nbytes), f32);
  for (size_t k = 0; k < b.nbytes; ++k) ASSERT_EQ(f.TensorData(b)[k], static_cast<uint8_t>(k * 7)) << k;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.data_begin()) % 32, 0u);
  // Padding after the last tensor too.
  EXPECT_EQ(f.data_size(), 64u + 224 + 64);
}

TEST(GgufWriter, CustomAlignmentAndNoTensors) {
  ScratchDir dir;
  Writer w;
  w.SetU32("general.alignment", 64);
  ASSERT_TRUE(w.AddTensor("x", TensorType::kF32, {3}, std::vector<uint8_t>(12, 1)).ok());
  ASSERT_TRUE(w.AddTensor("y", TensorType::kF32, {3}, std::vector<uint8_t>(12, 2)).ok());
  const std::string path = dir.Path("aligned.gguf");
  ASSERT_TRUE(w.Write(path).ok());
  auto r = File::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->alignment(), 64u);
  EXPECT_EQ((*r)->tensors()[1].offset, 64u);
  EXPECT_EQ((*r)->TensorData((*r)->tensors()[1])[0], 2);

  Writer bad;
  bad.SetU32("general.alignment", 48);
  EXPECT_FALSE(bad.Write(dir.Path("bad.gguf")).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.Path("bad.gguf")));

  // Vocab-only: no tensors, the file ends right after the metadata.
  Writer vocab;
  vocab.SetArrayString("tokenizer.ggml.tokens", {"a", "b"});
  const std::string vpath = dir.Path("vocab.gguf");
  ASSERT_TRUE(vocab.Write(vpath).ok());
  auto v = File::Open(vpath);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE((*v)->tensors().empty());
  EXPECT_EQ((*v)->data_size(), 0u);
  EXPECT_EQ(ReadAll(vpath).size(), (*v)->file_size());
}

TEST(GgufWriter, FailedFillLeavesNoFile) {
  ScratchDir dir;
  Writer w;
  ASSERT_TRUE(w.AddTensor("x", TensorType::kF32, {8}, [](uint8_t*, size_t) {
                 return Internal("fill failed on purpose");
               }).ok());
  const std::string path = dir.Path("failed.gguf");
  Status s = w.Write(path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("on purpose"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path));
  for (const auto& e : std::filesystem::directory_iterator(dir.Path(""))) {
    ADD_FAILURE() << "left behind: " << e.path();
  }
}

TEST(GgufWriter, CopyKvFromSharedFileReproducesValues) {
  REQUIRE_SHARED_FILE("models/qwen3-vocab-tiny-q8_0.gguf");
  auto src = File::Open(SharedPath("models/qwen3-vocab-tiny-q8_0.gguf"));
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  ScratchDir dir;
  Writer w;
  for (const KeyValue& kv : (*src)->metadata()) {
    if (kv.key.rfind("tokenizer.", 0) == 0) {
      ASSERT_TRUE(w.CopyKv(kv.value, kv.key).ok());
    }
  }
  const std::string path = dir.Path("copied.gguf");
  ASSERT_TRUE(w.Write(path).ok());
  auto r = File::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  size_t n_copied = 0;
  for (const KeyValue& kv : (*src)->metadata()) {
    if (kv.key.rfind("tokenizer.", 0) != 0) continue;
    ++n_copied;
    const Value* v = (*r)->Find(kv.key);
    ASSERT_NE(v, nullptr) << kv.key;
    EXPECT_EQ(v->type, kv.value.type) << kv.key;
    EXPECT_EQ(v->elem_type, kv.value.elem_type) << kv.key;
    EXPECT_EQ(v->strings, kv.value.strings) << kv.key;
    EXPECT_EQ(v->ints, kv.value.ints) << kv.key;
    EXPECT_EQ(v->uints, kv.value.uints) << kv.key;
    EXPECT_EQ(v->str, kv.value.str) << kv.key;
    EXPECT_EQ(v->u, kv.value.u) << kv.key;
  }
  EXPECT_GE(n_copied, 5u);
  auto tokens = (*r)->GetArray("tokenizer.ggml.tokens", ValueType::kString);
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ((*tokens)->strings.size(), 151936u);
}

}  // namespace
}  // namespace lazyslot::gguf
