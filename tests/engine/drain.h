// Test helper shared by the engine tests: reads a request's events until it is done or failed.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace lazyslot::testing {

struct Collected {
  std::string text;             // concatenated text deltas
  std::vector<TokenId> tokens;  // generated token ids
  std::vector<Event> token_events;  // the kToken events that carry a token (with their logprobs)
  std::vector<Event> progress;      // kProgress events
  Event done;                   // the final kDone or kError event
  bool error = false;
};

inline Collected Drain(RequestStream& s) {
  Collected c;
  for (;;) {
    Event ev;
    if (!s.Pop(&ev, std::chrono::seconds(60))) {
      ADD_FAILURE() << "no event within 60 s";
      c.error = true;
      return c;
    }
    if (ev.type == Event::kProgress) {
      c.progress.push_back(std::move(ev));
    } else if (ev.type == Event::kToken) {
      c.text += ev.text;
      if (ev.token >= 0) {
        c.tokens.push_back(ev.token);
        c.token_events.push_back(ev);
      }
    } else {
      c.error = ev.type == Event::kError;
      c.done = std::move(ev);
      return c;
    }
  }
}

}  // namespace lazyslot::testing
