// `lazyslot serve`: an OpenAI-compatible HTTP server (llama-server's routes and flags) over one Engine.
// The listener starts before the model loads, so /health answers 503 while loading and 200 once ready.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "engine/engine.h"

namespace lazyslot::server {

struct ServerOptions {
  EngineConfig engine;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;  // empty: no authentication
  // Chat template override: empty = the model's own `tokenizer.chat_template`; a built-in name (chatml,
  // llama2, llama3); or Jinja source, labelled `chat_template_label` in /props and the log.
  std::string chat_template;
  std::string chat_template_label = "custom";
  std::string model_alias;    // id in /v1/models and responses; empty = the model file's name
  bool pooling_none = false;  // --pooling none: per-token vectors, which /v1/embeddings refuses
  // Largest request body (--max-body-size); a bigger one is answered 413 without being read.
  uint64_t max_body_size = uint64_t{8} << 20;
  int http_threads = 0;       // 0: n_parallel + max_queue + 16 (every waiting request holds a thread)
  // Runs after the listener starts and before the engine loads (while /health says 503), e.g. to generate
  // the demo model. May set engine.model_path.
  std::function<Status(ServerOptions*)> before_load;
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port, starts answering (503 while loading), loads the engine and the chat template, then
  // serves until Stop(). Errors: the port cannot be bound, the model or the template fails to load.
  Status Run();
  // Thread-safe; makes Run() return after in-flight requests are cancelled.
  void Stop();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace lazyslot::server
