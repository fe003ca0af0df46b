// The matcher's machinery, shared by matcher.cpp (Accept, Allows) and vocab_index.cpp (FillMask): sets of
// pushdown stacks, interned into nodes with lazily filled byte/code-point transition tables, so that walking
// the vocabulary trie costs one table lookup per trie edge in the common case.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_ir.h"

namespace lazyslot::grammar {

// A position in the grammar: offsets into CompiledGrammar::code, innermost last. The top (back) is always
// a kChars element; an empty stack means the root rule is complete.
using Stack = std::vector<uint32_t>;

// A deduplicated, sorted set of stacks: the parser states the output so far may be in.
struct StackSet {
  std::vector<Stack> stacks;
  CpSet accept;          // union of the code points the tops accept
  bool can_end = false;  // holds the empty stack
};
using StackSetPtr = std::shared_ptr<const StackSet>;

// Where a walk stands: a node (interned stack set) plus the part of a UTF-8 sequence read so far.
struct WalkPos {
  int32_t node = -1;
  uint32_t cp = 0;   // bits of the partial code point
  uint8_t need = 0;  // continuation bytes still expected (0: at a code-point boundary)
  uint8_t len = 0;   // length of the sequence being read
};

// One lineage of matchers (a Matcher and its copies) shares an Engine: the interned nodes and their
// transition tables. Not thread-safe by itself: callers hold `mu` for the whole operation.
class Engine {
 public:
  static constexpr int32_t kUnknown = -2, kDead = -1, kLeadOk = -3;
  static constexpr size_t kSoftNodes = 4096;   // reset between calls above this (~1 KiB table per node)
  static constexpr size_t kHardNodes = 16384;  // reset inside a FillMask walk above this
  // Parser work a lineage may spend between two RefillWork() calls, in units of one stack element expanded,
  // copied or kept (grammar.h, Matcher::RefillWork).
  static constexpr uint64_t kWorkAllowance = uint64_t{1} << 23;
  static constexpr uint64_t kNodeWork = 256;  // a new node's tables, in the same units

  explicit Engine(GrammarPtr g) : g_(std::move(g)) {}

  std::mutex mu;

  const CompiledGrammar& grammar() const { return *g_; }
  uint64_t generation() const { return generation_; }
  size_t size() const { return nodes_.size(); }
  const StackSetPtr& set(int32_t node) const { return nodes_[node].set; }

  // The stack set before any input.
  StackSetPtr Initial() const;
  // The node of `set`, creating it if needed.
  int32_t Intern(const StackSetPtr& set);
  // Drops every node (ids become invalid; generation() changes).
  void Reset();

  // The allowance (Matcher::RefillWork). Once spent, the lineage is exhausted for good: every Advance from
  // then on yields the empty set (so walks end at once) and the public calls refuse everything. A node made
  // while the allowance ran out may hold a cut-short set, so the caller Reset()s the engine after such a call.
  void RefillWork() { work_left_ = kWorkAllowance; }
  bool exhausted() const { return exhausted_; }

  // A trie subtree in brief: its ASCII bytes (a 128-bit set), whether it has other bytes, whether all its
  // tokens are well-formed UTF-8 (complete or cut short) from its first byte, and its longest token in
  // code points.
  struct SubtreeBytes {
    uint64_t ascii[2];
    bool nonascii;
    bool valid;
    uint16_t max_cps;
  };

  // Whether every token of such a subtree is accepted from `node` (at a code-point boundary). True when,
  // for max_cps steps, each state sends every byte the subtree holds to one common next state (the
  // "uniform" target): inside a JSON string that target is the state itself (a loop, checked once), in a
  // string with maxLength it is the next counter. This lets FillMask skip whole subtrees.
  inline bool SubtreeAccepted(int32_t node, const SubtreeBytes& sub) {
    for (uint16_t j = 0; j < sub.max_cps; ++j) {
      const Node& n = nodes_[node];
      if ((sub.ascii[0] & ~n.accept_ascii[0]) | (sub.ascii[1] & ~n.accept_ascii[1])) return false;  // cheap
      if (sub.nonascii && (!sub.valid || !n.accepts_nonascii)) return false;
      if (n.uniform == kNotComputed) ComputeUniform(node);
      const Node& u = nodes_[node];
      if (u.uniform < 0 || (sub.ascii[0] & ~u.uniform_ascii[0]) | (sub.ascii[1] & ~u.uniform_ascii[1]))
        return false;
      if (sub.nonascii && !u.uniform_nonascii) return false;
      if (u.uniform == node) return true;  // a loop: every later step is the same
      node = u.uniform;
    }
    return true;
  }

  // Advances `pos` over one byte; false (pos unchanged) when no stack can continue with it.
  inline bool Step(WalkPos& pos, uint8_t b) {
    if (pos.need == 0) {
      int32_t v = nodes_[pos.node].byte_next[b];
      if (v == kUnknown) v = ComputeByte(pos.node, b);
      if (v == kDead) return false;
      if (b < 0x80) {
        pos.node = v;
        return true;
      }
      pos.len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
      pos.need = static_cast<uint8_t>(pos.len - 1);
      pos.cp = b & (pos.len == 2 ? 0x1Fu : pos.len == 3 ? 0x0Fu : 0x07u);
      return true;
    }
    return StepContinuation(pos, b);
  }

 private:
  struct Node {
    StackSetPtr set;
    std::array<int32_t, 256> byte_next;  // ASCII: next node; lead bytes: kLeadOk; else kDead / kUnknown
    std::vector<uint32_t> bounds;        // code-point classes: class k is [bounds[k], bounds[k+1])
    std::vector<int32_t> class_next;     // class -> next node, kDead or kUnknown
    uint64_t accept_ascii[2] = {0, 0};   // ASCII code points some top accepts
    bool accepts_nonascii = false;       // accept covers every non-ASCII code point
    // The next state most ASCII bytes lead to (kNotComputed until needed, kDead if none), the ASCII bytes
    // that lead there, and whether every non-ASCII code point does too.
    int32_t uniform = kNotComputed;
    uint64_t uniform_ascii[2] = {0, 0};
    bool uniform_nonascii = false;
  };
  static constexpr int32_t kNotComputed = -4;

  void ComputeUniform(int32_t node);

  int32_t ComputeByte(int32_t node, uint8_t b);
  bool StepContinuation(WalkPos& pos, uint8_t b);
  int32_t CodePointNext(int32_t node, uint32_t cp);
  StackSetPtr Advance(const StackSet& set, uint32_t cp);

  GrammarPtr g_;
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int32_t> ids_;  // serialized stacks -> node
  uint64_t generation_ = 0;
  uint64_t work_left_ = kWorkAllowance;
  bool exhausted_ = false;
};

// Builds a StackSet from raw stacks: expands rule references until every top is a kChars element.
StackSetPtr MakeStackSet(const CompiledGrammar& g, std::vector<Stack> seeds);

}  // namespace lazyslot::grammar

namespace lazyslot::grammar {

// Matcher's state: the stack set, the partial code point, and a cached node id in the shared engine.
struct Matcher::State {
  GrammarPtr grammar;
  std::shared_ptr<Engine> engine;
  StackSetPtr set;
  uint32_t cp = 0;
  uint8_t need = 0, len = 0;
  mutable int32_t node = -1;  // valid while engine->generation() == node_generation
  mutable uint64_t node_generation = ~uint64_t{0};

  // The walk position of this state (engine->mu held).
  WalkPos Pos() const {
    if (engine->size() > Engine::kSoftNodes) engine->Reset();
    if (node_generation != engine->generation() || node < 0) {
      node = engine->Intern(set);
      node_generation = engine->generation();
    }
    return WalkPos{node, cp, need, len};
  }
};

}  // namespace lazyslot::grammar
