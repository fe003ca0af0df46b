// BPE pre-tokenizers: hand-written equivalents of the word-splitting regexes llama.cpp uses per
// `tokenizer.ggml.pre` (FORMATS.md 5b). No regex engine: each splitter walks the code points once.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace lazyslot::tok {

enum class PreType {
  kDefault,  // missing `pre`: 4 chained regexes (punctuation runs, GPT-2, digit runs, 3-digit groups)
  kGpt2,     // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
  kLlama3,   // (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
             // ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kQwen2,    // as kLlama3 but \p{N} (single digits)
};

// Maps a `tokenizer.ggml.pre` value to its splitter; false if the name is unknown.
bool PreTypeFromName(std::string_view name, PreType* type);
const char* PreTypeName(PreType type);

// Splits the code points `cps` into words and appends each word's length (in code points, all > 0, summing
// to cps.size()) to *lengths.
void SplitWords(PreType type, const std::vector<uint32_t>& cps, std::vector<uint32_t>* lengths);

}  // namespace lazyslot::tok
