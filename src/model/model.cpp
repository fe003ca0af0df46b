// Model loading: hyper-parameters (FORMATS.md section 3) and weight binding with shape checks.
#include "model/model.h"

#include <chrono>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/vm.h"
#include "gguf/keys.h"
#include "model/bind.h"
#include "ops/attention.h"
#include "ops/thread_pool.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace lazyslot {

namespace keys = gguf::keys;

namespace {

std::string Shape(const gguf::TensorInfo& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
  return s + "]";
}

// Finds a tensor and checks its shape [ne0, ne1, ne2] (ne1 = 1 for vectors, ne2 = 1 but for experts' 3-D
// tensors). Missing -> NotFound unless optional.
Result<const gguf::TensorInfo*> FindShaped(const gguf::File& f, const std::string& name, int64_t ne0,
                                           int64_t ne1, bool optional, int64_t ne2 = 1) {
  const gguf::TensorInfo* t = f.FindTensor(name);
  if (!t) {
    if (optional) return static_cast<const gguf::TensorInfo*>(nullptr);
    return NotFound("model: " + f.path() + ": missing tensor '" + name + "'");
  }
  if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != ne2 || t->ne[3] != 1) {
    return Corrupt("model: " + f.path() + ": tensor '" + name + "' has shape " + Shape(*t) + ", expected [" +
                   std::to_string(ne0) + (ne1 != 1 || ne2 != 1 ? ", " + std::to_string(ne1) : "") +
                   (ne2 != 1 ? ", " + std::to_string(ne2) : "") + "]");
  }
  if (!quant::IsSupported(t->type)) {
    return Unimplemented("model: " + f.path() + ": tensor '" + name + "' has type " + TypeName(t->type) +
                         ", which this engine cannot compute with");
  }
  return t;
}

// A view of tensor t's rows as a matrix [n_in -> n_out], from its first row.
WeightView MatrixView(const gguf::File& f, const gguf::TensorInfo& t, int64_t n_in, int64_t n_out) {
  WeightView w;
  w.type = t.type;
  w.data = f.TensorData(t);
  w.n_in = n_in;
  w.n_out = n_out;
  w.row_bytes = t.row_bytes();
  return w;
}

}  // namespace

Result<WeightView> BindMatrix(const gguf::File& f, const std::string& name, int64_t n_in, int64_t n_out) {
  LS_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, FindShaped(f, name, n_in, n_out, false));
  return MatrixView(f, *t, n_in, n_out);
}

Result<std::vector<WeightView>> BindExpertMatrices(const gguf::File& f, const std::string& name, int64_t n_in,
                                                   int64_t n_out, int64_t n_expert) {
  LS_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, FindShaped(f, name, n_in, n_out, false, n_expert));
  const WeightView first = MatrixView(f, *t, n_in, n_out);
  std::vector<WeightView> experts(n_expert, first);
  for (int64_t e = 0; e < n_expert; ++e) experts[e].data = first.row(e * n_out);
  return experts;
}

Result<std::vector<WeightView>> BindFusedRows(const gguf::File& f, const std::string& name, int64_t n_in,
                                              const std::vector<int64_t>& parts) {
  int64_t n_out = 0;
  for (int64_t p : parts) n_out += p;
  LS_ASSIGN_OR_RETURN(WeightView whole, BindMatrix(f, name, n_in, n_out));
  std::vector<WeightView> views;
  int64_t row = 0;
  for (int64_t p : parts) {
    WeightView v = whole;
    v.data = whole.row(row);
    v.n_out = p;
    views.push_back(v);
    row += p;
  }
  return views;
}

Status BindFusedQkv(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  LS_ASSIGN_OR_RETURN(auto qkv, BindFusedRows(f, tn::Blk(il, tn::kAttnQkv), hp.n_embd,
                                              {hp.n_embd_q(), hp.n_embd_kv(), hp.n_embd_kv()}));
  l->wq = qkv[0];
  l->wk = qkv[1];
  l->wv = qkv[2];
  return Status::Ok();
}

Result<std::vector<float>> BindVector(const gguf::File& f, const std::string& name, int64_t n, bool optional) {
  LS_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, FindShaped(f, name, n, 1, optional));
  std::vector<float> v;
  if (t) {
    v.resize(n);
    quant::DequantizeRow(t->type, f.TensorData(*t), v.data(), n);
  }
  return v;
}

Status BindAttention(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
  auto name = [il](const char* s) { return tn::Blk(il, s); };
  if (f.FindTensor(name(tn::kAttnQkv))) {
    return Unimplemented("model: " + f.path() + ": a fused '" + name(tn::kAttnQkv) + "' is not supported for " +
                         hp.arch);
  }
  LS_ASSIGN_OR_RETURN(l->wq, BindMatrix(f, name(tn::kAttnQ), n_embd, n_q));
  LS_ASSIGN_OR_RETURN(l->wk, BindMatrix(f, name(tn::kAttnK), n_embd, n_kv));
  LS_ASSIGN_OR_RETURN(l->wv, BindMatrix(f, name(tn::kAttnV), n_embd, n_kv));
  LS_ASSIGN_OR_RETURN(l->bq, BindVector(f, name(tn::kAttnQBias), n_q, true));
  LS_ASSIGN_OR_RETURN(l->bk, BindVector(f, name(tn::kAttnKBias), n_kv, true));
  LS_ASSIGN_OR_RETURN(l->bv, BindVector(f, name(tn::kAttnVBias), n_kv, true));
  LS_ASSIGN_OR_RETURN(l->wo, BindMatrix(f, name(tn::kAttnOutput), n_q, n_embd));
  LS_ASSIGN_OR_RETURN(l->bo, BindVector(f, name(tn::kAttnOutputBias), n_embd, true));
  return Status::Ok();
}

Status BindQkNorms(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  LS_ASSIGN_OR_RETURN(l->q_norm, BindVector(f, tn::Blk(il, tn::kAttnQNorm), hp.head_dim, false));
  LS_ASSIGN_OR_RETURN(l->k_norm, BindVector(f, tn::Blk(il, tn::kAttnKNorm), hp.head_dim, false));
  return Status::Ok();
}

Status BindPostNorms(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  auto name = [il](const char* s) { return tn::Blk(il, s); };
  LS_ASSIGN_OR_RETURN(l->attn_out_norm, BindVector(f, name(tn::kAttnOutputNorm), hp.n_embd, false));
  LS_ASSIGN_OR_RETURN(l->attn_out_norm_b, BindVector(f, name(tn::kAttnOutputNormBias), hp.n_embd, false));
  LS_ASSIGN_OR_RETURN(l->out_norm, BindVector(f, name(tn::kLayerOutputNorm), hp.n_embd, false));
  LS_ASSIGN_OR_RETURN(l->out_norm_b, BindVector(f, name(tn::kLayerOutputNormBias), hp.n_embd, false));
  return Status::Ok();
}

Status BindGatedFfn(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff;
  auto name = [il](const char* s) { return tn::Blk(il, s); };
  LS_ASSIGN_OR_RETURN(l->w_gate, BindMatrix(f, name(tn::kFfnGate), n_embd, n_ff));
  LS_ASSIGN_OR_RETURN(l->w_up, BindMatrix(f, name(tn::kFfnUp), n_embd, n_ff));
  LS_ASSIGN_OR_RETURN(l->w_down, BindMatrix(f, name(tn::kFfnDown), n_ff, n_embd));
  LS_ASSIGN_OR_RETURN(l->b_gate, BindVector(f, name(tn::kFfnGateBias), n_ff, true));
  LS_ASSIGN_OR_RETURN(l->b_up, BindVector(f, name(tn::kFfnUpBias), n_ff, true));
  LS_ASSIGN_OR_RETURN(l->b_down, BindVector(f, name(tn::kFfnDownBias), n_embd, true));
  return Status::Ok();
}

Status BindMoeFfn(const gguf::File& f, const HParams& hp, int il, LayerWeights* l) {
  const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff_exp, n_expert = hp.n_expert;
  auto name = [il](const char* s) { return tn::Blk(il, s); };
  LS_ASSIGN_OR_RETURN(l->router, BindMatrix(f, name(tn::kFfnGateInp), n_embd, n_expert));
  LS_ASSIGN_OR_RETURN(l->gate_exps, BindExpertMatrices(f, name(tn::kFfnGateExps), n_embd, n_ff, n_expert));
  LS_ASSIGN_OR_RETURN(l->up_exps, BindExpertMatrices(f, name(tn::kFfnUpExps), n_embd, n_ff, n_expert));
  LS_ASSIGN_OR_RETURN(l->down_exps, BindExpertMatrices(f, name(tn::kFfnDownExps), n_ff, n_embd, n_expert));
  return Status::Ok();
}

namespace {

// Every architecture this engine implements (arch_*.cpp).
std::vector<const ArchSpec*> AllArchs() {
  return {&LlamaArch(), &Qwen2Arch(), &Qwen3Arch(), &Qwen3MoeArch(), &Phi3Arch(), &Gemma3Arch(), &BertArch(),
          &NomicBertArch()};
}

}  // namespace

const ArchSpec* FindArch(const std::string& name) {
  for (const ArchSpec* s : AllArchs()) {
    if (name == s->name) return s;
  }
  return nullptr;
}

std::string SupportedArchNames() {
  std::string names;
  for (const ArchSpec* s : AllArchs()) names += (names.empty() ? "" : ", ") + std::string(s->name);
  return names;
}

const char* PoolingName(PoolingType p) {
  switch (p) {
    case PoolingType::kNone: return "none";
    case PoolingType::kMean: return "mean";
    case PoolingType::kCls: return "cls";
    case PoolingType::kLast: return "last";
    case PoolingType::kRank: return "rank";
  }
  return "none";
}

bool ParsePooling(const std::string& s, PoolingType* out) {
  for (PoolingType p : {PoolingType::kNone, PoolingType::kMean, PoolingType::kCls, PoolingType::kLast}) {
    if (s == PoolingName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

Result<std::unique_ptr<Model>> Model::Load(const std::string& path, const LoadOptions& options) {
  std::unique_ptr<Model> m(new Model());
  LS_ASSIGN_OR_RETURN(m->file_, gguf::File::Open(path));
  LS_RETURN_IF_ERROR(m->ReadHParams());
  LS_RETURN_IF_ERROR(m->arch_->encoder ? m->BindEncoderWeights() : m->BindWeights());
  LS_RETURN_IF_ERROR(m->BindClassifier());
  // Only a usable model is copied; the copy keeps every address, so the bound views stay valid.
  if (options.huge_pages) m->CopyWeightsToHugePages();
  // Kernels by measurement on this model's matrices (the logits' and every layer's); the first model of a
  // weight format chooses its kernels for the process (quant/select.cpp, < 100 ms), later ones reuse them.
  std::vector<quant::MatrixShape> shapes;
  auto add = [&shapes](const WeightView& w) {
    if (w.data) shapes.push_back({w.type, w.n_in, w.n_out});
  };
  add(m->output_);
  add(m->classifier_.cls);
  add(m->classifier_.out);
  for (const LayerWeights& l : m->layers_) {
    for (const WeightView* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.router}) add(*w);
    // An expert's own shapes (every expert of a tensor has them).
    for (const auto* experts : {&l.gate_exps, &l.up_exps, &l.down_exps}) {
      if (!experts->empty()) add(experts->front());
    }
  }
  const std::string kernels =
      quant::SelectKernels(shapes, options.threads > 0 ? options.threads : ThreadPool::DefaultThreads());
  LS_LOG_INFO("%s; %s", kernels.c_str(), AttentionKernelChoice().c_str());
  m->InterleaveWeights();
  return m;
}

void Model::InterleaveWeights() {
  if (!file_->on_huge_pages()) return;
  const quant::KernelSet& ks = quant::ActiveKernels();
  struct Matrix {
    size_t offset;  // from data_begin()
    int64_t n_out, n_in;
    quant::InterleaveFn interleave;
  };
  std::vector<Matrix> matrices;
  std::vector<WeightView*> views;
  double bytes = 0;
  auto add = [&](WeightView& w) {
    const int f = quant::FormatIndex(w.type);
    if (!w.data || f < 0 || !ks.interleaved[f].interleave || w.n_out % quant::kInterleaveRows != 0) return;
    views.push_back(&w);
    for (const Matrix& m : matrices) {
      if (file_->data_begin() + m.offset == w.data) return;  // a tied output: the token embedding's bytes
    }
    matrices.push_back(
        {static_cast<size_t>(w.data - file_->data_begin()), w.n_out, w.n_in, ks.interleaved[f].interleave});
    bytes += static_cast<double>(w.row_bytes) * static_cast<double>(w.n_out);
  };
  // The token embedding too: GetRow reads its rows through the layout.
  add(token_embd_);
  add(output_);
  for (LayerWeights& l : layers_) {
    for (WeightView* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) add(*w);
  }
  if (matrices.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = file_->SetCopyTransform([matrices](uint8_t* data) {
    for (const Matrix& m : matrices) m.interleave(data + m.offset, m.n_out, m.n_in);
  });
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    LS_LOG_WARN("weights: kept as GGUF rows (%s)", st.message().c_str());
    return;
  }
  for (WeightView* w : views) w->interleaved = true;
  interleaved_ = std::move(views);
  LS_LOG_INFO("weights: %zu matrices (%.1f MiB) interleaved for the %s kernels in %.0f ms", matrices.size(),
              bytes / (1 << 20), ks.name, ms);
}

Status Model::RestoreWeights() {
  const Status st = file_->RestoreAfterRelease();
  if (st.ok() || interleaved_.empty()) return st;
  // The file mapping serves the GGUF rows: the matrices go back to the plain kernels, and a later copy
  // keeps those rows too.
  (void)file_->SetCopyTransform(nullptr);
  for (WeightView* w : interleaved_) w->interleaved = false;
  interleaved_.clear();
  return st;
}

void Model::CopyWeightsToHugePages() {
  // A mixture-of-experts model's experts (its 3-D tensors) stay on the file mapping: an expert no token has
  // chosen costs no memory, and a chosen one pages in from the page cache (docs/decisions/0018).
  std::vector<const gguf::TensorInfo*> experts;
  uint64_t expert_bytes = 0;
  for (const gguf::TensorInfo& t : file_->tensors()) {
    if (t.ne[2] > 1) {
      experts.push_back(&t);
      expert_bytes += t.nbytes;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = file_->CopyToHugePages(experts);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const double mib = static_cast<double>(file_->file_size() - expert_bytes) / (1 << 20);
  if (!st.ok()) {
    LS_LOG_WARN("weights: %.1f MiB stay a file mapping on 4 KiB pages (%s)", mib, st.message().c_str());
    return;
  }
  Result<uint64_t> huge = vm::MappingFieldBytes(file_->data_begin(), "AnonHugePages");
  LS_LOG_INFO("weights: %.1f MiB copied onto transparent huge pages in %.0f ms (%.1f MiB on 2 MiB pages)%s", mib,
              ms, huge.ok() ? static_cast<double>(*huge) / (1 << 20) : 0.0,
              experts.empty() ? ""
                              : (", " + std::to_string(experts.size()) + " expert tensors (" +
                                 std::to_string(expert_bytes >> 20) + " MiB) stay on the file mapping")
                                    .c_str());
}

Result<std::string> Model::ChatTemplate(std::string_view name) const {
  return file_->GetString(keys::TokenizerChatTemplate(name));
}

Status Model::ReadHParams() {
  const gguf::File& f = *file_;
  LS_ASSIGN_OR_RETURN(hp_.arch, f.GetString(keys::kGeneralArchitecture));
  arch_ = FindArch(hp_.arch);
  if (!arch_) {
    return Unimplemented("model: " + f.path() + ": unknown architecture '" + hp_.arch +
                         "' (supported: " + SupportedArchNames() + ")");
  }
  auto Key = [&](const char* suffix) { return keys::ArchKey(hp_.arch, suffix); };
  LS_ASSIGN_OR_RETURN(uint32_t n_ctx, f.GetU32(Key(keys::kContextLength)));
  LS_ASSIGN_OR_RETURN(uint32_t n_embd, f.GetU32(Key(keys::kEmbeddingLength)));
  LS_ASSIGN_OR_RETURN(uint32_t n_layer, f.GetU32(Key(keys::kBlockCount)));
  if (n_embd == 0 || n_layer == 0 || n_layer > 4096 || n_embd > (1u << 20)) {
    return Corrupt("model: " + f.path() + ": implausible embedding_length " + std::to_string(n_embd) +
                   " or block_count " + std::to_string(n_layer));
  }
  LS_ASSIGN_OR_RETURN(auto n_ff, f.GetU32PerLayer(Key(keys::kFeedForwardLength), n_layer));
  LS_ASSIGN_OR_RETURN(auto n_head, f.GetU32PerLayer(Key(keys::kAttentionHeadCount), n_layer));
  LS_ASSIGN_OR_RETURN(auto n_head_kv,
                      f.GetU32PerLayerOr(Key(keys::kAttentionHeadCountKv), n_layer, n_head[0]));
  for (uint32_t il = 1; il < n_layer; ++il) {
    if (n_ff[il] != n_ff[0] || n_head[il] != n_head[0] || n_head_kv[il] != n_head_kv[0]) {
      return Unimplemented("model: " + f.path() + ": per-layer differing head counts or n_ff are not supported");
    }
  }
  if (n_head[0] == 0 || n_head_kv[0] == 0 || n_head[0] % n_head_kv[0] != 0) {
    return Corrupt("model: " + f.path() + ": head_count " + std::to_string(n_head[0]) +
                   " must be a positive multiple of head_count_kv " + std::to_string(n_head_kv[0]));
  }
  LS_ASSIGN_OR_RETURN(uint32_t key_len, f.GetU32Or(Key(keys::kAttentionKeyLength), n_embd / n_head[0]));
  LS_ASSIGN_OR_RETURN(uint32_t val_len, f.GetU32Or(Key(keys::kAttentionValueLength), key_len));
  if (key_len != val_len || key_len == 0 || key_len % 2 != 0) {
    return Unimplemented("model: " + f.path() + ": key_length " + std::to_string(key_len) + " and value_length " +
                         std::to_string(val_len) + " must be equal and even");
  }
  if (arch_->encoder) {
    LS_ASSIGN_OR_RETURN(hp_.norm_eps, f.GetF32(Key(keys::kAttentionLayerNormEpsilon)));
  } else {
    LS_ASSIGN_OR_RETURN(hp_.rms_eps, f.GetF32(Key(keys::kAttentionLayerNormRmsEpsilon)));
  }
  LS_ASSIGN_OR_RETURN(hp_.causal, f.GetBoolOr(Key(keys::kAttentionCausal), !arch_->encoder));
  if (hp_.causal == arch_->encoder) {
    return Unimplemented("model: " + f.path() + ": " + hp_.arch + " with " + keys::kAttentionCausal + " = " +
                         (hp_.causal ? "true" : "false") + " is not supported");
  }
  LS_ASSIGN_OR_RETURN(hp_.rope_freq_base, f.GetF32Or(Key(keys::kRopeFreqBase), 10000.0f));
  LS_ASSIGN_OR_RETURN(uint32_t n_rot, f.GetU32Or(Key(keys::kRopeDimensionCount), key_len));
  if (n_rot == 0 || n_rot % 2 != 0 || n_rot > key_len) {  // the first n_rot dims of a head rotate, in pairs
    return Corrupt("model: " + f.path() + ": " + Key(keys::kRopeDimensionCount) + " is " +
                   std::to_string(n_rot) + ", expected an even count in 2..head_dim (" +
                   std::to_string(key_len) + ")");
  }
  // Linear RoPE scaling: freq_scale = 1 / factor.
  float factor = 0;
  if (f.Find(Key(keys::kRopeScalingFactor))) {
    LS_ASSIGN_OR_RETURN(factor, f.GetF32(Key(keys::kRopeScalingFactor)));
  } else if (f.Find(Key(keys::kRopeScaleLinear))) {
    LS_ASSIGN_OR_RETURN(factor, f.GetF32(Key(keys::kRopeScaleLinear)));
  }
  if (f.Find(Key(keys::kRopeScalingType))) {
    LS_ASSIGN_OR_RETURN(std::string type, f.GetString(Key(keys::kRopeScalingType)));
    if (type != "linear" && type != "none") {
      return Unimplemented("model: " + f.path() + ": " + std::string(keys::kRopeScalingType) + " '" + type +
                           "' is not supported");
    }
    if (type == "none") factor = 0;
  }
  hp_.rope_freq_scale = factor > 0 ? 1.0f / factor : 1.0f;
  LS_ASSIGN_OR_RETURN(uint32_t pooling, f.GetU32Or(Key(keys::kPoolingType), 0));
  hp_.pooling = pooling <= 4 ? static_cast<PoolingType>(pooling) : PoolingType::kNone;

  const gguf::TensorInfo* embd = f.FindTensor(tn::kTokenEmbd);
  if (!embd) return NotFound("model: " + f.path() + ": missing tensor '" + std::string(tn::kTokenEmbd) + "'");
  hp_.n_ctx_train = static_cast<int32_t>(n_ctx);
  hp_.n_embd = static_cast<int32_t>(n_embd);
  hp_.n_layer = static_cast<int32_t>(n_layer);
  hp_.n_head = static_cast<int32_t>(n_head[0]);
  hp_.n_head_kv = static_cast<int32_t>(n_head_kv[0]);
  hp_.head_dim = static_cast<int32_t>(key_len);
  hp_.n_ff = static_cast<int32_t>(n_ff[0]);
  hp_.n_rot = static_cast<int32_t>(n_rot);
  hp_.n_vocab = static_cast<int32_t>(embd->ne[1]);
  if (arch_->q_width_is_n_embd && hp_.n_embd_q() != hp_.n_embd) {
    return Corrupt("model: " + f.path() + ": " + hp_.arch + " needs n_head * head_dim == n_embd");
  }
  if (arch_->read_hparams) LS_RETURN_IF_ERROR(arch_->read_hparams(f, &hp_));
  return Status::Ok();
}

Status Model::BindWeights() {
  const gguf::File& f = *file_;
  const int64_t n_embd = hp_.n_embd;
  LS_ASSIGN_OR_RETURN(token_embd_, BindMatrix(f, tn::kTokenEmbd, n_embd, hp_.n_vocab));
  LS_ASSIGN_OR_RETURN(output_norm_, BindVector(f, tn::kOutputNorm, n_embd, false));
  tied_ = f.FindTensor(tn::kOutput) == nullptr;
  if (tied_) {
    output_ = token_embd_;
  } else {
    LS_ASSIGN_OR_RETURN(output_, BindMatrix(f, tn::kOutput, n_embd, hp_.n_vocab));
  }
  LS_ASSIGN_OR_RETURN(output_bias_, BindVector(f, tn::kOutputBias, hp_.n_vocab, true));
  LS_ASSIGN_OR_RETURN(rope_freqs_, BindVector(f, tn::kRopeFreqs, hp_.n_rot / 2, true));
  if (!arch_->long_rope && (f.FindTensor(tn::kRopeFactorsShort) || f.FindTensor(tn::kRopeFactorsLong))) {
    return Unimplemented("model: " + f.path() + ": LongRoPE factors ('" + tn::kRopeFactorsShort + "') are not " +
                         "supported for " + hp_.arch);
  }
  LS_ASSIGN_OR_RETURN(rope_factors_short_, BindVector(f, tn::kRopeFactorsShort, hp_.n_rot / 2, true));
  LS_ASSIGN_OR_RETURN(rope_factors_long_, BindVector(f, tn::kRopeFactorsLong, hp_.n_rot / 2, true));
  if (rope_factors_short_.empty() != rope_factors_long_.empty()) {
    return Corrupt("model: " + f.path() + ": '" + tn::kRopeFactorsShort + "' and '" + tn::kRopeFactorsLong +
                   "' come together");
  }

  layers_.resize(hp_.n_layer);
  for (int il = 0; il < hp_.n_layer; ++il) LS_RETURN_IF_ERROR(arch_->bind_layer(f, hp_, il, &layers_[il]));
  return Status::Ok();
}

Status Model::BindEncoderWeights() {
  const gguf::File& f = *file_;
  const int64_t n_embd = hp_.n_embd;
  LS_ASSIGN_OR_RETURN(token_embd_, BindMatrix(f, tn::kTokenEmbd, n_embd, hp_.n_vocab));
  if (arch_->learned_positions) {
    LS_ASSIGN_OR_RETURN(position_embd_, BindMatrix(f, tn::kPositionEmbd, n_embd, hp_.n_ctx_train));
  } else if (f.FindTensor(tn::kPositionEmbd)) {
    return Unimplemented("model: " + f.path() + ": '" + tn::kPositionEmbd + "' in a " + hp_.arch +
                         " file (its positions are rotary)");
  }
  if (const gguf::TensorInfo* t = f.FindTensor(tn::kTokenTypes)) {
    if (t->ne[1] < 1) return Corrupt("model: " + f.path() + ": tensor 'token_types.weight' has no rows");
    LS_ASSIGN_OR_RETURN(token_types_, BindMatrix(f, tn::kTokenTypes, n_embd, t->ne[1]));
  }
  LS_ASSIGN_OR_RETURN(token_embd_norm_, BindVector(f, tn::kTokenEmbdNorm, n_embd, false));
  LS_ASSIGN_OR_RETURN(token_embd_norm_b_, BindVector(f, tn::kTokenEmbdNormBias, n_embd, false));
  layers_.resize(hp_.n_layer);
  for (int il = 0; il < hp_.n_layer; ++il) LS_RETURN_IF_ERROR(arch_->bind_layer(f, hp_, il, &layers_[il]));
  return Status::Ok();
}

Status Model::BindClassifier() {
  const gguf::File& f = *file_;
  const gguf::TensorInfo* out = f.FindTensor(tn::kClsOutput);
  if (!out) {
    if (f.FindTensor(tn::kCls)) {
      return Unimplemented("model: " + f.path() +
                           ": a classifier head 'cls.weight' without 'cls.output.weight'");
    }
    return Status::Ok();
  }
  const int64_t n_embd = hp_.n_embd;
  if (out->ne[1] < 1 || out->ne[1] > (1 << 16)) {
    return Corrupt("model: " + f.path() + ": tensor 'cls.output.weight' has shape " + Shape(*out));
  }
  hp_.n_cls_out = static_cast<int32_t>(out->ne[1]);
  if (f.FindTensor(tn::kCls)) {
    LS_ASSIGN_OR_RETURN(classifier_.cls, BindMatrix(f, tn::kCls, n_embd, n_embd));
    LS_ASSIGN_OR_RETURN(classifier_.cls_b, BindVector(f, tn::kClsBias, n_embd, true));
  }
  LS_ASSIGN_OR_RETURN(classifier_.out, BindMatrix(f, tn::kClsOutput, n_embd, hp_.n_cls_out));
  LS_ASSIGN_OR_RETURN(classifier_.out_b, BindVector(f, tn::kClsOutputBias, hp_.n_cls_out, true));
  return Status::Ok();
}

uint64_t Model::weight_bytes_per_token() const {
  auto bytes = [](const WeightView& w) { return static_cast<uint64_t>(w.row_bytes) * w.n_out; };
  uint64_t total = bytes(output_);
  for (const LayerWeights& l : layers_) {
    total += bytes(l.wq) + bytes(l.wk) + bytes(l.wv) + bytes(l.wo) + bytes(l.w_gate) + bytes(l.w_up) +
             bytes(l.w_down) + bytes(l.router);
    // The experts a token is routed to: n_expert_used of them (all experts of a tensor have one size).
    for (const auto* experts : {&l.gate_exps, &l.up_exps, &l.down_exps}) {
      if (!experts->empty()) total += bytes(experts->front()) * static_cast<uint64_t>(hp_.n_expert_used);
    }
  }
  return total;
}

}  // namespace lazyslot
