// qwen3moe (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B): qwen3's attention (per-head q/k norms, NEOX RoPE) with a
// mixture-of-experts FFN in every layer: a router picks expert_used_count of expert_count SwiGLU experts per
// token, their softmax weights renormalised to sum to 1 (norm_topk_prob), and sums their outputs.
#include <string>

#include "gguf/keys.h"
#include "model/arch.h"
#include "model/bind.h"
#include "model/forward.h"

namespace lazyslot {
namespace {

// Router widths beyond this are not a file we could have been given on purpose (Qwen3 MoE uses 128).
constexpr uint32_t kMaxExperts = 1 << 12;

Status ReadQwen3MoeHParams(const gguf::File& f, HParams* hp) {
  namespace keys = gguf::keys;
  const std::string count_key = keys::ArchKey(hp->arch, keys::kExpertCount);
  const std::string used_key = keys::ArchKey(hp->arch, keys::kExpertUsedCount);
  const std::string ff_key = keys::ArchKey(hp->arch, keys::kExpertFeedForwardLength);
  LS_ASSIGN_OR_RETURN(uint32_t n_expert, f.GetU32(count_key));
  LS_ASSIGN_OR_RETURN(uint32_t n_used, f.GetU32(used_key));
  LS_ASSIGN_OR_RETURN(uint32_t n_ff_exp, f.GetU32(ff_key));
  if (n_expert == 0 || n_expert > kMaxExperts) {
    return Corrupt("model: " + f.path() + ": " + count_key + " is " + std::to_string(n_expert) +
                   ", expected 1.." + std::to_string(kMaxExperts));
  }
  if (n_used == 0 || n_used > n_expert) {
    return Corrupt("model: " + f.path() + ": " + used_key + " is " + std::to_string(n_used) +
                   ", expected 1..expert_count (" + std::to_string(n_expert) + ")");
  }
  if (n_ff_exp == 0 || n_ff_exp > (1u << 20)) {
    return Corrupt("model: " + f.path() + ": " + ff_key + " is " + std::to_string(n_ff_exp));
  }
  hp->n_expert = static_cast<int32_t>(n_expert);
  hp->n_expert_used = static_cast<int32_t>(n_used);
  hp->n_ff_exp = static_cast<int32_t>(n_ff_exp);
  return Status::Ok();
}

Status BindQwen3MoeLayer(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  LS_ASSIGN_OR_RETURN(l->attn_norm, BindVector(f, tn::Blk(il, tn::kAttnNorm), hp.n_embd, false));
  LS_RETURN_IF_ERROR(BindAttention(f, hp, il, l));
  LS_RETURN_IF_ERROR(BindQkNorms(f, hp, il, l));
  LS_ASSIGN_OR_RETURN(l->ffn_norm, BindVector(f, tn::Blk(il, tn::kFfnNorm), hp.n_embd, false));
  return BindMoeFfn(f, hp, il, l);
}

// qwen3's attention, then the experts:
//   x += attention(x);  h = RmsNorm(x) * ffn_norm                             [n, n_embd]
//   p = softmax(h . W_router);  E = the n_expert_used largest p;  w = p[E] / sum(p[E])   [n, n_expert]
//   x += sum over e in E of w_e * W_down[e] . (silu(W_gate[e] . h) * (W_up[e] . h))
void Qwen3MoeLayer(Forward& f, int il, const Batch& b) {
  Qwen3Attention(f, il, b);
  f.FfnMoe(il);
  f.AddResidual();
}

}  // namespace

const ArchSpec& Qwen3MoeArch() {
  static const ArchSpec spec{
      .name = "qwen3moe",
      .rope_style = RopeStyle::kNeox,
      .q_width_is_n_embd = false,
      .read_hparams = ReadQwen3MoeHParams,
      .bind_layer = BindQwen3MoeLayer,
      .layer = Qwen3MoeLayer,
  };
  return spec;
}

}  // namespace lazyslot
