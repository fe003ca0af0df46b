// Slot save/restore/erase for POST /slots/{id}?action=...: requests are queued to the scheduler thread,
// which runs them between steps on idle slots (the file format is in kv/kv_state.h).
#include <malloc.h>

#include <filesystem>

#include "core/log.h"
#include "core/vm.h"
#include "engine/engine_impl.h"
#include "kv/kv_state.h"

namespace lazyslot {
namespace {

// Plain file names only: no directories, no "..", no hidden files, nothing a shell or a path could misread.
Status CheckFilename(const std::string& name) {
  if (name.empty()) return InvalidArgument("filename: must not be empty");
  if (name.size() > 200) return InvalidArgument("filename: longer than 200 characters");
  if (name.find('/') != std::string::npos || name.find('\\') != std::string::npos) {
    return InvalidArgument("filename: '" + name +
                           "' is a path; give a plain file name (files live in --slot-save-path)");
  }
  if (name.find("..") != std::string::npos) return InvalidArgument("filename: must not contain '..'");
  if (name[0] == '.') return InvalidArgument("filename: must not start with '.'");
  for (char ch : name) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                    ch == '.' || ch == '_' || ch == '-';
    if (!ok) {
      return InvalidArgument("filename: '" + name +
                             "' may hold only letters, digits, '.', '_' and '-' (no paths)");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<SlotFileResult> Engine::SaveSlot(int id, const std::string& filename) {
  auto t = std::make_shared<Impl::SlotTask>();
  t->kind = Impl::SlotTask::kSave;
  t->id = id;
  t->filename = filename;
  return impl_->Submit(std::move(t));
}

Result<SlotFileResult> Engine::RestoreSlot(int id, const std::string& filename) {
  auto t = std::make_shared<Impl::SlotTask>();
  t->kind = Impl::SlotTask::kRestore;
  t->id = id;
  t->filename = filename;
  return impl_->Submit(std::move(t));
}

Result<SlotFileResult> Engine::EraseSlot(int id) {
  auto t = std::make_shared<Impl::SlotTask>();
  t->kind = Impl::SlotTask::kErase;
  t->id = id;
  return impl_->Submit(std::move(t));
}

Result<uint64_t> Engine::ReleaseIdle(bool weights) {
  auto task = std::make_shared<Impl::SlotTask>();
  task->kind = Impl::SlotTask::kReleaseIdle;
  task->weights = weights;
  LS_ASSIGN_OR_RETURN(SlotFileResult r, impl_->Submit(std::move(task)));
  return r.n_bytes;
}

uint64_t Engine::Impl::ReleaseIdleNow(bool weights) {
  uint64_t released = 0;
  for (Slot& s : slots) {
    if (s.busy()) continue;
    const uint64_t before = kv->committed_bytes(s.id);
    TrimSlot(s, 0, "released on request");
    released += before - kv->committed_bytes(s.id);
  }
  SyncKvCharge();
  bool queued;
  {
    std::lock_guard<std::mutex> lock(mu);
    // Requests that wait only for the shared budget do not keep the scratch and weights: with no slot
    // busy they run only once admission has charged both again.
    queued = !queue.empty() && !budget_blocked;
  }
  if (AnyBusy() || queued) return released;
  released += scratch_bytes();
  ReleaseScratch();
  malloc_trim(0);
  RefundScratch();
  if (weights && !weights_released) {
    const gguf::File& f = engine->model_->file();
    Result<uint64_t> before = f.ResidentBytes();
    Status st = f.ReleaseResidentPages();
    if (!st.ok()) LS_LOG_WARN("releasing the weights failed: %s", st.ToString().c_str());
    if (st.ok()) RefundWeights();
    Result<uint64_t> after = f.ResidentBytes();
    if (before.ok() && after.ok() && *before > *after) released += *before - *after;
    weights_released = true;
    std::lock_guard<std::mutex> lock(mu);
    ++stats.weight_releases;
  }
  return released;
}

Result<SlotFileResult> Engine::Impl::Submit(std::shared_ptr<SlotTask> task) {
  if (task->kind != SlotTask::kReleaseIdle) {
    LS_RETURN_IF_ERROR(CheckSlotTask(*task));
  }
  std::future<Result<SlotFileResult>> result = task->result.get_future();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stop) return Unavailable("server is shutting down");
    slot_tasks.push_back(std::move(task));
  }
  cv.notify_all();
  return result.get();
}

Status Engine::Impl::CheckSlotTask(const SlotTask& task) const {
  if (task.id < 0 || task.id >= static_cast<int>(slots.size())) {
    return InvalidArgument("slot id " + std::to_string(task.id) + " does not exist (slots 0.." +
                           std::to_string(slots.size() - 1) + ")");
  }
  if (task.kind != SlotTask::kErase) {
    if (engine->config_.slot_save_path.empty()) {
      return Unimplemented("slot save/restore is disabled: start the server with --slot-save-path DIR");
    }
    LS_RETURN_IF_ERROR(CheckFilename(task.filename));
  }
  return Status::Ok();
}

void Engine::Impl::RunSlotTasks() {
  for (;;) {
    std::shared_ptr<SlotTask> t;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (slot_tasks.empty()) return;
      t = std::move(slot_tasks.front());
      slot_tasks.pop_front();
    }
    t->result.set_value(RunSlotTask(*t));
  }
}

Result<SlotFileResult> Engine::Impl::RunSlotTask(SlotTask& task) {
  if (task.kind == SlotTask::kReleaseIdle) {
    SlotFileResult r;
    r.n_bytes = ReleaseIdleNow(task.weights);
    PublishSlotInfo();
    return r;
  }
  Slot& s = slots[task.id];
  if (s.busy()) {
    return Unavailable("slot " + std::to_string(task.id) +
                       " is processing a request; try again when it is idle");
  }
  const Clock::time_point t0 = Clock::now();
  SlotFileResult r;
  r.id = task.id;
  r.filename = task.filename;
  const std::string path = (std::filesystem::path(engine->config_.slot_save_path) / task.filename).string();
  switch (task.kind) {
    case SlotTask::kSave: {
      LS_ASSIGN_OR_RETURN(r.n_bytes, SaveSlotState(*kv, s.id, s.cache, model_id, path, s.cache_scope));
      r.n_tokens = static_cast<int32_t>(s.cache.size());
      LS_LOG_INFO("slot %d: saved %d tokens to %s (%.2f MiB)", s.id, r.n_tokens, path.c_str(),
                  MiB(r.n_bytes));
      break;
    }
    case SlotTask::kRestore: {
      // Whatever fails, the slot ends up empty and usable (as llama-server, which clears the slot's
      // tokens): never half-restored, and never holding KV that its token list does not describe.
      auto fail = [&](Status st) {
        TrimSlot(s, 0, "restore failed", /*park_first=*/false);
        LS_LOG_WARN("slot %d: restore from %s failed, slot emptied: %s", s.id, task.filename.c_str(),
                    st.message().c_str());
        return st;
      };
      Result<uint32_t> n = SlotStateTokens(path);
      if (!n.ok()) return fail(n.status());
      const uint64_t budget = engine->config_.kv_budget;
      // The slot's own cells are replaced, so only the others count against the budgets, and the pages it
      // lends them (handed to a borrower, not freed).
      const uint64_t need =
          kv->BytesForCells(static_cast<int32_t>(std::min<uint64_t>(*n, kv->config().n_ctx_slot))) +
          kv->lent_bytes(s.id);
      if (budget > 0) {
        if (BudgetUsedExcept(s.id) + need > budget && !MakeRoom(need, s.id)) {
          return fail(ResourceExhausted("restoring " + std::to_string(*n) + " tokens needs " +
                                        std::to_string(need) + " bytes of KV, but only " +
                                        std::to_string(budget - BudgetUsedExcept(s.id)) +
                                        " of --kv-budget " + std::to_string(budget) + " are free now"));
        }
      }
      if (account) {
        // The restored cells are charged first (nothing is waited for here: the caller gets the answer).
        if (!ChargeKvNow(s.id, need)) {
          return fail(ResourceExhausted("restoring " + std::to_string(*n) + " tokens needs " +
                                        std::to_string(need) + " bytes of KV, which --memory-budget " +
                                        "cannot give now (" + account->budget().Describe() + ")"));
        }
      }
      ParkSlot(s, "replaced by a restore");
      Result<SlotStateInfo> info = RestoreSlotState(*kv, s.id, model_id, path);
      if (!info.ok()) return fail(info.status());
      const int32_t n_vocab = engine->model_->hparams().n_vocab;
      for (int32_t tok : info->tokens) {
        if (tok < 0 || tok >= n_vocab) {
          return fail(InvalidArgument("slot file " + path + ": token id " + std::to_string(tok) +
                                      " is outside the vocabulary (" + std::to_string(n_vocab) + " tokens)"));
        }
      }
      s.cache = std::move(info->tokens);
      prefix_index.Truncate(s.id, 0);
      s.cache_scope = info->scope;  // the file's cells stay in the scope they were computed in
      prefix_index.Extend(s.id, s.cache, s.cache_scope);
      s.n_cached = 0;
      s.last_used = ++tick;
      s.commit_logged = true;
      r.n_tokens = static_cast<int32_t>(s.cache.size());
      r.n_bytes = info->file_bytes;
      idle_released = false;
      last_work = Clock::now();
      LS_LOG_INFO("slot %d: restored %d tokens from %s; committed %.2f MiB (KV committed now %.2f MiB)", s.id,
                  r.n_tokens, path.c_str(), MiB(kv->committed_bytes(s.id)), MiB(kv->committed_bytes()));
      break;
    }
    case SlotTask::kErase: {
      r.n_tokens = static_cast<int32_t>(s.cache.size());
      TrimSlot(s, 0, "erased", /*park_first=*/false);
      break;
    }
    case SlotTask::kReleaseIdle:
      break;  // handled above
  }
  r.ms = MsSince(t0);
  return r;
}

}  // namespace lazyslot
