// llama-server's native request fields (see native_params.h).
#include "server/generation/native_params.h"

#include "server/generation/sampling_fields.h"

namespace lazyslot::server {
namespace {

// A field this server cannot honour: accepted only with the value that changes nothing.
Status RefuseUnlessDefault(const Json& body, const char* field, double def, const std::string& why) {
  if (!Present(body, field)) return Status::Ok();
  const Json& v = body.at(field);
  if (v.is_number() && v.get<double>() == def) return Status::Ok();
  return InvalidArgument(std::string(field) + ": " + why);
}

Result<std::vector<TokenId>> TokenizeText(const Tokenizer& tok, const std::string& text, bool add_bos,
                                          const std::string& field) {
  Result<std::vector<TokenId>> ids = tok.Tokenize(text, add_bos, /*parse_special=*/true);
  if (!ids.ok()) return InvalidArgument(field + ": tokenizing failed: " + ids.status().message());
  return ids;
}

// `prompt` as one prompt or a list of prompts.
Result<std::vector<std::vector<TokenId>>> ParsePrompts(const Json& body, const Tokenizer& tok) {
  std::vector<std::vector<TokenId>> prompts;
  auto p = body.find("prompt");
  if (p == body.end() || p->is_null()) return InvalidArgument("prompt: is required");
  // A list holding any number is one mixed prompt; otherwise each element is a prompt.
  bool mixed = !p->is_array();
  if (p->is_array()) {
    if (p->empty()) return InvalidArgument("prompt: must not be an empty list");
    for (const Json& e : *p) mixed = mixed || e.is_number();
  }
  if (mixed) {
    LS_ASSIGN_OR_RETURN(std::vector<TokenId> ids, ParseNativePrompt(*p, "prompt", tok, true));
    prompts.push_back(std::move(ids));
  } else {
    for (size_t i = 0; i < p->size(); ++i) {
      LS_ASSIGN_OR_RETURN(std::vector<TokenId> ids,
                          ParseNativePrompt((*p)[i], "prompt[" + std::to_string(i) + "]", tok, true));
      prompts.push_back(std::move(ids));
    }
  }
  for (const std::vector<TokenId>& ids : prompts) {
    if (ids.empty()) return InvalidArgument("prompt: is empty (no tokens)");
  }
  return prompts;
}

}  // namespace

const std::vector<std::string>& NativeFieldNames() {
  static const std::vector<std::string> kFields = {"prompt",
                                                   "return_tokens",
                                                   "response_fields",
                                                   "n_indent",
                                                   "n_cmpl",
                                                   "n_cache_reuse",
                                                   "dynatemp_range",
                                                   "dynatemp_exponent",
                                                   "min_keep",
                                                   "t_max_predict_ms",
                                                   "sse_ping_interval",
                                                   "lora",
                                                   "image_data",
                                                   "multimodal_data",
                                                   "input_prefix",
                                                   "input_suffix",
                                                   "input_extra"};
  return kFields;
}

Result<std::vector<TokenId>> ParseNativePrompt(const Json& value, const std::string& field,
                                               const Tokenizer& tok, bool add_bos) {
  if (value.is_string()) return TokenizeText(tok, value.get<std::string>(), add_bos, field);
  if (value.is_object()) {
    if (value.contains("multimodal_data")) {
      return InvalidArgument(field + ".multimodal_data: this server reads text only");
    }
    auto s = value.find("prompt_string");
    if (s == value.end() || !s->is_string())
      return InvalidArgument(field + ".prompt_string: expected a string");
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (it.key() != "prompt_string") return InvalidArgument(field + "." + it.key() + ": unknown field");
    }
    return TokenizeText(tok, s->get<std::string>(), add_bos, field + ".prompt_string");
  }
  if (!value.is_array()) {
    return InvalidArgument(
        field + ": expected a string, a list of token ids and strings, or {\"prompt_string\"}, got " +
        TypeName(value));
  }
  std::vector<TokenId> out;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string name = field + "[" + std::to_string(i) + "]";
    if (value[i].is_string()) {
      LS_ASSIGN_OR_RETURN(std::vector<TokenId> ids, TokenizeText(tok, value[i].get<std::string>(),
                                                                 add_bos && out.empty() && i == 0, name));
      out.insert(out.end(), ids.begin(), ids.end());
    } else {
      LS_ASSIGN_OR_RETURN(std::vector<TokenId> ids, ParseTokenList(Json::array({value[i]}), name));
      out.push_back(ids[0]);
    }
  }
  return out;
}

Result<NativeOptions> ParseNativeOptions(const Json& body, const Tokenizer& tok, bool read_prompt) {
  NativeOptions o;
  if (read_prompt) {
    LS_ASSIGN_OR_RETURN(o.prompts, ParsePrompts(body, tok));
    for (const char* f : {"input_prefix", "input_suffix", "input_extra"}) {
      if (Present(body, f)) return InvalidArgument(std::string(f) + ": only POST /infill reads it");
    }
  }
  LS_ASSIGN_OR_RETURN(o.return_tokens, GetBool(body, "return_tokens", false));
  if (Present(body, "response_fields")) {
    const Json& f = body.at("response_fields");
    if (!f.is_array())
      return InvalidArgument("response_fields: expected a list of field names, got " + TypeName(f));
    for (size_t i = 0; i < f.size(); ++i) {
      if (!f[i].is_string()) {
        return InvalidArgument("response_fields[" + std::to_string(i) + "]: expected a string, got " +
                               TypeName(f[i]));
      }
      o.response_fields.push_back(f[i].get<std::string>());
    }
  }
  LS_RETURN_IF_ERROR(RefuseUnlessDefault(body, "n_indent", 0, "indentation limits are not supported"));
  LS_RETURN_IF_ERROR(
      RefuseUnlessDefault(body, "n_cache_reuse", 0, "KV shifting for cache reuse is not supported"));
  LS_RETURN_IF_ERROR(RefuseUnlessDefault(body, "dynatemp_range", 0, "dynamic temperature is not supported"));
  LS_RETURN_IF_ERROR(RefuseUnlessDefault(body, "min_keep", 0, "min_keep is not supported"));
  LS_RETURN_IF_ERROR(RefuseUnlessDefault(
      body, "t_max_predict_ms", 0, "a time limit per request is not supported (see --request-timeout)"));
  if (Present(body, "dynatemp_exponent") && !body.at("dynatemp_exponent").is_number()) {
    return InvalidArgument("dynatemp_exponent: expected a number");
  }
  if (Present(body, "sse_ping_interval")) return InvalidArgument("sse_ping_interval: not supported");
  if (Present(body, "lora") && !(body.at("lora").is_array() && body.at("lora").empty())) {
    return InvalidArgument("lora: LoRA adapters are not supported");
  }
  for (const char* f : {"image_data", "multimodal_data"}) {
    if (Present(body, f)) return InvalidArgument(std::string(f) + ": this server reads text only");
  }
  return o;
}

nlohmann::ordered_json GenerationSettingsJson(const GenerationParams& params, const ModelContext& m) {
  nlohmann::ordered_json j = SamplingParamsJson(params.sampling);
  j["n_predict"] = params.n_predict;
  j["seed"] = params.sampling.seed;
  j["stop"] = params.stop;
  j["n_keep"] = params.n_keep;
  j["n_discard"] = params.n_discard;
  j["ignore_eos"] = params.ignore_eos;
  if (params.ignore_eos) {
    // As llama-server reports it: every end-of-generation token biased to -inf (null in JSON), which is what
    // ignore_eos does to the sampler.
    const Tokenizer& tok = m.engine->tokenizer();
    for (TokenId id = 0; id < tok.n_vocab(); ++id) {
      if (tok.IsEog(id)) j["logit_bias"].push_back({{"bias", nullptr}, {"token", id}});
    }
  }
  j["stream"] = params.stream;
  j["min_keep"] = 0;
  j["cache_prompt"] = params.cache_prompt;
  j["model"] = m.model_id;
  return j;
}

}  // namespace lazyslot::server
