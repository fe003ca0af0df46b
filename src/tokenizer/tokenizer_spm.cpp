// SentencePiece-style encoding (FORMATS.md 5a): UTF-8 characters as symbols, adjacent pairs that form a token
// merged highest score first (ties: leftmost), then byte fallback for symbols that are not tokens.
#include <queue>

#include "tokenizer/tokenizer_models.h"
#include "tokenizer/unicode.h"

namespace lazyslot::tok {

namespace {

struct Symbol {
  int32_t prev, next;
  uint32_t start, n;  // byte range in the text; n == 0 once merged into its left neighbour
};

struct Bigram {
  float score;
  int32_t left, right;
  uint32_t size;  // bytes of left+right when queued; a mismatch later means the entry is stale
};

struct BigramOrder {  // priority_queue puts the "largest" on top: highest score, then lowest left index
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

std::vector<TokenId> SpmByteTokens(const Vocab& vocab) {
  std::vector<TokenId> ids(256, -1);
  static const char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char name[7] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>', 0};
    ids[b] = vocab.Find(name);
    if (ids[b] < 0) ids[b] = vocab.Find(std::string(1, static_cast<char>(b)));
  }
  return ids;
}

Status SpmEncode(const Vocab& vocab, const std::vector<TokenId>& byte_tokens, std::string_view text,
                 std::vector<TokenId>* out) {
  std::vector<Symbol> syms;
  syms.reserve(text.size());
  for (size_t off = 0; off < text.size();) {
    // Symbols follow the lead byte's announced length without validation (truncated at the end).
    const size_t len = std::min(unicode::Utf8SeqLen(static_cast<uint8_t>(text[off])), text.size() - off);
    const int32_t idx = static_cast<int32_t>(syms.size());
    syms.push_back({idx - 1, off + len == text.size() ? -1 : idx + 1, uint32_t(off), uint32_t(len)});
    off += len;
  }

  std::vector<Bigram> storage;
  storage.reserve(syms.size());
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue(BigramOrder(), std::move(storage));
  auto try_add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const uint32_t size = syms[l].n + syms[r].n;
    const TokenId id = vocab.Find(text.substr(syms[l].start, size));
    if (id >= 0) queue.push({vocab.score[id], l, r, size});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram top = queue.top();
    queue.pop();
    Symbol& l = syms[top.left];
    Symbol& r = syms[top.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != top.size) continue;
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = top.left;
    try_add(l.prev, top.left);
    try_add(top.left, l.next);
  }

  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    const std::string_view piece = text.substr(syms[i].start, syms[i].n);
    const TokenId id = vocab.Find(piece);
    if (id >= 0) {
      out->push_back(id);
      continue;
    }
    for (char c : piece) {
      const TokenId b = byte_tokens[static_cast<uint8_t>(c)];
      if (b < 0) {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "<0x%02X>", static_cast<uint8_t>(c));
        return InvalidArgument(std::string("SPM tokenizer: byte ") + hex +
                               " is not in the vocabulary and has no byte-fallback token");
      }
      out->push_back(b);
    }
  }
  return Status::Ok();
}

}  // namespace lazyslot::tok
