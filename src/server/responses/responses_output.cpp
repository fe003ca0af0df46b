// A chat choice -> OpenAI Responses output: the `response` object and the SSE event stream (see
// responses_api.h). Shapes follow the openai SDK's types (resources/responses/responses.d.ts).
#include <utility>

#include "server/http/errors.h"
#include "server/responses/responses_api.h"

namespace lazyslot::server {
namespace {

Json Or(const Json& body, const char* key, Json def) { return Present(body, key) ? body.at(key) : def; }

// "resp_X" -> "X": item ids share their response's random part.
std::string IdBody(const std::string& id) { return id.rfind("resp_", 0) == 0 ? id.substr(5) : id; }

std::string ItemId(const char* prefix, const std::string& response_id, size_t output_index) {
  return std::string(prefix) + "_" + IdBody(response_id) + "_" + std::to_string(output_index);
}

Json OutputTextPart(const std::string& text) {
  return Json{
      {"type", "output_text"}, {"text", text}, {"annotations", Json::array()}, {"logprobs", Json::array()}};
}

Json ReasoningTextPart(const std::string& text) { return Json{{"type", "reasoning_text"}, {"text", text}}; }

Json MessageItem(const std::string& id, const std::string& status, const Json& content) {
  return Json{
      {"type", "message"}, {"id", id}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

Json ReasoningItem(const std::string& id, const std::string& status, const Json& content) {
  return Json{{"type", "reasoning"},
              {"id", id},
              {"status", status},
              {"summary", Json::array()},
              {"content", content}};
}

Json FunctionCallItem(const std::string& id, const std::string& status, const std::string& call_id,
                      const std::string& name, const std::string& arguments) {
  return Json{{"type", "function_call"}, {"id", id},     {"status", status},
              {"call_id", call_id},      {"name", name}, {"arguments", arguments}};
}

Json UsageJson(const ChatOutcome& o) {
  return Json{{"input_tokens", o.n_prompt},
              {"input_tokens_details", {{"cached_tokens", o.n_cached}}},
              {"output_tokens", o.n_generated},
              // The chat loop does not count reasoning tokens separately.
              {"output_tokens_details", {{"reasoning_tokens", 0}}},
              {"total_tokens", static_cast<int64_t>(o.n_prompt) + o.n_generated}};
}

bool Incomplete(const ChatOutcome& o) { return o.finish_reason == "length"; }

// `payload` with the fields of `extra` (an object, or null for none) added.
Json With(Json payload, const Json& extra) {
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) payload[it.key()] = it.value();
  }
  return payload;
}

// The object around `output`; `status` decides incomplete_details and completed_at.
Json Envelope(const std::string& id, const std::string& model, int64_t created, const std::string& status,
              int64_t completed_at, Json error, Json output, const Json& echo, Json usage) {
  Json r = Json::object();
  r["id"] = id;
  r["object"] = "response";
  r["created_at"] = created;
  r["status"] = status;
  r["completed_at"] = status == "completed" ? Json(completed_at < 0 ? created : completed_at) : Json();
  r["error"] = std::move(error);
  r["incomplete_details"] = status == "incomplete" ? Json{{"reason", "max_output_tokens"}} : Json();
  r["model"] = model;
  r["output"] = std::move(output);
  if (echo.is_object()) {
    for (auto it = echo.begin(); it != echo.end(); ++it) {
      if (!r.contains(it.key())) r[it.key()] = it.value();
    }
  }
  r["usage"] = std::move(usage);
  return r;
}

}  // namespace

Json ResponsesRequestEcho(const Json& body) {
  Json e = Json::object();
  if (!body.is_object()) return e;
  e["background"] = false;
  e["instructions"] = Or(body, "instructions", Json());
  e["max_output_tokens"] = Or(body, "max_output_tokens", Json());
  e["metadata"] = Or(body, "metadata", Json::object());
  e["parallel_tool_calls"] = Or(body, "parallel_tool_calls", true);
  e["previous_response_id"] = Json();
  Json reasoning = {{"effort", Json()}, {"summary", Json()}};
  if (Present(body, "reasoning") && body.at("reasoning").is_object()) {
    const Json& r = body.at("reasoning");
    reasoning["effort"] = Or(r, "effort", Json());
    reasoning["summary"] = Or(r, "summary", Or(r, "generate_summary", Json()));
  }
  e["reasoning"] = std::move(reasoning);
  e["store"] = false;  // accepted as OpenAI's default true, but nothing is ever stored
  e["temperature"] = Or(body, "temperature", Json());
  Json text = {{"format", {{"type", "text"}}}, {"verbosity", "medium"}};
  if (Present(body, "text") && body.at("text").is_object() && Present(body.at("text"), "format")) {
    text["format"] = body.at("text").at("format");
  }
  e["text"] = std::move(text);
  e["tool_choice"] = Or(body, "tool_choice", "auto");
  e["tools"] = Or(body, "tools", Json::array());
  e["top_logprobs"] = 0;
  e["top_p"] = Or(body, "top_p", Json());
  e["truncation"] = Or(body, "truncation", "disabled");
  for (const char* f : {"user", "safety_identifier", "prompt_cache_key", "service_tier"}) {
    if (Present(body, f)) e[f] = body.at(f);
  }
  return e;
}

Json ResponsesObjectJson(const ChatOutcome& outcome, const std::string& id, const std::string& model,
                         int64_t created, const Json& request_echo, int64_t completed_at) {
  const bool incomplete = Incomplete(outcome);
  // Items in the order the model writes them; on "length" the last one is where generation stopped.
  enum Kind { kReasoning, kMessage, kCall };
  std::vector<std::pair<Kind, size_t>> plan;  // kind, tool-call index
  if (!outcome.reasoning.empty()) plan.push_back({kReasoning, 0});
  if (!outcome.content.empty() || outcome.tool_calls.empty()) plan.push_back({kMessage, 0});
  for (size_t i = 0; i < outcome.tool_calls.size(); ++i) plan.push_back({kCall, i});
  // With no answer text, the empty message comes after reasoning; the model stopped inside the reasoning.
  const size_t last_written =
      outcome.content.empty() && outcome.tool_calls.empty() && plan.size() == 2 ? 0 : plan.size() - 1;
  Json output = Json::array();
  for (size_t k = 0; k < plan.size(); ++k) {
    const std::string status = incomplete && k >= last_written ? "incomplete" : "completed";
    switch (plan[k].first) {
      case kReasoning:
        output.push_back(
            ReasoningItem(ItemId("rs", id, k), status, Json::array({ReasoningTextPart(outcome.reasoning)})));
        break;
      case kMessage:
        output.push_back(
            MessageItem(ItemId("msg", id, k), status, Json::array({OutputTextPart(outcome.content)})));
        break;
      case kCall: {
        const ToolCall& c = outcome.tool_calls[plan[k].second];
        output.push_back(FunctionCallItem(ItemId("fc", id, k), status, c.id, c.name, c.arguments));
        break;
      }
    }
  }
  return Envelope(id, model, created, incomplete ? "incomplete" : "completed", completed_at, Json(),
                  std::move(output), request_echo, UsageJson(outcome));
}

// ---- stream -----------------------------------------------------------------------------------------------

ResponsesStreamWriter::ResponsesStreamWriter(std::string id, std::string model, int64_t created,
                                             Json request_echo)
    : id_(std::move(id)), model_(std::move(model)), created_(created), echo_(std::move(request_echo)) {}

std::string ResponsesStreamWriter::Event(const std::string& type, Json payload) {
  Json e = Json::object();
  e["type"] = type;
  e["sequence_number"] = sequence_++;
  for (auto it = payload.begin(); it != payload.end(); ++it) e[it.key()] = std::move(it.value());
  return "event: " + type + "\ndata: " + Dump(e) + "\n\n";
}

Json ResponsesStreamWriter::ItemJson(const Item& item, bool with_parts) const {
  switch (item.kind) {
    case ItemKind::kReasoning:
      return ReasoningItem(item.id, item.status,
                           with_parts ? Json::array({ReasoningTextPart(item.text)}) : Json::array());
    case ItemKind::kMessage:
      return MessageItem(item.id, item.status,
                         with_parts ? Json::array({OutputTextPart(item.text)}) : Json::array());
    case ItemKind::kFunctionCall:
    default:
      return FunctionCallItem(item.id, item.status, item.call_id, item.name, item.text);
  }
}

Json ResponsesStreamWriter::ResponseJson(const std::string& status, int64_t completed_at, Json error,
                                         Json usage) const {
  Json output = Json::array();
  for (const Item& item : items_) output.push_back(ItemJson(item, /*with_parts=*/true));
  return Envelope(id_, model_, created_, status, completed_at, std::move(error), std::move(output), echo_,
                  std::move(usage));
}

std::string ResponsesStreamWriter::Start() {
  std::string out =
      Event("response.created", {{"response", ResponseJson("in_progress", -1, Json(), Json())}});
  out += Event("response.in_progress", {{"response", ResponseJson("in_progress", -1, Json(), Json())}});
  return out;
}

std::string ResponsesStreamWriter::Progress(const Json& prompt_progress) {
  if (finished_) return "";
  return Event("response.in_progress", {{"response", ResponseJson("in_progress", -1, Json(), Json())},
                                        {"prompt_progress", prompt_progress}});
}

std::string ResponsesStreamWriter::Open(Item item) {
  const size_t index = items_.size();
  const char* prefix = item.kind == ItemKind::kReasoning ? "rs"
                       : item.kind == ItemKind::kMessage ? "msg"
                                                         : "fc";
  item.id = ItemId(prefix, id_, index);
  item.status = "in_progress";
  items_.push_back(std::move(item));
  open_ = true;
  const Item& it = items_.back();
  std::string out =
      Event("response.output_item.added", {{"output_index", index}, {"item", ItemJson(it, false)}});
  if (it.kind != ItemKind::kFunctionCall) {
    out += Event("response.content_part.added",
                 {{"item_id", it.id},
                  {"output_index", index},
                  {"content_index", 0},
                  {"part", it.kind == ItemKind::kMessage ? OutputTextPart("") : ReasoningTextPart("")}});
  }
  return out;
}

std::string ResponsesStreamWriter::CloseOpen(const std::string& status) {
  if (!open_ || items_.empty()) return "";
  open_ = false;
  Item& it = items_.back();
  it.status = status;
  const size_t index = items_.size() - 1;
  std::string out;
  switch (it.kind) {
    case ItemKind::kMessage:
      out += Event("response.output_text.done", {{"item_id", it.id},
                                                 {"output_index", index},
                                                 {"content_index", 0},
                                                 {"text", it.text},
                                                 {"logprobs", Json::array()}});
      out += Event("response.content_part.done", {{"item_id", it.id},
                                                  {"output_index", index},
                                                  {"content_index", 0},
                                                  {"part", OutputTextPart(it.text)}});
      break;
    case ItemKind::kReasoning:
      out += Event("response.reasoning_text.done",
                   {{"item_id", it.id}, {"output_index", index}, {"content_index", 0}, {"text", it.text}});
      out += Event("response.content_part.done", {{"item_id", it.id},
                                                  {"output_index", index},
                                                  {"content_index", 0},
                                                  {"part", ReasoningTextPart(it.text)}});
      break;
    case ItemKind::kFunctionCall:
    default:
      out += Event("response.function_call_arguments.done",
                   {{"item_id", it.id}, {"output_index", index}, {"name", it.name}, {"arguments", it.text}});
      break;
  }
  out += Event("response.output_item.done", {{"output_index", index}, {"item", ItemJson(it, true)}});
  return out;
}

std::string ResponsesStreamWriter::Delta(const ChatDelta& delta, const Json& extra) {
  if (finished_) return "";
  std::string out;
  if (delta.kind == ChatDelta::kToolCallStart) {
    out += CloseOpen("completed");
    Item item;
    item.kind = ItemKind::kFunctionCall;
    item.call_id = delta.id;
    item.name = delta.name;
    item.tool_index = delta.tool_index;
    out += Open(std::move(item));
    return out;
  }
  if (delta.text.empty()) return out;
  if (delta.kind == ChatDelta::kToolCallArguments) {
    // ToolCallStreamParser sends a call's arguments right after its start; anything else has no open item.
    if (!open_ || items_.back().kind != ItemKind::kFunctionCall ||
        items_.back().tool_index != delta.tool_index) {
      return out;
    }
    Item& it = items_.back();
    it.text += delta.text;
    return Event(
        "response.function_call_arguments.delta",
        With({{"item_id", it.id}, {"output_index", items_.size() - 1}, {"delta", delta.text}}, extra));
  }
  const ItemKind kind = delta.kind == ChatDelta::kReasoning ? ItemKind::kReasoning : ItemKind::kMessage;
  if (!open_ || items_.back().kind != kind) {
    out += CloseOpen("completed");
    Item item;
    item.kind = kind;
    out += Open(std::move(item));
  }
  Item& it = items_.back();
  it.text += delta.text;
  Json payload = {
      {"item_id", it.id}, {"output_index", items_.size() - 1}, {"content_index", 0}, {"delta", delta.text}};
  if (kind == ItemKind::kMessage) payload["logprobs"] = Json::array();
  out += Event(kind == ItemKind::kMessage ? "response.output_text.delta" : "response.reasoning_text.delta",
               With(std::move(payload), extra));
  return out;
}

std::string ResponsesStreamWriter::Finish(const ChatOutcome& outcome, int64_t completed_at,
                                          const Json& extra) {
  if (finished_) return "";
  const bool incomplete = Incomplete(outcome);
  const std::string item_status = incomplete ? "incomplete" : "completed";
  std::string out = CloseOpen(item_status);
  bool answered = false;
  for (const Item& it : items_) answered |= it.kind != ItemKind::kReasoning;
  if (!answered) {  // as in ResponsesObjectJson: an empty message, so clients always find one
    Item item;
    item.kind = ItemKind::kMessage;
    out += Open(std::move(item));
    out += CloseOpen(item_status);
  }
  finished_ = true;
  const std::string status = incomplete ? "incomplete" : "completed";
  out += Event(incomplete ? "response.incomplete" : "response.completed",
               With({{"response", ResponseJson(status, completed_at, Json(), UsageJson(outcome))}}, extra));
  return out;
}

std::string ResponsesStreamWriter::Fail(const std::string& message, const std::string& code) {
  if (finished_) return "";
  finished_ = true;
  if (open_) {
    items_.back().status = "incomplete";
    open_ = false;
  }
  std::string out = Event("error", {{"code", code}, {"message", message}, {"param", Json()}});
  out += Event("response.failed",
               {{"response", ResponseJson("failed", -1, {{"code", code}, {"message", message}}, Json())}});
  return out;
}

}  // namespace lazyslot::server
