// phi3 (fused projections, partial rotary, LongRoPE) through the real server: greedy continuations equal
// llama.cpp's for every weight type (the server's 1,024-cell slot rotates with the short factors, as the
// references were made).
#include <gtest/gtest.h>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

TEST(ServerPhi3, GreedyEqualsLlamaCppF32) {
  ExpectServerGreedyMatchesReference("models/phi3-tiny-f32.gguf", "phi3-tiny-f32");
}
TEST(ServerPhi3, GreedyEqualsLlamaCppQ8) {
  ExpectServerGreedyMatchesReference("models/phi3-tiny-q8_0.gguf", "phi3-tiny-q8_0");
}
TEST(ServerPhi3, GreedyEqualsLlamaCppQ4KM) {
  ExpectServerGreedyMatchesReference("models/phi3-tiny-q4_k_m.gguf", "phi3-tiny-q4_k_m");
}

}  // namespace
}  // namespace lazyslot::testing
