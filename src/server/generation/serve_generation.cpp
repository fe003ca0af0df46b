// ServeGeneration: the one loop that turns a submitted Generation's engine events into an answer, whole or
// streamed, in any ResponseFormat. A client that goes away cancels its requests, so its slots free at once.
#include "core/log.h"
#include "server/generation/response_format.h"
#include "server/http/errors.h"

namespace lazyslot::server {
namespace {

constexpr char kShutdownMessage[] =
    "the server is shutting down: the request was cancelled at the end of its drain (--drain-timeout)";

// The deltas of one token's text: split by the chat parser, or the text as it is.
std::vector<ChatDelta> Deltas(Choice& c, const std::string& text) {
  if (c.chat) return c.chat->Feed(text);
  if (text.empty()) return {};
  ChatDelta d;
  d.text = text;
  return {d};
}

std::vector<ChatOutcome> Outcomes(const Generation& g) {
  std::vector<ChatOutcome> out;
  for (const Choice& c : g.choices) out.push_back(MakeOutcome(g, c));
  return out;
}

void StreamResponse(std::shared_ptr<Generation> g, std::shared_ptr<ResponseFormat> f,
                    httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  if (g->chat) {
    for (Choice& c : g->choices) c.chat = std::make_unique<ChatStream>(g->chat_options);
  }
  auto provider = [g, f](size_t /*offset*/, httplib::DataSink& sink) -> bool {
    // A resumable stream (X-Conversation-Id): every byte goes to its session too, which ends with this call.
    struct EndSession {
      StreamSession* s;
      ~EndSession() {
        if (s) s->Finish();
      }
    } end_session{g->session.get()};
    bool client_gone = false;
    try {
      auto write = [&](const std::string& s) {
        if (s.empty()) return true;
        if (g->session) g->session->Append(s.data(), s.size());
        if (!client_gone && sink.write(s.data(), s.size())) return true;
        if (!client_gone) g->st->streams_disconnected.fetch_add(1);
        client_gone = true;
        if (g->session && !g->session->cancelled()) return true;  // the session keeps the rest
        g->CancelAll();
        return false;
      };
      if (!write(f->StreamStart(*g))) return false;
      while (g->n_left() > 0) {
        size_t i = 0;
        Event ev;
        const Wait w = NextEvent(*g, &i, &ev);
        if (w == Wait::kGone) return false;
        if (w == Wait::kShutdown) {  // an error event, then a clean end of the stream
          write(Sse(ShutdownErrorBody(kShutdownMessage)));
          sink.done();
          return true;
        }
        if (w == Wait::kTimeout) {  // an error event, then a clean end of the stream
          write(f->StreamError(kRequestTimeoutStatus, g->deadline.Message()));
          sink.done();
          return true;
        }
        Choice& c = g->choices[i];
        if (ev.type == Event::kToken) {
          RecordToken(*g, c, ev);
          const TokenRecord* rec = g->logprobs.enabled && ev.token >= 0 ? &c.probs.back() : nullptr;
          if (!write(f->StreamToken(*g, i, Deltas(c, ev.text), rec))) return false;
        } else if (ev.type == Event::kProgress) {
          c.slot = ev.slot;
          c.n_prompt = ev.n_prompt;
          c.n_cached = ev.n_cached;
          if (!write(f->StreamProgress(*g, i, ev))) return false;
        } else if (ev.type == Event::kDone) {
          c.done = true;
          c.final = std::move(ev);
          if (c.chat && !write(f->StreamToken(*g, i, c.chat->Finish(), nullptr))) return false;
          if (!write(f->StreamChoiceEnd(*g, i, MakeOutcome(*g, c)))) return false;
        } else {
          c.done = true;
          g->CancelAll();
          write(f->StreamError(HttpStatusFor(ev.error.code()), ev.error.message()));
          sink.done();
          return true;
        }
      }
      if (!write(f->StreamClose(*g))) return false;
      sink.done();
      return true;
    } catch (const std::exception& e) {
      LS_LOG_ERROR("stream %s: %s", g->id.c_str(), e.what());
      g->CancelAll();
      return false;
    }
  };
  // The releaser runs when the response is destroyed; success=false (client gone, write error) cancels.
  res.set_chunked_content_provider("text/event-stream", provider, [g](bool success) {
    if (!success) g->CancelAll();
    if (g->session && g->session->total_bytes() == 0) {
      g->st->stream_sessions.Forget(g->session);  // never streamed (the client left before the headers)
      g->session->Finish();
    }
  });
}

}  // namespace

void ServeGeneration(std::shared_ptr<Generation> g, std::shared_ptr<ResponseFormat> format,
                     httplib::Response& res) {
  if (g->params.stream) return StreamResponse(std::move(g), std::move(format), res);
  while (g->n_left() > 0) {
    size_t i = 0;
    Event ev;
    const Wait w = NextEvent(*g, &i, &ev);
    if (w == Wait::kGone) {
      return format->SetError(
          res, Status(Code::kCancelled, "the client closed the connection; the request was cancelled"));
    }
    if (w == Wait::kShutdown) return SetShutdownError(res, kShutdownMessage);
    if (w == Wait::kTimeout) return format->SetHttpError(res, kRequestTimeoutStatus, g->deadline.Message());
    Choice& c = g->choices[i];
    if (ev.type == Event::kToken) {
      RecordToken(*g, c, ev);
    } else if (ev.type == Event::kDone) {
      c.done = true;
      c.final = std::move(ev);
    } else if (ev.type == Event::kError) {
      c.done = true;
      g->CancelAll();
      return format->SetError(res, ev.error);
    }
  }
  res.set_content(Dump(format->Final(*g, Outcomes(*g))), "application/json; charset=utf-8");
}

}  // namespace lazyslot::server
