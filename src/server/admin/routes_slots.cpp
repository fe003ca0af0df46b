// GET /slots (per slot: state, tokens held, context size, KV bytes) and llama-server's slot actions:
// POST /slots/{id}?action=save|restore|erase with {"filename": ...} (files live in --slot-save-path).
#include "server/generation/openai_params.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

void SendJson(httplib::Response& res, const nlohmann::json& j) {
  res.set_content(Dump(j), "application/json; charset=utf-8");
}

// The array llama-server returns, plus a `memory` object per slot: the slot's own KV figures (reserved
// address space, committed bytes from the cache's tracking, cells in use) and process-wide ones (the same in
// every entry, so that the reply stays an array as llama-server clients expect).
void ListSlots(const Engine& engine, httplib::Response& res) {
  const EngineStats stats = engine.Stats();
  const MemoryReport mem = engine.Memory();
  const uint64_t slot_reserved = stats.slots.empty() ? 0 : stats.kv_reserved_bytes / stats.slots.size();
  nlohmann::json slots = nlohmann::json::array();
  for (const SlotInfo& s : stats.slots) {
    const nlohmann::json memory = {{"kv_reserved_bytes", slot_reserved},
                                   {"kv_committed_bytes", s.committed_bytes},
                                   {"kv_shared_bytes", s.shared_bytes},
                                   {"n_cells", s.n_tokens},
                                   {"kv_committed_total_bytes", mem.kv_committed},
                                   {"kv_resident_total_bytes", mem.kv_resident},
                                   {"process_rss_bytes", mem.rss},
                                   {"weights_resident_bytes", mem.weights_resident}};
    slots.push_back({{"id", s.id},
                     {"id_task", s.request_id},
                     {"state", s.busy ? "processing" : "idle"},
                     {"is_processing", s.busy},
                     {"n_tokens", s.n_tokens},
                     {"n_ctx", s.n_ctx},
                     {"n_cached", s.n_cached},
                     {"committed_bytes", s.committed_bytes},
                     {"budget_bytes", s.budget_bytes},
                     {"memory", memory}});
  }
  SendJson(res, slots);
}

// Router mode: the model is the body's `model` (llama-server's router reads POST bodies) or `?model=`.
void SlotAction(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  int id = -1;
  try {
    id = std::stoi(req.matches[1].str());
  } catch (const std::exception&) {
    return SetError(res, 400, "slot id: '" + req.matches[1].str() + "' is not a slot number");
  }
  const std::string action = req.get_param_value("action");
  if (action != "save" && action != "restore" && action != "erase") {
    return SetError(res, 400, "action: must be save, restore or erase, got '" + action + "'");
  }
  // An erase may come without a body.
  std::optional<Json> body;
  if (action != "erase" || !req.body.empty()) {
    body = ReadJsonBody(req, res, st.opts.max_body_size);
    if (!body) return;
    if (Status known = CheckKnownFields(*body, RequestKind::kSlotFile); !known.ok()) {
      return SetStatusError(res, known);
    }
  }
  Result<ModelRef> model = body && body->contains("model") && !req.has_param("model")
                               ? ResolveModel(st, req, &*body)
                               : ResolveModel(st, req, nullptr);
  if (!model.ok()) return SetStatusError(res, model.status());
  Engine& engine = model->engine();
  Result<SlotFileResult> r = InvalidArgument("no action");
  if (action == "erase") {
    r = engine.EraseSlot(id);
    if (!r.ok()) return SetStatusError(res, r.status());
    return SendJson(res, {{"id_slot", r->id}, {"n_erased", r->n_tokens}});
  }
  Result<std::string> filename = GetString(*body, "filename", "");
  if (!filename.ok()) return SetStatusError(res, filename.status());
  if (filename->empty()) return SetError(res, 400, "filename: is required", "filename");
  r = action == "save" ? engine.SaveSlot(id, *filename) : engine.RestoreSlot(id, *filename);
  if (!r.ok()) return SetStatusError(res, r.status());
  if (action == "save") {
    return SendJson(res, {{"id_slot", r->id},
                          {"filename", r->filename},
                          {"n_saved", r->n_tokens},
                          {"n_written", r->n_bytes},
                          {"timings", {{"save_ms", r->ms}}}});
  }
  SendJson(res, {{"id_slot", r->id},
                 {"filename", r->filename},
                 {"n_restored", r->n_tokens},
                 {"n_read", r->n_bytes},
                 {"timings", {{"restore_ms", r->ms}}}});
}

}  // namespace

void RegisterSlotRoutes(ServerState& st) {
  st.http.Get("/slots", [&st](const httplib::Request& req, httplib::Response& res) {
    try {
      if (!st.opts.slots_endpoint) {  // llama-server's answer and wording
        return SetError(res, 501, "This server does not support slots endpoint. Start it with `--slots`");
      }
      // Router mode: the slots of ?model= (loaded for it unless ?autoload=false, as llama-server's router).
      Result<ModelRef> model = ResolveModel(st, req, nullptr);
      if (!model.ok()) return SetStatusError(res, model.status());
      // llama-server's readiness form: 503 when no slot is free.
      if (req.get_param_value("fail_on_no_slot") == "1") {
        const std::string busy = WhyNotReady(model->engine());
        if (!busy.empty()) return SetError(res, 503, "no slot available: " + busy);
      }
      ListSlots(model->engine(), res);
    } catch (const std::exception& e) {
      SetError(res, 500, std::string("internal error: ") + e.what());
    }
  });
  st.http.Post(R"(/slots/(\d+))", [&st](const httplib::Request& req, httplib::Response& res) {
    try {
      SlotAction(st, req, res);
    } catch (const std::exception& e) {
      SetError(res, 500, std::string("internal error: ") + e.what());
    }
  });
}

}  // namespace lazyslot::server
