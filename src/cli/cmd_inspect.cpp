// `lazyslot inspect MODEL [--json]`: prints a GGUF's metadata (long arrays summarized), its tensors, totals
// by type, and the F16 KV-cache bytes one token costs.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "gguf/gguf.h"
#include "gguf/keys.h"

namespace lazyslot::cli {

namespace keys = gguf::keys;

namespace {

constexpr size_t kArrayHead = 5;        // elements shown of a long array
constexpr size_t kShortArray = 8;       // arrays up to this length are shown whole
constexpr size_t kMaxStringShown = 96;  // longer strings (chat templates) are cut in the text output

struct TypeTotal {
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t params = 0;
};

std::string TypeLabel(const gguf::Value& v) {
  if (v.type == gguf::ValueType::kArray)
    return std::string("array[") + gguf::ValueTypeName(v.elem_type) + "]";
  return gguf::ValueTypeName(v.type);
}

// Element k of an array (or the scalar itself) as JSON.
nlohmann::json ElementJson(const gguf::Value& v, size_t k) {
  const gguf::ValueType t = v.type == gguf::ValueType::kArray ? v.elem_type : v.type;
  const bool array = v.type == gguf::ValueType::kArray;
  switch (t) {
    case gguf::ValueType::kString:
      return array ? v.strings[k] : v.str;
    case gguf::ValueType::kBool:
      return (array ? v.uints[k] : v.u) != 0;
    case gguf::ValueType::kF32:
    case gguf::ValueType::kF64:
      return array ? v.floats[k] : v.f;
    case gguf::ValueType::kI8:
    case gguf::ValueType::kI16:
    case gguf::ValueType::kI32:
    case gguf::ValueType::kI64:
      return array ? v.ints[k] : v.i;
    default:
      return array ? v.uints[k] : v.u;
  }
}

nlohmann::json ValueJson(const gguf::Value& v, bool summarize) {
  if (v.type != gguf::ValueType::kArray) return ElementJson(v, 0);
  const size_t n = v.array_size();
  const size_t shown = summarize && n > kShortArray ? kArrayHead : n;
  nlohmann::json elems = nlohmann::json::array();
  for (size_t k = 0; k < shown; ++k) elems.push_back(ElementJson(v, k));
  if (shown == n) return elems;
  return {{"type", TypeLabel(v)}, {"count", n}, {"head", elems}};
}

std::string Escape(const std::string& s, size_t limit) {
  std::string out;
  for (size_t k = 0; k < s.size() && k < limit; ++k) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '"')
      out += "\\\"";
    else if (c < 0x20)
      out += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
    else
      out += static_cast<char>(c);
  }
  if (s.size() > limit) out += "...\" (" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string ElementText(const gguf::Value& v, size_t k) {
  const gguf::ValueType t = v.type == gguf::ValueType::kArray ? v.elem_type : v.type;
  if (t == gguf::ValueType::kF32) {  // shortest form that round-trips a float, not the widened double
    const float x = static_cast<float>(v.type == gguf::ValueType::kArray ? v.floats[k] : v.f);
    char buf[32];
    for (int precision = 6; precision <= 9; ++precision) {
      std::snprintf(buf, sizeof(buf), "%.*g", precision, x);
      if (std::strtof(buf, nullptr) == x) break;
    }
    return buf;
  }
  const nlohmann::json j = ElementJson(v, k);
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    const std::string e = Escape(s, kMaxStringShown);
    return "\"" + e + (s.size() > kMaxStringShown ? "" : "\"");
  }
  return j.dump();
}

std::string ValueText(const gguf::Value& v) {
  if (v.type != gguf::ValueType::kArray) return ElementText(v, 0);
  const size_t n = v.array_size();
  const size_t shown = n > kShortArray ? kArrayHead : n;
  std::string out = "[";
  for (size_t k = 0; k < shown; ++k) out += (k ? ", " : "") + ElementText(v, k);
  if (shown < n) out += ", ... (" + std::to_string(n) + " elements)";
  return out + "]";
}

std::string ShapeText(const gguf::TensorInfo& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
  return s + "]";
}

// Bytes of K and V for one token in an F16 cache, summed over layers; 0 if the metadata lacks the sizes.
Result<uint64_t> KvBytesPerToken(const gguf::File& f) {
  const gguf::Value* arch = f.Find(keys::kGeneralArchitecture);
  if (arch == nullptr || arch->type != gguf::ValueType::kString) return uint64_t{0};
  const std::string a = arch->str;
  if (f.Find(keys::ArchKey(a, keys::kBlockCount)) == nullptr) return uint64_t{0};
  LS_ASSIGN_OR_RETURN(uint32_t n_layer, f.GetU32(keys::ArchKey(a, keys::kBlockCount)));
  LS_ASSIGN_OR_RETURN(uint32_t n_embd, f.GetU32(keys::ArchKey(a, keys::kEmbeddingLength)));
  LS_ASSIGN_OR_RETURN(std::vector<uint32_t> n_head,
                      f.GetU32PerLayer(keys::ArchKey(a, keys::kAttentionHeadCount), n_layer));
  LS_ASSIGN_OR_RETURN(std::vector<uint32_t> n_head_kv,
                      f.GetU32PerLayerOr(keys::ArchKey(a, keys::kAttentionHeadCountKv), n_layer,
                                         n_head.empty() ? 0 : n_head[0]));
  const uint32_t default_hd = !n_head.empty() && n_head[0] > 0 ? n_embd / n_head[0] : 0;
  LS_ASSIGN_OR_RETURN(uint32_t k_len, f.GetU32Or(keys::ArchKey(a, keys::kAttentionKeyLength), default_hd));
  LS_ASSIGN_OR_RETURN(uint32_t v_len, f.GetU32Or(keys::ArchKey(a, keys::kAttentionValueLength), k_len));
  uint64_t bytes = 0;
  for (uint32_t il = 0; il < n_layer; ++il) bytes += uint64_t{n_head_kv[il]} * (k_len + v_len) * 2;
  return bytes;
}

Status Inspect(const std::string& path, bool json) {
  LS_ASSIGN_OR_RETURN(std::unique_ptr<gguf::File> file, gguf::File::Open(path));
  const gguf::File& f = *file;
  std::map<std::string, TypeTotal> totals;
  uint64_t n_params = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    TypeTotal& tt = totals[TypeName(t.type)];
    ++tt.count;
    tt.bytes += t.nbytes;
    tt.params += static_cast<uint64_t>(t.n_elements());
    n_params += static_cast<uint64_t>(t.n_elements());
  }
  LS_ASSIGN_OR_RETURN(uint64_t kv_per_token, KvBytesPerToken(f));

  if (json) {
    nlohmann::json j;
    j["path"] = f.path();
    j["version"] = f.version();
    j["alignment"] = f.alignment();
    j["file_size"] = f.file_size();
    j["metadata"] = nlohmann::json::object();
    for (const gguf::KeyValue& kv : f.metadata()) {
      j["metadata"][kv.key] = {{"type", TypeLabel(kv.value)}, {"value", ValueJson(kv.value, true)}};
    }
    j["tensors"] = nlohmann::json::array();
    for (const gguf::TensorInfo& t : f.tensors()) {
      nlohmann::json shape = nlohmann::json::array();
      for (uint32_t d = 0; d < t.n_dims; ++d) shape.push_back(t.ne[d]);
      j["tensors"].push_back({{"name", t.name},
                              {"type", TypeName(t.type)},
                              {"shape", shape},
                              {"offset", t.offset},
                              {"bytes", t.nbytes}});
    }
    j["totals_by_type"] = nlohmann::json::object();
    for (const auto& [name, tt] : totals) {
      j["totals_by_type"][name] = {{"tensors", tt.count}, {"bytes", tt.bytes}, {"params", tt.params}};
    }
    j["n_params"] = n_params;
    j["kv_bytes_per_token_f16"] = kv_per_token;
    // Metadata strings may hold invalid UTF-8; replace rather than throw.
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return Status::Ok();
  }

  std::printf(
      "file: %s\nGGUF version %u, alignment %u, %" PRIu64 " bytes, %zu metadata keys, %zu tensors\n\n",
      f.path().c_str(), f.version(), f.alignment(), f.file_size(), f.metadata().size(), f.tensors().size());
  std::printf("metadata:\n");
  for (const gguf::KeyValue& kv : f.metadata()) {
    std::printf("  %-44s %-14s %s\n", kv.key.c_str(), TypeLabel(kv.value).c_str(),
                ValueText(kv.value).c_str());
  }
  std::printf("\ntensors:\n  %-36s %-6s %-22s %14s\n", "name", "type", "shape", "bytes");
  for (const gguf::TensorInfo& t : f.tensors()) {
    std::printf("  %-36s %-6s %-22s %14" PRIu64 "\n", t.name.c_str(), TypeName(t.type), ShapeText(t).c_str(),
                t.nbytes);
  }
  std::printf("\ntotals by type:\n");
  uint64_t total_bytes = 0;
  for (const auto& [name, tt] : totals) {
    std::printf("  %-6s %5" PRIu64 " tensors %14" PRIu64 " params %14" PRIu64 " bytes (%.2f MiB)\n",
                name.c_str(), tt.count, tt.params, tt.bytes, tt.bytes / 1048576.0);
    total_bytes += tt.bytes;
  }
  std::printf("  total  %5zu tensors %14" PRIu64 " params %14" PRIu64 " bytes (%.2f MiB)\n",
              f.tensors().size(), n_params, total_bytes, total_bytes / 1048576.0);
  if (kv_per_token > 0) {
    std::printf("\nKV cache (f16): %" PRIu64 " bytes per token (%.1f KiB)\n", kv_per_token,
                kv_per_token / 1024.0);
  }
  return Status::Ok();
}

}  // namespace

void AddInspectCommand(CLI::App& root, int* exit_code) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* sub =
      root.add_subcommand("inspect", "Print a GGUF file's metadata, tensors and KV cost per token");
  sub->add_option("model", *path, "GGUF file")->required();
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->callback([path, json, exit_code] {
    Status s = Inspect(*path, *json);
    if (!s.ok()) {
      std::fprintf(stderr, "lazyslot inspect: error: %s\n", s.message().c_str());
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace lazyslot::cli
