// The engine's private state, shared by its implementation files: engine.cpp (scheduler and batching),
// memory_policy.cpp (slot choice, prompt reuse, KV budget, idle release) and slot_state.cpp (save/restore).
// Everything but the fields guarded by `mu` belongs to the scheduler thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/constrained.h"
#include "engine/engine.h"
#include "engine/park_store.h"
#include "engine/prefix_index.h"
#include "engine/text_output.h"
#include "kv/kv_cache.h"
#include "model/encoder.h"
#include "model/forward.h"
#include "ops/thread_pool.h"

namespace lazyslot {

using Clock = std::chrono::steady_clock;

inline double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}
inline double MiB(uint64_t bytes) { return bytes / 1048576.0; }

// Slots of an encoder model, at least: they hold no memory, and with more of them the short inputs of many
// requests share one pass (docs/bench.md "Embeddings and rerank").
inline constexpr int kEncoderSlots = 16;

struct Engine::Impl {
  struct Pending {
    GenerationRequest req;
    std::shared_ptr<RequestStream> stream;
  };

  struct Slot {
    int id = 0;
    std::shared_ptr<RequestStream> stream;  // null when idle
    GenerationRequest req;
    int32_t n_prompt_done = 0;  // prompt tokens already in the KV cache
    TokenId next_token = -1;    // sampled, to be fed in the next step
    int32_t n_generated = 0;
    std::unique_ptr<Sampler> sampler;
    std::optional<ConstrainedOutput> constrained;  // requests with a grammar
    TextOutput text;
    std::vector<float> hidden;  // embedding requests: hidden rows of the prompt, [n, n_embd]
    Clock::time_point t_start, t_first;
    // Memory policy.
    std::vector<TokenId> cache;  // the tokens whose K/V fill cells [0, cache.size()), kept after a request
    uint64_t cache_scope = 0;    // the cache scope of the request that wrote them (GenerationRequest)
    uint64_t last_used = 0;      // tick of the last release (least recently used idle slot is evicted first)
    Clock::time_point idle_since;  // when its last request ended (--kv-park-after)
    int32_t n_cached = 0;        // prompt tokens the current (or last) request reused from `cache`
    int32_t limit_cells = 0;     // most cells the current request may fill (slot size, or its budget share)
    uint64_t budget_bytes = 0;   // worst-case KV of the current request (a slot of its own), for the budgets
    bool commit_logged = false;  // "first commit" logged since the slot was last empty
    // After a context shift of the current request: the cells [0, shift_keep) untouched by it. The cells past
    // them were computed beside dropped tokens, so they are never shared or kept (-1: no shift).
    int32_t shift_keep = -1;
    // The token being handed to OnToken: its log-probabilities (requests with n_probs >= 0).
    float token_logprob = 0;
    std::vector<TokenLogprob> token_top;
    bool busy() const { return stream != nullptr; }
    bool in_prompt() const { return n_prompt_done < static_cast<int32_t>(req.prompt.size()); }
  };

  struct SlotTask {
    enum Kind { kSave, kRestore, kErase, kReleaseIdle } kind = kSave;
    int id = 0;
    std::string filename;
    bool weights = false;  // kReleaseIdle: the weights' pages too
    std::promise<Result<SlotFileResult>> result;
  };

  Engine* engine = nullptr;
  std::unique_ptr<KvCache> kv;
  std::unique_ptr<ThreadPool> own_pool;  // without EngineConfig::compute
  ThreadPool* pool = nullptr;            // own_pool, or the shared compute's
  std::unique_ptr<Forward> fwd;          // decoders
  std::unique_ptr<Encoder> enc;          // encoders (bert): no KV; each prompt goes whole into one pass
  std::vector<Slot> slots;
  PrefixIndex prefix_index{0};  // which slots hold which prompt prefixes (their `cache`), for sharing
  std::unique_ptr<ParkStore> park;  // --kv-park: conversations written to disk before their KV is released
  std::thread thread;
  int32_t capacity_cells = 0;  // most cells one request may use: the slot size, capped by --kv-budget
  // --kv-unified: a request without n_predict reserves a share of the pool (GrowStart) and grows into it by
  // kGrowCells while the budget has room (GrowReservation).
  bool grow = false;
  static constexpr int32_t kGrowCells = 256;
  uint64_t model_id = 0;       // identity of the weights, written into slot files
  uint64_t tick = 0;
  std::vector<float> grammar_logits;  // scratch: logits with the grammar's rejected tokens at -inf
  std::vector<uint8_t> grammar_mask;  // scratch: allowed[token]

  // Idle release (scheduler thread).
  Clock::time_point last_work = Clock::now();
  bool idle_released = true;  // nothing to release until some work has run
  bool weights_released = false;
  bool weights_paging_in = false;  // released weights are being touched again by the current step

  // Shared memory budget (EngineConfig::memory_budget; shared_budget.cpp), scheduler thread. The account
  // holds fixed.weights while weights_charged, fixed.scratch while scratch_charged, fixed.overhead always,
  // and kv_charged >= the slots' KV figure (BudgetUsedExcept(-1)), refunded down to it after every step.
  std::shared_ptr<BudgetAccount> account;  // null: no shared budget
  std::shared_ptr<BudgetWaker> waker;      // wakes the scheduler when the budget may have room
  BudgetCharge fixed;
  bool weights_charged = false, scratch_charged = false;
  uint64_t kv_charged = 0;
  std::atomic<bool> budget_wake{false};  // set by the waker; the scheduler re-runs admission
  bool budget_blocked = false;           // guarded by mu: admission waits for the shared budget
  Clock::time_point budget_blocked_since;  // when it started waiting (EngineConfig::memory_wait_s)

  mutable std::mutex mu;  // guards queue, slot_tasks, stop, stats, budget_blocked
  std::condition_variable cv;
  std::deque<Pending> queue;
  std::deque<std::shared_ptr<SlotTask>> slot_tasks;
  bool stop = false;
  uint64_t next_id = 1;
  EngineStats stats;  // counters; slots and kv figures refreshed each step

  // engine.cpp
  void Loop();
  void Step();
  // Adds the prompt tokens of busy slots to `batch` up to `budget` tokens; returns the slots whose prompt
  // advanced. An encoder's prompt goes in whole or waits for the next pass (alone it may exceed n_batch).
  std::vector<int> AddPrompts(Batch& batch, int32_t budget);
  // Embedding requests whose prompt is done: their pooled vector, scores or rows.
  void FinishEmbeddings();
  void ReleaseEncoderScratch();  // when no request is busy or queued
  size_t scratch_bytes() const { return enc ? enc->scratch_bytes() : fwd->scratch_bytes(); }
  void ReleaseScratch() { enc ? enc->ReleaseScratch() : fwd->ReleaseScratch(); }
  void Finish(Slot& s, const std::string& reason, bool truncated = false);
  void Fail(Slot& s, const Status& st);
  void Release(Slot& s, bool keep_cache);
  void OnToken(Slot& s, TokenId tok);
  // --context-shift: drops cells of a full slot (GenerationRequest::n_keep, n_discard) so that its generation
  // goes on; false when it cannot (off, nothing to drop, an error: logged), and the request ends.
  bool ShiftContext(Slot& s);
  void PublishSlotInfo();
  bool AnyBusy() const;

  // memory_policy.cpp
  // Moves queued requests into idle slots while a slot and the budget allow (caller holds `mu`).
  void AdmitQueued();
  // Admits queue[qi] if it can run now (erasing it from the queue): kAdmitted; kPass: it waits for something
  // only it needs, later requests may go first; kStop: it waits for any slot or for the budget.
  enum class Admit { kAdmitted, kPass, kStop };
  Admit TryAdmit(size_t qi);
  // For a request that shares another's prompt (n > 1): the busy slot holding that prompt's KV, or null.
  // *wait: that request still computes its prompt, so this one should wait for it.
  Slot* PromptSource(const GenerationRequest& req, bool* wait);
  // The slot (busy or idle) of cache scope `scope` holding the longest prefix of `prompt`, at most `limit` tokens that it can
  // share (KvCache::ReusableCells), or null; *n: that prefix's length.
  Slot* PrefixHolder(const std::vector<TokenId>& prompt, int32_t limit, uint64_t scope, int32_t* n);
  // Whether a busy slot still computing its prompt will hold at least a block more of `req`'s prompt than the
  // `have` tokens it can reuse or map now (such a request waits for it, then maps it).
  bool ComputingPrefix(const GenerationRequest& req, int32_t have) const;
  // Budget bytes one slot holds: a busy slot its reservation less the pages it maps from others, an idle
  // slot its own KV pages (OwnedBytes), so a page several slots map counts once, for its owner.
  uint64_t SlotBudgetBytes(const Slot& s) const;
  // SlotBudgetBytes summed over every slot but `except`.
  uint64_t BudgetUsedExcept(int except) const;
  uint64_t OwnedBytes(int id) const { return kv->committed_bytes(id) - kv->shared_bytes(id); }
  // A growing request's first reservation: a slot's share of the pool (n_ctx / n_parallel), or its prompt and
  // kGrowCells more when that is longer; at most `cap`.
  int32_t GrowStart(int32_t n_prompt, int32_t cap) const;
  // Raises a growing busy slot's reservation by kGrowCells (evicting idle slots' KV if need be); false when
  // the request has no room to grow (it then ends as a full context does).
  bool GrowReservation(Slot& s);
  // Drops idle slots' kept KV (never `protect`'s), least recently used first, until `need` more bytes fit
  // the budget beside every slot but `except`.
  bool MakeRoom(uint64_t need, int except, int protect = -1);
  // Keeps cells [0, keep) of a slot (and its token list), releasing the pages past them; logs the release.
  // With --kv-park an idle slot that loses a block or more is parked first (park_first: not when the
  // client or the operator asked for the cells to go).
  void TrimSlot(Slot& s, int32_t keep, const char* why, bool park_first = true);

  // parking.cpp (--kv-park)
  // Writes an idle slot's cells to the park store (unless a file holds them already); false when nothing
  // was parked (off, too short, busy, or the write failed: logged, the cells will be recomputed).
  bool ParkSlot(Slot& s, const char* why);
  // --kv-park-after: parks and releases the idle slots idle for that long by `now`.
  void ParkIdleSlots(Clock::time_point now);
  // The next --kv-park-after deadline of an idle slot holding cells, if any.
  std::optional<Clock::time_point> NextParkDeadline() const;
  // A parked conversation holding at least a block more of `req`'s prompt than `have`, or none.
  ParkStore::Match ParkedPrefix(const GenerationRequest& req, int32_t have) const;
  // Reads a parked conversation into the (emptied) slot and keeps the first `m.common` cells (fewer on a
  // sliding-window model, which continues only near its end); returns the cells kept, 0 when it failed
  // (logged; the request computes).
  int32_t ResumeParked(Slot& s, const ParkStore::Match& m, const GenerationRequest& req);
  // Logs each slot's first commit since it was last empty.
  void LogFirstCommits();
  // When the next idle release is due, if any is pending.
  std::optional<Clock::time_point> NextIdleDeadline() const;
  // Releases what is due at `now` (KV + scratch after idle_timeout_s, weights after idle_release_weights_s).
  void IdleRelease(Clock::time_point now);
  // Called once work runs again: clears the idle state, notes weights paging back in.
  void MarkWork();
  void Warmup();

  // shared_budget.cpp
  // Computes the fixed cost, opens (or adopts) the account and charges it; caps one request's cells at what
  // the budget leaves beside the fixed cost. Errors: kResourceExhausted with the figures.
  Status OpenBudget(const EngineConfig& cfg, int n_slots);
  // Charges what admitting a request into slot `except` with `reserve` bytes of worst-case KV adds (and the
  // weights and scratch if they were refunded), evicting this engine's own idle KV first; on failure the
  // account waits and the reclaimer is asked for room (caller holds `mu`).
  bool ChargeAdmission(int except, uint64_t reserve, int protect = -1);
  // Charges the KV of every slot but `except` plus `need` now, or nothing (no wait, no eviction): a restore
  // answers its caller at once and a growing request ends instead.
  bool ChargeKvNow(int except, uint64_t need);
  // Refunds KV charged beyond what the slots hold or reserve now.
  void SyncKvCharge();
  void RefundWeights();
  void RefundScratch();

  // slot_state.cpp
  Result<SlotFileResult> Submit(std::shared_ptr<SlotTask> task);
  Status CheckSlotTask(const SlotTask& task) const;  // the slot exists, saving is enabled, the name is safe
  void RunSlotTasks();
  Result<SlotFileResult> RunSlotTask(SlotTask& task);
  uint64_t ReleaseIdleNow(bool weights);  // kReleaseIdle
};

// Longest common prefix of a slot's kept tokens and a prompt.
int32_t CommonPrefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b);

// What an engine with these slots charges a memory budget before any request (shared_budget.cpp).
BudgetCharge FixedChargeFor(const Model& model, const EngineConfig& cfg, int n_slots, int32_t n_ctx_slot,
                            int n_threads);

// Identity of a model's weights for slot files: a hash of the tensor table and the small norm vectors.
uint64_t ModelIdentity(const Model& model);

}  // namespace lazyslot
