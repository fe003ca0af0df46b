// libFuzzer target: an HTTP body for POST /v1/responses through the OpenAI Responses translation
// (server/responses/responses_api.h) as the route uses it: ParseJsonObject, ResponsesToChatBody,
// ResponsesRequestEcho, then the chat body through the OpenAI validation the chat pipeline applies
// (ParseGenerationParams, ParseChatMessages, errors renamed by ChatErrorToResponses), and the answer side: a
// ChatOutcome made from the request as ResponsesObjectJson and as the ResponsesStreamWriter's events (also
// a stream that fails half way).
//
// Properties: no crash or escaping exception; every error has a message, maps to a 4xx/5xx status and an
// OpenAI error body, and keeps its code through ChatErrorToResponses; the chat body is an object with a
// non-empty messages array; the echo and the response object have the documented shape (status completed
// or incomplete, output items in order with their ids, usage totals); the stream is well-formed SSE whose
// sequence numbers count from 0, that ends in exactly one response.completed / incomplete / failed, and
// whose output_text deltas spell the answer.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "fuzz_check.h"
#include "server/generation/openai_params.h"
#include "server/http/errors.h"
#include "server/http/json_body.h"
#include "server/responses/responses_api.h"

namespace {

using lazyslot::Status;
using lazyslot::server::ChatDelta;
using lazyslot::server::ChatOutcome;
using lazyslot::server::Json;

void CheckErrorBody(const Status& s) {
  FUZZ_CHECK(!s.ok(), "error path with an OK status");
  FUZZ_CHECK(!s.message().empty(), "error without a message");
  const int http = lazyslot::server::HttpStatusFor(s.code());
  FUZZ_CHECK(http >= 400 && http < 600, "HTTP status " + std::to_string(http));
  (void)lazyslot::server::Dump(lazyslot::server::ErrorBody(http, s.message()));
}

// A chat-pipeline error as the route reports it: renamed, same code, still a message.
void CheckChatError(const Status& s) {
  const Status renamed = lazyslot::server::ChatErrorToResponses(s);
  FUZZ_CHECK(renamed.code() == s.code(), "ChatErrorToResponses changed the code");
  CheckErrorBody(renamed);
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
    if (!m.is_object()) continue;
    const std::string role = m.value("role", "");
    if (m.contains("content") && m["content"].is_string()) {
      (role == "system" || role == "developer" ? o.reasoning : o.content) += m["content"].get<std::string>();
    }
    if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
      for (const Json& c : m["tool_calls"]) {
        if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) continue;
        const Json& f = c["function"];
        lazyslot::ToolCall call;
        call.id = c.contains("id") && c["id"].is_string() ? c["id"].get<std::string>() : "call_0";
        call.name = f.contains("name") && f["name"].is_string() ? f["name"].get<std::string>() : "f";
        call.arguments = f.contains("arguments") && f["arguments"].is_string() ? f["arguments"].get<std::string>()
                                                                                  : "{}";
        o.tool_calls.push_back(std::move(call));
      }
    }
  }
  o.finish_reason = o.tool_calls.empty() ? kFinish[salt % 4] : (salt % 5 == 0 ? "length" : "tool_calls");
  o.n_prompt = static_cast<int32_t>(salt % 5000);
  o.n_cached = static_cast<int32_t>(salt % 7);
  o.n_generated = static_cast<int32_t>(o.content.size() % 1000);
  return o;
}

void CheckResponse(const Json& r, const ChatOutcome& o, const std::string& want_status) {
  FUZZ_CHECK(r.is_object() && r.value("object", "") == "response" && r.value("id", "") == "resp_abc",
             "response header");
  FUZZ_CHECK(r.value("status", "") == want_status, "status " + r.value("status", "") + ", want " + want_status);
  FUZZ_CHECK(r.contains("output") && r["output"].is_array(), "output");
  static const std::set<std::string> kItems = {"reasoning", "message", "function_call"};
  std::set<std::string> ids;
  size_t calls = 0;
  for (const Json& item : r["output"]) {
    FUZZ_CHECK(item.is_object() && kItems.count(item.value("type", "")), "output item " + lazyslot::server::Dump(item));
    FUZZ_CHECK(ids.insert(item.value("id", "")).second, "two items with id " + item.value("id", ""));
    if (item.value("type", "") == "function_call") {
      FUZZ_CHECK(item.contains("arguments") && item["arguments"].is_string(), "function_call arguments");
      ++calls;
    }
  }
  if (want_status != "failed") {
    FUZZ_CHECK(calls == o.tool_calls.size(), "function_call items " + std::to_string(calls));
    const Json& u = r["usage"];
    FUZZ_CHECK(u.is_object() && u.value("total_tokens", int64_t{-1}) == int64_t{o.n_prompt} + o.n_generated,
               "usage " + lazyslot::server::Dump(u));
  }
  if (want_status == "incomplete") {
    FUZZ_CHECK(r.contains("incomplete_details") && r["incomplete_details"].is_object(), "incomplete_details");
  }
  (void)lazyslot::server::Dump(r);
}

// Splits SSE text into events; every event must be "event: NAME\ndata: JSON\n\n" with type == NAME.
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

void CheckStream(const ChatOutcome& o, const Json& echo, size_t step, bool fail_half_way) {
  lazyslot::server::ResponsesStreamWriter w("resp_abc", "model", 1700000000, echo);
  std::string sse = w.Start();
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
  const size_t stop_at = fail_half_way ? deltas.size() / 2 : deltas.size();
  for (size_t i = 0; i < stop_at; ++i) sse += w.Delta(deltas[i]);
  sse += fail_half_way ? w.Fail("the model went away") : w.Finish(o, 1700000001);
  FUZZ_CHECK(w.finished(), "not finished");
  const auto events = Events(sse);
  FUZZ_CHECK(events.size() >= 3 && events[0].first == "response.created" && events[1].first == "response.in_progress",
             "stream start");
  std::string text;
  int ends = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& [name, d] = events[i];
    FUZZ_CHECK(d.value("sequence_number", int64_t{-1}) == static_cast<int64_t>(i),
               "sequence_number " + std::to_string(d.value("sequence_number", int64_t{-1})) + " at " + std::to_string(i));
    if (name == "response.output_text.delta") text += d.value("delta", "");
    if (name == "response.completed" || name == "response.incomplete" || name == "response.failed") {
      ++ends;
      FUZZ_CHECK(i + 1 == events.size(), name + " is not the last event");
      const std::string status = name == "response.completed" ? "completed"
                                 : name == "response.incomplete" ? "incomplete" : "failed";
      CheckResponse(d["response"], o, status);
    }
  }
  FUZZ_CHECK(ends == 1, std::to_string(ends) + " final events");
  if (!fail_half_way && ValidUtf8(o.content)) {
    FUZZ_CHECK(text == o.content, "streamed text " + lazyslot::fuzz::Escape(text));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (lazyslot::SetLogLevel(lazyslot::LogLevel::kSilent), true);
  (void)quiet;
  const std::string raw(reinterpret_cast<const char*>(data), size);
  auto body = lazyslot::server::ParseJsonObject(raw);
  if (!body.ok()) {
    CheckErrorBody(body.status());
    return 0;
  }
  auto chat = lazyslot::server::ResponsesToChatBody(*body);
  if (!chat.ok()) {
    CheckErrorBody(chat.status());
    FUZZ_CHECK(chat.status().code() == lazyslot::Code::kInvalidArgument, "a refusal that is not a 400");
    return 0;
  }
  FUZZ_CHECK(chat->is_object() && chat->contains("messages") && (*chat)["messages"].is_array(), "chat messages");
  (void)lazyslot::server::Dump(*chat);
  const Json echo = lazyslot::server::ResponsesRequestEcho(*body);
  FUZZ_CHECK(echo.is_object(), "echo");
  for (const char* f : {"temperature", "top_p", "tools", "tool_choice", "parallel_tool_calls", "text"}) {
    FUZZ_CHECK(echo.contains(f), std::string("echo without ") + f);
  }
  (void)lazyslot::server::Dump(echo);

  auto params = lazyslot::server::ParseGenerationParams(*chat);
  if (!params.ok()) CheckChatError(params.status());
  auto messages = lazyslot::server::ParseChatMessages(*chat);
  if (!messages.ok()) {
    CheckChatError(messages.status());
    return 0;
  }
  FUZZ_CHECK(messages->is_array() && !messages->empty(), "no messages accepted");

  size_t salt = size;
  for (size_t i = 0; i < size && i < 64; ++i) salt = salt * 31 + data[i];
  const ChatOutcome o = OutcomeFrom(*chat, salt);
  const std::string status = o.finish_reason == "length" ? "incomplete" : "completed";
  CheckResponse(lazyslot::server::ResponsesObjectJson(o, "resp_abc", "model", 1700000000, echo), o, status);
  CheckStream(o, echo, 1 + salt % 7, false);
  CheckStream(o, echo, 2 + salt % 5, true);
  return 0;
}
