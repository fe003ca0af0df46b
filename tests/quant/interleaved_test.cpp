// Weights kept interleaved (quant/kernels.h InterleavedKernel, docs/decisions/0012): the in-place rewrite
// round-trips, each row comes back out of its group, and the tile and the packed kernel over interleaved rows
// give vec_dot's bits on the GGUF rows for every group count and activation row count, with near-constant
// worst-case rows among them. Runs wherever a kernel set has an interleaved layout (AVX-512) and is skipped
// where none has.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "quant/kernels.h"
#include "quant/quant.h"
#include "quant_test_util.h"

namespace lazyslot::quant {
namespace {

using testing::RandomRow;

constexpr int kGroups = 3;
constexpr int kX = 9;
constexpr int kRowsW = kGroups * kInterleaveRows;

struct Case {
  int64_t n = 0;
  size_t wbytes = 0, xbytes = 0;
  std::vector<uint8_t> w, x;  // GGUF rows, activation rows
};

// kRowsW weight rows (the last group near-constant at the largest codes) and kX activation rows (the last
// all -1: the int8 extreme).
Case MakeCase(TensorType t, int64_t n) {
  Case c;
  c.n = n;
  const TensorType at = VecDotType(t);
  c.wbytes = RowBytes(t, n);
  c.xbytes = RowBytes(at, n);
  c.w.resize(kRowsW * c.wbytes);
  c.x.resize(kX * c.xbytes);
  for (int r = 0; r < kRowsW; ++r) {
    std::vector<float> v = RandomRow(n, 7000 + r + static_cast<uint32_t>(n), 0.05f);
    if (r >= (kGroups - 1) * kInterleaveRows) {
      for (int64_t k = 0; k < n; ++k) v[k] = k % 32 == 0 ? -1.0f : 0.875f;
    }
    QuantizeRow(t, v.data(), c.w.data() + r * c.wbytes, n);
  }
  for (int i = 0; i < kX; ++i) {
    std::vector<float> v = RandomRow(n, 8000 + i + static_cast<uint32_t>(n), 2.0f);
    if (i == kX - 1) v.assign(n, -1.0f);
    QuantizeRow(at, v.data(), c.x.data() + i * c.xbytes, n);
  }
  return c;
}

// out (kX rows of `stride`, -1 where nothing may be written) against the dots of the first `rows` weight
// rows.
void ExpectDots(const KernelSet& s, int f, const Case& c, const std::vector<float>& out, int stride, int rows,
                int nx, const char* what) {
  for (int i = 0; i < kX; ++i) {
    for (int r = 0; r < stride; ++r) {
      if (i < nx && r < rows) {
        const float want = s.vec_dot[f](c.w.data() + r * c.wbytes, c.x.data() + i * c.xbytes, c.n);
        ASSERT_EQ(out[i * stride + r], want)
            << s.name << " " << what << " n=" << c.n << " row " << r << " x" << i;
      } else {
        ASSERT_EQ(out[i * stride + r], -1.0f) << s.name << " " << what << " wrote outside its block";
      }
    }
  }
}

TEST(Interleaved, RewriteRoundTripsAndProductsMatchTheDots) {
  int checked = 0;
  for (const KernelSet& s : AvailableKernels()) {
    for (TensorType t : testing::WeightTypes()) {
      const int f = FormatIndex(t);
      const InterleavedKernel& ik = s.interleaved[f];
      if (ik.interleave == nullptr) continue;
      ASSERT_NE(ik.deinterleave, nullptr);
      ASSERT_NE(ik.extract_row, nullptr);
      ASSERT_NE(ik.tile, nullptr);
      ASSERT_NE(ik.packed.pack, nullptr);
      ASSERT_EQ(ik.packed.rows, kInterleaveRows);
      for (int64_t n : {256, 512, 768, 1024, 3072}) {
        const Case c = MakeCase(t, n);
        std::vector<uint8_t> iw = c.w;
        ik.interleave(iw.data(), kRowsW, n);
        ASSERT_NE(std::memcmp(iw.data(), c.w.data(), iw.size()), 0) << "the layout did not change";
        std::vector<uint8_t> back = iw;
        ik.deinterleave(back.data(), kRowsW, n);
        ASSERT_EQ(std::memcmp(back.data(), c.w.data(), back.size()), 0) << s.name << " n=" << n;
        std::vector<uint8_t> row(c.wbytes);
        for (int r = 0; r < kRowsW; ++r) {
          const int g = r / kInterleaveRows;
          ik.extract_row(iw.data() + g * kInterleaveRows * c.wbytes, r % kInterleaveRows, n, row.data());
          ASSERT_EQ(std::memcmp(row.data(), c.w.data() + r * c.wbytes, c.wbytes), 0)
              << "row " << r << " n=" << n;
        }

        const int stride = kRowsW + 3;
        std::vector<uint8_t> packed(kGroups * ik.packed.group_bytes(n));
        for (int g = 0; g < kGroups; ++g) {
          ik.packed.pack(iw.data() + g * kInterleaveRows * c.wbytes, c.wbytes, n,
                         packed.data() + g * ik.packed.group_bytes(n));
        }
        for (int groups = 1; groups <= kGroups; ++groups) {
          for (int nx = 1; nx <= kX; ++nx) {
            std::vector<float> out(kX * stride, -1.0f);
            ik.tile(iw.data(), c.wbytes, groups * kInterleaveRows, c.x.data(), c.xbytes, nx, n, out.data(),
                    stride);
            ExpectDots(s, f, c, out, stride, groups * kInterleaveRows, nx, "interleaved tile");
            std::fill(out.begin(), out.end(), -1.0f);
            ik.packed.tile(packed.data(), groups, c.x.data(), c.xbytes, nx, n, out.data(), stride);
            ExpectDots(s, f, c, out, stride, groups * kInterleaveRows, nx, "packed from interleaved");
            ++checked;
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no kernel set on this CPU has an interleaved layout: nothing to compare";
}

}  // namespace
}  // namespace lazyslot::quant
