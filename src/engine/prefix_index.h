// Which slots hold which token prefixes (issue 38): a slot's held tokens are cut into blocks of kBlock tokens,
// and the chain hash of its first i + 1 blocks (each block's hash folded into the one before) maps to the
// slots holding them. A prompt's longest held prefix is then found in O(prompt / kBlock) hash lookups,
// whatever the number of slots. Entries are hashes: the caller compares the tokens of the slot it picks.
// A chain starts from its cache scope (GenerationRequest::cache_scope), so prefixes of different scopes
// never meet.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace lazyslot {

class PrefixIndex {
 public:
  static constexpr int32_t kBlock = 32;

  // Slots (or any small ids) from 0; the index grows to ids past n_slots as they are extended.
  explicit PrefixIndex(int n_slots) : chains_(n_slots) {}

  // The slot now holds `tokens` of cache scope `scope`, which extend what it held when last told (Truncate
  // first otherwise, and to 0 when the scope changes): its new complete blocks are indexed.
  void Extend(int slot, const std::vector<TokenId>& tokens, uint64_t scope);
  // The slot keeps only its first `n` tokens: blocks past them leave the index.
  void Truncate(int slot, int32_t n);
  // The slots whose first `blocks` blocks hash as the prompt's in `scope`, for the largest such `blocks` (at
  // most limit / kBlock); empty when no slot holds the prompt's first block.
  std::vector<int> Longest(const std::vector<TokenId>& prompt, int32_t limit, uint64_t scope,
                           int32_t* blocks) const;
  // Indexed blocks of one slot (for tests).
  size_t blocks(int slot) const { return chains_[slot].size(); }

 private:
  static uint64_t Chain(uint64_t prev, const TokenId* block);

  std::vector<std::vector<uint64_t>> chains_;                 // per slot: the chain hash of each block
  std::unordered_map<uint64_t, std::vector<int>> holders_;    // chain hash -> slots
};

}  // namespace lazyslot
