// libFuzzer target: an HTTP body for POST /v1/messages (and /count_tokens) through the Anthropic Messages
// translation (server/anthropic/anthropic_api.h) as the routes use it: ParseJsonObject, AnthropicToChatBody,
// AnthropicCountTokensBody, then the chat body through the OpenAI validation the chat pipeline applies
// (ParseGenerationParams, ParseChatMessages), and the answer side: a ChatOutcome made from the request
// (its texts and tool calls) as AnthropicMessageJson and as the AnthropicStreamWriter's events.
//
// Properties: no crash or escaping exception; every error has a message and an Anthropic error body
// ({"type": "error", "error": {"type", "message"}}) for a 4xx/5xx status; the count_tokens translation of the
// same fields equals the create translation less its generation fields; the chat body is an object with a
// model, a non-empty messages array and max_tokens >= 1; the answer JSON has the documented shape; the stream
// is well-formed SSE whose blocks open, fill and stop in order and whose text deltas spell the answer.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "fuzz_check.h"
#include "server/anthropic/anthropic_api.h"
#include "server/generation/openai_params.h"
#include "server/http/errors.h"
#include "server/http/json_body.h"

namespace {

using lazyslot::Status;
using lazyslot::server::ChatDelta;
using lazyslot::server::ChatOutcome;
using lazyslot::server::Json;

void CheckErrorBody(const Status& s, bool rewrite) {
  FUZZ_CHECK(!s.ok(), "error path with an OK status");
  FUZZ_CHECK(!s.message().empty(), "error without a message");
  const int http = lazyslot::server::HttpStatusFor(s.code());
  FUZZ_CHECK(http >= 400 && http < 600, "HTTP status " + std::to_string(http));
  const std::string message = rewrite ? lazyslot::server::AnthropicErrorMessage(s.message()) : s.message();
  FUZZ_CHECK(!message.empty(), "AnthropicErrorMessage emptied " + lazyslot::fuzz::Escape(s.message()));
  const Json body = lazyslot::server::AnthropicErrorBody(http, message);
  FUZZ_CHECK(body.is_object() && body.value("type", "") == "error" && body.contains("error") &&
                 body["error"].is_object() && body["error"].contains("type") && body["error"]["type"].is_string() &&
                 body["error"].value("message", "") == message,
             "error body " + lazyslot::server::Dump(body));
  (void)lazyslot::server::Dump(body);
  const std::string event = lazyslot::server::AnthropicErrorEvent(http, message);
  FUZZ_CHECK(event.rfind("event: error\ndata: ", 0) == 0 && event.size() > 2 &&
                 event.compare(event.size() - 2, 2, "\n\n") == 0,
             "error event " + lazyslot::fuzz::Escape(event));
}

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (int k = 1; k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return false;
    i += len;
  }
  return true;
}

// Pieces of `s` cut before every `step`-th byte that starts a character (a stream never splits one).
std::vector<std::string> Pieces(const std::string& s, size_t step) {
  std::vector<std::string> out;
  std::string cur;
  size_t n = 0;
  for (char c : s) {
    const bool starts = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts && n > 0 && n % step == 0 && !cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
    if (starts) ++n;
    cur.push_back(c);
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// The answer the model might have given: texts and calls taken from the translated request.
ChatOutcome OutcomeFrom(const Json& chat, size_t salt) {
  ChatOutcome o;
  static const char* const kFinish[] = {"stop", "length", "tool_calls", "stop"};
  for (const Json& m : chat["messages"]) {
    const std::string role = m.value("role", "");
    if (m.contains("content") && m["content"].is_string()) {
      (role == "system" ? o.reasoning : o.content) += m["content"].get<std::string>();
    }
    if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
      for (const Json& c : m["tool_calls"]) {
        if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) continue;
        const Json& f = c["function"];
        lazyslot::ToolCall call;
        call.id = c.value("id", "call_0");
        call.name = f.value("name", "f");
        call.arguments = f.contains("arguments") && f["arguments"].is_string() ? f["arguments"].get<std::string>()
                                                                                  : "{}";
        o.tool_calls.push_back(std::move(call));
      }
    }
  }
  o.finish_reason = o.tool_calls.empty() ? kFinish[salt % 4] : "tool_calls";
  if (salt % 3 == 0 && o.finish_reason == "stop" && chat.contains("stop") && chat["stop"].is_array() &&
      !chat["stop"].empty()) {
    o.stop_word = chat["stop"][0].get<std::string>();
  }
  o.n_prompt = static_cast<int32_t>(salt % 5000);
  o.n_cached = static_cast<int32_t>(salt % 7);
  o.n_generated = static_cast<int32_t>(o.content.size() % 1000);
  return o;
}

void CheckMessage(const ChatOutcome& o) {
  const Json m = lazyslot::server::AnthropicMessageJson(o, "msg_1", "model");
  (void)lazyslot::server::Dump(m);
  FUZZ_CHECK(m.value("type", "") == "message" && m.value("role", "") == "assistant", "message header");
  FUZZ_CHECK(m.contains("content") && m["content"].is_array(), "message content");
  static const std::set<std::string> kReasons = {"end_turn", "stop_sequence", "max_tokens", "tool_use"};
  FUZZ_CHECK(m.contains("stop_reason") && m["stop_reason"].is_string() &&
                 kReasons.count(m["stop_reason"].get<std::string>()),
             "stop_reason " + lazyslot::server::Dump(m["stop_reason"]));
  FUZZ_CHECK(std::string(lazyslot::server::AnthropicStopReason(o)) == m["stop_reason"].get<std::string>(),
             "stop reasons differ");
  size_t calls = 0;
  for (const Json& b : m["content"]) {
    FUZZ_CHECK(b.is_object() && b.contains("type") && b["type"].is_string(), "block without a type");
    const std::string t = b["type"].get<std::string>();
    FUZZ_CHECK(t == "thinking" || t == "text" || t == "tool_use", "block type " + t);
    if (t == "tool_use") {
      ++calls;
      FUZZ_CHECK(b.contains("input") && b["input"].is_object(), "tool_use input " + lazyslot::server::Dump(b));
    }
  }
  FUZZ_CHECK(calls == o.tool_calls.size(), "tool_use blocks " + std::to_string(calls));
  const Json& u = m["usage"];
  FUZZ_CHECK(u.is_object() && u.value("input_tokens", -1) + u.value("cache_read_input_tokens", -1) == o.n_prompt,
             "usage " + lazyslot::server::Dump(u));
}

// Splits SSE text into (event, data) pairs; every event must be "event: NAME\ndata: JSON\n\n".
std::vector<std::pair<std::string, Json>> Events(const std::string& sse) {
  std::vector<std::pair<std::string, Json>> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    const size_t end = sse.find("\n\n", pos);
    FUZZ_CHECK(end != std::string::npos, "unterminated event " + lazyslot::fuzz::Escape(sse.substr(pos)));
    const std::string ev = sse.substr(pos, end - pos);
    const size_t nl = ev.find('\n');
    FUZZ_CHECK(ev.rfind("event: ", 0) == 0 && nl != std::string::npos && ev.compare(nl + 1, 6, "data: ") == 0 &&
                   ev.find('\n', nl + 1) == std::string::npos,
               "malformed event " + lazyslot::fuzz::Escape(ev));
    Json data = Json::parse(ev.substr(nl + 7), nullptr, false);
    FUZZ_CHECK(!data.is_discarded() && data.is_object(), "event data is not a JSON object");
    const std::string name = ev.substr(7, nl - 7);
    FUZZ_CHECK(data.value("type", "") == name, "event " + name + " with type " + data.value("type", ""));
    out.emplace_back(name, std::move(data));
    pos = end + 2;
  }
  return out;
}

void CheckStream(const ChatOutcome& o, size_t step) {
  lazyslot::server::AnthropicStreamWriter w;
  std::string sse = w.Start("msg_1", "model", o.n_prompt, o.n_cached);
  std::vector<ChatDelta> deltas;
  for (const std::string& p : Pieces(o.reasoning, step)) deltas.push_back({ChatDelta::kReasoning, -1, p, "", ""});
  for (const std::string& p : Pieces(o.content, step)) deltas.push_back({ChatDelta::kContent, -1, p, "", ""});
  for (size_t i = 0; i < o.tool_calls.size(); ++i) {
    const int idx = static_cast<int>(i);
    deltas.push_back({ChatDelta::kToolCallStart, idx, "", o.tool_calls[i].id, o.tool_calls[i].name});
    for (const std::string& p : Pieces(o.tool_calls[i].arguments, step)) {
      deltas.push_back({ChatDelta::kToolCallArguments, idx, p, "", ""});
    }
  }
  for (const ChatDelta& d : deltas) sse += w.Delta(d);
  sse += w.Finish(o);
  FUZZ_CHECK(w.Finish(o).empty() && w.Delta(deltas.empty() ? ChatDelta{} : deltas[0]).empty(),
             "events after Finish");
  const auto events = Events(sse);
  FUZZ_CHECK(events.size() >= 3 && events.front().first == "message_start" && events.back().first == "message_stop" &&
                 events[events.size() - 2].first == "message_delta",
             "stream frame");
  int open = -1, next = 0;
  std::string text;
  for (const auto& [name, d] : events) {
    if (name == "content_block_start") {
      FUZZ_CHECK(open == -1, "a block opened while another is open");
      FUZZ_CHECK(d.value("index", -1) == next, "block index " + std::to_string(d.value("index", -1)));
      open = next++;
    } else if (name == "content_block_delta") {
      FUZZ_CHECK(open >= 0 && d.value("index", -1) == open, "delta outside its block");
      const Json& delta = d["delta"];
      if (delta.value("type", "") == "text_delta") text += delta.value("text", "");
    } else if (name == "content_block_stop") {
      FUZZ_CHECK(open >= 0 && d.value("index", -1) == open, "stop of a block that is not open");
      open = -1;
    }
  }
  FUZZ_CHECK(open == -1, "a block left open");
  FUZZ_CHECK(next == w.blocks_opened(), "blocks_opened");
  if (ValidUtf8(o.content)) FUZZ_CHECK(text == o.content, "streamed text " + lazyslot::fuzz::Escape(text));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (lazyslot::SetLogLevel(lazyslot::LogLevel::kSilent), true);
  (void)quiet;
  const std::string raw(reinterpret_cast<const char*>(data), size);
  auto body = lazyslot::server::ParseJsonObject(raw);
  if (!body.ok()) {
    CheckErrorBody(body.status(), false);
    return 0;
  }
  auto chat = lazyslot::server::AnthropicToChatBody(*body);
  // count_tokens takes only the fields that shape the prompt.
  static const std::set<std::string> kCount = {"model",  "messages",      "system",        "tools",
                                               "tool_choice", "thinking", "output_config", "cache_control",
                                               "chat_template_kwargs"};
  Json count_body = Json::object();
  for (auto it = body->begin(); it != body->end(); ++it) {
    if (kCount.count(it.key())) count_body[it.key()] = it.value();
  }
  auto count = lazyslot::server::AnthropicCountTokensBody(count_body);
  if (!count.ok()) CheckErrorBody(count.status(), false);
  if (!chat.ok()) {
    CheckErrorBody(chat.status(), false);
    return 0;
  }
  FUZZ_CHECK(chat->is_object() && chat->contains("model") && (*chat)["model"].is_string(), "chat body model");
  FUZZ_CHECK(chat->contains("messages") && (*chat)["messages"].is_array(), "chat body messages");
  FUZZ_CHECK(chat->contains("max_tokens") && (*chat)["max_tokens"].is_number_integer() &&
                 (*chat)["max_tokens"].get<int64_t>() >= 1,
             "max_tokens");
  (void)lazyslot::server::Dump(*chat);
  FUZZ_CHECK(count.ok(), "create accepted, count_tokens refused: " + count.status().message());
  Json less = *chat;
  for (const char* f : {"max_tokens", "stop", "temperature", "top_p", "top_k", "stream"}) less.erase(f);
  FUZZ_CHECK(less == *count, "count_tokens body " + lazyslot::server::Dump(*count) + " vs " +
                                 lazyslot::server::Dump(less));

  // The chat pipeline's own validation; its errors go back with Anthropic's field names.
  auto params = lazyslot::server::ParseGenerationParams(*chat);
  if (!params.ok()) CheckErrorBody(params.status(), true);
  auto messages = lazyslot::server::ParseChatMessages(*chat);
  if (!messages.ok()) {
    CheckErrorBody(messages.status(), true);
    return 0;
  }
  FUZZ_CHECK(messages->is_array() && !messages->empty(), "no messages accepted");

  size_t salt = size;
  for (size_t i = 0; i < size && i < 64; ++i) salt = salt * 31 + data[i];
  const ChatOutcome o = OutcomeFrom(*chat, salt);
  CheckMessage(o);
  CheckStream(o, 1 + salt % 7);
  return 0;
}
