// Utf8Stream and helpers (see utf8.h).
#include "tokenizer/utf8.h"

#include <cstdint>

namespace lazyslot {

namespace {

// Expected sequence length for a lead byte, 0 for a byte that cannot start a sequence.
size_t LeadLength(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// Whether byte k (1-based within the sequence) is an acceptable continuation for lead byte `lead`.
bool ValidContinuation(uint8_t lead, size_t k, uint8_t b) {
  if ((b & 0xC0) != 0x80) return false;
  if (k != 1) return true;
  if (lead == 0xE0) return b >= 0xA0;  // no overlong 3-byte forms
  if (lead == 0xED) return b <= 0x9F;  // no surrogates
  if (lead == 0xF0) return b >= 0x90;  // no overlong 4-byte forms
  if (lead == 0xF4) return b <= 0x8F;  // nothing above U+10FFFF
  return true;
}

}  // namespace

size_t CompleteUtf8Prefix(std::string_view s) {
  // Only the last 3 bytes can belong to an unfinished sequence; look for its lead byte.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const uint8_t b = static_cast<uint8_t>(s[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    const size_t need = LeadLength(b);
    if (need <= back) return n;  // ASCII, invalid lead, or a sequence that is already complete
    for (size_t k = 1; k < back; ++k) {
      if (!ValidContinuation(b, k, static_cast<uint8_t>(s[n - back + k]))) return n;  // broken: pass through
    }
    return n - back;  // a valid start that needs more bytes
  }
  return n;
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t lead = static_cast<uint8_t>(s[i]);
    const size_t need = LeadLength(lead);
    if (need == 0 || i + need > s.size()) return false;
    for (size_t k = 1; k < need; ++k) {
      if (!ValidContinuation(lead, k, static_cast<uint8_t>(s[i + k]))) return false;
    }
    i += need;
  }
  return true;
}

std::string Utf8Stream::Push(std::string_view piece) {
  pending_.append(piece);
  const size_t complete = CompleteUtf8Prefix(pending_);
  std::string out = pending_.substr(0, complete);
  pending_.erase(0, complete);
  return out;
}

std::string Utf8Stream::Flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace lazyslot
