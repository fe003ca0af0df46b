// llama-server's own request fields for POST /completion (and /infill): prompts as strings, token lists,
// mixed lists and {"prompt_string"} objects; return_tokens, response_fields; and the fields this server knows
// but cannot honour, refused with a 400 unless they hold their default (n_indent, n_cache_reuse,
// dynatemp_range, min_keep, t_max_predict_ms, lora, ...). id_slot, timings_per_token and return_progress are
// read on every text route (GenerationParams).
#pragma once

#include <string>
#include <vector>

#include "server/generation/openai_params.h"
#include "server/server_state.h"

namespace lazyslot::server {

struct NativeOptions {
  std::vector<std::vector<TokenId>> prompts;
  bool return_tokens = false;
  std::vector<std::string> response_fields;
};

// Field names of the native routes beyond the generation fields (for CheckKnownFields).
const std::vector<std::string>& NativeFieldNames();

// `prompt` in every form llama-server accepts, tokenized (text parts with BOS as the model asks, at the
// start of a prompt only, and control-token text parsed), plus the options above.
// /infill reads its own prompt: with `read_prompt` false, `prompt` is left alone and prompts stays empty.
Result<NativeOptions> ParseNativeOptions(const Json& body, const Tokenizer& tok, bool read_prompt = true);

// One prompt in llama-server's forms: a string, token ids, a mixed list of both, or {"prompt_string": s};
// `field` names it in errors.
Result<std::vector<TokenId>> ParseNativePrompt(const Json& value, const std::string& field,
                                               const Tokenizer& tok, bool add_bos);

// llama-server's generation_settings object (also /props' default_generation_settings.params).
nlohmann::ordered_json GenerationSettingsJson(const GenerationParams& params, const ModelContext& m);

}  // namespace lazyslot::server
