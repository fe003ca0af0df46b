// A loaded model: hyper-parameters read from GGUF metadata and weights bound to tensors of the mapped file
// (never copied, except the small f32 norm/bias vectors, decoded once at load: O(n_layer * n_embd) floats).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gguf/gguf.h"
#include "model/arch.h"
#include "ops/matmul.h"

namespace lazyslot {

enum class PoolingType { kNone = 0, kMean = 1, kCls = 2, kLast = 3, kRank = 4 };
const char* PoolingName(PoolingType p);
bool ParsePooling(const std::string& s, PoolingType* out);

struct HParams {
  std::string arch;
  int32_t n_vocab = 0;
  int32_t n_ctx_train = 0;
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;  // key_length (= value_length), default n_embd / n_head
  int32_t n_ff = 0;
  float rms_eps = 1e-6f;
  float norm_eps = 1e-12f;  // LayerNorm epsilon (bert: attention.layer_norm_epsilon)
  bool causal = true;       // {arch}.attention.causal (bert: false)
  int32_t n_cls_out = 0;    // rows of the classifier head cls.output (rank pooling), 0 without one
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;
  int32_t n_rot = 0;
  PoolingType pooling = PoolingType::kNone;  // {arch}.pooling_type
  // Sliding-window attention (gemma3): per layer, the keys a query at p sees are p - window + 1 .. p;
  // 0 (or an empty vector) is a global layer that sees every earlier key. Local layers rotate with their own
  // RoPE base and scale.
  std::vector<int32_t> layer_window;  // [n_layer] or empty
  float rope_freq_base_swa = 10000.0f;
  float rope_freq_scale_swa = 1.0f;
  float embd_scale = 1.0f;           // input embeddings are multiplied by it (gemma: sqrt(n_embd))
  float attn_q_scale = 1.0f;         // gemma3: q *= it after RoPE, and attention scales by 1
  float final_logit_softcap = 0.0f;  // logits = c * tanh(logits / c) when > 0
  // LongRoPE (phi3): a slot of more than n_ctx_orig cells rotates with the long factors, else the short ones;
  // attn_factor multiplies the rotated dims' cos and sin.
  int32_t n_ctx_orig = 0;
  float rope_attn_factor = 1.0f;
  // Mixture of experts (qwen3moe): experts per layer, those each token is routed to, one expert's FFN width.
  int32_t n_expert = 0;
  int32_t n_expert_used = 0;
  int32_t n_ff_exp = 0;
  int32_t window(int il) const { return layer_window.empty() ? 0 : layer_window[il]; }
  int64_t n_embd_q() const { return int64_t{n_head} * head_dim; }
  int64_t n_embd_kv() const { return int64_t{n_head_kv} * head_dim; }
};

struct LayerWeights {
  std::vector<float> attn_norm;                // [n_embd]
  WeightView wq, wk, wv;                       // [n_embd -> n_head*hd], [n_embd -> n_head_kv*hd] x2
  std::vector<float> bq, bk, bv;               // optional biases, same widths (empty if absent)
  std::vector<float> q_norm, k_norm;           // qwen3, gemma3: [head_dim]
  std::vector<float> attn_post_norm;           // gemma3: [n_embd], on the attention's output
  std::vector<float> ffn_post_norm;            // gemma3: [n_embd], on the FFN's output
  WeightView wo;                               // [n_head*hd -> n_embd]
  std::vector<float> bo;                       // optional [n_embd]
  std::vector<float> ffn_norm;                 // [n_embd]
  WeightView w_gate, w_up;                     // [n_embd -> n_ff]
  WeightView w_down;                           // [n_ff -> n_embd]
  std::vector<float> b_gate, b_up, b_down;     // optional
  // A mixture-of-experts FFN (qwen3moe) in place of gate/up/down: the router ffn_gate_inp [n_embd -> n_expert]
  // and per expert e gate_exps[e], up_exps[e] [n_embd -> n_ff_exp] and down_exps[e] [n_ff_exp -> n_embd], the
  // slices of the 3-D tensors ffn_{gate,up,down}_exps [n_in, n_out, n_expert] viewed in place.
  WeightView router;
  std::vector<WeightView> gate_exps, up_exps, down_exps;
  // bert post-norms, LayerNorm weight + bias [n_embd]: after the attention and after the FFN residual.
  std::vector<float> attn_out_norm, attn_out_norm_b, out_norm, out_norm_b;
};

// The classifier head of a reranker (rank pooling), applied to the pooled row h [n_embd]:
// scores = out . tanh(cls . h + cls_b) + out_b, or out . h + out_b without `cls` (a converted
// BertForSequenceClassification or Qwen3-Reranker, whose out holds the "yes"/"no" rows of its lm_head).
struct ClassifierWeights {
  WeightView cls;  // optional [n_embd -> n_embd]
  std::vector<float> cls_b;
  WeightView out;  // [n_embd -> n_cls_out]
  std::vector<float> out_b;
  bool present() const { return out.data != nullptr; }
};

struct LoadOptions {
  // The threads its forwards will run on (0: ThreadPool::DefaultThreads()), which the kernel selection
  // times the generation dot with.
  int threads = 0;
  // Copy the weights onto 2 MiB transparent huge pages (gguf::File::CopyToHugePages; docs/decisions/0010).
  // false (--mmap): they stay a mapping of the file, whose pages other processes mapping it share.
  bool huge_pages = true;
};

class Model {
 public:
  // Opens and validates the GGUF, reads hyper-parameters, binds every tensor with its expected shape, and
  // chooses the kernels of its weight formats by measurement.
  static Result<std::unique_ptr<Model>> Load(const std::string& path, const LoadOptions& options = {});

  const HParams& hparams() const { return hp_; }
  const ArchSpec& arch() const { return *arch_; }
  const gguf::File& file() const { return *file_; }
  // The chat template the file carries: `tokenizer.chat_template` for an empty name, else the named one
  // (`tokenizer.chat_template.<name>`, e.g. "rerank"). NotFound when the file has none by that name.
  Result<std::string> ChatTemplate(std::string_view name = {}) const;

  const WeightView& token_embd() const { return token_embd_; }
  const std::vector<float>& output_norm() const { return output_norm_; }
  const WeightView& output() const { return output_; }  // token_embd when tied
  const std::vector<float>& output_bias() const { return output_bias_; }
  const std::vector<float>& rope_freqs() const { return rope_freqs_; }
  // LongRoPE's factors [n_rot / 2] (phi3; empty when the file has none): for slots of more cells than
  // hparams().n_ctx_orig, the long ones.
  const std::vector<float>& rope_factors(bool long_context) const {
    return long_context ? rope_factors_long_ : rope_factors_short_;
  }
  // bert inputs: learned positions [n_embd, n_ctx_train], token types [n_embd, n_types], their LayerNorm.
  const WeightView& position_embd() const { return position_embd_; }
  const WeightView& token_types() const { return token_types_; }
  const std::vector<float>& token_embd_norm() const { return token_embd_norm_; }
  const std::vector<float>& token_embd_norm_b() const { return token_embd_norm_b_; }
  const ClassifierWeights& classifier() const { return classifier_; }
  const LayerWeights& layer(int il) const { return layers_[il]; }
  bool tied_output() const { return tied_; }
  // Bytes of weights a token's forward pass reads (every layer matrix + one output matrix; of a
  // mixture-of-experts FFN, the router and the n_expert_used experts a token is routed to).
  uint64_t weight_bytes_per_token() const;
  // After file().ReleaseResidentPages(): the weights' copy again (gguf::File::RestoreAfterRelease). When it
  // does not come back, the file's GGUF rows serve and matrices kept interleaved return to the plain kernels.
  // Call it before the next forward pass, with none running.
  Status RestoreWeights();

 private:
  Model() = default;
  // Logs the outcome: a failure leaves the file mapping, which serves the same bytes more slowly.
  void CopyWeightsToHugePages();
  // Keeps the matrices whose format the active kernels interleave in that layout (docs/decisions/0012): the
  // copy on huge pages is rewritten now and by every later copy; the file mapping is never rewritten, so
  // without the copy nothing changes. Logs the outcome.
  void InterleaveWeights();
  Status ReadHParams();
  Status BindWeights();
  Status BindEncoderWeights();  // bert
  Status BindClassifier();

  std::unique_ptr<gguf::File> file_;
  const ArchSpec* arch_ = nullptr;
  HParams hp_;
  WeightView token_embd_, output_;
  std::vector<float> output_norm_, output_bias_, rope_freqs_, rope_factors_short_, rope_factors_long_;
  WeightView position_embd_, token_types_;
  std::vector<float> token_embd_norm_, token_embd_norm_b_;
  ClassifierWeights classifier_;
  bool tied_ = false;
  std::vector<LayerWeights> layers_;
  std::vector<WeightView*> interleaved_;  // the views InterleaveWeights marked
};

}  // namespace lazyslot
