// Stop-string matching across token boundaries and UTF-8 completeness for streamed text.
#include "engine/text_output.h"

#include <algorithm>

namespace lazyslot {

TextOutput::TextOutput(std::vector<std::string> stop) : stop_(std::move(stop)) {
  stop_.erase(std::remove(stop_.begin(), stop_.end(), std::string()), stop_.end());
}

size_t CompleteUtf8Prefix(const std::string& s) {
  // Look back at most 3 bytes for a lead byte whose sequence is cut off.
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const unsigned char c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t len = 1;
    if ((c & 0xE0) == 0xC0) len = 2;
    else if ((c & 0xF0) == 0xE0) len = 3;
    else if ((c & 0xF8) == 0xF0) len = 4;
    return len > back ? n - back : n;
  }
  return n;  // only continuation bytes (invalid UTF-8): nothing to wait for
}

std::string TextOutput::Append(const std::string& piece, bool* hit_stop) {
  *hit_stop = false;
  pending_ += piece;
  // A full stop string: send what precedes the earliest one.
  size_t first = std::string::npos;
  for (const std::string& s : stop_) first = std::min(first, pending_.find(s));
  if (first != std::string::npos) {
    *hit_stop = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stop_) {
    for (size_t k = std::min(s.size() - 1, pending_.size()); k > hold; --k) {
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  const size_t send = CompleteUtf8Prefix(pending_.substr(0, pending_.size() - hold));
  std::string out = pending_.substr(0, send);
  pending_.erase(0, send);
  return out;
}

std::string TextOutput::Flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace lazyslot
