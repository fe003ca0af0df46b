// AVX-512 generation kernels that take several weight rows per pass (kernels_avx512_gemv_k.cpp), called by
// the tiles of kernels_avx512_k.cpp when there is one activation row.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lazyslot::quant::avx512 {

// out[r] = dot(Q4_K weight row r, the Q8_K activation row x) for r < the returned count, which is n_w rounded
// down to a multiple of 4 (0 when n_w < 4): the caller finishes the rest with the single-row dot. Every value
// equals that dot's bit for bit. Rows are w_stride bytes apart, n values each.
int64_t GemvQ4K(const void* w, size_t w_stride, int64_t n_w, const void* x, int64_t n, float* out);
// The same for Q5_K and Q6_K weight rows.
int64_t GemvQ5K(const void* w, size_t w_stride, int64_t n_w, const void* x, int64_t n, float* out);
int64_t GemvQ6K(const void* w, size_t w_stride, int64_t n_w, const void* x, int64_t n, float* out);

}  // namespace lazyslot::quant::avx512
