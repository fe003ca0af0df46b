// UTF-8 encoding of one code point: the program's one encoder, used by every layer that writes text from
// code points (the tokenizer's byte-level and WPM pieces, the GBNF the JSON schema converter writes, the chat
// template language's string escapes, the synthetic vocabulary). Header-only so layers that depend on core
// alone (grammar) share it and the per-character calls inline.
#pragma once

#include <cstdint>
#include <string>

namespace lazyslot {

// Appends the UTF-8 of `cp` to *out: 1 to 4 bytes for cp <= U+10FFFF; a larger value appends U+FFFD's bytes
// instead. Surrogates (U+D800..DFFF) are encoded like any other value below U+10000 (their three bytes), as
// callers that round-trip leniently decoded text expect.
inline void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp > 0x10FFFF) cp = 0xFFFD;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The UTF-8 of `cp` as a string of its own (AppendUtf8's bytes).
inline std::string EncodeUtf8(uint32_t cp) {
  std::string s;
  AppendUtf8(cp, &s);
  return s;
}

}  // namespace lazyslot
