// PrepareMessagesForTemplate: OpenAI wire-form messages to Hugging Face template form, and the text a
// continued assistant message adds (see chat_messages.h).
#include "chat/chat_messages.h"

#include <algorithm>
#include <string>

namespace lazyslot {

namespace {

using nlohmann::ordered_json;

// Arguments nest at most this deep, as the request bodies that carry them (README: 128 levels); checked
// before parsing so a hostile string cannot build a deep tree.
constexpr int kMaxArgumentsDepth = 128;

int NestingDepth(const std::string& s) {
  int depth = 0, max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

Status PrepareToolCalls(ordered_json* tool_calls, const std::string& path) {
  if (!tool_calls->is_array()) return Status::Ok();
  for (size_t i = 0; i < tool_calls->size(); ++i) {
    ordered_json& call = (*tool_calls)[i];
    if (!call.is_object()) continue;
    auto fn = call.find("function");
    if (fn == call.end() || !fn->is_object()) continue;
    auto args = fn->find("arguments");
    if (args == fn->end() || !args->is_string()) continue;
    const std::string where = path + ".tool_calls[" + std::to_string(i) + "].function.arguments";
    const std::string& text = args->get_ref<const std::string&>();
    if (NestingDepth(text) > kMaxArgumentsDepth) {
      return InvalidArgument(where + " nests deeper than " + std::to_string(kMaxArgumentsDepth) + " levels");
    }
    // nlohmann's parser reports errors by exception; this is its boundary.
    try {
      *args = ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      std::string why = e.what();
      if (size_t p = why.find("] "); why.rfind("[json.exception", 0) == 0 && p != std::string::npos) {
        why = why.substr(p + 2);  // drop nlohmann's "[json.exception.parse_error.101] "
      }
      return InvalidArgument(where + " is not valid JSON: " + why);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ordered_json> PrepareMessagesForTemplate(const ordered_json& messages) {
  if (!messages.is_array()) return InvalidArgument("messages must be a JSON array");
  ordered_json out = messages;
  for (size_t i = 0; i < out.size(); ++i) {
    ordered_json& m = out[i];
    if (!m.is_object()) continue;
    auto role = m.find("role");
    if (role == m.end() || !role->is_string() || *role != "assistant") continue;
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) m["content"] = "";
    auto calls = m.find("tool_calls");
    if (calls != m.end()) {
      LS_RETURN_IF_ERROR(PrepareToolCalls(&*calls, "messages[" + std::to_string(i) + "]"));
    }
  }
  return out;
}

std::string ContinuationText(const ordered_json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (!content.is_array()) return text;
  for (const ordered_json& part : content) {
    const ordered_json* t = nullptr;
    if (part.is_string()) {
      t = &part;
    } else if (part.is_object()) {
      auto type = part.find("type");
      auto it = part.find("text");
      if (type != part.end() && *type == "text" && it != part.end() && it->is_string()) t = &*it;
    }
    if (t == nullptr) continue;
    if (!text.empty()) text += "\n\n";
    text += t->get_ref<const std::string&>();
  }
  return text;
}

}  // namespace lazyslot
