// Parsing the mcpServers document (see mcp_config.h): strict about the fields it uses, silent about others.
#include "tools/mcp/mcp_config.h"

#include <nlohmann/json.hpp>

namespace lazyslot::tools::mcp {
namespace {

using Json = nlohmann::ordered_json;

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

Status ParseOne(const std::string& name, const Json& j, ServerConfig* out) {
  const std::string at = "mcpServers." + name;
  if (!ValidName(name)) {
    return InvalidArgument("mcpServers: server name '" + name +
                           "' must be 1 to 64 letters, digits, '-' or '_' (tools are listed as NAME_TOOL)");
  }
  if (!j.is_object()) return InvalidArgument(at + ": expected an object, got " + j.type_name());
  out->name = name;
  if (j.contains("url")) {
    return InvalidArgument(
        at + ": remote MCP servers (\"url\") are not supported, only local commands over stdio");
  }
  if (auto t = j.find("type"); t != j.end() && !(t->is_string() && t->get<std::string>() == "stdio")) {
    return InvalidArgument(at + ".type: only \"stdio\" is supported");
  }
  auto cmd = j.find("command");
  if (cmd == j.end() || !cmd->is_string() || cmd->get<std::string>().empty()) {
    return InvalidArgument(at + ".command: required, the program to run (a string)");
  }
  out->command = cmd->get<std::string>();
  if (auto a = j.find("args"); a != j.end() && !a->is_null()) {
    if (!a->is_array()) return InvalidArgument(at + ".args: expected an array of strings");
    for (const Json& s : *a) {
      if (!s.is_string()) return InvalidArgument(at + ".args: expected an array of strings");
      out->args.push_back(s.get<std::string>());
    }
  }
  if (auto e = j.find("env"); e != j.end() && !e->is_null()) {
    if (!e->is_object()) return InvalidArgument(at + ".env: expected an object of strings");
    for (const auto& [k, v] : e->items()) {
      if (k.empty() || k.find('=') != std::string::npos) {
        return InvalidArgument(at + ".env: '" + k + "' is not a variable name");
      }
      if (!v.is_string()) return InvalidArgument(at + ".env." + k + ": expected a string");
      out->env[k] = v.get<std::string>();
    }
  }
  if (auto c = j.find("cwd"); c != j.end() && !c->is_null()) {
    if (!c->is_string()) return InvalidArgument(at + ".cwd: expected a string");
    out->cwd = c->get<std::string>();
  }
  if (auto t = j.find("timeout_ms"); t != j.end() && !t->is_null()) {
    if (!t->is_number_integer() || t->get<long long>() <= 0 || t->get<long long>() > 86400000) {
      return InvalidArgument(at + ".timeout_ms: expected a whole number of milliseconds, 1 to 86400000");
    }
    out->timeout_ms = static_cast<int>(t->get<long long>());
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<ServerConfig>> ParseMcpServers(const std::string& json_text) {
  Json doc;
  try {
    doc = Json::parse(json_text);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("mcpServers") || !doc["mcpServers"].is_object()) {
    return InvalidArgument("expected {\"mcpServers\": {\"NAME\": {\"command\": ..., \"args\": [...]}}}");
  }
  std::vector<ServerConfig> out;
  for (const auto& [name, entry] : doc["mcpServers"].items()) {
    ServerConfig c;
    LS_RETURN_IF_ERROR(ParseOne(name, entry, &c));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace lazyslot::tools::mcp
