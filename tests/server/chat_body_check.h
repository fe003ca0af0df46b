// Test helper for the API translators (Anthropic Messages, OpenAI Responses): a translated body must pass
// every parser of the chat route, as the server will run it through them.
#pragma once

#include <gtest/gtest.h>

#include "chat/chat_messages.h"
#include "chat/tool_calls.h"
#include "server/generation/openai_params.h"
#include "server/generation/output_constraint.h"

namespace lazyslot::testing {

inline void ExpectChatPipelineAccepts(const server::Json& chat) {
  Status known = server::CheckKnownFields(chat, server::RequestKind::kChat);
  EXPECT_TRUE(known.ok()) << known.message();
  Result<server::Json> wire = server::ParseChatMessages(chat);
  ASSERT_TRUE(wire.ok()) << wire.status().message();
  Result<server::Json> prepared = PrepareMessagesForTemplate(*wire);
  EXPECT_TRUE(prepared.ok()) << prepared.status().message();
  Result<ToolRequest> tools = ParseToolRequest(chat);
  EXPECT_TRUE(tools.ok()) << tools.status().message();
  Result<server::GenerationParams> gen = server::ParseGenerationParams(chat);
  EXPECT_TRUE(gen.ok()) << gen.status().message();
  Result<server::OutputConstraint> constraint = server::ParseOutputConstraint(chat);
  EXPECT_TRUE(constraint.ok()) << constraint.status().message();
}

}  // namespace lazyslot::testing
