// Per-model server state (ModelContext: the chat template, tool-call format, reasoning syntax and BOS/EOS
// texts of one loaded model) and ResolveModel, which finds a request's model: the one engine, or the router's
// model named by the body's `model` / the query's `?model=` (loaded on demand, kept by a lease).
#include <chrono>

#include "core/log.h"
#include "server/generation/openai_params.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

Result<ChatTemplate> LoadTemplate(const Engine& engine, const std::string& id, const std::string& source,
                                  const std::string& label) {
  if (source.empty()) {
    Result<std::string> src = engine.model().ChatTemplate();
    std::string name;
    ChatTemplate t = ChatTemplate::ForModel(src.ok() ? *src : "", &name);
    if (!src.ok()) {
      LS_LOG_INFO("%s: chat template: the model has none; using the built-in '%s'", id.c_str(), name.c_str());
    } else if (name == "model") {
      LS_LOG_INFO("%s: chat template: the model's own (tokenizer.chat_template, %zu bytes)", id.c_str(),
                  src->size());
    } else {
      LS_LOG_WARN("%s: chat template: the model's template cannot be rendered here; using the built-in '%s'",
                  id.c_str(), name.c_str());
    }
    return t;
  }
  for (const std::string& b : ChatTemplate::BuiltinNames()) {
    if (b == source) {
      LS_LOG_INFO("%s: chat template: built-in '%s'", id.c_str(), b.c_str());
      return ChatTemplate::Builtin(b);
    }
  }
  Result<ChatTemplate> t = ChatTemplate::Parse(source, label);
  if (!t.ok()) return InvalidArgument("chat template '" + label + "': " + t.status().message());
  LS_LOG_INFO("%s: chat template: '%s' (%zu bytes)", id.c_str(), label.c_str(), source.size());
  return t;
}

}  // namespace

Result<std::shared_ptr<ModelContext>> MakeModelContext(Engine* engine, std::string model_id,
                                                       const std::string& chat_template,
                                                       const std::string& template_label) {
  auto m = std::make_shared<ModelContext>();
  m->engine = engine;
  m->model_id = std::move(model_id);
  const Tokenizer& tok = engine->tokenizer();
  m->bos_text = tok.bos() >= 0 ? tok.TokenText(tok.bos()) : "";
  m->eos_text = tok.eos() >= 0 ? tok.TokenText(tok.eos()) : "";
  LS_ASSIGN_OR_RETURN(m->chat_template, LoadTemplate(*engine, m->model_id, chat_template, template_label));
  m->tool_format = DetectToolCallFormat(m->chat_template.source());
  m->reasoning_syntax = DetectReasoningSyntax(m->chat_template.source());
  LS_LOG_INFO("%s: tool calls: format '%s'; reasoning: %s", m->model_id.c_str(),
              ToolCallFormatName(m->tool_format), ReasoningSyntaxName(m->reasoning_syntax));
  return m;
}

namespace {

// A router lease with the server context its load attached (RouterConfig::attach in http_server.cpp).
Result<ModelRef> WithContext(Result<ModelLease> lease, const std::string& name) {
  LS_RETURN_IF_ERROR(lease.status());
  ModelRef ref;
  ref.lease = std::move(*lease);
  ref.ctx = std::static_pointer_cast<ModelContext>(ref.lease.attachment());
  if (!ref.ctx) return Internal("model '" + name + "': loaded without its server context");
  return ref;
}

ModelRef TheOneModel(const ServerState& st) {
  ModelRef ref;
  ref.ctx = st.model;
  return ref;
}

}  // namespace

Result<ModelRef> ResolveModel(ServerState& st, const std::string& name, std::optional<bool> autoload) {
  if (!st.router) return TheOneModel(st);
  if (name.empty()) {
    return InvalidArgument("model: this server serves several models; name one of: " + st.router->KnownIds() +
                           " (GET /v1/models lists them with their status)");
  }
  return WithContext(st.router->Acquire(name, autoload), name);
}

Result<ModelRef> PeekModel(ServerState& st, const std::string& name) {
  if (!st.router) return TheOneModel(st);
  return WithContext(st.router->Peek(name), name);
}

Result<ModelRef> ResolveModel(ServerState& st, const httplib::Request& req, const Json* body) {
  std::string name;
  if (body != nullptr) {
    LS_ASSIGN_OR_RETURN(name, GetString(*body, "model", ""));
  } else {
    name = req.get_param_value("model");
  }
  std::optional<bool> autoload;
  if (req.has_param("autoload")) {
    const std::string v = req.get_param_value("autoload");
    if (v != "true" && v != "1" && v != "false" && v != "0")
      return InvalidArgument("autoload: must be true or false, got '" + v + "'");
    autoload = v == "true" || v == "1";
  }
  return ResolveModel(st, name, autoload);
}

}  // namespace lazyslot::server
