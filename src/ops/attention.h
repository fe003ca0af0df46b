// Causal attention of one query head over one slot's cached K/V rows, with the reference's rounding:
// q is encoded like a K row (F16 for an F16 cache) for q.k, the softmax is f32 with a double sum, and the
// probabilities are rounded to the V dot type (F16) before they weight the V rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/tensor_type.h"

namespace lazyslot {

// One slot's K and V rows for one layer: rows 0..n_kv-1, row_bytes apart. A head's slice of a row starts
// at RowBytes(type, head_index * head_dim).
struct KvRows {
  TensorType type_k = TensorType::kF16;
  TensorType type_v = TensorType::kF16;
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  size_t k_row_bytes = 0;
  size_t v_row_bytes = 0;
};

struct AttentionScratch {
  std::vector<float> scores;   // [n_kv]
  std::vector<uint8_t> q_enc;  // q in the K dot type
  std::vector<float> v_row;    // decoded V slice (non-F16/F32 caches)
  std::vector<float> q_f;      // kFlash: q as the dot sees it [rows][head_dim] (+ decoded K/V rows, scalar)
  std::vector<float> acc;      // kFlash: accumulators (F16 values held as f32) [rows][head_dim]
  std::vector<float> state;    // kFlash, vector path: running max and sum per row [2][rows]
  std::vector<float> kv_f;     // kFlash, vector path: one block's V slices as f32 [32][head_dim]
};

// How attention rounds, as llama.cpp's two CPU paths do (-fa off / on). Both give softmax(q.K^T * scale) . V.
enum class AttentionMode {
  kStandard,  // all scores, softmax (double sum), probabilities rounded to F16, V summed in f32
  kFlash,  // one pass, online softmax per block of 32 keys, F16-rounded accumulator (llama-server's default)
};

// out[head_dim] = softmax(scale * q.K[0..n_kv)^T) . V[0..n_kv), over kv head `g`.
void AttendHead(AttentionMode mode, const float* q, const KvRows& kv, int g, int head_dim, int32_t n_kv,
                float scale, float* out, AttentionScratch& scratch);

// AttendHead for the n_q query heads that share kv head `g` (a GQA group): query h at q + h * q_stride, its
// output at out + h * out_stride. Each K/V row is read once for the whole group; every head's result is
// bit-identical to AttendHead's.
void AttendGroup(AttentionMode mode, const float* q, int64_t q_stride, int n_q, const KvRows& kv, int g,
                 int head_dim, int32_t n_kv, float scale, float* out, int64_t out_stride,
                 AttentionScratch& scratch);

// Several tokens of one slot against kv heads g .. g + n_kv_heads - 1: token t's query head h of kv head
// g + i at q + t * q_tok_stride + (i * n_q + h) * q_stride sees the slot's cells [kv_begin[t], n_kv[t])
// ([0, n_kv[t]) without kv_begin), its output at out + t * out_tok_stride + (i * n_q + h) * out_stride.
// A sliding-window layer passes kv_begin: the cells before it are never read (their pages may be gone).
struct AttendBatch {
  const float* q = nullptr;
  int64_t q_tok_stride = 0;
  int64_t q_stride = 0;
  int n_q = 1;  // query heads per token sharing a kv head
  int n_kv_heads = 1;
  int n_tok = 1;
  const int32_t* n_kv = nullptr;      // [n_tok]
  const int32_t* kv_begin = nullptr;  // [n_tok] or nullptr (every token from cell 0)
  float* out = nullptr;
  int64_t out_tok_stride = 0;
  int64_t out_stride = 0;
};

// AttendGroup for every token and kv head of `a` in one call: the flash path reads each block of K/V rows
// once for all the tokens (a prompt's tokens share its cells), and the kv heads' slices of a row one after
// the other. Every result is bit-identical to AttendGroup's.
void AttendTokens(AttentionMode mode, const AttendBatch& a, const KvRows& kv, int g, int head_dim,
                  float scale, AttentionScratch& scratch);

// An encoder's K/V (no cache): f32 rows of one sequence, K transposed per kv head into kt: kv head g's
// dim d of key j at kt[(g * head_dim + d) * ld + j] (ld: n_kv rounded up to 8, zero-padded); V rows as
// computed, v + j * v_stride (+ g * head_dim for head g).
struct DenseKv {
  const float* kt = nullptr;
  int64_t ld = 0;
  const float* v = nullptr;
  int64_t v_stride = 0;
  int32_t n_kv = 0;
};

// K rows [n_kv][k_stride] -> the transposed layout of DenseKv for n_kv_heads heads of hd.
void TransposeKeys(const float* k, int64_t k_stride, int32_t n_kv, int n_kv_heads, int hd, float* kt,
                   int64_t ld);

// Bidirectional attention: every token and query head of `a` (a.n_kv is not read) against all kv.n_kv keys,
// softmax(scale q.k) . v in f32 (scores 8 keys at a time, softmax with a double sum, V summed in f32): no
// rounding, as llama.cpp computes an encoder's attention without a KV cache.
void AttendDenseF32(const AttendBatch& a, const DenseKv& kv, int g, int head_dim, float scale,
                    AttentionScratch& scratch);

// The flash path over an F16 cache sums V rows in 8-lane (AVX2) or 16-lane (AVX-512) registers, with the same
// operations per value (the same bits); the faster on this machine, timed once at first use (~4 ms), serves.
// A line naming the choice and its figures, for the start-up log.
std::string AttentionKernelChoice();
// Tests: 1 forces the AVX-512 V pass (false when the CPU or LAZYSLOT_ISA does not allow it), 0 the AVX2
// one, -1 the measured choice again.
bool ForceFlashVPassForTest(int wide);

// The scalar definition of each mode (no vector helpers beyond the kernel table's dots), for tests: keys
// [kv_begin, n_kv). The flash mode's blocks of keys stay aligned to absolute cells (a multiple of 32), so a
// window gives the same bits whichever path and batch a token runs in.
void AttendHeadReference(AttentionMode mode, const float* q, const KvRows& kv, int g, int head_dim,
                         int32_t n_kv, float scale, float* out, AttentionScratch& scratch,
                         int32_t kv_begin = 0);

}  // namespace lazyslot
