// The engine: owns the model, the KV cache and one scheduler thread that runs continuous batching over
// `n_parallel` slots. HTTP threads only Submit() requests and read their events from a RequestStream;
// they never touch the model or the cache.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "engine/logprobs.h"
#include "engine/memory_budget.h"
#include "engine/sampler.h"
#include "grammar/grammar.h"
#include "model/model.h"
#include "ops/thread_pool.h"
#include "tokenizer/tokenizer.h"

namespace lazyslot {

struct ConstraintVocab;  // engine/constrained.h

// Compute shared by several engines (the router's models): one thread pool, and a lock each engine's
// scheduler holds for one step, so busy models interleave their steps and never run more threads than the
// pool has.
struct SharedCompute {
  explicit SharedCompute(int n_threads) : pool(n_threads) {}
  ThreadPool pool;
  std::mutex step_mu;
};

struct EngineConfig {
  std::string model_path;
  int n_parallel = 1;       // slots
  int32_t n_ctx = 4096;     // total cells; each slot gets n_ctx / n_parallel (as llama-server)
  int n_threads = 0;        // 0: physical cores (ignored with `compute`)
  std::shared_ptr<SharedCompute> compute;  // null: the engine's own pool of n_threads
  int32_t n_batch = 512;    // most tokens per forward pass (prompts are processed in chunks of this)
  bool embeddings = false;  // --embeddings
  // kNone: the model's pooling_type, else mean. kRank (--rerank): the classifier head's scores.
  PoolingType pooling = PoolingType::kNone;
  int max_queue = 64;                        // requests waiting for a slot; more get 503
  TensorType cache_type_k = TensorType::kF16;
  TensorType cache_type_v = TensorType::kF16;
  bool kv_eager = false;
  // Slots that start alike map one copy of the common prefix's KV pages (KvCache::ShareCells); false
  // (--no-kv-share): each copies its own, as before sharing (for comparison).
  bool kv_share = true;
  // Sliding-window models: local layers keep every cell as global ones do (llama-server's --swa-full), so a
  // prompt can be reused from any point, at the cost of their whole context's KV.
  bool swa_full = false;
  bool flash_attn = true;  // online-softmax attention with an F16 accumulator, as llama-server's default
  // Memory policy (docs/memory.md). kv_budget: most committed KV bytes over all slots, 0 = no cap.
  uint64_t kv_budget = 0;
  // llama-server's --kv-unified: one pool of n_ctx cells for all slots instead of n_ctx / n_parallel each.
  // Every slot may grow to n_ctx; the pool is a KV budget of n_ctx cells (with kv_budget, the smaller), a
  // request without n_predict reserves a slot's share and grows into what the pool has free.
  bool kv_unified = false;
  // Parking (docs/memory.md, engine/park_store.h): an idle slot's KV is written to kv_park_dir before it is
  // released, and read back for a prompt that starts with it. Empty: off. kv_park_after_s > 0: an idle slot
  // is parked and released after that many seconds; kv_park_max: most bytes of parked files (0: no cap).
  std::string kv_park_dir;
  double kv_park_after_s = 0;
  uint64_t kv_park_max = 0;
  double idle_timeout_s = 0;          // > 0: after this long with no work, release all KV and the scratch
  double idle_release_weights_s = 0;  // > 0: after this long with no work, drop the weights' resident pages
  std::string slot_save_path;         // directory for slot save/restore; empty = disabled
  // A budget shared with other engines (the router's --memory-budget; memory_budget.h), null = none. The
  // engine charges its fixed cost (weights, scratch bound, heap overhead: Engine::EstimateCharge) and every
  // request's worst-case KV to `memory_account` (opened on the budget if null; the router passes one it
  // has already charged with the estimate). The account lives as long as the engine and is refunded after
  // the engine's memory is freed.
  std::shared_ptr<MemoryBudget> memory_budget;
  std::shared_ptr<BudgetAccount> memory_account;
  // > 0: a request that has waited this long for room in memory_budget fails with kUnavailable and the
  // figures (room may never come when the memory is held by models whose own requests wait too).
  double memory_wait_s = 0;
  bool warmup = true;  // one throw-away token at start (pages the weights in, as llama-server's warm-up)
  // --mmap: the weights stay a mapping of the GGUF file (4 KiB pages, shared with every process mapping it);
  // default (--no-mmap): a private copy on 2 MiB pages, faster to stream (docs/decisions/0010).
  bool mmap = false;
  // --context-shift (llama-server's): a generation that fills its slot drops the oldest cells after the
  // request's n_keep and goes on (GenerationRequest::n_keep, n_discard) instead of ending with "length".
  // Refused for encoders and --embeddings; ignored, with a warning, for sliding-window models.
  bool context_shift = false;
};

struct GenerationRequest {
  std::vector<TokenId> prompt;
  // Embedding requests compute the prompt's hidden states instead of generating. Event::embedding holds the
  // pooled vector as the model gives it (not normalised: callers normalise), or with pooling kRank the
  // classifier head's n_cls_out scores (softmax over them for qwen3 rerankers, as llama.cpp), or with
  // `unpooled` every token's hidden state, [n_prompt, n_embd] row-major.
  bool embedding = false;
  PoolingType pooling = PoolingType::kNone;  // for embeddings; kNone = the engine's pooling
  bool unpooled = false;
  SamplingParams sampling;
  int32_t n_predict = -1;         // -1: until end of generation or the slot is full
  // With EngineConfig::context_shift, when the slot is full: the first n_keep cells stay (-1: the whole
  // prompt; one more where the vocabulary adds BOS, as llama-server; at most the slot's cells less 4), and
  // n_discard cells after them go (0: half of those after n_keep).
  int32_t n_keep = 0;
  int32_t n_discard = 0;
  std::vector<std::string> stop;  // generation ends before the first occurrence of any of these
  bool ignore_eos = false;
  // Keep this request's KV in its slot when it ends, and start from the longest matching prefix of a slot's
  // kept KV (llama-server's cache_prompt). Results are the same either way.
  bool cache_prompt = true;
  // The cache scope (a hash of the request's cache_salt, 0 without one): KV is reused or shared only between
  // requests of one scope, so a client cannot learn through timings.cache_n or speed which prompts others
  // of another scope sent (vLLM's cache_salt).
  uint64_t cache_scope = 0;
  // Constrained output (src/grammar); null: free text. With no triggers the grammar applies from the first
  // token; with triggers it starts where the output first contains one (tool_choice "auto").
  grammar::GrammarPtr grammar;
  std::vector<std::string> grammar_triggers;
  bool grammar_trigger_at_start = false;  // a trigger counts only at the output's start
  // Log-probabilities per generated token: -1 none; 0 the chosen token's only; n > 0 also the n most
  // probable. From the model's raw distribution, or with post_sampling_probs from the sampler's final one
  // (Event::top_logprobs then holds log(probability) of the candidates that survived the sampler chain).
  int32_t n_probs = -1;
  bool post_sampling_probs = false;
  // n > 1 choices of one prompt: the stream id of the request whose prompt KV this one copies instead of
  // computing it (the first choice). It waits until that request's prompt is in its slot; if that request
  // is gone by then, it runs as any request (and may still reuse a kept prefix).
  uint64_t share_prompt_of = 0;
  int id_slot = -1;  // >= 0: run only in this slot (llama-server's id_slot), waiting for it if busy
  bool return_progress = false;  // kProgress events while the prompt is processed
};

// One thing that happened to a request, in order. kToken events carry only complete UTF-8 text.
struct Event {
  enum Type { kToken, kDone, kError, kProgress } type = kToken;
  std::string text;  // kToken: new text (may be empty while a stop string or UTF-8 sequence is pending)
  TokenId token = -1;  // kToken: the generated token (-1: text flushed at the end, no token)
  // kToken with n_probs >= 0: the token's log-probability and the most probable alternatives.
  float logprob = 0;
  std::vector<TokenLogprob> top_logprobs;
  // kDone:
  std::string finish_reason;  // "stop" or "length"
  std::string stop_word;      // the stop string that ended generation, if one did
  bool truncated = false;     // generation stopped because the slot's context was full
  int slot = -1;              // the slot running the request (kToken, kProgress, kDone)
  // kProgress: prompt tokens in the cache so far (n_cached of them reused) of n_prompt, and time spent.
  // kToken: the counts and times so far (n_prompt, n_cached, n_generated, prompt_ms, generation_ms).
  int32_t n_prompt_processed = 0;
  int32_t n_prompt = 0;
  int32_t n_generated = 0;
  int32_t n_cached = 0;          // prompt tokens whose KV was reused from the slot (not recomputed)
  std::vector<float> embedding;  // embedding requests
  double prompt_ms = 0, generation_ms = 0;
  // kError:
  Status error;
};

// The channel between one request's HTTP handler and the scheduler.
class RequestStream {
 public:
  // Blocks up to `timeout` for the next event; false on timeout.
  bool Pop(Event* event, std::chrono::milliseconds timeout);
  // Asks the scheduler to stop this request and free its slot (client disconnected).
  void Cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }
  uint64_t id() const { return id_; }

  // Scheduler side.
  void Push(Event event);
  explicit RequestStream(uint64_t id) : id_(id) {}

 private:
  const uint64_t id_;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
};

struct SlotInfo {
  int id = 0;
  bool busy = false;
  uint64_t request_id = 0;
  int32_t n_tokens = 0;  // KV cells in use
  int32_t n_ctx = 0;
  uint64_t committed_bytes = 0;  // KV pages this slot holds (cache tracking), its own and shared ones
  uint64_t shared_bytes = 0;     // of those, other slots' pages it maps (a prefix held once)
  // busy: the worst case reserved against --kv-budget; idle: its own pages (committed - shared)
  uint64_t budget_bytes = 0;
  int32_t n_cached = 0;          // last request: prompt tokens reused from the slot's kept KV
};

struct EngineStats {
  std::vector<SlotInfo> slots;
  int queue_length = 0;
  uint64_t requests_total = 0, requests_cancelled = 0, requests_rejected = 0;
  uint64_t prompt_tokens_total = 0, generated_tokens_total = 0;
  double prompt_seconds_total = 0, generation_seconds_total = 0;
  uint64_t kv_reserved_bytes = 0, kv_committed_bytes = 0;  // committed: distinct, a shared page once
  uint64_t kv_shared_bytes = 0;  // bytes slots map from other slots (what sharing saves)
  uint64_t kv_budget_bytes = 0;       // 0: no budget (--kv-budget)
  uint64_t kv_budget_used_bytes = 0;  // sum of the slots' budget_bytes
  uint64_t kv_peak_committed_bytes = 0;
  uint64_t prompt_tokens_cached_total = 0;
  uint64_t scratch_bytes = 0;  // forward-pass activations
  uint64_t idle_releases = 0, weight_releases = 0;
  // Parking (--kv-park): the files and bytes on disk, and counts of writes, resumes and failures.
  uint64_t kv_parked_files = 0, kv_parked_bytes = 0;
  uint64_t kv_parks = 0, kv_resumes = 0, kv_park_failures = 0;
  bool weights_released = false;  // dropped by --idle-release-weights and not yet paged back
  uint64_t updates = 0;           // times the scheduler published these figures
};

// What the process holds, measured on demand (syscalls and /proc; safe from any thread).
struct MemoryReport {
  uint64_t kv_reserved = 0, kv_committed = 0;
  uint64_t kv_resident = 0;       // the KV arena's memory file allocation: each page once
  uint64_t weights_mapped = 0;    // size of the model file mapping
  uint64_t weights_resident = 0;  // this process's resident pages of it (/proc/self/smaps Rss)
  uint64_t rss = 0, rss_anon = 0, rss_file = 0;
  uint64_t rss_shmem = 0;  // memory files (the KV arena): a page counted for each address that maps it
};

// Result of a slot save/restore/erase.
struct SlotFileResult {
  int id = 0;
  std::string filename;
  int32_t n_tokens = 0;
  uint64_t n_bytes = 0;
  double ms = 0;
};

class Engine {
 public:
  // Loads the model and tokenizer, reserves (does not commit) the KV cache, starts the scheduler. With a
  // memory_budget the fixed cost is charged first: kResourceExhausted (with the figures) if it does not fit.
  static Result<std::unique_ptr<Engine>> Create(const EngineConfig& config);
  // What an engine of `config` charges a memory budget before any request (kv 0): the tensor bytes, the
  // scratch bound for its n_batch and slots, and the heap overhead estimate. Maps the file and reads its
  // header, commits nothing else.
  static Result<BudgetCharge> EstimateCharge(const EngineConfig& config);
  // The engine's current charge to its memory budget (all zero without one).
  BudgetCharge budget_charge() const;
  ~Engine();

  const Model& model() const { return *model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const EngineConfig& config() const { return config_; }
  int32_t n_ctx_slot() const { return n_ctx_slot_; }
  PoolingType pooling() const { return pooling_; }
  // Scores per rank request: the rows of the model's classifier head (cls.output), 0 if it has none.
  int32_t n_cls_out() const;

  // Queues a request. Immediate errors: the prompt does not fit a slot (kOutOfRange, both numbers in the
  // message), an empty prompt or bad parameter (kInvalidArgument), the queue is full (kUnavailable).
  Result<std::shared_ptr<RequestStream>> Submit(GenerationRequest request);

  EngineStats Stats() const;

  // The vocabulary as the grammar matcher reads it (engine/constrained.h). Built on first use, so a server
  // that never constrains output never pays for it.
  const ConstraintVocab& GrammarVocab() const;
  MemoryReport Memory() const;

  // Slot state (llama-server's POST /slots/{id}?action=...): the slot's tokens and their K/V rows, to or
  // from `filename` in --slot-save-path. They run on the scheduler thread between steps; a busy slot is
  // refused (kUnavailable). Errors: save path unset (kUnimplemented), bad file name or a truncated or
  // foreign file (kInvalidArgument), missing file (kNotFound), no room in --kv-budget (kResourceExhausted).
  // A restore that fails on its file (missing, truncated, foreign, ...) or on the budget leaves the slot
  // empty and usable; a bad file name or a busy slot leaves it untouched.
  Result<SlotFileResult> SaveSlot(int id, const std::string& filename);
  Result<SlotFileResult> RestoreSlot(int id, const std::string& filename);
  Result<SlotFileResult> EraseSlot(int id);

  // Releases now what the engine holds without using it: every idle slot's kept KV, and once no request is
  // running or queued the compute scratch and, with `weights`, the weights' resident pages (they page back
  // in from the page cache on the next request). Runs on the scheduler thread between steps; returns the
  // bytes released (KV + scratch + weight pages).
  Result<uint64_t> ReleaseIdle(bool weights);

 private:
  struct Impl;
  Engine() = default;
  EngineConfig config_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  int32_t n_ctx_slot_ = 0;
  PoolingType pooling_ = PoolingType::kMean;
  std::unique_ptr<Impl> impl_;
  mutable std::once_flag grammar_vocab_once_;
  mutable std::unique_ptr<ConstraintVocab> grammar_vocab_;
};

}  // namespace lazyslot
