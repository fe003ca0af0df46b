// The soak's request mix: a fixed set of greedy chat, completion and embedding cases, how each request is
// sent (stream or not, abandoned mid-stream or not, cache_prompt on or off) and how its answer is read
// back and compared with the single-client answer recorded before the load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lazyslot::soak {

enum class Kind { kChat, kChatStream, kCompletion, kCompletionStream, kEmbedding, kCount };
const char* KindName(Kind k);
inline bool IsStream(Kind k) { return k == Kind::kChatStream || k == Kind::kCompletionStream; }

// One greedy text case: the user message (chat) or the prompt (completions).
struct TextCase {
  std::string text;
  int max_tokens = 32;
  std::vector<std::string> stop;
};

struct Workload {
  std::vector<TextCase> chat, completion;
  std::vector<std::string> embedding;  // inputs
};
// The fixed cases (short and long prompts, with and without stop strings, TinyStories-like text).
Workload DefaultWorkload();

// What one request asks for.
struct Plan {
  Kind kind = Kind::kChat;
  int case_index = 0;  // chat/completion: the case; embedding: first input
  int n_inputs = 1;    // embedding: inputs in the request (case_index, case_index+1, ...)
  bool cache_prompt = true;
  int abandon_after = 0;  // stream: hang up after this many content events (0: read to the end)
  bool hang_up_with_reset = false;
};

// A request's answer as read back.
struct Answer {
  std::string text;           // generated text
  std::string finish_reason;  // "stop" / "length"
  std::vector<std::vector<float>> embeddings;
  bool saw_done = false;  // stream: "data: [DONE]" arrived
};

// The request body for a plan (all greedy: temperature 0, fixed seed).
std::string RequestBody(const Workload& w, const Plan& p);
const char* RequestPath(Kind k);

// Parses a complete non-stream JSON body or the SSE text of a stream. False with `error` (short,
// aggregatable) when it is not what the kind returns or holds an error object.
bool ParseAnswer(Kind k, const std::string& body, Answer* out, std::string* error);

// Counts content-bearing SSE events in text received so far (for hanging up after N of them).
class SseCounter {
 public:
  // Feeds received bytes; returns the number of events with non-empty content seen so far.
  int Feed(const std::string& piece);

 private:
  std::string pending_;
  int n_content_ = 0;
};

// Embedding comparison against the reference vector.
struct VectorDiff {
  double cos = 1.0;
  double max_abs = 0.0;
  bool exact = true;  // bit-identical
};
VectorDiff CompareVectors(const std::vector<float>& got, const std::vector<float>& ref);

}  // namespace lazyslot::soak
