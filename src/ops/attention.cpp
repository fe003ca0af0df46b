// Attention for one (token, kv head group): scores over the slot's cells, softmax, weighted sum of V rows.
// F16 caches take a vectorized path (F16C conversions, no FMA so every product and sum rounds exactly as
// the scalar definition does); other cache types use the scalar definition.
#include "ops/attention.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace lazyslot {

namespace {

constexpr int kKeyBlock = 32;  // scores computed per block of keys before the sequential softmax update

// A kv head's slice of a K or V row is a few cache lines out of a row that holds every kv head, so rows
// are kilobytes apart and the hardware prefetcher does not follow them: the lines of the row kPrefetchKeys
// ahead are requested explicitly (tg at 1,024 held tokens: see docs/bench.md).
constexpr int kPrefetchKeys = 8;

inline void Prefetch(const uint8_t* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T0);
  }
}

bool HaveF16Simd() {
  static const bool have = quant::ActiveKernels().isa != quant::Isa::kScalar;  // AVX2 implies F16C here
  return have;
}

// The vector helpers take n % 8 == 0. target("avx2,f16c") without "fma": the compiler cannot fuse the
// multiply and the add, which keeps results bit-identical to the scalar loops below.
__attribute__((target("avx2,f16c"))) void ScaleF16(uint16_t* acc, float s, int n) {
  const __m256 vs = _mm256_set1_ps(s);
  for (int d = 0; d < n; d += 8) {
    __m128i* p = reinterpret_cast<__m128i*>(acc + d);
    const __m256 a = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(p)), vs);
    _mm_storeu_si128(p, _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT));
  }
}

// acc = f16(f32(acc) + f32(v) * s)
__attribute__((target("avx2,f16c"))) void MadF16(uint16_t* acc, const uint16_t* v, float s, int n) {
  const __m256 vs = _mm256_set1_ps(s);
  for (int d = 0; d < n; d += 8) {
    __m128i* p = reinterpret_cast<__m128i*>(acc + d);
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + d)));
    const __m256 a = _mm256_add_ps(_mm256_cvtph_ps(_mm_loadu_si128(p)), _mm256_mul_ps(x, vs));
    _mm_storeu_si128(p, _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT));
  }
}

// out += p * f32(v)
__attribute__((target("avx2,f16c"))) void MadF32FromF16(float* out, const uint16_t* v, float p, int n) {
  const __m256 vp = _mm256_set1_ps(p);
  for (int d = 0; d < n; d += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + d)));
    _mm256_storeu_ps(out + d, _mm256_add_ps(_mm256_loadu_ps(out + d), _mm256_mul_ps(vp, x)));
  }
}

// out = f32(acc) * inv
__attribute__((target("avx2,f16c"))) void F16ToF32Scaled(const uint16_t* acc, float inv, float* out, int n) {
  const __m256 vi = _mm256_set1_ps(inv);
  for (int d = 0; d < n; d += 8) {
    _mm256_storeu_ps(out + d,
                     _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + d))), vi));
  }
}

// The definition of kFlash for one head: one pass over the cells with a running max M and sum S; the
// weighted V sum lives in F16 and is rescaled whenever the max grows. O(head_dim) state at any length.
void FlashHeadScalar(const float* q, const KvRows& kv, int g, int head_dim, int32_t n_kv, float scale, float* out,
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

// kFlash for the n_q heads sharing kv head g, F16 K and V, head_dim % 8 == 0: the same arithmetic as
// FlashHeadScalar per head, with K/V rows read once for the whole group and scores computed a block at a
// time through the kernel table's F16 dot (the very function quant::VecDot calls).
void FlashGroupF16(const float* q, int64_t q_stride, int n_q, const KvRows& kv, int g, int hd, int32_t n_kv,
                   float scale, float* out, int64_t out_stride, AttentionScratch& s) {
  const quant::KernelSet& ks = quant::ActiveKernels();
  const quant::VecDotFn dot = ks.vec_dot[quant::kF16];
  const size_t nq = static_cast<size_t>(n_q);
  if (s.q_enc.size() < nq * hd * 2) s.q_enc.resize(nq * hd * 2);
  if (s.acc16.size() < nq * hd) s.acc16.resize(nq * hd);
  if (s.scores.size() < nq * (kKeyBlock + 2)) s.scores.resize(nq * (kKeyBlock + 2));
  uint16_t* qe = reinterpret_cast<uint16_t*>(s.q_enc.data());
  for (int h = 0; h < n_q; ++h) ks.quantize[quant::kF16](q + h * q_stride, qe + h * hd, hd);
  std::fill(s.acc16.begin(), s.acc16.begin() + nq * hd, uint16_t{0});
  float* sc = s.scores.data();              // [n_q][kKeyBlock]
  float* ms_arr = sc + nq * kKeyBlock;      // running max per head
  float* sum_arr = ms_arr + nq;             // running sum per head
  std::fill(ms_arr, ms_arr + nq, -INFINITY);
  std::fill(sum_arr, sum_arr + nq, 0.0f);
  const uint8_t* kbase = kv.k + static_cast<size_t>(g) * hd * 2;
  const uint8_t* vbase = kv.v + static_cast<size_t>(g) * hd * 2;
  for (int32_t j0 = 0; j0 < n_kv; j0 += kKeyBlock) {
    const int nb = static_cast<int>(std::min<int32_t>(kKeyBlock, n_kv - j0));
    for (int jj = 0; jj < nb; ++jj) {
      const uint8_t* krow = kbase + static_cast<size_t>(j0 + jj) * kv.k_row_bytes;
      if (j0 + jj + kPrefetchKeys < n_kv) Prefetch(krow + kPrefetchKeys * kv.k_row_bytes, hd * 2);
      for (int h = 0; h < n_q; ++h) sc[h * kKeyBlock + jj] = dot(krow, qe + h * hd, hd) * scale;
    }
    for (int jj = 0; jj < nb; ++jj) {
      const uint16_t* vrow = reinterpret_cast<const uint16_t*>(vbase + static_cast<size_t>(j0 + jj) * kv.v_row_bytes);
      if (j0 + jj + kPrefetchKeys < n_kv) {
        Prefetch(reinterpret_cast<const uint8_t*>(vrow) + kPrefetchKeys * kv.v_row_bytes, hd * 2);
      }
      for (int h = 0; h < n_q; ++h) {
        const float score = sc[h * kKeyBlock + jj];
        float& m = ms_arr[h];
        uint16_t* acc = s.acc16.data() + static_cast<size_t>(h) * hd;
        float ms = 1.0f, vs = 1.0f;
        if (score > m) {
          ms = std::exp(m - score);
          m = score;
          ScaleF16(acc, ms, hd);
        } else {
          vs = std::exp(score - m);
        }
        MadF16(acc, vrow, vs, hd);
        sum_arr[h] = sum_arr[h] * ms + vs;
      }
    }
  }
  for (int h = 0; h < n_q; ++h) {
    F16ToF32Scaled(s.acc16.data() + static_cast<size_t>(h) * hd, 1.0f / sum_arr[h], out + h * out_stride, hd);
  }
}

// kStandard for one head: all scores, softmax with a double sum, probabilities rounded to F16 for an F16
// V cache (the V dot type), V summed in f32.
void StandardHead(const float* q, const KvRows& kv, int g, int head_dim, int32_t n_kv, float scale, float* out,
                  AttentionScratch& s, bool allow_simd) {
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
  const bool simd = allow_simd && v_f16 && head_dim % 8 == 0 && HaveF16Simd();
  if (!v_f16 && kv.type_v != TensorType::kF32 && s.v_row.size() < static_cast<size_t>(head_dim)) {
    s.v_row.resize(head_dim);
  }
  for (int32_t j = 0; j < n_kv; ++j) {
    const uint8_t* vrow = kv.v + j * kv.v_row_bytes + v_off;
    if (v_f16) {
      const float p = F16ToF32(F32ToF16(s.scores[j] * inv));
      const uint16_t* v = reinterpret_cast<const uint16_t*>(vrow);
      if (simd) {
        MadF32FromF16(out, v, p, head_dim);
      } else {
        for (int d = 0; d < head_dim; ++d) out[d] += p * F16ToF32(v[d]);
      }
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

}  // namespace

void AttendGroup(AttentionMode mode, const float* q, int64_t q_stride, int n_q, const KvRows& kv, int g,
                 int head_dim, int32_t n_kv, float scale, float* out, int64_t out_stride, AttentionScratch& s) {
  if (mode == AttentionMode::kFlash && kv.type_k == TensorType::kF16 && kv.type_v == TensorType::kF16 &&
      head_dim % 8 == 0 && HaveF16Simd()) {
    FlashGroupF16(q, q_stride, n_q, kv, g, head_dim, n_kv, scale, out, out_stride, s);
    return;
  }
  for (int h = 0; h < n_q; ++h) {
    if (mode == AttentionMode::kFlash) {
      FlashHeadScalar(q + h * q_stride, kv, g, head_dim, n_kv, scale, out + h * out_stride, s);
    } else {
      StandardHead(q + h * q_stride, kv, g, head_dim, n_kv, scale, out + h * out_stride, s, true);
    }
  }
}

void AttendHead(AttentionMode mode, const float* q, const KvRows& kv, int g, int head_dim, int32_t n_kv,
                float scale, float* out, AttentionScratch& s) {
  AttendGroup(mode, q, head_dim, 1, kv, g, head_dim, n_kv, scale, out, head_dim, s);
}

void AttendHeadReference(AttentionMode mode, const float* q, const KvRows& kv, int g, int head_dim, int32_t n_kv,
                         float scale, float* out, AttentionScratch& s) {
  if (mode == AttentionMode::kFlash) {
    FlashHeadScalar(q, kv, g, head_dim, n_kv, scale, out, s);
    return;
  }
  StandardHead(q, kv, g, head_dim, n_kv, scale, out, s, false);
}

}  // namespace lazyslot
