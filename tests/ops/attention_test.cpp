// Attention: the grouped, vectorized paths against the scalar definition of each mode (bit-identical), and
// both definitions against softmax(q.K^T * scale) . V computed in double (close).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "ops/attention.h"
#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace lazyslot {
namespace {

// A cache of n_kv rows, each holding n_head_kv heads of head_dim values of `type`.
struct Cache {
  std::vector<uint8_t> k, v;
  KvRows rows;
  std::vector<float> k_f, v_f;  // the values as stored (decoded), [n_kv][n_head_kv * head_dim]
};

Cache MakeCache(TensorType type, int n_head_kv, int head_dim, int32_t n_kv, std::mt19937& rng) {
  Cache c;
  const int64_t width = int64_t{n_head_kv} * head_dim;
  c.rows.type_k = c.rows.type_v = type;
  c.rows.k_row_bytes = c.rows.v_row_bytes = RowBytes(type, width);
  c.k.resize(c.rows.k_row_bytes * n_kv);
  c.v.resize(c.rows.v_row_bytes * n_kv);
  c.k_f.resize(width * n_kv);
  c.v_f.resize(width * n_kv);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(width);
  for (int32_t j = 0; j < n_kv; ++j) {
    for (float& x : row) x = 2.0f * dist(rng);
    quant::QuantizeRow(type, row.data(), c.k.data() + j * c.rows.k_row_bytes, width);
    quant::DequantizeRow(type, c.k.data() + j * c.rows.k_row_bytes, c.k_f.data() + j * width, width);
    for (float& x : row) x = dist(rng);
    quant::QuantizeRow(type, row.data(), c.v.data() + j * c.rows.v_row_bytes, width);
    quant::DequantizeRow(type, c.v.data() + j * c.rows.v_row_bytes, c.v_f.data() + j * width, width);
  }
  c.rows.k = c.k.data();
  c.rows.v = c.v.data();
  return c;
}

// softmax(scale * q.k_j) . v_j in double, over kv head g.
std::vector<double> Exact(const Cache& c, const float* q, int g, int n_head_kv, int head_dim, int32_t n_kv,
                          float scale) {
  const int64_t width = int64_t{n_head_kv} * head_dim;
  std::vector<double> s(n_kv);
  double mx = -INFINITY;
  for (int32_t j = 0; j < n_kv; ++j) {
    double d = 0;
    for (int e = 0; e < head_dim; ++e) d += double{q[e]} * c.k_f[j * width + g * head_dim + e];
    s[j] = d * scale;
    mx = std::max(mx, s[j]);
  }
  double sum = 0;
  for (double& x : s) sum += (x = std::exp(x - mx));
  std::vector<double> out(head_dim, 0.0);
  for (int32_t j = 0; j < n_kv; ++j) {
    for (int e = 0; e < head_dim; ++e) out[e] += s[j] / sum * c.v_f[j * width + g * head_dim + e];
  }
  return out;
}

void GroupedFastPathBitIdenticalToDefinition() {
  std::mt19937 rng(5);
  const int n_head_kv = 2, group = 3;
  for (TensorType type : {TensorType::kF16, TensorType::kF32}) {
    for (int head_dim : {8, 40, 64, 128, 12}) {
      for (int32_t n_kv : {1, 2, 31, 32, 33, 100, 517}) {
        const Cache c = MakeCache(type, n_head_kv, head_dim, n_kv, rng);
        std::normal_distribution<float> dist(0.0f, 1.0f);
        std::vector<float> q(n_head_kv * group * head_dim);
        for (float& x : q) x = dist(rng);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        for (AttentionMode mode : {AttentionMode::kFlash, AttentionMode::kStandard}) {
          AttentionScratch fast_s, ref_s;
          for (int g = 0; g < n_head_kv; ++g) {
            std::vector<float> out(group * head_dim, -1.0f);
            const float* qg = q.data() + g * group * head_dim;
            AttendGroup(mode, qg, head_dim, group, c.rows, g, head_dim, n_kv, scale, out.data(), head_dim, fast_s);
            for (int h = 0; h < group; ++h) {
              std::vector<float> ref(head_dim), single(head_dim);
              AttendHeadReference(mode, qg + h * head_dim, c.rows, g, head_dim, n_kv, scale, ref.data(), ref_s);
              AttendHead(mode, qg + h * head_dim, c.rows, g, head_dim, n_kv, scale, single.data(), fast_s);
              const std::vector<double> exact = Exact(c, qg + h * head_dim, g, n_head_kv, head_dim, n_kv, scale);
              for (int e = 0; e < head_dim; ++e) {
                const char* mname = mode == AttentionMode::kFlash ? "flash" : "standard";
                ASSERT_EQ(out[h * head_dim + e], ref[e])
                    << mname << " " << TypeName(type) << " hd=" << head_dim << " n_kv=" << n_kv << " g=" << g
                    << " h=" << h << " e=" << e;
                ASSERT_EQ(single[e], ref[e]) << mname << " hd=" << head_dim << " n_kv=" << n_kv;
                // F16 rounding of q, probabilities and (flash) the accumulator: a few 1e-3 of the |v| ~ 1 scale.
                ASSERT_NEAR(ref[e], exact[e], 2e-2) << mname << " hd=" << head_dim << " n_kv=" << n_kv;
              }
            }
          }
        }
      }
    }
  }
}

// Several tokens at once (a prompt's tile), one kv head or two per call, 1-3 query heads per kv head: each
// token's heads exactly as AttendGroup gives them alone, for tokens that see different numbers of cells
// (inside one key block, across blocks, a single cell, a causal run of 43).
void TokensTogetherBitIdenticalToOneByOne() {
  std::mt19937 rng(7);
  const int n_head_kv = 2;
  for (TensorType type : {TensorType::kF16, TensorType::kF32}) {
    for (auto [head_dim, group] :
         {std::pair{8, 2}, {64, 2}, {128, 2}, {24, 2}, {64, 3}, {16, 1}, {40, 2}, {48, 1}}) {
      const int32_t n_cells = 140;
      const Cache c = MakeCache(type, n_head_kv, head_dim, n_cells, rng);
      std::vector<std::vector<int32_t>> cases = {
          {1}, {1, 2, 3}, {31, 32, 33, 34}, {64, 65, 66, 67, 68, 69, 70, 71}, {100, 5, 140, 32, 33}, {17, 17}};
      // A prompt's causal run: whole blocks shared by many tokens, whose rows go through one V pass
      // together (up to six rows), and the diagonal blocks each token sees part of.
      cases.emplace_back();
      for (int32_t n = 57; n <= 99; ++n) cases.back().push_back(n);
      for (const std::vector<int32_t>& n_kv : cases) {
        const int n_tok = static_cast<int>(n_kv.size());
        const int64_t width = int64_t{n_head_kv} * group * head_dim;  // one token's query heads
        std::normal_distribution<float> dist(0.0f, 1.0f);
        std::vector<float> q(n_tok * width);
        for (float& x : q) x = dist(rng);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        for (AttentionMode mode : {AttentionMode::kFlash, AttentionMode::kStandard}) {
          AttentionScratch s;
          // Each kv head alone (heads = 1), then both in one call (heads = 2).
          for (int heads : {1, 2}) {
            std::vector<float> out(n_tok * width, -1.0f);
            for (int g = 0; g < n_head_kv; g += heads) {
              AttendBatch a;
              a.q = q.data() + g * group * head_dim;
              a.q_tok_stride = a.out_tok_stride = width;
              a.q_stride = a.out_stride = head_dim;
              a.n_q = group;
              a.n_kv_heads = heads;
              a.n_tok = n_tok;
              a.n_kv = n_kv.data();
              a.out = out.data() + g * group * head_dim;
              AttendTokens(mode, a, c.rows, g, head_dim, scale, s);
            }
            for (int g = 0; g < n_head_kv; ++g) {
              for (int t = 0; t < n_tok; ++t) {
                std::vector<float> alone(group * head_dim);
                const int64_t off = t * width + g * group * head_dim;
                AttendGroup(mode, q.data() + off, head_dim, group, c.rows, g, head_dim, n_kv[t], scale,
                            alone.data(), head_dim, s);
                for (int e = 0; e < group * head_dim; ++e) {
                  ASSERT_EQ(out[off + e], alone[e]) << TypeName(type) << " hd=" << head_dim << " token " << t
                                                    << " n_kv=" << n_kv[t] << " g=" << g << " heads=" << heads
                                                    << " e=" << e;
                }
              }
            }
          }
        }
      }
    }
  }
}

// A sliding window: each token of a causal run sees cells [p + 1 - w, p] (kv_begin). Every path gives the
// scalar definition's bits over that range, the rows before it are never read (they hold NaN here, as a
// given-back page would hold zeros), and the result is softmax . V over the window alone. Gemma's shapes
// (head_dim 256, four query heads on one kv head) and windows inside, on and across key blocks.
void WindowedTokensBitIdenticalToDefinition() {
  std::mt19937 rng(11);
  for (TensorType type : {TensorType::kF16, TensorType::kF32}) {
    for (auto [n_head_kv, head_dim, group] : {std::tuple{1, 256, 4}, {2, 64, 2}, {1, 40, 1}}) {
      const int32_t n_cells = 150;
      Cache c = MakeCache(type, n_head_kv, head_dim, n_cells, rng);
      for (int32_t window : {1, 5, 31, 32, 33, 64, 200}) {
        // Poison every row no token of the run below sees: cells before the first window.
        const int32_t first_pos = 90, n_tok = 40;  // positions 90 .. 129, one prompt tile after another
        const int32_t floor = std::max<int32_t>(0, first_pos + 1 - window);
        Cache poisoned = c;
        const std::vector<float> nan_row(int64_t{n_head_kv} * head_dim, NAN);
        for (int32_t j = 0; j < floor; ++j) {
          quant::QuantizeRow(type, nan_row.data(), poisoned.k.data() + j * c.rows.k_row_bytes, nan_row.size());
          quant::QuantizeRow(type, nan_row.data(), poisoned.v.data() + j * c.rows.v_row_bytes, nan_row.size());
        }
        poisoned.rows.k = poisoned.k.data();
        poisoned.rows.v = poisoned.v.data();
        std::vector<int32_t> n_kv(n_tok), begin(n_tok);
        for (int t = 0; t < n_tok; ++t) {
          n_kv[t] = first_pos + t + 1;
          begin[t] = std::max<int32_t>(0, n_kv[t] - window);
        }
        const int64_t width = int64_t{n_head_kv} * group * head_dim;
        std::normal_distribution<float> dist(0.0f, 1.0f);
        std::vector<float> q(n_tok * width);
        for (float& x : q) x = dist(rng);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        for (AttentionMode mode : {AttentionMode::kFlash, AttentionMode::kStandard}) {
          AttentionScratch s;
          std::vector<float> out(n_tok * width, -1.0f);
          AttendBatch a;
          a.q = q.data();
          a.q_tok_stride = a.out_tok_stride = width;
          a.q_stride = a.out_stride = head_dim;
          a.n_q = group;
          a.n_kv_heads = n_head_kv;
          a.n_tok = n_tok;
          a.n_kv = n_kv.data();
          a.kv_begin = begin.data();
          a.out = out.data();
          AttendTokens(mode, a, poisoned.rows, 0, head_dim, scale, s);
          for (int t = 0; t < n_tok; ++t) {
            // The exact value over the window: a cache holding only its rows.
            Cache win;
            win.k_f.assign(c.k_f.begin() + int64_t{begin[t]} * n_head_kv * head_dim, c.k_f.end());
            win.v_f.assign(c.v_f.begin() + int64_t{begin[t]} * n_head_kv * head_dim, c.v_f.end());
            for (int h = 0; h < n_head_kv * group; ++h) {
              const int g = h / group;
              const float* qh = q.data() + t * width + h * head_dim;
              std::vector<float> ref(head_dim);
              AttendHeadReference(mode, qh, c.rows, g, head_dim, n_kv[t], scale, ref.data(), s, begin[t]);
              const std::vector<double> exact = Exact(win, qh, g, n_head_kv, head_dim, n_kv[t] - begin[t], scale);
              for (int e = 0; e < head_dim; ++e) {
                ASSERT_EQ(out[t * width + h * head_dim + e], ref[e])
                    << (mode == AttentionMode::kFlash ? "flash " : "standard ") << TypeName(type)
                    << " hd=" << head_dim << " window=" << window << " token " << t << " head " << h;
                ASSERT_NEAR(ref[e], exact[e], 2e-2) << "hd=" << head_dim << " window=" << window;
              }
            }
          }
        }
      }
    }
  }
}

// The online softmax must not overflow when scores grow along the sequence (each new max rescales).
void FlashHandlesGrowingScores() {
  const int head_dim = 16;
  const int32_t n_kv = 200;
  std::vector<uint16_t> k(n_kv * head_dim), v(n_kv * head_dim);
  for (int32_t j = 0; j < n_kv; ++j) {
    for (int e = 0; e < head_dim; ++e) {
      k[j * head_dim + e] = F32ToF16(e == 0 ? 0.5f * static_cast<float>(j) : 0.0f);
      v[j * head_dim + e] = F32ToF16(e == 1 ? static_cast<float>(j % 7) : 1.0f);
    }
  }
  KvRows rows;
  rows.k = reinterpret_cast<const uint8_t*>(k.data());
  rows.v = reinterpret_cast<const uint8_t*>(v.data());
  rows.k_row_bytes = rows.v_row_bytes = head_dim * 2;
  std::vector<float> q(head_dim, 0.0f);
  q[0] = 8.0f;  // scores 4j: the last cell dominates
  std::vector<float> out(head_dim), ref(head_dim);
  AttentionScratch s;
  AttendHead(AttentionMode::kFlash, q.data(), rows, 0, head_dim, n_kv, 1.0f, out.data(), s);
  AttendHeadReference(AttentionMode::kFlash, q.data(), rows, 0, head_dim, n_kv, 1.0f, ref.data(), s);
  EXPECT_EQ(out, ref);
  EXPECT_NEAR(out[0], 1.0f, 1e-3);
  EXPECT_NEAR(out[1], static_cast<float>((n_kv - 1) % 7), 2e-2);
}

// Every check above runs with the flash path's AVX2 V pass and, where the CPU has it, its AVX-512 one (the
// same operations per value: both must give the definition's bits).
class AttentionVPass : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (!ForceFlashVPassForTest(GetParam())) {
      GTEST_SKIP() << "no AVX-512 V pass on this CPU at this LAZYSLOT_ISA level";
    }
  }
  void TearDown() override { ForceFlashVPassForTest(-1); }
};

TEST_P(AttentionVPass, GroupedFastPathBitIdenticalToDefinition) { GroupedFastPathBitIdenticalToDefinition(); }
TEST_P(AttentionVPass, TokensTogetherBitIdenticalToOneByOne) { TokensTogetherBitIdenticalToOneByOne(); }
TEST_P(AttentionVPass, FlashHandlesGrowingScores) { FlashHandlesGrowingScores(); }
TEST_P(AttentionVPass, WindowedTokensBitIdenticalToDefinition) { WindowedTokensBitIdenticalToDefinition(); }
INSTANTIATE_TEST_SUITE_P(Forms, AttentionVPass, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& i) { return i.param ? "avx512" : "avx2"; });

TEST(Attention, KernelChoiceNamesTheVPass) {
  const std::string line = AttentionKernelChoice();
  std::printf("%s\n", line.c_str());
  EXPECT_EQ(line.find("attention f16 "), 0u) << line;
}

// The vector paths follow the process's one level (quant::ActiveIsa, which LAZYSLOT_ISA caps): the forced
// scalar and AVX2 runs of this binary must not time or take a wider form.
TEST(Attention, KernelChoiceFollowsTheProcessLevel) {
  const std::string line = AttentionKernelChoice();
  switch (quant::ActiveIsa()) {
    case quant::Isa::kScalar: EXPECT_EQ(line, "attention f16 scalar"); break;
    case quant::Isa::kAvx2: EXPECT_EQ(line, "attention f16 avx2"); break;
    case quant::Isa::kAvx512: EXPECT_NE(line.find(" ns/value "), std::string::npos) << line; break;
  }
  EXPECT_EQ(ForceFlashVPassForTest(1), quant::ActiveIsa() == quant::Isa::kAvx512);
  ForceFlashVPassForTest(-1);
}

}  // namespace
}  // namespace lazyslot
