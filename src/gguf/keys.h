// The GGUF metadata key names lazyslot reads or writes, in one table (as llama.cpp keeps LLM_KV_NAMES):
// general.* and tokenizer.* by their full names, and an architecture's hyper-parameter keys as suffixes
// that ArchKey joins to the architecture's name ("qwen3" + "." + "block_count"). Outside this folder no code
// spells a key name: it names one of these constants. Key meanings: ../shared/FORMATS.md.
#pragma once

#include <string>
#include <string_view>

namespace lazyslot::gguf::keys {

// general.*
inline constexpr char kGeneralArchitecture[] = "general.architecture";
inline constexpr char kGeneralName[] = "general.name";
inline constexpr char kGeneralFileType[] = "general.file_type";
inline constexpr char kGeneralQuantizationVersion[] = "general.quantization_version";
inline constexpr char kGeneralAlignment[] = "general.alignment";

// tokenizer.*: every tokenizer key starts with kTokenizerPrefix (synth copies them all from another file).
inline constexpr char kTokenizerPrefix[] = "tokenizer.";
inline constexpr char kTokenizerModel[] = "tokenizer.ggml.model";  // llama (SPM), gpt2 (BPE), bert (WPM)
inline constexpr char kTokenizerPre[] = "tokenizer.ggml.pre";      // the BPE pre-tokenizer
inline constexpr char kTokenizerTokens[] = "tokenizer.ggml.tokens";
inline constexpr char kTokenizerScores[] = "tokenizer.ggml.scores";
inline constexpr char kTokenizerTokenType[] = "tokenizer.ggml.token_type";
inline constexpr char kTokenizerMerges[] = "tokenizer.ggml.merges";
inline constexpr char kTokenizerBosId[] = "tokenizer.ggml.bos_token_id";
inline constexpr char kTokenizerEosId[] = "tokenizer.ggml.eos_token_id";
inline constexpr char kTokenizerEotId[] = "tokenizer.ggml.eot_token_id";
inline constexpr char kTokenizerEomId[] = "tokenizer.ggml.eom_token_id";
inline constexpr char kTokenizerUnkId[] = "tokenizer.ggml.unknown_token_id";
inline constexpr char kTokenizerSepId[] = "tokenizer.ggml.seperator_token_id";  // llama.cpp's spelling
inline constexpr char kTokenizerPadId[] = "tokenizer.ggml.padding_token_id";
inline constexpr char kTokenizerClsId[] = "tokenizer.ggml.cls_token_id";
inline constexpr char kTokenizerMaskId[] = "tokenizer.ggml.mask_token_id";
inline constexpr char kTokenizerAddBos[] = "tokenizer.ggml.add_bos_token";
inline constexpr char kTokenizerAddEos[] = "tokenizer.ggml.add_eos_token";
inline constexpr char kTokenizerAddSep[] = "tokenizer.ggml.add_sep_token";
inline constexpr char kTokenizerAddSpacePrefix[] = "tokenizer.ggml.add_space_prefix";
inline constexpr char kTokenizerNormalizerLowercase[] = "tokenizer.ggml.normalizer.lowercase";         // WPM
inline constexpr char kTokenizerNormalizerStripAccents[] = "tokenizer.ggml.normalizer.strip_accents";  // WPM
// Fill-in-the-middle tokens.
inline constexpr char kTokenizerFimPreId[] = "tokenizer.ggml.fim_pre_token_id";
inline constexpr char kTokenizerFimSufId[] = "tokenizer.ggml.fim_suf_token_id";
inline constexpr char kTokenizerFimMidId[] = "tokenizer.ggml.fim_mid_token_id";
inline constexpr char kTokenizerFimPadId[] = "tokenizer.ggml.fim_pad_token_id";
inline constexpr char kTokenizerFimRepId[] = "tokenizer.ggml.fim_rep_token_id";
inline constexpr char kTokenizerFimSepId[] = "tokenizer.ggml.fim_sep_token_id";
// The chat template (Jinja); named variants are tokenizer.chat_template.<name> (e.g. "rerank").
inline constexpr char kTokenizerChatTemplate[] = "tokenizer.chat_template";

// tokenizer.chat_template for an empty name, else tokenizer.chat_template.<name>.
inline std::string TokenizerChatTemplate(std::string_view name = {}) {
  std::string key = kTokenizerChatTemplate;
  if (!name.empty()) key.append(".").append(name);
  return key;
}

// lazyslot's own: the seed a synthesized model's weights were drawn with (`lazyslot synth`).
inline constexpr char kLazyslotSynthSeed[] = "lazyslot.synth.seed";

// Per architecture: the suffix after "<general.architecture>." (ArchKey joins them).
inline constexpr char kContextLength[] = "context_length";
inline constexpr char kEmbeddingLength[] = "embedding_length";
inline constexpr char kBlockCount[] = "block_count";
inline constexpr char kFeedForwardLength[] = "feed_forward_length";  // a u32, or one per layer
inline constexpr char kPoolingType[] = "pooling_type";
inline constexpr char kFinalLogitSoftcapping[] = "final_logit_softcapping";
inline constexpr char kAttentionHeadCount[] = "attention.head_count";       // a u32, or one per layer
inline constexpr char kAttentionHeadCountKv[] = "attention.head_count_kv";  // a u32, or one per layer
inline constexpr char kAttentionKeyLength[] = "attention.key_length";
inline constexpr char kAttentionValueLength[] = "attention.value_length";
inline constexpr char kAttentionLayerNormEpsilon[] = "attention.layer_norm_epsilon";
inline constexpr char kAttentionLayerNormRmsEpsilon[] = "attention.layer_norm_rms_epsilon";
inline constexpr char kAttentionCausal[] = "attention.causal";
inline constexpr char kAttentionSlidingWindow[] = "attention.sliding_window";
// A period (one global layer in each) or one bool per layer (true: local).
inline constexpr char kAttentionSlidingWindowPattern[] = "attention.sliding_window_pattern";
inline constexpr char kRopeDimensionCount[] = "rope.dimension_count";
inline constexpr char kRopeFreqBase[] = "rope.freq_base";
inline constexpr char kRopeFreqBaseSwa[] = "rope.freq_base_swa";  // the sliding-window layers' base
inline constexpr char kRopeScaleLinear[] = "rope.scale_linear";   // older files' linear factor
inline constexpr char kRopeScalingType[] = "rope.scaling.type";
inline constexpr char kRopeScalingFactor[] = "rope.scaling.factor";
inline constexpr char kRopeScalingAttnFactor[] = "rope.scaling.attn_factor";
inline constexpr char kRopeScalingOriginalContextLength[] = "rope.scaling.original_context_length";
inline constexpr char kExpertCount[] = "expert_count";
inline constexpr char kExpertUsedCount[] = "expert_used_count";
inline constexpr char kExpertFeedForwardLength[] = "expert_feed_forward_length";

// "<arch>.<suffix>": ArchKey("qwen3", kBlockCount) is "qwen3.block_count".
inline std::string ArchKey(std::string_view arch, std::string_view suffix) {
  std::string key;
  key.reserve(arch.size() + 1 + suffix.size());
  key.append(arch).append(".").append(suffix);
  return key;
}

}  // namespace lazyslot::gguf::keys
