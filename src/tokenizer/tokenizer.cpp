// Tokenizer::FromGguf and the one implementation behind it: special-token partition, then SPM, byte-level
// BPE or WPM per text fragment; pieces and detokenization with llama.cpp's rules (FORMATS.md 5).
#include "tokenizer/tokenizer.h"

#include <chrono>

#include "core/log.h"
#include "gguf/keys.h"
#include "tokenizer/tokenizer_models.h"
#include "tokenizer/tokenizer_vocab.h"

namespace lazyslot {

namespace {

using tok::Vocab;
using tok::VocabType;

class VocabTokenizer final : public Tokenizer {
 public:
  VocabTokenizer(Vocab vocab, std::vector<TokenId> spm_bytes, tok::BpeMerges bpe)
      : v_(std::move(vocab)), spm_bytes_(std::move(spm_bytes)), bpe_(std::move(bpe)) {}

  Result<std::vector<TokenId>> Tokenize(std::string_view text, bool add_special,
                                        bool parse_special) const override {
    if (v_.type == VocabType::kWpm) return TokenizeWpm(text, add_special, parse_special);
    std::vector<TokenId> out;
    out.reserve(text.size() / 3 + 4);
    if (add_special && v_.add_bos) out.push_back(v_.bos);
    const std::vector<tok::Fragment> frags = tok::PartitionSpecial(v_, text, parse_special);
    bool prev_special = true;  // SPM: the first fragment gets the prefix space even without BOS
    std::string escaped;
    for (const tok::Fragment& f : frags) {
      if (f.token >= 0) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      const std::string_view raw = text.substr(f.offset, f.length);
      if (v_.type == VocabType::kBpe) {
        bpe_.Encode(v_, raw, &out);
      } else {
        escaped.clear();
        if (v_.add_space_prefix && prev_special) escaped += "\xE2\x96\x81";
        for (char c : raw) {
          if (c == ' ') {
            escaped += "\xE2\x96\x81";  // U+2581
          } else {
            escaped.push_back(c);
          }
        }
        LS_RETURN_IF_ERROR(tok::SpmEncode(v_, spm_bytes_, escaped, &out));
      }
      prev_special = false;
    }
    if (add_special && v_.add_eos) out.push_back(v_.eos);
    return out;
  }

  std::string TokenToPiece(TokenId id, bool render_special) const override {
    if (!v_.Valid(id)) return std::string();
    if (!render_special && (v_.attr[id] & (tok::kAttrUnknown | tok::kAttrControl))) return std::string();
    return v_.Piece(id);
  }

  std::string Detokenize(const std::vector<TokenId>& ids, bool remove_special,
                         bool render_special) const override {
    size_t begin = 0, end = ids.size();
    bool strip_space = v_.add_space_prefix;  // only the piece at index 0 loses its leading space
    if (remove_special && v_.add_bos && end > begin && ids[begin] == v_.bos) {
      strip_space = false;
      ++begin;
    }
    if (remove_special && v_.add_eos && end > begin && ids[end - 1] == v_.eos) --end;
    std::string text;
    for (size_t i = begin; i < end; ++i) {
      std::string piece = TokenToPiece(ids[i], render_special);
      if (strip_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
      strip_space = false;
      text += piece;
    }
    return v_.clean_spaces ? tok::CleanSpaces(text) : text;
  }

  int32_t n_vocab() const override { return v_.n_vocab(); }
  TokenId bos() const override { return v_.bos; }
  TokenId eos() const override { return v_.eos; }
  bool add_bos() const override { return v_.add_bos; }
  bool add_eos() const override { return v_.add_eos; }
  TokenId sep() const override { return v_.sep; }
  bool add_sep() const override { return v_.add_sep; }
  bool IsEog(TokenId id) const override { return v_.Valid(id) && v_.is_eog[id]; }
  bool IsControl(TokenId id) const override {
    return v_.Valid(id) && (v_.attr[id] & (tok::kAttrControl | tok::kAttrUnknown | tok::kAttrUnused));
  }
  const std::string& TokenText(TokenId id) const override {
    static const std::string kEmpty;
    return v_.Valid(id) ? v_.text[id] : kEmpty;
  }
  const FimTokens& fim() const override { return v_.fim; }

 private:
  // llama.cpp frames every WPM text as [CLS] text [SEP] under add_special, whatever add_bos / add_eos /
  // add_sep say: BOS first, then SEP (not EOS) last.
  Result<std::vector<TokenId>> TokenizeWpm(std::string_view text, bool add_special,
                                           bool parse_special) const {
    std::vector<TokenId> out;
    out.reserve(text.size() / 4 + 4);
    if (add_special) {
      if (v_.bos < 0) {
        return Corrupt(std::string("WPM tokenizer: add_special needs a [CLS] token (") +
                       gguf::keys::kTokenizerBosId + ")");
      }
      out.push_back(v_.bos);
    }
    for (const tok::Fragment& f : tok::PartitionSpecial(v_, text, parse_special)) {
      if (f.token >= 0) {
        out.push_back(f.token);
      } else {
        LS_RETURN_IF_ERROR(tok::WpmEncode(v_, text.substr(f.offset, f.length), &out));
      }
    }
    if (add_special) {
      if (v_.sep < 0) {
        return Corrupt(std::string("WPM tokenizer: add_special needs a [SEP] token (") +
                       gguf::keys::kTokenizerSepId + ")");
      }
      out.push_back(v_.sep);
    }
    return out;
  }

  Vocab v_;
  std::vector<TokenId> spm_bytes_;
  tok::BpeMerges bpe_;
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const gguf::File& file) {
  const auto t0 = std::chrono::steady_clock::now();
  LS_ASSIGN_OR_RETURN(Vocab vocab, tok::LoadVocab(file));
  std::vector<TokenId> spm_bytes;
  tok::BpeMerges bpe;
  if (vocab.type == VocabType::kSpm) {
    spm_bytes = tok::SpmByteTokens(vocab);
  } else if (vocab.type == VocabType::kBpe) {
    LS_RETURN_IF_ERROR(bpe.Load(file, vocab));
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (vocab.type == VocabType::kWpm) {
    LS_LOG_INFO(
        "tokenizer: WPM, %d tokens, cls/bos %d, sep %d, eos %d, unk %d, add bos/eos/sep %d/%d/%d, lowercase "
        "%d, "
        "strip accents %d, %.1f ms",
        vocab.n_vocab(), vocab.bos, vocab.sep, vocab.eos, vocab.unk, vocab.add_bos ? 1 : 0,
        vocab.add_eos ? 1 : 0, vocab.add_sep ? 1 : 0, vocab.lowercase ? 1 : 0, vocab.strip_accents ? 1 : 0,
        ms);
  } else {
    LS_LOG_INFO("tokenizer: %s%s%s, %d tokens, %zu merges, bos %d (add %d), eos %d, %.1f ms",
                vocab.type == VocabType::kSpm ? "SPM" : "BPE", vocab.type == VocabType::kBpe ? " pre " : "",
                vocab.type == VocabType::kBpe ? tok::PreTypeName(vocab.pre) : "", vocab.n_vocab(), bpe.size(),
                vocab.bos, vocab.add_bos ? 1 : 0, vocab.eos, ms);
  }
  return std::unique_ptr<Tokenizer>(
      new VocabTokenizer(std::move(vocab), std::move(spm_bytes), std::move(bpe)));
}

}  // namespace lazyslot
