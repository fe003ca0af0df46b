// A streaming 64-bit checksum for files the server writes and reads back (slot and parked KV files): four
// lanes of multiply-rotate rounds over 8-byte words, so it runs near memory speed (about 10 GB/s), with a final
// avalanche. It detects corruption; it is not a cryptographic hash.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lazyslot {

class Checksum64 {
 public:
  explicit Checksum64(uint64_t seed = 0);
  void Update(const void* data, size_t n);
  uint64_t Digest() const;  // of everything given so far; Update may go on after it

 private:
  void Stripe(const uint8_t* p);  // one 32-byte stripe into the four lanes

  uint64_t lane_[4];
  uint8_t buf_[32];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
  uint64_t seed_;
};

}  // namespace lazyslot
