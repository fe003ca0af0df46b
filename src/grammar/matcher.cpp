// The incremental matcher: stack-set expansion and advance over one code point (a pushdown automaton in
// the style of llama.cpp's grammar stacks), the interning Engine, and Matcher's Accept / Allows / CanEnd.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "grammar/matcher_impl.h"

namespace lazyslot::grammar {
namespace {

// Ambiguous grammars can multiply stacks; past these caps extra stacks are dropped (the matcher then may
// reject some valid outputs, never accept an invalid one).
constexpr size_t kMaxStacks = 4096;
constexpr size_t kMaxExpansionSteps = size_t{1} << 18;

// Stack elements one set may hold in all. JSON nested a thousand deep holds a few tens of thousands; an
// ambiguous recursive grammar reaches it within a hundred bytes (4,096 stacks, each as deep as the output),
// and the lineage is exhausted there: each later step would cost more than the last.
constexpr uint64_t kMaxSetElements = uint64_t{1} << 18;

// What one expansion may still do: the steps (capped per set, past which stacks are dropped), the work in
// stack elements (capped by the engine's allowance) and the elements kept (capped by kMaxSetElements); past
// either of the last two the lineage is exhausted.
struct ExpandBudget {
  size_t steps = 0;
  uint64_t work = 0, kept = 0;
  uint64_t work_limit = UINT64_MAX, kept_limit = UINT64_MAX;
  bool over() const { return work > work_limit || kept > kept_limit; }
};

std::string Key(const std::vector<Stack>& stacks) {
  std::string key;
  for (const Stack& s : stacks) {
    uint32_t n = static_cast<uint32_t>(s.size());
    key.append(reinterpret_cast<const char*>(&n), sizeof n);
    key.append(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(uint32_t));
  }
  return key;
}

// Expands `seed` until each resulting stack has a kChars top (or is empty: complete); appends to `out`.
void Expand(const CompiledGrammar& g, Stack seed, std::vector<Stack>* out, ExpandBudget* b) {
  std::vector<Stack> work;
  work.push_back(std::move(seed));
  while (!work.empty()) {
    Stack s = std::move(work.back());
    work.pop_back();
    while (true) {
      if (++b->steps > kMaxExpansionSteps || out->size() >= kMaxStacks || b->over()) return;
      b->work += 1 + s.size();  // this step, and the stack kept or copied below
      if (s.empty()) {
        out->push_back(std::move(s));
        break;
      }
      uint32_t pos = s.back();
      const Element& e = g.code[pos];
      if (e.kind == Element::kEnd) {  // the alternative is done: return to the caller
        s.pop_back();
        continue;
      }
      if (e.kind == Element::kChars) {
        b->kept += s.size();
        out->push_back(std::move(s));
        break;
      }
      // A rule reference: replace it by its continuation (none when it is last: a tail call, so right
      // recursion does not grow the stack), then one copy per alternative.
      s.pop_back();
      if (g.code[pos + 1].kind != Element::kEnd) s.push_back(pos + 1);
      const std::vector<uint32_t>& alts = g.rule_alts[e.value];
      for (size_t i = 1; i < alts.size(); ++i) {
        Stack w = s;
        w.push_back(alts[i]);
        work.push_back(std::move(w));
      }
      s.push_back(alts[0]);
    }
  }
}

StackSetPtr Finish(const CompiledGrammar& g, std::vector<Stack> stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  auto set = std::make_shared<StackSet>();
  std::vector<CpRange> all;
  for (const Stack& s : stacks) {
    if (s.empty()) {
      set->can_end = true;
      continue;
    }
    const CpSet& cs = g.sets[g.code[s.back()].value];
    all.insert(all.end(), cs.begin(), cs.end());
  }
  set->accept = NormalizeSet(std::move(all));
  set->stacks = std::move(stacks);
  return set;
}

}  // namespace

StackSetPtr MakeStackSet(const CompiledGrammar& g, std::vector<Stack> seeds) {
  std::vector<Stack> out;
  ExpandBudget b;
  for (Stack& s : seeds) Expand(g, std::move(s), &out, &b);
  return Finish(g, std::move(out));
}

StackSetPtr Engine::Initial() const {
  std::vector<Stack> seeds;
  for (uint32_t start : g_->rule_alts[g_->root]) seeds.push_back(Stack{start});
  return MakeStackSet(*g_, std::move(seeds));
}

StackSetPtr Engine::Advance(const StackSet& set, uint32_t cp) {
  if (exhausted_) return Finish(*g_, {});  // a walk that goes on after running out ends at once
  ExpandBudget b;
  b.work_limit = work_left_;
  b.kept_limit = kMaxSetElements;
  std::vector<Stack> out;
  for (const Stack& s : set.stacks) {
    if (b.over()) break;
    if (s.empty() || !SetContains(g_->sets[g_->code[s.back()].value], cp)) continue;
    Stack next = s;
    next.back() += 1;
    Expand(*g_, std::move(next), &out, &b);
  }
  if (b.over()) {
    exhausted_ = true;
    return Finish(*g_, {});
  }
  work_left_ -= b.work;
  return Finish(*g_, std::move(out));
}

int32_t Engine::Intern(const StackSetPtr& set) {
  std::string key = Key(set->stacks);
  // Keying the set, and a new node's tables (~1 KiB filled), count against the allowance too (never refused
  // here: the next Advance is).
  const uint64_t work = key.size() / sizeof(uint32_t);
  work_left_ -= std::min(work_left_, work);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  work_left_ -= std::min<uint64_t>(work_left_, kNodeWork);
  int32_t id = static_cast<int32_t>(nodes_.size());
  nodes_.emplace_back();
  Node& n = nodes_.back();
  n.set = set;
  n.byte_next.fill(kUnknown);
  // Code-point classes: every boundary of every top's set, so all code points of a class advance alike.
  std::vector<uint32_t> bounds{0};
  for (const Stack& s : set->stacks) {
    if (s.empty()) continue;
    for (CpRange r : g_->sets[g_->code[s.back()].value]) {
      bounds.push_back(r.lo);
      if (r.hi < kMaxCodePoint) bounds.push_back(r.hi + 1);
    }
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  n.class_next.assign(bounds.size(), kUnknown);
  n.bounds = std::move(bounds);
  for (CpRange r : set->accept) {
    for (uint32_t c = r.lo; c <= r.hi && c < 128; ++c) n.accept_ascii[c >> 6] |= uint64_t{1} << (c & 63);
  }
  auto covers = [&](uint32_t lo, uint32_t hi) {
    auto it = std::lower_bound(set->accept.begin(), set->accept.end(), lo,
                               [](CpRange r, uint32_t v) { return r.hi < v; });
    return it != set->accept.end() && it->lo <= lo && it->hi >= hi;
  };
  n.accepts_nonascii = covers(0x80, 0xD7FF) && covers(0xE000, kMaxCodePoint);  // sets skip surrogates
  ids_.emplace(std::move(key), id);
  return id;
}

void Engine::ComputeUniform(int32_t node) {
  // All 128 ASCII transitions (~128 advances the first time a state is asked), then the most common target.
  int32_t targets[128];
  for (int b = 0; b < 128; ++b) {
    int32_t v = nodes_[node].byte_next[b];
    targets[b] = v == kUnknown ? ComputeByte(node, static_cast<uint8_t>(b)) : v;  // may grow nodes_
  }
  int32_t best = kDead;
  int best_count = 0;
  for (int b = 0; b < 128; ++b) {
    if (targets[b] < 0) continue;
    int count = 0;
    for (int c = 0; c < 128; ++c) count += targets[c] == targets[b];
    if (count > best_count) {
      best_count = count;
      best = targets[b];
    }
    if (best_count > 64) break;
  }
  uint64_t mask[2] = {0, 0};
  for (int b = 0; b < 128; ++b) {
    if (best >= 0 && targets[b] == best) mask[b >> 6] |= uint64_t{1} << (b & 63);
  }
  bool nonascii = best >= 0 && nodes_[node].accepts_nonascii;
  // Every code-point class above ASCII must lead to `best` as well.
  for (size_t k = 0; nonascii && k < nodes_[node].bounds.size(); ++k) {
    const size_t n_classes = nodes_[node].bounds.size();
    uint32_t lo = std::max<uint32_t>(nodes_[node].bounds[k], 0x80);
    uint32_t hi = k + 1 < n_classes ? nodes_[node].bounds[k + 1] - 1 : kMaxCodePoint;
    if (lo >= 0xD800 && lo <= 0xDFFF) lo = 0xE000;
    if (lo > hi) continue;
    nonascii = CodePointNext(node, lo) == best;
  }
  Node& n = nodes_[node];
  n.uniform = best;
  n.uniform_ascii[0] = mask[0];
  n.uniform_ascii[1] = mask[1];
  n.uniform_nonascii = nonascii;
}

void Engine::Reset() {
  nodes_.clear();
  ids_.clear();
  ++generation_;
}

int32_t Engine::CodePointNext(int32_t node, uint32_t cp) {
  const std::vector<uint32_t>& bounds = nodes_[node].bounds;
  size_t k = static_cast<size_t>(std::upper_bound(bounds.begin(), bounds.end(), cp) - bounds.begin()) - 1;
  int32_t v = nodes_[node].class_next[k];
  if (v != kUnknown) return v;
  if (!SetContains(nodes_[node].set->accept, cp)) {
    v = kDead;
  } else {
    StackSetPtr next = Advance(*nodes_[node].set, cp);
    v = Intern(next);  // may grow nodes_: index again below
  }
  nodes_[node].class_next[k] = v;
  return v;
}

int32_t Engine::ComputeByte(int32_t node, uint8_t b) {
  int32_t v;
  if (b < 0x80) {
    v = CodePointNext(node, b);
  } else {
    // A lead byte: is there a code point of that length, starting with these bits, some top accepts?
    int len = (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    v = kDead;
    if (len != 0) {
      static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
      uint32_t bits = b & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
      uint32_t shift = 6 * static_cast<uint32_t>(len - 1);
      uint32_t lo = std::max(bits << shift, kMin[len]);
      uint32_t hi = std::min((bits << shift) | ((1u << shift) - 1), kMaxCodePoint);
      if (lo <= hi && SetIntersects(nodes_[node].set->accept, lo, hi)) v = kLeadOk;
    }
  }
  nodes_[node].byte_next[b] = v;
  return v;
}

bool Engine::StepContinuation(WalkPos& pos, uint8_t b) {
  if ((b & 0xC0) != 0x80) return false;
  uint32_t cp = (pos.cp << 6) | (b & 0x3Fu);
  uint8_t need = static_cast<uint8_t>(pos.need - 1);
  if (need == 0) {
    int32_t v = CodePointNext(pos.node, cp);
    if (v == kDead) return false;
    pos = WalkPos{v, 0, 0, 0};
    return true;
  }
  // Still partial: the code points this prefix can still become form one interval. The lead byte already
  // excluded overlong forms and values above U+10FFFF for all but the lead's own range, so clamp again.
  static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  uint32_t shift = 6u * need;
  uint32_t lo = std::max(cp << shift, kMin[pos.len]);
  uint32_t hi = std::min((cp << shift) | ((1u << shift) - 1), kMaxCodePoint);
  if (lo > hi || !SetIntersects(nodes_[pos.node].set->accept, lo, hi)) return false;
  pos.cp = cp;
  pos.need = need;
  return true;
}

// ---------------------------------------------------------------------------------------------------------

Matcher::Matcher(GrammarPtr grammar) : state_(std::make_unique<State>()) {
  state_->engine = std::make_shared<Engine>(grammar);
  state_->set = state_->engine->Initial();
  state_->grammar = std::move(grammar);
}

Matcher::~Matcher() = default;
Matcher::Matcher(const Matcher& o) : state_(std::make_unique<State>(*o.state_)) {}
Matcher& Matcher::operator=(const Matcher& o) {
  if (this != &o) state_ = std::make_unique<State>(*o.state_);
  return *this;
}
Matcher::Matcher(Matcher&&) noexcept = default;
Matcher& Matcher::operator=(Matcher&&) noexcept = default;

bool Matcher::Accept(std::string_view bytes) {
  if (bytes.empty()) return true;
  std::lock_guard<std::mutex> lock(state_->engine->mu);
  Engine& eng = *state_->engine;
  if (eng.exhausted()) return false;
  WalkPos pos = state_->Pos();
  bool ok = true;
  for (char c : bytes) {
    if (!(ok = eng.Step(pos, static_cast<uint8_t>(c)))) break;
  }
  if (eng.exhausted()) {  // a step ran out of work: its node may hold a cut-short set
    eng.Reset();
    return false;
  }
  if (!ok) return false;
  state_->set = eng.set(pos.node);
  state_->node = pos.node;
  state_->cp = pos.cp;
  state_->need = pos.need;
  state_->len = pos.len;
  return true;
}

bool Matcher::Allows(const VocabIndex& vocab, int32_t token) const {
  if (token < 0 || token >= vocab.size()) return false;
  const std::string& piece = vocab.piece(token);
  if (piece.empty()) return false;
  std::lock_guard<std::mutex> lock(state_->engine->mu);
  Engine& eng = *state_->engine;
  if (eng.exhausted()) return false;
  WalkPos pos = state_->Pos();
  bool ok = true;
  for (char c : piece) {
    if (!(ok = eng.Step(pos, static_cast<uint8_t>(c)))) break;
  }
  if (eng.exhausted()) {
    eng.Reset();
    return false;
  }
  return ok;
}

void Matcher::RefillWork() {
  std::lock_guard<std::mutex> lock(state_->engine->mu);
  state_->engine->RefillWork();
}

bool Matcher::Exhausted() const {
  std::lock_guard<std::mutex> lock(state_->engine->mu);
  return state_->engine->exhausted();
}

bool Matcher::CanEnd() const { return state_->need == 0 && state_->set->can_end; }

bool Matcher::MustEnd() const { return CanEnd() && state_->set->accept.empty(); }

}  // namespace lazyslot::grammar
