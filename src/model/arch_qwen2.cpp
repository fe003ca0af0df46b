// qwen2: NEOX RoPE (rotate halves), biases on q/k/v, attn_q is [n_embd, n_embd], optional output.bias,
// separate output.weight (or tied when absent).
#include "model/arch.h"

namespace lazyslot {

const ArchSpec& Qwen2Arch() {
  static const ArchSpec spec{
      .name = "qwen2",
      .rope_style = RopeStyle::kNeox,
      .qk_norm = false,
      .q_width_is_n_embd = true,
  };
  return spec;
}

}  // namespace lazyslot
