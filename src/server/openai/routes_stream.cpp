// Resumable streams (llama-server's): GET /v1/stream?conv_id=ID&from=N replays a conversation's stream from
// byte N and follows it until it ends; DELETE /v1/stream?conv_id=ID stops its generation and forgets it;
// POST /v1/streams/lookup {"conversation_ids": [...]} says which of those ids have a stream. The streams are
// those of streamed completions sent with X-Conversation-Id (server/http/stream_sessions.h).
#include <chrono>

#include "server/generation/openai_params.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

// The conv_id query parameter, or a 400 (false).
bool ConvId(const httplib::Request& req, httplib::Response& res, std::string* id) {
  *id = req.get_param_value("conv_id");
  if (!id->empty()) return true;
  SetError(res, 400, "conv_id: is required (?conv_id=<the X-Conversation-Id the stream was sent with>)",
           "conv_id");
  return false;
}

void ReplayStream(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::string id;
  if (!ConvId(req, res, &id)) return;
  std::shared_ptr<StreamSession> s = st.stream_sessions.Get(id);
  if (!s) return SetError(res, 404, "no stream for conv_id '" + id + "': never started, stopped or expired");
  size_t from = 0;
  const std::string text = req.get_param_value("from");
  if (!text.empty()) {
    if (text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos) {
      return SetError(res, 400, "from: expected a byte offset (a non-negative integer), got '" + text + "'",
                      "from");
    }
    from = std::stoull(text);
  }
  if (from > s->total_bytes()) {
    return SetError(res, 400,
                    "from: " + text + " is past the stream's " + std::to_string(s->total_bytes()) + " bytes",
                    "from");
  }
  if (from < s->dropped_bytes()) {
    return SetError(res, 400,
                    "from: bytes before " + std::to_string(s->dropped_bytes()) +
                        " are no longer kept (a stream keeps its last 4 MiB); restart the request",
                    "from");
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto offset = std::make_shared<size_t>(from);
  res.set_chunked_content_provider("text/event-stream", [&st, s, offset](size_t, httplib::DataSink& sink) {
    for (;;) {
      bool written = true;
      const StreamSession::Read r = s->ReadFrom(
          offset.get(), [&](const char* d, size_t n) { written = sink.write(d, n); },
          std::chrono::milliseconds(200));
      if (!written || r == StreamSession::Read::kLost) return false;
      if (r == StreamSession::Read::kDone) {
        sink.done();
        return true;
      }
      if (st.stopping.load() || !sink.is_writable()) return false;
    }
  });
}

void StopStream(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::string id;
  if (!ConvId(req, res, &id)) return;
  st.stream_sessions.Stop(id);  // as llama-server: 204 whether or not it was there
  res.status = 204;
}

void LookupStreams(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  if (Status known = CheckFieldNames(*body, {"conversation_ids"}); !known.ok())
    return SetStatusError(res, known);
  const Json* ids = body->contains("conversation_ids") ? &body->at("conversation_ids") : nullptr;
  if (ids == nullptr || !ids->is_array()) {
    return SetError(res, 400, "conversation_ids: expected a list of conversation ids", "conversation_ids");
  }
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < ids->size(); ++i) {
    if (!(*ids)[i].is_string()) {
      return SetError(res, 400, "conversation_ids[" + std::to_string(i) + "]: expected a string",
                      "conversation_ids");
    }
    const std::string id = (*ids)[i].get<std::string>();
    if (id.empty()) continue;
    for (const std::shared_ptr<StreamSession>& s : st.stream_sessions.Find(id)) {
      out.push_back({{"conversation_id", s->id()},
                     {"is_done", s->done()},
                     {"total_bytes", s->total_bytes()},
                     {"started_at", s->started_at()},
                     {"completed_at", s->completed_at()}});
    }
  }
  res.set_content(Dump(out), "application/json; charset=utf-8");
}

}  // namespace

void RegisterStreamRoutes(ServerState& st) {
  auto guard = [&st](RouteHandler fn) { return GuardRoute(st, std::move(fn)); };
  st.http.Get("/v1/stream", guard(ReplayStream));
  st.http.Delete("/v1/stream", guard(StopStream));
  st.http.Post("/v1/streams/lookup", guard(LookupStreams));
}

}  // namespace lazyslot::server
