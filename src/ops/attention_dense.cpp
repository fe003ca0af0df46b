// Bidirectional attention over f32 rows (attention.h AttendDenseF32): an encoder's queries against every key
// of their own sequence, K transposed per kv head so that one vector of scores covers 8 keys.
#include <algorithm>
#include <cmath>

#include "ops/attention.h"
#include "ops/exp_simd.h"
#include "quant/kernels.h"
#include "quant/simd_x86.h"

namespace lazyslot {
namespace {

// The process's level (quant::ActiveIsa: the CPU's, capped by LAZYSLOT_ISA).
bool HaveAvx2() {
  static const bool have = quant::ActiveIsa() >= quant::Isa::kAvx2;
  return have;
}

// Softmax of scores[0..n) in place, scaled by 1 / sum (the sum in double, as ggml's soft_max).
void Softmax(float* scores, int32_t n) {
  float mx = -INFINITY;
  for (int32_t j = 0; j < n; ++j) mx = std::max(mx, scores[j]);
  double sum = 0;
  for (int32_t j = 0; j < n; ++j) sum += scores[j] = std::exp(scores[j] - mx);
  const float inv = static_cast<float>(1.0 / sum);
  for (int32_t j = 0; j < n; ++j) scores[j] *= inv;
}

void RowScalar(const float* q, const DenseKv& kv, int g, int hd, float scale, float* out, float* scores) {
  const float* kt = kv.kt + static_cast<int64_t>(g) * hd * kv.ld;
  for (int32_t j = 0; j < kv.n_kv; ++j) scores[j] = 0;
  for (int d = 0; d < hd; ++d) {
    const float qd = q[d];
    const float* row = kt + static_cast<int64_t>(d) * kv.ld;
    for (int32_t j = 0; j < kv.n_kv; ++j) scores[j] += qd * row[j];
  }
  for (int32_t j = 0; j < kv.n_kv; ++j) scores[j] *= scale;
  Softmax(scores, kv.n_kv);
  for (int d = 0; d < hd; ++d) out[d] = 0;
  const float* v = kv.v + static_cast<int64_t>(g) * hd;
  for (int32_t j = 0; j < kv.n_kv; ++j) {
    const float p = scores[j];
    const float* vj = v + j * kv.v_stride;
    for (int d = 0; d < hd; ++d) out[d] += p * vj[d];
  }
}

// Softmax of scores[0..n) in place, eight at a time: the max, e^(s - max) (ExpF8, as the cached flash path),
// lane sums added up in double, then the scale by 1 / sum.
LS_TARGET_AVX2 void SoftmaxAvx2(float* scores, int32_t n) {
  __m256 vmx = _mm256_set1_ps(-INFINITY);
  int32_t j = 0;
  for (; j + 8 <= n; j += 8) vmx = _mm256_max_ps(vmx, _mm256_loadu_ps(scores + j));
  float lanes[8];
  _mm256_storeu_ps(lanes, vmx);
  float mx = lanes[0];
  for (int l = 1; l < 8; ++l) mx = std::max(mx, lanes[l]);
  for (; j < n; ++j) mx = std::max(mx, scores[j]);
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 vsum = _mm256_setzero_ps();
  for (j = 0; j + 8 <= n; j += 8) {
    const __m256 e = ops_internal::ExpF8(_mm256_sub_ps(_mm256_loadu_ps(scores + j), vm));
    _mm256_storeu_ps(scores + j, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  _mm256_storeu_ps(lanes, vsum);
  double sum = 0;
  for (int l = 0; l < 8; ++l) sum += lanes[l];
  for (; j < n; ++j) sum += scores[j] = ops_internal::ExpF(scores[j] - mx);
  const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / sum));
  for (j = 0; j + 8 <= n; j += 8)
    _mm256_storeu_ps(scores + j, _mm256_mul_ps(_mm256_loadu_ps(scores + j), inv));
  for (; j < n; ++j) scores[j] *= static_cast<float>(1.0 / sum);
}

// M query rows (q[r], out[r]) of one kv head against every key: scores [M][ld] with one K load per
// (dim, 8 keys) shared by the M rows, the softmax per row, then each V row loaded once per 8 dims for all M.
template <int M>
LS_TARGET_AVX2 void ChunkAvx2(const float* const* q, float* const* out, const DenseKv& kv, int g, int hd,
                              float scale, float* scores) {
  const float* kt = kv.kt + static_cast<int64_t>(g) * hd * kv.ld;
  const __m256 vs = _mm256_set1_ps(scale);
  for (int64_t j0 = 0; j0 < kv.ld; j0 += 8) {
    __m256 acc[M];
    for (int r = 0; r < M; ++r) acc[r] = _mm256_setzero_ps();
    for (int d = 0; d < hd; ++d) {
      const __m256 k = _mm256_loadu_ps(kt + static_cast<int64_t>(d) * kv.ld + j0);
      for (int r = 0; r < M; ++r) acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(q[r][d]), k, acc[r]);
    }
    for (int r = 0; r < M; ++r) _mm256_storeu_ps(scores + r * kv.ld + j0, _mm256_mul_ps(acc[r], vs));
  }
  for (int r = 0; r < M; ++r) SoftmaxAvx2(scores + r * kv.ld, kv.n_kv);
  const float* v = kv.v + static_cast<int64_t>(g) * hd;
  for (int d0 = 0; d0 < hd; d0 += 8) {
    __m256 acc[M];
    for (int r = 0; r < M; ++r) acc[r] = _mm256_setzero_ps();
    for (int32_t j = 0; j < kv.n_kv; ++j) {
      const __m256 x = _mm256_loadu_ps(v + j * kv.v_stride + d0);
      for (int r = 0; r < M; ++r) acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(scores[r * kv.ld + j]), x, acc[r]);
    }
    for (int r = 0; r < M; ++r) _mm256_storeu_ps(out[r] + d0, acc[r]);
  }
}

void RunChunkAvx2(int m, const float* const* q, float* const* out, const DenseKv& kv, int g, int hd,
                  float scale, float* scores) {
  switch (m) {
    case 1:
      return ChunkAvx2<1>(q, out, kv, g, hd, scale, scores);
    case 2:
      return ChunkAvx2<2>(q, out, kv, g, hd, scale, scores);
    case 3:
      return ChunkAvx2<3>(q, out, kv, g, hd, scale, scores);
    case 4:
      return ChunkAvx2<4>(q, out, kv, g, hd, scale, scores);
    case 5:
      return ChunkAvx2<5>(q, out, kv, g, hd, scale, scores);
    case 6:
      return ChunkAvx2<6>(q, out, kv, g, hd, scale, scores);
    case 7:
      return ChunkAvx2<7>(q, out, kv, g, hd, scale, scores);
    default:
      return ChunkAvx2<8>(q, out, kv, g, hd, scale, scores);
  }
}

}  // namespace

void TransposeKeys(const float* k, int64_t k_stride, int32_t n_kv, int n_kv_heads, int hd, float* kt,
                   int64_t ld) {
  for (int g = 0; g < n_kv_heads; ++g) {
    float* dst = kt + static_cast<int64_t>(g) * hd * ld;
    for (int d = 0; d < hd; ++d) {
      float* row = dst + static_cast<int64_t>(d) * ld;
      for (int32_t j = 0; j < n_kv; ++j) row[j] = k[j * k_stride + static_cast<int64_t>(g) * hd + d];
      for (int64_t j = n_kv; j < ld; ++j) row[j] = 0;
    }
  }
}

void AttendDenseF32(const AttendBatch& a, const DenseKv& kv, int g, int head_dim, float scale,
                    AttentionScratch& s) {
  constexpr int kChunk = 8;  // query rows sharing each K and V load
  if (s.scores.size() < static_cast<size_t>(kChunk * kv.ld)) s.scores.resize(kChunk * kv.ld);
  const bool simd = HaveAvx2() && head_dim % 8 == 0;
  const float* q[kChunk];
  float* out[kChunk];
  int heads[kChunk];
  int m = 0;
  auto flush = [&] {
    if (m == 0) return;
    if (simd && (m == 1 || heads[0] == heads[m - 1])) {
      RunChunkAvx2(m, q, out, kv, heads[0], head_dim, scale, s.scores.data());
    } else {
      for (int r = 0; r < m; ++r) RowScalar(q[r], kv, heads[r], head_dim, scale, out[r], s.scores.data());
    }
    m = 0;
  };
  for (int h = 0; h < a.n_kv_heads * a.n_q; ++h) {
    const int kv_head = g + h / a.n_q;
    for (int t = 0; t < a.n_tok; ++t) {
      if (m == kChunk || (m > 0 && heads[m - 1] != kv_head)) flush();
      q[m] = a.q + t * a.q_tok_stride + h * a.q_stride;
      out[m] = a.out + t * a.out_tok_stride + h * a.out_stride;
      heads[m++] = kv_head;
    }
  }
  flush();
}

}  // namespace lazyslot
