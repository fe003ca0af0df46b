// A batch of tokens for one forward pass, possibly from several slots (sequences) at once.
#pragma once

#include <cstdint>
#include <vector>

namespace lazyslot {

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> pos;     // position in its sequence (= KV cell)
  std::vector<int32_t> slot;    // which slot's KV cells
  std::vector<uint8_t> output;  // 1: return logits / hidden state for this token

  void Add(int32_t token, int32_t p, int32_t s, bool out) {
    tokens.push_back(token);
    pos.push_back(p);
    slot.push_back(s);
    output.push_back(out ? 1 : 0);
  }
  void Clear() {
    tokens.clear();
    pos.clear();
    slot.clear();
    output.clear();
  }
  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
};

// Results for the tokens whose output flag was set, in batch order.
struct ForwardOutput {
  std::vector<int32_t> rows;   // batch index of each output row
  std::vector<float> logits;   // [rows, n_vocab], when logits were requested
  std::vector<float> hidden;   // [rows, n_embd] after output_norm, when embeddings were requested
};

}  // namespace lazyslot
