// Vertex AI's prediction protocol, as llama-server serves it when the container runs with AIP_MODE=PREDICTION:
// POST AIP_PREDICT_ROUTE (default /predict) with {"instances": [{"@requestFormat": "chatCompletions", ...}]}
// answers {"predictions": [...]}, each instance run by the route its @requestFormat names (the camelCase of a
// POST route, "chatCompletions" for /v1/chat/completions, or the path itself), never streamed; an instance
// that fails becomes {"error": {...}} in its place. AIP_HEALTH_ROUTE, when set, answers as /health
// (admin/routes_info.cpp asks VertexHealthRoute); AIP_HTTP_PORT replaces --port (http_server.cpp asks VertexPort).
//
// Each instance goes to this server's own route over loopback HTTP with the request's credentials, so it
// passes the same checks (API key, limits, the drain) and gets exactly the answer a client would.
#include <cctype>
#include <cstdlib>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "core/log.h"
#include "server/http/errors.h"
#include "server/http/json_body.h"
#include "server/server_state.h"
#include "server/vertex.h"

namespace lazyslot::server {
namespace {

constexpr size_t kMaxInstances = 128;  // llama-server's bound

// The POST routes an instance may name: the @requestFormat alias is the path without "/v1", camelCased at
// '/', '-' and '_' (llama-server's rule); where two paths give one alias, the first listed wins.
const std::vector<std::string>& PredictablePaths() {
  static const std::vector<std::string> kPaths = {
      "/v1/chat/completions", "/v1/completions",   "/completion",         "/v1/embeddings",
      "/embeddings",          "/embedding",        "/v1/rerank",          "/rerank",
      "/reranking",           "/infill",           "/tokenize",           "/detokenize",
      "/apply-template",      "/v1/messages",      "/v1/messages/count_tokens",
      "/v1/responses",        "/v1/responses/input_tokens", "/embed", "/embed_all"};
  return kPaths;
}

std::string AliasOf(const std::string& path) {
  std::string s = path.rfind("/v1/", 0) == 0 ? path.substr(3) : path;
  if (!s.empty() && s[0] == '/') s.erase(0, 1);
  std::string out;
  bool cap = false;
  for (unsigned char c : s) {
    if (c == '/' || c == '-' || c == '_') {
      cap = true;
      continue;
    }
    out += static_cast<char>(cap ? std::toupper(c) : c);
    cap = false;
  }
  return out;
}

// The route for a @requestFormat: an alias, or one of the paths as given; empty when none.
std::string RouteFor(const std::string& format) {
  for (const std::string& p : PredictablePaths()) {
    if (AliasOf(p) == format) return p;
  }
  for (const std::string& p : PredictablePaths()) {
    if (p == format) return p;
  }
  return "";
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

nlohmann::json InstanceError(int http_status, const std::string& message) {
  return ErrorBody(http_status, message);
}

// One instance through the server's own route; the answer's JSON (or its text), or an error object.
nlohmann::json RunInstance(const ServerState& st, const httplib::Request& req, const Json& instance) {
  if (!instance.is_object()) return InstanceError(400, "each instance must be a JSON object");
  auto fmt = instance.find("@requestFormat");
  if (fmt == instance.end() || !fmt->is_string()) {
    return InstanceError(400, "each instance must include a string @requestFormat");
  }
  const std::string path = RouteFor(fmt->get<std::string>());
  if (path.empty()) {
    return InstanceError(400, "no handler registered for @requestFormat: " + fmt->get<std::string>());
  }
  Json payload = instance;
  payload.erase("@requestFormat");
  if (payload.contains("stream")) payload["stream"] = false;  // the protocol has no streams

  const std::string host = st.opts.host == "0.0.0.0" || st.opts.host.empty() ? "127.0.0.1"
                           : st.opts.host == "::"                             ? "::1"
                                                                              : st.opts.host;
  httplib::Client client(host, st.opts.port);
  client.set_read_timeout(st.opts.request_timeout_s > 0 ? static_cast<time_t>(st.opts.request_timeout_s) + 5
                                                        : 24 * 3600);
  httplib::Headers headers;
  for (const char* name : {"Authorization", "X-Api-Key", "Anthropic-Version"}) {
    if (req.has_header(name)) headers.emplace(name, req.get_header_value(name));
  }
  auto res = client.Post(path, headers, Dump(payload), "application/json");
  if (!res) return InstanceError(500, "the instance could not reach " + path + " on this server");
  Result<Json> parsed = res->body.empty() ? Result<Json>(Json()) : ParseJsonObject(res->body);
  if (parsed.ok()) return *parsed;
  // An array (the native embedding shape) or text: returned as the route gave it.
  nlohmann::json any = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  return any.is_discarded() ? nlohmann::json(res->body) : any;
}

void HandlePredict(const ServerState& st, const httplib::Request& req, httplib::Response& res) {
  Result<Json> body = ParseJsonObject(req.body);
  if (!body.ok()) return SetStatusError(res, body.status());
  auto instances = body->find("instances");
  if (instances == body->end() || !instances->is_array()) {
    return SetError(res, 400, "request body must include an array field named instances", "instances");
  }
  if (instances->size() > kMaxInstances) {
    return SetError(res, 400,
                    "instances array exceeds maximum size of " + std::to_string(kMaxInstances), "instances");
  }
  std::vector<std::future<nlohmann::json>> futures;
  futures.reserve(instances->size());
  for (const Json& instance : *instances) {
    futures.push_back(
        std::async(std::launch::async, [&st, &req, &instance] { return RunInstance(st, req, instance); }));
  }
  nlohmann::json predictions = nlohmann::json::array();
  for (auto& f : futures) predictions.push_back(f.get());
  res.set_content(Dump(nlohmann::json{{"predictions", std::move(predictions)}}),
                  "application/json; charset=utf-8");
}

bool VertexEnabled() { return Env("AIP_MODE") == "PREDICTION"; }

}  // namespace

int VertexPort(int port) {
  if (!VertexEnabled()) return port;
  const std::string v = Env("AIP_HTTP_PORT");
  if (v.empty()) return port;
  char* end = nullptr;
  const long p = std::strtol(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || p < 1 || p > 65535) {
    LS_LOG_WARN("AIP_HTTP_PORT=%s is not a port; keeping --port %d", v.c_str(), port);
    return port;
  }
  if (p != port) LS_LOG_INFO("Vertex AI: AIP_HTTP_PORT %ld replaces --port %d", p, port);
  return static_cast<int>(p);
}

std::string VertexHealthRoute() {
  if (!VertexEnabled()) return "";
  const std::string route = Env("AIP_HEALTH_ROUTE");
  return !route.empty() && route[0] == '/' ? route : "";
}

Status RegisterVertexRoutes(ServerState& st) {
  if (!VertexEnabled()) return Status::Ok();
  std::string predict = Env("AIP_PREDICT_ROUTE");
  if (predict.empty()) predict = "/predict";
  if (predict[0] != '/' || !RouteFor(predict).empty()) {
    return InvalidArgument("AIP_PREDICT_ROUTE=" + predict +
                           (predict[0] != '/' ? " is not a path" : " is one of the server's own routes"));
  }
  st.http.Post(predict, [&st](const httplib::Request& req, httplib::Response& res) {
    try {
      HandlePredict(st, req, res);
    } catch (const std::exception& e) {
      SetError(res, 500, std::string("internal error: ") + e.what());
    }
  });
  const std::string health = VertexHealthRoute();
  LS_LOG_INFO("Vertex AI prediction (AIP_MODE=PREDICTION): POST %s; health at /health%s%s", predict.c_str(),
              health.empty() ? "" : " and ", health.c_str());
  return Status::Ok();
}

}  // namespace lazyslot::server
