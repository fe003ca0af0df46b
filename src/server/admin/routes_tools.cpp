// GET /tools (the enabled built-in tools' definitions, then the MCP servers' tools as "SERVER_TOOL") and
// POST /tools {"tool", "params", "stream"} (run one), as llama-server's --tools and
// --mcp-servers-config/-json; 403 while neither is on. The tools themselves, each built-in one confined to
// --tools-dir, are src/tools/'s (the MCP client: src/tools/mcp/). A streamed exec_shell_command answers
// Server-Sent Events {"chunk"} then {"done"}; an MCP tool is not streamed.
#include <algorithm>

#include "core/log.h"
#include "server/http/connection.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"
#include "server/server_state.h"
#include "tools/builtin_tools.h"
#include "tools/mcp/mcp_servers.h"

namespace lazyslot::server {
namespace {

tools::BuiltinToolsConfig ToolsConfig(const ServerState& st) {
  tools::BuiltinToolsConfig c;
  c.enabled = st.opts.tools;
  c.root = st.opts.tools_dir;
  return c;
}

bool Enabled(const ServerState& st, httplib::Response& res) {
  if (!st.opts.tools.empty() || st.mcp) return true;
  SetError(
      res, 403,
      "no tools are enabled (start the server with --tools NAME,... or --tools all, or with MCP servers: "
      "--mcp-servers-config FILE or --mcp-servers-json JSON)");
  return false;
}

// Stops an MCP call when the server stops or the client hangs up.
tools::mcp::StopFn StopWhenGone(ServerState& st, const httplib::Request& req) {
  const int fd = FindConnectionSocket(req);
  return [&st, fd] { return st.stopping.load() || PeerClosed(fd); };
}

void ListTools(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  if (!Enabled(st, res)) return;
  Json list = tools::BuiltinToolDefinitions(ToolsConfig(st));
  if (st.mcp) {
    for (Json& t : st.mcp->Definitions(st.opts.tools, StopWhenGone(st, req))) list.push_back(std::move(t));
  }
  res.set_content(Dump(list), "application/json; charset=utf-8");
}

bool IsBuiltinEnabled(const ServerState& st, const std::string& tool) {
  return std::find(st.opts.tools.begin(), st.opts.tools.end(), tool) != st.opts.tools.end();
}

void RunTool(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  if (!Enabled(st, res)) return;
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  for (const auto& [key, value] : body->items()) {
    if (key != "tool" && key != "params" && key != "stream") {
      return SetError(res, 400, "unknown field '" + key + "' (POST /tools takes tool, params and stream)",
                      key);
    }
  }
  if (!body->contains("tool") || !(*body)["tool"].is_string()) {
    return SetError(res, 400, "tool: required, a tool name (GET /tools lists them)", "tool");
  }
  const std::string tool = (*body)["tool"];
  const Json params = body->value("params", Json::object());
  if (!params.is_object()) return SetError(res, 400, "params: must be an object", "params");
  if (body->contains("stream") && !(*body)["stream"].is_boolean()) {
    return SetError(res, 400, "stream: must be a boolean", "stream");
  }
  const bool stream = body->value("stream", false);
  const tools::mcp::StopFn gone = st.mcp ? StopWhenGone(st, req) : tools::mcp::StopFn();
  if (st.mcp && !IsBuiltinEnabled(st, tool) && st.mcp->Owns(tool, gone)) {
    if (stream) {
      return SetError(res, 400, "stream: tool '" + tool + "' (an MCP tool) is not streamed", "stream");
    }
    Result<Json> result = st.mcp->Call(tool, params, gone);
    if (!result.ok()) return SetStatusError(res, result.status());
    return res.set_content(Dump(*result), "application/json; charset=utf-8");
  }
  const std::string cwd = req.get_header_value("x-tool-cwd");
  const tools::BuiltinToolsConfig config = ToolsConfig(st);
  LS_LOG_INFO("tool %s%s", tool.c_str(), stream ? " (streamed)" : "");
  if (!stream || tool != "exec_shell_command") {
    Result<Json> result = tools::RunBuiltinTool(config, tool, params, cwd);
    if (!result.ok()) return SetStatusError(res, result.status());
    return res.set_content(Dump(*result), "application/json; charset=utf-8");
  }
  if (std::find(config.enabled.begin(), config.enabled.end(), tool) == config.enabled.end()) {
    return SetError(res, 404, "tool '" + tool + "' is not enabled (--tools)", "tool");
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [config, params, cwd, &st](size_t, httplib::DataSink& sink) {
        auto event = [&sink](const Json& j) {
          const std::string s = "data: " + Dump(j) + "\n\n";
          return sink.write(s.data(), s.size());
        };
        const Json done = tools::RunShellStreaming(config, params, cwd, [&](const std::string& chunk) {
          return !st.stopping.load() && event(Json{{"chunk", chunk}});
        });
        event(done);
        sink.done();
        return true;
      });
}

}  // namespace

void RegisterToolRoutes(ServerState& st) {
  if (!st.opts.mcp_servers.empty() && !st.mcp) {
    st.mcp = std::make_unique<tools::mcp::McpServers>(st.opts.mcp_servers);
    st.mcp->StartWarmup();  // in the background: the listener does not wait for the servers
  }
  st.http.Get("/tools", GuardRoute(st, ListTools));
  st.http.Post("/tools", GuardRoute(st, RunTool));
}

}  // namespace lazyslot::server
