// IEEE half and bfloat16 conversions (round to nearest even), usable from any layer.
#pragma once

#include <cstdint>
#include <cstring>

namespace lazyslot {

inline float F16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t F32ToF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to inf
  if (abs < 0x38800000u) {  // result is subnormal or zero in half
    // value = abs as float; half subnormal unit is 2^-24
    float a;
    std::memcpy(&a, &abs, 4);
    // scale so that the half subnormal unit becomes 1, then round to nearest even via float addition
    float scaled = a * 16777216.0f;  // 2^24
    // round half to even
    uint32_t q = static_cast<uint32_t>(scaled);
    float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t mant = abs & 0x7fffff;
  uint32_t exp = (abs >> 23) - 127 + 15;
  uint32_t h = exp << 10 | mant >> 13;
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // carry may roll into the exponent: correct
  return static_cast<uint16_t>(sign | h);
}

inline float BF16ToF32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t F32ToBF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 64);  // quiet nan
  return static_cast<uint16_t>((x + (0x7fff + ((x >> 16) & 1))) >> 16);
}

}  // namespace lazyslot
