// DRY ("don't repeat yourself") repetition penalty, llama-server's semantics: a token that would extend a
// repeat of the recent context (a suffix of it that also occurs earlier) of length L >= allowed_length loses
// multiplier * base^(L - allowed_length) from its logit. A sequence breaker (text such as "\n") caps how far
// back a repeat may reach: no match runs across the most recent breaker, and a token that is a whole
// breaker is never penalised.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lazyslot {

class Tokenizer;

// Sequence breakers as token sequences, by their first ("head") token. A head whose text contains a whole
// breaker has an empty tail; a head whose text ends with the start of a breaker has, as a tail, the tokens
// of the rest of that breaker (at most 20 of them).
using DryBreakers = std::unordered_map<int32_t, std::vector<std::vector<int32_t>>>;

// Finds the breaker token sequences over the whole vocabulary (empty breakers are skipped, longer ones cut
// to 40 bytes, as llama-server does).
DryBreakers ResolveDryBreakers(const Tokenizer& tok, const std::vector<std::string>& breakers);

class DryPenalty {
 public:
  // last_n: tokens scanned for repeats (-1: all tokens accepted). Expects multiplier != 0, base >= 1,
  // last_n != 0 (DRY is off otherwise, and the Sampler makes no DryPenalty).
  DryPenalty(float multiplier, float base, int32_t allowed_length, int32_t last_n, DryBreakers breakers);

  void Accept(int32_t token);
  // The (token, penalty) pairs for the next token, sorted by token; penalty > 0 is subtracted from the
  // logit. Reuses its buffers, so a steady state allocates nothing. Returns false when it did not look for
  // repeats (too few tokens since the start or the last breaker), true otherwise, even with none found.
  bool Compute(std::vector<std::pair<int32_t, float>>* out);

 private:
  bool IsWholeBreaker(int32_t token) const;

  float multiplier_;
  float base_;
  int32_t allowed_;
  int32_t last_n_;
  DryBreakers breakers_;
  std::vector<int32_t> hist_;  // accepted tokens, oldest first (trimmed now and then when bounded)
  // Scratch.
  std::vector<int32_t> rev_;  // the scanned tokens, newest first
  std::vector<int32_t> z_;    // z_[k]: length of the longest common prefix of rev_ and rev_[k..]
  std::vector<std::pair<int32_t, int32_t>> ends_;  // (token that would extend a repeat, repeat length)
};

}  // namespace lazyslot
