// Synthetic byte-level BPE vocabulary for `lazyslot synth`: BPE merges are trained on a small built-in
// English sample so ordinary text tokenizes into word-like pieces, then padded with deterministic extensions.
#include "cli/synth_vocab.h"

#include <map>
#include <unordered_set>
#include <utility>

#include "core/utf8.h"
#include "gguf/keys.h"

namespace lazyslot::cli {
namespace {

// Training text (written for this tool): a short story and a list of frequent English words.
constexpr const char* kSample =
    "Once upon a time there was a little girl who lived in a small house near the forest. Every morning she "
    "walked to the river with her mother to get water, and every evening her father told them a story about "
    "the old days. One day the girl found a bird that could not fly. She took it home, gave it some food and "
    "kept it warm. The bird got better and began to sing. When it was strong again, they opened the window "
    "and the bird flew away over the trees. The girl was sad at first, but the next morning the bird came "
    "back and sang outside her window. They were friends for the rest of their lives.\n"
    "The quick brown fox jumps over the lazy dog. What is your name? How are you today? I think that we "
    "should go home now, because it is getting late and the weather is changing. Thank you for your help.\n"
    "the of and to in is that it for was on are as with his they at be this from have or by one had not but "
    "what all were when we there can an your which their said if do will each about how up out them then she "
    "many some so these would other into has more her two like him see time could no make than first been "
    "its who now people my made over did down only way find use may water long little very after words "
    "called just where most know get through back much before go good new write our used me man too any day "
    "same right look think also around another came come work three word must because does part even place "
    "well such here take why things help put years different away again off went old number great tell men "
    "say small every found still between name should home big give air line set own under read last never "
    "us left end along while might next sound below saw something thought both few those always looked show "
    "large often together asked house world going want school important until form food keep children feet "
    "land side without boy once animals life enough took sometimes four head above kind began almost live "
    "page got earth need far hand high year mother light parts country father let night following picture "
    "being study second eyes soon times story boys since white days ever paper hard near sentence better "
    "best across during today others however sure means knew try told young miles sun ways thing whole hear "
    "example heard several change answer room sea against top turned learn point city play toward five "
    "using himself usually model language server token memory request response question assistant user "
    "system hello world please write explain answer because The A In It He She They We You This That What "
    "When Where Why How There Then One Once Every After Before Today\n";

// Letters appended to existing tokens once the sample has no pair left that occurs twice (English frequency
// order, so the filler tokens still look like word pieces).
constexpr const char* kFillLetters = "etaoinshrdlcumwfgypbvkjxqz";

bool IsLetter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Splits the sample roughly as the qwen2 pre-tokenizer would: letters with at most one leading non-letter
// (" the"), every other byte on its own. Returns each word as its byte-level symbols.
std::vector<std::vector<std::string>> SampleWords() {
  const std::vector<std::string>& sym = ByteSymbols();
  std::vector<std::vector<std::string>> words;
  const std::string text = kSample;
  size_t k = 0;
  while (k < text.size()) {
    std::vector<std::string> w;
    const bool lead = !IsLetter(text[k]) && text[k] != '\n' && k + 1 < text.size() && IsLetter(text[k + 1]);
    if (lead || IsLetter(text[k])) {
      w.push_back(sym[static_cast<unsigned char>(text[k++])]);
      while (k < text.size() && IsLetter(text[k])) w.push_back(sym[static_cast<unsigned char>(text[k++])]);
    } else {
      w.push_back(sym[static_cast<unsigned char>(text[k++])]);
    }
    words.push_back(std::move(w));
  }
  return words;
}

class VocabBuilder {
 public:
  explicit VocabBuilder(size_t capacity) : capacity_(capacity) {}
  bool full() const { return tokens_.size() >= capacity_; }
  bool Has(const std::string& t) const { return known_.count(t) != 0; }
  void AddToken(const std::string& t) {
    tokens_.push_back(t);
    known_.insert(t);
  }
  void AddMerge(const std::string& a, const std::string& b) {
    merges_.push_back(a + " " + b);
    if (!Has(a + b)) AddToken(a + b);
  }
  std::vector<std::string>& tokens() { return tokens_; }
  std::vector<std::string>& merges() { return merges_; }

 private:
  size_t capacity_;
  std::vector<std::string> tokens_;
  std::vector<std::string> merges_;
  std::unordered_set<std::string> known_;
};

// Classic BPE training: repeatedly merge the most frequent adjacent pair (ties: smallest pair) in the
// sample, until no pair occurs twice or the vocabulary is full.
void TrainMerges(VocabBuilder* vb) {
  std::map<std::vector<std::string>, int64_t> words;
  for (auto& w : SampleWords()) ++words[w];
  while (!vb->full()) {
    std::map<std::pair<std::string, std::string>, int64_t> pairs;
    for (const auto& [w, n] : words) {
      for (size_t k = 0; k + 1 < w.size(); ++k) pairs[{w[k], w[k + 1]}] += n;
    }
    const std::pair<std::string, std::string>* best = nullptr;
    int64_t best_n = 1;
    for (const auto& [p, n] : pairs) {
      if (n > best_n) {
        best = &p;
        best_n = n;
      }
    }
    if (best == nullptr) break;
    const auto [a, b] = *best;
    vb->AddMerge(a, b);
    std::map<std::vector<std::string>, int64_t> next;
    for (const auto& [w, n] : words) {
      std::vector<std::string> m;
      for (size_t k = 0; k < w.size(); ++k) {
        if (k + 1 < w.size() && w[k] == a && w[k + 1] == b) {
          m.push_back(a + b);
          ++k;
        } else {
          m.push_back(w[k]);
        }
      }
      next[m] += n;
    }
    words = std::move(next);
  }
}

// Extends merged tokens (in creation order, including new ones) with one more letter until full.
void FillMerges(VocabBuilder* vb) {
  const size_t first = vb->tokens().size() > 256 ? 256 : 0;
  for (size_t i = first; !vb->full() && i < vb->tokens().size(); ++i) {
    for (const char* c = kFillLetters; *c != '\0' && !vb->full(); ++c) {
      const std::string base = vb->tokens()[i];  // copy: AddMerge may grow the vector
      const std::string letter(1, *c);
      if (!vb->Has(base + letter)) vb->AddMerge(base, letter);
    }
  }
}

}  // namespace

const std::vector<std::string>& ByteSymbols() {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool same = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[b] = EncodeUtf8(same ? b : next++);
    }
    return t;
  }();
  return table;
}

Result<SynthVocab> BuildSynthVocab(int64_t n_vocab) {
  const char* kControl[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  constexpr int64_t kMin = 256 + 3;
  if (n_vocab < kMin || n_vocab > (int64_t{1} << 24)) {
    return InvalidArgument("a synthetic vocabulary needs " + std::to_string(kMin) +
                           " to 16777216 tokens, got " + std::to_string(n_vocab));
  }
  VocabBuilder vb(static_cast<size_t>(n_vocab) - 3);
  // The 256 byte symbols in GPT-2's order: bytes that map to themselves first, then the remapped ones.
  const std::vector<std::string>& sym = ByteSymbols();
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t b = 0; b < 256; ++b) {
      const bool same = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      if (same == (pass == 0)) vb.AddToken(sym[b]);
    }
  }
  TrainMerges(&vb);
  FillMerges(&vb);
  if (!vb.full())
    return Internal("synthetic vocabulary: ran out of merges before " + std::to_string(n_vocab));

  SynthVocab v;
  v.tokens = std::move(vb.tokens());
  v.merges = std::move(vb.merges());
  v.token_types.assign(v.tokens.size(), 1);
  for (const char* c : kControl) {
    v.tokens.push_back(c);
    v.token_types.push_back(3);
  }
  v.endoftext_id = static_cast<uint32_t>(v.tokens.size() - 3);
  v.eos_id = static_cast<uint32_t>(v.tokens.size() - 1);
  return v;
}

void WriteSynthVocab(const SynthVocab& vocab, gguf::Writer* w) {
  // ChatML, as Qwen models use it.
  static const char* kChatTemplate =
      "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
      "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
      "{% endif %}";
  namespace keys = gguf::keys;
  w->SetString(keys::kTokenizerModel, "gpt2");
  w->SetString(keys::kTokenizerPre, "qwen2");
  w->SetArrayString(keys::kTokenizerTokens, vocab.tokens);
  w->SetArrayI32(keys::kTokenizerTokenType, vocab.token_types);
  w->SetArrayString(keys::kTokenizerMerges, vocab.merges);
  w->SetU32(keys::kTokenizerEosId, vocab.eos_id);
  w->SetU32(keys::kTokenizerBosId, vocab.endoftext_id);
  w->SetU32(keys::kTokenizerPadId, vocab.endoftext_id);
  w->SetBool(keys::kTokenizerAddBos, false);
  w->SetString(keys::kTokenizerChatTemplate, kChatTemplate);
}

}  // namespace lazyslot::cli
