// The built-in chat templates (chat/builtin_templates.h): each of llama-server's template names renders what
// llama.cpp's legacy formatter (src/llama-chat.cpp, llm_chat_apply_template, d32676d) writes. The expected
// strings were derived from that formatter's rules turn by turn (prefixes, suffixes, which contents are
// trimmed, where a system message goes, the generation prompt) for one conversation: a system message, a user
// message and an assistant answer with spaces around them, and a last user message.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "chat/chat_template.h"

namespace lazyslot {
namespace {

using nlohmann::ordered_json;

ordered_json Conversation() {
  return ordered_json::array({{{"role", "system"}, {"content", "Sys."}},
                              {{"role", "user"}, {"content", " Hi "}},
                              {{"role", "assistant"}, {"content", " Hello. "}},
                              {{"role", "user"}, {"content", "Bye"}}});
}

struct Case {
  const char* name;
  const char* want;  // with add_generation_prompt
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"bailing",
       "<role>SYSTEM</role>Sys.<role>HUMAN</role> Hi <role>ASSISTANT</role> Hello. <role>HUMAN</role>Bye<role>ASSISTANT</role>"},
      {"bailing-think",
       "<role>SYSTEM</role>Sys.<role>HUMAN</role> Hi <role>ASSISTANT</role> Hello. <role>HUMAN</role>Bye<role>ASSISTANT</role><think>"},
      {"bailing2",
       "<role>SYSTEM</role>Sys.<|role_end|><role>HUMAN</role> Hi <|role_end|><role>ASSISTANT</role> Hello. <|role_end|><role>HUMAN</role>Bye<|role_end|><role>ASSISTANT</role>"},
      {"chatglm3",
       "[gMASK]sop<|system|>\n Sys.<|user|>\n  Hi <|assistant|>\n  Hello. <|user|>\n Bye<|assistant|>"},
      {"chatglm4",
       "[gMASK]<sop><|system|>\nSys.<|user|>\n Hi <|assistant|>\n Hello. <|user|>\nBye<|assistant|>\n"},
      {"chatml",
       "<|im_start|>system\nSys.<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n<|im_start|>assistant\n Hello. <|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"},
      {"command-r",
       "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Sys.<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hello.<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Bye<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"},
      {"deepseek",
       "Sys.### Instruction:\n Hi \n### Response:\n Hello. \n<|EOT|>\n### Instruction:\nBye\n### Response:\n"},
      {"deepseek-ocr",
       "Sys. Hi  Hello. Bye"},
      {"deepseek2",
       "Sys.\n\nUser:  Hi \n\nAssistant:  Hello. <｜end▁of▁sentence｜>User: Bye\n\nAssistant:"},
      {"deepseek3",
       "Sys.\n\n<｜User｜> Hi <｜Assistant｜> Hello. <｜end▁of▁sentence｜><｜User｜>Bye<｜Assistant｜>"},
      {"exaone-moe",
       "<|system|>\nSys.<|endofturn|>\n<|user|>\nHi<|endofturn|>\n<|assistant|>\nHello.<|endofturn|>\n<|user|>\nBye<|endofturn|>\n<|assistant|>\n"},
      {"exaone3",
       "[|system|]Sys.[|endofturn|]\n[|user|]Hi\n[|assistant|]Hello.[|endofturn|]\n[|user|]Bye\n[|assistant|]"},
      {"exaone4",
       "[|system|]Sys.[|endofturn|]\n[|user|]Hi\n[|assistant|]Hello.[|endofturn|]\n[|user|]Bye\n[|assistant|]"},
      {"falcon3",
       "<|system|>\nSys.\n<|user|>\n Hi \n<|assistant|>\n Hello. \n<|user|>\nBye\n<|assistant|>\n"},
      {"gemma",
       "<start_of_turn>user\nSys.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"},
      {"gigachat",
       "<s>Sys.<|message_sep|>user<|role_sep|> Hi <|message_sep|>available functions<|role_sep|>[]<|message_sep|>assistant<|role_sep|> Hello. <|message_sep|>user<|role_sep|>Bye<|message_sep|>available functions<|role_sep|>[]<|message_sep|>assistant<|role_sep|>"},
      {"glmedge",
       "<|system|>\nSys.<|user|>\n Hi <|assistant|>\n Hello. <|user|>\nBye<|assistant|>"},
      {"gpt-oss",
       "<|start|>system<|message|>Sys.<|end|><|start|>user<|message|> Hi <|end|><|start|>assistant<|message|> Hello. <|return|><|start|>user<|message|>Bye<|end|><|start|>assistant"},
      {"granite",
       "<|start_of_role|>system<|end_of_role|>Sys.<|end_of_text|>\n<|start_of_role|>user<|end_of_role|> Hi <|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|> Hello. <|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Bye<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>"},
      {"granite-4.0",
       "<|start_of_role|>system<|end_of_role|>Sys.<|end_of_text|>\n<|start_of_role|>user<|end_of_role|> Hi <|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|> Hello. <|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Bye<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>"},
      {"granite-4.1",
       "<|start_of_role|>system<|end_of_role|>Sys.<|end_of_text|>\n<|start_of_role|>user<|end_of_role|> Hi <|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|> Hello. <|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Bye<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>"},
      {"grok-2",
       "System: Sys.<|separator|>\n\nHuman: Hi<|separator|>\n\nAssistant:  Hello. <|separator|>\n\nHuman: Bye<|separator|>\n\nAssistant:"},
      {"hunyuan-dense",
       "Sys.<｜hy_place▁holder▁no▁3｜><｜hy_User｜> Hi <｜hy_Assistant｜><｜hy_Assistant｜> Hello. <｜hy_place▁holder▁no▁2｜><｜hy_User｜>Bye<｜hy_Assistant｜>"},
      {"hunyuan-moe",
       "<|startoftext|>Sys.<|extra_4|><|startoftext|> Hi <|extra_0|> Hello. <|eos|><|startoftext|>Bye<|extra_0|>"},
      {"hunyuan-vl",
       "<｜hy_begin▁of▁sentence｜>Sys.<｜hy_place▁holder▁no▁3｜> Hi <｜hy_User｜> Hello. <｜hy_Assistant｜>Bye<｜hy_User｜>"},
      {"kimi-k2",
       "<|im_system|>system<|im_middle|>Sys.<|im_end|><|im_user|>user<|im_middle|> Hi <|im_end|><|im_assistant|>assistant<|im_middle|> Hello. <|im_end|><|im_user|>user<|im_middle|>Bye<|im_end|><|im_assistant|>assistant<|im_middle|>"},
      {"llama2",
       "[INST] Sys.\n Hi  [/INST] Hello. </s>[INST] Bye [/INST]"},
      {"llama2-sys",
       "[INST] <<SYS>>\nSys.\n<</SYS>>\n\n Hi  [/INST] Hello. </s>[INST] Bye [/INST]"},
      {"llama2-sys-bos",
       "[INST] <<SYS>>\nSys.\n<</SYS>>\n\n Hi  [/INST] Hello. </s><s>[INST] Bye [/INST]"},
      {"llama2-sys-strip",
       "[INST] <<SYS>>\nSys.\n<</SYS>>\n\nHi [/INST]Hello.</s>[INST] Bye [/INST]"},
      {"llama3",
       "<|start_header_id|>system<|end_header_id|>\n\nSys.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
      {"llama4",
       "<|header_start|>system<|header_end|>\n\nSys.<|eot|><|header_start|>user<|header_end|>\n\nHi<|eot|><|header_start|>assistant<|header_end|>\n\nHello.<|eot|><|header_start|>user<|header_end|>\n\nBye<|eot|><|header_start|>assistant<|header_end|>\n\n"},
      {"megrez",
       "<|role_start|>system<|role_end|>Sys.<|turn_end|><|role_start|>user<|role_end|> Hi <|turn_end|><|role_start|>assistant<|role_end|> Hello. <|turn_end|><|role_start|>user<|role_end|>Bye<|turn_end|><|role_start|>assistant<|role_end|>"},
      {"minicpm",
       "Sys.<用户>Hi<AI>Hello.<用户>Bye<AI>"},
      {"mistral-v1",
       " [INST] Sys.\n\n Hi  [/INST]  Hello. </s> [INST] Bye [/INST]"},
      {"mistral-v3",
       "[INST] Sys.\n\n Hi [/INST] Hello.</s>[INST] Bye[/INST]"},
      {"mistral-v3-tekken",
       "[INST]Sys.\n\n Hi [/INST] Hello. </s>[INST]Bye[/INST]"},
      {"mistral-v7",
       "[SYSTEM_PROMPT] Sys.[/SYSTEM_PROMPT][INST]  Hi [/INST]  Hello. </s>[INST] Bye[/INST]"},
      {"mistral-v7-tekken",
       "[SYSTEM_PROMPT]Sys.[/SYSTEM_PROMPT][INST] Hi [/INST] Hello. </s>[INST]Bye[/INST]"},
      {"monarch",
       "system\nSys.</s>\n<s>user\n Hi </s>\n<s>assistant\n Hello. </s>\n<s>user\nBye</s>\n<s>assistant\n"},
      {"openchat",
       "Sys.<|end_of_turn|>GPT4 Correct User:  Hi <|end_of_turn|>GPT4 Correct Assistant:  Hello. <|end_of_turn|>GPT4 Correct User: Bye<|end_of_turn|>GPT4 Correct Assistant:"},
      {"orion",
       "Human: Sys.\n\n Hi \n\nAssistant: </s> Hello. </s>Human: Bye\n\nAssistant: </s>"},
      {"pangu-embedded",
       "[unused9]系统：Sys.[unused10][unused9]用户： Hi [unused10][unused9]助手： Hello. [unused10][unused9]用户：Bye[unused10][unused9]助手："},
      {"phi3",
       "<|system|>\nSys.<|end|>\n<|user|>\n Hi <|end|>\n<|assistant|>\n Hello. <|end|>\n<|user|>\nBye<|end|>\n<|assistant|>\n"},
      {"phi4",
       "<|im_start|>system<|im_sep|>Sys.<|im_end|><|im_start|>user<|im_sep|> Hi <|im_end|><|im_start|>assistant<|im_sep|> Hello. <|im_end|><|im_start|>user<|im_sep|>Bye<|im_end|><|im_start|>assistant<|im_sep|>"},
      {"rwkv-world",
       "System: Sys.\n\nUser: Hi\n\nAssistant: Hello.\n\nUser: Bye\n\nAssistant:"},
      {"seed_oss",
       "<seed:bos>system\nSys.<seed:eos><seed:bos>user\n Hi <seed:eos><seed:bos>assistant\nHello.<seed:eos><seed:bos>user\nBye<seed:eos><seed:bos>assistant\n"},
      {"smolvlm",
       "<|im_start|>Sys.\n\nUser:  Hi <end_of_utterance>\nAssistant:  Hello. <end_of_utterance>\nUser: Bye<end_of_utterance>\nAssistant:"},
      {"solar-open",
       "<|begin|>system<|content|>Sys.<|end|><|begin|>user<|content|> Hi <|end|><|begin|>assistant<|content|> Hello. <|end|><|begin|>user<|content|>Bye<|end|><|begin|>assistant"},
      {"vicuna",
       "Sys.\n\nUSER:  Hi \nASSISTANT:  Hello. </s>\nUSER: Bye\nASSISTANT:"},
      {"vicuna-orca",
       "SYSTEM: Sys.\nUSER:  Hi \nASSISTANT:  Hello. </s>\nUSER: Bye\nASSISTANT:"},
      {"yandex",
       " Пользователь:  Hi \n\n Ассистент:  Hello. \n\n Пользователь: Bye\n\n Ассистент:[SEP]"},
      {"zephyr",
       "<|system|>\nSys.<|endoftext|>\n<|user|>\n Hi <|endoftext|>\n<|assistant|>\n Hello. <|endoftext|>\n<|user|>\nBye<|endoftext|>\n<|assistant|>\n"},
  };
  return cases;
}

TEST(BuiltinTemplates, EachNameRendersLlamaCppsLegacyFormat) {
  for (const Case& c : Cases()) {
    auto t = ChatTemplate::Builtin(c.name);
    ASSERT_TRUE(t.ok()) << c.name << ": " << t.status().ToString();
    auto out = t->Apply(Conversation(), true);
    ASSERT_TRUE(out.ok()) << c.name << ": " << out.status().ToString();
    EXPECT_EQ(*out, c.want) << c.name;
  }
}

// Every name of llama.cpp's LLM_CHAT_TEMPLATES table is known, and no other.
TEST(BuiltinTemplates, NamesAreLlamaCppsTable) {
  std::set<std::string> want;
  for (const Case& c : Cases()) want.insert(c.name);
  const std::vector<std::string> names = ChatTemplate::BuiltinNames();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), want);
  EXPECT_EQ(names.size(), 54u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

// Without the generation prompt the assistant cue is left out; formats that have none are unchanged.
TEST(BuiltinTemplates, GenerationPromptOnlyWhenAsked) {
  const ordered_json one = ordered_json::array({{{"role", "user"}, {"content", "Q"}}});
  struct G {
    const char* name;
    const char* with;
    const char* without;
  };
  const G cases[] = {
      {"chatml", "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>user\nQ<|im_end|>\n"},
      {"gemma", "<start_of_turn>user\nQ<end_of_turn>\n<start_of_turn>model\n", "<start_of_turn>user\nQ<end_of_turn>\n"},
      {"llama2", "[INST] Q [/INST]", "[INST] Q [/INST]"},
      {"mistral-v7", "[INST] Q[/INST]", "[INST] Q[/INST]"},
      {"vicuna", "USER: Q\nASSISTANT:", "USER: Q\n"},
      {"rwkv-world", "User: Q\n\nAssistant:", "User: Q\n\nAssistant:"},
      {"bailing-think", "<role>SYSTEM</role>", "<role>SYSTEM</role>"},
  };
  for (const G& g : cases) {
    auto t = ChatTemplate::Builtin(g.name);
    ASSERT_TRUE(t.ok()) << g.name;
    auto with = t->Apply(one, true);
    auto without = t->Apply(one, false);
    ASSERT_TRUE(with.ok() && without.ok()) << g.name;
    if (std::string(g.name) == "bailing-think") {
      EXPECT_EQ(*with, "<role>HUMAN</role>Q<role>ASSISTANT</role><think>");
      EXPECT_EQ(*without, "<role>HUMAN</role>Q");
      continue;
    }
    EXPECT_EQ(*with, g.with) << g.name;
    EXPECT_EQ(*without, g.without) << g.name;
  }
}

// Bailing 2 adds its default system message when the conversation has none; GigaChat's BOS is always there.
TEST(BuiltinTemplates, DefaultsWithoutASystemMessage) {
  const ordered_json one = ordered_json::array({{{"role", "user"}, {"content", "Q"}}});
  auto b = ChatTemplate::Builtin("bailing2");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b->Apply(one, true),
            "<role>SYSTEM</role>detailed thinking off<|role_end|><role>HUMAN</role>Q<|role_end|><role>ASSISTANT</role>");
  auto g = ChatTemplate::Builtin("gigachat");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g->Apply(one, false),
            "<s>user<|role_sep|>Q<|message_sep|>available functions<|role_sep|>[]<|message_sep|>");
}

TEST(BuiltinTemplates, UnknownNameListsTheKnownOnes) {
  auto t = ChatTemplate::Builtin("llama-5");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("gemma"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("mistral-v7-tekken"), std::string::npos);
}

}  // namespace
}  // namespace lazyslot
