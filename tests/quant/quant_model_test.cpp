// Real tensors from ../shared/models: every quantized qwen3-tiny file was made from the same weights as
// qwen3-tiny-f32.gguf, so decoding each tensor must land near the f32 original (per-format bounds), and the
// formats whose quantizer we reproduce (F16, BF16, Q4_0's reference rule) must re-encode to the file's bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "test_util.h"

namespace lazyslot::quant {
namespace {

std::unique_ptr<gguf::File> OpenModel(const std::string& name) {
  auto f = gguf::File::Open(lazyslot::testing::SharedPath("models/" + name));
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(f.value()) : nullptr;
}

// Decoded values of a whole tensor, [n_rows, ne0]; checks that the dispatched decoder equals the reference.
std::vector<float> DecodeTensor(const gguf::File& file, const gguf::TensorInfo& t) {
  const int64_t ne0 = t.ne[0], rows = t.n_rows();
  std::vector<float> out(ne0 * rows), fast(ne0);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* src = file.TensorData(t) + r * t.row_bytes();
    ref::DequantizeRow(t.type, src, out.data() + r * ne0, ne0);
    DequantizeRow(t.type, src, fast.data(), ne0);
    EXPECT_EQ(std::memcmp(fast.data(), out.data() + r * ne0, ne0 * sizeof(float)), 0) << t.name << " row " << r;
  }
  return out;
}

struct FileCase {
  const char* file;
  TensorType type;    // the type whose tensors are checked (others in the file are checked by their own case)
  double rms_rel;     // RMS(decoded - f32) / RMS(f32), per tensor
};

class DecodeMatchesF32 : public ::testing::TestWithParam<FileCase> {};

TEST_P(DecodeMatchesF32, PerTensor) {
  const FileCase& c = GetParam();
  REQUIRE_SHARED_FILE(std::string("models/") + c.file);
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  auto q = OpenModel(c.file);
  auto f32 = OpenModel("qwen3-tiny-f32.gguf");
  ASSERT_TRUE(q && f32);
  int checked = 0;
  for (const gguf::TensorInfo& t : q->tensors()) {
    if (t.type != c.type) continue;
    const gguf::TensorInfo* o = f32->FindTensor(t.name);
    ASSERT_NE(o, nullptr) << t.name;
    ASSERT_EQ(o->type, TensorType::kF32) << t.name;
    ASSERT_EQ(o->n_elements(), t.n_elements()) << t.name;
    const std::vector<float> got = DecodeTensor(*q, t);
    const float* want = reinterpret_cast<const float*>(f32->TensorData(*o));
    double err2 = 0, sig2 = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      err2 += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
      sig2 += static_cast<double>(want[i]) * want[i];
    }
    const double rel = std::sqrt(err2 / sig2);
    EXPECT_LE(rel, c.rms_rel) << c.file << " " << t.name;
    EXPECT_GT(rel, 0.0) << c.file << " " << t.name << " decodes to the f32 weights exactly: suspicious";
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no " << TypeName(c.type) << " tensor in " << c.file;
}

// Bounds: llama-quantize's RMS error on these random weights is about half a step (step/sqrt(12)).
INSTANTIATE_TEST_SUITE_P(
    Files, DecodeMatchesF32,
    ::testing::Values(FileCase{"qwen3-tiny-f16.gguf", TensorType::kF16, 3e-4},
                      FileCase{"qwen3-tiny-bf16.gguf", TensorType::kBF16, 3e-3},
                      FileCase{"qwen3-tiny-q8_0.gguf", TensorType::kQ8_0, 6e-3},
                      FileCase{"qwen3-tiny-q4_0.gguf", TensorType::kQ4_0, 0.12},
                      FileCase{"qwen3-tiny-q4_k_m.gguf", TensorType::kQ4_K, 0.1},
                      FileCase{"qwen3-tiny-q5_k_m.gguf", TensorType::kQ5_K, 0.05},
                      FileCase{"qwen3-tiny-q6_k.gguf", TensorType::kQ6_K, 0.025},
                      FileCase{"qwen3-tiny-q4_k_m.gguf", TensorType::kQ6_K, 0.025}),
    [](const ::testing::TestParamInfo<FileCase>& info) {
      std::string s = std::string(info.param.file).substr(11) + "_" + TypeName(info.param.type);
      for (char& ch : s) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return s;
    });

// F16/BF16 files are the f32 weights rounded to nearest even; Q4_0 tensors are llama.cpp's reference
// quantizer applied to them, which QuantizeRow(Q4_0) implements.
class ReencodeMatchesFile : public ::testing::TestWithParam<std::pair<const char*, TensorType>> {};

TEST_P(ReencodeMatchesFile, Bytes) {
  const auto [file, type] = GetParam();
  REQUIRE_SHARED_FILE(std::string("models/") + file);
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  auto q = OpenModel(file);
  auto f32 = OpenModel("qwen3-tiny-f32.gguf");
  ASSERT_TRUE(q && f32);
  int checked = 0;
  for (const gguf::TensorInfo& t : q->tensors()) {
    if (t.type != type) continue;
    const gguf::TensorInfo* o = f32->FindTensor(t.name);
    ASSERT_NE(o, nullptr) << t.name;
    const float* src = reinterpret_cast<const float*>(f32->TensorData(*o));
    std::vector<uint8_t> row(t.row_bytes());
    for (int64_t r = 0; r < t.n_rows(); ++r) {
      QuantizeRow(type, src + r * t.ne[0], row.data(), t.ne[0]);
      ASSERT_EQ(std::memcmp(row.data(), q->TensorData(t) + r * t.row_bytes(), row.size()), 0)
          << file << " " << t.name << " row " << r;
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(Files, ReencodeMatchesFile,
                         ::testing::Values(std::make_pair("qwen3-tiny-f16.gguf", TensorType::kF16),
                                           std::make_pair("qwen3-tiny-bf16.gguf", TensorType::kBF16),
                                           std::make_pair("qwen3-tiny-q4_0.gguf", TensorType::kQ4_0)));

// A real matmul row: decoded weights times activations, against VecDot on the encoded activation row.
TEST(QuantModel, DotOnRealWeights) {
  for (const char* file : {"qwen3-tiny-q4_k_m.gguf", "qwen3-tiny-q5_k_m.gguf", "qwen3-tiny-q8_0.gguf",
                           "qwen3-tiny-q4_0.gguf", "qwen3-tiny-f16.gguf", "qwen3-tiny-bf16.gguf"}) {
    REQUIRE_SHARED_FILE(std::string("models/") + file);
    auto q = OpenModel(file);
    ASSERT_TRUE(q);
    for (const gguf::TensorInfo& t : q->tensors()) {
      if (!IsSupported(t.type) || t.n_rows() < 2) continue;
      const int64_t n = t.ne[0];
      std::vector<float> act(n);
      for (int64_t i = 0; i < n; ++i) act[i] = std::sin(0.1f * i) * (1.0f + (i % 7));
      const TensorType at = VecDotType(t.type);
      std::vector<uint8_t> xa(RowBytes(at, n));
      QuantizeRow(at, act.data(), xa.data(), n);
      std::vector<float> dx(n), dw(n);
      DequantizeRow(at, xa.data(), dx.data(), n);
      for (int64_t r = 0; r < t.n_rows(); r += 37) {
        const uint8_t* w = q->TensorData(t) + r * t.row_bytes();
        DequantizeRow(t.type, w, dw.data(), n);
        double want = 0, scale = 0;
        for (int64_t i = 0; i < n; ++i) {
          want += static_cast<double>(dw[i]) * dx[i];
          scale += std::fabs(static_cast<double>(dw[i]) * dx[i]);
        }
        EXPECT_NEAR(VecDot(t.type, w, xa.data(), n), want, 1e-5 * scale) << file << " " << t.name << " " << r;
        EXPECT_NEAR(ref::VecDot(t.type, w, xa.data(), n), want, 1e-5 * scale) << file << " " << t.name;
      }
    }
  }
}

}  // namespace
}  // namespace lazyslot::quant
