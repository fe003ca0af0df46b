// Tokenizer built from a GGUF's tokenizer.* metadata: SentencePiece-style (`llama`), byte-level BPE
// (`gpt2`, pre-tokenizers qwen2 / llama-bpe / gpt-2) and WordPiece (`bert`, WPM). Facts: ../shared/FORMATS.md
// section 5.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gguf/gguf.h"

namespace lazyslot {

using TokenId = int32_t;

// The fill-in-the-middle tokens of a vocabulary (llama.cpp's token_fim_*), -1 where it has none: prefix,
// suffix, middle, padding, repository name and file separator.
struct FimTokens {
  TokenId pre = -1, suf = -1, mid = -1, pad = -1, rep = -1, sep = -1;
};

// Immutable after FromGguf: every method is const and safe to call from several threads at once.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Reads tokenizer.ggml.* keys. Errors name the key that is missing or malformed.
  static Result<std::unique_ptr<Tokenizer>> FromGguf(const gguf::File& file);

  // add_special: BOS/EOS as the metadata asks (WPM: always [CLS] first and [SEP] last, as llama.cpp does).
  // parse_special: control tokens in the text become tokens.
  virtual Result<std::vector<TokenId>> Tokenize(std::string_view text, bool add_special,
                                                bool parse_special) const = 0;
  // Bytes of one token (may be partial UTF-8 for byte tokens). Control tokens render only if render_special.
  virtual std::string TokenToPiece(TokenId id, bool render_special) const = 0;
  // Whole-sequence text, with the model's clean-up rules (prefix space strip, clean_spaces).
  virtual std::string Detokenize(const std::vector<TokenId>& ids, bool remove_special,
                                 bool render_special) const = 0;

  virtual int32_t n_vocab() const = 0;
  virtual TokenId bos() const = 0;  // -1 if none
  virtual TokenId eos() const = 0;  // -1 if none
  virtual bool add_bos() const = 0;
  virtual bool add_eos() const = 0;
  virtual TokenId sep() const = 0;   // BERT's [SEP] (tokenizer.ggml.seperator_token_id), -1 if none
  virtual bool add_sep() const = 0;  // tokenizer.ggml.add_sep_token: pairs get a SEP between them
  virtual bool IsEog(TokenId id) const = 0;      // end of generation (eos, eot, <|im_end|>, ...)
  virtual bool IsControl(TokenId id) const = 0;  // control/unknown/unused: not normal text
  virtual const std::string& TokenText(TokenId id) const = 0;  // raw vocab entry
  // The FIM tokens: tokenizer.ggml.fim_*_token_id, else the token with one of their usual texts
  // (tok::FindFimTokens). None by default, for tokenizers not built from a GGUF.
  virtual const FimTokens& fim() const {
    static const FimTokens kNone;
    return kNone;
  }
};

}  // namespace lazyslot
