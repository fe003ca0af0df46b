// Turns a generation's token pieces into text deltas that are safe to send: only complete UTF-8 sequences,
// and never the start of a stop string until it is known not to be one. A stop string may span tokens.
#pragma once

#include <string>
#include <vector>

namespace lazyslot {

class TextOutput {
 public:
  TextOutput() = default;
  explicit TextOutput(std::vector<std::string> stop);

  // Adds a piece; returns the text that can be sent now. Sets *hit_stop when a stop string appeared: the
  // returned text then ends right before it, and the rest is dropped.
  std::string Append(const std::string& piece, bool* hit_stop);
  // Text still held back at the end of the generation (an unfinished stop-string prefix, partial UTF-8).
  std::string Flush();
  // The stop string that Append found (the earliest in the text; the first listed on a tie), else empty.
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stop_;
  std::string pending_;  // not yet sent
  std::string matched_;
};

}  // namespace lazyslot
