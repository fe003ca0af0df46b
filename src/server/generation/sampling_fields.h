// llama-server's extra sampling fields (typical_p, top_n_sigma, XTC, DRY, mirostat, samplers): request JSON
// -> SamplingParams, and SamplingParams -> the sampling part of llama-server's generation_settings object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/sampler.h"
#include "server/generation/openai_params.h"

namespace lazyslot::server {

// Most entries `samplers` and `dry_sequence_breakers` may have: each sampler stage runs per token, and each
// breaker costs a scan of the vocabulary when the request starts.
constexpr size_t kMaxSamplerStages = 64;
constexpr size_t kMaxDryBreakers = 64;

// Reads typical_p, top_n_sigma, xtc_probability, xtc_threshold, dry_multiplier, dry_base,
// dry_allowed_length, dry_penalty_last_n, dry_sequence_breakers, mirostat, mirostat_tau, mirostat_eta and
// samplers into *s; absent or null fields leave *s as it is. Errors are kInvalidArgument with a message that
// starts with the field ("mirostat: must be 0, 1 or 2, got 3"). As in llama-server, a dry_base below 1
// keeps the default, `samplers` is a list of names (aliases such as "top-k" or "nucleus" accepted, any
// case) or a string of one-letter codes ("edskypmxt"), and dry_sequence_breakers a non-empty list of strings.
Status ParseSamplingFields(const Json& body, SamplingParams* s);

// The fields ParseSamplingFields reads, for the unknown-field check.
const std::vector<std::string>& SamplingFieldNames();

// seed, temperature, dynatemp_range (0), dynatemp_exponent (1), top_k, top_p, min_p, top_n_sigma,
// xtc_probability, xtc_threshold, typical_p, repeat_last_n, repeat_penalty, presence_penalty,
// frequency_penalty, dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n, dry_sequence_breakers,
// mirostat, mirostat_tau, mirostat_eta, adaptive_target (-1) and adaptive_decay (0.9) (llama-server's
// adaptive-p sampler, off: not implemented), logit_bias ([{"bias", "token"}]) and samplers (names), in
// llama-server's key order; the caller adds n_predict, stop and the other non-sampling settings.
nlohmann::ordered_json SamplingParamsJson(const SamplingParams& s);

}  // namespace lazyslot::server
