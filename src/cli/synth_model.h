// Random-weight model description for `lazyslot synth`: the shape, the GGUF metadata and the lazily generated
// tensors (names and shapes of FORMATS.md section 3), deterministic for a seed.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "gguf/tensor_type.h"
#include "gguf/writer.h"

namespace lazyslot::cli {

struct SynthShape {
  std::string arch = "qwen3";  // llama | qwen2 | qwen3 | qwen3moe | phi3 | gemma3 | bert | nomic-bert
  std::string name = "tiny";   // preset name, for general.name
  int64_t n_embd = 256;
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_head_kv = 2;
  int64_t head_dim = 64;
  int64_t n_ff = 768;
  int64_t n_vocab = 2048;
  int64_t n_ctx = 4096;
  float rope_base = 1e6f;
  float eps = 1e-6f;
  bool tied = true;
  int64_t sliding_window = 0;  // gemma3: the local layers' window (five local layers, then a global one)
  // qwen3moe: experts per layer, those a token uses, and one expert's FFN width.
  int64_t n_expert = 8;
  int64_t n_expert_used = 2;
  int64_t n_ff_exp = 256;
  // Rotated dims per head (0: all of head_dim); phi3 (partial rotary) writes LongRoPE's factors for them and
  // rope.scaling.original_context_length = n_ctx_orig.
  int64_t n_rot = 0;
  int64_t n_ctx_orig = 4096;
};

// Fills `shape` from a preset name ("tiny", "qwen3-0.6b", "gemma3-1b", "qwen3moe-a3b", "phi4-mini",
// "bge-small": a bert, "nomic-embed": a nomic-bert); false if unknown.
bool ApplyPreset(const std::string& preset, SynthShape* shape);

// bert and nomic-bert: encoders (LayerNorm, no output head, bidirectional).
inline bool IsEncoderArch(const std::string& arch) { return arch == "bert" || arch == "nomic-bert"; }

// Checks the shape for `type` (positive sizes, GQA divisibility, row lengths multiple of the block size).
Status ValidateSynth(const SynthShape& shape, TensorType type);

// llama.cpp's general.file_type for an all-`type` model.
Result<uint32_t> FileTypeFor(TensorType type);

// Adds the architecture metadata and every weight tensor (lazy: generated and quantized during Write).
// Values are uniform(-1, 1) / sqrt(row length) for matrices, 1 +- 0.05 for norms, from splitmix64(seed,
// name).
Status AddSynthModel(const SynthShape& shape, TensorType type, uint64_t seed, gguf::Writer* w);

}  // namespace lazyslot::cli
