// Attention for one (token, head): scores over the slot's cells, softmax, weighted sum of V rows.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/fp16.h"
#include "quant/quant.h"

namespace lazyslot {

namespace {

// One pass over the cells with a running max M and sum S; the weighted V sum lives in F16 and is rescaled
// whenever the max grows. Streams K and V once, with O(head_dim) state, whatever the context length.
void AttendHeadFlash(const float* q, const KvRows& kv, int g, int head_dim, int32_t n_kv, float scale, float* out,
                     AttentionScratch& s) {
  const TensorType q_type = quant::VecDotType(kv.type_k);
  const size_t q_bytes = RowBytes(q_type, head_dim);
  if (s.q_enc.size() < q_bytes) s.q_enc.resize(q_bytes);
  if (s.acc16.size() < static_cast<size_t>(head_dim)) s.acc16.resize(head_dim);
  if (s.v_row.size() < static_cast<size_t>(head_dim)) s.v_row.resize(head_dim);
  quant::QuantizeRow(q_type, q, s.q_enc.data(), head_dim);
  const size_t k_off = RowBytes(kv.type_k, static_cast<int64_t>(g) * head_dim);
  const size_t v_off = RowBytes(kv.type_v, static_cast<int64_t>(g) * head_dim);
  uint16_t* acc = s.acc16.data();
  std::fill(acc, acc + head_dim, uint16_t{0});
  float m = -INFINITY, sum = 0.0f;
  for (int32_t j = 0; j < n_kv; ++j) {
    const float score =
        quant::VecDot(kv.type_k, kv.k + j * kv.k_row_bytes + k_off, s.q_enc.data(), head_dim) * scale;
    float ms = 1.0f, vs = 1.0f;
    if (score > m) {
      ms = std::exp(m - score);  // 0 on the first cell
      m = score;
      for (int d = 0; d < head_dim; ++d) acc[d] = F32ToF16(F16ToF32(acc[d]) * ms);
    } else {
      vs = std::exp(score - m);
    }
    const uint8_t* vrow = kv.v + j * kv.v_row_bytes + v_off;
    const float* v = s.v_row.data();
    if (kv.type_v == TensorType::kF32) {
      v = reinterpret_cast<const float*>(vrow);
    } else {
      quant::DequantizeRow(kv.type_v, vrow, s.v_row.data(), head_dim);
    }
    for (int d = 0; d < head_dim; ++d) acc[d] = F32ToF16(F16ToF32(acc[d]) + v[d] * vs);
    sum = sum * ms + vs;
  }
  const float inv = 1.0f / sum;
  for (int d = 0; d < head_dim; ++d) out[d] = F16ToF32(acc[d]) * inv;
}

}  // namespace

void AttendHead(AttentionMode mode, const float* q, const KvRows& kv, int g, int head_dim, int32_t n_kv,
                float scale, float* out, AttentionScratch& s) {
  if (mode == AttentionMode::kFlash) {
    AttendHeadFlash(q, kv, g, head_dim, n_kv, scale, out, s);
    return;
  }
  const TensorType q_type = quant::VecDotType(kv.type_k);
  const size_t q_bytes = RowBytes(q_type, head_dim);
  if (s.q_enc.size() < q_bytes) s.q_enc.resize(q_bytes);
  if (s.scores.size() < static_cast<size_t>(n_kv)) s.scores.resize(n_kv);
  quant::QuantizeRow(q_type, q, s.q_enc.data(), head_dim);

  const size_t k_off = RowBytes(kv.type_k, static_cast<int64_t>(g) * head_dim);
  float max_score = -INFINITY;
  for (int32_t j = 0; j < n_kv; ++j) {
    const float d = quant::VecDot(kv.type_k, kv.k + j * kv.k_row_bytes + k_off, s.q_enc.data(), head_dim);
    s.scores[j] = d * scale;
    max_score = std::max(max_score, s.scores[j]);
  }
  double sum = 0;
  for (int32_t j = 0; j < n_kv; ++j) {
    const float e = std::exp(s.scores[j] - max_score);
    s.scores[j] = e;
    sum += e;
  }
  const float inv = static_cast<float>(1.0 / sum);

  std::fill(out, out + head_dim, 0.0f);
  const size_t v_off = RowBytes(kv.type_v, static_cast<int64_t>(g) * head_dim);
  const bool v_f16 = kv.type_v == TensorType::kF16;
  if (!v_f16 && kv.type_v != TensorType::kF32 && s.v_row.size() < static_cast<size_t>(head_dim)) {
    s.v_row.resize(head_dim);
  }
  for (int32_t j = 0; j < n_kv; ++j) {
    const uint8_t* vrow = kv.v + j * kv.v_row_bytes + v_off;
    if (v_f16) {
      const float p = F16ToF32(F32ToF16(s.scores[j] * inv));
      const uint16_t* v = reinterpret_cast<const uint16_t*>(vrow);
      for (int d = 0; d < head_dim; ++d) out[d] += p * F16ToF32(v[d]);
    } else {
      const float p = s.scores[j] * inv;
      const float* v = reinterpret_cast<const float*>(vrow);
      if (kv.type_v != TensorType::kF32) {
        quant::DequantizeRow(kv.type_v, vrow, s.v_row.data(), head_dim);
        v = s.v_row.data();
      }
      for (int d = 0; d < head_dim; ++d) out[d] += p * v[d];
    }
  }
}

}  // namespace lazyslot
