// What distinguishes the supported architectures, and the GGUF tensor/key names in one table.
// Optional tensors (q/k/v/output/FFN biases, output.weight, rope_freqs) are bound whenever a file has them.
// Each architecture lives in its own file (arch_llama.cpp, arch_qwen2.cpp, arch_qwen3.cpp, arch_bert.cpp) and
// fills an ArchSpec. The decoders share one forward pass (forward.cpp) that reads only these flags; an
// encoder (bert) differs in structure and has its own pass (encoder.cpp) and layer function.
#pragma once

#include <string>

#include "ops/elementwise.h"

namespace lazyslot {

struct ArchSpec {
  const char* name;         // general.architecture
  RopeStyle rope_style;     // llama: adjacent pairs; qwen: NEOX halves
  bool qk_norm;             // per-head RMS norm of q and k before RoPE (qwen3)
  bool q_width_is_n_embd;   // qwen2 requires attn_q to be [n_embd, n_embd]
  // bert: a post-norm encoder with learned positions and bidirectional attention; it keeps no KV and only
  // embeds (or ranks), model/encoder.cpp.
  bool encoder = false;
};

const ArchSpec& LlamaArch();
const ArchSpec& Qwen2Arch();
const ArchSpec& Qwen3Arch();
const ArchSpec& BertArch();
// nullptr for an architecture we do not implement.
const ArchSpec* FindArch(const std::string& name);

// GGUF tensor names (FORMATS.md section 3), verbatim. `Blk(il, kAttnQ)` -> "blk.3.attn_q.weight".
namespace tn {
inline constexpr const char* kTokenEmbd = "token_embd.weight";
inline constexpr const char* kOutputNorm = "output_norm.weight";
inline constexpr const char* kOutput = "output.weight";
inline constexpr const char* kOutputBias = "output.bias";
inline constexpr const char* kRopeFreqs = "rope_freqs.weight";
inline constexpr const char* kAttnNorm = "attn_norm.weight";
inline constexpr const char* kAttnQ = "attn_q.weight";
inline constexpr const char* kAttnK = "attn_k.weight";
inline constexpr const char* kAttnV = "attn_v.weight";
inline constexpr const char* kAttnQBias = "attn_q.bias";
inline constexpr const char* kAttnKBias = "attn_k.bias";
inline constexpr const char* kAttnVBias = "attn_v.bias";
inline constexpr const char* kAttnQkv = "attn_qkv.weight";
inline constexpr const char* kAttnOutput = "attn_output.weight";
inline constexpr const char* kAttnOutputBias = "attn_output.bias";
inline constexpr const char* kAttnQNorm = "attn_q_norm.weight";
inline constexpr const char* kAttnKNorm = "attn_k_norm.weight";
inline constexpr const char* kFfnNorm = "ffn_norm.weight";
inline constexpr const char* kFfnGate = "ffn_gate.weight";
inline constexpr const char* kFfnUp = "ffn_up.weight";
inline constexpr const char* kFfnDown = "ffn_down.weight";
inline constexpr const char* kFfnGateBias = "ffn_gate.bias";
inline constexpr const char* kFfnUpBias = "ffn_up.bias";
inline constexpr const char* kFfnDownBias = "ffn_down.bias";
// bert: input embeddings and their norm, post-norms (LayerNorm with bias), and the classifier head.
inline constexpr const char* kPositionEmbd = "position_embd.weight";
inline constexpr const char* kTokenTypes = "token_types.weight";
inline constexpr const char* kTokenEmbdNorm = "token_embd_norm.weight";
inline constexpr const char* kTokenEmbdNormBias = "token_embd_norm.bias";
inline constexpr const char* kAttnOutputNorm = "attn_output_norm.weight";
inline constexpr const char* kAttnOutputNormBias = "attn_output_norm.bias";
inline constexpr const char* kLayerOutputNorm = "layer_output_norm.weight";
inline constexpr const char* kLayerOutputNormBias = "layer_output_norm.bias";
inline constexpr const char* kCls = "cls.weight";
inline constexpr const char* kClsBias = "cls.bias";
inline constexpr const char* kClsOutput = "cls.output.weight";
inline constexpr const char* kClsOutputBias = "cls.output.bias";
inline std::string Blk(int il, const char* suffix) { return "blk." + std::to_string(il) + "." + suffix; }
}  // namespace tn

}  // namespace lazyslot
