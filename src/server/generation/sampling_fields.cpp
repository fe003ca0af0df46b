// Validation of llama-server's extra sampling fields (see sampling_fields.h). Ranges: llama-server's where
// it checks them (mirostat 0..2, xtc_* in [0, 1], dry_allowed_length >= 0, a non-empty breaker list), else
// what the definition needs (probability masses and rates >= 0, finite numbers); dry_penalty_last_n also
// takes -1, the whole context. Never throws: every nlohmann access follows a type check.
#include "server/generation/sampling_fields.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace lazyslot::server {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Status FieldError(const std::string& field, const std::string& why) {
  return InvalidArgument(field + ": " + why);
}

std::string Bound(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string RangeText(double lo, double hi) {
  if (lo == -kInf && hi == kInf) return "must be a finite number";
  if (hi == kInf) return "must be at least " + Bound(lo);
  return "must be between " + Bound(lo) + " and " + Bound(hi);
}

// A finite number within [lo, hi]; absent or null leaves *out unchanged.
Status ReadFloat(const Json& body, const char* field, double lo, double hi, float* out) {
  if (!Present(body, field)) return Status::Ok();
  const Json& v = body.at(field);
  if (!v.is_number()) return FieldError(field, "expected a number, got " + TypeName(v));
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi || !std::isfinite(static_cast<float>(d))) {
    return FieldError(field, RangeText(lo, hi) + ", got " + v.dump());
  }
  *out = static_cast<float>(d);
  return Status::Ok();
}

// An integer (1 and 1.0 both qualify) within [lo, hi]; absent or null leaves *out unchanged.
Status ReadInt(const Json& body, const char* field, int64_t lo, int64_t hi, int32_t* out) {
  if (!Present(body, field)) return Status::Ok();
  const Json& v = body.at(field);
  const std::string range = "must be between " + std::to_string(lo) + " and " + std::to_string(hi);
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return FieldError(field, range + ", got " + v.dump());
    x = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d))
      return FieldError(field, "expected an integer, got " + v.dump());
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
      return FieldError(field, range + ", got " + v.dump());
    }
    x = static_cast<int64_t>(d);
  } else {
    return FieldError(field, "expected an integer, got " + TypeName(v));
  }
  if (x < lo || x > hi) return FieldError(field, range + ", got " + std::to_string(x));
  *out = static_cast<int32_t>(x);
  return Status::Ok();
}

std::string KnownStages() {
  std::string s;
  for (SamplerStage st : SamplingParams().samplers) {
    if (!s.empty()) s += ", ";
    s += SamplerStageName(st);
  }
  return s;
}

Status ReadSamplers(const Json& body, std::vector<SamplerStage>* out) {
  if (!Present(body, "samplers")) return Status::Ok();
  const Json& v = body.at("samplers");
  std::vector<SamplerStage> stages;
  if (v.is_string()) {
    const std::string& codes = v.get_ref<const std::string&>();
    if (codes.size() > kMaxSamplerStages) {
      return FieldError("samplers", "at most " + std::to_string(kMaxSamplerStages) + " stages, got " +
                                        std::to_string(codes.size()));
    }
    for (size_t i = 0; i < codes.size(); ++i) {
      const std::optional<SamplerStage> st = SamplerStageFromChar(codes[i]);
      if (!st) {
        return FieldError("samplers", "unknown sampler code '" + std::string(1, codes[i]) + "' at " +
                                          std::to_string(i) + " (codes: edskypmxt)");
      }
      stages.push_back(*st);
    }
  } else if (v.is_array()) {
    if (v.size() > kMaxSamplerStages) {
      return FieldError("samplers", "at most " + std::to_string(kMaxSamplerStages) + " stages, got " +
                                        std::to_string(v.size()));
    }
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string at = "samplers[" + std::to_string(i) + "]";
      if (!v[i].is_string()) return FieldError(at, "expected a string, got " + TypeName(v[i]));
      const std::string& name = v[i].get_ref<const std::string&>();
      const std::optional<SamplerStage> st = SamplerStageFromName(name);
      if (!st) {
        return FieldError(at, "unknown sampler " + Json(name).dump() + " (known: " + KnownStages() + ")");
      }
      stages.push_back(*st);
    }
  } else {
    return FieldError("samplers",
                      "expected a list of sampler names or a string of codes, got " + TypeName(v));
  }
  *out = std::move(stages);
  return Status::Ok();
}

Status ReadBreakers(const Json& body, std::vector<std::string>* out) {
  if (!Present(body, "dry_sequence_breakers")) return Status::Ok();
  const Json& v = body.at("dry_sequence_breakers");
  if (!v.is_array()) {
    return FieldError("dry_sequence_breakers", "expected a non-empty list of strings, got " + TypeName(v));
  }
  if (v.empty()) return FieldError("dry_sequence_breakers", "must be a non-empty list of strings");
  if (v.size() > kMaxDryBreakers) {
    return FieldError("dry_sequence_breakers", "at most " + std::to_string(kMaxDryBreakers) +
                                                   " breakers, got " + std::to_string(v.size()));
  }
  std::vector<std::string> breakers;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      return FieldError("dry_sequence_breakers[" + std::to_string(i) + "]",
                        "expected a string, got " + TypeName(v[i]));
    }
    breakers.push_back(v[i].get<std::string>());
  }
  *out = std::move(breakers);
  return Status::Ok();
}

}  // namespace

Status ParseSamplingFields(const Json& body, SamplingParams* s) {
  LS_RETURN_IF_ERROR(ReadFloat(body, "typical_p", 0.0, kInf, &s->typical_p));
  LS_RETURN_IF_ERROR(ReadFloat(body, "top_n_sigma", -kInf, kInf, &s->top_n_sigma));
  LS_RETURN_IF_ERROR(ReadFloat(body, "xtc_probability", 0.0, 1.0, &s->xtc_probability));
  LS_RETURN_IF_ERROR(ReadFloat(body, "xtc_threshold", 0.0, 1.0, &s->xtc_threshold));
  LS_RETURN_IF_ERROR(ReadFloat(body, "dry_multiplier", 0.0, kInf, &s->dry_multiplier));
  float base = s->dry_base;
  LS_RETURN_IF_ERROR(ReadFloat(body, "dry_base", -kInf, kInf, &base));
  if (base >= 1.0f) s->dry_base = base;  // llama-server: a base below 1 keeps the default
  LS_RETURN_IF_ERROR(
      ReadInt(body, "dry_allowed_length", 0, std::numeric_limits<int32_t>::max(), &s->dry_allowed_length));
  LS_RETURN_IF_ERROR(
      ReadInt(body, "dry_penalty_last_n", -1, std::numeric_limits<int32_t>::max(), &s->dry_penalty_last_n));
  LS_RETURN_IF_ERROR(ReadBreakers(body, &s->dry_sequence_breakers));
  if (Present(body, "mirostat")) {
    const Json& v = body.at("mirostat");
    int32_t m = 0;
    if (!ReadInt(body, "mirostat", 0, 2, &m).ok()) {
      if (!v.is_number()) return FieldError("mirostat", "expected an integer, got " + TypeName(v));
      return FieldError("mirostat", "must be 0, 1 or 2, got " + v.dump());
    }
    s->mirostat = m;
  }
  LS_RETURN_IF_ERROR(ReadFloat(body, "mirostat_tau", 0.0, kInf, &s->mirostat_tau));
  LS_RETURN_IF_ERROR(ReadFloat(body, "mirostat_eta", 0.0, kInf, &s->mirostat_eta));
  LS_RETURN_IF_ERROR(ReadSamplers(body, &s->samplers));
  // llama-server's adaptive-p sampler is not implemented: adaptive_target is accepted while it leaves the
  // sampler off (negative, its default), and adaptive_decay (which only tunes it) within its range.
  float target = -1.0f, decay = 0.9f;
  LS_RETURN_IF_ERROR(ReadFloat(body, "adaptive_target", -kInf, 1.0, &target));
  if (target >= 0.0f) {
    return FieldError("adaptive_target",
                      "the adaptive-p sampler is not supported (a negative value, the default, leaves it "
                      "off)");
  }
  LS_RETURN_IF_ERROR(ReadFloat(body, "adaptive_decay", 0.0, 0.99, &decay));
  return Status::Ok();
}

const std::vector<std::string>& SamplingFieldNames() {
  static const std::vector<std::string> kNames = {"typical_p",
                                                  "top_n_sigma",
                                                  "xtc_probability",
                                                  "xtc_threshold",
                                                  "dry_multiplier",
                                                  "dry_base",
                                                  "dry_allowed_length",
                                                  "dry_penalty_last_n",
                                                  "dry_sequence_breakers",
                                                  "mirostat",
                                                  "mirostat_tau",
                                                  "mirostat_eta",
                                                  "adaptive_target",
                                                  "adaptive_decay",
                                                  "samplers"};
  return kNames;
}

nlohmann::ordered_json SamplingParamsJson(const SamplingParams& s) {
  nlohmann::ordered_json bias = nlohmann::ordered_json::array();
  for (const auto& [token, b] : s.logit_bias) bias.push_back({{"bias", b}, {"token", token}});
  nlohmann::ordered_json samplers = nlohmann::ordered_json::array();
  for (SamplerStage st : s.samplers) samplers.push_back(std::string(SamplerStageName(st)));
  return {{"seed", s.seed},
          {"temperature", s.temperature},
          {"dynatemp_range", 0.0f},
          {"dynatemp_exponent", 1.0f},
          {"top_k", s.top_k},
          {"top_p", s.top_p},
          {"min_p", s.min_p},
          {"top_n_sigma", s.top_n_sigma},
          {"xtc_probability", s.xtc_probability},
          {"xtc_threshold", s.xtc_threshold},
          {"typical_p", s.typical_p},
          {"repeat_last_n", s.repeat_last_n},
          {"repeat_penalty", s.repeat_penalty},
          {"presence_penalty", s.presence_penalty},
          {"frequency_penalty", s.frequency_penalty},
          {"dry_multiplier", s.dry_multiplier},
          {"dry_base", s.dry_base},
          {"dry_allowed_length", s.dry_allowed_length},
          {"dry_penalty_last_n", s.dry_penalty_last_n},
          {"dry_sequence_breakers", s.dry_sequence_breakers},
          {"mirostat", s.mirostat},
          {"mirostat_tau", s.mirostat_tau},
          {"mirostat_eta", s.mirostat_eta},
          {"adaptive_target", -1.0f},  // llama-server's adaptive-p sampler: off (not implemented here)
          {"adaptive_decay", 0.9f},
          {"logit_bias", std::move(bias)},
          {"samplers", std::move(samplers)}};
}

}  // namespace lazyslot::server
