// Validation of OpenAI-style request fields (see openai_params.h). Never throws: every nlohmann access is
// guarded by a type check first, and parse errors are caught here at the library boundary.
#include "server/generation/openai_params.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/log.h"
#include "server/generation/native_params.h"
#include "server/generation/sampling_fields.h"

namespace lazyslot::server {
namespace {

Status FieldError(const std::string& field, const std::string& why) {
  return InvalidArgument(field + ": " + why);
}

}  // namespace

Result<int64_t> IntegerValue(const Json& v, const std::string& field, int64_t lo, int64_t hi) {
  int64_t out = 0;
  if (v.is_number_integer()) {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return FieldError(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                                     ", got " + std::to_string(u));
      }
      out = static_cast<int64_t>(u);
    } else {
      out = v.get<int64_t>();
    }
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) {
      return FieldError(field, "expected an integer, got " + v.dump());
    }
    if (std::fabs(d) > 9e18) {
      return FieldError(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                                   ", got " + v.dump());
    }
    out = static_cast<int64_t>(d);
  } else {
    return FieldError(field, "expected an integer, got " + TypeName(v));
  }
  if (out < lo || out > hi) {
    return FieldError(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                                 ", got " + std::to_string(out));
  }
  return out;
}

namespace {

// A bound for messages: "0", "2", "-2", "1000000", "0.5" (std::to_string would print "0.000000").
std::string BoundText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// A finite number within [lo, hi] (absent/null: unchanged).
Status ReadFloat(const Json& body, const std::string& field, double lo, double hi, float* out) {
  if (!Present(body, field)) return Status::Ok();
  const Json& v = body.at(field);
  if (!v.is_number()) return FieldError(field, "expected a number, got " + TypeName(v));
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    return FieldError(field,
                      "must be between " + BoundText(lo) + " and " + BoundText(hi) + ", got " + v.dump());
  }
  *out = static_cast<float>(d);
  return Status::Ok();
}

Status ReadInt(const Json& body, const std::string& field, int64_t lo, int64_t hi, int32_t* out) {
  if (!Present(body, field)) return Status::Ok();
  LS_ASSIGN_OR_RETURN(int64_t v, IntegerValue(body.at(field), field, lo, hi));
  *out = static_cast<int32_t>(v);
  return Status::Ok();
}

// max_tokens-like fields: -1 (no limit) or a positive count.
Status ReadPredict(const Json& body, const std::string& field, int32_t* out) {
  if (!Present(body, field)) return Status::Ok();
  LS_ASSIGN_OR_RETURN(int64_t v,
                      IntegerValue(body.at(field), field, -1, std::numeric_limits<int32_t>::max()));
  if (v == 0) return FieldError(field, "must be at least 1 (or -1 for no limit), got 0");
  *out = static_cast<int32_t>(v);
  return Status::Ok();
}

}  // namespace

bool Present(const Json& body, const std::string& field) {
  auto it = body.find(field);
  return it != body.end() && !it->is_null();
}



Result<bool> GetBool(const Json& body, const std::string& field, bool def) {
  if (!Present(body, field)) return def;
  const Json& v = body.at(field);
  if (!v.is_boolean()) return FieldError(field, "expected a boolean, got " + TypeName(v));
  return v.get<bool>();
}

Result<std::string> GetString(const Json& body, const std::string& field, const std::string& def) {
  if (!Present(body, field)) return def;
  const Json& v = body.at(field);
  if (!v.is_string()) return FieldError(field, "expected a string, got " + TypeName(v));
  return v.get<std::string>();
}

Result<int64_t> GetInteger(const Json& body, const std::string& field, int64_t lo, int64_t hi) {
  if (!Present(body, field)) return FieldError(field, "is required");
  return IntegerValue(body.at(field), field, lo, hi);
}

uint64_t CacheScope(const std::string& salt) {
  if (salt.empty()) return 0;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : salt) h = (h ^ c) * 1099511628211ull;
  return h == 0 ? 1 : h;
}

Result<GenerationParams> ParseGenerationParams(const Json& body, const SamplingParams& defaults) {
  GenerationParams p;
  p.sampling = defaults;
  p.seed_given = defaults.seed != SamplingParams().seed;
  p.repeat_last_n = defaults.repeat_last_n;
  SamplingParams& s = p.sampling;
  LS_RETURN_IF_ERROR(ReadFloat(body, "temperature", 0.0, 1e6, &s.temperature));
  LS_RETURN_IF_ERROR(ReadFloat(body, "top_p", 0.0, 1.0, &s.top_p));
  LS_RETURN_IF_ERROR(ReadFloat(body, "min_p", 0.0, 1.0, &s.min_p));
  LS_RETURN_IF_ERROR(ReadInt(body, "top_k", -1, std::numeric_limits<int32_t>::max(), &s.top_k));
  LS_RETURN_IF_ERROR(ReadFloat(body, "repeat_penalty", 0.0, 1e6, &s.repeat_penalty));
  if (Present(body, "repeat_penalty") && s.repeat_penalty <= 0.0f) {
    return FieldError("repeat_penalty", "must be greater than 0 (1 disables it)");
  }
  LS_RETURN_IF_ERROR(ReadFloat(body, "frequency_penalty", -2.0, 2.0, &s.frequency_penalty));
  LS_RETURN_IF_ERROR(ReadFloat(body, "presence_penalty", -2.0, 2.0, &s.presence_penalty));
  LS_RETURN_IF_ERROR(
      ReadInt(body, "repeat_last_n", -1, std::numeric_limits<int32_t>::max(), &p.repeat_last_n));
  if (Present(body, "seed")) {
    LS_ASSIGN_OR_RETURN(int64_t seed,
                        IntegerValue(body.at("seed"), "seed", std::numeric_limits<int64_t>::min(),
                                     std::numeric_limits<int64_t>::max()));
    // -1 asks for a random seed, even when the server has a --seed.
    p.seed_given = seed != -1;
    if (seed != -1) s.seed = static_cast<uint64_t>(seed);
  }
  // Precedence as OpenAI documents it: max_completion_tokens replaces max_tokens; n_predict is
  // llama-server's.
  LS_RETURN_IF_ERROR(ReadPredict(body, "n_predict", &p.n_predict));
  LS_RETURN_IF_ERROR(ReadPredict(body, "max_tokens", &p.n_predict));
  LS_RETURN_IF_ERROR(ReadPredict(body, "max_completion_tokens", &p.n_predict));

  if (Present(body, "stop")) {
    const Json& v = body.at("stop");
    auto add = [&p](const Json& s, const std::string& name) -> Status {
      if (!s.is_string()) return FieldError(name, "expected a string, got " + TypeName(s));
      const std::string& text = s.get_ref<const std::string&>();
      if (text.size() > kMaxStopBytes) {
        return FieldError(name, "a stop string may have at most " + std::to_string(kMaxStopBytes) +
                                    " bytes, got " + std::to_string(text.size()));
      }
      if (!text.empty()) p.stop.push_back(text);
      return Status::Ok();
    };
    if (v.is_string()) {
      LS_RETURN_IF_ERROR(add(v, "stop"));
    } else if (v.is_array()) {
      if (v.size() > kMaxStopStrings) {
        return FieldError("stop", "at most " + std::to_string(kMaxStopStrings) + " stop strings, got " +
                                      std::to_string(v.size()));
      }
      for (size_t i = 0; i < v.size(); ++i) LS_RETURN_IF_ERROR(add(v[i], "stop[" + std::to_string(i) + "]"));
    } else {
      return FieldError("stop", "expected a string or a list of strings, got " + TypeName(v));
    }
  }
  LS_ASSIGN_OR_RETURN(p.ignore_eos, GetBool(body, "ignore_eos", false));
  LS_ASSIGN_OR_RETURN(p.cache_prompt, GetBool(body, "cache_prompt", true));
  if (Present(body, "cache_salt")) {
    const Json& v = body.at("cache_salt");
    if (!v.is_string() || v.get<std::string>().empty()) {
      return FieldError("cache_salt", "expected a non-empty string, got " +
                                          (v.is_string() ? std::string("an empty string") : TypeName(v)));
    }
    if (v.get<std::string>().size() > kMaxCacheSalt) {
      return FieldError("cache_salt", "at most " + std::to_string(kMaxCacheSalt) + " bytes, got " +
                                          std::to_string(v.get<std::string>().size()));
    }
    p.cache_salt = v.get<std::string>();
  }
  LS_ASSIGN_OR_RETURN(p.stream, GetBool(body, "stream", false));
  LS_ASSIGN_OR_RETURN(p.verbose, GetBool(body, "verbose", GetLogLevel() == LogLevel::kDebug));
  if (Present(body, "stream_options")) {
    const Json& so = body.at("stream_options");
    if (!so.is_object()) return FieldError("stream_options", "expected an object, got " + TypeName(so));
    auto it = so.find("include_usage");
    if (it != so.end() && !it->is_null()) {
      if (!it->is_boolean()) {
        return FieldError("stream_options.include_usage", "expected a boolean, got " + TypeName(*it));
      }
      p.include_usage = it->get<bool>();
    }
  }
  for (const char* field : {"n", "n_cmpl"}) {
    if (!Present(body, field)) continue;
    LS_ASSIGN_OR_RETURN(int64_t n, IntegerValue(body.at(field), field, 1, 256));
    if (std::string(field) == "n_cmpl" && Present(body, "n") && n != p.n) {
      return FieldError("n_cmpl", "disagrees with n (" + std::to_string(p.n) + "); give one of them");
    }
    p.n = static_cast<int>(n);
  }
  LS_ASSIGN_OR_RETURN(p.timings_per_token, GetBool(body, "timings_per_token", false));
  LS_ASSIGN_OR_RETURN(p.return_progress, GetBool(body, "return_progress", false));
  LS_ASSIGN_OR_RETURN(p.backend_sampling, GetBool(body, "backend_sampling", false));
  if (Present(body, "id_slot")) {
    LS_ASSIGN_OR_RETURN(int64_t id, IntegerValue(body.at("id_slot"), "id_slot", -1, 255));
    p.id_slot = static_cast<int>(id);
  }
  if (Present(body, "n_keep")) {
    LS_ASSIGN_OR_RETURN(int64_t k, IntegerValue(body.at("n_keep"), "n_keep", -1, INT32_MAX));
    p.n_keep = static_cast<int32_t>(k);
  }
  if (Present(body, "n_discard")) {
    LS_ASSIGN_OR_RETURN(int64_t k, IntegerValue(body.at("n_discard"), "n_discard", 0, INT32_MAX));
    p.n_discard = static_cast<int32_t>(k);
  }
  LS_RETURN_IF_ERROR(ParseSamplingFields(body, &s));
  return p;
}

namespace {

// Levenshtein distance, for "did you mean" hints on unknown fields (names are short).
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Fields of the generation routes. The last group is metadata OpenAI clients may send that changes
// nothing here (model: one model is served; user/metadata/store/service_tier: bookkeeping).
const std::vector<std::string>& GenerationFields() {
  static const std::vector<std::string> kFields = {"temperature",
                                                   "top_p",
                                                   "top_k",
                                                   "min_p",
                                                   "max_tokens",
                                                   "max_completion_tokens",
                                                   "n_predict",
                                                   "n",
                                                   "stop",
                                                   "stream",
                                                   "stream_options",
                                                   "seed",
                                                   "frequency_penalty",
                                                   "presence_penalty",
                                                   "repeat_penalty",
                                                   "repeat_last_n",
                                                   "ignore_eos",
                                                   "cache_prompt",
                                                   "cache_salt",
                                                   "logprobs",
                                                   "top_logprobs",
                                                   "response_format",
                                                   "json_schema",
                                                   "grammar",
                                                   "logit_bias",
                                                   "n_probs",
                                                   "post_sampling_probs",
                                                   "verbose",
                                                   "timings_per_token",
                                                   "return_progress",
                                                   "id_slot",
                                                   "n_keep",
                                                   "n_discard",
                                                   "backend_sampling",
                                                   "model",
                                                   "user",
                                                   "metadata",
                                                   "store",
                                                   "service_tier"};
  return kFields;
}

std::vector<std::string> KnownFields(RequestKind kind) {
  std::vector<std::string> f;
  if (kind == RequestKind::kChat || kind == RequestKind::kCompletion || kind == RequestKind::kNative) {
    f.insert(f.end(), SamplingFieldNames().begin(), SamplingFieldNames().end());
  }
  switch (kind) {
    case RequestKind::kChat:
      f.insert(f.end(), GenerationFields().begin(), GenerationFields().end());
      f.insert(f.end(),
               {"messages", "tools", "tool_choice", "parallel_tool_calls", "chat_template_kwargs",
                "add_generation_prompt", "continue_final_message", "reasoning_format", "reasoning_effort"});
      break;
    case RequestKind::kCompletion:
      f.insert(f.end(), GenerationFields().begin(), GenerationFields().end());
      f.insert(f.end(), {"prompt", "echo", "suffix", "best_of"});
      break;
    case RequestKind::kNative:
      f.insert(f.end(), GenerationFields().begin(), GenerationFields().end());
      f.insert(f.end(), NativeFieldNames().begin(), NativeFieldNames().end());
      break;
    case RequestKind::kEmbedding:
      f = {"input", "content",  "encoding_format",      "dimensions", "model",
           "user",  "truncate", "truncation_direction", "normalize",  "embd_normalize"};
      break;
    case RequestKind::kTokenize:
      f = {"content", "add_special", "parse_special", "with_pieces", "model"};
      break;
    case RequestKind::kDetokenize:
      f = {"tokens", "model"};
      break;
    case RequestKind::kSlotFile:
      f = {"filename", "model"};
      break;
  }
  return f;
}

// Known fields whose non-default values this server cannot honour: refused rather than ignored.
Status CheckUnsupportedValues(const Json& body, RequestKind kind) {
  if (Present(body, "model") && !body.at("model").is_string()) {
    return FieldError("model", "expected a string, got " + TypeName(body.at("model")));
  }
  return Status::Ok();
}

}  // namespace

Status CheckCompletionExtras(const Json& body) {
  if (Present(body, "best_of")) {
    LS_ASSIGN_OR_RETURN(int64_t n, IntegerValue(body.at("best_of"), "best_of", 1, 1000));
    if (n != 1) return FieldError("best_of", "only 1 is supported, got " + std::to_string(n));
  }
  LS_ASSIGN_OR_RETURN(bool echo, GetBool(body, "echo", false));
  if (echo) return FieldError("echo", "echoing the prompt is not supported");
  LS_ASSIGN_OR_RETURN(std::string suffix, GetString(body, "suffix", ""));
  if (!suffix.empty()) {
    return FieldError("suffix", "insertion is not supported here; llama-server's POST /infill does it");
  }
  return Status::Ok();
}

Status CheckFieldNames(const Json& obj, const std::vector<std::string>& known, const std::string& prefix) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& key = it.key();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string best;
    size_t best_d = 3;  // suggest only names within two edits
    for (const std::string& k : known) {
      if (key.size() > 40) break;  // no hint for absurd names (and no quadratic work on them)
      const size_t d = EditDistance(key, k);
      if (d < best_d) {
        best_d = d;
        best = k;
      }
    }
    const std::string shown = key.size() > 64 ? key.substr(0, 64) + "..." : key;
    return FieldError(prefix.empty() ? shown : prefix + "." + shown,
                      "unknown field" + (best.empty() ? std::string() : " (did you mean '" + best + "'?)") +
                          "; this server refuses fields it does not use");
  }
  return Status::Ok();
}

Status CheckKnownFields(const Json& body, RequestKind kind) {
  LS_RETURN_IF_ERROR(CheckFieldNames(body, KnownFields(kind)));
  return CheckUnsupportedValues(body, kind);
}

Result<std::vector<TokenId>> ParseTokenList(const Json& value, const std::string& field) {
  if (!value.is_array()) return FieldError(field, "expected a list of token ids, got " + TypeName(value));
  std::vector<TokenId> out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    LS_ASSIGN_OR_RETURN(int64_t id, IntegerValue(value[i], field + "[" + std::to_string(i) + "]", 0,
                                                 std::numeric_limits<int32_t>::max()));
    out.push_back(static_cast<TokenId>(id));
  }
  return out;
}

Result<std::vector<PromptInput>> ParsePromptList(const Json& value, const std::string& field) {
  std::vector<PromptInput> out;
  if (value.is_string()) {
    out.push_back(PromptInput{false, value.get<std::string>(), {}, {}});
    return out;
  }
  if (!value.is_array()) {
    return FieldError(field,
                      "expected a string, a list of strings, a list of token ids or a list of token-id "
                      "lists, got " +
                          TypeName(value));
  }
  if (value.empty()) return FieldError(field, "must not be an empty list");
  // A list of ids and strings is one prompt (llama-server's mixed form); one of ids only, token ids.
  auto one_prompt = [](const Json& list, const std::string& name) -> Result<PromptInput> {
    bool has_string = false;
    for (const Json& e : list) has_string = has_string || e.is_string();
    if (!has_string) {
      LS_ASSIGN_OR_RETURN(std::vector<TokenId> ids, ParseTokenList(list, name));
      return PromptInput{true, "", std::move(ids), {}};
    }
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i].is_string()) continue;
      LS_RETURN_IF_ERROR(ParseTokenList(Json::array({list[i]}), name + "[" + std::to_string(i) + "]").status());
    }
    return PromptInput{false, "", {}, list};
  };
  bool has_number = false;
  for (const Json& e : value) has_number = has_number || e.is_number();
  if (has_number) {
    LS_ASSIGN_OR_RETURN(PromptInput in, one_prompt(value, field));
    out.push_back(std::move(in));
    return out;
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string name = field + "[" + std::to_string(i) + "]";
    if (value[i].is_string()) {
      out.push_back(PromptInput{false, value[i].get<std::string>(), {}, {}});
    } else if (value[i].is_array() && !value[i].empty()) {
      LS_ASSIGN_OR_RETURN(PromptInput in, one_prompt(value[i], name));
      out.push_back(std::move(in));
    } else if (value[i].is_array()) {
      return FieldError(name, "must not be an empty list");
    } else {
      return FieldError(name, "expected a string or a list of token ids, got " + TypeName(value[i]));
    }
  }
  return out;
}

Result<std::vector<TokenId>> TokenizePrompt(const Tokenizer& tok, PromptInput in, const std::string& field) {
  if (in.is_tokens) return std::move(in.tokens);
  if (in.mixed.is_array()) return ParseNativePrompt(in.mixed, field, tok, true);
  Result<std::vector<TokenId>> ids = tok.Tokenize(in.text, true, true);
  if (!ids.ok()) return InvalidArgument(field + ": tokenizing failed: " + ids.status().message());
  return ids;
}

Result<std::vector<std::pair<int32_t, float>>> ParseLogitBias(const Json& value, const Tokenizer& tok,
                                                              int32_t n_vocab) {
  std::vector<std::pair<int32_t, float>> out;
  if (value.is_null()) return out;
  const float kBan = -std::numeric_limits<float>::infinity();
  // The tokens a key names: an id; else in the object form the one vocabulary token with that exact text if
  // there is one; else the tokens of the text (as llama-server reads both forms).
  auto tokens_of = [&](const Json& key, const std::string& name,
                       bool tokenize) -> Result<std::vector<int32_t>> {
    if (key.is_number()) {
      LS_ASSIGN_OR_RETURN(int64_t id, IntegerValue(key, name, 0, n_vocab - 1));
      return std::vector<int32_t>{static_cast<int32_t>(id)};
    }
    if (!key.is_string())
      return FieldError(name, "expected a token id or a token's text, got " + TypeName(key));
    const std::string& text = key.get_ref<const std::string&>();
    if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos && text.size() <= 10) {
      const int64_t id = std::stoll(text);
      if (id >= n_vocab) {
        return FieldError(
            name, "token id " + text + " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
      }
      return std::vector<int32_t>{static_cast<int32_t>(id)};
    }
    if (text.empty()) return FieldError(name, "an empty string names no token");
    if (!tokenize) {
      for (TokenId id = 0; id < tok.n_vocab(); ++id) {
        if (tok.TokenText(id) == text || tok.TokenToPiece(id, true) == text) return std::vector<int32_t>{id};
      }
    }
    LS_ASSIGN_OR_RETURN(std::vector<TokenId> ids, tok.Tokenize(text, false, false));
    if (ids.empty()) {
      return FieldError(name, "'" + (text.size() > 64 ? text.substr(0, 64) + "..." : text) +
                                  "' tokenizes to no token (give a token id)");
    }
    return std::vector<int32_t>(ids.begin(), ids.end());
  };
  auto add = [&](const std::vector<int32_t>& ids, float bias) {
    for (int32_t id : ids) out.emplace_back(id, bias);
  };
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string name =
          "logit_bias." + (it.key().size() > 64 ? it.key().substr(0, 64) + "..." : it.key());
      LS_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokens_of(Json(it.key()), name, false));
      if (it.value().is_boolean() && !it.value().get<bool>()) {
        add(ids, kBan);
        continue;
      }
      if (!it.value().is_number()) return FieldError(name, "expected a number, got " + TypeName(it.value()));
      const double b = it.value().get<double>();
      if (!std::isfinite(b) || b < -100 || b > 100) {
        return FieldError(name, "must be between -100 and 100, got " + it.value().dump());
      }
      add(ids, static_cast<float>(b));
    }
    return out;
  }
  if (!value.is_array()) {
    return FieldError(
        "logit_bias",
        "expected an object {\"token id\": bias} or a list of [token, bias] pairs, got " + TypeName(value));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string name = "logit_bias[" + std::to_string(i) + "]";
    const Json& e = value[i];
    if (!e.is_array() || e.size() != 2) return FieldError(name, "expected a [token, bias] pair");
    LS_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokens_of(e[0], name + "[0]", true));
    if (e[1].is_boolean()) {
      if (e[1].get<bool>()) return FieldError(name + "[1]", "expected a number or false (ban), got true");
      add(ids, kBan);
    } else if (e[1].is_number() && std::isfinite(e[1].get<double>())) {
      add(ids, static_cast<float>(e[1].get<double>()));
    } else {
      return FieldError(name + "[1]", "expected a number or false (ban), got " + TypeName(e[1]));
    }
  }
  return out;
}

Result<Json> ParseChatMessages(const Json& body) {
  auto it = body.find("messages");
  if (it == body.end() || it->is_null()) return FieldError("messages", "is required");
  if (!it->is_array()) return FieldError("messages", "expected a list of messages, got " + TypeName(*it));
  if (it->empty()) return FieldError("messages", "must contain at least one message");
  Json out = Json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string name = "messages[" + std::to_string(i) + "]";
    const Json& m = (*it)[i];
    if (!m.is_object()) return FieldError(name, "expected an object, got " + TypeName(m));
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) {
      return FieldError(name + ".role",
                        role == m.end() ? "is required" : "expected a string, got " + TypeName(*role));
    }
    // OpenAI's roles ("function" is its deprecated predecessor of "tool"); templates would otherwise
    // render an unknown role as text or fail on it, depending on the model.
    const std::string& r = role->get_ref<const std::string&>();
    if (r != "system" && r != "developer" && r != "user" && r != "assistant" && r != "tool" &&
        r != "function") {
      return FieldError(name + ".role",
                        "'" + r + "' is not a role (system, developer, user, assistant, tool or function)");
    }
    Json msg = m;
    auto content = m.find("content");
    if (content != m.end() && content->is_array()) {
      // Text parts are joined (newline-separated) so templates that expect a string still render.
      std::string text;
      for (size_t k = 0; k < content->size(); ++k) {
        const std::string part_name = name + ".content[" + std::to_string(k) + "]";
        const Json& part = (*content)[k];
        if (part.is_string()) {
          if (!text.empty()) text += "\n";
          text += part.get<std::string>();
          continue;
        }
        if (!part.is_object()) return FieldError(part_name, "expected an object, got " + TypeName(part));
        auto type = part.find("type");
        if (type == part.end() || !type->is_string()) return FieldError(part_name + ".type", "is required");
        if (type->get<std::string>() != "text") {
          return FieldError(part_name + ".type", "'" + type->get<std::string>() +
                                                     "' is not supported (this server reads text only)");
        }
        auto t = part.find("text");
        if (t == part.end() || !t->is_string()) return FieldError(part_name + ".text", "expected a string");
        if (!text.empty()) text += "\n";
        text += t->get<std::string>();
      }
      msg["content"] = text;
    } else if (content != m.end() && !content->is_string() && !content->is_null()) {
      return FieldError(name + ".content",
                        "expected a string, a list of parts or null, got " + TypeName(*content));
    }
    out.push_back(std::move(msg));
  }
  return out;
}

std::string Base64Encode(const void* data, size_t n) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < n) {
    uint32_t v = uint32_t{p[i]} << 16;
    if (i + 1 < n) v |= uint32_t{p[i + 1]} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += (i + 1 < n) ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace lazyslot::server
