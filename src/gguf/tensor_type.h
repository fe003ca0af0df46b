// ggml tensor type ids as stored in GGUF tensor infos, with their block geometry (ggml-common.h sizes).
// The table knows every standard ggml type so the reader can validate any file; the engine computes with
// only F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K (and Q8_K for activations).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lazyslot {

enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct TypeTraits {
  const char* name;     // "q8_0", as ggml names it
  int64_t block_size;   // values per block
  size_t block_bytes;   // bytes per block
};

// Traits of a raw type id from a file; nullptr for ids this table does not know.
const TypeTraits* LookupType(uint32_t id);
// Traits of a known type (never null).
const TypeTraits& Traits(TensorType type);
inline const char* TypeName(TensorType type) { return Traits(type).name; }
// Bytes of a row of n values; n must be a multiple of the block size.
inline size_t RowBytes(TensorType type, int64_t n) {
  const TypeTraits& t = Traits(type);
  return static_cast<size_t>(n / t.block_size) * t.block_bytes;
}
// Parses "q8_0", "F16", ... (case-insensitive); false if unknown.
bool ParseTypeName(const std::string& name, TensorType* out);

}  // namespace lazyslot
