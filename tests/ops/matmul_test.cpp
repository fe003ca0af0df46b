// MatMul / MatMulMulti against the naive definition (encode each activation row, quant::VecDot per output):
// bit-identical for every weight type, ragged row counts, batch sizes around the 4-row tile, 1-3 threads.
#include "ops/matmul.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "interleaved_util.h"
#include "quant/gemv_confirm.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace lazyslot {
namespace {

struct Matrix {
  WeightView view;
  std::vector<uint8_t> bytes;
};

Matrix RandomMatrix(TensorType type, int64_t n_in, int64_t n_out, std::mt19937& rng) {
  Matrix m;
  m.view.type = type;
  m.view.n_in = n_in;
  m.view.n_out = n_out;
  m.view.row_bytes = RowBytes(type, n_in);
  m.bytes.resize(m.view.row_bytes * n_out + 1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(n_in);
  for (int64_t r = 0; r < n_out; ++r) {
    for (float& v : row) v = dist(rng);
    quant::QuantizeRow(type, row.data(), m.bytes.data() + r * m.view.row_bytes, n_in);
  }
  m.view.data = m.bytes.data();
  return m;
}

std::vector<float> RandomActivations(int64_t m, int64_t n_in, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(m * n_in);
  for (float& v : x) v = dist(rng);
  return x;
}

// y[i * ldy + r] by the definition.
std::vector<float> Naive(const WeightView& w, const std::vector<float>& x, int64_t m, int64_t ldy) {
  const TensorType at = quant::VecDotType(w.type);
  std::vector<uint8_t> enc(RowBytes(at, w.n_in));
  std::vector<float> y(m * ldy, -1.0f);
  for (int64_t i = 0; i < m; ++i) {
    quant::QuantizeRow(at, x.data() + i * w.n_in, enc.data(), w.n_in);
    for (int64_t r = 0; r < w.n_out; ++r)
      y[i * ldy + r] = quant::VecDot(w.type, w.row(r), enc.data(), w.n_in);
  }
  return y;
}

struct TypeCase {
  TensorType type;
  int64_t n_in;
};

TEST(MatMul, BitIdenticalToNaiveForEveryTypeAndShape) {
  const TypeCase cases[] = {{TensorType::kQ8_0, 96},  {TensorType::kQ4_0, 64},  {TensorType::kQ4_K, 256},
                            {TensorType::kQ5_K, 512}, {TensorType::kQ6_K, 256}, {TensorType::kF16, 40},
                            {TensorType::kBF16, 24},  {TensorType::kF32, 37},   {TensorType::kQ8_0, 2048}};
  std::mt19937 rng(7);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    MatMulScratch scratch;
    for (const TypeCase& c : cases) {
      for (int64_t n_out : {1, 5, 67, 300}) {
        const Matrix w = RandomMatrix(c.type, c.n_in, n_out, rng);
        for (int64_t m : {1, 2, 3, 4, 5, 8, 13}) {
          const std::vector<float> x = RandomActivations(m, c.n_in, rng);
          const int64_t ldy = n_out + 3;  // rows of y wider than n_out: the gap must stay untouched
          std::vector<float> y(m * ldy, -1.0f);
          MatMul(pool, w.view, x.data(), m, y.data(), ldy, scratch);
          const std::vector<float> want = Naive(w.view, x, m, ldy);
          for (size_t k = 0; k < y.size(); ++k) {
            ASSERT_EQ(y[k], want[k]) << TypeName(c.type) << " n_in=" << c.n_in << " n_out=" << n_out
                                     << " m=" << m << " threads=" << threads << " at " << k;
          }
        }
      }
    }
  }
}

// Prompt-sized batches: tiles of 8 activation rows, and for formats with a packed kernel (from 16 rows on) a
// ragged tail of weight rows through the plain tile; y rows wider than n_out keep their gap untouched.
TEST(MatMul, LargeBatchUsesTilesAndStaysExact) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  MatMulScratch scratch;
  for (TensorType type :
       {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K}) {
    for (int64_t n_in : {512, 3072}) {
      for (int64_t n_out : {8, 133}) {
        const Matrix w = RandomMatrix(type, n_in, n_out, rng);
        for (int64_t m : {15, 16, 70}) {
          const std::vector<float> x = RandomActivations(m, n_in, rng);
          const int64_t ldy = n_out + 2;
          std::vector<float> y(m * ldy, -1.0f);
          MatMul(pool, w.view, x.data(), m, y.data(), ldy, scratch);
          const std::vector<float> want = Naive(w.view, x, m, ldy);
          for (size_t k = 0; k < y.size(); ++k) {
            ASSERT_EQ(y[k], want[k]) << TypeName(type) << " " << n_in << "x" << n_out << " m=" << m << " at "
                                     << k;
          }
        }
      }
    }
  }
}

TEST(MatMul, MultiMatchesSeparateCallsWithMixedTypes) {
  std::mt19937 rng(3);
  ThreadPool pool(2);
  MatMulScratch scratch;
  // Q8_0 and Q4_K need different activation encodings; F16 a third.
  const Matrix a = RandomMatrix(TensorType::kQ8_0, 256, 65, rng);
  const Matrix b = RandomMatrix(TensorType::kQ4_K, 256, 17, rng);
  const Matrix c = RandomMatrix(TensorType::kF16, 256, 9, rng);
  for (int64_t m : {1, 6, 20}) {
    const std::vector<float> x = RandomActivations(m, 256, rng);
    std::vector<float> ya(m * 65), yb(m * 17), yc(m * 9);
    const MatMulTarget t[3] = {{&a.view, ya.data(), 65}, {&b.view, yb.data(), 17}, {&c.view, yc.data(), 9}};
    MatMulMulti(pool, t, 3, x.data(), m, scratch);
    EXPECT_EQ(ya, Naive(a.view, x, m, 65));
    EXPECT_EQ(yb, Naive(b.view, x, m, 17));
    EXPECT_EQ(yc, Naive(c.view, x, m, 9));
  }
}

// While decode confirms the gemv choice (quant/gemv_confirm.h), single-row products take the candidates in
// turn, each matrix on its own count; every result stays the definition's bits, and the confirmation settles
// after its warm-up and kVisits visits per candidate. Candidates: the best set's gemv and the plain loop over
// its dot, which give the same bits.
TEST(MatMul, GenerationConfirmsTheGemvWithoutChangingABit) {
  const std::vector<quant::KernelSet> sets = testing::UsableKernels();
  const quant::KernelSet& best = sets.back();
  const int f = quant::FormatIndex(TensorType::kQ4_K);
  quant::BeginGemvConfirmation(
      f, {{"set", best.vec_dot[f], best.gemv[f], 30.0}, {"set 1-row", best.vec_dot[f], nullptr, 29.0}});
  std::mt19937 rng(11);
  const Matrix a = RandomMatrix(TensorType::kQ4_K, 512, 300, rng);
  const Matrix b = RandomMatrix(TensorType::kQ4_K, 512, 40, rng);
  const Matrix c = RandomMatrix(TensorType::kQ4_K, 512, 130, rng);
  ThreadPool pool(2);
  MatMulScratch scratch;
  int steps = 0;
  while (quant::GemvConfirmationPending() && steps < 20) {
    const std::vector<float> x = RandomActivations(1, 512, rng);
    std::vector<float> ya(300), yb(40), yc(130);
    MatMul(pool, a.view, x.data(), 1, ya.data(), 300, scratch);
    const MatMulTarget t[2] = {{&b.view, yb.data(), 40}, {&c.view, yc.data(), 130}};
    MatMulMulti(pool, t, 2, x.data(), 1, scratch);
    EXPECT_EQ(ya, Naive(a.view, x, 1, 300)) << "step " << steps;
    EXPECT_EQ(yb, Naive(b.view, x, 1, 40)) << "step " << steps;
    EXPECT_EQ(yc, Naive(c.view, x, 1, 130)) << "step " << steps;
    ++steps;
  }
  EXPECT_EQ(steps, 1 + 2 * quant::GemvConfirmation::kVisits);
  const std::string summary = quant::GemvConfirmationSummary(f);
  EXPECT_NE(summary.find("q4_K gemv in decode set"), std::string::npos) << summary;
  EXPECT_NE(summary.find("over 2 matrices"), std::string::npos) << summary;
  // Settled: products take the winner and are no longer samples.
  const quant::GemvPick p = quant::PickGemv(f, a.view.row(0));
  EXPECT_EQ(p.dot, best.vec_dot[f]);
  EXPECT_EQ(p.candidate, -1);
}

// Weights kept interleaved (quant::InterleavedKernel, docs/decisions/0012) give the plain rows' bits through
// every path: one row (generation), the small-batch tile, the packed kernel for prompts, mixed with plain
// targets in one MatMulMulti, on 1-3 threads; GetRow gives the plain rows' values. Runs where a kernel set
// has the layout (AVX-512). One format's interleaved layout from `with` (installed in the active set for the
// test's length).
void CheckInterleaved(const quant::KernelSet* with, TensorType type) {
  const int f = quant::FormatIndex(type);
  const testing::ScopedInterleaved installed(*with, f);
  std::mt19937 rng(11);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    MatMulScratch scratch;
    for (int64_t n_in : {256, 1024}) {
      for (int64_t n_out : {16, 48, 320}) {
        const Matrix plain = RandomMatrix(type, n_in, n_out, rng);
        Matrix inter = plain;
        inter.view.data = inter.bytes.data();
        with->interleaved[f].interleave(inter.bytes.data(), n_out, n_in);
        inter.view.interleaved = true;
        const Matrix other = RandomMatrix(type, n_in, 32, rng);
        std::vector<float> row(n_in), row_plain(n_in);
        for (int64_t r = 0; r < n_out; ++r) {  // the embedding lookup reads through the layout too
          GetRow(inter.view, r, row.data());
          GetRow(plain.view, r, row_plain.data());
          ASSERT_EQ(std::memcmp(row.data(), row_plain.data(), n_in * sizeof(float)), 0) << "GetRow " << r;
        }
        for (int64_t m : {1, 2, 4, 5, 9, 16, 17, 40}) {
          const std::vector<float> x = RandomActivations(m, n_in, rng);
          const std::vector<float> want = Naive(plain.view, x, m, n_out);
          std::vector<float> y(m * n_out, -1.0f), y2(m * 32, -1.0f);
          MatMul(pool, inter.view, x.data(), m, y.data(), n_out, scratch);
          ASSERT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0)
              << TypeName(type) << " n_in " << n_in << " n_out " << n_out << " m " << m << " threads "
              << threads;
          const MatMulTarget t[2] = {{&inter.view, y.data(), n_out}, {&other.view, y2.data(), 32}};
          std::fill(y.begin(), y.end(), -1.0f);
          MatMulMulti(pool, t, 2, x.data(), m, scratch);
          ASSERT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0) << "multi, m " << m;
          const std::vector<float> want2 = Naive(other.view, x, m, 32);
          ASSERT_EQ(std::memcmp(y2.data(), want2.data(), y2.size() * sizeof(float)), 0)
              << "multi plain, m " << m;
        }
      }
    }
  }
}

TEST(MatMul, InterleavedWeightsGiveThePlainRowsBits) {
  const std::vector<quant::KernelSet> sets = testing::UsableKernels();
  int checked = 0;
  for (TensorType type : {TensorType::kQ4_K, TensorType::kQ8_0}) {
    const quant::KernelSet* with = nullptr;
    for (const quant::KernelSet& s : sets) {
      if (s.interleaved[quant::FormatIndex(type)].interleave) with = &s;
    }
    if (!with) continue;
    CheckInterleaved(with, type);
    ++checked;
  }
  if (checked == 0) {
    GTEST_SKIP() << "no kernel set that this CPU and LAZYSLOT_ISA allow has an interleaved layout: nothing to "
                    "compare";
  }
}

}  // namespace
}  // namespace lazyslot
