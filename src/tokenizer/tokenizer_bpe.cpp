// Byte-level BPE encoding (FORMATS.md 5b): pre-tokenize into words, map each word's bytes to byte-level
// characters, merge adjacent symbols lowest rank first (ties: leftmost), look the symbols up.
#include <algorithm>
#include <string>

#include "core/utf8.h"
#include "gguf/keys.h"
#include "tokenizer/tokenizer_models.h"
#include "tokenizer/unicode.h"

namespace lazyslot::tok {

namespace {

struct Symbol {
  int32_t prev, next;
  uint32_t start, n;  // byte range in the (unencoded) word; n == 0 once merged away
  int32_t id;         // token or interned string id of the symbol's text, -1 if unknown
};

struct Bigram {
  int32_t rank;
  int32_t left, right;
  uint32_t size;   // bytes of left+right when queued; a mismatch later means the entry is stale
  int32_t result;  // id of the merged symbol
};

struct BigramOrder {  // heap top: lowest rank, then lowest left index
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

int32_t BpeMerges::Lookup(const Vocab& vocab, std::string_view s) const {
  const TokenId id = vocab.Find(s);
  if (id >= 0) return id;
  const int32_t extra = extra_index_.Find(extra_text_, s);
  return extra < 0 ? -1 : vocab.n_vocab() + extra;
}

int32_t BpeMerges::Intern(const Vocab& vocab, std::string_view s) {
  const int32_t id = Lookup(vocab, s);
  if (id >= 0) return id;
  extra_text_.emplace_back(s);
  extra_index_.Insert(extra_text_, static_cast<int32_t>(extra_text_.size() - 1));
  return vocab.n_vocab() + static_cast<int32_t>(extra_text_.size() - 1);
}

const BpeMerges::Merge* BpeMerges::FindMerge(uint64_t key) const {
  const size_t mask = keys_.size() - 1;
  for (size_t i = Slot(key);; i = (i + 1) & mask) {
    if (keys_[i] == key) return &values_[i];
    if (keys_[i] == kEmpty) return nullptr;
  }
}

Status BpeMerges::Load(const gguf::File& file, const Vocab& vocab) {
  static constexpr const char* kKey = gguf::keys::kTokenizerMerges;
  const gguf::Value* v = file.Find(kKey);
  if (v == nullptr)
    return NotFound(std::string("tokenizer metadata: key '") + kKey + "' is missing (BPE vocabulary)");
  if (v->type != gguf::ValueType::kArray || v->elem_type != gguf::ValueType::kString) {
    return Corrupt(std::string("tokenizer metadata: key '") + kKey + "' is not an array of strings");
  }
  if (v->strings.size() > size_t(INT32_MAX) / 2) {
    return Corrupt(std::string("tokenizer metadata: key '") + kKey + "' has too many entries");
  }
  size_t cap = 16;
  while (cap < 2 * v->strings.size()) cap *= 2;
  shift_ = 64;
  for (size_t c = cap; c > 1; c >>= 1) --shift_;
  keys_.assign(cap, kEmpty);
  values_.assign(cap, Merge{0, 0});
  const size_t mask = cap - 1;
  std::string joined;
  for (size_t rank = 0; rank < v->strings.size(); ++rank) {
    const std::string& entry = v->strings[rank];
    const size_t space = entry.find(' ', 1);
    if (space == std::string::npos) continue;  // no pair: can never match a symbol pair
    const std::string_view left(entry.data(), space);
    const std::string_view right(entry.data() + space + 1, entry.size() - space - 1);
    const int32_t l = Intern(vocab, left);
    const int32_t r = Intern(vocab, right);
    joined.assign(left);
    joined.append(right);
    const int32_t result = Intern(vocab, joined);
    const uint64_t key = Key(l, r);
    size_t i = Slot(key);
    while (keys_[i] != kEmpty && keys_[i] != key) i = (i + 1) & mask;
    if (keys_[i] == key) continue;  // a repeated pair keeps its first (lowest) rank
    keys_[i] = key;
    values_[i] = Merge{static_cast<int32_t>(rank), result};
    ++count_;
  }
  std::string ch;
  for (int b = 0; b < 256; ++b) {
    ch.clear();
    AppendUtf8(unicode::ByteToCodePoint(static_cast<uint8_t>(b)), &ch);
    byte_symbol_[b] = Lookup(vocab, ch);
  }
  return Status::Ok();
}

void BpeMerges::Encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) const {
  const std::vector<uint32_t> cps = unicode::Decode(text);  // invalid UTF-8 -> U+FFFD
  std::vector<uint32_t> lengths;
  SplitWords(vocab.pre, cps, &lengths);
  std::string word;
  size_t start = 0;
  for (uint32_t len : lengths) {
    word.clear();
    for (size_t i = start; i < start + len; ++i) AppendUtf8(cps[i], &word);
    start += len;
    EncodeWord(vocab, word, out);
  }
}

void BpeMerges::EncodeWord(const Vocab& vocab, std::string_view word, std::vector<TokenId>* out) const {
  std::string encoded;
  if (vocab.ignore_merges) {  // llama-bpe: a word that is itself a token is taken whole
    unicode::AppendByteEncoded(word, &encoded);
    const TokenId id = vocab.Find(encoded);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  // One symbol per byte: the byte map turns every byte into exactly one code point.
  std::vector<Symbol> syms(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    const int32_t idx = static_cast<int32_t>(i);
    syms[i] = {idx - 1, i + 1 == word.size() ? -1 : idx + 1, uint32_t(i), 1,
               byte_symbol_[static_cast<uint8_t>(word[i])]};
  }
  std::vector<Bigram> heap;
  heap.reserve(word.size());
  auto try_add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0 || syms[l].id < 0 || syms[r].id < 0) return;
    const Merge* m = keys_.empty() ? nullptr : FindMerge(Key(syms[l].id, syms[r].id));
    if (m == nullptr) return;
    heap.push_back({m->rank, l, r, syms[l].n + syms[r].n, m->result});
    std::push_heap(heap.begin(), heap.end(), BigramOrder());
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), BigramOrder());
    const Bigram top = heap.back();
    heap.pop_back();
    Symbol& l = syms[top.left];
    Symbol& r = syms[top.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != top.size) continue;  // stale: a side has changed since
    l.id = top.result;
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = top.left;
    try_add(l.prev, top.left);
    try_add(top.left, l.next);
  }

  const int32_t n_vocab = vocab.n_vocab();
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    if (syms[i].id >= 0 && syms[i].id < n_vocab) {
      out->push_back(syms[i].id);
      continue;
    }
    // Not a token: try each byte of its byte-level text as a one-byte token; misses are dropped.
    encoded.clear();
    unicode::AppendByteEncoded(word.substr(syms[i].start, syms[i].n), &encoded);
    for (char c : encoded) {
      const TokenId id = vocab.Find(std::string_view(&c, 1));
      if (id >= 0) out->push_back(id);
    }
  }
}

}  // namespace lazyslot::tok
