// A synthetic byte-level BPE vocabulary (tokenizer.ggml.model = gpt2, pre = qwen2) for `lazyslot synth`:
// 256 byte symbols, merges learned from a built-in English sample, then ChatML control tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/writer.h"

namespace lazyslot::cli {

struct SynthVocab {
  std::vector<std::string> tokens;   // byte-level encoded text, as stored in tokenizer.ggml.tokens
  std::vector<int32_t> token_types;  // 1 normal, 3 control
  std::vector<std::string> merges;   // "A B", rank order; each merged token appears after its parts
  uint32_t eos_id = 0;               // <|im_end|>
  uint32_t endoftext_id = 0;         // <|endoftext|>, used as bos (not added) and padding, like Qwen
};

// Exactly n_vocab tokens; n_vocab must leave room for the 256 byte symbols and 3 control tokens.
Result<SynthVocab> BuildSynthVocab(int64_t n_vocab);

// Writes the tokenizer.* keys of `vocab` (model, pre, tokens, token_type, merges, ids, add_bos, chat
// template).
void WriteSynthVocab(const SynthVocab& vocab, gguf::Writer* w);

// GPT-2's byte -> code point map (FORMATS.md 5b), as UTF-8 strings indexed by byte value.
const std::vector<std::string>& ByteSymbols();

}  // namespace lazyslot::cli
