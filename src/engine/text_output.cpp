// Stop-string matching across token boundaries and UTF-8 completeness for streamed text.
#include "engine/text_output.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace lazyslot {

TextOutput::TextOutput(std::vector<std::string> stop) : stop_(std::move(stop)) {
  stop_.erase(std::remove(stop_.begin(), stop_.end(), std::string()), stop_.end());
}

std::string TextOutput::Append(const std::string& piece, bool* hit_stop) {
  *hit_stop = false;
  pending_ += piece;
  // A full stop string: send what precedes the earliest one.
  size_t first = std::string::npos;
  for (const std::string& s : stop_) {
    const size_t at = pending_.find(s);
    if (at < first) {
      first = at;
      matched_ = s;
    }
  }
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
