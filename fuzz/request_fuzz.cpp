// libFuzzer target: an HTTP request body through the OpenAI request validation (server/generation/openai_params.h) the
// way the routes use it, then the chat messages through the built-in chatml template. Any outcome is fine
// except a crash, an escaping exception, or accepted parameters outside their documented ranges.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat_template.h"
#include "core/log.h"
#include "fuzz_check.h"
#include "server/generation/openai_params.h"
#include "server/http/errors.h"

namespace {

using lazyslot::Status;
using lazyslot::server::Json;

// Every error goes back to the client as JSON: building and serialising that body must not throw.
void CheckErrorBody(const Status& s) {
  FUZZ_CHECK(!s.ok(), "error path with an OK status");
  FUZZ_CHECK(!s.message().empty(), "error without a message");
  const int http = lazyslot::server::HttpStatusFor(s.code());
  FUZZ_CHECK(http >= 400 && http < 600, "HTTP status " + std::to_string(http));
  (void)lazyslot::server::Dump(lazyslot::server::ErrorBody(http, s.message(), "field"));
}

template <typename T>
bool Check(const lazyslot::Result<T>& r) {
  if (!r.ok()) CheckErrorBody(r.status());
  return r.ok();
}

void CheckGeneration(const Json& body) {
  auto p = lazyslot::server::ParseGenerationParams(body);
  if (!Check(p)) return;
  const lazyslot::SamplingParams& s = p->sampling;
  FUZZ_CHECK(std::isfinite(s.temperature) && s.temperature >= 0, "temperature");
  FUZZ_CHECK(s.top_p >= 0 && s.top_p <= 1, "top_p");
  FUZZ_CHECK(s.min_p >= 0 && s.min_p <= 1, "min_p");
  FUZZ_CHECK(s.top_k >= -1, "top_k");
  FUZZ_CHECK(std::isfinite(s.repeat_penalty) && s.repeat_penalty > 0, "repeat_penalty");
  FUZZ_CHECK(s.frequency_penalty >= -2 && s.frequency_penalty <= 2, "frequency_penalty");
  FUZZ_CHECK(s.presence_penalty >= -2 && s.presence_penalty <= 2, "presence_penalty");
  FUZZ_CHECK(p->repeat_last_n >= -1, "repeat_last_n");
  FUZZ_CHECK(p->n_predict == -1 || p->n_predict >= 1, "n_predict " + std::to_string(p->n_predict));
  for (const std::string& stop : p->stop) FUZZ_CHECK(!stop.empty(), "empty stop string kept");
}

void CheckPrompts(const Json& body, const char* field) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return;
  auto prompts = lazyslot::server::ParsePromptList(*it, field);
  if (!Check(prompts)) return;
  FUZZ_CHECK(!prompts->empty(), std::string(field) + ": accepted with no prompt");
  for (const auto& in : *prompts) {
    for (lazyslot::TokenId id : in.tokens) FUZZ_CHECK(id >= 0, "negative token id accepted");
    FUZZ_CHECK(in.is_tokens || in.tokens.empty(), "text prompt with tokens");
  }
}

// As the chat route: messages, then tools and chat_template_kwargs as template variables.
void CheckChat(const Json& body) {
  auto messages = lazyslot::server::ParseChatMessages(body);
  if (!Check(messages)) return;
  FUZZ_CHECK(messages->is_array() && !messages->empty(), "messages accepted but empty");
  for (const Json& m : *messages) {
    FUZZ_CHECK(m.is_object() && m.contains("role") && m["role"].is_string(), "message without a role");
    auto c = m.find("content");
    FUZZ_CHECK(c == m.end() || c->is_string() || c->is_null(), std::string("content left as ") + c->type_name());
  }
  Json extra = Json::object();
  extra["bos_token"] = "<s>";
  extra["eos_token"] = "</s>";
  auto tools = body.find("tools");
  if (tools != body.end() && tools->is_array() && !tools->empty()) extra["tools"] = *tools;
  auto kwargs = body.find("chat_template_kwargs");
  if (kwargs != body.end() && kwargs->is_object()) {
    for (auto kv = kwargs->begin(); kv != kwargs->end(); ++kv) extra[kv.key()] = kv.value();
  }
  static const lazyslot::ChatTemplate* chatml = [] {
    auto t = lazyslot::ChatTemplate::Builtin("chatml");
    FUZZ_CHECK(t.ok(), t.status().message());
    return new lazyslot::ChatTemplate(std::move(t).value());
  }();
  auto text = chatml->Apply(*messages, true, extra);
  if (!Check(text)) return;
  FUZZ_CHECK(text->find("<|im_start|>assistant\n") != std::string::npos, "no generation prompt");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (lazyslot::SetLogLevel(lazyslot::LogLevel::kSilent), true);
  (void)quiet;
  const std::string raw(reinterpret_cast<const char*>(data), size);
  auto body = lazyslot::server::ParseJsonObject(raw);
  if (!Check(body)) return 0;
  FUZZ_CHECK(body->is_object(), "ParseJsonObject returned a " + std::string(body->type_name()));
  (void)lazyslot::server::Dump(*body);

  CheckGeneration(*body);
  // Scalar fields other routes read.
  Check(lazyslot::server::GetBool(*body, "echo", false));
  Check(lazyslot::server::GetBool(*body, "add_special", false));
  Check(lazyslot::server::GetString(*body, "suffix", ""));
  Check(lazyslot::server::GetString(*body, "encoding_format", "float"));
  Check(lazyslot::server::GetString(*body, "content", ""));
  CheckPrompts(*body, "prompt");
  CheckPrompts(*body, "input");
  auto tokens = body->find("tokens");
  if (tokens != body->end() && !tokens->is_null()) {
    auto ids = lazyslot::server::ParseTokenList(*tokens, "tokens");
    if (Check(ids)) {
      for (lazyslot::TokenId id : *ids) FUZZ_CHECK(id >= 0, "negative token id accepted");
    }
  }
  CheckChat(*body);
  return 0;
}
