// Start-up self-check of a kernel table against the scalar reference (see SelfCheck in kernels.h). Costs well
// under a millisecond; it guards against a SIMD path that was never run on the CPU it is dispatched to. Also
// the check rows and tolerance (check_rows.h) that the measured selection (select.cpp) checks variants with.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "quant/check_rows.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace lazyslot::quant {

TensorType FormatType(int f) {
  static constexpr TensorType kTypeOf[kFormatCount] = {
      TensorType::kF32,  TensorType::kF16,  TensorType::kBF16, TensorType::kQ8_0, TensorType::kQ4_0,
      TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kQ8_K,
  };
  return kTypeOf[f];
}

int DotActFormat(int f) { return FormatIndex(VecDotType(FormatType(f))); }

std::vector<float> CheckRow(int64_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const float u = static_cast<float>(s >> 8) / 16777216.0f - 0.5f;
    v[i] = (i % 13 == 0) ? 0.0f : u * (1.0f + static_cast<float>((s >> 4) % 7));
  }
  return v;
}

bool DotWithinTolerance(float got, float want, double scale) {
  return std::fabs(got - want) <= 1e-4 * scale + 1e-30;
}

namespace {

std::string Describe(const char* what, const char* type, int64_t n) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "%s of %s (n=%lld) differs from scalar", what, type,
                static_cast<long long>(n));
  return buf;
}

}  // namespace

std::string SelfCheck(const KernelSet& set) {
  const KernelSet& ref = ScalarKernels();
  for (int f = 0; f < kFormatCount; ++f) {
    const TypeTraits& tr = Traits(FormatType(f));
    const char* name = tr.name;
    // 7 blocks of 32 (odd count for 2-block kernels); 3 super-blocks for the K formats; ragged for plain.
    const int64_t n = tr.block_size == 1 ? 227 : (tr.block_size == 32 ? 224 : 768);
    const size_t bytes = static_cast<size_t>(n / tr.block_size) * tr.block_bytes;
    const std::vector<float> xw = CheckRow(n, 1 + f), xa = CheckRow(n, 100 + f);
    std::vector<uint8_t> a(bytes), b(bytes);
    set.quantize[f](xw.data(), a.data(), n);
    ref.quantize[f](xw.data(), b.data(), n);
    if (std::memcmp(a.data(), b.data(), bytes) != 0) return Describe("quantize", name, n);
    std::vector<float> da(n), db(n);
    set.dequantize[f](a.data(), da.data(), n);
    ref.dequantize[f](a.data(), db.data(), n);
    if (std::memcmp(da.data(), db.data(), n * sizeof(float)) != 0) return Describe("dequantize", name, n);
    if (!ref.vec_dot[f]) continue;
    // Dot: weights `a` against activations encoded in the vec-dot format.
    const int act = DotActFormat(f);
    const TypeTraits& at = Traits(FormatType(act));
    std::vector<uint8_t> x(static_cast<size_t>(n / at.block_size) * at.block_bytes);
    ref.quantize[act](xa.data(), x.data(), n);
    std::vector<float> dx(n);
    ref.dequantize[act](x.data(), dx.data(), n);
    double scale = 0;
    for (int64_t i = 0; i < n; ++i) scale += std::fabs(static_cast<double>(db[i]) * dx[i]);
    const float got = set.vec_dot[f](a.data(), x.data(), n);
    const float want = ref.vec_dot[f](a.data(), x.data(), n);
    if (!DotWithinTolerance(got, want, scale)) return Describe("vec_dot", name, n);
    if (set.vec_dot_tile[f]) {
      // Tile of 2 identical weight rows x 3 activation rows: every entry equals the single dot bit for bit.
      std::vector<uint8_t> w2(2 * bytes);
      std::memcpy(w2.data(), a.data(), bytes);
      std::memcpy(w2.data() + bytes, a.data(), bytes);
      float out[6];
      std::vector<uint8_t> x3(3 * x.size());
      for (int i = 0; i < 3; ++i) std::memcpy(x3.data() + i * x.size(), x.data(), x.size());
      set.vec_dot_tile[f](w2.data(), bytes, 2, x3.data(), x.size(), 3, n, out, 2);
      for (float o : out) {
        if (std::memcmp(&o, &got, sizeof(float)) != 0) return Describe("vec_dot_tile", name, n);
      }
    }
    const PackedKernel& pk = set.packed[f];
    if (pk.pack != nullptr) {
      // One packed group of copies of the row against 5 activation rows (one full pass of the kernel and a
      // ragged one): every entry equals the single dot bit for bit.
      std::vector<uint8_t> rows(pk.rows * bytes), group(pk.group_bytes(n)), x5(5 * x.size());
      for (int r = 0; r < pk.rows; ++r) std::memcpy(rows.data() + r * bytes, a.data(), bytes);
      for (int i = 0; i < 5; ++i) std::memcpy(x5.data() + i * x.size(), x.data(), x.size());
      pk.pack(rows.data(), bytes, n, group.data());
      std::vector<float> out(5 * pk.rows);
      pk.tile(group.data(), 1, x5.data(), x.size(), 5, n, out.data(), pk.rows);
      for (float o : out) {
        if (std::memcmp(&o, &got, sizeof(float)) != 0) return Describe("packed tile", name, n);
      }
    }
  }
  return "";
}

}  // namespace lazyslot::quant
