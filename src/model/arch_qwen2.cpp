// qwen2: llama's layer with NEOX RoPE (rotate halves) and biases on q/k/v; attn_q is [n_embd, n_embd],
// optional output.bias, separate output.weight (or tied when absent).
#include "model/arch.h"

namespace lazyslot {

const ArchSpec& Qwen2Arch() {
  static const ArchSpec spec{
      .name = "qwen2",
      .rope_style = RopeStyle::kNeox,
      .q_width_is_n_embd = true,
      .bind_layer = BindLlamaLayer,
      .layer = LlamaLayer,
  };
  return spec;
}

}  // namespace lazyslot
