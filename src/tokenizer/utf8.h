// Streaming UTF-8: token pieces may end inside a multi-byte character (BPE and byte-fallback tokens), so a
// streamer holds back an incomplete tail until the next piece completes it.
#pragma once

#include <string>
#include <string_view>

namespace lazyslot {

// Length of the longest prefix of `s` that does not end inside an incomplete (but so far valid) UTF-8
// sequence. Invalid bytes count as complete: they are passed through, never held back.
size_t CompleteUtf8Prefix(std::string_view s);

// Whether `s` is well-formed UTF-8 (no overlongs, surrogates or values above U+10FFFF).
bool IsValidUtf8(std::string_view s);

class Utf8Stream {
 public:
  // Appends a piece and returns the text that is now complete (possibly empty).
  std::string Push(std::string_view piece);
  // Returns whatever is still held back (an incomplete sequence at the end of the stream) and resets.
  std::string Flush();
  // Bytes currently held back.
  size_t pending() const { return pending_.size(); }

 private:
  std::string pending_;
};

}  // namespace lazyslot
