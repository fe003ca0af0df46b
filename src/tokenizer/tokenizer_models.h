// The encoders behind Tokenizer: SentencePiece-style score merging with byte fallback (FORMATS.md 5a),
// byte-level BPE with rank merging (5b) and WordPiece (WPM, BERT). Each works on one raw-text fragment left
// by the special partition.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer_vocab.h"

namespace lazyslot::tok {

// SPM byte fallback: for each byte, the id of "<0xXX>" (uppercase hex), else of the 1-byte token, else -1.
std::vector<TokenId> SpmByteTokens(const Vocab& vocab);

// Tokenizes one fragment whose spaces are already escaped to U+2581. Fails only when a byte has no fallback
// token.
Status SpmEncode(const Vocab& vocab, const std::vector<TokenId>& byte_tokens, std::string_view text,
                 std::vector<TokenId>* out);

// WPM: BERT's basic tokenizer as llama.cpp runs it (optional first-code-point NFD and accent stripping,
// lower-casing, split at whitespace, punctuation, ASCII symbols and CJK ideographs; controls dropped).
// Appends each word (UTF-8, never empty) to *words.
void WpmSplitWords(const Vocab& vocab, std::string_view text, std::vector<std::string>* words);
// WPM: splits one fragment into words and appends the greedy longest-match pieces of each (U+2581 + word,
// continuations stored without "##"), or one [UNK] for a word that cannot be covered. Fails only when such a
// word occurs and the vocabulary has no unknown token.
Status WpmEncode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out);

// Merge table of a byte-level BPE vocabulary, keyed by the ids of the two halves. Strings that occur in
// merges but are not tokens get ids >= n_vocab, so merging never needs string operations.
class BpeMerges {
 public:
  // Reads tokenizer.ggml.merges ("left right" per entry; rank = index; a repeated pair keeps its first rank).
  Status Load(const gguf::File& file, const Vocab& vocab);
  // Pre-tokenizes, merges and appends the ids of one text fragment.
  void Encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) const;
  size_t size() const { return count_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;  // id (token or interned string) of left+right
  };
  int32_t Lookup(const Vocab& vocab, std::string_view s) const;
  int32_t Intern(const Vocab& vocab, std::string_view s);
  static uint64_t Key(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  }
  void EncodeWord(const Vocab& vocab, std::string_view word, std::vector<TokenId>* out) const;

  // Open-addressing table (linear probing, at most half full) from Key(left, right) to its merge; keys are
  // never all-ones since ids are >= 0.
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  const Merge* FindMerge(uint64_t key) const;
  // Fibonacci hashing: the top bits of key * 2^64/phi, so both halves of the key matter.
  size_t Slot(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  int shift_ = 64;  // 64 - log2(capacity)
  std::vector<uint64_t> keys_;
  std::vector<Merge> values_;
  size_t count_ = 0;

  std::vector<std::string> extra_text_;  // non-token strings from merges; id = n_vocab + index
  TextIndex extra_index_;                // over extra_text_
  int32_t byte_symbol_[256] = {};        // id of each byte's byte-level character, -1 if unknown
};

}  // namespace lazyslot::tok
