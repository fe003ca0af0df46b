// AVX-512 VNNI packed kernels for prompt-sized batches (Q8_0 and Q4_0 weights, Q8_0 activations): 16 weight
// rows interleaved 4 values at a time, so one vpdpbusd multiplies 4 values of each of the 16 rows by the same
// 4 activation bytes (broadcast) and adds them into the rows' int32 sums: 8 instructions per 16 rows x 32
// values, where the AVX2 packed kernel (kernels_avx2_packed.cpp) needs 4 per 8 rows x 4 values for Q8_0.
// The weights are stored unsigned (avx512_rows.h) and every output follows the AVX2 dot's arithmetic (exact
// block sums, acc[b % 8] = fma(f32(d_w) * f32(d_x), f32(T_b), acc[b % 8]), phases in Hsum's order), so the
// results equal the AVX2 kernels' bit for bit.
// GCC 12 warns about its own AVX-512 headers (_mm512_undefined_* self-initialisation, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstring>

#include "quant/avx512_rows.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/simd_x86.h"

namespace lazyslot::quant {
namespace {

constexpr int kRows = 16;  // weight rows per group

// One 32-value block of 16 rows.
struct Packed32x16 {
  float d[kRows];       // row r's f16 block scale, as float
  uint8_t q[8][64];     // step s: bytes 4r..4r+3 = row r's values 4s..4s+3, unsigned (Q8_0: w ^ 0x80; Q4_0:
                        // the nibbles)
};
static_assert(sizeof(Packed32x16) == 576);

template <class Block>
inline constexpr int32_t kOffset = sizeof(Block) == sizeof(BlockQ8_0) ? 128 : 8;

template <class Block>
LS_TARGET_AVX512 void Pack32x16(const void* w, size_t w_stride, int64_t n, void* dst) {
  const int64_t nb = n / kQK8_0;
  Packed32x16* out = static_cast<Packed32x16*>(dst);
  const uint8_t* base = static_cast<const uint8_t*>(w);
  for (int64_t ib = 0; ib < nb; ++ib) {
    alignas(32) uint8_t vals[kRows][kQK8_0];
    const uint8_t* src[kRows];
    for (int r = 0; r < kRows; ++r) {
      const Block& b = reinterpret_cast<const Block*>(base + static_cast<size_t>(r) * w_stride)[ib];
      out[ib].d[r] = F16ToF32(b.d);
      __m256i v;
      if constexpr (sizeof(Block) == sizeof(BlockQ8_0)) {
        v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)),
                             _mm256_set1_epi8(static_cast<char>(0x80)));
      } else {
        v = simd::UnpackNibbles(b.qs);
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(vals[r]), v);
      src[r] = vals[r];
    }
    alignas(32) uint8_t half[2][8][32];  // rows 0-7 and 8-15, step by step
    simd::Interleave8x32(src, half[0]);
    simd::Interleave8x32(src + 8, half[1]);
    for (int s = 0; s < 8; ++s) {
      std::memcpy(out[ib].q[s], half[0][s], 32);
      std::memcpy(out[ib].q[s] + 32, half[1][s], 32);
    }
  }
}

LS_TARGET_AVX512 inline __m512i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// R prepared activation rows against one group; out[i * out_stride + r] for the group's 16 rows r.
template <int R>
LS_TARGET_AVX512 void GroupRows(const Packed32x16* w, const avx512::PreparedRow* x, int64_t nb, float* out,
                                int64_t out_stride) {
  alignas(64) float acc[R][8][kRows] = {};  // [activation row][phase][weight row]
  for (int64_t ib = 0; ib < nb; ++ib) {
    const Packed32x16& b = w[ib];
    __m512i isum[R];
    for (int i = 0; i < R; ++i) isum[i] = _mm512_setzero_si512();
    for (int s = 0; s < 8; ++s) {
      const __m512i q = _mm512_loadu_si512(b.q[s]);
      for (int i = 0; i < R; ++i) {
        isum[i] = _mm512_dpbusd_epi32(isum[i], q, Broadcast4(x[i].qs + ib * kQK8_0 + 4 * s));
      }
    }
    const __m512 d = _mm512_loadu_ps(b.d);
    for (int i = 0; i < R; ++i) {
      const __m512i t = _mm512_sub_epi32(isum[i], _mm512_set1_epi32(x[i].csum[ib]));
      const __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(x[i].dx[ib]));
      float* a = acc[i][ib % 8];
      _mm512_store_ps(a, _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(t), _mm512_load_ps(a)));
    }
  }
  for (int i = 0; i < R; ++i) {
    __m512 a[8];
    for (int k = 0; k < 8; ++k) a[k] = _mm512_load_ps(acc[i][k]);
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                                     _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
    _mm512_storeu_ps(out + i * out_stride, sum);
  }
}

constexpr int kRowsPerPass = 8;  // activation rows per pass over a group: 8 sums + 1 weight register

// Activation rows are prepared kRowsPerPass at a time, then every group meets them.
template <class Block>
LS_TARGET_AVX512 void PackedTile32(const void* packed, int64_t n_groups, const void* x, size_t x_stride,
                                   int64_t n_x, int64_t n, float* out, int64_t out_stride) {
  const int64_t nb = n / kQK8_0;
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  uint8_t* mem = avx512::PrepareBuffer(nb, kRowsPerPass);
  for (int64_t i = 0; i < n_x; i += kRowsPerPass) {
    const int rows = static_cast<int>(n_x - i < kRowsPerPass ? n_x - i : kRowsPerPass);
    avx512::PreparedRow xs[kRowsPerPass];
    for (int k = 0; k < rows; ++k) {
      xs[k] = avx512::Prepare(reinterpret_cast<const BlockQ8_0*>(xb + (i + k) * x_stride), nb, kOffset<Block>,
                              mem + k * avx512::PreparedBytes(nb));
    }
    for (int64_t g = 0; g < n_groups; ++g) {
      const Packed32x16* w = static_cast<const Packed32x16*>(packed) + g * nb;
      float* o = out + i * out_stride + g * kRows;
      switch (rows) {
        case 8:
          GroupRows<8>(w, xs, nb, o, out_stride);
          break;
        case 7:
          GroupRows<7>(w, xs, nb, o, out_stride);
          break;
        case 6:
          GroupRows<6>(w, xs, nb, o, out_stride);
          break;
        case 5:
          GroupRows<5>(w, xs, nb, o, out_stride);
          break;
        case 4:
          GroupRows<4>(w, xs, nb, o, out_stride);
          break;
        case 3:
          GroupRows<3>(w, xs, nb, o, out_stride);
          break;
        case 2:
          GroupRows<2>(w, xs, nb, o, out_stride);
          break;
        default:
          GroupRows<1>(w, xs, nb, o, out_stride);
          break;
      }
    }
  }
}

size_t GroupBytes32(int64_t n) { return static_cast<size_t>(n / kQK8_0) * sizeof(Packed32x16); }

}  // namespace

void FillAvx512PackedKernels(KernelSet* set) {
  set->packed[kQ8_0] = PackedKernel{Pack32x16<BlockQ8_0>, PackedTile32<BlockQ8_0>, GroupBytes32, kRows};
  set->packed[kQ4_0] = PackedKernel{Pack32x16<BlockQ4_0>, PackedTile32<BlockQ4_0>, GroupBytes32, kRows};
}

}  // namespace lazyslot::quant
