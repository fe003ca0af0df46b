// A batch of tokens for one forward pass, possibly from several slots (sequences) at once.
#pragma once

#include <cstdint>
#include <vector>

namespace lazyslot {

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> pos;     // position in its sequence (= KV cell)
  std::vector<int32_t> slot;    // which slot's KV cells
  std::vector<uint8_t> output;  // OutputFlags: what to return for this token

  enum OutputFlags : uint8_t { kNone = 0, kLogits = 1, kHidden = 2 };

  void Add(int32_t token, int32_t p, int32_t s, uint8_t out) {
    tokens.push_back(token);
    pos.push_back(p);
    slot.push_back(s);
    output.push_back(out);
  }
  void Clear() {
    tokens.clear();
    pos.clear();
    slot.clear();
    output.clear();
  }
  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
};

// Results for the tokens whose output flags were set, in batch order.
struct ForwardOutput {
  std::vector<int32_t> logit_rows;   // batch index of each logits row
  std::vector<float> logits;         // [logit_rows, n_vocab]
  std::vector<int32_t> hidden_rows;  // batch index of each hidden row
  std::vector<float> hidden;         // [hidden_rows, n_embd], the state after output_norm
};

}  // namespace lazyslot
