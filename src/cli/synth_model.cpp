// Random-weight models for `lazyslot synth`: presets, shape checks, metadata keys and lazily generated
// tensors. Tensors are produced row by row inside the writer's fill callback, so only one tensor is in memory
// at a time.
#include "cli/synth_model.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "gguf/keys.h"
#include "quant/quant.h"

namespace lazyslot::cli {

namespace keys = gguf::keys;

namespace {

// splitmix64: a tiny, well-mixed generator; each tensor gets its own stream from (seed, name).
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1) with 24 bits of resolution.
  float Symmetric() { return static_cast<float>(Next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }

 private:
  uint64_t s_;
};

uint64_t HashName(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

enum class Init { kMatrix, kNorm, kBias };

// Fill callback for one tensor: rows of ne[0] values, encoded as `type`.
gguf::Writer::FillFn MakeFill(const std::string& name, TensorType type, int64_t row_len, int64_t n_rows,
                              Init init, uint64_t seed) {
  return [=](uint8_t* dst, size_t nbytes) -> Status {
    SplitMix rng(SplitMix(seed ^ HashName(name)).Next());
    const size_t row_bytes = RowBytes(type, row_len);
    if (row_bytes * static_cast<size_t>(n_rows) != nbytes)
      return Internal("synth: size mismatch for " + name);
    const float scale = 1.0f / std::sqrt(static_cast<float>(row_len));
    std::vector<float> row(static_cast<size_t>(row_len));
    for (int64_t r = 0; r < n_rows; ++r) {
      for (float& x : row) {
        const float u = rng.Symmetric();
        x = init == Init::kMatrix ? u * scale : init == Init::kNorm ? 1.0f + 0.05f * u : 0.02f * u;
      }
      uint8_t* out = dst + static_cast<size_t>(r) * row_bytes;
      if (type == TensorType::kF32) {
        std::memcpy(out, row.data(), row_bytes);
      } else {
        quant::QuantizeRow(type, row.data(), out, row_len);
      }
    }
    return Status::Ok();
  };
}

struct TensorPlan {
  std::string name;
  int64_t ne0;
  int64_t ne1;  // 0 = one-dimensional
  bool weight;  // a matrix stored as the chosen type (else F32: a norm, a bias, a router)
  Init init;
  int64_t ne2 = 0;  // experts of a 3-D tensor; 0 = none
};

// bert (arch_bert.cpp): learned positions and token types (kept F32, as llama.cpp's quantizer keeps them),
// LayerNorms with biases, biases on every projection, no gate, no output norm.
std::vector<TensorPlan> PlanBertTensors(const SynthShape& s) {
  const int64_t q_dim = s.n_head * s.head_dim;
  std::vector<TensorPlan> p;
  p.push_back({"token_embd.weight", s.n_embd, s.n_vocab, true, Init::kMatrix});
  p.push_back({"token_types.weight", s.n_embd, 2, false, Init::kMatrix});
  p.push_back({"position_embd.weight", s.n_embd, s.n_ctx, false, Init::kMatrix});
  p.push_back({"token_embd_norm.weight", s.n_embd, 0, false, Init::kNorm});
  p.push_back({"token_embd_norm.bias", s.n_embd, 0, false, Init::kBias});
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    for (const char* m : {"attn_q", "attn_k", "attn_v"}) {
      p.push_back({b + m + ".weight", s.n_embd, q_dim, true, Init::kMatrix});
      p.push_back({b + m + ".bias", q_dim, 0, false, Init::kBias});
    }
    p.push_back({b + "attn_output.weight", q_dim, s.n_embd, true, Init::kMatrix});
    p.push_back({b + "attn_output.bias", s.n_embd, 0, false, Init::kBias});
    p.push_back({b + "attn_output_norm.weight", s.n_embd, 0, false, Init::kNorm});
    p.push_back({b + "attn_output_norm.bias", s.n_embd, 0, false, Init::kBias});
    p.push_back({b + "ffn_up.weight", s.n_embd, s.n_ff, true, Init::kMatrix});
    p.push_back({b + "ffn_up.bias", s.n_ff, 0, false, Init::kBias});
    p.push_back({b + "ffn_down.weight", s.n_ff, s.n_embd, true, Init::kMatrix});
    p.push_back({b + "ffn_down.bias", s.n_embd, 0, false, Init::kBias});
    p.push_back({b + "layer_output_norm.weight", s.n_embd, 0, false, Init::kNorm});
    p.push_back({b + "layer_output_norm.bias", s.n_embd, 0, false, Init::kBias});
  }
  return p;
}

// phi3 (arch_phi3.cpp): one fused attn_qkv (q, k, v rows) and one ffn_up (gate, then up rows), no q/k norms;
// LongRoPE's short and long factors (F32, [n_rot / 2]).
std::vector<TensorPlan> PlanPhi3Tensors(const SynthShape& s) {
  const int64_t qkv_rows = (s.n_head + 2 * s.n_head_kv) * s.head_dim;
  const int64_t n_rot = s.n_rot > 0 ? s.n_rot : s.head_dim;
  std::vector<TensorPlan> p;
  p.push_back({"token_embd.weight", s.n_embd, s.n_vocab, true, Init::kMatrix});
  p.push_back({"output_norm.weight", s.n_embd, 0, false, Init::kNorm});
  if (!s.tied) p.push_back({"output.weight", s.n_embd, s.n_vocab, true, Init::kMatrix});
  p.push_back({"rope_factors_short.weight", n_rot / 2, 0, false, Init::kNorm});
  p.push_back({"rope_factors_long.weight", n_rot / 2, 0, false, Init::kNorm});
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    p.push_back({b + "attn_norm.weight", s.n_embd, 0, false, Init::kNorm});
    p.push_back({b + "attn_qkv.weight", s.n_embd, qkv_rows, true, Init::kMatrix});
    p.push_back({b + "attn_output.weight", s.n_head * s.head_dim, s.n_embd, true, Init::kMatrix});
    p.push_back({b + "ffn_norm.weight", s.n_embd, 0, false, Init::kNorm});
    p.push_back({b + "ffn_up.weight", s.n_embd, 2 * s.n_ff, true, Init::kMatrix});
    p.push_back({b + "ffn_down.weight", s.n_ff, s.n_embd, true, Init::kMatrix});
  }
  return p;
}

// nomic-bert (arch_nomic_bert.cpp): no position embeddings (RoPE), one fused attn_qkv, a SwiGLU FFN, no
// biases on matrices; token types and LayerNorms (with biases) as bert.
std::vector<TensorPlan> PlanNomicBertTensors(const SynthShape& s) {
  const int64_t q_dim = s.n_head * s.head_dim;
  std::vector<TensorPlan> p;
  p.push_back({"token_embd.weight", s.n_embd, s.n_vocab, true, Init::kMatrix});
  p.push_back({"token_types.weight", s.n_embd, 2, false, Init::kMatrix});
  p.push_back({"token_embd_norm.weight", s.n_embd, 0, false, Init::kNorm});
  p.push_back({"token_embd_norm.bias", s.n_embd, 0, false, Init::kBias});
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    p.push_back({b + "attn_qkv.weight", s.n_embd, 3 * q_dim, true, Init::kMatrix});
    p.push_back({b + "attn_output.weight", q_dim, s.n_embd, true, Init::kMatrix});
    p.push_back({b + "attn_output_norm.weight", s.n_embd, 0, false, Init::kNorm});
    p.push_back({b + "attn_output_norm.bias", s.n_embd, 0, false, Init::kBias});
    p.push_back({b + "ffn_gate.weight", s.n_embd, s.n_ff, true, Init::kMatrix});
    p.push_back({b + "ffn_up.weight", s.n_embd, s.n_ff, true, Init::kMatrix});
    p.push_back({b + "ffn_down.weight", s.n_ff, s.n_embd, true, Init::kMatrix});
    p.push_back({b + "layer_output_norm.weight", s.n_embd, 0, false, Init::kNorm});
    p.push_back({b + "layer_output_norm.bias", s.n_embd, 0, false, Init::kBias});
  }
  return p;
}

std::vector<TensorPlan> PlanTensors(const SynthShape& s) {
  if (s.arch == "bert") return PlanBertTensors(s);
  if (s.arch == "nomic-bert") return PlanNomicBertTensors(s);
  if (s.arch == "phi3") return PlanPhi3Tensors(s);
  const int64_t q_dim = s.n_head * s.head_dim;
  const int64_t kv_dim = s.n_head_kv * s.head_dim;
  std::vector<TensorPlan> p;
  p.push_back({"token_embd.weight", s.n_embd, s.n_vocab, true, Init::kMatrix});
  p.push_back({"output_norm.weight", s.n_embd, 0, false, Init::kNorm});
  if (!s.tied) p.push_back({"output.weight", s.n_embd, s.n_vocab, true, Init::kMatrix});
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    p.push_back({b + "attn_norm.weight", s.n_embd, 0, false, Init::kNorm});
    p.push_back({b + "attn_q.weight", s.n_embd, q_dim, true, Init::kMatrix});
    p.push_back({b + "attn_k.weight", s.n_embd, kv_dim, true, Init::kMatrix});
    p.push_back({b + "attn_v.weight", s.n_embd, kv_dim, true, Init::kMatrix});
    if (s.arch == "qwen2") {
      p.push_back({b + "attn_q.bias", q_dim, 0, false, Init::kBias});
      p.push_back({b + "attn_k.bias", kv_dim, 0, false, Init::kBias});
      p.push_back({b + "attn_v.bias", kv_dim, 0, false, Init::kBias});
    }
    p.push_back({b + "attn_output.weight", q_dim, s.n_embd, true, Init::kMatrix});
    if (s.arch == "qwen3" || s.arch == "qwen3moe" || s.arch == "gemma3") {
      p.push_back({b + "attn_q_norm.weight", s.head_dim, 0, false, Init::kNorm});
      p.push_back({b + "attn_k_norm.weight", s.head_dim, 0, false, Init::kNorm});
    }
    if (s.arch == "gemma3") p.push_back({b + "post_attention_norm.weight", s.n_embd, 0, false, Init::kNorm});
    p.push_back({b + "ffn_norm.weight", s.n_embd, 0, false, Init::kNorm});
    if (s.arch == "qwen3moe") {  // the router stays F32, as llama-quantize keeps it
      p.push_back({b + "ffn_gate_inp.weight", s.n_embd, s.n_expert, false, Init::kMatrix});
      p.push_back({b + "ffn_gate_exps.weight", s.n_embd, s.n_ff_exp, true, Init::kMatrix, s.n_expert});
      p.push_back({b + "ffn_up_exps.weight", s.n_embd, s.n_ff_exp, true, Init::kMatrix, s.n_expert});
      p.push_back({b + "ffn_down_exps.weight", s.n_ff_exp, s.n_embd, true, Init::kMatrix, s.n_expert});
      continue;
    }
    p.push_back({b + "ffn_gate.weight", s.n_embd, s.n_ff, true, Init::kMatrix});
    p.push_back({b + "ffn_up.weight", s.n_embd, s.n_ff, true, Init::kMatrix});
    p.push_back({b + "ffn_down.weight", s.n_ff, s.n_embd, true, Init::kMatrix});
    if (s.arch == "gemma3") p.push_back({b + "post_ffw_norm.weight", s.n_embd, 0, false, Init::kNorm});
  }
  return p;
}

}  // namespace

bool ApplyPreset(const std::string& preset, SynthShape* s) {
  if (preset == "tiny") {
    s->name = "tiny";
    s->n_embd = 256;
    s->n_layer = 4;
    s->n_head = 4;
    s->n_head_kv = 2;
    s->head_dim = 64;
    s->n_ff = 768;
    s->n_vocab = 2048;
    s->n_ctx = 4096;
    s->rope_base = 1e6f;
    s->eps = 1e-6f;
    s->tied = true;
    return true;
  }
  if (preset == "bge-small") {  // BAAI/bge-small-en-v1.5's shape (bert, cls pooling)
    s->arch = "bert";
    s->name = "bge-small";
    s->n_embd = 384;
    s->n_layer = 12;
    s->n_head = 12;
    s->n_head_kv = 12;
    s->head_dim = 32;
    s->n_ff = 1536;
    s->n_vocab = 30522;
    s->n_ctx = 512;
    s->eps = 1e-12f;
    s->tied = true;
    return true;
  }
  if (preset == "nomic-embed") {  // nomic-ai/nomic-embed-text-v1.5's shape (nomic-bert, mean pooling)
    s->arch = "nomic-bert";
    s->name = "nomic-embed";
    s->n_embd = 768;
    s->n_layer = 12;
    s->n_head = 12;
    s->n_head_kv = 12;
    s->head_dim = 64;
    s->n_ff = 3072;
    s->n_vocab = 30522;
    s->n_ctx = 2048;
    s->rope_base = 1000.0f;
    s->eps = 1e-12f;
    s->tied = true;
    return true;
  }
  if (preset == "gemma3-1b") {  // google/gemma-3-1b-it's shape: 26 layers, five local (window 512) per global
    s->arch = "gemma3";
    s->name = "gemma3-1b";
    s->n_embd = 1152;
    s->n_layer = 26;
    s->n_head = 4;
    s->n_head_kv = 1;
    s->head_dim = 256;
    s->n_ff = 6912;
    s->n_vocab = 262144;
    s->n_ctx = 32768;
    s->rope_base = 1e6f;
    s->eps = 1e-6f;
    s->tied = true;
    s->sliding_window = 512;
    return true;
  }
  if (preset == "qwen3moe-a3b") {  // Qwen3-30B-A3B's per-layer shape, 12 of its 48 layers (~4 GiB at Q4_K)
    s->arch = "qwen3moe";
    s->name = "qwen3moe-a3b";
    s->n_embd = 2048;
    s->n_layer = 12;
    s->n_head = 32;
    s->n_head_kv = 4;
    s->head_dim = 128;
    s->n_ff = 6144;
    s->n_vocab = 151936;
    s->n_ctx = 40960;
    s->rope_base = 1e6f;
    s->eps = 1e-6f;
    s->tied = false;
    s->n_expert = 128;
    s->n_expert_used = 8;
    s->n_ff_exp = 768;
    return true;
  }
  if (preset == "phi4-mini") {  // microsoft/Phi-4-mini-instruct's shape: rotary on 3/4 of each head
    s->arch = "phi3";
    s->name = "phi4-mini";
    s->n_embd = 3072;
    s->n_layer = 32;
    s->n_head = 24;
    s->n_head_kv = 8;
    s->head_dim = 128;
    s->n_ff = 8192;
    s->n_vocab = 200064;
    s->n_ctx = 131072;
    s->rope_base = 10000.0f;
    s->eps = 1e-5f;
    s->tied = true;
    s->n_rot = 96;
    s->n_ctx_orig = 4096;
    return true;
  }
  if (preset == "qwen3-0.6b") {
    s->name = "qwen3-0.6b";
    s->n_embd = 1024;
    s->n_layer = 28;
    s->n_head = 16;
    s->n_head_kv = 8;
    s->head_dim = 128;
    s->n_ff = 3072;
    s->n_vocab = 151936;
    s->n_ctx = 40960;
    s->rope_base = 1e6f;
    s->eps = 1e-6f;
    s->tied = true;
    return true;
  }
  return false;
}

Status ValidateSynth(const SynthShape& s, TensorType type) {
  if (s.arch != "llama" && s.arch != "qwen2" && s.arch != "qwen3" && s.arch != "qwen3moe" && s.arch != "phi3" &&
      s.arch != "gemma3" && !IsEncoderArch(s.arch)) {
    return InvalidArgument("--arch must be llama, qwen2, qwen3, qwen3moe, phi3, gemma3, bert or nomic-bert, got '" +
                           s.arch + "'");
  }
  if (s.n_rot < 0 || s.n_rot % 2 != 0 || s.n_rot > s.head_dim || (s.n_rot > 0 && s.arch == "bert")) {
    return InvalidArgument("--n-rot must be even and at most --head-dim (" + std::to_string(s.head_dim) +
                           "), and a bert has no RoPE; got " + std::to_string(s.n_rot));
  }
  if (s.arch == "phi3" && (s.n_ctx_orig < 1 || s.n_ctx_orig > s.n_ctx)) {
    return InvalidArgument("phi3 needs an original context in 1..n_ctx (" + std::to_string(s.n_ctx) + ")");
  }
  if (s.arch == "qwen3moe" && (s.n_expert < 1 || s.n_expert > 4096 || s.n_expert_used < 1 ||
                               s.n_expert_used > s.n_expert || s.n_ff_exp < 1 || s.n_ff_exp > (1 << 20))) {
    return InvalidArgument("qwen3moe needs --n-expert in 1..4096, --n-expert-used in 1..n_expert and --n-ff-exp "
                           "in 1..1048576 (got " + std::to_string(s.n_expert) + ", " +
                           std::to_string(s.n_expert_used) + ", " + std::to_string(s.n_ff_exp) + ")");
  }
  if (s.arch == "gemma3" && (s.sliding_window <= 0 || s.sliding_window > s.n_ctx)) {
    return InvalidArgument("gemma3 needs --sliding-window in 1..n_ctx (" + std::to_string(s.n_ctx) + "), got " +
                           std::to_string(s.sliding_window));
  }
  if (IsEncoderArch(s.arch) && s.n_head_kv != s.n_head) {
    return InvalidArgument(s.arch + " has as many kv heads as heads (--n-head-kv " + std::to_string(s.n_head_kv) +
                           ", --n-head " + std::to_string(s.n_head) + ")");
  }
  const std::pair<const char*, int64_t> sizes[] = {{"--n-embd", s.n_embd},     {"--n-layer", s.n_layer},
                                                   {"--n-head", s.n_head},     {"--n-head-kv", s.n_head_kv},
                                                   {"--head-dim", s.head_dim}, {"--n-ff", s.n_ff},
                                                   {"--n-vocab", s.n_vocab},   {"--n-ctx", s.n_ctx}};
  for (const auto& [flag, v] : sizes) {
    if (v <= 0 || v > (int64_t{1} << 24)) {
      return InvalidArgument(std::string(flag) + " must be in 1..16777216, got " + std::to_string(v));
    }
  }
  if (s.n_head % s.n_head_kv != 0) {
    return InvalidArgument("--n-head (" + std::to_string(s.n_head) + ") must be a multiple of --n-head-kv (" +
                           std::to_string(s.n_head_kv) + ")");
  }
  if (s.head_dim % 2 != 0) return InvalidArgument("--head-dim must be even (RoPE rotates pairs)");
  if ((s.arch == "qwen2" || IsEncoderArch(s.arch)) && s.n_head * s.head_dim != s.n_embd) {
    return InvalidArgument(s.arch + " needs n_head * head_dim == n_embd (" + std::to_string(s.n_head) +
                           " * " + std::to_string(s.head_dim) + " != " + std::to_string(s.n_embd) + ")");
  }
  if (!(s.eps > 0) || !(s.rope_base > 0)) return InvalidArgument("--eps and --rope-base must be positive");
  if (type != TensorType::kF32 && !quant::CanQuantize(type)) {
    return Unimplemented(std::string("--type ") + TypeName(type) + ": this build cannot quantize to it");
  }
  const int64_t block = Traits(type).block_size;
  const std::pair<const char*, int64_t> rows[] = {
      {"n_embd (token_embd, attn_q/k/v, ffn_gate/up rows)", s.n_embd},
      {"n_head * head_dim (attn_output rows)", s.n_head * s.head_dim},
      {s.arch == "qwen3moe" ? "n_ff_exp (ffn_down_exps rows)" : "n_ff (ffn_down rows)",
       s.arch == "qwen3moe" ? s.n_ff_exp : s.n_ff}};
  for (const auto& [what, n] : rows) {
    if (n % block != 0) {
      return InvalidArgument(std::string("--type ") + TypeName(type) +
                             " needs row lengths that are multiples of " + std::to_string(block) + ", but " +
                             what + " is " + std::to_string(n));
    }
  }
  return Status::Ok();
}

Result<uint32_t> FileTypeFor(TensorType type) {
  // llama_ftype values; the pure K-quant files are labelled with the closest "_S"/plain variant.
  switch (type) {
    case TensorType::kF32:
      return 0u;
    case TensorType::kF16:
      return 1u;
    case TensorType::kQ4_0:
      return 2u;
    case TensorType::kQ8_0:
      return 7u;
    case TensorType::kQ4_K:
      return 14u;
    case TensorType::kQ5_K:
      return 16u;
    case TensorType::kQ6_K:
      return 18u;
    case TensorType::kBF16:
      return 32u;
    default:
      return Unimplemented(std::string("--type ") + TypeName(type) + " is not supported by synth");
  }
}

Status AddSynthModel(const SynthShape& s, TensorType type, uint64_t seed, gguf::Writer* w) {
  LS_RETURN_IF_ERROR(ValidateSynth(s, type));
  LS_ASSIGN_OR_RETURN(uint32_t file_type, FileTypeFor(type));
  const std::string a = s.arch;
  auto Key = [&a](const char* suffix) { return keys::ArchKey(a, suffix); };
  w->SetString(keys::kGeneralArchitecture, a);
  // llama.cpp gives Phi-3's special tokens their attributes when general.name contains "phi3", and fails on a
  // vocabulary without them: a synth phi3 is named "p3".
  w->SetString(keys::kGeneralName,
               "lazyslot-synth-" + (s.arch == "phi3" ? std::string("p3") : s.arch) + "-" + s.name);
  w->SetU32(keys::kGeneralFileType, file_type);
  if (Traits(type).block_size > 1) w->SetU32(keys::kGeneralQuantizationVersion, 2);
  w->SetU32(Key(keys::kContextLength), static_cast<uint32_t>(s.n_ctx));
  w->SetU32(Key(keys::kEmbeddingLength), static_cast<uint32_t>(s.n_embd));
  w->SetU32(Key(keys::kBlockCount), static_cast<uint32_t>(s.n_layer));
  w->SetU32(Key(keys::kFeedForwardLength), static_cast<uint32_t>(s.n_ff));
  w->SetU32(Key(keys::kAttentionHeadCount), static_cast<uint32_t>(s.n_head));
  w->SetU32(Key(keys::kAttentionHeadCountKv), static_cast<uint32_t>(s.n_head_kv));
  w->SetU32(Key(keys::kAttentionKeyLength), static_cast<uint32_t>(s.head_dim));
  w->SetU32(Key(keys::kAttentionValueLength), static_cast<uint32_t>(s.head_dim));
  if (IsEncoderArch(s.arch)) {
    w->SetF32(Key(keys::kAttentionLayerNormEpsilon), s.eps);
    w->SetBool(Key(keys::kAttentionCausal), false);
    w->SetU32(Key(keys::kPoolingType), s.arch == "bert" ? 2 : 1);  // cls as bge, mean as nomic-embed-text
  } else {
    w->SetF32(Key(keys::kAttentionLayerNormRmsEpsilon), s.eps);
    w->SetF32(Key(keys::kRopeFreqBase), s.rope_base);
    w->SetU32(Key(keys::kRopeDimensionCount), static_cast<uint32_t>(s.n_rot > 0 ? s.n_rot : s.head_dim));
  }
  if (s.arch == "nomic-bert") {  // NEOX RoPE over all of each head, as nomic-embed-text's converted files
    w->SetF32(Key(keys::kRopeFreqBase), s.rope_base);
    if (s.n_rot > 0) w->SetU32(Key(keys::kRopeDimensionCount), static_cast<uint32_t>(s.n_rot));
  }
  if (s.arch == "phi3") {  // LongRoPE: the short factors up to n_ctx_orig cells a sequence, the long ones beyond
    w->SetU32(Key(keys::kRopeScalingOriginalContextLength), static_cast<uint32_t>(s.n_ctx_orig));
    const double ratio = static_cast<double>(s.n_ctx) / static_cast<double>(s.n_ctx_orig);
    const double attn_factor =
        ratio <= 1 ? 1.0 : std::sqrt(1 + std::log(ratio) / std::log(static_cast<double>(s.n_ctx_orig)));
    w->SetF32(Key(keys::kRopeScalingAttnFactor), static_cast<float>(attn_factor));
  }
  if (s.arch == "gemma3") {  // no pattern key: llama.cpp's default period of 6, as converted Gemma 3 files
    w->SetU32(Key(keys::kAttentionSlidingWindow), static_cast<uint32_t>(s.sliding_window));
    w->SetF32(Key(keys::kRopeFreqBaseSwa), 10000.0f);
  }
  if (s.arch == "qwen3moe") {
    w->SetU32(Key(keys::kExpertCount), static_cast<uint32_t>(s.n_expert));
    w->SetU32(Key(keys::kExpertUsedCount), static_cast<uint32_t>(s.n_expert_used));
    w->SetU32(Key(keys::kExpertFeedForwardLength), static_cast<uint32_t>(s.n_ff_exp));
  }
  w->SetU64(keys::kLazyslotSynthSeed, seed);

  for (const TensorPlan& t : PlanTensors(s)) {
    const TensorType tt = t.weight ? type : TensorType::kF32;
    std::vector<int64_t> ne = {t.ne0};
    if (t.ne1 > 0) ne.push_back(t.ne1);
    if (t.ne2 > 0) ne.push_back(t.ne2);
    const int64_t n_rows = (t.ne1 > 0 ? t.ne1 : 1) * (t.ne2 > 0 ? t.ne2 : 1);
    LS_RETURN_IF_ERROR(
        w->AddTensor(t.name, tt, std::move(ne), MakeFill(t.name, tt, t.ne0, n_rows, t.init, seed)));
  }
  return Status::Ok();
}

}  // namespace lazyslot::cli
