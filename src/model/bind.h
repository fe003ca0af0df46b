// Shared helpers the architectures bind their tensors with (model.cpp): each finds a tensor by its GGUF name,
// checks its shape and type, and fails with a message naming the file and the tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf.h"
#include "model/model.h"

namespace lazyslot {

// A weight matrix [n_in -> n_out] (GGUF dims [n_in, n_out]) viewed in place.
Result<WeightView> BindMatrix(const gguf::File& f, const std::string& name, int64_t n_in, int64_t n_out);
// The n_expert matrices [n_in -> n_out] of a 3-D tensor (GGUF dims [n_in, n_out, n_expert]), viewed in place.
Result<std::vector<WeightView>> BindExpertMatrices(const gguf::File& f, const std::string& name, int64_t n_in,
                                                   int64_t n_out, int64_t n_expert);
// A matrix [n_in -> sum(parts)] viewed in place as consecutive row ranges, one view per part (a fused
// attn_qkv: q, k, v; phi3's ffn_up: gate, up).
Result<std::vector<WeightView>> BindFusedRows(const gguf::File& f, const std::string& name, int64_t n_in,
                                              const std::vector<int64_t>& parts);
// One fused attn_qkv [n_embd -> n_q + 2 n_kv] viewed in place as wq, wk, wv (phi3, nomic-bert).
Status BindFusedQkv(const gguf::File& f, const HParams& hp, int il, LayerWeights* l);
// Decodes a small vector tensor [n] to f32; empty when optional and absent.
Result<std::vector<float>> BindVector(const gguf::File& f, const std::string& name, int64_t n, bool optional);
// The attention projections of layer il, every architecture alike: q/k/v/output with optional biases.
Status BindAttention(const gguf::File& f, const HParams& hp, int il, LayerWeights* l);
// The per-head q/k RMS norms [head_dim] (qwen3, gemma3).
Status BindQkNorms(const gguf::File& f, const HParams& hp, int il, LayerWeights* l);
// An encoder layer's post-norms (bert, nomic-bert): attn_output_norm and layer_output_norm, LayerNorm weight
// and bias [n_embd].
Status BindPostNorms(const gguf::File& f, const HParams& hp, int il, LayerWeights* l);
// A gated FFN: gate and up [n_embd -> n_ff], down [n_ff -> n_embd], optional biases.
Status BindGatedFfn(const gguf::File& f, const HParams& hp, int il, LayerWeights* l);
// A mixture-of-experts FFN: the router ffn_gate_inp [n_embd -> n_expert] and the experts' gate and up
// [n_embd -> n_ff_exp] and down [n_ff_exp -> n_embd] (3-D tensors, one slice per expert).
Status BindMoeFfn(const gguf::File& f, const HParams& hp, int il, LayerWeights* l);

}  // namespace lazyslot
