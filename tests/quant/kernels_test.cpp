// Every kernel set this CPU supports (scalar, AVX2, AVX-512) against the scalar reference: quantize and
// dequantize bit-identical, dots equal up to float summation order, tiles bit-identical to the same set's
// single dots, over ragged sizes and misaligned pointers. Also the dispatch self-check.
#include "quant/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "quant/quant.h"
#include "quant_test_util.h"

namespace lazyslot::quant {
namespace {

using testing::AllTypes;
using testing::BlockSize;
using testing::RandomRow;
using testing::WeightTypes;

// Bytes copied to an offset from a 64-byte aligned buffer, so kernels see misaligned rows.
class Misaligned {
 public:
  Misaligned(const void* src, size_t bytes, size_t offset) : buf_(bytes + offset + 64), offset_(offset) {
    std::memcpy(data(), src, bytes);
  }
  uint8_t* data() {
    const uintptr_t p = reinterpret_cast<uintptr_t>(buf_.data());
    return reinterpret_cast<uint8_t*>((p + 63) / 64 * 64) + offset_;
  }

 private:
  std::vector<uint8_t> buf_;
  size_t offset_;
};

// A misalignment of `k` units that keeps the row legal: any byte for block formats, whole elements for the
// plain F32/F16/BF16 rows (quant.h).
size_t Offset(TensorType t, size_t k) { return BlockSize(t) == 1 ? k * Traits(t).block_bytes : k; }

std::vector<int64_t> SizesFor(TensorType t) {
  const int64_t bs = std::max(BlockSize(t), BlockSize(VecDotType(t)));
  if (bs == 1) return {1, 3, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 100, 255, 256, 1000, 4099};
  std::vector<int64_t> sizes;
  for (int64_t blocks : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64}) sizes.push_back(blocks * bs);
  return sizes;
}

TEST(Kernels, ScalarSetComesFirstAndIsComplete) {
  const std::vector<KernelSet> sets = AvailableKernels();
  ASSERT_FALSE(sets.empty());
  EXPECT_EQ(sets[0].isa, Isa::kScalar);
  for (const KernelSet& s : sets) {
    for (int f = 0; f < kFormatCount; ++f) {
      EXPECT_NE(s.quantize[f], nullptr) << s.name << " " << f;
      EXPECT_NE(s.dequantize[f], nullptr) << s.name << " " << f;
      if (f != kQ8_K) {
        EXPECT_NE(s.vec_dot[f], nullptr) << s.name << " " << f;
      }
    }
    std::printf("kernel set available: %s\n", s.name);
  }
  std::printf("active: %s\n", ActiveKernels().name);
}

TEST(Kernels, QuantizeAndDequantizeBitIdentical) {
  for (const KernelSet& s : AvailableKernels()) {
    for (TensorType t : AllTypes()) {
      const int f = FormatIndex(t);
      for (int64_t n : SizesFor(t)) {
        if (n % BlockSize(t) != 0) continue;
        for (size_t off : {0, 1, 3}) {
          std::vector<float> x = RandomRow(n + 1, static_cast<uint32_t>(n * 7 + off), 0.3f);
          if (n > 40) {  // a zero and a negative max in some blocks
            x[n / 2] = 0.0f;
            x[n / 3] = -std::fabs(x[n / 5]) * 10;
          }
          Misaligned src(x.data() + 1, n * sizeof(float), off * 4 + 4);  // floats at odd addresses
          const size_t bytes = RowBytes(t, n);
          std::vector<uint8_t> want(bytes);
          Misaligned got(want.data(), bytes, Offset(t, off));
          ScalarKernels().quantize[f](reinterpret_cast<const float*>(src.data()), want.data(), n);
          s.quantize[f](reinterpret_cast<const float*>(src.data()), got.data(), n);
          ASSERT_EQ(std::memcmp(want.data(), got.data(), bytes), 0)
              << s.name << " quantize " << TypeName(t) << " n=" << n << " off=" << off;
          std::vector<float> dw(n), dg(n + 1);
          ScalarKernels().dequantize[f](got.data(), dw.data(), n);
          s.dequantize[f](got.data(), dg.data() + 1, n);
          ASSERT_EQ(std::memcmp(dw.data(), dg.data() + 1, n * sizeof(float)), 0)
              << s.name << " dequantize " << TypeName(t) << " n=" << n;
        }
      }
    }
  }
}

TEST(Kernels, QuantizeQ8EdgeCasesBitIdentical) {
  for (const KernelSet& s : AvailableKernels()) {
    for (TensorType t : {TensorType::kQ8_0, TensorType::kQ8_K, TensorType::kF16, TensorType::kBF16}) {
      const int f = FormatIndex(t);
      const int64_t n = 512;
      std::vector<std::vector<float>> rows;
      rows.emplace_back(n, 0.0f);
      rows.emplace_back(n, -1.0f);
      rows.emplace_back(n, 1e-38f);  // 127/amax overflows to inf in Q8_0
      std::vector<float> ties(n);
      for (int64_t i = 0; i < n; ++i)
        ties[i] = (i % 32 == 0) ? 127.0f : static_cast<float>(i % 64) * 0.5f - 16;
      rows.push_back(ties);
      std::vector<float> equal_mag(n, 0.25f);
      for (int64_t i = 0; i < n; i += 2) equal_mag[i] = -0.25f;  // +-max ties: the first one sets the sign
      rows.push_back(equal_mag);
      for (const auto& x : rows) {
        std::vector<uint8_t> a(RowBytes(t, n)), b(RowBytes(t, n));
        ScalarKernels().quantize[f](x.data(), a.data(), n);
        s.quantize[f](x.data(), b.data(), n);
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0)
            << s.name << " " << TypeName(t) << " " << x[1];
      }
    }
  }
}

TEST(Kernels, DotsMatchScalarAndTilesMatchDots) {
  for (const KernelSet& s : AvailableKernels()) {
    for (TensorType t : WeightTypes()) {
      const int f = FormatIndex(t);
      const TensorType at = VecDotType(t);
      const int fa = FormatIndex(at);
      for (int64_t n : SizesFor(t)) {
        const size_t wbytes = RowBytes(t, n), xbytes = RowBytes(at, n);
        // 5 weight rows x 10 activation rows (tiles take weight rows in pairs and activation rows up to 8 at
        // a time), rows packed back to back and misaligned (Offset).
        constexpr int kW = 5, kX = 10, kStride = kW + 2;
        std::vector<uint8_t> w(kW * wbytes), x(kX * xbytes);
        std::vector<std::vector<float>> dwr(kW, std::vector<float>(n)), dxr(kX, std::vector<float>(n));
        for (int r = 0; r < kW; ++r) {
          const std::vector<float> v = RandomRow(n, 1000 + r + static_cast<uint32_t>(n), 0.05f);
          ScalarKernels().quantize[f](v.data(), w.data() + r * wbytes, n);
          ScalarKernels().dequantize[f](w.data() + r * wbytes, dwr[r].data(), n);
        }
        for (int i = 0; i < kX; ++i) {
          const std::vector<float> v = RandomRow(n, 2000 + i + static_cast<uint32_t>(n), 2.0f);
          ScalarKernels().quantize[fa](v.data(), x.data() + i * xbytes, n);
          ScalarKernels().dequantize[fa](x.data() + i * xbytes, dxr[i].data(), n);
        }
        Misaligned wm(w.data(), w.size(), Offset(t, 1)), xm(x.data(), x.size(), Offset(at, 3));
        float single[kX][kW];
        for (int i = 0; i < kX; ++i) {
          for (int r = 0; r < kW; ++r) {
            double scale = 0;
            for (int64_t k = 0; k < n; ++k) scale += std::fabs(static_cast<double>(dwr[r][k]) * dxr[i][k]);
            const float want = ScalarKernels().vec_dot[f](w.data() + r * wbytes, x.data() + i * xbytes, n);
            single[i][r] = s.vec_dot[f](wm.data() + r * wbytes, xm.data() + i * xbytes, n);
            ASSERT_NEAR(single[i][r], want, 1e-5 * scale + 1e-30)
                << s.name << " " << TypeName(t) << " n=" << n << " w" << r << " x" << i;
          }
        }
        // Tiles of every shape up to 5 x 10 (out_stride wider than n_w), bit-identical to the single dots.
        for (int nw = 0; nw <= kW; ++nw) {
          for (int nx = 0; nx <= kX; ++nx) {
            std::vector<float> out(kX * kStride, -1.0f);
            if (s.vec_dot_tile[f]) {
              s.vec_dot_tile[f](wm.data(), wbytes, nw, xm.data(), xbytes, nx, n, out.data(), kStride);
            } else {
              VecDotTileGeneric(s.vec_dot[f], wm.data(), wbytes, nw, xm.data(), xbytes, nx, n, out.data(),
                                kStride);
            }
            for (int i = 0; i < kX; ++i) {
              for (int r = 0; r < kStride; ++r) {
                if (i < nx && r < nw) {
                  ASSERT_EQ(out[i * kStride + r], single[i][r])
                      << s.name << " tile " << TypeName(t) << " n=" << n << " " << nw << "x" << nx;
                } else {
                  ASSERT_EQ(out[i * kStride + r], -1.0f)
                      << "tile wrote outside its " << nx << "x" << nw << " block";
                }
              }
            }
          }
        }
      }
    }
  }
}

// Packed kernels (interleaved groups of PackedKernel::rows weight rows): every output bit-identical to the
// same set's single dot, for 1-3 groups, 1-9 activation rows (the kernel passes over 4 at a time), every row
// length, misaligned source rows and activations; nothing written outside the n_x x (8 * groups) block.
TEST(Kernels, PackedTilesMatchDots) {
  int checked = 0;
  for (const KernelSet& s : AvailableKernels()) {
    for (TensorType t : WeightTypes()) {
      const int f = FormatIndex(t);
      const PackedKernel& pk = s.packed[f];
      if (pk.pack == nullptr) continue;
      ASSERT_NE(pk.tile, nullptr);
      const TensorType at = VecDotType(t);
      for (int64_t n : SizesFor(t)) {
        constexpr int kGroups = 3, kX = 9;
        const int kW = kGroups * pk.rows, kStride = kW + 3;
        const size_t wbytes = RowBytes(t, n), xbytes = RowBytes(at, n);
        std::vector<uint8_t> w(kW * wbytes), x(kX * xbytes);
        // The last group and the last activation row are near-constant: the largest weight codes (15 for
        // Q4_0/Q4_K, 31 for Q5_K, 60 for Q6_K) against -127/-128 everywhere, the worst case for the kernels'
        // int16 sums.
        for (int r = 0; r < kW; ++r) {
          std::vector<float> v = RandomRow(n, 3000 + r + static_cast<uint32_t>(n), 0.05f);
          if (r >= (kGroups - 1) * pk.rows) {
            for (int64_t k = 0; k < n; ++k) v[k] = k % 32 == 0 ? -1.0f : 0.875f;
          }
          QuantizeRow(t, v.data(), w.data() + r * wbytes, n);
        }
        for (int i = 0; i < kX; ++i) {
          std::vector<float> v = RandomRow(n, 4000 + i + static_cast<uint32_t>(n), 2.0f);
          if (i == kX - 1) v.assign(n, -1.0f);
          QuantizeRow(at, v.data(), x.data() + i * xbytes, n);
        }
        Misaligned wm(w.data(), w.size(), 5), xm(x.data(), x.size(), 3);
        std::vector<uint8_t> packed(kGroups * pk.group_bytes(n));
        for (int g = 0; g < kGroups; ++g) {
          pk.pack(wm.data() + g * pk.rows * wbytes, wbytes, n, packed.data() + g * pk.group_bytes(n));
        }
        for (int groups = 1; groups <= kGroups; ++groups) {
          for (int nx = 1; nx <= kX; ++nx) {
            std::vector<float> out(kX * kStride, -1.0f);
            pk.tile(packed.data(), groups, xm.data(), xbytes, nx, n, out.data(), kStride);
            for (int i = 0; i < kX; ++i) {
              for (int r = 0; r < kStride; ++r) {
                if (i < nx && r < groups * pk.rows) {
                  const float want = s.vec_dot[f](w.data() + r * wbytes, x.data() + i * xbytes, n);
                  ASSERT_EQ(out[i * kStride + r], want)
                      << s.name << " packed " << TypeName(t) << " n=" << n << " row " << r << " x" << i;
                } else {
                  ASSERT_EQ(out[i * kStride + r], -1.0f) << "packed tile wrote outside its block";
                }
              }
            }
            ++checked;
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no kernel set on this CPU has a packed kernel: nothing to compare";
}

// The integer formats' SIMD kernels do the same exact integer sums and the same float operations in every
// set, so an AVX-512 dot, tile or packed tile equals the AVX2 dot bit for bit: dispatch may then choose each
// family from a different set (dispatch.cpp) without a batch ever changing a result. Runs wherever the CPU
// has AVX-512 (and is reported skipped where it does not).
TEST(Kernels, IntegerFormatsBitIdenticalAcrossSets) {
  const std::vector<KernelSet> sets = AvailableKernels();
  const KernelSet* base = nullptr;
  for (const KernelSet& s : sets) {
    if (s.isa == Isa::kAvx2) base = &s;
  }
  if (base == nullptr || sets.back().isa == Isa::kAvx2) {
    GTEST_SKIP() << "only " << sets.back().name << " kernels on this CPU: no second SIMD set to compare";
  }
  for (const KernelSet& s : sets) {
    if (s.isa <= Isa::kAvx2) continue;
    for (TensorType t :
         {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K}) {
      const int f = FormatIndex(t);
      const TensorType at = VecDotType(t);
      for (int64_t n : SizesFor(t)) {
        constexpr int kW = 32, kX = 9;
        const size_t wbytes = RowBytes(t, n), xbytes = RowBytes(at, n);
        std::vector<uint8_t> w(kW * wbytes), x(kX * xbytes);
        for (int r = 0; r < kW; ++r) {
          QuantizeRow(t, RandomRow(n, 5000 + r + static_cast<uint32_t>(n), 0.05f).data(),
                      w.data() + r * wbytes, n);
        }
        for (int i = 0; i < kX; ++i) {
          std::vector<float> v = RandomRow(n, 6000 + i + static_cast<uint32_t>(n), 2.0f);
          if (i == kX - 1) v.assign(n, -1.0f);
          QuantizeRow(at, v.data(), x.data() + i * xbytes, n);
        }
        Misaligned wm(w.data(), w.size(), 3), xm(x.data(), x.size(), 1);
        std::vector<float> want(kX * kW), tile(kX * kW, -1.0f);
        for (int i = 0; i < kX; ++i) {
          for (int r = 0; r < kW; ++r) {
            want[i * kW + r] = base->vec_dot[f](w.data() + r * wbytes, x.data() + i * xbytes, n);
            const float got = s.vec_dot[f](wm.data() + r * wbytes, xm.data() + i * xbytes, n);
            ASSERT_EQ(got, want[i * kW + r]) << s.name << " dot " << TypeName(t) << " n=" << n;
          }
        }
        for (int nx : {1, 2, 4, kX}) {
          s.vec_dot_tile[f](wm.data(), wbytes, kW, xm.data(), xbytes, nx, n, tile.data(), kW);
          for (int k = 0; k < nx * kW; ++k) {
            ASSERT_EQ(tile[k], want[k]) << s.name << " tile " << TypeName(t) << " n=" << n << " nx=" << nx;
          }
        }
        const PackedKernel& pk = s.packed[f];
        if (pk.pack == nullptr) continue;
        const int groups = kW / pk.rows;
        std::vector<uint8_t> packed(groups * pk.group_bytes(n));
        for (int g = 0; g < groups; ++g) {
          pk.pack(wm.data() + g * pk.rows * wbytes, wbytes, n, packed.data() + g * pk.group_bytes(n));
        }
        std::vector<float> out(kX * kW, -1.0f);
        pk.tile(packed.data(), groups, xm.data(), xbytes, kX, n, out.data(), kW);
        for (int k = 0; k < kX * kW; ++k) {
          ASSERT_EQ(out[k], want[k]) << s.name << " packed " << TypeName(t) << " n=" << n;
        }
      }
    }
  }
}

TEST(Kernels, PublicTileMatchesPublicDot) {
  const int64_t n = 512;
  for (TensorType t : WeightTypes()) {
    const TensorType at = VecDotType(t);
    std::vector<uint8_t> w(2 * RowBytes(t, n)), x(5 * RowBytes(at, n));
    for (int r = 0; r < 2; ++r) {
      QuantizeRow(t, RandomRow(n, 10 + r).data(), w.data() + r * RowBytes(t, n), n);
    }
    for (int i = 0; i < 5; ++i)
      QuantizeRow(at, RandomRow(n, 20 + i).data(), x.data() + i * RowBytes(at, n), n);
    float out[10];
    VecDotTile(t, w.data(), RowBytes(t, n), 2, x.data(), RowBytes(at, n), 5, n, out, 2);
    for (int i = 0; i < 5; ++i) {
      for (int r = 0; r < 2; ++r) {
        EXPECT_EQ(out[i * 2 + r], VecDot(t, w.data() + r * RowBytes(t, n), x.data() + i * RowBytes(at, n), n))
            << TypeName(t);
      }
    }
  }
}

TEST(Kernels, IsaOverride) {
  EXPECT_EQ(ResolveIsa(nullptr, Isa::kAvx512), Isa::kAvx512);
  EXPECT_EQ(ResolveIsa("", Isa::kAvx2), Isa::kAvx2);
  EXPECT_EQ(ResolveIsa("scalar", Isa::kAvx512), Isa::kScalar);
  EXPECT_EQ(ResolveIsa("avx2", Isa::kAvx512), Isa::kAvx2);
  EXPECT_EQ(ResolveIsa("avx512", Isa::kAvx2), Isa::kAvx2);  // capped at what the CPU has
  EXPECT_EQ(ResolveIsa("sse9", Isa::kAvx2), Isa::kAvx2);    // unknown: warning, best
  const char* env = std::getenv("LAZYSLOT_ISA");
  const Isa best = AvailableKernels().back().isa;
  EXPECT_EQ(ActiveKernels().isa, ResolveIsa(env, best)) << "active set ignores LAZYSLOT_ISA";
}

// The CPU's features and LAZYSLOT_ISA are read in one place (dispatch.cpp), and what the kernel sets, the
// selection and the ops layer see all derive from it.
TEST(Kernels, OneSourceForTheLevel) {
  const CpuFeatures& cpu = DetectCpu();
  EXPECT_EQ(&cpu, &DetectCpu()) << "detected once";
  EXPECT_TRUE(!cpu.avx2 || cpu.f16c);
  EXPECT_TRUE(!cpu.avx512 || cpu.avx2);
  EXPECT_TRUE(!cpu.avx512bf16 || cpu.avx512);
  EXPECT_EQ(CpuIsa(), AvailableKernels().back().isa);
  const char* env = std::getenv("LAZYSLOT_ISA");
  Isa forced_level;
  const bool forced = ForcedIsa(env, CpuIsa(), &forced_level);
  EXPECT_EQ(IsaOverride().forced, forced);
  EXPECT_EQ(IsaOverride().value, env ? env : "");
  EXPECT_EQ(IsaOverride().level, ResolveIsa(env, CpuIsa()));
  if (forced) {
    EXPECT_EQ(IsaOverride().level, forced_level);
  }
  EXPECT_EQ(ActiveIsa(), ActiveKernels().isa);
}

float WrongDot(const void*, const void*, int64_t) { return 42.0f; }

TEST(Kernels, SelfCheckPassesAndCatchesBrokenKernels) {
  for (const KernelSet& s : AvailableKernels()) EXPECT_EQ(SelfCheck(s), "") << s.name;
  KernelSet broken = ScalarKernels();
  broken.vec_dot[kQ6_K] = WrongDot;
  EXPECT_NE(SelfCheck(broken).find("q6_K"), std::string::npos) << SelfCheck(broken);
  broken = ScalarKernels();
  broken.quantize[kQ8_0] = ScalarKernels().quantize[kQ4_0];
  EXPECT_NE(SelfCheck(broken), "");
}

}  // namespace
}  // namespace lazyslot::quant
