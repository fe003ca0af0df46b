// Checksum64 (hash.h): four independent lanes, each word mixed as lane = rotl(lane + w * kMulA, 31) * kMulB,
// then the lanes, the length and the unstriped tail are folded together and avalanched.
#include "core/hash.h"

#include <cstring>

namespace lazyslot {
namespace {

constexpr uint64_t kMulA = 0xc2b2ae3d27d4eb4full;
constexpr uint64_t kMulB = 0x9e3779b185ebca87ull;
constexpr uint64_t kMulC = 0x165667b19e3779f9ull;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t Word(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);  // little-endian hosts only (x86-64), as the files' layout
  return w;
}

inline uint64_t Round(uint64_t lane, uint64_t w) { return Rotl(lane + w * kMulA, 31) * kMulB; }

inline uint64_t Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kMulA;
  h ^= h >> 29;
  h *= kMulC;
  return h ^ (h >> 32);
}

}  // namespace

Checksum64::Checksum64(uint64_t seed) : seed_(seed) {
  lane_[0] = seed + kMulA + kMulB;
  lane_[1] = seed + kMulA;
  lane_[2] = seed;
  lane_[3] = seed - kMulB;
}

void Checksum64::Stripe(const uint8_t* p) {
  for (int i = 0; i < 4; ++i) lane_[i] = Round(lane_[i], Word(p + 8 * i));
}

void Checksum64::Update(const void* data, size_t n) {
  if (n == 0) return;  // data may be null then (an empty vector's)
  const auto* p = static_cast<const uint8_t*>(data);
  total_ += n;
  if (buffered_ > 0) {
    const size_t take = n < 32 - buffered_ ? n : 32 - buffered_;
    std::memcpy(buf_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    n -= take;
    if (buffered_ < 32) return;
    Stripe(buf_);
    buffered_ = 0;
  }
  for (; n >= 32; p += 32, n -= 32) Stripe(p);
  std::memcpy(buf_, p, n);
  buffered_ = n;
}

uint64_t Checksum64::Digest() const {
  uint64_t h = Rotl(lane_[0], 1) + Rotl(lane_[1], 7) + Rotl(lane_[2], 12) + Rotl(lane_[3], 18);
  for (int i = 0; i < 4; ++i) h = (h ^ Round(0, lane_[i])) * kMulB + kMulC;
  h += total_ ^ seed_;
  size_t i = 0;
  for (; i + 8 <= buffered_; i += 8) h = Rotl(h ^ Round(0, Word(buf_ + i)), 27) * kMulB + kMulC;
  for (; i < buffered_; ++i) h = Rotl(h ^ (buf_[i] * kMulC), 11) * kMulA;
  return Avalanche(h);
}

}  // namespace lazyslot
