// fp16.h: exhaustive half <-> float round trips, round-to-nearest-even ties, bf16 rounding, and agreement with
// the CPU's F16C conversion instructions where present.
#include "quant/fp16.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "quant/kernels.h"

namespace lazyslot {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
bool IsHalfNan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

// Value of a half computed independently of fp16.h: (-1)^s * 2^(e-15) * (1 + m/1024), subnormals 2^-14 * m/1024.
double HalfValue(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  if (e == 31) v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  return s ? -v : v;
}

TEST(Fp16, AllHalvesDecodeToTheirValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = HalfValue(static_cast<uint16_t>(h));
    const float got = F16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << "half 0x" << std::hex << h;
      EXPECT_EQ(std::signbit(got), (h & 0x8000) != 0) << h;
    }
  }
}

TEST(Fp16, AllHalvesRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t back = F32ToF16(F16ToF32(static_cast<uint16_t>(h)));
    if (IsHalfNan(static_cast<uint16_t>(h))) {
      EXPECT_TRUE(IsHalfNan(back)) << h;
    } else {
      EXPECT_EQ(back, h) << "half 0x" << std::hex << h;
    }
  }
}

// Midpoints between neighbouring finite halves round to the even one; one float ulp either side rounds to
// the nearer one. Covers subnormals, the normal/subnormal boundary and overflow to infinity.
TEST(Fp16, TiesRoundToEven) {
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const uint16_t lo = static_cast<uint16_t>(h | sign);
      const uint16_t hi = static_cast<uint16_t>((h + 1) | sign);  // 0x7bff + 1 = infinity
      const double mid = (HalfValue(lo) + (h + 1 == 0x7c00 ? (sign ? -65536.0 : 65536.0) : HalfValue(hi))) / 2;
      const float fmid = static_cast<float>(mid);
      ASSERT_EQ(static_cast<double>(fmid), mid);  // midpoints need 12 significant bits: exact in float
      const uint16_t even = (lo & 1) ? hi : lo;
      EXPECT_EQ(F32ToF16(fmid), even) << "midpoint above half 0x" << std::hex << lo;
      if (h > 0) {
        const float below = std::nextafter(fmid, 0.0f), above = std::nextafter(fmid, sign ? -1e9f : 1e9f);
        EXPECT_EQ(F32ToF16(below), lo) << std::hex << lo;
        EXPECT_EQ(F32ToF16(above), hi) << std::hex << lo;
      }
    }
  }
}

TEST(Fp16, SpecialValues) {
  EXPECT_EQ(F32ToF16(0.0f), 0);
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(65519.99f), 0x7bff);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7c00);  // the midpoint to "65536" rounds to even = infinity
  EXPECT_EQ(F32ToF16(1e10f), 0x7c00);
  EXPECT_EQ(F32ToF16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_TRUE(IsHalfNan(F32ToF16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -24)), 1);        // smallest subnormal
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)), 0);        // half of it: tie to even (0)
  EXPECT_EQ(F32ToF16(std::ldexp(1.5f, -25)), 1);
  EXPECT_EQ(F32ToF16(std::ldexp(3.0f, -25)), 2);        // 1.5 units: tie to even (2)
  EXPECT_EQ(F32ToF16(1e-30f), 0);
  EXPECT_EQ(F32ToF16(1.0f), 0x3c00);
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie: even mantissa 0
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie: even mantissa 2
}

__attribute__((target("f16c"))) uint16_t HardwareF32ToF16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float HardwareF16ToF32(uint16_t h) { return _cvtsh_ss(h); }

// F16C is what llama.cpp uses on x86; agree with it on a dense sample of all floats.
TEST(Fp16, MatchesF16cInstructions) {
  if (!quant::DetectCpu().f16c) GTEST_SKIP() << "CPU has no F16C";
  for (uint32_t h = 0; h < 65536; ++h) {
    if (IsHalfNan(static_cast<uint16_t>(h))) continue;
    ASSERT_EQ(Bits(F16ToF32(static_cast<uint16_t>(h))), Bits(HardwareF16ToF32(static_cast<uint16_t>(h))));
  }
  for (uint64_t u = 0; u < (1ull << 32); u += 4099) {  // ~1M floats spread over every exponent
    const float f = FromBits(static_cast<uint32_t>(u));
    if (std::isnan(f)) continue;
    ASSERT_EQ(F32ToF16(f), HardwareF32ToF16(f)) << "float bits 0x" << std::hex << u;
  }
}

TEST(Bf16, RoundTripAndRounding) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = BF16ToF32(static_cast<uint16_t>(h));
    EXPECT_EQ(Bits(f), h << 16);
    if (!std::isnan(f)) {
      EXPECT_EQ(F32ToBF16(f), h);
    }
  }
  EXPECT_EQ(F32ToBF16(FromBits(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(F32ToBF16(FromBits(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(F32ToBF16(FromBits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(F32ToBF16(FromBits(0x3f807fffu)), 0x3f80);
  EXPECT_EQ(F32ToBF16(FromBits(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to infinity
  const uint16_t nan = F32ToBF16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(BF16ToF32(nan)));
  EXPECT_TRUE(std::isnan(BF16ToF32(F32ToBF16(FromBits(0x7f800001u)))));  // signalling NaN stays NaN
}

}  // namespace
}  // namespace lazyslot
