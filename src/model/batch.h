// A batch of tokens for one forward pass, possibly from several slots (sequences) at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

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

// What every pass checks first: a non-empty batch, arrays of one length, token ids inside [0, n_vocab).
// `who` starts the messages ("forward", "encoder").
inline Status CheckBatch(const Batch& b, int32_t n_vocab, const char* who) {
  const std::string w(who);
  if (b.size() == 0) return InvalidArgument(w + ": empty batch");
  if (b.pos.size() != b.tokens.size() || b.slot.size() != b.tokens.size() ||
      b.output.size() != b.tokens.size()) {
    return InvalidArgument(w + ": batch arrays differ in length");
  }
  for (int32_t i = 0; i < b.size(); ++i) {
    if (b.tokens[i] < 0 || b.tokens[i] >= n_vocab) {
      return InvalidArgument(w + ": token id " + std::to_string(b.tokens[i]) + " at batch index " +
                             std::to_string(i) + " is outside the vocabulary [0, " + std::to_string(n_vocab) +
                             ")");
    }
  }
  return Status::Ok();
}

// Results for the tokens whose output flags were set, in batch order.
struct ForwardOutput {
  std::vector<int32_t> logit_rows;   // batch index of each logits row
  std::vector<float> logits;         // [logit_rows, n_vocab]
  std::vector<int32_t> hidden_rows;  // batch index of each hidden row
  std::vector<float> hidden;         // [hidden_rows, n_embd], the state after output_norm
};

}  // namespace lazyslot
