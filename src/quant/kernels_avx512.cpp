// AVX-512 kernels (F, BW, VL, DQ, VNNI; BF16 where present): F32/F16/BF16 dots with masked tails, and
// Q8_0/Q4_0 x Q8_0 dots and tiles with vpdpbusd, 16 blocks per step, bit-identical to the AVX2 ones. Packed
// prompt kernels: kernels_avx512_packed.cpp. Entries not set here keep their AVX2 versions (the quantizers,
// which must give the same bits in every set anyway); select.cpp times both sets and keeps the faster per
// family. GCC 12 warns about its own AVX-512 headers (_mm512_undefined_* self-initialisation, GCC bug
// 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "quant/avx512_rows.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant {
namespace {

using simd::HalfToFloat;

// ---- float formats: 64 values per step in 4 accumulators; the tail uses masked loads.

LS_TARGET_AVX512 inline float Reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d)));
}

LS_TARGET_AVX512 float DotF32(const void* w, const void* x, int64_t n) {
  const float* a = static_cast<const float*>(w);
  const float* b = static_cast<const float*>(x);
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int k = 0; k < 4; ++k) {
      acc[k] = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16 * k), _mm512_loadu_ps(b + i + 16 * k), acc[k]);
    }
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xffff : static_cast<__mmask16>((1u << (n - i)) - 1);
    acc[0] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc[0]);
  }
  return Reduce4(acc[0], acc[1], acc[2], acc[3]);
}

LS_TARGET_AVX512 inline __m512 LoadF16(__mmask16 m, const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

LS_TARGET_AVX512 float DotF16(const void* w, const void* x, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int k = 0; k < 4; ++k) {
      acc[k] = _mm512_fmadd_ps(LoadF16(0xffff, a + i + 16 * k), LoadF16(0xffff, b + i + 16 * k), acc[k]);
    }
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xffff : static_cast<__mmask16>((1u << (n - i)) - 1);
    acc[0] = _mm512_fmadd_ps(LoadF16(m, a + i), LoadF16(m, b + i), acc[0]);
  }
  return Reduce4(acc[0], acc[1], acc[2], acc[3]);
}

LS_TARGET_AVX512 inline __m512 LoadBF16(__mmask16 m, const uint16_t* p) {
  const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

LS_TARGET_AVX512 float DotBF16(const void* w, const void* x, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int k = 0; k < 4; ++k) {
      acc[k] = _mm512_fmadd_ps(LoadBF16(0xffff, a + i + 16 * k), LoadBF16(0xffff, b + i + 16 * k), acc[k]);
    }
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xffff : static_cast<__mmask16>((1u << (n - i)) - 1);
    acc[0] = _mm512_fmadd_ps(LoadBF16(m, a + i), LoadBF16(m, b + i), acc[0]);
  }
  return Reduce4(acc[0], acc[1], acc[2], acc[3]);
}

// vdpbf16ps: pairs of bf16 products added into f32 lanes (as llama.cpp on AVX512-BF16 CPUs; the
// instruction flushes denormals and rounds once per pair).
LS_TARGET_AVX512BF16 float DotBF16Native(const void* w, const void* x, int64_t n) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int k = 0; k < 2; ++k) {
      const __m512i va = _mm512_loadu_si512(a + i + 32 * k), vb = _mm512_loadu_si512(b + i + 32 * k);
      acc[k] = _mm512_dpbf16_ps(acc[k], (__m512bh)va, (__m512bh)vb);  // vector casts: same bits
    }
  }
  for (; i < n; i += 32) {
    const __mmask32 m = n - i >= 32 ? 0xffffffffu : static_cast<__mmask32>((1ull << (n - i)) - 1);
    const __m512i va = _mm512_maskz_loadu_epi16(m, a + i), vb = _mm512_maskz_loadu_epi16(m, b + i);
    acc[0] = _mm512_dpbf16_ps(acc[0], (__m512bh)va, (__m512bh)vb);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
}

// ---- Q8_0 / Q4_0 weights against Q8_0 activations, in the arithmetic of kernels_avx2.cpp: block b's exact
// integer sum T_b, acc[b % 8] = fma(f32(d_w) * f32(d_x), f32(T_b), acc[b % 8]), the 8 phases summed in
// Hsum's order. So these give the AVX2 kernels' bits, and dispatch may mix the two sets per kernel family.
// 16 blocks per step: 8 vpdpbusd of two blocks each (unsigned weights, avx512_rows.h), a transposing add
// tree to the 16 block sums, then two 8-lane FMAs (blocks b0..b0+7, then b0+8..b0+15: each phase's FMAs in
// block order, as AVX2 does them).

// Weight blocks k and k + 1 as unsigned bytes (lanes 0-7: block k, 8-15: block k + 1); `both` false reads
// block k only (the row's last block) and repeats it in the upper half, which then meets zero activations.
LS_TARGET_AVX512 inline __m512i PairU8(const BlockQ8_0* w, bool both) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[0].qs));
  const __m256i hi = both ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[1].qs)) : lo;
  const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  return _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
}
LS_TARGET_AVX512 inline __m512i PairU8(const BlockQ4_0* w, bool both) {
  // 128-bit lanes: low nibbles of block k, high nibbles of k, low of k + 1, high of k + 1 (Q4_0's order).
  const __m256i a = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[0].qs)));
  const __m256i b =
      both ? _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[1].qs))) : a;
  const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
  return _mm512_and_si512(_mm512_mask_mov_epi64(v, 0xcc, _mm512_srli_epi16(v, 4)), _mm512_set1_epi8(15));
}
using avx512::kOffset;

// Where the activation rows come from: prepared rows (tiles, where the preparation is shared by many weight
// rows), or the Q8_0 blocks themselves (a single dot, e.g. attention over a Q8_0 cache), which then pay one
// more vpdpbusd per pair for the c * sum x term and insert their scales word by word.
struct PreparedX {
  const avx512::PreparedRow* rows;
  // Blocks b, b + 1 of row r as 64 bytes (b + 1 may lie past the row: prepared rows are zero there).
  LS_TARGET_AVX512 __m512i Pair(int r, int64_t b, bool /*both*/) const {
    return _mm512_load_si512(rows[r].qs + b * kQK8_0);
  }
  // The products' lanes minus the offset term (the prepared csum is taken off the block sums instead).
  LS_TARGET_AVX512 __m512i Products(__m512i wu, __m512i xq, int32_t /*c*/) const {
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), wu, xq);
  }
  LS_TARGET_AVX512 __m512i Offsets(int r, int64_t b0) const { return _mm512_load_si512(rows[r].csum + b0); }
  LS_TARGET_AVX512 __m512 Scales(int r, int64_t b0, int /*rem*/) const {
    return _mm512_load_ps(rows[r].dx + b0);
  }
};
struct RawX {
  const BlockQ8_0* const* rows;
  LS_TARGET_AVX512 __m512i Pair(int r, int64_t b, bool both) const {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r][b].qs));
    const __m256i hi = both ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r][b + 1].qs))
                            : _mm256_setzero_si256();
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  LS_TARGET_AVX512 __m512i Products(__m512i wu, __m512i xq, int32_t c) const {
    const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wu, xq);
    return _mm512_sub_epi32(
        p, _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(c)), xq));
  }
  LS_TARGET_AVX512 __m512i Offsets(int, int64_t) const { return _mm512_setzero_si512(); }
  LS_TARGET_AVX512 __m512 Scales(int r, int64_t b0, int rem) const;
};

// Lane j = the exact sum of block b0 + j's 32 products (before the offset term) for j < rem (rem <= 16),
// zero past it, for R activation rows. Pair k's lanes go through unpack/add levels; the result comes out in
// the order 0 2 4 6 1 3 5 7 8 10 12 14 9 11 13 15 and one permute restores block order.
template <int R, typename WBlock, class X>
LS_TARGET_AVX512 inline void Sums16(const WBlock* w, const X& x, int64_t b0, int rem, __m512i* t) {
  __m512i m[2][R];
  for (int h = 0; h < 2; ++h) {
    __m512i l[2][R];
    for (int q = 0; q < 2; ++q) {
      __m512i p[2][R];
      for (int e = 0; e < 2; ++e) {
        const int k = 8 * h + 4 * q + 2 * e;  // first block of the pair, relative to b0
        if (k >= rem) {
          for (int r = 0; r < R; ++r) p[e][r] = _mm512_setzero_si512();
          continue;
        }
        const bool both = k + 1 < rem;
        const __m512i wu = PairU8(w + b0 + k, both);  // a missing second block meets zero activations
        for (int r = 0; r < R; ++r) p[e][r] = x.Products(wu, x.Pair(r, b0 + k, both), kOffset<WBlock>);
      }
      for (int r = 0; r < R; ++r) {
        l[q][r] = _mm512_add_epi32(_mm512_unpacklo_epi32(p[0][r], p[1][r]),
                                   _mm512_unpackhi_epi32(p[0][r], p[1][r]));
      }
    }
    for (int r = 0; r < R; ++r) {
      m[h][r] =
          _mm512_add_epi32(_mm512_unpacklo_epi64(l[0][r], l[1][r]), _mm512_unpackhi_epi64(l[0][r], l[1][r]));
    }
  }
  const __m512i order = _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
  for (int r = 0; r < R; ++r) {
    const __m512i s = _mm512_add_epi32(_mm512_shuffle_i32x4(m[0][r], m[1][r], 0x88),
                                       _mm512_shuffle_i32x4(m[0][r], m[1][r], 0xdd));
    t[r] = _mm512_permutexvar_epi32(order, s);
  }
}

// f32 scales of blocks v[0..rem), zero past rem. Word inserts, as the AVX2 kernels do: a gather (or 16 word
// stores and one vector load) halved the single-row speed, bound by the load ports.
template <bool kFull, typename Block>
LS_TARGET_AVX512 inline __m512 WeightScales(const Block* v, int rem) {
  auto h = [v, rem](int j) { return static_cast<short>(kFull || j < rem ? v[j].d : 0); };
  const __m128i h0 = _mm_setr_epi16(h(0), h(1), h(2), h(3), h(4), h(5), h(6), h(7));
  const __m128i h1 = _mm_setr_epi16(h(8), h(9), h(10), h(11), h(12), h(13), h(14), h(15));
  return _mm512_cvtph_ps(_mm256_set_m128i(h1, h0));
}
template <typename Block>
LS_TARGET_AVX512 inline __m512 WeightScales16(const Block* v, int rem) {
  return rem == 16 ? WeightScales<true>(v, rem) : WeightScales<false>(v, rem);
}

LS_TARGET_AVX512 inline __m512 RawX::Scales(int r, int64_t b0, int rem) const {
  return WeightScales16(rows[r] + b0, rem);
}

// Software prefetch distance for the weight stream (as kernels_avx2.cpp).
constexpr int kPrefetchBytes = 2048;

// One weight row against R activation rows; out[r] = the AVX2 dot's result.
template <int R, typename WBlock, class X>
LS_TARGET_AVX512 inline void DotRows(const WBlock* w, const X& x, int64_t nb, float* out) {
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b0 = 0; b0 < nb; b0 += avx512::kBlockStep) {
    const int rem = static_cast<int>(nb - b0 < 16 ? nb - b0 : 16);
    const char* ahead = reinterpret_cast<const char*>(w + b0) + kPrefetchBytes;
    for (size_t off = 0; off < 16 * sizeof(WBlock); off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
    __m512i t[R];
    Sums16<R, WBlock, X>(w, x, b0, rem, t);
    const __m512 dw = WeightScales16(w + b0, rem);
    for (int r = 0; r < R; ++r) {
      const __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(t[r], x.Offsets(r, b0)));
      const __m512 s = _mm512_mul_ps(dw, x.Scales(r, b0, rem));
      acc[r] = _mm256_fmadd_ps(_mm512_castps512_ps256(s), _mm512_castps512_ps256(f), acc[r]);
      if (rem > 8) {
        acc[r] = _mm256_fmadd_ps(_mm512_extractf32x8_ps(s, 1), _mm512_extractf32x8_ps(f, 1), acc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = simd::Hsum(acc[r]);
}

template <typename WBlock>
LS_TARGET_AVX512 float DotQ(const void* w, const void* x, int64_t n) {
  const BlockQ8_0* xs[1] = {static_cast<const BlockQ8_0*>(x)};
  float out;
  DotRows<1, WBlock>(static_cast<const WBlock*>(w), RawX{xs}, n / kQK8_0, &out);
  return out;
}

// Activation rows prepared 4 at a time; each weight row then runs against them (one activation row: the
// generation case, prepared once for the whole chunk of weight rows).
template <typename WBlock>
LS_TARGET_AVX512 void TileQ(const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride,
                            int64_t n_x, int64_t n, float* out, int64_t out_stride) {
  const int64_t nb = n / kQK8_0;
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  uint8_t* mem = avx512::PrepareBuffer(nb, 4);
  for (int64_t i = 0; i < n_x; i += 4) {
    const int rows = static_cast<int>(n_x - i < 4 ? n_x - i : 4);
    avx512::PreparedRow xs[4];
    for (int k = 0; k < rows; ++k) {
      xs[k] = avx512::Prepare(reinterpret_cast<const BlockQ8_0*>(xb + (i + k) * x_stride), nb,
                              kOffset<WBlock>, mem + k * avx512::PreparedBytes(nb));
    }
    for (int64_t r = 0; r < n_w; ++r) {
      const WBlock* wr = reinterpret_cast<const WBlock*>(wb + r * w_stride);
      float res[4];
      switch (rows) {
        case 4:
          DotRows<4, WBlock>(wr, PreparedX{xs}, nb, res);
          break;
        case 3:
          DotRows<3, WBlock>(wr, PreparedX{xs}, nb, res);
          break;
        case 2:
          DotRows<2, WBlock>(wr, PreparedX{xs}, nb, res);
          break;
        default:
          DotRows<1, WBlock>(wr, PreparedX{xs}, nb, res);
          break;
      }
      for (int k = 0; k < rows; ++k) out[(i + k) * out_stride + r] = res[k];
    }
  }
}

}  // namespace

void FillAvx512Kernels(KernelSet* set, const CpuFeatures& cpu) {
  set->vec_dot[kF32] = DotF32;
  set->vec_dot[kF16] = DotF16;
  set->vec_dot[kBF16] = cpu.avx512bf16 ? DotBF16Native : DotBF16;
  set->vec_dot[kQ8_0] = DotQ<BlockQ8_0>;
  set->vec_dot[kQ4_0] = DotQ<BlockQ4_0>;
  set->vec_dot_tile[kQ8_0] = TileQ<BlockQ8_0>;
  set->vec_dot_tile[kQ4_0] = TileQ<BlockQ4_0>;
  FillAvx512PackedKernels(set);
  FillAvx512InterleavedKernels(set);
  FillAvx512KQuantKernels(set);
}

}  // namespace lazyslot::quant
