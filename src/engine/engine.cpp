// Engine: model + tokenizer + KV cache + the scheduler thread. Each step builds one batch from every active
// slot (one token per generating slot, then prompt chunks up to n_batch) and runs one forward pass, so
// running generations keep flowing while long prompts are processed. Which slot a request gets, what KV it
// reuses and whether the budget lets it in is decided in memory_policy.cpp.
#include "engine/engine.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>

#include "core/log.h"
#include "core/vm.h"
#include "engine/engine_impl.h"
#include "engine/pooling.h"
#include "model/classifier.h"

namespace lazyslot {

bool RequestStream::Pop(Event* event, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  *event = std::move(events_.front());
  events_.pop_front();
  return true;
}

void RequestStream::Push(Event event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

Result<std::unique_ptr<Engine>> Engine::Create(const EngineConfig& config) {
  if (config.n_parallel < 1 || config.n_parallel > 256) {
    return InvalidArgument("--parallel must be between 1 and 256, got " + std::to_string(config.n_parallel));
  }
  if (config.n_ctx < config.n_parallel) {
    return InvalidArgument("--ctx-size " + std::to_string(config.n_ctx) + " gives no cells to each of " +
                           std::to_string(config.n_parallel) + " slots");
  }
  if (config.n_batch < 1) return InvalidArgument("--batch-size must be positive");
  if (config.kv_eager && config.kv_budget > 0) {
    return InvalidArgument(
        "--kv-budget cannot be combined with --kv-eager (eager mode commits the whole cache)");
  }
  if (config.kv_eager && config.kv_unified) {
    return InvalidArgument("--kv-unified cannot be combined with --kv-eager (eager mode commits every slot's "
                           "whole run; the unified pool is --ctx-size cells over all slots)");
  }
  if (config.kv_eager && config.memory_budget) {
    return InvalidArgument(
        "--memory-budget cannot be combined with --kv-eager (eager mode commits the whole "
        "cache)");
  }
  if (config.idle_timeout_s < 0 || config.idle_release_weights_s < 0) {
    return InvalidArgument("--idle-timeout and --idle-release-weights must not be negative");
  }
  std::unique_ptr<Engine> e(new Engine());
  e->config_ = config;
  LS_ASSIGN_OR_RETURN(
      e->model_, Model::Load(config.model_path,
                             {.threads = config.compute ? config.compute->pool.n_threads() : config.n_threads,
                              .huge_pages = !config.mmap}));
  LS_ASSIGN_OR_RETURN(e->tokenizer_, Tokenizer::FromGguf(e->model_->file()));
  const HParams& hp = e->model_->hparams();
  const bool encoder = e->model_->arch().encoder;
  // --kv-unified: every slot may grow to the whole context, within one pool of n_ctx cells (below).
  const bool unified = config.kv_unified && !encoder;
  e->n_ctx_slot_ = unified ? config.n_ctx : config.n_ctx / config.n_parallel;
  if (encoder && e->n_ctx_slot_ > hp.n_ctx_train) {
    // Learned positions end at n_ctx_train: no input can be longer.
    LS_LOG_INFO("%s: inputs of up to %d tokens (its learned positions; --ctx-size %d / --parallel %d = %d)",
                hp.arch.c_str(), hp.n_ctx_train, config.n_ctx, config.n_parallel, e->n_ctx_slot_);
    e->n_ctx_slot_ = hp.n_ctx_train;
  }
  if (config.pooling == PoolingType::kRank && hp.n_cls_out == 0) {
    return InvalidArgument("--rerank needs a model with a classifier head (cls.output.weight); " +
                           config.model_path + " has none");
  }
  e->pooling_ = config.pooling != PoolingType::kNone                                     ? config.pooling
                : (hp.pooling == PoolingType::kNone || hp.pooling == PoolingType::kRank) ? PoolingType::kMean
                                                                                         : hp.pooling;

  if (config.context_shift && (encoder || config.embeddings)) {
    return InvalidArgument("--context-shift applies to text generation; " + config.model_path +
                           (encoder ? " is an encoder (an embedding or rerank model)"
                                    : " serves --embeddings"));
  }
  if (config.context_shift && !hp.layer_window.empty() && !config.swa_full) {
    LS_LOG_WARN("--context-shift is off for %s: its sliding-window layers keep only their window, which a "
                "shift cannot move (--swa-full keeps every cell and allows it)",
                hp.arch.c_str());
    e->config_.context_shift = false;
  }

  auto impl = std::make_unique<Impl>();
  impl->engine = e.get();
  // An encoder keeps nothing between passes, so a slot costs no memory and is only a range of batch rows:
  // it gets at least kEncoderSlots of them, so short inputs of many requests share one pass.
  const int n_slots = encoder ? std::max(config.n_parallel, kEncoderSlots) : config.n_parallel;
  KvConfig kc;
  kc.n_layer = hp.n_layer;
  kc.n_slot = n_slots;
  kc.n_ctx_slot = e->n_ctx_slot_;
  kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
  // The cache keeps only the windows of local layers unless --swa-full asks for every cell (attention is
  // windowed either way: Forward reads the model's windows).
  if (!config.swa_full) kc.layer_window = hp.layer_window;
  kc.max_step = config.n_batch;
  if (encoder) {  // a placeholder the encoder never writes: one cell per slot, nothing committed
    kc.n_layer = 1;
    kc.n_ctx_slot = 1;
    kc.eager = false;
  }
  kc.head_dim = hp.head_dim;
  kc.type_k = config.cache_type_k;
  kc.type_v = config.cache_type_v;
  kc.eager = config.kv_eager && !encoder;
  kc.share_pages = config.kv_share;
  Result<std::unique_ptr<KvCache>> kv = KvCache::Create(kc);
  if (!kv.ok()) {
    return Status(kv.status().code(), "--cache-type-k " + std::string(TypeName(kc.type_k)) +
                                          " --cache-type-v " + TypeName(kc.type_v) + ": " +
                                          kv.status().message());
  }
  impl->kv = std::move(kv).value();
  const KvCache& c = *impl->kv;
  if (encoder) {
    LS_LOG_INFO("%s: an encoder, no KV cache; %d slots (batch row ranges), inputs of up to %d tokens",
                hp.arch.c_str(), n_slots, e->n_ctx_slot_);
  } else {
    LS_LOG_INFO(
        "kv cache: %d slots x %d cells, %s; K %s reserved %.1f MiB, V %s reserved %.1f MiB, "
        "committed %.1f MiB (%.1f KiB per token)",
        config.n_parallel, e->n_ctx_slot_, config.kv_eager ? "eager (committed and zeroed now)" : "lazy",
        TypeName(kc.type_k), MiB(c.reserved_bytes_k()), TypeName(kc.type_v), MiB(c.reserved_bytes_v()),
        MiB(c.committed_bytes()), (c.k_row_bytes() + c.v_row_bytes()) * hp.n_layer / 1024.0);
  }
  if (unified) {
    // The pool: n_ctx cells over all slots, as bytes (the budget's unit), plus the page each slot's runs may
    // round up to beyond its share; a --kv-budget below that caps it further.
    const uint64_t rounding = static_cast<uint64_t>(config.n_parallel - 1) * 2 * hp.n_layer * vm::PageSize();
    const uint64_t pool = c.BytesForCells(config.n_ctx) + rounding;
    e->config_.kv_budget = config.kv_budget > 0 ? std::min(config.kv_budget, pool) : pool;
    impl->grow = true;
    LS_LOG_INFO("kv unified: %d slots share one pool of %d cells (%.1f MiB); each may grow to all of it",
                config.n_parallel, config.n_ctx, MiB(pool));
  }
  const uint64_t budget = e->config_.kv_budget;
  impl->capacity_cells = e->n_ctx_slot_;
  if (budget > 0 && !encoder) {
    impl->capacity_cells = c.CellsForBytes(budget);
    if (impl->capacity_cells < 2) {
      return InvalidArgument("--kv-budget " + std::to_string(budget) + " bytes cannot hold even two " +
                             "tokens of one slot (" + std::to_string(c.BytesForCells(2)) + " bytes)");
    }
    LS_LOG_INFO(
        "kv budget: %.1f MiB over all slots (of %.1f MiB reserved); one request may use up to %d cells",
        MiB(budget), MiB(c.reserved_bytes()), impl->capacity_cells);
  }
  impl->model_id = ModelIdentity(*e->model_);
  if (!config.kv_park_dir.empty()) {
    if (encoder) return InvalidArgument("--kv-park: " + hp.arch + " is an encoder, which keeps no KV to park");
    if (config.kv_eager) {
      return InvalidArgument("--kv-park cannot be combined with --kv-eager (nothing is released)");
    }
    LS_ASSIGN_OR_RETURN(impl->park,
                        ParkStore::Open(config.kv_park_dir, config.kv_park_max, c, impl->model_id));
  } else if (config.kv_park_after_s > 0 || config.kv_park_max > 0) {
    return InvalidArgument("--kv-park-after and --kv-park-max need --kv-park DIR");
  }
  if (config.compute) {
    impl->pool = &config.compute->pool;
  } else {
    impl->own_pool = std::make_unique<ThreadPool>(config.n_threads);
    impl->pool = impl->own_pool.get();
  }
  if (config.memory_budget) {
    LS_RETURN_IF_ERROR(impl->OpenBudget(config, n_slots));
    e->config_.memory_account = impl->account;
  }
  if (encoder) {
    impl->enc = std::make_unique<Encoder>(*e->model_, *impl->pool);
  } else {
    impl->fwd =
        std::make_unique<Forward>(*e->model_, *impl->kv, *impl->pool,
                                  config.flash_attn ? AttentionMode::kFlash : AttentionMode::kStandard);
  }
  impl->slots.resize(n_slots);
  for (int i = 0; i < n_slots; ++i) impl->slots[i].id = i;
  impl->prefix_index = PrefixIndex(n_slots);
  impl->stats.kv_reserved_bytes = impl->kv->reserved_bytes();
  impl->stats.kv_budget_bytes = budget;
  if (config.warmup) {
    std::unique_lock<std::mutex> step_lock;
    if (config.compute) step_lock = std::unique_lock<std::mutex>(config.compute->step_mu);
    impl->Warmup();
  }
  impl->PublishSlotInfo();
  e->impl_ = std::move(impl);
  if (e->impl_->account) {
    Impl* p = e->impl_.get();
    p->waker = std::make_shared<BudgetWaker>([p] {
      p->budget_wake.store(true);
      p->cv.notify_all();
    });
    p->account->SetWaker(p->waker);
  }
  e->impl_->thread = std::thread([p = e->impl_.get()] { p->Loop(); });
  return e;
}

Engine::~Engine() {
  if (!impl_) return;
  if (impl_->waker) impl_->waker->Disarm();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  // Idle conversations outlive the process on disk (--kv-park): the next one of this model resumes them.
  for (auto& s : impl_->slots) impl_->ParkSlot(s, "shutdown");
  Event ev;
  ev.type = Event::kError;
  ev.error = Unavailable("server is shutting down");
  for (auto& p : impl_->queue) p.stream->Push(ev);
  for (auto& s : impl_->slots) {
    if (s.busy()) s.stream->Push(ev);
  }
  for (auto& t : impl_->slot_tasks) t->result.set_value(ev.error);
  if (impl_->account) {
    // The budget is refunded (with config_, last) only once the memory is gone: the KV arena, the scratch,
    // the weights' mapping and the heap, which malloc_trim hands back to the kernel.
    impl_->account->StopWaiting();
    impl_.reset();
    grammar_vocab_.reset();
    tokenizer_.reset();
    model_.reset();
    malloc_trim(0);
  }
}

Result<std::shared_ptr<RequestStream>> Engine::Submit(GenerationRequest req) {
  if (req.prompt.empty()) return InvalidArgument("the prompt is empty (no tokens)");
  for (TokenId t : req.prompt) {
    if (t < 0 || t >= model_->hparams().n_vocab) {
      return InvalidArgument("token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                             std::to_string(model_->hparams().n_vocab) + ")");
    }
  }
  if (impl_->enc && !req.embedding) {
    return Unimplemented("the model is an encoder (" + model_->hparams().arch +
                         "): it computes embeddings and rank scores, not text");
  }
  if (req.embedding && req.pooling == PoolingType::kRank && model_->hparams().n_cls_out == 0) {
    return InvalidArgument("rank pooling needs a classifier head (cls.output.weight), which the model lacks");
  }
  const int32_t n_prompt = static_cast<int32_t>(req.prompt.size());
  // A completion needs room for at least one generated token; an embedding only for its prompt.
  const int32_t need = req.embedding ? n_prompt : n_prompt + 1;
  auto reject = [&](Status st) -> Result<std::shared_ptr<RequestStream>> {
    std::lock_guard<std::mutex> lock(impl_->mu);
    ++impl_->stats.requests_rejected;
    return st;
  };
  if (need > n_ctx_slot_) {
    return reject(OutOfRange("the prompt has " + std::to_string(n_prompt) +
                             " tokens, but a slot's context holds " + std::to_string(n_ctx_slot_) +
                             (req.embedding ? "" : " (including at least one generated token)")));
  }
  if (impl_->account) {
    // It could never fit, even with every other model's memory released.
    const BudgetCharge& f = impl_->fixed;
    const uint64_t kv_need = impl_->enc ? 0 : impl_->kv->BytesForCells(need);
    const uint64_t limit = impl_->account->budget().limit();
    if (f.total() + kv_need > limit) {
      return reject(ResourceExhausted(
          "the request needs " + std::to_string(f.total() + kv_need) + " bytes under --memory-budget " +
          std::to_string(limit) + ": " + std::to_string(kv_need) + " bytes of KV for " +
          std::to_string(need) + " cells and the model's own " + std::to_string(f.total()) + " (" +
          DescribeCharge(f) + "); the budget now holds " + impl_->account->budget().Describe()));
    }
  }
  if (need > impl_->capacity_cells) {
    // It could never fit, even alone with every other slot's KV released.
    const KvCache& kv = *impl_->kv;
    return reject(ResourceExhausted(
        "the request needs at least " + std::to_string(need) + " KV cells (" + std::to_string(n_prompt) +
        " prompt tokens" + (req.embedding ? "" : " + 1 generated") +
        ") = " + std::to_string(kv.BytesForCells(need)) + " bytes of KV, but --kv-budget is " +
        std::to_string(config_.kv_budget) + " bytes, which holds at most " +
        std::to_string(impl_->capacity_cells) + " cells in one slot"));
  }
  const int n_slots = static_cast<int>(impl_->slots.size());
  if (req.id_slot >= n_slots) {
    return InvalidArgument("id_slot: slot " + std::to_string(req.id_slot) + " does not exist (slots 0.." +
                           std::to_string(n_slots - 1) + ")");
  }
  if (req.embedding && req.pooling == PoolingType::kNone) req.pooling = pooling_;
  std::shared_ptr<RequestStream> stream;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (static_cast<int>(impl_->queue.size()) >= config_.max_queue) {
      ++impl_->stats.requests_rejected;
      return Unavailable("the server is busy: " + std::to_string(impl_->queue.size()) +
                         " requests are already waiting (--max-queue " + std::to_string(config_.max_queue) +
                         ")");
    }
    stream = std::make_shared<RequestStream>(impl_->next_id++);
    impl_->queue.push_back({std::move(req), stream});
    ++impl_->stats.requests_total;
  }
  impl_->cv.notify_all();
  return stream;
}

int32_t Engine::n_cls_out() const { return model_->hparams().n_cls_out; }

const ConstraintVocab& Engine::GrammarVocab() const {
  std::call_once(grammar_vocab_once_, [this] {
    const Clock::time_point t0 = Clock::now();
    grammar_vocab_ = std::make_unique<ConstraintVocab>(*tokenizer_);
    LS_LOG_INFO("grammar: vocabulary index of %d tokens built in %.1f ms", tokenizer_->n_vocab(),
                MsSince(t0));
  });
  return *grammar_vocab_;
}

EngineStats Engine::Stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  EngineStats s = impl_->stats;
  s.queue_length = static_cast<int>(impl_->queue.size());
  return s;
}

MemoryReport Engine::Memory() const {
  MemoryReport m;
  const KvCache& kv = *impl_->kv;
  m.kv_reserved = kv.reserved_bytes();
  m.kv_committed = Stats().kv_committed_bytes;
  Result<uint64_t> resident = kv.ResidentBytes();
  if (resident.ok()) m.kv_resident = *resident;
  const gguf::File& f = model_->file();
  m.weights_mapped = f.file_size();
  Result<uint64_t> w = f.ResidentBytes();
  if (w.ok()) m.weights_resident = *w;
  const vm::ProcessMemory p = vm::ReadProcessMemory();
  m.rss = p.rss;
  m.rss_anon = p.rss_anon;
  m.rss_file = p.rss_file;
  m.rss_shmem = p.rss_shmem;
  return m;
}

bool Engine::Impl::AnyBusy() const {
  for (const Slot& s : slots) {
    if (s.busy()) return true;
  }
  return false;
}

void Engine::Impl::PublishSlotInfo() {
  std::vector<SlotInfo> info(slots.size());
  uint64_t budget_used = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    const Slot& s = slots[i];
    info[i].id = s.id;
    info[i].busy = s.busy();
    info[i].request_id = s.busy() ? s.stream->id() : 0;
    info[i].n_tokens = kv->n_cells(s.id);
    info[i].n_ctx = engine->n_ctx_slot_;
    info[i].committed_bytes = kv->committed_bytes(s.id);
    info[i].shared_bytes = kv->shared_bytes(s.id);
    info[i].budget_bytes = SlotBudgetBytes(s);
    info[i].n_cached = s.n_cached;
    budget_used += info[i].budget_bytes;
  }
  const uint64_t committed = kv->committed_bytes();
  const size_t scratch = scratch_bytes();
  SyncKvCharge();
  std::lock_guard<std::mutex> lock(mu);
  stats.slots = std::move(info);
  stats.kv_committed_bytes = committed;
  stats.kv_shared_bytes = kv->shared_bytes();
  stats.kv_peak_committed_bytes = kv->peak_committed_bytes();
  stats.kv_budget_used_bytes = budget_used;
  if (park) {
    stats.kv_parked_files = park->files();
    stats.kv_parked_bytes = park->bytes();
    stats.kv_parks = park->counters().parks;
    stats.kv_resumes = park->counters().resumes;
    stats.kv_park_failures = park->counters().failures;
  }
  stats.scratch_bytes = scratch;
  stats.weights_released = weights_released;
  ++stats.updates;
}

void Engine::Impl::Loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu);
      for (;;) {
        if (stop) return;
        if (!slot_tasks.empty()) break;
        budget_wake.store(false);
        AdmitQueued();
        if (AnyBusy()) break;
        // Nothing to run: sleep until new work arrives or an idle release falls due. A request waiting for
        // the shared budget is retried when the budget wakes this thread (a refund), and at least every
        // 50 ms, since a wake-up may come between the admission above and this wait.
        if (budget_wake.load()) continue;
        const std::optional<Clock::time_point> due = NextIdleDeadline();
        if (budget_blocked && !queue.empty()) {
          cv.wait_for(lock, std::chrono::milliseconds(50));
        } else if (!due) {
          cv.wait(lock);
        } else if (cv.wait_until(lock, *due) == std::cv_status::timeout && queue.empty() &&
                   slot_tasks.empty()) {
          lock.unlock();
          IdleRelease(Clock::now());
          PublishSlotInfo();
          lock.lock();
        }
      }
    }
    RunSlotTasks();
    if (AnyBusy()) {
      MarkWork();
      {
        std::unique_lock<std::mutex> step_lock;  // another model's step runs first, whole
        if (engine->config_.compute)
          step_lock = std::unique_lock<std::mutex>(engine->config_.compute->step_mu);
        Step();
      }
      LogFirstCommits();
      last_work = Clock::now();
      ParkIdleSlots(last_work);  // --kv-park-after: idle slots beside busy ones
      if (enc && !AnyBusy()) ReleaseEncoderScratch();
    }
    PublishSlotInfo();
  }
}

void Engine::Impl::Step() {
  const Engine& e = *engine;
  // Cancelled requests free their slot before any work is spent on them (their KV stays for reuse).
  for (Slot& s : slots) {
    if (s.busy() && s.stream->cancelled()) {
      {
        std::lock_guard<std::mutex> lock(mu);
        ++stats.requests_cancelled;
      }
      Release(s, s.req.cache_prompt && !s.req.embedding);
    }
  }
  Batch batch;
  int32_t budget = e.config_.n_batch;
  for (Slot& s : slots) {
    if (s.busy() && !s.in_prompt() && budget > 0) {
      batch.Add(s.next_token, kv->n_cells(s.id), s.id, Batch::kLogits);
      --budget;
    }
  }
  const int32_t n_decode = batch.size();  // generating slots; the rest of the batch is prompt
  const std::vector<int> progress = AddPrompts(batch, budget);  // slots whose prompt advanced and report it
  if (batch.size() == 0) return;

  ForwardOutput out;
  const Clock::time_point t0 = Clock::now();
  Status st = enc ? enc->Run(batch, &out) : fwd->Run(batch, &out);
  const double ms = MsSince(t0);
  if (!st.ok()) {
    LS_LOG_ERROR("forward pass failed: %s", st.ToString().c_str());
    for (Slot& s : slots) {
      if (s.busy()) Fail(s, st);
    }
    return;
  }
  // The batch's tokens now hold cells: they are what a later request may reuse (an encoder keeps none).
  if (!enc) {
    for (int32_t i = 0; i < batch.size(); ++i) {
      Slot& s = slots[batch.slot[i]];
      s.cache.push_back(batch.tokens[i]);
      // After a slot's last token of the batch, its new whole blocks go into the prefix index (not after a
      // context shift: those cells were computed beside tokens that are gone).
      if ((i + 1 == batch.size() || batch.slot[i + 1] != batch.slot[i]) && s.shift_keep < 0) {
        prefix_index.Extend(s.id, s.cache, s.cache_scope);
      }
    }
  }
  for (int id : progress) {
    Slot& s = slots[id];
    Event ev;
    ev.type = Event::kProgress;
    ev.slot = s.id;
    ev.n_prompt = static_cast<int32_t>(s.req.prompt.size());
    ev.n_prompt_processed = s.n_prompt_done;
    ev.n_cached = s.n_cached;
    ev.prompt_ms = MsSince(s.t_start);
    s.stream->Push(std::move(ev));
  }
  const int32_t n_prompt_tokens = batch.size() - n_decode;
  int32_t n_gen_tokens = 0;
  const int64_t n_embd = e.model_->hparams().n_embd;
  for (size_t r = 0; r < out.hidden_rows.size(); ++r) {
    Slot& s = slots[batch.slot[out.hidden_rows[r]]];
    s.hidden.insert(s.hidden.end(), out.hidden.begin() + r * n_embd, out.hidden.begin() + (r + 1) * n_embd);
  }
  for (size_t r = 0; r < out.logit_rows.size(); ++r) {
    Slot& s = slots[batch.slot[out.logit_rows[r]]];
    const bool first = s.n_generated == 0;
    if (first) s.t_first = Clock::now();
    const int32_t n_vocab = e.model_->hparams().n_vocab;
    const float* logits = out.logits.data() + r * n_vocab;
    TokenId tok = -1;
    if (s.constrained) {
      // Tokens this request may still have: its slot's room, and max_tokens.
      int32_t left = s.limit_cells - kv->n_cells(s.id);
      if (s.req.n_predict >= 0) left = std::min(left, s.req.n_predict - s.n_generated);
      Result<TokenId> picked = s.constrained->Pick(*s.sampler, logits, n_vocab, e.GrammarVocab(),
                                                   *e.tokenizer_, left, &grammar_logits, &grammar_mask);
      if (!picked.ok()) {
        Fail(s, picked.status());
        continue;
      }
      tok = *picked;
    } else {
      tok = s.sampler->Sample(logits, n_vocab);
    }
    if (s.req.n_probs >= 0) {
      if (s.req.post_sampling_probs) {
        SamplerProbs(*s.sampler, tok, s.req.n_probs, &s.token_logprob, &s.token_top);
      } else {
        TokenLogprobs(logits, n_vocab, tok, s.req.n_probs, &s.token_logprob, &s.token_top);
      }
    }
    ++n_gen_tokens;
    OnToken(s, tok);
  }
  FinishEmbeddings();
  std::lock_guard<std::mutex> lock(mu);
  stats.prompt_tokens_total += n_prompt_tokens;
  stats.generated_tokens_total += n_gen_tokens;
  // A mixed step is counted as prompt time: it is dominated by the prompt chunk.
  (n_prompt_tokens == 0 ? stats.generation_seconds_total : stats.prompt_seconds_total) += ms / 1000.0;
}

void Engine::Impl::ReleaseEncoderScratch() {
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const Pending& p : queue) {
      if (!p.stream->cancelled()) return;  // the next pass reuses the buffers
    }
  }
  // An encoder keeps nothing between requests: its activations, which grow with the largest pass, go back
  // to the kernel as soon as no work is left, so a long input leaves no larger scratch behind.
  enc->ReleaseScratch();
  malloc_trim(0);
}

std::vector<int> Engine::Impl::AddPrompts(Batch& batch, int32_t budget) {
  std::vector<int> progress;
  // Slots in admission order, oldest first: an encoder's long input that waited for room goes first in the
  // next pass, so a stream of short inputs cannot keep it waiting.
  std::vector<Slot*> order;
  for (Slot& s : slots) {
    if (s.busy() && s.in_prompt()) order.push_back(&s);
  }
  if (enc) {
    std::stable_sort(order.begin(), order.end(),
                     [](const Slot* a, const Slot* b) { return a->t_start < b->t_start; });
  }
  for (Slot* sp : order) {
    Slot& s = *sp;
    if (budget <= 0) break;
    const int32_t n_prompt = static_cast<int32_t>(s.req.prompt.size());
    int32_t take = std::min(budget, n_prompt - s.n_prompt_done);
    if (enc && take < n_prompt) {
      if (batch.size() > 0) continue;  // it waits for a pass with room for all of it
      take = n_prompt;
    }
    // Embedding rows to return: every row for mean pooling or unpooled output, else the pooled one (the
    // first token for cls and rank, the last for last and, as llama.cpp, for a qwen3 reranker's rank).
    const bool first_row = s.req.pooling == PoolingType::kCls ||
                           (s.req.pooling == PoolingType::kRank && !LastTokenRanks(*engine->model_));
    for (int32_t i = s.n_prompt_done; i < s.n_prompt_done + take; ++i) {
      uint8_t flag = Batch::kNone;
      if (s.req.embedding) {
        const bool want =
            s.req.unpooled || s.req.pooling == PoolingType::kMean || (first_row ? i == 0 : i == n_prompt - 1);
        if (want) flag = Batch::kHidden;
      } else if (i == n_prompt - 1) {
        flag = Batch::kLogits;
      }
      batch.Add(s.req.prompt[i], i, s.id, flag);
    }
    s.n_prompt_done += take;
    budget -= take;
    if (s.req.return_progress) progress.push_back(s.id);
  }
  return progress;
}

void Engine::Impl::FinishEmbeddings() {
  const Engine& e = *engine;
  const int64_t n_embd = e.model_->hparams().n_embd;
  for (Slot& s : slots) {
    if (!s.busy() || !s.req.embedding || s.in_prompt()) continue;
    const int64_t rows = static_cast<int64_t>(s.hidden.size()) / n_embd;
    Event done;
    done.type = Event::kDone;
    done.finish_reason = "stop";
    done.slot = s.id;
    done.n_prompt = static_cast<int32_t>(s.req.prompt.size());
    if (s.req.unpooled) {
      done.embedding = std::move(s.hidden);
    } else if (s.req.pooling == PoolingType::kRank) {
      done.embedding = ClassifierScores(*e.model_, *pool, s.hidden.data(), 1);
    } else {
      done.embedding = PoolEmbedding(s.req.pooling, s.hidden.data(), rows, n_embd);
    }
    done.prompt_ms = MsSince(s.t_start);
    s.stream->Push(std::move(done));
    Release(s, false);
  }
}

void Engine::Impl::OnToken(Slot& s, TokenId tok) {
  const Tokenizer& tk = *engine->tokenizer_;
  s.sampler->Accept(tok);
  ++s.n_generated;
  // Under a grammar an end-of-generation token is sampled only where the grammar may end, so it ends the
  // output even with ignore_eos.
  if ((!s.req.ignore_eos || s.constrained) && tk.IsEog(tok)) {
    Finish(s, "stop");
    return;
  }
  const bool eog = tk.IsEog(tok);
  const std::string piece = tk.TokenToPiece(tok, false);
  if (s.constrained) s.constrained->Advance(eog ? std::string() : piece);
  bool hit_stop = false;
  std::string text = s.text.Append(piece, &hit_stop);
  if (!text.empty() || !hit_stop) {
    Event ev;
    ev.type = Event::kToken;
    ev.token = tok;
    ev.slot = s.id;
    ev.text = std::move(text);
    // The timings so far (llama-server's timings_per_token): the prompt and the generation until now.
    ev.n_prompt = static_cast<int32_t>(s.req.prompt.size());
    ev.n_cached = s.n_cached;
    ev.n_generated = s.n_generated;
    ev.prompt_ms = std::chrono::duration<double, std::milli>(s.t_first - s.t_start).count();
    ev.generation_ms = MsSince(s.t_first);
    if (s.req.n_probs >= 0) {
      ev.logprob = s.token_logprob;
      ev.top_logprobs = std::move(s.token_top);
    }
    s.stream->Push(std::move(ev));
  }
  if (hit_stop || (s.constrained && s.constrained->MustEnd())) {
    Finish(s, "stop");
  } else if (s.req.n_predict >= 0 && s.n_generated >= s.req.n_predict) {
    Finish(s, "length");
  } else if ((kv->n_cells(s.id) + 1 >= engine->n_ctx_slot_ ||
              (kv->n_cells(s.id) + 1 > s.limit_cells && !GrowReservation(s))) &&
             !ShiftContext(s)) {
    // The context is full, as llama-server counts it (it never fills the slot's last cell), or the
    // request's share of --kv-budget is (with --kv-unified: it could not grow into the pool), and no
    // --context-shift made room: the generation is truncated.
    Finish(s, "length", true);
  } else {
    s.next_token = tok;
  }
}

void Engine::Impl::Finish(Slot& s, const std::string& reason, bool truncated) {
  if (s.constrained) {
    LS_LOG_DEBUG("slot %d: grammar %s; %lld tokens checked, %lld needed a full mask, %lld closing", s.id,
                 s.constrained->active() ? "active" : "not triggered",
                 static_cast<long long>(s.constrained->n_checked()),
                 static_cast<long long>(s.constrained->n_masked()),
                 static_cast<long long>(s.constrained->n_closing()));
  }
  std::string rest = s.text.Flush();
  if (!rest.empty()) {
    Event ev;
    ev.type = Event::kToken;
    ev.text = std::move(rest);
    s.stream->Push(std::move(ev));
  }
  Event done;
  done.type = Event::kDone;
  done.finish_reason = reason;
  done.stop_word = s.text.matched();
  done.truncated = truncated || s.shift_keep >= 0;  // a context shift dropped part of it
  done.slot = s.id;
  done.n_prompt = static_cast<int32_t>(s.req.prompt.size());
  done.n_generated = s.n_generated;
  done.n_cached = s.n_cached;
  done.prompt_ms = std::chrono::duration<double, std::milli>(s.t_first - s.t_start).count();
  done.generation_ms = MsSince(s.t_first);
  s.stream->Push(std::move(done));
  Release(s, s.req.cache_prompt);
}

void Engine::Impl::Fail(Slot& s, const Status& st) {
  Event ev;
  ev.type = Event::kError;
  ev.error = st;
  s.stream->Push(std::move(ev));
  Release(s, false);
}

void Engine::Impl::Release(Slot& s, bool keep_cache) {
  s.stream.reset();
  s.sampler.reset();
  s.constrained.reset();
  s.budget_bytes = 0;
  s.last_used = ++tick;
  std::vector<float>().swap(s.hidden);
  // Without prompt caching the slot's cells are dropped and their pages returned to the kernel at once.
  s.idle_since = Clock::now();
  if (!keep_cache) {
    TrimSlot(s, 0, "request done, cache_prompt off", /*park_first=*/false);
  } else if (s.shift_keep >= 0) {
    TrimSlot(s, s.shift_keep, "request done after a context shift", /*park_first=*/false);
  }
  s.shift_keep = -1;
}

bool Engine::Impl::ShiftContext(Slot& s) {
  if (!engine->config_.context_shift) return false;
  const int32_t n = kv->n_cells(s.id);
  const int32_t cells = std::min(engine->n_ctx_slot_, s.limit_cells);
  int32_t n_keep = s.req.n_keep < 0 ? static_cast<int32_t>(s.req.prompt.size()) : s.req.n_keep;
  if (engine->tokenizer_->add_bos()) ++n_keep;
  n_keep = std::max(0, std::min(cells - 4, n_keep));
  const int32_t n_left = n - n_keep;
  const int32_t n_discard = std::clamp(s.req.n_discard > 0 ? s.req.n_discard : n_left / 2, 0,
                                       std::max(0, n_left - 1));
  if (n_discard <= 0) return false;
  const Status st = kv->DropCells(s.id, n_keep, n_discard);
  if (!st.ok()) {
    LS_LOG_WARN("slot %d: context shift failed: %s", s.id, st.message().c_str());
    return false;
  }
  fwd->ShiftKeys(s.id, n_keep, n - n_discard, n_discard);
  s.cache.erase(s.cache.begin() + n_keep, s.cache.begin() + n_keep + n_discard);
  prefix_index.Truncate(s.id, n_keep);
  s.shift_keep = s.shift_keep < 0 ? n_keep : std::min(s.shift_keep, n_keep);
  LS_LOG_INFO("slot %d: context shift: kept the first %d cells, dropped %d, %d left of %d", s.id, n_keep,
              n_discard, n - n_discard, cells);
  return true;
}

}  // namespace lazyslot
