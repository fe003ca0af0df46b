// Vocabulary shared by the SPM, BPE and WPM tokenizers: token texts/scores/attributes read from
// tokenizer.ggml.*, special ids and flags with llama.cpp's defaults, the special-token partition and the EOG
// set (FORMATS.md 5).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_pretok.h"

namespace lazyslot::tok {

// Token attributes (a bit set: auto-detection can add kControl to another type).
enum TokenAttr : uint8_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1 << 0,
  kAttrUnused = 1 << 1,
  kAttrNormal = 1 << 2,
  kAttrControl = 1 << 3,
  kAttrUserDefined = 1 << 4,
  kAttrByte = 1 << 5,
};

enum class VocabType { kSpm, kBpe, kWpm };  // llama, gpt2, bert

// Open-addressing hash index over strings stored elsewhere (texts[i]): it keeps only (hash tag, index), so
// building it for a 150k-token vocabulary costs no allocation per entry. The caller passes the same `texts`
// to every call.
class TextIndex {
 public:
  void Reserve(size_t n);
  // Index of `s` in texts, or -1.
  int32_t Find(const std::vector<std::string>& texts, std::string_view s) const;
  // Adds texts[index] unless an equal text is indexed already; returns the index that holds the text.
  int32_t Insert(const std::vector<std::string>& texts, int32_t index);
  size_t size() const { return count_; }

 private:
  struct Slot {
    uint32_t tag;   // low bits of the hash
    int32_t index;  // -1: empty
  };
  static uint64_t Hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  void Rehash(const std::vector<std::string>& texts, size_t capacity);
  std::vector<Slot> slots_;  // capacity is a power of two, at most half full
  size_t count_ = 0;
};

// A piece of the input after the special-token partition: a special token, or raw text [offset, offset+len).
struct Fragment {
  TokenId token = -1;  // >= 0: a special token
  size_t offset = 0;
  size_t length = 0;
};

struct Vocab {
  VocabType type = VocabType::kSpm;
  PreType pre = PreType::kDefault;

  std::vector<std::string> text;  // [n_vocab]
  std::vector<float> score;       // [n_vocab]
  std::vector<uint8_t> attr;      // [n_vocab] TokenAttr bits
  TextIndex text_to_id;           // over `text`

  TokenId bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, sep = -1;
  FimTokens fim;  // FindFimTokens
  bool add_bos = false, add_eos = false, add_sep = false, add_space_prefix = false;
  bool ignore_merges = false, clean_spaces = false;
  // WPM (BertNormalizer): tokenizer.ggml.normalizer.lowercase (default true) and .strip_accents (default: the
  // lowercase value). Only the WPM tokenizer reads them.
  bool lowercase = true, strip_accents = true;
  size_t max_token_len = 0;  // longest token text in bytes (bounds WPM's longest-match search)

  std::vector<TokenId> special_tokens;  // control/user-defined/unknown ids, longest text first
  std::vector<uint8_t> is_eog;          // [n_vocab] 1 for end-of-generation tokens

  int32_t n_vocab() const { return static_cast<int32_t>(text.size()); }
  TokenId Find(std::string_view s) const { return text_to_id.Find(text, s); }
  bool Valid(TokenId id) const { return id >= 0 && id < n_vocab(); }
  // The token's bytes as rendered with render_special = true (FORMATS.md 5a/5b "Pieces").
  std::string Piece(TokenId id) const;
};

// Reads the common keys (model, pre, tokens, scores, token_type, special ids, add_* flags) and fills in the
// derived tables (special ids found by text, EOG set, special-token list).
Result<Vocab> LoadVocab(const gguf::File& file);

// The FIM tokens (Tokenizer::fim): each from its tokenizer.ggml.fim_*_token_id when that is a u32 below
// n_vocab, else the lowest id whose text is one of its usual texts (as llama.cpp finds them for Qwen,
// StarCoder, CodeLlama, DeepSeek Coder and Codestral vocabularies), else -1. LoadVocab fills Vocab::fim.
FimTokens FindFimTokens(const gguf::File& file, const Vocab& vocab);

// Splits `text` at occurrences of special token texts, longest token first (FORMATS.md 5). With
// parse_special = false, control and unknown tokens are not matched; user-defined ones always are.
std::vector<Fragment> PartitionSpecial(const Vocab& vocab, std::string_view text, bool parse_special);

// clean_up_tokenization_spaces as llama.cpp applies it after joining pieces: " ?" " !" " ." " ," lose the
// space, " ' " becomes "'", and " 's" " 'm" " 're" " 've" lose the space.
std::string CleanSpaces(const std::string& text);

}  // namespace lazyslot::tok
