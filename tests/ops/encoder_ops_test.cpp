// The encoder's ops: dense bidirectional f32 attention against the scalar standard attention over the same
// f32 rows, and the GELU vector path against its scalar definition (the F16 table read for every value).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/attention.h"
#include "ops/elementwise.h"
#include "quant/fp16.h"

namespace lazyslot {
namespace {

TEST(EncoderOps, DenseAttentionMatchesStandardOverF32Rows) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int hd : {32, 64, 8, 6}) {  // 6: no vector path
    for (int32_t n_kv : {1, 7, 8, 33, 120}) {
      const int n_kv_heads = 2, group = 2, n_q = n_kv_heads * group * hd, kv_w = n_kv_heads * hd;
      std::vector<float> q(n_kv * n_q), k(n_kv * kv_w), v(n_kv * kv_w);
      for (auto* buf : {&q, &k, &v}) {
        for (float& x : *buf) x = dist(rng);
      }
      const int64_t ld = (n_kv + 7) / 8 * 8;
      std::vector<float> kt(n_kv_heads * hd * ld, -1.0f);
      TransposeKeys(k.data(), kv_w, n_kv, n_kv_heads, hd, kt.data(), ld);
      const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
      AttentionScratch s;
      KvRows rows;
      rows.type_k = rows.type_v = TensorType::kF32;
      rows.k = reinterpret_cast<const uint8_t*>(k.data());
      rows.v = reinterpret_cast<const uint8_t*>(v.data());
      rows.k_row_bytes = rows.v_row_bytes = kv_w * sizeof(float);
      for (int g = 0; g < n_kv_heads; ++g) {
        DenseKv kv{kt.data(), ld, v.data(), kv_w, n_kv};
        std::vector<float> out(n_kv * n_q, 0.0f);
        AttendBatch a;
        a.q = q.data() + g * group * hd;
        a.q_tok_stride = a.out_tok_stride = n_q;
        a.q_stride = a.out_stride = hd;
        a.n_q = group;
        a.n_tok = n_kv;
        a.out = out.data() + g * group * hd;
        AttendDenseF32(a, kv, g, hd, scale, s);
        for (int t = 0; t < n_kv; ++t) {
          for (int h = 0; h < group; ++h) {
            std::vector<float> want(hd);
            const int64_t off = t * n_q + (g * group + h) * hd;
            AttendHeadReference(AttentionMode::kStandard, q.data() + off, rows, g, hd, n_kv, scale,
                                want.data(), s);
            for (int d = 0; d < hd; ++d) {
              ASSERT_NEAR(out[off + d], want[d], 2e-6f * (1 + std::fabs(want[d])))
                  << "hd " << hd << " n_kv " << n_kv << " head " << g << "/" << h << " token " << t << " dim "
                  << d;
            }
          }
        }
      }
    }
  }
}

TEST(EncoderOps, GeluIsTheF16TableForEveryInput) {
  // Every F16 value, values between them, the clamps at +-10, and a length that leaves a scalar tail.
  std::vector<float> x;
  for (uint32_t h = 0; h < 65536; h += 3) {
    const float f = F16ToF32(static_cast<uint16_t>(h));
    if (std::isfinite(f)) x.push_back(f);
  }
  for (float f = -12.0f; f < 12.0f; f += 0.0137f) x.push_back(f);
  x.push_back(-10.0f);
  x.push_back(10.0f);
  std::vector<float> y = x;
  Gelu(y.data(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float v = x[i];
    float want;
    if (v <= -10.0f) {
      want = 0.0f;
    } else if (v >= 10.0f) {
      want = v;
    } else {
      const float r = F16ToF32(F32ToF16(v));
      const float g = 0.5f * r * (1.0f + std::tanh(0.79788456080286535588f * r * (1.0f + 0.044715f * r * r)));
      want = F16ToF32(F32ToF16(g));
    }
    ASSERT_EQ(y[i], want) << "gelu(" << v << ")";
  }
}

}  // namespace
}  // namespace lazyslot
