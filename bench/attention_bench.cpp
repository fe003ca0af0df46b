// Single-thread cost of flash attention over an F16 cache shaped like qwen3-0.6b's (8 kv heads of 128 values,
// 2 query heads per kv head), in ns per (query head, key): a prompt's tokens attended one by one (as a
// decoding token is) and 8 at a time (AttendTokens' tile: each block of K/V rows read once for the 8), at
// several numbers of cells already held. The cache is as large as a real slot's, so long contexts stream
// from memory. Build: the `attention_bench` target; run: ./attention_bench [reps].
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "ops/attention.h"
#include "quant/quant.h"

using namespace lazyslot;

namespace {

constexpr int kHeadsKv = 8, kGroup = 2, kHeadDim = 128, kTokens = 8;

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const int64_t width = int64_t{kHeadsKv} * kHeadDim;
  const int64_t q_width = width * kGroup;
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::printf("%8s %10s %14s %14s %8s\n", "held", "tile", "1 by 1 ns", "tiled ns", "ratio");
  for (int32_t held : {0, 512, 4096, 16384}) {
    const int32_t n_cells = held + kTokens;
    KvRows kv;
    kv.k_row_bytes = kv.v_row_bytes = RowBytes(TensorType::kF16, width);
    std::vector<uint8_t> k(kv.k_row_bytes * n_cells), v(kv.v_row_bytes * n_cells);
    std::vector<float> row(width);
    for (int32_t j = 0; j < n_cells; ++j) {
      for (float& x : row) x = dist(rng);
      quant::QuantizeRow(TensorType::kF16, row.data(), k.data() + j * kv.k_row_bytes, width);
      for (float& x : row) x = dist(rng);
      quant::QuantizeRow(TensorType::kF16, row.data(), v.data() + j * kv.v_row_bytes, width);
    }
    kv.k = k.data();
    kv.v = v.data();
    std::vector<float> q(kTokens * q_width), out(kTokens * q_width);
    for (float& x : q) x = dist(rng);
    int32_t n_kv[kTokens];
    int64_t pairs = 0;  // (query head, key) pairs per pass over all kv heads
    for (int t = 0; t < kTokens; ++t) {
      n_kv[t] = held + t + 1;
      pairs += int64_t{n_kv[t]} * kHeadsKv * kGroup;
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    AttentionScratch s;
    auto pass = [&](int tile) {  // every kv head, the tokens `tile` at a time
      for (int g = 0; g < kHeadsKv; ++g) {
        for (int t0 = 0; t0 < kTokens; t0 += tile) {
          AttendBatch a;
          a.q = q.data() + t0 * q_width + g * kGroup * kHeadDim;
          a.out = out.data() + t0 * q_width + g * kGroup * kHeadDim;
          a.q_tok_stride = a.out_tok_stride = q_width;
          a.q_stride = a.out_stride = kHeadDim;
          a.n_q = kGroup;
          a.n_tok = tile;
          a.n_kv = n_kv + t0;
          AttendTokens(AttentionMode::kFlash, a, kv, g, kHeadDim, scale, s);
        }
      }
    };
    double ns[2];
    for (int m = 0; m < 2; ++m) {
      const int tile = m == 0 ? 1 : kTokens;
      std::vector<double> runs;
      // Passes until ~0.2 s per repetition; the median repetition is reported.
      for (int r = 0; r < reps; ++r) {
        int64_t n_pass = 0;
        const double t0 = Seconds();
        do {
          pass(tile);
          ++n_pass;
        } while (Seconds() - t0 < 0.2);
        runs.push_back((Seconds() - t0) * 1e9 / static_cast<double>(n_pass * pairs));
      }
      std::sort(runs.begin(), runs.end());
      ns[m] = runs[runs.size() / 2];
    }
    std::printf("%8d %10d %14.2f %14.2f %8.2f\n", held, kTokens, ns[0], ns[1], ns[0] / ns[1]);
  }
  return 0;
}
