// Dispatch by measurement (quant/select.cpp): the installed families of each format agree bit for bit, a
// broken variant is excluded and named, a format without a passing SIMD gemv goes all-scalar, a forced level
// takes that level's set, and SelectKernels chooses a format once per process. Selection times are printed.
#include "quant/select.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "quant/check_rows.h"
#include "quant/kernels.h"
#include "quant/quant.h"
#include "quant_test_util.h"

namespace lazyslot::quant {
namespace {

using testing::RandomRow;

// Shapes of a Qwen3-0.6B Q4_K_M-like model: q4_K and q6_K matrices, rows of 1024, 2048 and 3072 values.
std::vector<MatrixShape> QwenLikeShapes() {
  return {{TensorType::kQ4_K, 1024, 28 * (2048 + 1024 + 3072 * 2)},
          {TensorType::kQ4_K, 2048, 28 * 1024},
          {TensorType::kQ4_K, 3072, 14 * 1024},
          {TensorType::kQ6_K, 1024, 28 * 1024 + 151936},
          {TensorType::kQ6_K, 3072, 14 * 1024}};
}

double Ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// Whether gemv, tile and packed of format t in `k` all equal k.vec_dot bit for bit on rows of n values
// (16 weight rows, 8 activation rows, other values than the selection's own checks). Empty when they do.
std::string FamiliesDisagree(const KernelSet& k, TensorType t, int64_t n) {
  const int f = FormatIndex(t);
  const TensorType at = VecDotType(t);
  const size_t wb = RowBytes(t, n), xb = RowBytes(at, n);
  constexpr int kW = 16, kX = 8;
  std::vector<uint8_t> w(kW * wb), x(kX * xb);
  for (int r = 0; r < kW; ++r) ref::QuantizeRow(t, RandomRow(n, 300 + r).data(), w.data() + r * wb, n);
  for (int i = 0; i < kX; ++i) ref::QuantizeRow(at, RandomRow(n, 700 + i).data(), x.data() + i * xb, n);
  std::vector<float> want(kX * kW), got(kX * kW);
  for (int i = 0; i < kX; ++i) {
    for (int r = 0; r < kW; ++r) want[i * kW + r] = k.vec_dot[f](w.data() + r * wb, x.data() + i * xb, n);
  }
  auto compare = [&](int n_x, const char* what) -> std::string {
    for (int i = 0; i < n_x; ++i) {
      for (int r = 0; r < kW; ++r) {
        if (!SameBits(got[i * kW + r], want[i * kW + r])) return std::string(what) + " of " + TypeName(t);
      }
    }
    return "";
  };
  if (k.gemv[f]) {
    k.gemv[f](w.data(), wb, kW, x.data(), xb, 1, n, got.data(), kW);
  } else {
    VecDotTileGeneric(k.vec_dot[f], w.data(), wb, kW, x.data(), xb, 1, n, got.data(), kW);
  }
  if (std::string e = compare(1, "gemv"); !e.empty()) return e;
  if (k.vec_dot_tile[f]) {
    k.vec_dot_tile[f](w.data(), wb, kW, x.data(), xb, kX, n, got.data(), kW);
    if (std::string e = compare(kX, "tile"); !e.empty()) return e;
  }
  const PackedKernel& pk = k.packed[f];
  if (pk.pack) {
    const int groups = kW / pk.rows;
    const size_t gb = pk.group_bytes(n);
    std::vector<uint8_t> buf(groups * gb);
    for (int g = 0; g < groups; ++g) pk.pack(w.data() + g * pk.rows * wb, wb, n, buf.data() + g * gb);
    pk.tile(buf.data(), groups, x.data(), xb, kX, n, got.data(), kW);
    if (std::string e = compare(kX, "packed"); !e.empty()) return e;
  }
  return "";
}

TEST(Select, InstalledFamiliesAgreeBitForBit) {
  const std::vector<KernelSet> sets = AvailableKernels();
  KernelSet active = sets.back();
  bool chosen[kFormatCount] = {};
  std::vector<MatrixShape> shapes = QwenLikeShapes();
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ5_K, TensorType::kF16,
                       TensorType::kBF16, TensorType::kF32}) {
    shapes.push_back({t, 1024, 2048});
    shapes.push_back({t, 3072, 1024});
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<FormatChoice> choices = SelectFrom(sets, shapes, SelectOptions{}, &active, chosen);
  std::printf("selection of %zu formats in %.1f ms\n", choices.size(), Ms(t0));
  for (const FormatChoice& c : choices) std::printf("  %s\n", c.summary.c_str());
  EXPECT_EQ(choices.size(), 8u);
  for (const MatrixShape& m : shapes) {
    const int f = FormatIndex(m.type);
    EXPECT_TRUE(chosen[f]) << TypeName(m.type);
    EXPECT_EQ(FamiliesDisagree(active, m.type, m.n_in), "") << m.n_in;
    if (sets.size() > 1) {
      EXPECT_NE(active.vec_dot[f], ScalarKernels().vec_dot[f]) << "scalar mixed in";
    }
  }
  // The bits a tile or packed kernel gives are those of the generation path on the same rows, whichever
  // sets the families came from (IntegerFormatsBitIdenticalAcrossSets makes the integer formats mixable).
  EXPECT_EQ(active.isa, sets.back().isa);
}

// The gemv timed with several threads streaming their shares at once (as a decode step on them runs) still
// installs agreeing families and says how many threads timed it.
TEST(Select, GemvTimedOnSeveralThreads) {
  const std::vector<KernelSet> sets = AvailableKernels();
  if (sets.size() < 2) GTEST_SKIP() << "no SIMD set on this CPU: nothing is timed";
  KernelSet active = sets.back();
  bool chosen[kFormatCount] = {};
  SelectOptions opt;
  opt.gemv_threads = 2;
  const std::vector<MatrixShape> shapes = QwenLikeShapes();
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<FormatChoice> choices = SelectFrom(sets, shapes, opt, &active, chosen);
  std::printf("selection on %d threads in %.1f ms\n", opt.gemv_threads, Ms(t0));
  ASSERT_FALSE(choices.empty());
  for (const FormatChoice& c : choices) {
    std::printf("  %s\n", c.summary.c_str());
    EXPECT_NE(c.summary.find("GB/s on 2 threads"), std::string::npos) << c.summary;
  }
  for (const MatrixShape& m : shapes) EXPECT_EQ(FamiliesDisagree(active, m.type, m.n_in), "") << m.n_in;
}

float WrongDot(const void*, const void*, int64_t) { return 42.0f; }
void WrongTile(const void*, size_t, int64_t n_w, const void*, size_t, int64_t n_x, int64_t, float* out,
               int64_t ldo) {
  for (int64_t i = 0; i < n_x; ++i) {
    for (int64_t r = 0; r < n_w; ++r) out[i * ldo + r] = 42.0f;
  }
}
// A packed "layout" of 8 plain Q8_0 rows one after the other, with a tile that gets every result wrong.
void CopyPack(const void* w, size_t w_stride, int64_t n, void* dst) {
  for (int r = 0; r < 8; ++r) {
    std::memcpy(static_cast<uint8_t*>(dst) + r * RowBytes(TensorType::kQ8_0, n),
                static_cast<const uint8_t*>(w) + r * w_stride, RowBytes(TensorType::kQ8_0, n));
  }
}
size_t CopyGroupBytes(int64_t n) { return 8 * RowBytes(TensorType::kQ8_0, n); }
void WrongPackedTile(const void*, int64_t n_groups, const void*, size_t, int64_t n_x, int64_t, float* out,
                     int64_t ldo) {
  for (int64_t i = 0; i < n_x; ++i) {
    for (int64_t r = 0; r < 8 * n_groups; ++r) out[i * ldo + r] = 42.0f;
  }
}

// A SIMD set to build on: the CPU's best, or (without AVX2) the scalar entries posing as one.
KernelSet GoodSimdSet() {
  KernelSet good = AvailableKernels().back();
  if (good.isa == Isa::kScalar) {
    good.isa = Isa::kAvx2;
    good.name = "fake-simd";
  }
  return good;
}

TEST(Select, BrokenVariantIsExcludedAndNamed) {
  const KernelSet good = GoodSimdSet();
  KernelSet broken = good;
  broken.isa = Isa::kAvx512;
  broken.name = "broken";
  broken.vec_dot[kQ6_K] = WrongDot;  // a gemv variant (dot, gemv) of its own, whose dot is wrong
  broken.gemv[kQ6_K] = nullptr;      // (the generic loop over it, so the gemv agrees with its dot)
  broken.vec_dot[kQ5_K] = WrongDot;  // a gemv that disagrees with its own dot
  broken.vec_dot_tile[kQ4_K] = WrongTile;
  broken.packed[kQ8_0] = PackedKernel{CopyPack, WrongPackedTile, CopyGroupBytes, 8};
  const std::vector<KernelSet> sets = {ScalarKernels(), good, broken};
  KernelSet active = good;
  bool chosen[kFormatCount] = {};
  const std::vector<MatrixShape> shapes = {{TensorType::kQ4_K, 1024, 256},
                                           {TensorType::kQ5_K, 2048, 256},
                                           {TensorType::kQ6_K, 3072, 256},
                                           {TensorType::kQ8_0, 1024, 256}};
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<FormatChoice> choices = SelectFrom(sets, shapes, SelectOptions{}, &active, chosen);
  std::printf("selection with broken variants in %.1f ms\n", Ms(t0));
  std::string all;
  for (const FormatChoice& c : choices) all += c.summary + "\n";
  std::printf("%s", all.c_str());
  EXPECT_NE(all.find("gemv broken failed its check (vec_dot of q6_K n=3072 differs from scalar)"),
            std::string::npos);
  EXPECT_NE(all.find("gemv broken failed its check (gemv of q5_K n=2048 differs from its vec_dot)"),
            std::string::npos);
  EXPECT_NE(all.find("tile broken failed its check (tile of q4_K n=1024 differs from the gemv)"),
            std::string::npos);
  EXPECT_NE(all.find("packed broken failed its check (packed tile of q8_0 n=1024 differs from the gemv)"),
            std::string::npos);
  EXPECT_NE(active.vec_dot[kQ6_K], WrongDot);
  EXPECT_NE(active.vec_dot[kQ5_K], WrongDot);
  EXPECT_NE(active.vec_dot_tile[kQ4_K], WrongTile);
  EXPECT_NE(active.packed[kQ8_0].tile, WrongPackedTile);
  for (const MatrixShape& m : shapes) EXPECT_EQ(FamiliesDisagree(active, m.type, m.n_in), "");
}

TEST(Select, NoPassingSimdGemvFallsBackToScalar) {
  KernelSet broken = GoodSimdSet();
  broken.name = "broken";
  broken.vec_dot[kQ4_0] = WrongDot;
  const std::vector<KernelSet> sets = {ScalarKernels(), broken};
  KernelSet active = broken;
  bool chosen[kFormatCount] = {};
  const std::vector<FormatChoice> choices =
      SelectFrom(sets, {{TensorType::kQ4_0, 2048, 64}}, SelectOptions{}, &active, chosen);
  ASSERT_EQ(choices.size(), 1u);
  std::printf("%s\n", choices[0].summary.c_str());
  EXPECT_EQ(choices[0].summary.find("q4_0 scalar (no SIMD gemv passed its check), gemv broken 1-row failed"),
            0u);
  EXPECT_NE(choices[0].summary.find(", gemv broken failed its check"), std::string::npos);
  EXPECT_EQ(active.vec_dot[kQ4_0], ScalarKernels().vec_dot[kQ4_0]);
  EXPECT_EQ(active.gemv[kQ4_0], nullptr);
  EXPECT_EQ(active.vec_dot_tile[kQ4_0], nullptr);
  EXPECT_EQ(active.packed[kQ4_0].pack, nullptr);
}

// A set's multi-row gemv and the plain loop over its dot are both timed (from memory); whichever serves, the
// generation path gives the dot's bits.
TEST(Select, OneRowGemvIsACandidate) {
  const KernelSet good = GoodSimdSet();
  const std::vector<KernelSet> sets = {ScalarKernels(), good};
  KernelSet active = good;
  bool chosen[kFormatCount] = {};
  const std::vector<MatrixShape> shapes = {{TensorType::kQ4_K, 1024, 4096}, {TensorType::kQ6_K, 1024, 4096}};
  const std::vector<FormatChoice> choices = SelectFrom(sets, shapes, SelectOptions{}, &active, chosen);
  ASSERT_EQ(choices.size(), 2u);
  for (const FormatChoice& c : choices) {
    std::printf("%s\n", c.summary.c_str());
    const std::string one = std::string(good.name) + " 1-row";
    if (!good.gemv[c.format]) continue;
    EXPECT_NE(c.summary.find(one), std::string::npos) << c.summary;
    const bool took_one = c.summary.find(" gemv " + one + " ") != std::string::npos;  // the chosen one
    EXPECT_EQ(active.gemv[c.format], took_one ? nullptr : good.gemv[c.format]) << c.summary;
    EXPECT_EQ(active.vec_dot[c.format], good.vec_dot[c.format]);
  }
  for (const MatrixShape& m : shapes) EXPECT_EQ(FamiliesDisagree(active, m.type, m.n_in), "");
}

// The gemv variants handed to decode (FormatChoice::confirm): the chosen one first, at most
// kMaxGemvCandidates, each timed at kConfirmShare of the chosen figure or better, and each interchangeable
// with the chosen one: with its dot and gemv installed, the tile and packed kernels still agree bit for bit.
TEST(Select, DecodeCandidatesGiveTheChosenBits) {
  const std::vector<KernelSet> sets = AvailableKernels();
  KernelSet active = sets.back();
  bool chosen[kFormatCount] = {};
  std::vector<MatrixShape> shapes = QwenLikeShapes();
  for (TensorType t : {TensorType::kQ8_0, TensorType::kF16}) shapes.push_back({t, 1024, 8192});
  const std::vector<FormatChoice> choices = SelectFrom(sets, shapes, SelectOptions{}, &active, chosen);
  int with_candidates = 0;
  for (const FormatChoice& c : choices) {
    const int f = c.format;
    std::printf("%s: %zu decode candidates\n", c.summary.c_str(), c.confirm.size());
    if (c.confirm.empty()) continue;
    ++with_candidates;
    ASSERT_GE(c.confirm.size(), 2u);
    ASSERT_LE(c.confirm.size(), static_cast<size_t>(kMaxGemvCandidates));
    EXPECT_EQ(c.confirm[0].dot, active.vec_dot[f]);
    EXPECT_EQ(c.confirm[0].tile, active.gemv[f]);
    EXPECT_NE(c.summary.find(" gemv " + c.confirm[0].name + " "), std::string::npos) << c.summary;
    for (const GemvCandidate& g : c.confirm) {
      EXPECT_GE(g.figure, kConfirmShare * c.confirm[0].figure) << g.name;
      KernelSet k = active;
      k.vec_dot[f] = g.dot;
      k.gemv[f] = g.tile;
      for (const MatrixShape& m : shapes) {
        if (m.type != FormatType(f)) continue;
        EXPECT_EQ(FamiliesDisagree(k, m.type, m.n_in), "") << g.name;
      }
    }
  }
  std::printf("%d of %zu formats confirm their gemv in decode\n", with_candidates, choices.size());
  // A forced level hands nothing to decode.
  SelectOptions forced;
  forced.forced = true;
  forced.level = sets.back().isa;
  bool chosen2[kFormatCount] = {};
  for (const FormatChoice& c : SelectFrom(sets, shapes, forced, &active, chosen2))
    EXPECT_TRUE(c.confirm.empty());
}

TEST(Select, ForcedIsaIsHonoured) {
  Isa level = Isa::kScalar;
  EXPECT_FALSE(ForcedIsa(nullptr, Isa::kAvx512, &level));
  EXPECT_FALSE(ForcedIsa("", Isa::kAvx512, &level));
  EXPECT_FALSE(ForcedIsa("sse9", Isa::kAvx512, &level));
  ASSERT_TRUE(ForcedIsa("avx2", Isa::kAvx512, &level));
  EXPECT_EQ(level, Isa::kAvx2);
  ASSERT_TRUE(ForcedIsa("avx512", Isa::kAvx2, &level));
  EXPECT_EQ(level, Isa::kAvx2);  // capped at what the CPU has
  ASSERT_TRUE(ForcedIsa("scalar", Isa::kAvx512, &level));
  EXPECT_EQ(level, Isa::kScalar);

  const std::vector<KernelSet> sets = AvailableKernels();
  const std::vector<MatrixShape> shapes = {
      {TensorType::kQ4_K, 1024, 64}, {TensorType::kQ8_0, 1024, 64}, {TensorType::kF16, 1024, 64}};
  for (const KernelSet& forced : sets) {
    SelectOptions opt;
    opt.forced = true;
    opt.level = forced.isa;
    KernelSet active = sets.back();
    bool chosen[kFormatCount] = {};
    const std::vector<FormatChoice> choices = SelectFrom(sets, shapes, opt, &active, chosen);
    ASSERT_EQ(choices.size(), 3u);
    for (const FormatChoice& c : choices) {
      std::printf("forced %s: %s\n", forced.name, c.summary.c_str());
      EXPECT_EQ(c.summary.find("GB/s"), std::string::npos) << "a forced level is not timed";
      const int f = c.format;
      EXPECT_EQ(active.vec_dot[f], forced.vec_dot[f]) << forced.name << " " << f;
      EXPECT_EQ(active.gemv[f], forced.gemv[f]) << forced.name << " " << f;
      EXPECT_EQ(active.vec_dot_tile[f], forced.vec_dot_tile[f]) << forced.name << " " << f;
      EXPECT_EQ(active.packed[f].pack, forced.packed[f].pack) << forced.name << " " << f;
      EXPECT_EQ(active.packed[f].tile, forced.packed[f].tile) << forced.name << " " << f;
    }
  }
}

TEST(Select, SelectKernelsChoosesEachFormatOnce) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string line = SelectKernels(QwenLikeShapes());
  std::printf("%s\n(SelectKernels took %.1f ms)\n", line.c_str(), Ms(t0));
  EXPECT_EQ(line.find("kernels ("), 0u) << line;
  EXPECT_NE(line.find("q4_K "), std::string::npos) << line;
  EXPECT_NE(line.find("; q6_K "), std::string::npos) << line;
  Isa level;
  if (ForcedIsa(std::getenv("LAZYSLOT_ISA"), AvailableKernels().back().isa, &level)) {
    EXPECT_NE(line.find("forces the " + std::string(IsaName(level)) + " set"), std::string::npos) << line;
  }
  const KernelSet before = ActiveKernels();
  const std::string again = SelectKernels({{TensorType::kQ4_K, 4096, 4096}});
  std::printf("%s\n", again.c_str());
  EXPECT_EQ(again.find("kernels (chosen before)"), 0u) << again;
  EXPECT_EQ(ActiveKernels().vec_dot[kQ4_K], before.vec_dot[kQ4_K]);
  EXPECT_EQ(ActiveKernels().vec_dot_tile[kQ4_K], before.vec_dot_tile[kQ4_K]);
  EXPECT_EQ(ActiveKernels().packed[kQ4_K].tile, before.packed[kQ4_K].tile);
  EXPECT_NE(KernelChoices().find("q6_K "), std::string::npos) << KernelChoices();
  // Ignored shapes: an unsupported type, a row that does not fit the blocks, an activation-only format.
  const std::string none =
      SelectKernels({{TensorType::kQ8_K, 256, 16}, {TensorType::kQ4_0, 100, 16}, {TensorType::kF32, 0, 16}});
  EXPECT_EQ(none, "kernels (chosen before)") << none;
}

}  // namespace
}  // namespace lazyslot::quant
