// WordPiece (WPM, tokenizer.ggml.model = bert) as llama.cpp runs it: BERT's basic tokenizer splits a fragment
// into words, then each word, prefixed with U+2581, is covered by greedy longest-match vocabulary pieces (the
// GGUF converter stored word starts as "▁word" and "##" continuations without the "##"); a word that cannot
// be covered becomes one [UNK].
#include <algorithm>
#include <string>

#include "core/utf8.h"
#include "tokenizer/tokenizer_models.h"
#include "tokenizer/unicode.h"

namespace lazyslot::tok {

namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581

// Calls fn(std::string_view word) for each word of `text`, in order; the view is valid during the call only.
template <typename Fn>
void ForEachWord(const Vocab& vocab, std::string_view text, Fn&& fn) {
  std::string word;
  const auto finish = [&] {
    if (word.empty()) return;
    fn(std::string_view(word));
    word.clear();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    uint32_t cp = unicode::DecodeOne(text, &pos);  // invalid UTF-8 -> U+FFFD, dropped below
    // llama.cpp's "NFD" replaces each code point by the first one of its decomposition; the checks below
    // all see the replacement.
    if (vocab.strip_accents) cp = unicode::NfdFirst(cp);
    if (unicode::IsWhiteSpace(cp)) {
      finish();
      continue;
    }
    const unicode::WpmClass cls = unicode::WpmClassOf(cp);
    if (cp == 0 || cp == unicode::kReplacement || cls == unicode::kWpmControl) continue;
    if (vocab.strip_accents && cls == unicode::kWpmMark) continue;
    const uint32_t out = vocab.lowercase ? unicode::ToLower(cp) : cp;
    if (cls == unicode::kWpmPunct || (cls == unicode::kWpmSymbol && cp < 0x7F) ||
        unicode::IsCjkIdeograph(cp)) {
      finish();
      AppendUtf8(out, &word);
      finish();
    } else {
      AppendUtf8(out, &word);
    }
  }
  finish();
}

// Greedy longest match over the bytes of U+2581 + word, as llama.cpp does it: from each position the longest
// vocabulary entry (at most max_token_len bytes) is taken; if some position has none, the pieces of the word
// are dropped and false is returned.
bool EncodeWord(const Vocab& vocab, std::string_view word, std::string* buf, std::vector<TokenId>* out) {
  buf->assign(kWordStart);
  buf->append(word);
  const std::string_view s = *buf;
  const size_t start = out->size();
  for (size_t i = 0; i < s.size();) {
    size_t j = std::min(s.size(), i + vocab.max_token_len);
    TokenId id = -1;
    for (; j > i; --j) {
      id = vocab.Find(s.substr(i, j - i));
      if (id >= 0) break;
    }
    if (id < 0) {
      out->resize(start);
      return false;
    }
    out->push_back(id);
    i = j;
  }
  return true;
}

}  // namespace

void WpmSplitWords(const Vocab& vocab, std::string_view text, std::vector<std::string>* words) {
  ForEachWord(vocab, text, [&](std::string_view w) { words->emplace_back(w); });
}

Status WpmEncode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) {
  std::string buf;
  bool missing_unk = false;
  ForEachWord(vocab, text, [&](std::string_view w) {
    if (EncodeWord(vocab, w, &buf, out)) return;
    if (vocab.unk < 0) {
      missing_unk = true;
    } else {
      out->push_back(vocab.unk);
    }
  });
  if (missing_unk) {
    return Corrupt(
        "WPM tokenizer: a word is not covered by the vocabulary and there is no unknown token "
        "(tokenizer.ggml.unknown_token_id)");
  }
  return Status::Ok();
}

}  // namespace lazyslot::tok
