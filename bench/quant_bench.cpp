// Single-thread dot-product throughput of every kernel set on this CPU, in GB/s of weight bytes read:
// a cache-resident matrix (~1M values) and a DRAM-sized one (~64M values), one activation row (generation,
// through the gemv as MatMul calls it, and from DRAM also as the plain loop over the dot one row at a time)
// and a 4-row tile (batched decoding); "il" rows: the same over weights kept interleaved (InterleavedKernel).
// Then prompt-sized work as the matmul does it, in GMAC/s: a 48-row chunk of weights against 512 activation
// rows, 8 at a time, through the plain tile and, where the set has one, the packed kernel (packing included).
// Build: the `quant_bench` target; run: ./quant_bench [--quick] [--n ROW_LENGTH].
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/kernels.h"
#include "quant/quant.h"

using namespace lazyslot;
using namespace lazyslot::quant;

namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Case {
  TensorType type;
  int64_t n;     // row length
  int64_t rows;  // weight rows
};

// Returns GB/s of weight bytes; `tile` = number of activation rows per weight row (1: the set's gemv, or with
// `one_row` the plain loop over its vec_dot, the other generation variant the selection times; with
// `interleaved` the set's InterleavedKernel over the rows rewritten into its layout).
double Measure(const KernelSet& ks, const Case& c, int tile, double min_seconds, bool one_row = false,
               bool interleaved = false) {
  const int f = FormatIndex(c.type);
  const TensorType at = VecDotType(c.type);
  const size_t wbytes = RowBytes(c.type, c.n), xbytes = RowBytes(at, c.n);
  std::vector<uint8_t> w(wbytes * c.rows), x(xbytes * tile);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(c.n);
  for (int64_t r = 0; r < c.rows; ++r) {
    if (r < 64) {
      for (float& v : row) v = dist(rng);
      QuantizeRow(c.type, row.data(), w.data() + r * wbytes, c.n);
    } else {  // copying keeps set-up fast for big matrices; the kernels do not care about the values
      std::memcpy(w.data() + r * wbytes, w.data() + (r % 64) * wbytes, wbytes);
    }
  }
  for (int i = 0; i < tile; ++i) {
    for (float& v : row) v = dist(rng);
    QuantizeRow(at, row.data(), x.data() + i * xbytes, c.n);
  }
  const InterleavedKernel& ik = ks.interleaved[f];
  if (interleaved) ik.interleave(w.data(), c.rows, c.n);
  std::vector<float> out(c.rows * tile);
  volatile float sink = 0;
  // Best pass over `min_seconds`: the machine may be shared, and the fastest pass is the least disturbed.
  double best = 1e30;
  const double t0 = Seconds();
  for (int64_t pass = 0; Seconds() - t0 < min_seconds || pass < 3; ++pass) {
    const double p0 = Seconds();
    if (interleaved) {
      ik.tile(w.data(), wbytes, c.rows, x.data(), xbytes, tile, c.n, out.data(), c.rows);
    } else if (tile == 1 && ks.gemv[f] && !one_row) {  // one activation row: the generation path (MatMul's gemv)
      ks.gemv[f](w.data(), wbytes, c.rows, x.data(), xbytes, 1, c.n, out.data(), c.rows);
    } else if (tile == 1) {  // a null gemv: the generic loop, as MatMul runs it
      for (int64_t r = 0; r < c.rows; ++r) out[r] = ks.vec_dot[f](w.data() + r * wbytes, x.data(), c.n);
    } else if (ks.vec_dot_tile[f]) {
      ks.vec_dot_tile[f](w.data(), wbytes, c.rows, x.data(), xbytes, tile, c.n, out.data(), c.rows);
    } else {
      VecDotTileGeneric(ks.vec_dot[f], w.data(), wbytes, c.rows, x.data(), xbytes, tile, c.n, out.data(),
                        c.rows);
    }
    best = std::min(best, Seconds() - p0);
    sink = sink + out[pass % c.rows];
  }
  return static_cast<double>(w.size()) / best / 1e9;
}

// GMAC/s of a prompt-sized product: `rows` weight rows of n values x `batch` activation rows, tiles of 8
// activation rows; `packed` interleaves the rows first (PackedKernel), as MatMul does per chunk.
double MeasureBatch(const KernelSet& ks, TensorType type, int64_t n, int64_t rows, int64_t batch, bool packed,
                    double min_seconds) {
  const int f = FormatIndex(type);
  const TensorType at = VecDotType(type);
  const size_t wbytes = RowBytes(type, n), xbytes = RowBytes(at, n);
  std::vector<uint8_t> w(wbytes * rows), x(xbytes * batch);
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(n);
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = dist(rng);
    QuantizeRow(type, row.data(), w.data() + r * wbytes, n);
  }
  for (int64_t i = 0; i < batch; ++i) {
    for (float& v : row) v = dist(rng);
    QuantizeRow(at, row.data(), x.data() + i * xbytes, n);
  }
  const PackedKernel& pk = ks.packed[f];
  const int64_t groups = packed ? rows / pk.rows : 0;
  std::vector<uint8_t> buf(packed ? pk.group_bytes(n) * groups : 0);
  std::vector<float> out(rows * batch);
  double best = 1e30;
  const double t0 = Seconds();
  for (int64_t pass = 0; Seconds() - t0 < min_seconds || pass < 3; ++pass) {
    const double p0 = Seconds();
    if (packed) {
      for (int64_t g = 0; g < groups; ++g) {
        pk.pack(w.data() + g * pk.rows * wbytes, wbytes, n, buf.data() + g * pk.group_bytes(n));
      }
    }
    for (int64_t i = 0; i < batch; i += 8) {
      if (packed) {
        pk.tile(buf.data(), groups, x.data() + i * xbytes, xbytes, 8, n, out.data() + i * rows, rows);
      } else if (ks.vec_dot_tile[f]) {
        ks.vec_dot_tile[f](w.data(), wbytes, rows, x.data() + i * xbytes, xbytes, 8, n, out.data() + i * rows,
                           rows);
      } else {
        VecDotTileGeneric(ks.vec_dot[f], w.data(), wbytes, rows, x.data() + i * xbytes, xbytes, 8, n,
                          out.data() + i * rows, rows);
      }
    }
    best = std::min(best, Seconds() - p0);
  }
  const int64_t done = packed ? groups * pk.rows : rows;
  return static_cast<double>(done * batch * n) / best / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int64_t batch_n = 1024;  // row length of the prompt-sized products (--n: 3072 is Qwen3-0.6B's ffn_down)
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    if (a == "--n" && i + 1 < argc) batch_n = std::max<int64_t>(256, std::atoll(argv[++i]) / 256 * 256);
  }
  const double secs = quick ? 0.1 : 0.5;
  const TensorType types[] = {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ5_K,
                              TensorType::kQ6_K, TensorType::kF16,  TensorType::kBF16, TensorType::kF32};
  std::printf("%-8s %-6s %14s %14s %14s %14s\n", "isa", "type", "1M GB/s", "64M GB/s", "64M 1-row",
              "1Mx4 GB/s");
  for (const KernelSet& ks : AvailableKernels()) {
    for (TensorType t : types) {
      const int64_t n = 1024;
      const double small = Measure(ks, {t, n, 1024}, 1, secs);
      const double big = quick ? 0 : Measure(ks, {t, n, 64 * 1024}, 1, secs);
      const double big1 = quick ? 0 : Measure(ks, {t, n, 64 * 1024}, 1, secs, true);
      const double tile4 = Measure(ks, {t, n, 1024}, 4, secs);
      std::printf("%-8s %-6s %14.2f %14.2f %14.2f %14.2f\n", ks.name, TypeName(t), small, big, big1, tile4);
      std::fflush(stdout);
    }
    for (TensorType t : types) {  // the interleaved layout's products (1-row column: none)
      if (ks.interleaved[FormatIndex(t)].interleave == nullptr) continue;
      const int64_t n = 1024;
      const double small = Measure(ks, {t, n, 1024}, 1, secs, false, true);
      const double big = quick ? 0 : Measure(ks, {t, n, 64 * 1024}, 1, secs, false, true);
      const double tile4 = Measure(ks, {t, n, 1024}, 4, secs, false, true);
      const std::string name = std::string(ks.name) + " il";
      std::printf("%-8s %-6s %14.2f %14.2f %14s %14.2f\n", name.c_str(), TypeName(t), small, big, "-", tile4);
      std::fflush(stdout);
    }
  }
  std::printf("\n%-8s %-6s %18s %18s  (rows of %lld values)\n", "isa", "type", "48x512 tile GMAC/s",
              "packed GMAC/s", static_cast<long long>(batch_n));
  for (const KernelSet& ks : AvailableKernels()) {
    for (TensorType t : types) {
      const int64_t n = batch_n;
      const double tile = MeasureBatch(ks, t, n, 48, 512, false, secs);
      const bool has_packed = ks.packed[FormatIndex(t)].pack != nullptr;
      const double packed = has_packed ? MeasureBatch(ks, t, n, 48, 512, true, secs) : 0;
      std::printf("%-8s %-6s %18.2f %18.2f\n", ks.name, TypeName(t), tile, packed);
      std::fflush(stdout);
    }
  }
  return 0;
}
