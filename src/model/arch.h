// What distinguishes the supported architectures, and the GGUF tensor/key names in one table.
// Each architecture lives in its own file (arch_llama.cpp, arch_qwen2.cpp, arch_qwen3.cpp,
// arch_qwen3moe.cpp, arch_phi3.cpp, arch_gemma3.cpp, arch_bert.cpp, arch_nomic_bert.cpp) and fills an
// ArchSpec: its own hyper-parameter keys, how its layers' tensors bind, and its layer function, written top
// to bottom in the shared blocks of model/forward.h (a decoder) or model/encoder.h (an encoder). The passes
// (forward.cpp, encoder.cpp) only run the embedding lookup, the spec's layer function for each layer and the
// output; they never ask which architecture they run.
// How to add an architecture: docs/decisions/0016-a-layer-function-per-architecture.md.
#pragma once

#include <string>

#include "core/status.h"
#include "ops/elementwise.h"

namespace lazyslot {

namespace gguf {
class File;
}
struct HParams;
struct LayerWeights;
struct Batch;
class Forward;
class Encoder;

struct ArchSpec {
  const char* name;         // general.architecture
  RopeStyle rope_style;     // llama: adjacent pairs; qwen, gemma: NEOX halves
  bool q_width_is_n_embd;   // qwen2 requires attn_q to be [n_embd, n_embd]
  // bert, nomic-bert: a post-norm encoder with bidirectional attention; it keeps no KV and only embeds (or
  // ranks), model/encoder.cpp.
  bool encoder = false;
  // bert: position_embd [n_embd, n_ctx_train] is added to the input (nomic-bert rotates q and k instead).
  bool learned_positions = false;
  // phi3: LongRoPE's rope_factors_short / rope_factors_long tensors are bound (Model::rope_factors); in another
  // architecture's file they are refused rather than ignored.
  bool long_rope = false;
  // Keys of its own after the common ones (gemma3: the window, its layer pattern, the local RoPE base);
  // nullptr when it has none.
  Status (*read_hparams)(const gguf::File& f, HParams* hp) = nullptr;
  // Binds layer il's tensors (the common attention projections included), checking their shapes.
  Status (*bind_layer)(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) = nullptr;
  // One decoder layer over the batch, in the blocks of Forward (nullptr for an encoder).
  void (*layer)(Forward& f, int il, const Batch& b) = nullptr;
  // One encoder layer over the batch, in the blocks of Encoder (nullptr for a decoder).
  void (*encoder_layer)(Encoder& e, int il, const Batch& b) = nullptr;
};

const ArchSpec& LlamaArch();
const ArchSpec& Qwen2Arch();
const ArchSpec& Qwen3Arch();
const ArchSpec& Qwen3MoeArch();
const ArchSpec& Phi3Arch();
const ArchSpec& Gemma3Arch();
const ArchSpec& BertArch();
const ArchSpec& NomicBertArch();
// nullptr for an architecture we do not implement.
const ArchSpec* FindArch(const std::string& name);
// "llama, qwen2, ...": the names FindArch knows, for messages.
std::string SupportedArchNames();

// The llama layer, which qwen2 and phi3 share (its q/k/v biases are optional tensors every binder takes).
void LlamaLayer(Forward& f, int il, const Batch& b);
// llama's layer tensors: the attention projections, attn_norm, ffn_norm and a SwiGLU FFN.
Status BindLlamaLayer(const gguf::File& f, const HParams& hp, int il, LayerWeights* l);
// qwen3's attention sublayer, which qwen3moe shares: from x to x += attention, leaving h = the FFN's normed
// input (ffn_norm).
void Qwen3Attention(Forward& f, int il, const Batch& b);

namespace tn {
inline constexpr const char* kTokenEmbd = "token_embd.weight";
inline constexpr const char* kOutputNorm = "output_norm.weight";
inline constexpr const char* kOutput = "output.weight";
inline constexpr const char* kOutputBias = "output.bias";
inline constexpr const char* kRopeFreqs = "rope_freqs.weight";
inline constexpr const char* kRopeFactorsShort = "rope_factors_short.weight";
inline constexpr const char* kRopeFactorsLong = "rope_factors_long.weight";
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
// Mixture of experts: the router and the experts' 3-D tensors [n_in, n_out, n_expert].
inline constexpr const char* kFfnGateInp = "ffn_gate_inp.weight";
inline constexpr const char* kFfnGateExps = "ffn_gate_exps.weight";
inline constexpr const char* kFfnUpExps = "ffn_up_exps.weight";
inline constexpr const char* kFfnDownExps = "ffn_down_exps.weight";
// gemma3: norms of a sublayer's output before the residual add ("sandwich" norms).
inline constexpr const char* kAttnPostNorm = "post_attention_norm.weight";
inline constexpr const char* kFfnPostNorm = "post_ffw_norm.weight";
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
