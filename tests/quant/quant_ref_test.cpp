// Scalar reference (quant::ref): round-trip error bounds per format, block layouts pinned by hand-built
// blocks, quantizer rounding rules, special values, ragged sizes, and dots against dequantize-then-multiply.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "quant/fp16.h"
#include "quant/quant.h"
#include "quant_test_util.h"

namespace lazyslot::quant {
namespace {

using testing::AllTypes;
using testing::BlockSize;
using testing::Decode;
using testing::Encode;
using testing::MaxAbs;
using testing::RandomRow;
using testing::WeightTypes;

// Largest round-trip error allowed, relative to max|x| of the 256 values around it (one K super-block, or
// eight 32-blocks; F16/BF16: relative to |x| itself), and RMS error relative to the RMS of the row (test
// rows have 6x outliers, which makes RMS errors of the 4-bit formats large). From the formats' step sizes;
// for our simple K-quant quantizers, measured worst cases with margin.
struct Bound {
  TensorType type;
  double max_rel;
  double rms_rel;
};
const Bound kBounds[] = {
    {TensorType::kF32, 0, 0},
    {TensorType::kF16, 1.0 / 2048, 1.0 / 2048},
    {TensorType::kBF16, 1.0 / 256, 1.0 / 256},
    {TensorType::kQ8_0, 0.0045, 0.012},  // step amax/127 plus the f16 rounding of d
    {TensorType::kQ4_0, 0.126, 0.2},     // step amax/8; -max clips from q=16 to 15
    {TensorType::kQ4_K, 0.08, 0.12},     // measured 0.064 / 0.10 (half-step = range/30)
    {TensorType::kQ5_K, 0.04, 0.06},     // measured 0.031 / 0.048
    {TensorType::kQ6_K, 0.027, 0.03},    // measured 0.021 / 0.025
    {TensorType::kQ8_K, 0.004, 0.02},    // step amax/127, f32 scale; 256 values share one outlier
};

const Bound& BoundFor(TensorType t) {
  for (const Bound& b : kBounds) {
    if (b.type == t) return b;
  }
  static const Bound none{TensorType::kF32, 0, 0};
  ADD_FAILURE() << "no bound for " << TypeName(t);
  return none;
}

// Checks |x - y| <= max_rel * (max |x| over the 256-value window) and the row's relative RMS error.
void ExpectWithinBound(TensorType t, const std::vector<float>& x, const std::vector<float>& y) {
  const Bound& b = BoundFor(t);
  double err2 = 0, sig2 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t w0 = i / 256 * 256, w1 = std::min(x.size(), w0 + 256);
    float wmax = 0;
    for (size_t k = w0; k < w1; ++k) wmax = std::fmax(wmax, std::fabs(x[k]));
    const double err = std::fabs(static_cast<double>(x[i]) - y[i]);
    // F16/BF16 round each value on its own (F16 has a fixed 2^-25 half-step below 2^-14).
    double limit = b.max_rel * wmax;
    if (t == TensorType::kF16) limit = std::fmax(b.max_rel * std::fabs(x[i]), std::ldexp(1.0, -25));
    if (t == TensorType::kBF16) limit = b.max_rel * std::fabs(x[i]);
    ASSERT_LE(err, limit) << TypeName(t) << " value " << i << " of " << x.size() << ": " << x[i] << " -> "
                          << y[i];
    err2 += err * err;
    sig2 += static_cast<double>(x[i]) * x[i];
  }
  if (sig2 > 0) {
    EXPECT_LE(std::sqrt(err2 / sig2), b.rms_rel) << TypeName(t);
  }
}

TEST(QuantRef, RoundTripWithinFormatBounds) {
  for (TensorType t : AllTypes()) {
    for (int64_t blocks : {1, 2, 3, 5, 7, 8, 16, 17}) {
      const int64_t n = blocks * std::max<int64_t>(BlockSize(t), 32);
      for (uint32_t seed : {1u, 2u, 3u}) {
        const std::vector<float> x = RandomRow(n, seed * 1000 + static_cast<uint32_t>(blocks), 0.02f);
        const std::vector<float> y = Decode(t, Encode(t, x), n);
        ExpectWithinBound(t, x, y);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(QuantRef, RoundTripUniformAndOneSided) {
  // All-positive and all-negative rows exercise the K-quant mins and the signed-max conventions.
  for (TensorType t : AllTypes()) {
    const int64_t n = 1024;
    for (float sign : {1.0f, -1.0f}) {
      std::vector<float> x(n);
      for (int64_t i = 0; i < n; ++i) x[i] = sign * (0.5f + 0.5f * std::sin(0.37f * i));
      ExpectWithinBound(t, x, Decode(t, Encode(t, x), n));
    }
  }
}

TEST(QuantRef, AllZeros) {
  for (TensorType t : AllTypes()) {
    const int64_t n = 512;
    const std::vector<float> zeros(n, 0.0f);
    const std::vector<float> y = Decode(t, Encode(t, zeros), n);
    for (float v : y) ASSERT_EQ(v, 0.0f) << TypeName(t);
    if (t == TensorType::kQ8_K) continue;
    const std::vector<uint8_t> x = Encode(VecDotType(t), RandomRow(n, 5));
    EXPECT_EQ(ref::VecDot(t, Encode(t, zeros).data(), x.data(), n), 0.0f) << TypeName(t);
    EXPECT_EQ(ref::VecDot(t, Encode(t, RandomRow(n, 6)).data(), Encode(VecDotType(t), zeros).data(), n), 0.0f)
        << TypeName(t);
  }
}

TEST(QuantRef, SingleHugeValue) {
  for (TensorType t : AllTypes()) {
    const int64_t n = 512;
    for (float huge : {3000.0f, -3000.0f}) {
      std::vector<float> x = RandomRow(n, 9, 0.001f);
      x[77] = huge;
      const std::vector<float> y = Decode(t, Encode(t, x), n);
      ExpectWithinBound(t, x, y);
      // The huge value itself comes back to within the scale's rounding.
      EXPECT_NEAR(y[77], huge, std::fabs(huge) * (t == TensorType::kBF16 ? 1.0 / 256 : 1.0 / 1024))
          << TypeName(t);
    }
  }
}

TEST(QuantRef, Q8_0RoundsHalfToEvenWithUnroundedMultiplier) {
  // amax = 127 makes the multiplier exactly 1, so x lands on the ties themselves.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 3.5f;
  x[4] = 0.5f;
  x[5] = 1.5f;
  x[6] = -126.5f;
  const std::vector<uint8_t> b = Encode(TensorType::kQ8_0, x);
  uint16_t d;
  std::memcpy(&d, b.data(), 2);
  EXPECT_EQ(F16ToF32(d), 1.0f);
  const int8_t* qs = reinterpret_cast<const int8_t*>(b.data() + 2);
  EXPECT_EQ(qs[0], 127);
  EXPECT_EQ(qs[1], 2);
  EXPECT_EQ(qs[2], -2);
  EXPECT_EQ(qs[3], 4);
  EXPECT_EQ(qs[4], 0);
  EXPECT_EQ(qs[5], 2);
  EXPECT_EQ(qs[6], -126);
  // amax = 100: d = f16(100/127) = 0.78759766 but the multiplier stays 1.27f, so 50 -> 63.5 -> 64 (1/d would
  // give 63.48 -> 63).
  std::vector<float> y(32, 0.0f);
  y[0] = -100.0f;
  y[1] = 50.0f;
  const std::vector<uint8_t> c = Encode(TensorType::kQ8_0, y);
  EXPECT_EQ(static_cast<int8_t>(c[2]), -127);
  EXPECT_EQ(static_cast<int8_t>(c[3]), 64);
}

TEST(QuantRef, Q8_KSignConventionAndBsums) {
  std::vector<float> x = RandomRow(512, 11);
  x[3] = 40.0f;     // block 0: positive max -> d < 0, q = -127
  x[300] = -40.0f;  // block 1: negative max -> d > 0, q = -127
  x[301] = 40.0f - 1e-3f;
  const std::vector<uint8_t> b = Encode(TensorType::kQ8_K, x);
  constexpr size_t kBlock = 292;
  float d0, d1;
  std::memcpy(&d0, b.data(), 4);
  std::memcpy(&d1, b.data() + kBlock, 4);
  EXPECT_FLOAT_EQ(d0, -40.0f / 127);
  EXPECT_FLOAT_EQ(d1, 40.0f / 127);
  EXPECT_EQ(static_cast<int8_t>(b[4 + 3]), -127);
  EXPECT_EQ(static_cast<int8_t>(b[kBlock + 4 + 300 - 256]), -127);
  EXPECT_EQ(static_cast<int8_t>(b[kBlock + 4 + 301 - 256]), 127);  // min(127, ...)
  for (int blk = 0; blk < 2; ++blk) {
    const int8_t* qs = reinterpret_cast<const int8_t*>(b.data() + blk * kBlock + 4);
    for (int g = 0; g < 16; ++g) {
      int16_t bsum;
      std::memcpy(&bsum, b.data() + blk * kBlock + 4 + 256 + 2 * g, 2);
      int want = 0;
      for (int l = 0; l < 16; ++l) want += qs[16 * g + l];
      EXPECT_EQ(bsum, want) << blk << " " << g;
    }
  }
  // Ties: mx = -127 gives iscale = 1.
  std::vector<float> t(256, 0.0f);
  t[0] = -127.0f;
  t[1] = 2.5f;
  t[2] = -3.5f;
  const std::vector<uint8_t> c = Encode(TensorType::kQ8_K, t);
  EXPECT_EQ(static_cast<int8_t>(c[5]), 2);
  EXPECT_EQ(static_cast<int8_t>(c[6]), -4);
}

TEST(QuantRef, Q4_0ReferenceQuantizerRule) {
  std::vector<float> x(32, 0.0f);
  x[0] = -8.0f;  // max = -8 -> d = 1, id = 1
  x[1] = 0.49f;  // 8.99 -> 8
  x[2] = 0.5f;   // 9.0 -> 9
  x[3] = 7.9f;   // 16.4 -> min(15, 16)
  x[16] = -7.4f;  // 1.1 -> 1
  const std::vector<uint8_t> b = Encode(TensorType::kQ4_0, x);
  uint16_t d;
  std::memcpy(&d, b.data(), 2);
  EXPECT_EQ(F16ToF32(d), 1.0f);
  const uint8_t* qs = b.data() + 2;
  EXPECT_EQ(qs[0] & 15, 0);
  EXPECT_EQ(qs[1] & 15, 8);
  EXPECT_EQ(qs[2] & 15, 9);
  EXPECT_EQ(qs[3] & 15, 15);
  EXPECT_EQ(qs[0] >> 4, 1);
  EXPECT_EQ(qs[4], 8 | 8 << 4);
}

// Hand-built blocks, packed here straight from the FORMATS.md description, pin the decoders' layouts.
TEST(QuantRef, Q4_0AndQ8_0Layout) {
  uint8_t q4[18] = {0x00, 0x3c};  // d = 1
  for (int e = 0; e < 16; ++e) q4[2 + e] = static_cast<uint8_t>(e | (15 - e) << 4);
  float y[32];
  ref::DequantizeRow(TensorType::kQ4_0, q4, y, 32);
  for (int e = 0; e < 16; ++e) {
    EXPECT_EQ(y[e], e - 8);
    EXPECT_EQ(y[e + 16], 15 - e - 8);
  }
  uint8_t q8[34] = {0x00, 0x40};  // d = 2
  for (int e = 0; e < 32; ++e) q8[2 + e] = static_cast<uint8_t>(e * 9 - 128);
  ref::DequantizeRow(TensorType::kQ8_0, q8, y, 32);
  for (int e = 0; e < 32; ++e) EXPECT_EQ(y[e], 2.0f * static_cast<int8_t>(e * 9 - 128));
}

void PackKScales(const int sc[8], const int m[8], uint8_t s[12]) {
  // bytes 0-3: sc0-3 low 6 bits, top 2 bits = bits 4-5 of sc4-7; bytes 4-7 likewise for m;
  // bytes 8-11: low nibble sc4-7 bits 0-3, high nibble m4-7 bits 0-3.
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) & 3) << 6);
    s[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) & 3) << 6);
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
  }
}

TEST(QuantRef, Q4_KAndQ5_KLayout) {
  const int sc[8] = {3, 17, 33, 63, 48, 5, 62, 21}, m[8] = {60, 1, 47, 0, 35, 63, 18, 50};
  uint8_t q4[144] = {};
  uint8_t q5[176] = {};
  const uint16_t d = F32ToF16(0.25f), dmin = F32ToF16(0.5f);
  std::memcpy(q4, &d, 2);
  std::memcpy(q4 + 2, &dmin, 2);
  PackKScales(sc, m, q4 + 4);
  std::memcpy(q5, q4, 16);
  int q[256];
  for (int e = 0; e < 256; ++e) {
    q[e] = (e * 7 + e / 32) % 32;
    const int j = e / 32, byte = 32 * (e / 64) + e % 32;
    q4[16 + byte] |= static_cast<uint8_t>((q[e] & 15) << (j % 2 ? 4 : 0));
    q5[48 + byte] |= static_cast<uint8_t>((q[e] & 15) << (j % 2 ? 4 : 0));
    q5[16 + e % 32] |= static_cast<uint8_t>((q[e] >> 4) << j);
  }
  float y4[256], y5[256];
  ref::DequantizeRow(TensorType::kQ4_K, q4, y4, 256);
  ref::DequantizeRow(TensorType::kQ5_K, q5, y5, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    EXPECT_EQ(y4[e], 0.25f * sc[j] * (q[e] & 15) - 0.5f * m[j]) << e;
    EXPECT_EQ(y5[e], 0.25f * sc[j] * q[e] - 0.5f * m[j]) << e;
  }
}

TEST(QuantRef, Q6_KLayout) {
  uint8_t b[210] = {};
  const uint16_t d = F32ToF16(0.125f);
  std::memcpy(b + 208, &d, 2);  // d is stored last
  int8_t scales[16];
  for (int g = 0; g < 16; ++g) scales[g] = static_cast<int8_t>(g * 17 - 128);
  std::memcpy(b + 192, scales, 16);
  int q[256];
  for (int e = 0; e < 256; ++e) {
    q[e] = (e * 13 + 5) % 64 - 32;
    const int u = q[e] + 32, h = e / 128, k = (e % 128) / 32, l = e % 32;
    b[64 * h + 32 * (k & 1) + l] |= static_cast<uint8_t>((u & 15) << (k < 2 ? 0 : 4));
    b[128 + 32 * h + l] |= static_cast<uint8_t>((u >> 4) << (2 * k));
  }
  float y[256];
  ref::DequantizeRow(TensorType::kQ6_K, b, y, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], 0.125f * scales[e / 16] * q[e]) << e;
}

// VecDot against the dequantized rows multiplied in double, for ragged block counts.
TEST(QuantRef, DotMatchesDequantizedProduct) {
  for (TensorType t : WeightTypes()) {
    const TensorType at = VecDotType(t);
    const int64_t bs = std::max(BlockSize(t), BlockSize(at));
    for (int64_t blocks : {1, 2, 3, 5, 7, 9, 16, 31, 33}) {
      const int64_t n = blocks * std::max<int64_t>(bs, 32);
      const std::vector<uint8_t> w = Encode(t, RandomRow(n, 21 + blocks, 0.05f));
      const std::vector<uint8_t> x = Encode(at, RandomRow(n, 99 + blocks, 3.0f));
      const std::vector<float> dw = Decode(t, w, n), dx = Decode(at, x, n);
      double want = 0, scale = 0;
      for (int64_t i = 0; i < n; ++i) {
        want += static_cast<double>(dw[i]) * dx[i];
        scale += std::fabs(static_cast<double>(dw[i]) * dx[i]);
      }
      const float got = ref::VecDot(t, w.data(), x.data(), n);
      EXPECT_NEAR(got, want, 2e-6 * scale + 1e-30) << TypeName(t) << " n=" << n;
      EXPECT_NEAR(VecDot(t, w.data(), x.data(), n), got, 1e-5 * scale + 1e-30)
          << "dispatched " << TypeName(t) << " n=" << n;
    }
  }
}

TEST(QuantRef, TypeQueries) {
  for (TensorType t : WeightTypes()) {
    EXPECT_TRUE(IsSupported(t)) << TypeName(t);
    EXPECT_TRUE(CanQuantize(t)) << TypeName(t);
  }
  EXPECT_FALSE(IsSupported(TensorType::kQ8_K));
  EXPECT_TRUE(CanQuantize(TensorType::kQ8_K));
  EXPECT_FALSE(IsSupported(TensorType::kQ4_1));
  EXPECT_FALSE(CanQuantize(TensorType::kQ2_K));
  EXPECT_EQ(VecDotType(TensorType::kF32), TensorType::kF32);
  EXPECT_EQ(VecDotType(TensorType::kF16), TensorType::kF16);
  EXPECT_EQ(VecDotType(TensorType::kBF16), TensorType::kBF16);
  EXPECT_EQ(VecDotType(TensorType::kQ4_0), TensorType::kQ8_0);
  EXPECT_EQ(VecDotType(TensorType::kQ8_0), TensorType::kQ8_0);
  EXPECT_EQ(VecDotType(TensorType::kQ4_K), TensorType::kQ8_K);
  EXPECT_EQ(VecDotType(TensorType::kQ5_K), TensorType::kQ8_K);
  EXPECT_EQ(VecDotType(TensorType::kQ6_K), TensorType::kQ8_K);
}

}  // namespace
}  // namespace lazyslot::quant
