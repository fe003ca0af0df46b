// Builds the kernel tables: detects the CPU once, builds the scalar/AVX2/AVX-512 sets, honours LAZYSLOT_ISA,
// self-checks the starting active set, and implements the public quant.h functions on top of it. It is the
// process's only reader of the CPU's features and of LAZYSLOT_ISA (DetectCpu, IsaOverride, ActiveIsa): the
// measured selection (select.cpp) and the ops layer's own SIMD paths ask these. The per-format choices by
// measurement that later refine the active set live in select.cpp.
#include <cpuid.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/log.h"
#include "core/status.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace lazyslot::quant {
namespace {

KernelSet MakeScalarKernels() {
  KernelSet s;
  s.isa = Isa::kScalar;
  s.name = "scalar";
  s.dequantize[kF32] = scalar::DequantizeF32;
  s.dequantize[kF16] = scalar::DequantizeF16;
  s.dequantize[kBF16] = scalar::DequantizeBF16;
  s.dequantize[kQ8_0] = scalar::DequantizeQ8_0;
  s.dequantize[kQ4_0] = scalar::DequantizeQ4_0;
  s.dequantize[kQ4_K] = scalar::DequantizeQ4_K;
  s.dequantize[kQ5_K] = scalar::DequantizeQ5_K;
  s.dequantize[kQ6_K] = scalar::DequantizeQ6_K;
  s.dequantize[kQ8_K] = scalar::DequantizeQ8_K;
  s.quantize[kF32] = scalar::QuantizeF32;
  s.quantize[kF16] = scalar::QuantizeF16;
  s.quantize[kBF16] = scalar::QuantizeBF16;
  s.quantize[kQ8_0] = scalar::QuantizeQ8_0;
  s.quantize[kQ4_0] = scalar::QuantizeQ4_0;
  s.quantize[kQ4_K] = scalar::QuantizeQ4_K;
  s.quantize[kQ5_K] = scalar::QuantizeQ5_K;
  s.quantize[kQ6_K] = scalar::QuantizeQ6_K;
  s.quantize[kQ8_K] = scalar::QuantizeQ8_K;
  s.vec_dot[kF32] = scalar::DotF32;
  s.vec_dot[kF16] = scalar::DotF16;
  s.vec_dot[kBF16] = scalar::DotBF16;
  s.vec_dot[kQ8_0] = scalar::DotQ8_0;
  s.vec_dot[kQ4_0] = scalar::DotQ4_0;
  s.vec_dot[kQ4_K] = scalar::DotQ4_K;
  s.vec_dot[kQ5_K] = scalar::DotQ5_K;
  s.vec_dot[kQ6_K] = scalar::DotQ6_K;
  // vec_dot[kQ8_K] stays null: Q8_K is an activation format only.
  return s;
}

// A set's generation entries: its tile serves one activation row too.
KernelSet WithGemv(KernelSet s) {
  for (int f = 0; f < kFormatCount; ++f) s.gemv[f] = s.vec_dot_tile[f];
  return s;
}

std::vector<KernelSet> BuildAvailable() {
  const CpuFeatures& cpu = DetectCpu();
  std::vector<KernelSet> sets;
  sets.push_back(ScalarKernels());
  if (cpu.avx2) {
    KernelSet s = ScalarKernels();
    s.isa = Isa::kAvx2;
    s.name = "avx2";
    FillAvx2Kernels(&s);
    sets.push_back(WithGemv(s));
    if (cpu.avx512) {
      s.isa = Isa::kAvx512;
      s.name = "avx512";
      FillAvx512Kernels(&s, cpu);
      sets.push_back(WithGemv(s));
    }
  }
  return sets;
}

bool ParseIsa(const char* env, Isa* out) {
  if (!env) return false;
  if (std::strcmp(env, "scalar") == 0) {
    *out = Isa::kScalar;
  } else if (std::strcmp(env, "avx2") == 0) {
    *out = Isa::kAvx2;
  } else if (std::strcmp(env, "avx512") == 0) {
    *out = Isa::kAvx512;
  } else {
    return false;
  }
  return true;
}

// Picks the best set (or the one LAZYSLOT_ISA asks for) whose self-check passes.
KernelSet ChooseActive() {
  std::vector<KernelSet> sets = BuildAvailable();
  const int want = static_cast<int>(IsaOverride().level);
  for (int i = want; i > 0; --i) {
    const std::string failure = SelfCheck(sets[i]);
    if (failure.empty()) return sets[i];
    LS_LOG_ERROR("quant: %s kernels failed their self-check (%s); falling back", sets[i].name, failure.c_str());
  }
  return sets[0];
}

const KernelSet& Kernels(TensorType type, int* index) {
  *index = FormatIndex(type);
  LS_CHECK(*index >= 0);  // callers check IsSupported / CanQuantize on input-dependent types first
  return ActiveKernels();
}

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

Isa ResolveIsa(const char* env, Isa best) {
  if (!env || !*env) return best;
  Isa asked;
  if (!ParseIsa(env, &asked)) {
    LS_LOG_WARN("LAZYSLOT_ISA='%s' is not one of scalar, avx2, avx512; ignored", env);
    return best;
  }
  if (static_cast<int>(asked) > static_cast<int>(best)) {
    LS_LOG_WARN("LAZYSLOT_ISA=%s is not supported by this CPU; using %s", env, IsaName(best));
    return best;
  }
  return asked;
}

bool ForcedIsa(const char* env, Isa best, Isa* level) {
  Isa asked;
  if (!ParseIsa(env, &asked)) return false;
  *level = static_cast<int>(asked) > static_cast<int>(best) ? best : asked;
  return true;
}

int FormatIndex(TensorType type) {
  switch (type) {
    case TensorType::kF32: return kF32;
    case TensorType::kF16: return kF16;
    case TensorType::kBF16: return kBF16;
    case TensorType::kQ8_0: return kQ8_0;
    case TensorType::kQ4_0: return kQ4_0;
    case TensorType::kQ4_K: return kQ4_K;
    case TensorType::kQ5_K: return kQ5_K;
    case TensorType::kQ6_K: return kQ6_K;
    case TensorType::kQ8_K: return kQ8_K;
    default: return -1;
  }
}

const CpuFeatures& DetectCpu() {
  static const CpuFeatures cpu = [] {
    CpuFeatures f;
    __builtin_cpu_init();
#if defined(__clang__)
    // clang 14's __builtin_cpu_supports has no "f16c": CPUID leaf 1 ECX, with the OS saving AVX state (as
    // libgcc reports it).
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    f.f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) && __builtin_cpu_supports("avx");
#else
    f.f16c = __builtin_cpu_supports("f16c");
#endif
    f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f.f16c;
    f.avx512 = f.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vnni");
    f.avx512bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
    return f;
  }();
  return cpu;
}

Isa CpuIsa() {
  const CpuFeatures& cpu = DetectCpu();
  return cpu.avx512 ? Isa::kAvx512 : cpu.avx2 ? Isa::kAvx2 : Isa::kScalar;
}

const IsaRequest& IsaOverride() {
  static const IsaRequest request = [] {
    IsaRequest r;
    const char* env = std::getenv("LAZYSLOT_ISA");
    r.value = env ? env : "";
    Isa forced_level;
    r.forced = ForcedIsa(env, CpuIsa(), &forced_level);
    r.level = ResolveIsa(env, CpuIsa());  // warns once about a value it ignores
    return r;
  }();
  return request;
}

Isa ActiveIsa() { return ActiveKernels().isa; }

const KernelSet& ScalarKernels() {
  static const KernelSet set = MakeScalarKernels();
  return set;
}

std::vector<KernelSet> AvailableKernels() { return BuildAvailable(); }

KernelSet& MutableActiveKernels() {
  static KernelSet set = [] {
    KernelSet s = ChooseActive();
    // No interleaved layout until the selection measures one faster (select.cpp, decision 0012).
    for (InterleavedKernel& k : s.interleaved) k = InterleavedKernel{};
    LS_LOG_DEBUG("quant: using %s kernels", s.name);
    return s;
  }();
  return set;
}

const KernelSet& ActiveKernels() { return MutableActiveKernels(); }

void VecDotTileGeneric(VecDotFn dot, const void* w, size_t w_stride, int64_t n_w, const void* x,
                       size_t x_stride, int64_t n_x, int64_t n, float* out, int64_t out_stride) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < n_x; ++i) {
    for (int64_t r = 0; r < n_w; ++r) out[i * out_stride + r] = dot(wb + r * w_stride, xb + i * x_stride, n);
  }
}

bool IsSupported(TensorType type) {
  const int f = FormatIndex(type);
  return f >= 0 && f != kQ8_K;
}

bool CanQuantize(TensorType type) { return FormatIndex(type) >= 0; }

TensorType VecDotType(TensorType weight_type) {
  switch (weight_type) {
    case TensorType::kQ4_0:
    case TensorType::kQ8_0: return TensorType::kQ8_0;
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K: return TensorType::kQ8_K;
    default: return weight_type;  // F32, F16, BF16 dot against their own encoding
  }
}

void DequantizeRow(TensorType type, const void* src, float* dst, int64_t n) {
  int f;
  Kernels(type, &f).dequantize[f](src, dst, n);
}

void QuantizeRow(TensorType type, const float* src, void* dst, int64_t n) {
  int f;
  Kernels(type, &f).quantize[f](src, dst, n);
}

float VecDot(TensorType weight_type, const void* w, const void* x, int64_t n) {
  int f;
  const KernelSet& k = Kernels(weight_type, &f);
  LS_CHECK(k.vec_dot[f] != nullptr);
  return k.vec_dot[f](w, x, n);
}

void VecDotTile(TensorType weight_type, const void* w, size_t w_stride, int64_t n_w, const void* x,
                size_t x_stride, int64_t n_x, int64_t n, float* out, int64_t out_stride) {
  int f;
  const KernelSet& k = Kernels(weight_type, &f);
  LS_CHECK(k.vec_dot[f] != nullptr);
  const VecDotTileFn tile = n_x == 1 ? k.gemv[f] : k.vec_dot_tile[f];  // null: the generic loop
  if (tile) {
    tile(w, w_stride, n_w, x, x_stride, n_x, n, out, out_stride);
  } else {
    VecDotTileGeneric(k.vec_dot[f], w, w_stride, n_w, x, x_stride, n_x, n, out, out_stride);
  }
}

namespace ref {

void DequantizeRow(TensorType type, const void* src, float* dst, int64_t n) {
  const int f = FormatIndex(type);
  LS_CHECK(f >= 0);
  ScalarKernels().dequantize[f](src, dst, n);
}

void QuantizeRow(TensorType type, const float* src, void* dst, int64_t n) {
  const int f = FormatIndex(type);
  LS_CHECK(f >= 0);
  ScalarKernels().quantize[f](src, dst, n);
}

float VecDot(TensorType weight_type, const void* w, const void* x, int64_t n) {
  const int f = FormatIndex(weight_type);
  LS_CHECK(f >= 0 && ScalarKernels().vec_dot[f] != nullptr);
  return ScalarKernels().vec_dot[f](w, x, n);
}

}  // namespace ref
}  // namespace lazyslot::quant
