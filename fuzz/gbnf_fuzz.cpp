// libFuzzer target: `<grammar>\n#input#\n<bytes>` (without the separator, everything is the grammar and the
// input is empty). The grammar goes through grammar::ParseGbnf as a request's `grammar` field does; an
// accepted grammar then runs a Matcher over the input bytes. Any outcome is fine except a crash, an escaping
// exception, an error that is not InvalidArgument "grammar: line L, column C: ..." pointing inside the text,
// or a matcher that contradicts itself: Accept of a whole chunk must equal Accept of its bytes one by one, a
// refused chunk leaves the state unchanged, copies behave like the original, FillMask agrees with Allows and
// with Accept on a small vocabulary, and CanEnd / MustEnd / MinBytesToEnd agree with each other. A grammar too
// ambiguous to follow within the matcher's parser-work bounds ends the checks (Exhausted: a refusal).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "grammar/grammar.h"

namespace {

using lazyslot::grammar::Matcher;

constexpr std::string_view kSep = "\n#input#\n";

void CheckError(const lazyslot::Status& s, std::string_view text) {
  FUZZ_CHECK(s.code() == lazyslot::Code::kInvalidArgument, "code " + std::to_string(static_cast<int>(s.code())));
  const std::string& m = s.message();
  unsigned long line = 0, col = 0;
  int used = 0;
  FUZZ_CHECK(std::sscanf(m.c_str(), "grammar: line %lu, column %lu: %n", &line, &col, &used) == 2 && used > 0 &&
                 static_cast<size_t>(used) < m.size(),
             "message " + lazyslot::fuzz::Escape(m));
  // Lines and columns are 1-based; a column may point one past the end of its line (the end of input).
  size_t lines = 1, longest = 0, cur = 0;
  for (char c : text) {
    if (c == '\n') {
      ++lines;
      cur = 0;
    } else if (++cur > longest) {
      longest = cur;
    }
  }
  FUZZ_CHECK(line >= 1 && line <= lines + 1, "line " + std::to_string(line) + " of " + std::to_string(lines));
  FUZZ_CHECK(col >= 1 && col <= longest + 2, "column " + std::to_string(col) + ", longest line " +
                                                 std::to_string(longest));
}

struct Snapshot {
  bool can_end, must_end;
  size_t min_bytes;
  bool operator==(const Snapshot&) const = default;
};

Snapshot Snap(const Matcher& m) {
  const Snapshot s{m.CanEnd(), m.MustEnd(), m.MinBytesToEnd()};
  FUZZ_CHECK(!s.must_end || s.can_end, "MustEnd without CanEnd");
  FUZZ_CHECK((s.min_bytes == 0) == s.can_end, "MinBytesToEnd " + std::to_string(s.min_bytes) + " vs CanEnd " +
                                                  std::to_string(s.can_end));
  return s;
}

// Pieces every grammar may meet: single bytes of each UTF-8 class, a multi-byte character whole and cut, and
// a few words; one empty piece (control tokens are never allowed under a grammar).
const lazyslot::grammar::VocabIndex& Vocab() {
  static const auto* v = new lazyslot::grammar::VocabIndex(std::vector<std::string>{
      "", "a", "b", "z", "0", "9", " ", "\n", "\"", "\\", "{", "}", "[", "]", ",", ":", "-", ".", "ab", "abc",
      "true", "null", "\xC3", "\xA9", "\xC3\xA9", "\xE6\x97\xA5", "\xE6\x97", "\xF0\x9F\x98\x80", "\x80",
      "\xFF", std::string(1, '\0'), "root", "{\"", "\":"});
  return *v;
}

// Whether the checks can go on: a grammar too ambiguous to follow exhausts the matcher's parser-work
// allowance (grammar.h), after which it refuses everything, so the comparisons below no longer hold.
bool Usable(const Matcher& m) { return !m.Exhausted(); }

void CheckMask(Matcher& m) {
  const auto& vocab = Vocab();
  std::vector<uint8_t> mask;
  m.RefillWork();
  m.FillMask(vocab, &mask);
  if (!Usable(m)) return;
  FUZZ_CHECK(mask.size() == static_cast<size_t>(vocab.size()), "mask size");
  FUZZ_CHECK(!mask[0], "the empty piece allowed");
  for (int32_t t = 1; t < vocab.size(); ++t) {
    m.RefillWork();
    const bool allows = m.Allows(vocab, t);
    if (!Usable(m)) return;
    FUZZ_CHECK((mask[t] != 0) == allows, "FillMask and Allows differ on piece " + std::to_string(t));
    Matcher copy(m);
    const bool accepts = copy.Accept(vocab.piece(t));
    if (!Usable(copy)) return;
    FUZZ_CHECK((mask[t] != 0) == accepts, "FillMask and Accept differ on piece " +
                                              lazyslot::fuzz::Escape(vocab.piece(t)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  const size_t sep = raw.find(kSep);
  const std::string_view text = sep == std::string_view::npos ? raw : raw.substr(0, sep);
  const std::string_view input = sep == std::string_view::npos ? std::string_view() : raw.substr(sep + kSep.size());

  auto g = lazyslot::grammar::ParseGbnf(text);
  if (!g.ok()) {
    CheckError(g.status(), text);
    return 0;
  }
  FUZZ_CHECK(*g != nullptr, "accepted grammar is null");
  Matcher whole(*g), bytewise(*g);
  Snap(whole);
  CheckMask(whole);
  // Chunks of 1, 2, 3, ... bytes, up to 64 steps (the matcher's cost per step is bounded, grammar.h).
  size_t pos = 0, len = 1;
  for (int step = 0; step < 64 && pos < input.size(); ++step, len = len % 5 + 1) {
    const std::string_view chunk = input.substr(pos, len);
    const Snapshot before = Snap(whole);
    whole.RefillWork();
    bytewise.RefillWork();
    Matcher copy(whole);
    const bool ok = whole.Accept(chunk);
    bool ok_bytes = true;
    Matcher probe(bytewise);
    for (char c : chunk) {
      if (!probe.Accept(std::string_view(&c, 1))) {
        ok_bytes = false;
        break;
      }
    }
    if (!Usable(whole) || !Usable(probe)) return 0;  // too ambiguous to follow: a refusal, not a finding
    FUZZ_CHECK(ok == ok_bytes, "chunk " + lazyslot::fuzz::Escape(std::string(chunk)) + " accepted " +
                                   std::to_string(ok) + " whole but " + std::to_string(ok_bytes) + " byte by byte");
    whole.RefillWork();
    const bool copy_ok = copy.Accept(chunk);
    if (!Usable(copy)) return 0;
    FUZZ_CHECK(copy_ok == ok, "a copy disagrees");
    if (!ok) {
      FUZZ_CHECK(Snap(whole) == before, "a refused chunk changed the state");
      // Skip the refused byte, as a sampler would never pick it; try the rest from the same state.
      ++pos;
      continue;
    }
    bytewise = probe;
    FUZZ_CHECK(Snap(whole) == Snap(bytewise), "whole and byte-by-byte states differ");
    FUZZ_CHECK(Snap(copy) == Snap(whole), "copy state differs");
    pos += chunk.size();
  }
  CheckMask(whole);
  return 0;
}
