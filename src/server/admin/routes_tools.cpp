// GET /tools (the enabled built-in tools' definitions) and POST /tools {"tool", "params", "stream"} (run
// one), as llama-server's --tools; 403 while no tool is enabled. The tools themselves, each confined to
// --tools-dir, are src/tools/'s. A streamed exec_shell_command answers Server-Sent Events {"chunk"} then
// {"done"}.
#include "core/log.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"
#include "server/server_state.h"
#include "tools/builtin_tools.h"

namespace lazyslot::server {
namespace {

tools::BuiltinToolsConfig ToolsConfig(const ServerState& st) {
  tools::BuiltinToolsConfig c;
  c.enabled = st.opts.tools;
  c.root = st.opts.tools_dir;
  return c;
}

bool Enabled(const ServerState& st, httplib::Response& res) {
  if (!st.opts.tools.empty()) return true;
  SetError(res, 403, "no built-in tools are enabled (start the server with --tools NAME,... or --tools all)");
  return false;
}

void ListTools(ServerState& st, const httplib::Request&, httplib::Response& res) {
  if (!Enabled(st, res)) return;
  res.set_content(Dump(tools::BuiltinToolDefinitions(ToolsConfig(st))), "application/json; charset=utf-8");
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
  st.http.Get("/tools", GuardRoute(st, ListTools));
  st.http.Post("/tools", GuardRoute(st, RunTool));
}

}  // namespace lazyslot::server
