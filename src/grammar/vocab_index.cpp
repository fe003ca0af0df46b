// VocabIndex: the vocabulary's pieces as a byte trie laid out in preorder, and Matcher::FillMask, which walks
// that trie once from the matcher's state, skipping a whole subtree as soon as its first byte is rejected.
#include <algorithm>
#include <numeric>

#include "grammar/matcher_impl.h"

namespace lazyslot::grammar {

struct VocabIndex::Impl {
  // Trie nodes in preorder; node i's subtree is [i, skip), its tokens toks[tok_begin(i), tok_begin(i + 1)).
  // A sentinel node at the end carries the final tok_begin. 12 bytes a node (~7 MiB for Qwen3's 151,936).
  struct Node {
    uint8_t byte;
    uint16_t depth;  // 1 for a first byte
    uint32_t skip;
    uint32_t tok_begin;
    uint32_t summary;  // index into summaries, or kNoSummary
  };
  // For subtrees of at least kSummaryMin nodes: the bytes they contain, so that a state that loops on all
  // of them accepts the whole subtree at once (Engine::SubtreeAccepted).
  using Summary = Engine::SubtreeBytes;
  static constexpr uint32_t kNoSummary = ~0u;
  static constexpr uint32_t kSummaryMin = 8;
  std::vector<std::string> pieces;
  std::vector<Node> nodes;
  std::vector<Summary> summaries;
  std::vector<int32_t> toks;
  uint16_t max_depth = 0;
};

namespace {

// UTF-8 well-formedness as the matcher applies it (RFC 3629: no overlong forms, surrogates or values above
// U+10FFFF), one byte at a time. State: continuation bytes still expected, and the allowed range of the
// next one.
struct Utf8Check {
  uint8_t need = 0, lo = 0x80, hi = 0xBF;
  bool Step(uint8_t b) {
    if (need > 0) {
      if (b < lo || b > hi) return false;
      --need;
      lo = 0x80;
      hi = 0xBF;
      return true;
    }
    if (b < 0x80) return true;
    if (b >= 0xC2 && b <= 0xDF) {
      need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need = 2;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      need = 3;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    return true;
  }
};

void BuildSummaries(VocabIndex::Impl* im) {
  const size_t n = im->nodes.size() - 1;
  std::vector<Utf8Check> at(static_cast<size_t>(im->max_depth) + 1);
  std::vector<uint16_t> cps(static_cast<size_t>(im->max_depth) + 1);
  for (size_t i = 0; i < n; ++i) {
    const size_t end = im->nodes[i].skip;
    if (end - i < VocabIndex::Impl::kSummaryMin) continue;
    VocabIndex::Impl::Summary sum{{0, 0}, false, true, 0};
    const uint16_t base = im->nodes[i].depth - 1;
    at[0] = Utf8Check{};
    cps[0] = 0;
    for (size_t j = i; j < end; ++j) {
      const auto& nd = im->nodes[j];
      if (nd.byte < 0x80) {
        sum.ascii[nd.byte >> 6] |= uint64_t{1} << (nd.byte & 63);
      } else {
        sum.nonascii = true;
      }
      const size_t d = nd.depth - base;
      cps[d] = cps[d - 1] + ((nd.byte & 0xC0) != 0x80);  // code points begun so far
      sum.max_cps = std::max(sum.max_cps, cps[d]);
      if (sum.valid) {
        Utf8Check c = at[d - 1];
        if (!c.Step(nd.byte)) sum.valid = false;
        at[d] = c;
      }
    }
    im->nodes[i].summary = static_cast<uint32_t>(im->summaries.size());
    im->summaries.push_back(sum);
  }
}

}  // namespace

VocabIndex::VocabIndex(std::vector<std::string> pieces) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.pieces = std::move(pieces);
  std::vector<int32_t> order;
  for (size_t i = 0; i < im.pieces.size(); ++i) {
    // Empty pieces (control tokens) are never allowed; pieces over 65535 bytes do not fit a depth.
    if (!im.pieces[i].empty() && im.pieces[i].size() < 65535) order.push_back(static_cast<int32_t>(i));
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return im.pieces[a] != im.pieces[b] ? im.pieces[a] < im.pieces[b] : a < b;
  });
  std::vector<uint32_t> path;  // node index per depth - 1
  std::string_view prev;
  for (int32_t id : order) {
    std::string_view p = im.pieces[id];
    size_t lcp = 0;
    while (lcp < p.size() && lcp < prev.size() && lcp < path.size() && p[lcp] == prev[lcp]) ++lcp;
    while (path.size() > lcp) {
      im.nodes[path.back()].skip = static_cast<uint32_t>(im.nodes.size());
      path.pop_back();
    }
    for (size_t d = lcp; d < p.size(); ++d) {
      path.push_back(static_cast<uint32_t>(im.nodes.size()));
      im.nodes.push_back({static_cast<uint8_t>(p[d]), static_cast<uint16_t>(d + 1), 0,
                          static_cast<uint32_t>(im.toks.size()), Impl::kNoSummary});
    }
    im.toks.push_back(id);
    im.max_depth = std::max<uint16_t>(im.max_depth, static_cast<uint16_t>(p.size()));
    prev = p;
  }
  while (!path.empty()) {
    im.nodes[path.back()].skip = static_cast<uint32_t>(im.nodes.size());
    path.pop_back();
  }
  im.nodes.push_back({0, 0, 0, static_cast<uint32_t>(im.toks.size()), Impl::kNoSummary});  // sentinel
  BuildSummaries(&im);
}

VocabIndex::~VocabIndex() = default;
int32_t VocabIndex::size() const { return static_cast<int32_t>(impl_->pieces.size()); }
const std::string& VocabIndex::piece(int32_t id) const { return impl_->pieces[id]; }

void Matcher::FillMask(const VocabIndex& vocab, std::vector<uint8_t>* allowed) const {
  const VocabIndex::Impl& im = vocab.impl();
  allowed->assign(im.pieces.size(), 0);
  uint8_t* out = allowed->data();
  std::lock_guard<std::mutex> lock(state_->engine->mu);
  Engine& eng = *state_->engine;
  if (eng.exhausted()) return;
  std::vector<WalkPos> at(static_cast<size_t>(im.max_depth) + 1);  // at[d]: position after d bytes
  at[0] = state_->Pos();
  const VocabIndex::Impl::Node* nodes = im.nodes.data();
  const int32_t* toks = im.toks.data();
  const size_t n = im.nodes.size() - 1;  // without the sentinel
  size_t i = 0;
  while (i < n) {
    const VocabIndex::Impl::Node& nd = nodes[i];
    WalkPos pos = at[nd.depth - 1];
    if (nd.summary != VocabIndex::Impl::kNoSummary && pos.need == 0) {
      if (eng.SubtreeAccepted(pos.node, im.summaries[nd.summary])) {  // the whole subtree is allowed
        for (uint32_t k = nd.tok_begin, e = nodes[nd.skip].tok_begin; k < e; ++k) out[toks[k]] = 1;
        i = nd.skip;
        continue;
      }
    }
    if (!eng.Step(pos, nd.byte)) {
      i = nd.skip;
      continue;
    }
    at[nd.depth] = pos;
    for (uint32_t k = nd.tok_begin, e = nodes[i + 1].tok_begin; k < e; ++k) out[toks[k]] = 1;
    ++i;
    if (eng.size() > Engine::kHardNodes) {
      // A grammar that makes a new stack set at nearly every byte (a huge enum): keep memory bounded by
      // re-interning just the positions on the current path.
      std::vector<StackSetPtr> keep;
      for (uint16_t d = 0; d <= nd.depth; ++d) keep.push_back(eng.set(at[d].node));
      eng.Reset();
      for (uint16_t d = 0; d <= nd.depth; ++d) at[d].node = eng.Intern(keep[d]);
    }
  }
  if (eng.exhausted()) {  // the allowance ran out in this walk: nothing it found can be trusted
    eng.Reset();
    allowed->assign(im.pieces.size(), 0);
  }
}

}  // namespace lazyslot::grammar
