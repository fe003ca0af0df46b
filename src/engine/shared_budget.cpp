// The engine's side of a shared memory budget (EngineConfig::memory_budget, decision 0007): the fixed cost
// it charges (tensor bytes, a scratch bound, a heap estimate), the admission charge that reserves a
// request's worst-case KV (and the weights and scratch again after an idle release) before the request may
// run, and the refunds when KV, scratch or weights are released. The charge is never below what the engine
// can hold until its next charge, so the budget holds at every step, generation included.
#include <algorithm>

#include "core/log.h"
#include "engine/engine_impl.h"

namespace lazyslot {
namespace {

// Heap the engine allocates outside the other parts, measured (anonymous RSS after malloc_trim around
// Engine::Create, decision 0007 "Measured"): Qwen3-0.6B's shape (151,936 tokens) +28.3 MiB, the tiny test
// models (512 tokens) +0.06 MiB, so about 195 bytes per vocabulary token (the tokenizer's strings, maps
// and merges); a fixed part covers the model's own tables and the scheduler's state.
constexpr uint64_t kOverheadBase = 2ull << 20;
constexpr uint64_t kOverheadPerVocabToken = 200;
// A sampler per busy slot keeps candidate arrays of the vocabulary's size (ids, logits, probabilities and
// the sorting copies): an allowance, not measured apart from the pass.
constexpr uint64_t kSamplerPerVocabToken = 32;
// The grammar's vocabulary index (built on the first constrained request): +8.2 MiB for Qwen3's vocabulary.
constexpr uint64_t kGrammarPerVocabToken = 60;
// Page rounding of the separately mapped activation buffers and malloc's own bookkeeping.
constexpr uint64_t kScratchSlack = 1ull << 20;

}  // namespace

BudgetCharge FixedChargeFor(const Model& model, const EngineConfig& cfg, int n_slots, int32_t n_ctx_slot,
                            int n_threads) {
  const HParams& hp = model.hparams();
  BudgetCharge c;
  // The whole file mapping: the header's pages (the tokenizer's metadata, a few MiB) are read at load and
  // stay resident with the tensors.
  c.weights = model.file().file_size();
  // The forward pass's activations grow to the largest batch: n_batch tokens for a decoder (Step never
  // builds a larger one); an encoder's single input may exceed it, up to a slot.
  const bool encoder = model.arch().encoder;
  const uint64_t n = encoder ? std::max<int64_t>(cfg.n_batch, n_ctx_slot) : cfg.n_batch;
  // The FFN's: gate and up [n_ff]; a mixture of experts' router logits [n_expert] and per chosen expert its
  // input and output [n_embd], gate and up [n_ff_exp], and its weight, id and row (Forward::FfnMoe).
  const uint64_t k = static_cast<uint64_t>(hp.n_expert_used);
  const uint64_t ffn_floats = hp.n_expert > 0 ? hp.n_expert + k * (2ull * hp.n_embd + 2ull * hp.n_ff_exp + 4)
                                              : 2ull * hp.n_ff;
  const uint64_t per_token_floats = 3ull * hp.n_embd + 2ull * hp.n_embd_q() + 2ull * hp.n_embd_kv() + ffn_floats +
                                    (encoder ? hp.n_embd_kv() : 0);
  // The matmul's activation rows in the weights' dot type: never wider than f32 (an expert pass encodes each
  // of its experts' rows, at most all chosen experts' inputs).
  const uint64_t widest_in =
      std::max<uint64_t>({static_cast<uint64_t>(hp.n_embd), static_cast<uint64_t>(hp.n_ff),
                          static_cast<uint64_t>(hp.n_embd_q()), k * hp.n_embd});
  uint64_t scratch = n * per_token_floats * 4 + n * widest_in * 4;
  // Output rows: one logits row per slot at most per step; hidden rows for embedding requests, which each
  // slot keeps until its prompt is done.
  scratch += static_cast<uint64_t>(n_slots) * hp.n_vocab * 4;
  if (cfg.embeddings || encoder) {
    scratch += n * hp.n_embd * 4 + static_cast<uint64_t>(n_slots) * n_ctx_slot * hp.n_embd * 4;
  }
  // Attention's per-thread scores ([n_kv] per thread in the standard mode) and accumulators.
  scratch += static_cast<uint64_t>(n_threads) * (static_cast<uint64_t>(n_ctx_slot) * 4 + (64u << 10));
  c.scratch = scratch + kScratchSlack;
  c.overhead = kOverheadBase + static_cast<uint64_t>(hp.n_vocab) * kOverheadPerVocabToken +
               static_cast<uint64_t>(encoder ? 0 : n_slots) * hp.n_vocab * kSamplerPerVocabToken +
               static_cast<uint64_t>(hp.n_vocab) * kGrammarPerVocabToken;
  return c;
}

Result<BudgetCharge> Engine::EstimateCharge(const EngineConfig& config) {
  const int n_threads = config.compute         ? config.compute->pool.n_threads()
                        : config.n_threads > 0 ? config.n_threads
                                               : ThreadPool::DefaultThreads();
  LS_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                      Model::Load(config.model_path, {.threads = n_threads, .huge_pages = false}));
  const bool encoder = model->arch().encoder;
  const int n_slots = encoder ? std::max(config.n_parallel, kEncoderSlots) : config.n_parallel;
  int32_t n_ctx_slot = config.kv_unified && !encoder ? config.n_ctx : config.n_ctx / std::max(config.n_parallel, 1);
  if (encoder) n_ctx_slot = std::min(n_ctx_slot, model->hparams().n_ctx_train);
  return FixedChargeFor(*model, config, n_slots, n_ctx_slot, n_threads);
}

BudgetCharge Engine::budget_charge() const {
  return impl_ && impl_->account ? impl_->account->charge() : BudgetCharge{};
}

Status Engine::Impl::OpenBudget(const EngineConfig& cfg, int n_slots) {
  MemoryBudget& budget = *cfg.memory_budget;
  fixed = FixedChargeFor(*engine->model_, cfg, n_slots, engine->n_ctx_slot_, pool->n_threads());
  const std::string name = cfg.memory_account ? cfg.memory_account->name() : cfg.model_path;
  if (fixed.total() > budget.limit()) {
    return ResourceExhausted("model '" + name + "' needs " + std::to_string(fixed.total()) +
                             " bytes before any request (" + DescribeCharge(fixed) +
                             "), but --memory-budget " + "is " + std::to_string(budget.limit()) + " bytes");
  }
  account = cfg.memory_account ? cfg.memory_account : budget.Open(name);
  if (!account->Set(fixed)) {
    return ResourceExhausted("model '" + name + "' needs " + std::to_string(fixed.total()) + " bytes (" +
                             DescribeCharge(fixed) +
                             ") that --memory-budget cannot give now: " + budget.Describe());
  }
  weights_charged = scratch_charged = true;
  kv_charged = 0;
  if (!enc && !engine->model_->arch().encoder) {
    const int32_t cells = kv->CellsForBytes(budget.limit() - fixed.total());
    if (cells < 2) {
      return ResourceExhausted("model '" + name + "': --memory-budget " + std::to_string(budget.limit()) +
                               " bytes leaves " + std::to_string(budget.limit() - fixed.total()) +
                               " bytes beside its own " + std::to_string(fixed.total()) +
                               ", not even two tokens of KV (" + std::to_string(kv->BytesForCells(2)) + ")");
    }
    capacity_cells = std::min(capacity_cells, cells);
  }
  return Status::Ok();
}

bool Engine::Impl::ChargeAdmission(int except, uint64_t reserve, int protect) {
  for (;;) {
    // What the slots would hold with this request admitted; the slot's own kept cells are replaced by the
    // reservation (its reused prefix is inside it).
    const uint64_t kv_after = enc ? 0 : BudgetUsedExcept(except) + reserve;
    BudgetCharge add;
    if (!weights_charged) add.weights = fixed.weights;
    if (!scratch_charged) add.scratch = fixed.scratch;
    add.kv = kv_after > kv_charged ? kv_after - kv_charged : 0;
    if (account->TryCharge(add)) {
      weights_charged = scratch_charged = true;
      kv_charged += add.kv;
      budget_blocked = false;
      return true;
    }
    // This engine's own idle slots' kept KV goes first, least recently used first.
    Slot* victim = nullptr;
    for (Slot& s : slots) {
      if (s.id == except || s.id == protect || s.busy() || OwnedBytes(s.id) == 0) continue;
      if (!victim || s.last_used < victim->last_used) victim = &s;
    }
    if (victim == nullptr) {
      // Then other models' idle memory: the reclaimer frees it on its own thread and the refunds wake this
      // scheduler, which runs admission again.
      if (!budget_blocked) {
        LS_LOG_INFO("memory budget: %s waits for %.1f MiB (%s)", account->name().c_str(), MiB(add.total()),
                    account->budget().Describe().c_str());
        budget_blocked_since = Clock::now();
      }
      budget_blocked = true;
      account->Wait(add.total());
      return false;
    }
    TrimSlot(*victim, 0, "evicted to fit --memory-budget");
    SyncKvCharge();
  }
}

bool Engine::Impl::ChargeKvNow(int except, uint64_t need) {
  const uint64_t kv_after = BudgetUsedExcept(except) + need;
  BudgetCharge add;
  add.kv = kv_after > kv_charged ? kv_after - kv_charged : 0;
  if (!account->TryCharge(add)) return false;
  kv_charged += add.kv;
  return true;
}

void Engine::Impl::SyncKvCharge() {
  if (!account) return;
  const uint64_t held = enc ? 0 : BudgetUsedExcept(-1);
  if (held >= kv_charged) return;
  BudgetCharge sub;
  sub.kv = kv_charged - held;
  kv_charged = held;
  account->Refund(sub);
}

void Engine::Impl::RefundWeights() {
  if (!account || !weights_charged) return;
  weights_charged = false;
  BudgetCharge sub;
  sub.weights = fixed.weights;
  account->Refund(sub);
}

void Engine::Impl::RefundScratch() {
  if (!account || !scratch_charged) return;
  scratch_charged = false;
  BudgetCharge sub;
  sub.scratch = fixed.scratch;
  account->Refund(sub);
}

}  // namespace lazyslot
