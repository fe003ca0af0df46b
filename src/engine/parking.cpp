// The engine's side of parking (--kv-park, engine/park_store.h): which idle slots are written to disk and
// when (before any release of their cells, and after --kv-park-after seconds idle), and the resume of a
// parked conversation into a slot at admission (memory_policy.cpp's TryAdmit decides; this reads it back).
#include <algorithm>

#include "core/log.h"
#include "engine/engine_impl.h"

namespace lazyslot {

bool Engine::Impl::ParkSlot(Slot& s, const char* why) {
  if (!park || s.busy() || static_cast<int32_t>(s.cache.size()) < PrefixIndex::kBlock ||
      kv->n_cells(s.id) != static_cast<int32_t>(s.cache.size())) {
    return false;
  }
  const Clock::time_point t0 = Clock::now();
  Result<uint64_t> written = park->Park(*kv, s.id, s.cache, s.cache_scope);
  if (!written.ok()) {
    LS_LOG_WARN("slot %d: parking %zu tokens (%s) failed; they will be computed again if they return: %s",
                s.id, s.cache.size(), why, written.status().message().c_str());
    return false;
  }
  if (*written > 0) {
    LS_LOG_INFO("slot %d: parked %zu tokens (%s): %.1f MiB written in %.0f ms; %zu parked, %.1f MiB on disk",
                s.id, s.cache.size(), why, MiB(*written), MsSince(t0), park->files(), MiB(park->bytes()));
  }
  return true;
}

void Engine::Impl::ParkIdleSlots(Clock::time_point now) {
  const double after = engine->config_.kv_park_after_s;
  if (!park || after <= 0) return;
  for (Slot& s : slots) {
    if (s.busy() || s.cache.empty()) continue;
    if (std::chrono::duration<double>(now - s.idle_since).count() < after) continue;
    ParkSlot(s, "idle");
    // Released whether or not the write worked: the conversation is computed again if it returns.
    TrimSlot(s, 0, "parked after --kv-park-after", /*park_first=*/false);
  }
  SyncKvCharge();
}

std::optional<Clock::time_point> Engine::Impl::NextParkDeadline() const {
  const double after = engine->config_.kv_park_after_s;
  if (!park || after <= 0) return std::nullopt;
  std::optional<Clock::time_point> due;
  for (const Slot& s : slots) {
    if (s.busy() || s.cache.empty()) continue;
    const auto t = s.idle_since + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(after));
    if (!due || t < *due) due = t;
  }
  return due;
}

ParkStore::Match Engine::Impl::ParkedPrefix(const GenerationRequest& req, int32_t have) const {
  const int32_t limit = static_cast<int32_t>(req.prompt.size()) - 1;  // the last token is computed
  ParkStore::Match m = park->Find(req.prompt, limit, req.cache_scope);
  // `have` is what an idle slot keeps or a busy one lends of the prompt: a file must beat it by a block.
  if (m.entry < 0 || m.common < have + PrefixIndex::kBlock) return {};
  return m;
}

int32_t Engine::Impl::ResumeParked(Slot& s, const ParkStore::Match& m, const GenerationRequest& req) {
  const std::string path = park->path(m.entry);
  // The slot's own conversation is parked and its token list dropped; its pages stay for the file's rows
  // (KvCache::Rewrite, inside the restore), which saves committing them again.
  if (s.cache.size() >= static_cast<size_t>(PrefixIndex::kBlock)) ParkSlot(s, "slot reassigned");
  const Clock::time_point t0 = Clock::now();
  s.cache.clear();
  prefix_index.Truncate(s.id, 0);
  s.commit_logged = true;
  Result<SlotStateInfo> info = park->Restore(*kv, s.id, m);
  if (!info.ok()) {  // logged by the store, the file deleted; the request computes in the emptied slot
    const Result<uint64_t> emptied = kv->Trim(s.id, 0);  // a file refused on its header left the old cells
    if (!emptied.ok()) LS_LOG_WARN("slot %d: %s", s.id, emptied.status().message().c_str());
    s.commit_logged = false;
    s.cache_scope = req.cache_scope;
    return 0;
  }
  s.cache = std::move(info->tokens);
  s.cache_scope = info->scope;
  // Keep what the prompt shares (a sliding-window model continues only near the end of what it holds).
  TrimSlot(s, m.common, "resumed past the prompt's branch point", /*park_first=*/false);
  prefix_index.Truncate(s.id, 0);
  prefix_index.Extend(s.id, s.cache, s.cache_scope);
  const int32_t kept = static_cast<int32_t>(s.cache.size());
  LS_LOG_INFO("slot %d: resumed %d of %zu prompt tokens from parked %s (%d tokens, %.1f MiB read in %.0f ms)",
              s.id, kept, req.prompt.size(), path.c_str(), m.n_tokens, MiB(kv->committed_bytes(s.id)), MsSince(t0));
  return kept;
}

}  // namespace lazyslot
