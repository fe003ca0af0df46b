// llama: adjacent-pair RoPE (the converter already permuted Wq/Wk rows for it), optional biases on the
// attention output and FFN, optional rope_freqs factors, output.weight optional (tied to token_embd).
#include "model/arch.h"

namespace lazyslot {

const ArchSpec& LlamaArch() {
  static const ArchSpec spec{
      .name = "llama",
      .rope_style = RopeStyle::kNormal,
      .qk_norm = false,
      .q_width_is_n_embd = false,
  };
  return spec;
}

}  // namespace lazyslot
