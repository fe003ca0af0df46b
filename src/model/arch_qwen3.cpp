// qwen3: NEOX RoPE, per-head RMS norms of q and k (attn_q_norm/attn_k_norm, [head_dim]) applied before RoPE,
// head_dim from key_length (may exceed n_embd / n_head), no biases, usually a tied output.
#include "model/arch.h"

namespace lazyslot {

const ArchSpec& Qwen3Arch() {
  static const ArchSpec spec{
      .name = "qwen3",
      .rope_style = RopeStyle::kNeox,
      .qk_norm = true,
      .q_width_is_n_embd = false,
  };
  return spec;
}

}  // namespace lazyslot
