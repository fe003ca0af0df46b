// The MCP servers behind /tools (see mcp_servers.h): warm-up, (re)starting a server's session, the tool
// list in the built-in tools' shape, and one call's answer in llama-server's shape.
#include "tools/mcp/mcp_servers.h"

#include <algorithm>

#include "core/log.h"

namespace lazyslot::tools::mcp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::seconds kRetryAfter(2);  // after a failed start
constexpr std::chrono::seconds kWarmWait(10);   // the most GET/POST /tools wait for the warm-up

// The tool's JSON Schema as an OpenAI function's "parameters": an object schema with "properties".
Json Parameters(const Json& schema) {
  Json p = schema.is_object() ? schema : Json::object();
  if (!p.contains("type")) p["type"] = "object";
  if (p["type"] == "object" && !p.contains("properties")) p["properties"] = Json::object();
  return p;
}

// tools/call's result -> {"plain_text_response"} or, when the tool says it failed, {"error"}.
Json Answer(const Json& result) {
  std::string text;
  if (result.is_object() && result.contains("content") && result["content"].is_array()) {
    for (const Json& part : result["content"]) {
      if (!part.is_object()) continue;
      const std::string type = part.value("type", "");
      std::string piece;
      if (type == "text" && part.contains("text") && part["text"].is_string()) {
        piece = part["text"].get<std::string>();
      } else if (type == "resource" && part.contains("resource") && part["resource"].is_object() &&
                 part["resource"].contains("text") && part["resource"]["text"].is_string()) {
        piece = part["resource"]["text"].get<std::string>();
      } else {
        piece = "[" + (type.empty() ? std::string("unknown") : type) + " content" +
                (part.contains("mimeType") && part["mimeType"].is_string()
                     ? " (" + part["mimeType"].get<std::string>() + ")"
                     : std::string()) +
                " not shown]";
      }
      text += (text.empty() ? "" : "\n") + piece;
    }
  }
  if (text.empty() && result.is_object() && result.contains("structuredContent")) {
    text = result["structuredContent"].dump();
  }
  if (result.is_object() && result.value("isError", false)) {
    return Json{{"error", text.empty() ? std::string("the MCP tool reported an error") : text}};
  }
  return Json{{"plain_text_response", text}};
}

}  // namespace

McpServers::McpServers(std::vector<ServerConfig> configs) {
  for (ServerConfig& c : configs) {
    auto e = std::make_unique<Entry>();
    e->cfg = std::move(c);
    entries_.push_back(std::move(e));
  }
}

McpServers::~McpServers() {
  Shutdown();
  for (std::thread& t : warmers_) {
    if (t.joinable()) t.join();
  }
  std::vector<std::shared_ptr<Session>> sessions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& e : entries_) {
      if (e->session) sessions.push_back(std::move(e->session));
    }
  }
  for (auto& s : sessions) s->Close();
}

void McpServers::Shutdown() {
  stopping_.store(true);
  warm_cv_.notify_all();
}

StopFn McpServers::With(const StopFn& stop) {
  return [this, stop] { return stopping_.load() || (stop && stop()); };
}

void McpServers::StartWarmup() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    warm_left_ = entries_.size();
  }
  for (auto& e : entries_) {
    Entry* entry = e.get();
    warmers_.emplace_back([this, entry] {
      Result<std::shared_ptr<Session>> s = SessionOf(*entry, nullptr);
      if (s.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        LS_LOG_INFO("MCP server '%s': %zu tool(s)", entry->cfg.name.c_str(), entry->tools.size());
      } else {
        LS_LOG_WARN("MCP server '%s' is not available (its tools are not listed): %s",
                    entry->cfg.name.c_str(), s.status().message().c_str());
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        --warm_left_;
      }
      warm_cv_.notify_all();
    });
  }
}

void McpServers::WaitWarm(const StopFn& stop) {
  const auto until = Clock::now() + kWarmWait;
  std::unique_lock<std::mutex> lock(mu_);
  while (warm_left_ > 0 && Clock::now() < until && !stopping_.load()) {
    lock.unlock();
    const bool stopped = stop && stop();
    lock.lock();
    if (stopped) return;
    warm_cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

Result<std::shared_ptr<Session>> McpServers::SessionOf(Entry& e, const StopFn& stop) {
  const StopFn stop_all = With(stop);
  std::lock_guard<std::mutex> starting(e.start_mu);
  std::shared_ptr<Session> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (e.session && e.session->Alive()) return e.session;
    if (stopping_.load()) return Cancelled("the server is stopping");
    old = std::move(e.session);
    if (!old && Clock::now() < e.retry_after) return Unavailable(e.error);
  }
  if (old) {
    LS_LOG_INFO("MCP server '%s' ended (%s); starting it again", e.cfg.name.c_str(),
                old->DeadReason().c_str());
    old->Close();
    old.reset();
  }
  auto fail = [&](const Status& s) -> Status {
    std::lock_guard<std::mutex> lock(mu_);
    e.error = s.message();
    e.retry_after = Clock::now() + kRetryAfter;
    return Unavailable(s.message());
  };
  // Starting may take longer than one call (an interpreter, a package download): at least 10 s.
  const int start_ms = std::max(e.cfg.timeout_ms, 10000);
  Result<std::unique_ptr<Session>> started = Session::Start(e.cfg);
  if (!started.ok()) return fail(started.status());
  std::shared_ptr<Session> s = std::move(*started);
  if (Status init = s->Initialize(start_ms, stop_all); !init.ok()) {
    std::string why = s->Alive() ? init.message() : s->DeadReason();
    s->Close();
    if (init.code() == Code::kCancelled) return init;
    return fail(Unavailable("MCP server '" + e.cfg.name + "': " + why));
  }
  Result<std::vector<ToolDef>> tools = s->ListTools(start_ms, stop_all);
  if (!tools.ok()) {
    std::string why = s->Alive() ? tools.status().message() : s->DeadReason();
    s->Close();
    if (tools.status().code() == Code::kCancelled) return tools.status();
    return fail(Unavailable("MCP server '" + e.cfg.name + "': " + why));
  }
  std::lock_guard<std::mutex> lock(mu_);
  e.tools = std::move(*tools);
  e.listed = true;
  e.error.clear();
  e.session = s;
  return s;
}

McpServers::Found McpServers::Find(const std::string& full_name) {
  for (auto& e : entries_) {
    if (!e->listed) continue;
    const std::string prefix = e->cfg.name + "_";
    if (full_name.rfind(prefix, 0) != 0) continue;
    for (const ToolDef& t : e->tools) {
      if (prefix + t.name == full_name) return Found{e.get(), t.name};
    }
  }
  return Found{};
}

Json McpServers::Definitions(const std::vector<std::string>& taken, const StopFn& stop) {
  WaitWarm(stop);
  Json out = Json::array();
  std::vector<std::string> seen = taken;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& e : entries_) {
    for (const ToolDef& t : e->tools) {
      const std::string full = e->cfg.name + "_" + t.name;
      if (std::find(seen.begin(), seen.end(), full) != seen.end()) {
        LS_LOG_DEBUG("MCP tool '%s' of server '%s' has the name of another tool: not listed", t.name.c_str(),
                     e->cfg.name.c_str());
        continue;
      }
      seen.push_back(full);
      out.push_back(Json{{"display_name", full},
                         {"tool", full},
                         {"type", "mcp"},
                         {"permissions", {{"write", false}}},
                         {"definition",
                          {{"type", "function"},
                           {"function",
                            {{"name", full},
                             {"description", t.description},
                             {"parameters", Parameters(t.input_schema)}}}}}});
    }
  }
  return out;
}

bool McpServers::Owns(const std::string& full_name, const StopFn& stop) {
  WaitWarm(stop);
  std::lock_guard<std::mutex> lock(mu_);
  if (Find(full_name).entry) return true;
  for (auto& e : entries_) {
    if (!e->listed && full_name.rfind(e->cfg.name + "_", 0) == 0) return true;
  }
  return false;
}

Result<Json> McpServers::Call(const std::string& full_name, const Json& arguments, const StopFn& stop) {
  WaitWarm(stop);
  Found f;
  std::vector<Entry*> unlisted;  // servers whose tools are unknown and whose prefix matches
  {
    std::lock_guard<std::mutex> lock(mu_);
    f = Find(full_name);
    if (!f.entry) {
      for (auto& e : entries_) {
        if (!e->listed && full_name.rfind(e->cfg.name + "_", 0) == 0) unlisted.push_back(e.get());
      }
    }
  }
  if (!f.entry) {
    // A server that could not start at the warm-up: try it now, then look again.
    std::string why;
    for (Entry* e : unlisted) {
      Result<std::shared_ptr<Session>> s = SessionOf(*e, stop);
      if (!s.ok()) why = s.status().message();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      f = Find(full_name);
    }
    if (!f.entry) {
      if (!why.empty()) return Json{{"error", "tool '" + full_name + "' is unavailable: " + why}};
      return NotFound("unknown tool '" + full_name + "' (GET /tools lists them)");
    }
  }
  Result<std::shared_ptr<Session>> session = SessionOf(*f.entry, stop);
  if (!session.ok()) return Json{{"error", session.status().message()}};
  LS_LOG_INFO("MCP tool %s", full_name.c_str());
  Result<Json> result = (*session)->CallTool(f.tool, arguments, f.entry->cfg.timeout_ms, With(stop));
  if (!result.ok()) return Json{{"error", result.status().message()}};
  return Answer(*result);
}

}  // namespace lazyslot::tools::mcp
