// MatMul as the forward pass calls it, in GMAC/s: qwen3-0.6b's prompt-sized products (512 activation rows
// against q, k/v, o, gate/up and down shapes) and a decode step (1 row), with 1 and with N threads, on
// random weights of one format. The difference between these figures and quant_bench's single-kernel ones is
// what the matmul around the kernel costs (activation encoding, packing, cache misses, thread hand-offs).
// Build: the `matmul_bench` target; run: ./matmul_bench [type=q4_K] [threads=2] [m=512].
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gguf/tensor_type.h"
#include "ops/matmul.h"
#include "quant/quant.h"

using namespace lazyslot;

namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Shape {
  const char* name;
  int64_t n_in, n_out;
};

// Best of passes over ~0.5 s: GMAC/s of y[m, n_out] = x[m, n_in] . W^T.
double Measure(ThreadPool& pool, TensorType type, const Shape& s, int64_t m) {
  const size_t rb = RowBytes(type, s.n_in);
  std::vector<uint8_t> w(rb * s.n_out);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(s.n_in);
  for (int64_t r = 0; r < s.n_out; ++r) {
    if (r < 64) {
      for (float& v : row) v = dist(rng);
      quant::QuantizeRow(type, row.data(), w.data() + r * rb, s.n_in);
    } else {
      std::memcpy(w.data() + r * rb, w.data() + (r % 64) * rb, rb);
    }
  }
  std::vector<float> x(m * s.n_in), y(m * s.n_out);
  for (float& v : x) v = dist(rng);
  const WeightView view{type, w.data(), s.n_in, s.n_out, rb};
  MatMulScratch scratch;
  double best = 1e30;
  const double t0 = Seconds();
  for (int pass = 0; pass < 3 || Seconds() - t0 < 0.5; ++pass) {
    const double p0 = Seconds();
    MatMul(pool, view, x.data(), m, y.data(), s.n_out, scratch);
    best = std::min(best, Seconds() - p0);
  }
  return static_cast<double>(m) * s.n_in * s.n_out / best / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string tname = argc > 1 ? argv[1] : "q4_K";
  const int threads = argc > 2 ? std::max(1, std::atoi(argv[2])) : 2;
  const int64_t m = argc > 3 ? std::max(1, std::atoi(argv[3])) : 512;
  TensorType type = TensorType::kQ4_K;
  if (!ParseTypeName(tname, &type)) {
    std::fprintf(stderr, "unknown type %s\n", tname.c_str());
    return 2;
  }
  std::printf("%s\n", quant::SelectKernels({{type, 1024, 3072}, {type, 3072, 1024}}).c_str());
  const Shape shapes[] = {{"q 1024x2048", 1024, 2048},
                          {"kv 1024x1024", 1024, 1024},
                          {"o 2048x1024", 2048, 1024},
                          {"up 1024x3072", 1024, 3072},
                          {"down 3072x1024", 3072, 1024}};
  std::printf("%-16s %6s %14s %14s\n", "shape", "m", "1 thread",
              std::to_string(threads).append(" threads").c_str());
  for (const Shape& s : shapes) {
    for (int64_t rows : {m, int64_t{1}}) {
      ThreadPool one(1), many(threads);
      const double a = Measure(one, type, s, rows), b = Measure(many, type, s, rows);
      std::printf("%-16s %6lld %14.2f %14.2f\n", s.name, static_cast<long long>(rows), a, b);
      std::fflush(stdout);
    }
  }
  return 0;
}
