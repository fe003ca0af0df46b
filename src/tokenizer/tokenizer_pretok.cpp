// Word splitters for byte-level BPE (see tokenizer_pretok.h). Semantics follow a backtracking regex engine on
// the alternations listed there, with \p{L}, \p{N}, \p{P} from the generated category tables and \s the
// Unicode White_Space set. Every code point is either \s, \p{L}, \p{N} or "other" ([^\s\p{L}\p{N}]),
// unassigned ones included, so every position matches some alternative.
#include "tokenizer/tokenizer_pretok.h"

#include <string>

#include "tokenizer/unicode.h"

namespace lazyslot::tok {

namespace {

using unicode::kFlagLetter;
using unicode::kFlagNumber;
using unicode::kFlagPunct;
using unicode::kFlagWhite;

// Splitting walks one fragment [begin, end) of a code point array; outside it, cp() is kOutside and flags
// are 0, which is how "end of input" reaches the look-ahead in \s+(?!\S).
class Walker {
 public:
  static constexpr uint32_t kOutside = 0xFFFFFFFF;

  Walker(const uint32_t* cps, const uint8_t* flags, size_t begin, size_t end, std::vector<uint32_t>* lengths)
      : cps_(cps), flags_(flags), begin_(begin), end_(end), prev_(begin), lengths_(lengths) {}

  uint32_t cp(size_t i) const { return i >= begin_ && i < end_ ? cps_[i] : kOutside; }
  uint8_t fl(size_t i) const { return i >= begin_ && i < end_ ? flags_[i] : 0; }
  // [^\s\p{L}\p{N}] for a position inside the fragment.
  bool other(size_t i) const {
    const uint8_t f = fl(i);
    return f != 0 && (f & (kFlagWhite | kFlagLetter | kFlagNumber)) == 0;
  }
  // Ends the current word at `pos` (no-op for an empty word).
  void Emit(size_t pos) {
    if (pos > prev_) lengths_->push_back(static_cast<uint32_t>(pos - prev_));
    prev_ = pos;
  }
  size_t begin() const { return begin_; }
  size_t end() const { return end_; }

  // Length of the contraction ('s 't 're 've 'm 'll 'd) starting at pos, or 0.
  size_t Contraction(size_t pos, bool ignore_case) const {
    if (cp(pos) != '\'' || pos + 1 >= end_) return 0;
    auto low = [&](uint32_t c) { return ignore_case && c >= 'A' && c <= 'Z' ? c + 32 : c; };
    const uint32_t c1 = low(cp(pos + 1));
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
    if (pos + 2 >= end_) return 0;
    const uint32_t c2 = low(cp(pos + 2));
    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
    return 0;
  }

  // \s+(?!\S)|\s+ at pos (which must be whitespace): a run followed by a non-space gives back its last
  // character unless that would leave nothing. Returns the end of the match.
  size_t WhitespaceRun(size_t pos) const {
    size_t n = 0;
    while (fl(pos + n) & kFlagWhite) ++n;
    if (n > 1 && cp(pos + n) != kOutside) return pos + n - 1;
    return pos + n;
  }

 private:
  const uint32_t* cps_;
  const uint8_t* flags_;
  size_t begin_, end_, prev_;
  std::vector<uint32_t>* lengths_;
};

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
void SplitGpt2(Walker& w) {
  size_t pos = w.begin();
  while (pos < w.end()) {
    if (size_t n = w.Contraction(pos, /*ignore_case=*/false)) {
      pos += n;
      w.Emit(pos);
      continue;
    }
    const size_t body = w.cp(pos) == ' ' ? pos + 1 : pos;  // optional leading space
    const uint8_t f = w.fl(body);
    if (f & (kFlagLetter | kFlagNumber)) {
      const uint8_t cls = f & kFlagLetter ? kFlagLetter : kFlagNumber;
      pos = body;
      while (w.fl(pos) & cls) ++pos;
      w.Emit(pos);
      continue;
    }
    if (w.other(body)) {
      pos = body;
      while (w.other(pos)) ++pos;
      w.Emit(pos);
      continue;
    }
    // Whitespace. A lone space or whitespace char before a non-space matches nothing in the regex and is
    // left as a one-character gap, which becomes a word of its own: the same as taking it.
    const size_t end = w.WhitespaceRun(pos);
    pos = end > pos ? end : pos + 1;
    w.Emit(pos);
  }
}

// Llama-3 / Qwen2: (?i:contractions)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
void SplitLlama3(Walker& w, size_t max_digits) {
  size_t pos = w.begin();
  while (pos < w.end()) {
    if (size_t n = w.Contraction(pos, /*ignore_case=*/true)) {
      pos += n;
      w.Emit(pos);
      continue;
    }
    const uint32_t c = w.cp(pos);
    const uint8_t f = w.fl(pos);
    // [^\r\n\p{L}\p{N}]?\p{L}+ : a letter run, optionally led by one char that is not CR/LF/letter/digit.
    if (c != '\r' && c != '\n' && !(f & kFlagNumber) &&
        ((f & kFlagLetter) || (w.fl(pos + 1) & kFlagLetter))) {
      ++pos;
      while (w.fl(pos) & kFlagLetter) ++pos;
      w.Emit(pos);
      continue;
    }
    if (f & kFlagNumber) {
      size_t n = 0;
      while (n < max_digits && (w.fl(pos) & kFlagNumber)) ++pos, ++n;
      w.Emit(pos);
      continue;
    }
    const size_t body = c == ' ' ? pos + 1 : pos;
    if (w.other(body)) {
      pos = body;
      while (w.other(pos)) ++pos;
      while (w.cp(pos) == '\r' || w.cp(pos) == '\n') ++pos;
      w.Emit(pos);
      continue;
    }
    // Whitespace run: \s*[\r\n]+ ends after the run's last CR/LF; else \s+(?!\S) or \s+.
    size_t run = pos, last_newline = 0;
    while (w.fl(run) & kFlagWhite) {
      if (w.cp(run) == '\r' || w.cp(run) == '\n') last_newline = run + 1;
      ++run;
    }
    if (last_newline > 0) {
      pos = last_newline;
    } else if (run > pos) {
      pos = w.WhitespaceRun(pos);
    } else {
      ++pos;  // unreachable: every code point is \s, \p{L}, \p{N} or other
    }
    w.Emit(pos);
  }
}

// Splits [begin, end) into maximal runs of code points whose flags satisfy `in_run` and the gaps between.
template <typename Pred>
void SplitRuns(Walker& w, Pred in_run) {
  size_t pos = w.begin();
  while (pos < w.end()) {
    const bool inside = in_run(pos);
    while (pos < w.end() && in_run(pos) == inside) ++pos;
    w.Emit(pos);
  }
}

// [0-9][0-9][0-9]: successive leftmost groups of three ASCII digits, and the gaps between them.
void SplitDigitTriples(Walker& w) {
  auto digit = [&](size_t i) { return w.cp(i) >= '0' && w.cp(i) <= '9'; };
  size_t pos = w.begin();
  while (pos < w.end()) {
    if (digit(pos) && digit(pos + 1) && digit(pos + 2)) {
      w.Emit(pos);
      pos += 3;
      w.Emit(pos);
    } else {
      ++pos;
    }
  }
  w.Emit(w.end());
}

// Applies one splitting stage to every word of `in` (words never merge across earlier boundaries).
template <typename Stage>
std::vector<uint32_t> ApplyStage(const std::vector<uint32_t>& cps, const std::vector<uint8_t>& flags,
                                 const std::vector<uint32_t>& in, Stage stage) {
  std::vector<uint32_t> out;
  out.reserve(in.size() * 2);
  size_t start = 0;
  for (uint32_t len : in) {
    Walker w(cps.data(), flags.data(), start, start + len, &out);
    stage(w);
    start += len;
  }
  return out;
}

}  // namespace

bool PreTypeFromName(std::string_view name, PreType* type) {
  static const struct {
    const char* name;
    PreType type;
  } kNames[] = {
      {"default", PreType::kDefault},  {"gpt-2", PreType::kGpt2},    {"phi-2", PreType::kGpt2},
      {"llama-bpe", PreType::kLlama3}, {"llama3", PreType::kLlama3}, {"llama-v3", PreType::kLlama3},
      {"falcon3", PreType::kLlama3},   {"qwen2", PreType::kQwen2},   {"deepseek-r1-qwen", PreType::kQwen2},
  };
  for (const auto& entry : kNames) {
    if (name == entry.name) {
      *type = entry.type;
      return true;
    }
  }
  return false;
}

const char* PreTypeName(PreType type) {
  switch (type) {
    case PreType::kDefault:
      return "default";
    case PreType::kGpt2:
      return "gpt-2";
    case PreType::kLlama3:
      return "llama-bpe";
    case PreType::kQwen2:
      return "qwen2";
  }
  return "?";
}

void SplitWords(PreType type, const std::vector<uint32_t>& cps, std::vector<uint32_t>* lengths) {
  if (cps.empty()) return;
  std::vector<uint8_t> flags(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) flags[i] = unicode::Flags(cps[i]);
  std::vector<uint32_t> whole = {static_cast<uint32_t>(cps.size())};
  std::vector<uint32_t> words;
  switch (type) {
    case PreType::kGpt2:
      words = ApplyStage(cps, flags, whole, [](Walker& w) { SplitGpt2(w); });
      break;
    case PreType::kLlama3:
      words = ApplyStage(cps, flags, whole, [](Walker& w) { SplitLlama3(w, 3); });
      break;
    case PreType::kQwen2:
      words = ApplyStage(cps, flags, whole, [](Walker& w) { SplitLlama3(w, 1); });
      break;
    case PreType::kDefault: {
      // [\p{P}\$\+<=>\^~\|]+ , then GPT-2, then \p{N}+ , then [0-9][0-9][0-9].
      auto punct = [&](Walker& w) {
        SplitRuns(w, [&](size_t i) {
          const uint32_t c = w.cp(i);
          return (w.fl(i) & kFlagPunct) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' ||
                 c == '^' || c == '~' || c == '|';
        });
      };
      words = ApplyStage(cps, flags, whole, punct);
      words = ApplyStage(cps, flags, words, [](Walker& w) { SplitGpt2(w); });
      words = ApplyStage(cps, flags, words, [](Walker& w) {
        SplitRuns(w, [&](size_t i) { return (w.fl(i) & kFlagNumber) != 0; });
      });
      words = ApplyStage(cps, flags, words, [](Walker& w) { SplitDigitTriples(w); });
      break;
    }
  }
  lengths->insert(lengths->end(), words.begin(), words.end());
}

}  // namespace lazyslot::tok
