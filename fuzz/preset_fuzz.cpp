// libFuzzer target: any bytes as a router preset file (--models-preset, llama-server's INI) through
// ParsePreset (router/model_catalog.h), as ModelCatalog::Build reads it. Any outcome is fine except a crash,
// an escaping exception, an error that is not InvalidArgument "<file>:<line>: ..." with a line inside the
// text, or an accepted preset that breaks the documented rules: [*] first and only then, valid unique ids,
// values in their ranges, rerank never beside another pooling, and the same sections again when the result
// is written back as INI and parsed a second time.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "fuzz_check.h"
#include "gguf/tensor_type.h"
#include "model/model.h"
#include "router/model_catalog.h"

namespace {

using lazyslot::PresetSection;

const std::string kFile = "presets/fuzz.ini";
const std::string kBase = "/srv/models";

size_t CountLines(std::string_view text) {
  size_t n = 1;
  for (char c : text) n += c == '\n';
  return n;
}

void CheckError(const lazyslot::Status& s, std::string_view text) {
  FUZZ_CHECK(s.code() == lazyslot::Code::kInvalidArgument, "code " + std::to_string(static_cast<int>(s.code())));
  const std::string& m = s.message();
  FUZZ_CHECK(m.rfind(kFile + ":", 0) == 0, "message does not start with the file: " + lazyslot::fuzz::Escape(m));
  size_t i = kFile.size() + 1, line = 0;
  while (i < m.size() && m[i] >= '0' && m[i] <= '9' && line < 100000000) line = line * 10 + (m[i++] - '0');
  FUZZ_CHECK(i < m.size() && m[i] == ':' && m.size() > i + 2, "no line number: " + lazyslot::fuzz::Escape(m));
  FUZZ_CHECK(line >= 1 && line <= CountLines(text), "line " + std::to_string(line));
}

// A value as the parser reads it back: quoted when it has no '"' (quotes keep everything), else bare when
// that is unambiguous; nullopt when the value cannot be written.
std::optional<std::string> Value(const std::string& v) {
  if (v.find('"') == std::string::npos) return "\"" + v + "\"";
  if (v.empty() || v[0] == '"' || v.front() == ' ' || v.front() == '\t' || v.front() == '\r' || v.back() == ' ' ||
      v.back() == '\t' || v.back() == '\r') {
    return std::nullopt;
  }
  for (size_t i = 1; i < v.size(); ++i) {
    if ((v[i] == '#' || v[i] == ';') && (v[i - 1] == ' ' || v[i - 1] == '\t')) return std::nullopt;
  }
  return v;
}

// The sections as INI (every field explicit); nullopt when a value cannot be written.
std::optional<std::string> Write(const std::vector<PresetSection>& sections) {
  std::string ini = "version = 1\n";
  auto put = [&](const char* key, const std::string& v) {
    auto w = Value(v);
    if (!w) return false;
    ini += std::string(key) + " = " + *w + "\n";
    return true;
  };
  for (const PresetSection& s : sections) {
    ini += "[" + s.name + "]\n";
    const lazyslot::ModelOverrides& o = s.overrides;
    if (s.model && !put("model", *s.model)) return std::nullopt;
    if (s.aliases) {
      std::string joined;
      for (const std::string& a : *s.aliases) joined += (joined.empty() ? "" : ",") + a;
      if (!put("alias", joined)) return std::nullopt;
    }
    if (o.n_ctx) put("ctx-size", std::to_string(*o.n_ctx));
    if (o.n_parallel) put("parallel", std::to_string(*o.n_parallel));
    if (o.embeddings) put("embeddings", *o.embeddings ? "true" : "false");
    if (o.pooling) put("pooling", lazyslot::PoolingName(*o.pooling));
    if (o.rerank) put("rerank", *o.rerank ? "on" : "off");
    if (o.cache_type_k) put("cache-type-k", lazyslot::TypeName(*o.cache_type_k));
    if (o.cache_type_v) put("cache-type-v", lazyslot::TypeName(*o.cache_type_v));
    if (s.chat_template && !put("chat-template", *s.chat_template)) return std::nullopt;
    if (s.load_on_startup) put("load-on-startup", *s.load_on_startup ? "1" : "0");
    if (s.stop_timeout_s) put("stop-timeout", std::to_string(static_cast<int64_t>(*s.stop_timeout_s)));
  }
  return ini;
}

bool SameSection(const PresetSection& a, const PresetSection& b) {
  return a.name == b.name && a.model == b.model && a.aliases == b.aliases && a.overrides == b.overrides &&
         a.chat_template == b.chat_template && a.load_on_startup == b.load_on_startup &&
         a.stop_timeout_s == b.stop_timeout_s;
}

void CheckSections(const std::vector<PresetSection>& sections) {
  std::set<std::string> names;
  for (size_t i = 0; i < sections.size(); ++i) {
    const PresetSection& s = sections[i];
    FUZZ_CHECK(names.insert(s.name).second, "section [" + s.name + "] twice");
    if (s.name == "*") {
      FUZZ_CHECK(i == 0, "[*] is not first");
      FUZZ_CHECK(!s.model && !s.aliases, "[*] with a model or aliases");
    } else {
      FUZZ_CHECK(lazyslot::IsValidModelId(s.name), "invalid id " + lazyslot::fuzz::Escape(s.name));
    }
    FUZZ_CHECK(s.origin.rfind(kFile + ":", 0) == 0, "origin " + s.origin);
    if (s.model) FUZZ_CHECK(!s.model->empty() && (*s.model)[0] == '/', "model path " + *s.model);
    if (s.aliases) {
      for (const std::string& a : *s.aliases) FUZZ_CHECK(lazyslot::IsValidModelId(a), "invalid alias " + a);
    }
    const lazyslot::ModelOverrides& o = s.overrides;
    FUZZ_CHECK(!o.n_ctx || (*o.n_ctx >= 1 && *o.n_ctx <= (1 << 30)), "ctx-size");
    FUZZ_CHECK(!o.n_parallel || (*o.n_parallel >= 1 && *o.n_parallel <= 4096), "parallel");
    FUZZ_CHECK(!s.stop_timeout_s || (*s.stop_timeout_s >= 0 && *s.stop_timeout_s <= 86400), "stop-timeout");
    FUZZ_CHECK(!(o.rerank.value_or(false) && o.pooling && *o.pooling != lazyslot::PoolingType::kRank),
               "rerank beside pooling " + std::string(lazyslot::PoolingName(*o.pooling)));
    lazyslot::EngineConfig config;
    o.ApplyTo(&config);
    if (o.n_ctx) FUZZ_CHECK(config.n_ctx == *o.n_ctx, "ApplyTo ctx-size");
    if (o.rerank.value_or(false)) FUZZ_CHECK(config.pooling == lazyslot::PoolingType::kRank, "ApplyTo rerank");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (lazyslot::SetLogLevel(lazyslot::LogLevel::kSilent), true);
  (void)quiet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = lazyslot::ParsePreset(text, kFile, kBase);
  if (!parsed.ok()) {
    CheckError(parsed.status(), text);
    return 0;
  }
  CheckSections(*parsed);
  const std::optional<std::string> ini = Write(*parsed);
  if (!ini) return 0;
  auto again = lazyslot::ParsePreset(*ini, kFile, kBase);
  FUZZ_CHECK(again.ok(), "written back, refused: " + again.status().message() + "\n" + lazyslot::fuzz::Escape(*ini, 2000));
  FUZZ_CHECK(again->size() == parsed->size(), "written back, " + std::to_string(again->size()) + " sections of " +
                                                  std::to_string(parsed->size()));
  for (size_t i = 0; i < parsed->size(); ++i) {
    FUZZ_CHECK(SameSection((*parsed)[i], (*again)[i]), "section [" + (*parsed)[i].name + "] changed when written back");
  }
  return 0;
}
