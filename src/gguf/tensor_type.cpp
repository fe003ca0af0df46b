// Block geometry of every standard ggml tensor type id, so the reader can size and validate any tensor.
// Sizes follow the block structs in ggml-common.h (FORMATS.md section 2); ids 4, 5, 31-33, 36-38 are retired.
#include "gguf/tensor_type.h"

#include <cctype>

#include "core/status.h"

namespace lazyslot {
namespace {

struct Entry {
  uint32_t id;
  TypeTraits traits;
};

// QK_K = 256 for the K-quants and most i-quants; legacy quants use blocks of 32.
constexpr Entry kTable[] = {
    {0, {"f32", 1, 4}},         {1, {"f16", 1, 2}},         {2, {"q4_0", 32, 18}},
    {3, {"q4_1", 32, 20}},      {6, {"q5_0", 32, 22}},      {7, {"q5_1", 32, 24}},
    {8, {"q8_0", 32, 34}},      {9, {"q8_1", 32, 36}},      {10, {"q2_K", 256, 84}},
    {11, {"q3_K", 256, 110}},   {12, {"q4_K", 256, 144}},   {13, {"q5_K", 256, 176}},
    {14, {"q6_K", 256, 210}},   {15, {"q8_K", 256, 292}},   {16, {"iq2_xxs", 256, 66}},
    {17, {"iq2_xs", 256, 74}},  {18, {"iq3_xxs", 256, 98}}, {19, {"iq1_s", 256, 50}},
    {20, {"iq4_nl", 32, 18}},   {21, {"iq3_s", 256, 110}},  {22, {"iq2_s", 256, 82}},
    {23, {"iq4_xs", 256, 136}}, {24, {"i8", 1, 1}},         {25, {"i16", 1, 2}},
    {26, {"i32", 1, 4}},        {27, {"i64", 1, 8}},        {28, {"f64", 1, 8}},
    {29, {"iq1_m", 256, 56}},   {30, {"bf16", 1, 2}},       {34, {"tq1_0", 256, 54}},
    {35, {"tq2_0", 256, 66}},   {39, {"mxfp4", 32, 17}},
};

}  // namespace

const TypeTraits* LookupType(uint32_t id) {
  for (const Entry& e : kTable) {
    if (e.id == id) return &e.traits;
  }
  return nullptr;
}

const TypeTraits& Traits(TensorType type) {
  const TypeTraits* t = LookupType(static_cast<uint32_t>(type));
  LS_CHECK(t != nullptr);
  return *t;
}

bool ParseTypeName(const std::string& name, TensorType* out) {
  for (const Entry& e : kTable) {
    const char* n = e.traits.name;
    size_t i = 0;
    for (; n[i] != '\0' && i < name.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(n[i])) != std::tolower(static_cast<unsigned char>(name[i])))
        break;
    }
    if (n[i] == '\0' && i == name.size()) {
      *out = static_cast<TensorType>(e.id);
      return true;
    }
  }
  return false;
}

}  // namespace lazyslot
