// AVX-512 kernels (F, BW, VL, DQ, VNNI; BF16 where present): Q8_0/Q4_0 x Q8_0 dots and tiles two blocks per
// 512-bit register with vpdpbusd, and F32/F16/BF16 dots. Entries not set here keep their AVX2 versions
// (quantizers, K-quants: their maddubs+madd pair is already two ops per 32 values, as dpbusd+mullo would be).
// GCC 12 warns about its own AVX-512 headers (_mm512_undefined_* self-initialisation, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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

// ---- Q8_0 / Q4_0 weights against Q8_0 activations, two blocks per 512-bit register.
// vpdpbusd multiplies unsigned by signed bytes: |w| times x carrying w's sign (exact unless x = -128 meets a
// negative w, which our activation quantizer never produces). Per row: acc0/acc1 take alternate block pairs,
// an odd last block goes through a 256-bit register. Tiles run the same code (bit-identical results).

LS_TARGET_AVX512 inline __m256i Q8Bytes(const BlockQ8_0& b) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
}
LS_TARGET_AVX512 inline __m256i Q8Bytes(const BlockQ4_0& b) {
  return _mm256_sub_epi8(simd::UnpackNibbles(b.qs), _mm256_set1_epi8(8));
}

LS_TARGET_AVX512 inline __m512i Join(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// Lanes 0-7 = s0, lanes 8-15 = s1, where s = d_w * d_x of two consecutive blocks.
LS_TARGET_AVX512 inline __m512 PairScale(uint16_t w0, uint16_t w1, uint16_t x0, uint16_t x1) {
  const __m128 h = _mm_cvtph_ps(_mm_setr_epi16(static_cast<short>(w0), static_cast<short>(w1),
                                               static_cast<short>(x0), static_cast<short>(x1), 0, 0, 0, 0));
  const __m128 s = _mm_mul_ps(h, _mm_movehl_ps(h, h));  // s0, s1 in lanes 0, 1
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                               _mm512_castps128_ps512(s));
}

// One pair of blocks (ib, ib+1) for R activation rows into acc[R].
template <int R, typename WBlock>
LS_TARGET_AVX512 inline void PairQ8(const WBlock* w, const BlockQ8_0* const* x, int64_t ib, __m512* acc) {
  const __m512i wq = Join(Q8Bytes(w[ib]), Q8Bytes(w[ib + 1]));
  const __mmask64 neg = _mm512_movepi8_mask(wq);
  const __m512i aw = _mm512_abs_epi8(wq);
  for (int r = 0; r < R; ++r) {
    const __m512i xq = Join(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][ib].qs)),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][ib + 1].qs)));
    const __m512i sx = _mm512_mask_sub_epi8(xq, neg, _mm512_setzero_si512(), xq);
    const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), aw, sx);
    const __m512 s = PairScale(w[ib].d, w[ib + 1].d, x[r][ib].d, x[r][ib + 1].d);
    acc[r] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(p), acc[r]);
  }
}

// Software prefetch distance for the weight stream (see kernels_avx2.cpp).
constexpr int kPrefetchBytes = 1024;

template <int R, typename WBlock>
LS_TARGET_AVX512 inline void DotQ8Rows512(const WBlock* w, const BlockQ8_0* const* x, int64_t nb,
                                          float* out) {
  __m512 acc0[R], acc1[R];
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
  int64_t ib = 0;
  for (; ib + 4 <= nb; ib += 4) {
    const char* ahead = reinterpret_cast<const char*>(w + ib) + kPrefetchBytes;
    for (int off = 0; off < 3 * 64; off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
    PairQ8<R, WBlock>(w, x, ib, acc0);
    PairQ8<R, WBlock>(w, x, ib + 2, acc1);
  }
  if (ib + 2 <= nb) {
    PairQ8<R, WBlock>(w, x, ib, acc0);
    ib += 2;
  }
  __m256 tail[R];
  for (int r = 0; r < R; ++r) tail[r] = _mm256_setzero_ps();
  if (ib < nb) {
    const __m256i wq = Q8Bytes(w[ib]);
    const __m256i aw = _mm256_abs_epi8(wq);
    for (int r = 0; r < R; ++r) {
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][ib].qs));
      const __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), aw, _mm256_sign_epi8(xq, wq));
      tail[r] = _mm256_mul_ps(_mm256_set1_ps(HalfToFloat(w[ib].d) * HalfToFloat(x[r][ib].d)),
                              _mm256_cvtepi32_ps(p));
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m512 t = _mm512_insertf32x8(_mm512_setzero_ps(), tail[r], 0);
    out[r] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0[r], acc1[r]), t));
  }
}

template <int R>
struct Q8_0Kernel {
  LS_TARGET_AVX512 static void Run(const BlockQ8_0* w, const BlockQ8_0* const* x, int64_t nb, float* out) {
    DotQ8Rows512<R, BlockQ8_0>(w, x, nb, out);
  }
};
template <int R>
struct Q4_0Kernel {
  LS_TARGET_AVX512 static void Run(const BlockQ4_0* w, const BlockQ8_0* const* x, int64_t nb, float* out) {
    DotQ8Rows512<R, BlockQ4_0>(w, x, nb, out);
  }
};

template <typename WBlock, template <int> class Kernel>
float DotQ(const void* w, const void* x, int64_t n) {
  const BlockQ8_0* xs[1] = {static_cast<const BlockQ8_0*>(x)};
  float out;
  Kernel<1>::Run(static_cast<const WBlock*>(w), xs, n / kQK8_0, &out);
  return out;
}

template <typename WBlock, template <int> class Kernel>
void TileQ(const void* w, size_t w_stride, int64_t n_w, const void* x, size_t x_stride, int64_t n_x,
           int64_t n, float* out, int64_t out_stride) {
  const int64_t nb = n / kQK8_0;
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (int64_t r = 0; r < n_w; ++r) {
    const WBlock* wr = reinterpret_cast<const WBlock*>(wb + r * w_stride);
    for (int64_t i = 0; i < n_x; i += 4) {
      const int rows = static_cast<int>(n_x - i < 4 ? n_x - i : 4);
      const BlockQ8_0* xs[4];
      for (int k = 0; k < rows; ++k) xs[k] = reinterpret_cast<const BlockQ8_0*>(xb + (i + k) * x_stride);
      float res[4];
      switch (rows) {
        case 4:
          Kernel<4>::Run(wr, xs, nb, res);
          break;
        case 3:
          Kernel<3>::Run(wr, xs, nb, res);
          break;
        case 2:
          Kernel<2>::Run(wr, xs, nb, res);
          break;
        default:
          Kernel<1>::Run(wr, xs, nb, res);
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
  set->vec_dot[kQ8_0] = DotQ<BlockQ8_0, Q8_0Kernel>;
  set->vec_dot[kQ4_0] = DotQ<BlockQ4_0, Q4_0Kernel>;
  set->vec_dot_tile[kQ8_0] = TileQ<BlockQ8_0, Q8_0Kernel>;
  set->vec_dot_tile[kQ4_0] = TileQ<BlockQ4_0, Q4_0Kernel>;
  // The AVX2 packed Q8_0/Q4_0 kernels follow the AVX2 dots' arithmetic, not these: prompts use the VNNI tile.
  set->packed[kQ8_0] = PackedKernel{};
  set->packed[kQ4_0] = PackedKernel{};
  FillAvx512KQuantKernels(set);
}

void FillAvx512KQuantKernels(KernelSet* set) {}  // K-quants keep their AVX2 kernels (see the file comment)

}  // namespace lazyslot::quant
