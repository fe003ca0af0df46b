// Engine: model + tokenizer + KV cache + the scheduler thread. Each step builds one batch from every active
// slot (one token per generating slot, then prompt chunks up to n_batch) and runs one forward pass, so
// running generations keep flowing while long prompts are processed.
#include "engine/engine.h"

#include <algorithm>
#include <chrono>

#include "core/log.h"
#include "engine/pooling.h"
#include "engine/text_output.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "ops/thread_pool.h"

namespace lazyslot {
namespace {
using Clock = std::chrono::steady_clock;
double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}
}  // namespace

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
    TextOutput text;
    std::vector<float> hidden;  // embedding requests: hidden rows of the prompt, [n, n_embd]
    Clock::time_point t_start, t_first;
    bool busy() const { return stream != nullptr; }
    bool in_prompt() const { return n_prompt_done < static_cast<int32_t>(req.prompt.size()); }
  };

  Engine* engine;
  std::unique_ptr<KvCache> kv;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Forward> fwd;
  std::vector<Slot> slots;
  std::thread thread;

  mutable std::mutex mu;  // guards queue, stop, stats, slot_info
  std::condition_variable cv;
  std::deque<Pending> queue;
  bool stop = false;
  uint64_t next_id = 1;
  EngineStats stats;  // counters; slots and kv figures refreshed each step

  void Loop();
  void Step();
  void Finish(Slot& s, const std::string& reason);
  void Fail(Slot& s, const Status& st);
  void Release(Slot& s);
  void OnToken(Slot& s, TokenId tok);
  void PublishSlotInfo();
};

Result<std::unique_ptr<Engine>> Engine::Create(const EngineConfig& config) {
  if (config.n_parallel < 1 || config.n_parallel > 256) {
    return InvalidArgument("--parallel must be between 1 and 256, got " + std::to_string(config.n_parallel));
  }
  if (config.n_ctx < config.n_parallel) {
    return InvalidArgument("--ctx-size " + std::to_string(config.n_ctx) + " gives no cells to each of " +
                           std::to_string(config.n_parallel) + " slots");
  }
  if (config.n_batch < 1) return InvalidArgument("--batch-size must be positive");
  std::unique_ptr<Engine> e(new Engine());
  e->config_ = config;
  LS_ASSIGN_OR_RETURN(e->model_, Model::Load(config.model_path));
  LS_ASSIGN_OR_RETURN(e->tokenizer_, Tokenizer::FromGguf(e->model_->file()));
  const HParams& hp = e->model_->hparams();
  e->n_ctx_slot_ = config.n_ctx / config.n_parallel;
  e->pooling_ = config.pooling != PoolingType::kNone ? config.pooling
                : (hp.pooling == PoolingType::kNone || hp.pooling == PoolingType::kRank) ? PoolingType::kMean
                                                                                          : hp.pooling;

  auto impl = std::make_unique<Impl>();
  impl->engine = e.get();
  KvConfig kc;
  kc.n_layer = hp.n_layer;
  kc.n_slot = config.n_parallel;
  kc.n_ctx_slot = e->n_ctx_slot_;
  kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
  kc.type_k = config.cache_type_k;
  kc.type_v = config.cache_type_v;
  kc.eager = config.kv_eager;
  LS_ASSIGN_OR_RETURN(impl->kv, KvCache::Create(kc));
  LS_LOG_INFO("kv cache: %d slots x %d cells, %s K / %s V, reserved %.1f MiB, committed %.1f MiB%s",
              config.n_parallel, e->n_ctx_slot_, TypeName(kc.type_k), TypeName(kc.type_v),
              impl->kv->reserved_bytes() / 1048576.0, impl->kv->committed_bytes() / 1048576.0,
              config.kv_eager ? " (eager)" : "");
  impl->pool = std::make_unique<ThreadPool>(config.n_threads);
  impl->fwd = std::make_unique<Forward>(*e->model_, *impl->kv, *impl->pool,
                                        config.flash_attn ? AttentionMode::kFlash : AttentionMode::kStandard);
  impl->slots.resize(config.n_parallel);
  for (int i = 0; i < config.n_parallel; ++i) impl->slots[i].id = i;
  impl->stats.kv_reserved_bytes = impl->kv->reserved_bytes();
  impl->PublishSlotInfo();
  e->impl_ = std::move(impl);
  e->impl_->thread = std::thread([p = e->impl_.get()] { p->Loop(); });
  return e;
}

Engine::~Engine() {
  if (!impl_) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  Event ev;
  ev.type = Event::kError;
  ev.error = Unavailable("server is shutting down");
  for (auto& p : impl_->queue) p.stream->Push(ev);
  for (auto& s : impl_->slots) {
    if (s.busy()) s.stream->Push(ev);
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
  const int32_t n_prompt = static_cast<int32_t>(req.prompt.size());
  // A completion needs room for at least one generated token; an embedding only for its prompt.
  const int32_t need = req.embedding ? n_prompt : n_prompt + 1;
  if (need > n_ctx_slot_) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    ++impl_->stats.requests_rejected;
    return OutOfRange("the prompt has " + std::to_string(n_prompt) + " tokens, but a slot's context holds " +
                      std::to_string(n_ctx_slot_) + (req.embedding ? "" : " (including at least one generated token)"));
  }
  if (req.embedding && req.pooling == PoolingType::kNone) req.pooling = pooling_;
  std::shared_ptr<RequestStream> stream;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (static_cast<int>(impl_->queue.size()) >= config_.max_queue) {
      ++impl_->stats.requests_rejected;
      return Unavailable("the server is busy: " + std::to_string(impl_->queue.size()) +
                         " requests are already waiting (--max-queue " + std::to_string(config_.max_queue) + ")");
    }
    stream = std::make_shared<RequestStream>(impl_->next_id++);
    impl_->queue.push_back({std::move(req), stream});
    ++impl_->stats.requests_total;
  }
  impl_->cv.notify_all();
  return stream;
}

EngineStats Engine::Stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  EngineStats s = impl_->stats;
  s.queue_length = static_cast<int>(impl_->queue.size());
  return s;
}

void Engine::Impl::PublishSlotInfo() {
  std::vector<SlotInfo> info(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    const Slot& s = slots[i];
    info[i].id = s.id;
    info[i].busy = s.busy();
    info[i].request_id = s.busy() ? s.stream->id() : 0;
    info[i].n_tokens = kv->n_cells(s.id);
    info[i].n_ctx = kv->config().n_ctx_slot;
    info[i].committed_bytes = kv->committed_bytes(s.id);
  }
  std::lock_guard<std::mutex> lock(mu);
  stats.slots = std::move(info);
  stats.kv_committed_bytes = kv->committed_bytes();
}

void Engine::Impl::Loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu);
      auto has_work = [&] {
        if (stop) return true;
        bool any_busy = false, any_free = false;
        for (const Slot& s : slots) (s.busy() ? any_busy : any_free) = true;
        return any_busy || (any_free && !queue.empty());
      };
      cv.wait(lock, has_work);
      if (stop) return;
      // Admit queued requests into free slots, first come first served.
      for (Slot& s : slots) {
        if (s.busy()) continue;
        while (!queue.empty() && queue.front().stream->cancelled()) {
          ++stats.requests_cancelled;
          queue.pop_front();
        }
        if (queue.empty()) break;
        Pending p = std::move(queue.front());
        queue.pop_front();
        s.req = std::move(p.req);
        s.stream = std::move(p.stream);
        s.n_prompt_done = 0;
        s.n_generated = 0;
        s.next_token = -1;
        s.sampler = std::make_unique<Sampler>(s.req.sampling);
        for (TokenId t : s.req.prompt) s.sampler->Accept(t);
        s.text = TextOutput(s.req.stop);
        s.hidden.clear();
        s.t_start = Clock::now();
      }
    }
    Step();
    PublishSlotInfo();
  }
}

void Engine::Impl::Step() {
  const Engine& e = *engine;
  // Cancelled requests free their slot before any work is spent on them.
  for (Slot& s : slots) {
    if (s.busy() && s.stream->cancelled()) {
      {
        std::lock_guard<std::mutex> lock(mu);
        ++stats.requests_cancelled;
      }
      Release(s);
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
  for (Slot& s : slots) {
    if (!s.busy() || !s.in_prompt() || budget <= 0) continue;
    const int32_t n_prompt = static_cast<int32_t>(s.req.prompt.size());
    const int32_t take = std::min(budget, n_prompt - s.n_prompt_done);
    for (int32_t i = s.n_prompt_done; i < s.n_prompt_done + take; ++i) {
      uint8_t flag = Batch::kNone;
      if (s.req.embedding) {
        const bool want = s.req.pooling == PoolingType::kMean || (s.req.pooling == PoolingType::kCls && i == 0) ||
                          (s.req.pooling != PoolingType::kCls && i == n_prompt - 1);
        if (want) flag = Batch::kHidden;
      } else if (i == n_prompt - 1) {
        flag = Batch::kLogits;
      }
      batch.Add(s.req.prompt[i], i, s.id, flag);
    }
    s.n_prompt_done += take;
    budget -= take;
  }
  if (batch.size() == 0) return;

  ForwardOutput out;
  const Clock::time_point t0 = Clock::now();
  Status st = fwd->Run(batch, &out);
  const double ms = MsSince(t0);
  if (!st.ok()) {
    LS_LOG_ERROR("forward pass failed: %s", st.ToString().c_str());
    for (Slot& s : slots) {
      if (s.busy()) Fail(s, st);
    }
    return;
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
    const TokenId tok = s.sampler->Sample(out.logits.data() + r * e.model_->hparams().n_vocab, e.model_->hparams().n_vocab);
    ++n_gen_tokens;
    OnToken(s, tok);
  }
  for (Slot& s : slots) {
    if (s.busy() && s.req.embedding && !s.in_prompt()) {
      const int64_t rows = static_cast<int64_t>(s.hidden.size()) / n_embd;
      Event done;
      done.type = Event::kDone;
      done.finish_reason = "stop";
      done.n_prompt = static_cast<int32_t>(s.req.prompt.size());
      done.embedding = PoolEmbedding(s.req.pooling == PoolingType::kNone ? e.pooling_ : s.req.pooling,
                                     s.hidden.data(), rows, n_embd);
      done.prompt_ms = MsSince(s.t_start);
      s.stream->Push(std::move(done));
      Release(s);
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  stats.prompt_tokens_total += n_prompt_tokens;
  stats.generated_tokens_total += n_gen_tokens;
  // A mixed step is counted as prompt time: it is dominated by the prompt chunk.
  (n_prompt_tokens == 0 ? stats.generation_seconds_total : stats.prompt_seconds_total) += ms / 1000.0;
}

void Engine::Impl::OnToken(Slot& s, TokenId tok) {
  const Tokenizer& tk = *engine->tokenizer_;
  s.sampler->Accept(tok);
  ++s.n_generated;
  if (!s.req.ignore_eos && tk.IsEog(tok)) {
    Finish(s, "stop");
    return;
  }
  bool hit_stop = false;
  std::string text = s.text.Append(tk.TokenToPiece(tok, false), &hit_stop);
  if (!text.empty() || !hit_stop) {
    Event ev;
    ev.type = Event::kToken;
    ev.token = tok;
    ev.text = std::move(text);
    s.stream->Push(std::move(ev));
  }
  if (hit_stop) {
    Finish(s, "stop");
  } else if (s.req.n_predict >= 0 && s.n_generated >= s.req.n_predict) {
    Finish(s, "length");
  } else if (kv->n_cells(s.id) + 1 > kv->config().n_ctx_slot) {
    Finish(s, "length");  // the slot is full: the sampled token has no cell to go to
  } else {
    s.next_token = tok;
  }
}

void Engine::Impl::Finish(Slot& s, const std::string& reason) {
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
  done.n_prompt = static_cast<int32_t>(s.req.prompt.size());
  done.n_generated = s.n_generated;
  done.prompt_ms = std::chrono::duration<double, std::milli>(s.t_first - s.t_start).count();
  done.generation_ms = MsSince(s.t_first);
  s.stream->Push(std::move(done));
  Release(s);
}

void Engine::Impl::Fail(Slot& s, const Status& st) {
  Event ev;
  ev.type = Event::kError;
  ev.error = st;
  s.stream->Push(std::move(ev));
  Release(s);
}

void Engine::Impl::Release(Slot& s) {
  s.stream.reset();
  s.sampler.reset();
  std::vector<float>().swap(s.hidden);
  // The slot's cells are dropped and their pages returned to the kernel at once.
  Result<uint64_t> st = kv->Trim(s.id, 0);
  if (!st.ok()) LS_LOG_WARN("slot %d: releasing KV pages failed: %s", s.id, st.status().ToString().c_str());
}

}  // namespace lazyslot
