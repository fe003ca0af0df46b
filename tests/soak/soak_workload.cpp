// Request bodies, answer parsing and comparison for the soak driver (see soak_workload.h).
#include "soak_workload.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace lazyslot::soak {

using nlohmann::json;

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kChat:
      return "chat";
    case Kind::kChatStream:
      return "chat stream";
    case Kind::kCompletion:
      return "completion";
    case Kind::kCompletionStream:
      return "completion stream";
    case Kind::kEmbedding:
      return "embeddings";
    case Kind::kCount:
      break;
  }
  return "?";
}

Workload DefaultWorkload() {
  // A long passage (about 250 tokens with TinyLLama's vocabulary): its prompt is read in several
  // --batch-size chunks, mixed into batches with other slots' decode tokens.
  std::string long_text;
  for (int i = 0; i < 6; ++i) {
    long_text +=
        "Once upon a time there was a little boy named Tim. Tim liked to play with his red ball in the "
        "garden behind the house. ";
  }
  long_text += "One day the ball rolled away and";
  Workload w;
  w.completion = {
      {"Once upon a time", 48, {}},        {"The little girl went to the park and", 40, {"."}},
      {"Tom had a big red ball.", 32, {}}, {long_text, 24, {}},
      {"Lily and her mom", 64, {"\n"}},    {"One day, a cat", 16, {}},
  };
  w.chat = {
      {"Tell me a story about a dog.", 48, {}},
      {"What is the sun?", 32, {}},
      {long_text, 24, {}},
      {"Hi", 40, {"."}},
      {"Write about a bird that could not fly.", 64, {}},
  };
  w.embedding = {
      "Once upon a time",
      "The cat sat on the mat.",
      long_text,
      "Tim and Sue played in the sun all day long.",
      "a",
      "The dog was happy because he found a big bone in the garden.",
  };
  return w;
}

const char* RequestPath(Kind k) {
  switch (k) {
    case Kind::kChat:
    case Kind::kChatStream:
      return "/v1/chat/completions";
    case Kind::kCompletion:
    case Kind::kCompletionStream:
      return "/v1/completions";
    default:
      return "/v1/embeddings";
  }
}

std::string RequestBody(const Workload& w, const Plan& p) {
  json j = {{"model", "soak"}};
  if (p.kind == Kind::kEmbedding) {
    if (p.n_inputs == 1) {
      j["input"] = w.embedding[p.case_index % w.embedding.size()];
    } else {
      json inputs = json::array();
      for (int i = 0; i < p.n_inputs; ++i)
        inputs.push_back(w.embedding[(p.case_index + i) % w.embedding.size()]);
      j["input"] = std::move(inputs);
    }
    return j.dump();
  }
  const bool chat = p.kind == Kind::kChat || p.kind == Kind::kChatStream;
  const TextCase& c = chat ? w.chat[p.case_index] : w.completion[p.case_index];
  if (chat) {
    j["messages"] = json::array({{{"role", "user"}, {"content", c.text}}});
  } else {
    j["prompt"] = c.text;
  }
  j["max_tokens"] = c.max_tokens;
  j["temperature"] = 0;
  j["seed"] = 42;
  j["stream"] = IsStream(p.kind);
  j["cache_prompt"] = p.cache_prompt;
  if (!c.stop.empty()) j["stop"] = c.stop;
  return j.dump();
}

namespace {

// Appends one parsed non-error chunk or response object's text and finish reason.
bool TakeChoice(bool chat, bool stream, const json& j, Answer* out, std::string* error) {
  const auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array()) {
    *error = "no choices";
    return false;
  }
  if (choices->empty()) return true;  // the usage chunk
  const json& c = (*choices)[0];
  const char* field = chat ? (stream ? "delta" : "message") : nullptr;
  const json* text = nullptr;
  if (field) {
    const auto m = c.find(field);
    if (m != c.end() && m->is_object()) {
      const auto t = m->find("content");
      if (t != m->end()) text = &*t;
    }
  } else {
    const auto t = c.find("text");
    if (t != c.end()) text = &*t;
  }
  if (text && text->is_string()) out->text += text->get<std::string>();
  const auto fr = c.find("finish_reason");
  if (fr != c.end() && fr->is_string()) out->finish_reason = fr->get<std::string>();
  return true;
}

std::string ErrorText(const json& j) {
  const json& e = j["error"];
  const std::string msg = e.is_object() ? e.value("message", std::string("?")) : e.dump();
  return "error object: " + msg.substr(0, 60);
}

}  // namespace

bool ParseAnswer(Kind k, const std::string& body, Answer* out, std::string* error) {
  *out = Answer{};
  const bool chat = k == Kind::kChat || k == Kind::kChatStream;
  if (IsStream(k)) {
    size_t pos = 0;
    while (pos < body.size()) {
      size_t eol = body.find('\n', pos);
      if (eol == std::string::npos) eol = body.size();
      const std::string line = body.substr(pos, eol - pos);
      pos = eol + 1;
      if (line.rfind("data: ", 0) != 0) continue;
      const std::string data = line.substr(6);
      if (data == "[DONE]") {
        out->saw_done = true;
        continue;
      }
      const json j = json::parse(data, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        *error = "stream: bad JSON chunk";
        return false;
      }
      if (j.contains("error")) {
        *error = "stream: " + ErrorText(j);
        return false;
      }
      if (!TakeChoice(chat, true, j, out, error)) {
        *error = "stream: " + *error;
        return false;
      }
    }
    if (!out->saw_done) {
      *error = "stream: ended without [DONE]";
      return false;
    }
    return true;
  }
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "bad JSON body";
    return false;
  }
  if (j.contains("error")) {
    *error = ErrorText(j);
    return false;
  }
  if (k == Kind::kEmbedding) {
    const auto data = j.find("data");
    if (data == j.end() || !data->is_array()) {
      *error = "embeddings: no data list";
      return false;
    }
    for (const json& item : *data) {
      const auto e = item.find("embedding");
      if (e == item.end() || !e->is_array()) {
        *error = "embeddings: item without a float list";
        return false;
      }
      out->embeddings.push_back(e->get<std::vector<float>>());
    }
    return true;
  }
  return TakeChoice(chat, false, j, out, error);
}

int SseCounter::Feed(const std::string& piece) {
  pending_ += piece;
  size_t end;
  while ((end = pending_.find("\n\n")) != std::string::npos) {
    const std::string event = pending_.substr(0, end);
    pending_.erase(0, end + 2);
    if (event.rfind("data: ", 0) != 0 || event == "data: [DONE]") continue;
    const json j = json::parse(event.substr(6), nullptr, false);
    if (!j.is_object()) continue;
    const auto choices = j.find("choices");
    if (choices == j.end() || !choices->is_array() || choices->empty()) continue;
    const json& c = (*choices)[0];
    for (const char* field : {"delta", "text"}) {
      const auto f = c.find(field);
      if (f == c.end()) continue;
      const json* t = f->is_object() ? (f->contains("content") ? &(*f)["content"] : nullptr) : &*f;
      if (t && t->is_string() && !t->get<std::string>().empty()) ++n_content_;
    }
  }
  return n_content_;
}

VectorDiff CompareVectors(const std::vector<float>& got, const std::vector<float>& ref) {
  VectorDiff d;
  if (got.size() != ref.size() || got.empty()) {
    d.cos = -2;
    d.exact = false;
    d.max_abs = INFINITY;
    return d;
  }
  double dot = 0, ng = 0, nr = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    dot += static_cast<double>(got[i]) * ref[i];
    ng += static_cast<double>(got[i]) * got[i];
    nr += static_cast<double>(ref[i]) * ref[i];
    const double diff = std::fabs(static_cast<double>(got[i]) - ref[i]);
    if (diff > d.max_abs) d.max_abs = diff;
    if (got[i] != ref[i]) d.exact = false;
  }
  d.cos = (ng > 0 && nr > 0) ? dot / std::sqrt(ng * nr) : (ng == nr ? 1.0 : 0.0);
  return d;
}

}  // namespace lazyslot::soak
