// The engine's memory policy: which idle slot a request gets (longest reusable prompt prefix, else an
// empty or least recently used slot), how much of the slot's kept KV it reuses, a longer prefix another slot
// holds mapped instead of recomputed (shared pages), the --kv-budget admission that keeps committed KV under
// the cap at every step, and the idle releases (KV + scratch, weights).
#include <malloc.h>

#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "core/vm.h"
#include "engine/engine_impl.h"

namespace lazyslot {

int32_t CommonPrefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int32_t>(i);
}

uint64_t ModelIdentity(const Model& model) {
  // FNV-1a over the tensor table (names, types, shapes, offsets) and the decoded norm vectors, which
  // differ between any two trainings or fine-tunes of the same shape.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  for (const gguf::TensorInfo& t : model.file().tensors()) {
    mix(t.name.data(), t.name.size());
    const uint32_t type = static_cast<uint32_t>(t.type);
    mix(&type, sizeof type);
    mix(t.ne, sizeof t.ne);
    mix(&t.offset, sizeof t.offset);
  }
  const std::vector<float>& norm = model.output_norm();
  mix(norm.data(), norm.size() * sizeof(float));
  for (int il = 0; il < model.hparams().n_layer; ++il) {
    const std::vector<float>& an = model.layer(il).attn_norm;
    mix(an.data(), an.size() * sizeof(float));
  }
  return h;
}

uint64_t Engine::Impl::SlotBudgetBytes(const Slot& s) const {
  if (!s.busy()) return OwnedBytes(s.id);
  // What a busy slot maps is at most its worst case (BytesForCells of its limit); of that, the pages it maps
  // from others are their owners' to count. A handover (an owner trimmed) makes such pages its own: its
  // shared bytes drop and this figure rises by as much, while the owner's falls.
  return s.budget_bytes - std::min(s.budget_bytes, kv->shared_bytes(s.id));
}

uint64_t Engine::Impl::BudgetUsedExcept(int except) const {
  uint64_t used = 0;
  for (const Slot& s : slots) {
    if (s.id != except) used += SlotBudgetBytes(s);
  }
  return used;
}

bool Engine::Impl::MakeRoom(uint64_t need, int except, int protect) {
  const uint64_t budget = engine->config_.kv_budget;
  // Only idle slots' kept KV can go; if the busy slots' reservations alone leave no room, keep it.
  uint64_t busy = 0;
  std::vector<Slot*> idle;
  for (Slot& s : slots) {
    if (s.id == except) continue;
    if (s.busy()) {
      busy += SlotBudgetBytes(s);
    } else if (s.id != protect && OwnedBytes(s.id) > 0) {
      idle.push_back(&s);
    }
  }
  if (busy + need > budget) return false;
  std::sort(idle.begin(), idle.end(),
            [](const Slot* a, const Slot* b) { return a->last_used < b->last_used; });
  for (Slot* s : idle) {
    if (BudgetUsedExcept(except) + need <= budget) break;
    TrimSlot(*s, 0, "evicted to fit --kv-budget");
  }
  return BudgetUsedExcept(except) + need <= budget;
}

int32_t Engine::Impl::GrowStart(int32_t n_prompt, int32_t cap) const {
  const EngineConfig& cfg = engine->config_;
  const int32_t share = cfg.n_ctx / std::max(cfg.n_parallel, 1);
  return std::min(cap, std::max(share, n_prompt + kGrowCells));
}

bool Engine::Impl::GrowReservation(Slot& s) {
  if (!grow || !s.busy() || s.req.n_predict >= 0 || s.limit_cells >= capacity_cells) return false;
  const EngineConfig& cfg = engine->config_;
  const int32_t want = std::min(capacity_cells, s.limit_cells + kGrowCells);
  const uint64_t reserve = kv->BytesForCells(want);
  const uint64_t need = reserve - std::min(reserve, kv->shared_bytes(s.id));
  if (cfg.kv_budget > 0 && BudgetUsedExcept(s.id) + need > cfg.kv_budget && !MakeRoom(need, s.id)) {
    LS_LOG_INFO("slot %d: the unified KV pool is full (%d cells held, %.1f MiB of %.1f MiB reserved): the "
                "request ends as a full context does",
                s.id, kv->n_cells(s.id), MiB(BudgetUsedExcept(-1)), MiB(cfg.kv_budget));
    return false;
  }
  if (account && !ChargeKvNow(s.id, need)) return false;  // a running request never waits
  s.limit_cells = want;
  s.budget_bytes = reserve;
  return true;
}

void Engine::Impl::TrimSlot(Slot& s, int32_t keep, const char* why, bool park_first) {
  keep = std::min<int32_t>(keep, static_cast<int32_t>(s.cache.size()));
  if (park_first && park && static_cast<int32_t>(s.cache.size()) - keep >= PrefixIndex::kBlock) ParkSlot(s, why);
  // A sliding-window model continues only from where its local layers still hold the window.
  if (keep < kv->n_cells(s.id)) keep = kv->ReusableCells(s.id, keep);
  const int32_t had = kv->n_cells(s.id);
  Result<uint64_t> released = kv->Trim(s.id, keep);
  s.cache.resize(keep);
  prefix_index.Truncate(s.id, keep);
  if (keep == 0) s.commit_logged = false;
  if (!released.ok()) {
    LS_LOG_WARN("slot %d: releasing KV pages failed: %s", s.id, released.status().ToString().c_str());
  } else if (*released > 0) {
    LS_LOG_INFO("slot %d: trim %d -> %d cells (%s): released %.2f MiB, KV committed now %.2f MiB", s.id, had,
                keep, why, MiB(*released), MiB(kv->committed_bytes()));
  }
}

void Engine::Impl::AdmitQueued() {
  for (auto it = queue.begin(); it != queue.end();) {  // cancelled requests leave wherever they are
    if (it->stream->cancelled()) {
      ++stats.requests_cancelled;
      it = queue.erase(it);
    } else {
      ++it;
    }
  }
  if (budget_blocked && !queue.empty() && engine->config_.memory_wait_s > 0 &&
      std::chrono::duration<double>(Clock::now() - budget_blocked_since).count() >
          engine->config_.memory_wait_s) {
    // The request at the head has waited too long for the shared budget: fail it with the figures.
    Event ev;
    ev.type = Event::kError;
    ev.error = Unavailable("waited " + std::to_string(static_cast<int>(engine->config_.memory_wait_s)) +
                           " s for room in the memory budget (" + account->budget().Describe() +
                           "); the memory is held by requests of other models; retry later");
    queue.front().stream->Push(ev);
    queue.erase(queue.begin());
    ++stats.requests_rejected;
    budget_blocked = false;
    account->StopWaiting();
  }
  if (queue.empty() && budget_blocked) {  // whatever waited for the shared budget is gone
    budget_blocked = false;
    account->StopWaiting();
  }
  // In arrival order. A request waiting for something only it needs (the slot it named, or the first
  // choice's prompt) lets later ones pass; one waiting for any slot or for the budget stops admission, so
  // requests are served first come, first served.
  size_t qi = 0;
  while (qi < queue.size()) {
    const Admit a = TryAdmit(qi);
    if (a == Admit::kStop) return;
    if (a == Admit::kPass) ++qi;
  }
}

Engine::Impl::Admit Engine::Impl::TryAdmit(size_t qi) {
  const EngineConfig& cfg = engine->config_;
  {
    Pending& p = queue[qi];
    const int32_t n_prompt = static_cast<int32_t>(p.req.prompt.size());
    // Another choice of the same prompt (n > 1) is computing it: wait, then copy its KV.
    bool wait = false;
    Slot* source = PromptSource(p.req, &wait);
    if (wait) return Admit::kPass;
    // A slot that may take the request: idle, and the one asked for if any.
    auto usable = [&p](const Slot& s) { return !s.busy() && (p.req.id_slot < 0 || p.req.id_slot == s.id); };
    // The slot: the idle one whose kept tokens share the longest prefix with the prompt (at least the last
    // prompt token is always computed, for its logits); else an empty one; else the least recently used.
    // A match that would throw away more of that slot's kept tokens than it reuses (another conversation
    // sharing only the template's first tokens) does not count while an empty slot is free: that slot's
    // conversation keeps its cache for its next turn. With shared pages, no kept token of another
    // conversation is thrown away while an empty slot is free: the common prefix is mapped into that slot
    // instead (below). (With every slot holding a conversation, the longest
    // match still wins: measured in the fleet test, taking the least recently used slot instead kept no more
    // whole prompts and lost the shared preamble.)
    Slot* best = nullptr;
    int32_t keep = 0;
    if (p.req.cache_prompt && !p.req.embedding && !source && !enc) {
      bool empty_free = false;
      for (const Slot& s : slots) empty_free = empty_free || (usable(s) && s.cache.empty());
      for (Slot& s : slots) {
        if (!usable(s)) continue;
        const int32_t k_tokens = s.cache_scope == p.req.cache_scope ? CommonPrefix(s.cache, p.req.prompt) : 0;
        // A sliding-window model can continue only near the end of what it holds: an earlier branch
        // point is recomputed from the start (ReusableCells), and timings.cache_n says so.
        const int32_t k = kv->ReusableCells(s.id, std::min(k_tokens, n_prompt - 1));
        const int32_t lost = static_cast<int32_t>(s.cache.size()) - k;
        if (empty_free && (kv->shares_pages() ? lost > 0 : lost > k)) continue;
        if (k > keep) {
          keep = k;
          best = &s;
        }
      }
    }
    // A longer prefix that another slot holds (a busy one, or one this request should not take over) is
    // mapped from it rather than computed again (KvCache::ShareCells), into a slot chosen as for a new
    // conversation. It must beat the slot's own reuse by a block at least.
    Slot* holder = nullptr;
    int32_t shared = 0;
    if (p.req.cache_prompt && !p.req.embedding && !source && !enc) {
      holder = PrefixHolder(p.req.prompt, n_prompt - 1, p.req.cache_scope, &shared);
      if (holder && shared < keep + PrefixIndex::kBlock) holder = nullptr;
      if (holder) best = nullptr;
      // A longer prefix that a busy slot is computing right now (requests that arrived together): wait for
      // it rather than compute it again beside it, then map it. Not with sliding-window layers, whose
      // computing slot may have slid past the point by the time it is done.
      if (kv->shares_pages() && kv->window() == 0 && ComputingPrefix(p.req, std::max(keep, shared)))
        return Admit::kPass;
    }
    // A longer prefix parked on disk (--kv-park) is read back rather than computed, into a slot chosen as
    // for a new conversation.
    ParkStore::Match parked;
    if (park && p.req.cache_prompt && !p.req.embedding && !source && !enc) {
      parked = ParkedPrefix(p.req, std::max(keep, shared));
      if (parked.entry >= 0) {
        holder = nullptr;
        best = nullptr;
      }
    }
    // A resume that the budget can fit only by evicting an idle slot takes that slot (the least recently
    // used one holding cells): its pages then hold the file's rows (KvCache::Rewrite) instead of being
    // released while an empty slot commits fresh ones (1.3-1.8 s for 439 MiB on a VM, against 0.1 s).
    const bool take_victim = parked.entry >= 0 && cfg.kv_budget > 0 &&
                             BudgetUsedExcept(-1) + kv->BytesForCells(std::max(parked.n_tokens, n_prompt)) >
                                 cfg.kv_budget;
    if (!best) {
      for (Slot& s : slots) {
        if (!usable(s)) continue;
        const bool s_pref = take_victim ? !s.cache.empty() : s.cache.empty();
        const bool b_pref = best && (take_victim ? !best->cache.empty() : best->cache.empty());
        if (!best || (s_pref && !b_pref) || (s_pref == b_pref && s.last_used < best->last_used)) best = &s;
      }
    }
    if (!best) return p.req.id_slot >= 0 ? Admit::kPass : Admit::kStop;  // no usable slot is idle
    Slot& s = *best;
    if (holder == &s) {  // the holder itself is the slot to take: its own prefix, nothing to share
      keep = shared;
      holder = nullptr;
    } else if (holder || parked.entry >= 0) {
      keep = 0;  // the slot's own cells go; the holder's prefix, or the parked one, takes their place
    }
    // The most cells this request can fill: prompt + n_predict, within the slot and the budget.
    int32_t limit = capacity_cells;
    if (p.req.embedding) {
      limit = n_prompt;
    } else if (p.req.n_predict >= 0) {
      limit = std::min<int64_t>(capacity_cells, int64_t{n_prompt} + std::max(p.req.n_predict, 1));
    } else if (grow) {
      limit = GrowStart(n_prompt, limit);
    }
    // The budgets (an encoder holds no KV): the worst case is reserved up front, so generation can never
    // push the total past them. Of it, the pages the slot will map from a holder or a source are theirs to
    // count; what the slot lends others stays counted (its trim hands those pages to a borrower).
    uint64_t reserve = 0, need = 0;
    if (!enc && (cfg.kv_budget > 0 || account)) {
      // A parked file is read whole, then cut to what the prompt shares: its cells count until then.
      reserve = kv->BytesForCells(std::max(limit, parked.n_tokens));
      const auto need_for = [&](int32_t mapped) {
        return reserve - std::min(reserve, kv->MappedBytesForCells(mapped)) + kv->lent_bytes(s.id);
      };
      need = need_for(source ? n_prompt - 1 : holder ? shared : 0);
      const int protect = holder ? holder->id : -1;  // evicting the holder would lose what is mapped
      auto fits = [&] {
        if (cfg.kv_budget > 0 && BudgetUsedExcept(s.id) + need > cfg.kv_budget && !MakeRoom(need, s.id, protect))
          return false;
        return !account || ChargeAdmission(s.id, need, protect);
      };
      if (!fits()) {
        // An idle holder holding much more than the prefix may leave no room beside it, where the request
        // alone would fit after evicting it: then it runs without sharing.
        if (!holder || holder->busy()) return Admit::kStop;
        holder = nullptr;
        need = need_for(0);
        if (!fits()) return Admit::kStop;
      }
    }
    if (parked.entry < 0 && (kv->n_cells(s.id) > keep || s.cache.size() > static_cast<size_t>(keep))) {
      TrimSlot(s, keep, keep > 0 ? "prompt prefix reused" : "slot reassigned");
    }  // (a resume parks the slot's cells and reuses its pages for the file's rows: ResumeParked)
    if (keep == 0 && parked.entry < 0) {
      s.cache_scope = p.req.cache_scope;  // what it holds from now on is this request's
      prefix_index.Truncate(s.id, 0);
    }
    if (source) {
      // All but the last prompt token (computed here, for this choice's own logits) come from the source:
      // their whole pages mapped, held once (KvCache::ShareCells). The reservation above stays the worst
      // case of a slot of its own, so the budget holds whichever slot later keeps the pages.
      keep = n_prompt - 1;
      kv->ShareCells(source->id, s.id, keep);
      s.cache.assign(p.req.prompt.begin(), p.req.prompt.begin() + keep);
      prefix_index.Extend(s.id, s.cache, s.cache_scope);
      LS_LOG_DEBUG("slot %d: %d prompt cells from slot %d (another choice of the same prompt): %.2f MiB shared",
                   s.id, keep, source->id, MiB(kv->shared_bytes(s.id)));
    }
    if (parked.entry >= 0) {
      keep = ResumeParked(s, parked, p.req);
      if (reserve > 0) reserve = kv->BytesForCells(limit);  // cut to the shared prefix: the request's own
    }
    if (holder) {
      // What the holder still holds: making room for the budget above may have trimmed an idle holder.
      kv->ShareCells(holder->id, s.id, std::min<int32_t>(shared, static_cast<int32_t>(holder->cache.size())));
      keep = kv->n_cells(s.id);
      s.cache.assign(p.req.prompt.begin(), p.req.prompt.begin() + keep);
      prefix_index.Extend(s.id, s.cache, s.cache_scope);
      LS_LOG_DEBUG("slot %d: maps %d prompt cells held by slot %d: %.2f MiB shared", s.id, keep, holder->id,
                   MiB(kv->shared_bytes(s.id)));
    }
    s.req = std::move(p.req);
    s.stream = std::move(p.stream);
    queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(qi));
    s.n_prompt_done = keep;
    s.n_cached = keep;
    s.limit_cells = limit;
    s.budget_bytes = reserve;
    s.n_generated = 0;
    s.next_token = -1;
    s.sampler = std::make_unique<Sampler>(s.req.sampling, engine->tokenizer_.get());
    for (TokenId t : s.req.prompt) s.sampler->Accept(t);
    s.constrained.reset();
    if (s.req.grammar)
      s.constrained.emplace(s.req.grammar, s.req.grammar_triggers, s.req.grammar_trigger_at_start);
    s.text = TextOutput(s.req.stop);
    s.hidden.clear();
    s.t_start = Clock::now();
    stats.prompt_tokens_cached_total += keep;
    if (s.req.return_progress) {  // the first report: what the cache already holds (llama-server's 0% update)
      Event ev;
      ev.type = Event::kProgress;
      ev.slot = s.id;
      ev.n_prompt = n_prompt;
      ev.n_prompt_processed = keep;
      ev.n_cached = keep;
      s.stream->Push(std::move(ev));
    }
    if (keep > 0)
      LS_LOG_DEBUG("slot %d: request %llu reuses %d of %d prompt tokens", s.id,
                   static_cast<unsigned long long>(s.stream->id()), keep, n_prompt);
    return Admit::kAdmitted;
  }
}

Engine::Impl::Slot* Engine::Impl::PrefixHolder(const std::vector<TokenId>& prompt, int32_t limit, uint64_t scope,
                                               int32_t* n) {
  *n = 0;
  if (!kv->shares_pages() || limit <= 0) return nullptr;
  int32_t blocks = 0;
  const std::vector<int> holders = prefix_index.Longest(prompt, limit, scope, &blocks);
  for (int id : holders) {
    Slot& h = slots[id];
    if (h.cache_scope != scope) continue;  // a hash collision across scopes: never shared
    // The index holds hashes: the tokens decide, and the match may run on past the last whole block.
    const int32_t common = std::min({CommonPrefix(h.cache, prompt), limit, kv->n_cells(h.id)});
    const int32_t k = kv->ReusableCells(h.id, common);
    if (k > 0 && k >= blocks * PrefixIndex::kBlock) {
      *n = k;
      return &h;
    }
  }
  return nullptr;
}

bool Engine::Impl::ComputingPrefix(const GenerationRequest& req, int32_t have) const {
  const int32_t limit = static_cast<int32_t>(req.prompt.size()) - 1;
  for (const Slot& o : slots) {
    if (!o.busy() || !o.in_prompt() || !o.req.cache_prompt || o.req.embedding) continue;
    if (o.req.cache_scope != req.cache_scope) continue;
    const int32_t c = std::min(CommonPrefix(o.req.prompt, req.prompt), limit);
    if (c >= have + PrefixIndex::kBlock && static_cast<int32_t>(o.cache.size()) < c) return true;
  }
  return false;
}

Engine::Impl::Slot* Engine::Impl::PromptSource(const GenerationRequest& req, bool* wait) {
  *wait = false;
  if (req.share_prompt_of == 0 || req.embedding) return nullptr;
  for (Slot& s : slots) {
    if (!s.busy() || s.stream->id() != req.share_prompt_of) continue;
    if (s.in_prompt()) {
      *wait = true;
      return nullptr;
    }
    // Its cells [0, n_prompt - 1) hold exactly this prompt's tokens (the same prompt, computed already).
    const int32_t n = static_cast<int32_t>(req.prompt.size()) - 1;
    if (static_cast<int32_t>(s.cache.size()) < n || CommonPrefix(s.cache, req.prompt) < n) return nullptr;
    // A sliding window that has moved on since (the source generated) no longer holds them all.
    if (kv->ReusableCells(s.id, n) != n) return nullptr;
    return &s;
  }
  return nullptr;  // it finished or went away: this request runs on its own
}

void Engine::Impl::LogFirstCommits() {
  if (kv->config().eager) return;
  for (Slot& s : slots) {
    if (s.commit_logged || kv->committed_bytes(s.id) == 0) continue;
    s.commit_logged = true;
    LS_LOG_INFO("slot %d: first KV commit: %d cells, %.2f MiB (KV committed now %.2f MiB)", s.id,
                kv->n_cells(s.id), MiB(kv->committed_bytes(s.id)), MiB(kv->committed_bytes()));
  }
  if (weights_paging_in) {
    weights_paging_in = false;
    Result<uint64_t> w = engine->model_->file().ResidentBytes();
    LS_LOG_INFO(
        "weights reloaded: %.1f MiB resident again after the first step (paged in from the page cache)",
        w.ok() ? MiB(*w) : 0.0);
  }
}

void Engine::Impl::MarkWork() {
  idle_released = false;
  if (weights_released) {
    weights_released = false;
    weights_paging_in = true;
    // A huge-page copy comes back whole now (a file mapping pages back as the step touches it).
    const Status st = engine->model_->RestoreWeights();
    if (!st.ok()) LS_LOG_WARN("weights: the huge-page copy did not come back (%s)", st.message().c_str());
  }
}

std::optional<Clock::time_point> Engine::Impl::NextIdleDeadline() const {
  const EngineConfig& cfg = engine->config_;
  std::optional<Clock::time_point> due;
  auto consider = [&](double seconds, bool done) {
    if (seconds <= 0 || done) return;
    const auto t =
        last_work + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    if (!due || t < *due) due = t;
  };
  consider(cfg.idle_timeout_s, idle_released);
  consider(cfg.idle_release_weights_s, weights_released);
  const std::optional<Clock::time_point> park_due = NextParkDeadline();
  if (park_due && (!due || *park_due < *due)) due = park_due;
  return due;
}

void Engine::Impl::IdleRelease(Clock::time_point now) {
  const EngineConfig& cfg = engine->config_;
  const double idle_s = std::chrono::duration<double>(now - last_work).count();
  ParkIdleSlots(now);
  if (cfg.idle_timeout_s > 0 && !idle_released && idle_s >= cfg.idle_timeout_s) {
    idle_released = true;
    for (Slot& s : slots) ParkSlot(s, "idle timeout");  // before their pages go
    const size_t scratch = scratch_bytes();
    Result<uint64_t> released = kv->ReleaseAll();
    if (!released.ok())
      LS_LOG_WARN("idle release of the KV cache failed: %s", released.status().ToString().c_str());
    for (Slot& s : slots) {
      s.cache.clear();
      prefix_index.Truncate(s.id, 0);
      s.commit_logged = false;
    }
    ReleaseScratch();
    malloc_trim(0);  // hand the freed activation buffers back to the kernel, not just to malloc
    RefundScratch();
    SyncKvCharge();
    {
      std::lock_guard<std::mutex> lock(mu);
      ++stats.idle_releases;
    }
    LS_LOG_INFO(
        "idle for %.1f s: released %.2f MiB of KV%s and %.2f MiB of compute scratch; RSS now %.1f MiB",
        idle_s, MiB(released.ok() ? *released : 0), kv->config().eager ? " (eager mode keeps its pages)" : "",
        MiB(scratch), MiB(vm::ReadProcessMemory().rss));
  }
  if (cfg.idle_release_weights_s > 0 && !weights_released && idle_s >= cfg.idle_release_weights_s) {
    weights_released = true;
    const gguf::File& f = engine->model_->file();
    Result<uint64_t> before = f.ResidentBytes();
    Status st = f.ReleaseResidentPages();
    if (!st.ok()) LS_LOG_WARN("idle release of the weights failed: %s", st.ToString().c_str());
    if (st.ok()) RefundWeights();
    Result<uint64_t> after = f.ResidentBytes();
    {
      std::lock_guard<std::mutex> lock(mu);
      ++stats.weight_releases;
    }
    LS_LOG_INFO(
        "idle for %.1f s: weights released (%.1f MiB resident -> %.1f MiB; they page back on the next "
        "request); RSS now %.1f MiB",
        idle_s, before.ok() ? MiB(*before) : 0.0, after.ok() ? MiB(*after) : 0.0,
        MiB(vm::ReadProcessMemory().rss));
  }
}

void Engine::Impl::Warmup() {
  // One token through every layer in slot 0, then its KV is dropped: the weights are paged in before the
  // first request (so the first request's latency and the start-up RSS are those of a warm server).
  const Clock::time_point t0 = Clock::now();
  Batch b;
  const TokenId bos = engine->tokenizer_->bos();
  b.Add(bos >= 0 ? bos : 0, 0, 0, enc ? Batch::kHidden : Batch::kLogits);
  ForwardOutput out;
  Status st = enc ? enc->Run(b, &out) : fwd->Run(b, &out);
  if (enc) enc->ReleaseScratch();
  if (!st.ok()) LS_LOG_WARN("warm-up pass failed: %s", st.ToString().c_str());
  Result<uint64_t> released = kv->Trim(0, 0);
  (void)released;
  Result<uint64_t> w = engine->model_->file().ResidentBytes();
  LS_LOG_INFO("warm-up: one token in %.0f ms; weights resident %.1f MiB; KV committed %.2f MiB", MsSince(t0),
              w.ok() ? MiB(*w) : 0.0, MiB(kv->committed_bytes()));
}

}  // namespace lazyslot
