// The prefix index (prefix_index.h): per-slot chains of block hashes and the hash -> slots map.
#include "engine/prefix_index.h"

#include <algorithm>

namespace lazyslot {

uint64_t PrefixIndex::Chain(uint64_t prev, const TokenId* block) {
  // FNV-1a over the previous hash and the block's token ids, then a final mix (splitmix64's).
  uint64_t h = 1469598103934665603ull ^ prev;
  for (int32_t i = 0; i < kBlock; ++i) {
    const uint32_t t = static_cast<uint32_t>(block[i]);
    for (int b = 0; b < 4; ++b) h = (h ^ ((t >> (8 * b)) & 0xff)) * 1099511628211ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

void PrefixIndex::Extend(int slot, const std::vector<TokenId>& tokens, uint64_t scope) {
  if (static_cast<size_t>(slot) >= chains_.size()) chains_.resize(static_cast<size_t>(slot) + 1);
  std::vector<uint64_t>& chain = chains_[slot];
  const size_t n = tokens.size() / kBlock;
  while (chain.size() < n) {
    const uint64_t prev = chain.empty() ? scope : chain.back();
    const uint64_t h = Chain(prev, tokens.data() + chain.size() * kBlock);
    chain.push_back(h);
    holders_[h].push_back(slot);
  }
}

void PrefixIndex::Truncate(int slot, int32_t n) {
  if (static_cast<size_t>(slot) >= chains_.size()) return;
  std::vector<uint64_t>& chain = chains_[slot];
  const size_t keep = static_cast<size_t>(std::max<int32_t>(n, 0) / kBlock);
  while (chain.size() > keep) {
    auto it = holders_.find(chain.back());
    if (it != holders_.end()) {
      std::vector<int>& v = it->second;
      auto at = std::find(v.begin(), v.end(), slot);
      if (at != v.end()) v.erase(at);
      if (v.empty()) holders_.erase(it);
    }
    chain.pop_back();
  }
}

std::vector<int> PrefixIndex::Longest(const std::vector<TokenId>& prompt, int32_t limit, uint64_t scope,
                                      int32_t* blocks) const {
  *blocks = 0;
  std::vector<int> found;
  const int32_t n = std::min<int32_t>(limit, static_cast<int32_t>(prompt.size())) / kBlock;
  uint64_t h = scope;
  for (int32_t i = 0; i < n; ++i) {
    h = Chain(h, prompt.data() + static_cast<size_t>(i) * kBlock);
    auto it = holders_.find(h);
    if (it == holders_.end()) break;  // a chain that misses here cannot match further on
    found = it->second;
    *blocks = i + 1;
  }
  return found;
}

}  // namespace lazyslot
