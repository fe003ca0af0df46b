// gemma3: input embeddings scaled by sqrt(n_embd); per-head q/k RMS norms before RoPE (NEOX); q scaled by
// 1/sqrt(head_dim) after RoPE and attention unscaled; "sandwich" norms on each sublayer's output before its
// residual add; a GELU-gated FFN; a tied output. Most layers are local: a query sees only the last
// `sliding_window` keys, and those layers rotate with their own base (rope.freq_base_swa, 10,000 when absent)
// and no scaling; one layer in each `sliding_window_pattern` (6 when absent, as llama.cpp) is global.
// Norm weights are stored as the final multipliers (the converter has added Gemma's +1).
#include <cmath>
#include <string>

#include "gguf/keys.h"
#include "model/arch.h"
#include "model/bind.h"
#include "model/forward.h"

namespace lazyslot {
namespace {

// llama.cpp's period when a file names none: five local layers, then a global one.
constexpr uint32_t kDefaultPatternPeriod = 6;

Status ReadGemma3HParams(const gguf::File& f, HParams* hp) {
  const std::string window_key = gguf::keys::ArchKey(hp->arch, gguf::keys::kAttentionSlidingWindow);
  if (!f.Find(window_key)) {
    return NotFound("model: " + f.path() + ": gemma3 needs the key '" + window_key + "' (its local layers' window)");
  }
  LS_ASSIGN_OR_RETURN(uint32_t window, f.GetU32(window_key));
  if (window == 0 || window > static_cast<uint32_t>(hp->n_ctx_train)) {
    return Corrupt("model: " + f.path() + ": '" + window_key + "' is " + std::to_string(window) +
                   ", expected 1 .. context_length (" + std::to_string(hp->n_ctx_train) + ")");
  }
  // The pattern: a period p (layer il is local unless il % p == p - 1), or one bool per layer (true: local).
  const std::string pattern_key = gguf::keys::ArchKey(hp->arch, gguf::keys::kAttentionSlidingWindowPattern);
  const uint32_t n_layer = static_cast<uint32_t>(hp->n_layer);
  std::vector<bool> local(n_layer);
  if (const gguf::Value* v = f.Find(pattern_key); v && v->type == gguf::ValueType::kArray) {
    LS_ASSIGN_OR_RETURN(const gguf::Value* arr, f.GetArray(pattern_key, gguf::ValueType::kBool));
    if (arr->array_size() != n_layer) {
      return Corrupt("model: " + f.path() + ": '" + pattern_key + "' has " + std::to_string(arr->array_size()) +
                     " entries, expected one per layer (" + std::to_string(n_layer) + ")");
    }
    for (uint32_t il = 0; il < n_layer; ++il) local[il] = arr->uints[il] != 0;
  } else {
    LS_ASSIGN_OR_RETURN(uint32_t period, f.GetU32Or(pattern_key, kDefaultPatternPeriod));
    if (period == 0 || period > n_layer) {
      return Corrupt("model: " + f.path() + ": '" + pattern_key + "' is a period of " + std::to_string(period) +
                     " layers, expected 1 .. block_count (" + std::to_string(n_layer) + ")");
    }
    for (uint32_t il = 0; il < n_layer; ++il) local[il] = il % period < period - 1;
  }
  hp->layer_window.assign(n_layer, 0);
  for (uint32_t il = 0; il < n_layer; ++il) hp->layer_window[il] = local[il] ? static_cast<int32_t>(window) : 0;
  LS_ASSIGN_OR_RETURN(hp->rope_freq_base_swa,
                      f.GetF32Or(gguf::keys::ArchKey(hp->arch, gguf::keys::kRopeFreqBaseSwa), 10000.0f));
  hp->rope_freq_scale_swa = 1.0f;
  const std::string softcap_key = gguf::keys::ArchKey(hp->arch, gguf::keys::kFinalLogitSoftcapping);
  LS_ASSIGN_OR_RETURN(hp->final_logit_softcap, f.GetF32Or(softcap_key, 0.0f));
  if (!(hp->final_logit_softcap >= 0.0f) || !std::isfinite(hp->final_logit_softcap)) {
    return Corrupt("model: " + f.path() + ": '" + softcap_key + "' must be a finite value >= 0");
  }
  hp->embd_scale = std::sqrt(static_cast<float>(hp->n_embd));
  // Gemma 3 27B (62 layers) scales q by n_embd / n_head rather than head_dim, as llama.cpp does.
  const int32_t q_dim = hp->n_layer == 62 ? hp->n_embd / hp->n_head : hp->head_dim;
  hp->attn_q_scale = 1.0f / std::sqrt(static_cast<float>(q_dim));
  return Status::Ok();
}

Status BindGemma3Layer(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  auto name = [il](const char* s) { return tn::Blk(il, s); };
  LS_ASSIGN_OR_RETURN(l->attn_norm, BindVector(f, name(tn::kAttnNorm), hp.n_embd, false));
  LS_RETURN_IF_ERROR(BindAttention(f, hp, il, l));
  LS_RETURN_IF_ERROR(BindQkNorms(f, hp, il, l));
  LS_ASSIGN_OR_RETURN(l->attn_post_norm, BindVector(f, name(tn::kAttnPostNorm), hp.n_embd, false));
  LS_ASSIGN_OR_RETURN(l->ffn_norm, BindVector(f, name(tn::kFfnNorm), hp.n_embd, false));
  LS_RETURN_IF_ERROR(BindGatedFfn(f, hp, il, l));
  LS_ASSIGN_OR_RETURN(l->ffn_post_norm, BindVector(f, name(tn::kFfnPostNorm), hp.n_embd, false));
  return Status::Ok();
}

// One layer over x [n, n_embd] (w = the layer's window, 0 on a global layer):
//   h = RmsNorm(x) * attn_norm;  q, k, v = h . Wq, Wk, Wv               [n, n_q], [n, n_kv] x2
//   q, k = RmsNorm per head * q_norm, k_norm;  RoPE (local or global base);  k, v -> cells
//   q *= 1/sqrt(head_dim);  attn = softmax(q.K^T) . V over keys p - w + 1 .. p (or 0 .. p)
//   x += RmsNorm(attn . Wo) * post_attention_norm
//   h = RmsNorm(x) * ffn_norm;  x += RmsNorm(W_down . (gelu(W_gate . h) * (W_up . h))) * post_ffw_norm
void Gemma3Layer(Forward& f, int il, const Batch& b) {
  const HParams& hp = f.model().hparams();
  const LayerWeights& L = f.model().layer(il);
  const int32_t window = hp.window(il);
  const RopeParams rope = window > 0 ? f.Rope(hp.rope_freq_base_swa, hp.rope_freq_scale_swa)
                                     : f.Rope(hp.rope_freq_base, hp.rope_freq_scale);
  f.NormInput(L.attn_norm);
  f.ProjectQkv(L);
  f.RopeAndStore(il, b, rope, &L);
  f.ScaleQ(hp.attn_q_scale);
  f.Attend(il, b, 1.0f, window);
  f.ProjectOut(L);
  f.AddNormedResidual(L.attn_post_norm);
  f.NormInput(L.ffn_norm);
  f.FfnGeGlu(L);
  f.AddNormedResidual(L.ffn_post_norm);
}

}  // namespace

const ArchSpec& Gemma3Arch() {
  static const ArchSpec spec{
      .name = "gemma3",
      .rope_style = RopeStyle::kNeox,
      .q_width_is_n_embd = false,
      .read_hparams = ReadGemma3HParams,
      .bind_layer = BindGemma3Layer,
      .layer = Gemma3Layer,
  };
  return spec;
}

}  // namespace lazyslot
