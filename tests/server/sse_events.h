// Test helper for the named-event streams of the Anthropic and Responses APIs: splits SSE text into
// (name, data) events, checking that each is exactly "event: NAME\ndata: JSON\n\n" and that data.type
// repeats the name.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lazyslot::testing {

struct SseEvent {
  std::string name;
  nlohmann::ordered_json data;
};

inline std::vector<SseEvent> ParseNamedSse(const std::string& text) {
  std::vector<SseEvent> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event at " << pos;
    if (end == std::string::npos) break;
    const std::string block = text.substr(pos, end - pos);
    pos = end + 2;
    const size_t nl = block.find('\n');
    EXPECT_EQ(block.rfind("event: ", 0), 0u) << block;
    EXPECT_NE(nl, std::string::npos) << block;
    if (nl == std::string::npos) continue;
    EXPECT_EQ(block.compare(nl + 1, 6, "data: "), 0) << block;
    SseEvent e{block.substr(7, nl - 7), nlohmann::ordered_json::parse(block.substr(nl + 7))};
    EXPECT_EQ(e.data["type"], e.name) << block;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace lazyslot::testing
