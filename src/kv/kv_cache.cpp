// KV cache storage and cell bookkeeping over one lazily committed reservation backed by a memory file, and
// the page sharing of common prefixes (ShareCells, Privatize, HandOver).
#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/log.h"
#include "core/vm.h"

namespace lazyslot {

bool ParseKvCacheType(const std::string& name, TensorType* out) {
  for (TensorType t : {TensorType::kF16, TensorType::kQ8_0, TensorType::kF32}) {
    if (name == TypeName(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

Result<std::unique_ptr<KvCache>> KvCache::Create(const KvConfig& c) {
  if (c.n_layer <= 0 || c.n_slot <= 0 || c.n_ctx_slot <= 0 || c.n_embd_k <= 0 || c.n_embd_v <= 0) {
    return InvalidArgument("kv cache: layers, slots, cells per slot and row widths must be positive");
  }
  for (TensorType t : {c.type_k, c.type_v}) {
    if (t != TensorType::kF16 && t != TensorType::kQ8_0 && t != TensorType::kF32) {
      return Unimplemented(std::string("kv cache: type ") + TypeName(t) +
                           " is not supported (f16, q8_0 or f32)");
    }
    const int64_t block = Traits(t).block_size;
    if (c.n_embd_k % block != 0 || c.n_embd_v % block != 0) {
      return InvalidArgument(std::string("kv cache: row width ") + std::to_string(c.n_embd_k) +
                             " is not a multiple of the " + TypeName(t) + " block size " +
                             std::to_string(block));
    }
    if (c.head_dim > 0 && c.head_dim % block != 0) {
      return InvalidArgument(std::string("kv cache: type ") + TypeName(t) + " stores blocks of " +
                             std::to_string(block) + " values, but this model's head_dim is " +
                             std::to_string(c.head_dim) +
                             " (each head's slice must be whole blocks); use f16 or f32");
    }
  }
  if (!c.layer_window.empty() && c.layer_window.size() != static_cast<size_t>(c.n_layer)) {
    return InvalidArgument("kv cache: " + std::to_string(c.layer_window.size()) + " layer windows for " +
                           std::to_string(c.n_layer) + " layers");
  }
  int32_t window = 0;
  int n_local = 0;
  for (int32_t w : c.layer_window) {
    if (w < 0 || (w > 0 && window > 0 && w != window)) {
      return Unimplemented("kv cache: local layers must share one positive window");
    }
    if (w > 0) {
      window = w;
      ++n_local;
    }
  }
  std::unique_ptr<KvCache> kv(new KvCache());
  kv->config_ = c;
  kv->window_ = window;
  kv->n_local_ = n_local;
  kv->k_row_bytes_ = RowBytes(c.type_k, c.n_embd_k);
  kv->v_row_bytes_ = RowBytes(c.type_v, c.n_embd_v);
  const size_t page = vm::PageSize();
  kv->k_run_stride_ = vm::AlignUp(kv->k_row_bytes_ * static_cast<size_t>(c.n_ctx_slot), page);
  kv->v_run_stride_ = vm::AlignUp(kv->v_row_bytes_ * static_cast<size_t>(c.n_ctx_slot), page);
  kv->reserved_ = static_cast<uint64_t>(c.n_layer) * c.n_slot * (kv->k_run_stride_ + kv->v_run_stride_);
  // A memory file behind the arena lets slots map each other's pages (ShareCells); without one (memfd_create
  // refused, say by a sandbox) the arena is an anonymous reservation and ShareCells copies.
  Result<int> fd = vm::CreateMemoryFile("lazyslot-kv", kv->reserved_);
  if (fd.ok()) {
    Result<void*> p = vm::MapMemoryFile(*fd, kv->reserved_);
    if (p.ok()) {
      kv->fd_ = *fd;
      kv->base_ = static_cast<uint8_t*>(*p);
    } else {
      vm::CloseFile(*fd);
      fd = p.status();
    }
  }
  if (!kv->base_) {
    LS_LOG_WARN("kv cache: no memory file (%s): slots will copy common prefixes, not share them",
                fd.status().message().c_str());
    LS_ASSIGN_OR_RETURN(void* p, vm::Reserve(kv->reserved_));
    kv->base_ = static_cast<uint8_t*>(p);
  }
  kv->slots_.resize(c.n_slot);
  for (int kind = 0; kind < 2; ++kind) {
    kv->owner_[kind].resize(c.n_slot);
    kv->lent_[kind].resize(c.n_slot);
    kv->n_borrowed_[kind].assign(c.n_slot, 0);
  }
  // Pages, not 2 MiB huge pages: with THP "always" the first row written would commit 2 MiB of a run, and
  // committed memory would no longer follow the tokens held (docs/decisions/0001-kv-arena-layout.md).
  Status st = vm::AdviseNoHugePages(kv->base_, kv->reserved_);
  if (!st.ok()) LS_LOG_WARN("kv cache: %s (committed memory may grow in 2 MiB steps)", st.message().c_str());
  if (c.eager) {
    // Eager mode only: commit and zero every page now, as llama.cpp does at start-up.
    std::memset(kv->base_, 0, kv->reserved_);
    for (auto& s : kv->slots_) s.high_water = c.n_ctx_slot;
    kv->peak_committed_ = kv->committed_bytes();
  }
  return kv;
}

KvCache::~KvCache() {
  vm::Unreserve(base_, reserved_);
  vm::CloseFile(fd_);
}

Status KvCache::Drop(uint8_t* p, size_t bytes) {
  return fd_ >= 0 ? vm::RemoveFilePages(p, bytes) : vm::Release(p, bytes);
}

uint8_t* KvCache::RunBase(int il, int kv, int slot) const {
  const size_t layer_bytes = static_cast<size_t>(config_.n_slot) * (k_run_stride_ + v_run_stride_);
  size_t off = static_cast<size_t>(il) * layer_bytes;
  if (kv == 1) off += static_cast<size_t>(config_.n_slot) * k_run_stride_;
  off += static_cast<size_t>(slot) * (kv == 0 ? k_run_stride_ : v_run_stride_);
  return base_ + off;
}

uint64_t KvCache::RunBytes(size_t row, int32_t floor, int32_t high_water) {
  if (high_water <= floor) return 0;
  const size_t page = vm::PageSize();
  const size_t end = vm::AlignUp(row * static_cast<size_t>(high_water), page);
  const size_t begin = row * static_cast<size_t>(floor) / page * page;
  return end - begin;
}

void KvCache::SetCells(int slot, int32_t n) {
  SlotCells& s = slots_[slot];
  if (n < s.n_cells) {  // a rewind: the pages it will write again must be its own
    const Status st = Privatize(slot, n);
    if (!st.ok()) LS_LOG_WARN("kv cache: slot %d: %s", slot, st.message().c_str());
  }
  s.n_cells = n;
  s.high_water = std::max(s.high_water, n);
  // The peak before the window slides: a step's rows are all written by now.
  peak_committed_ = std::max(peak_committed_, committed_bytes());
  if (window_ > 0) {
    const Status st = RaiseFloor(slot, std::max<int32_t>(0, n - window_));
    if (!st.ok()) LS_LOG_WARN("kv cache: slot %d: %s (local pages kept)", slot, st.message().c_str());
  }
}

Status KvCache::RaiseFloor(int slot, int32_t floor) {
  SlotCells& s = slots_[slot];
  if (floor <= s.floor) return Status::Ok();
  if (!config_.eager) {
    const size_t page = vm::PageSize();
    for (int il = 0; il < config_.n_layer; ++il) {
      if (!is_local(il)) continue;
      for (int kv = 0; kv < 2; ++kv) {
        const size_t row = kv == 0 ? k_row_bytes_ : v_row_bytes_;
        const size_t from = row * static_cast<size_t>(s.floor) / page * page;
        const size_t to = row * static_cast<size_t>(floor) / page * page;
        if (to > from) LS_RETURN_IF_ERROR(Drop(RunBase(il, kv, slot) + from, to - from));
      }
    }
  }
  s.floor = floor;
  return Status::Ok();
}

int32_t KvCache::ReusableCells(int slot, int32_t n) const {
  const SlotCells& s = slots_[slot];
  n = std::clamp<int32_t>(n, 0, s.n_cells);
  if (window_ == 0 || s.floor == 0 || n - window_ + 1 >= s.floor) return n;
  return 0;
}

void KvCache::CopyCells(int from, int to, int32_t n) {
  n = std::clamp<int32_t>(n, 0, std::min(slots_[from].n_cells, config_.n_ctx_slot));
  if (from == to) return;
  const Status own = Privatize(to, 0);  // it writes every row of [0, n)
  if (!own.ok()) LS_LOG_WARN("kv cache: slot %d: %s", to, own.message().c_str());
  // Local layers: the window before n, from what the source still holds.
  const int32_t lo = window_ > 0 ? std::max(slots_[from].floor, std::max<int32_t>(0, n - window_)) : 0;
  if (window_ > 0) {
    const Status st = RaiseFloor(to, lo);  // what `to` holds before lo goes
    if (!st.ok()) LS_LOG_WARN("kv cache: slot %d: %s (local pages kept)", to, st.message().c_str());
    slots_[to].floor = lo;
  }
  for (int il = 0; il < config_.n_layer; ++il) {
    const int32_t first = is_local(il) ? lo : 0;
    const size_t rows = static_cast<size_t>(std::max<int32_t>(0, n - first));
    std::memcpy(KRow(il, to, first), KRow(il, from, first), k_row_bytes_ * rows);
    std::memcpy(VRow(il, to, first), VRow(il, from, first), v_row_bytes_ * rows);
  }
  SetCells(to, n);
}

void KvCache::ShareCells(int from, int to, int32_t n) {
  n = std::clamp<int32_t>(n, 0, std::min(slots_[from].n_cells, config_.n_ctx_slot));
  if (from == to) return;
  if (!shares_pages()) return CopyCells(from, to, n);
  Result<uint64_t> emptied = Trim(to, 0);  // nobody maps its pages after this, and it maps nobody's
  if (!emptied.ok()) {
    LS_LOG_WARN("kv cache: slot %d: %s (copying instead of sharing)", to, emptied.status().message().c_str());
    return CopyCells(from, to, n);
  }
  const size_t page = vm::PageSize();
  // Global runs: the whole pages of cells [0, n) are mapped, from whoever owns each (the source or the slot
  // it maps them from), in runs of one owner.
  for (int kind = 0; kind < 2; ++kind) {
    const size_t shared = KindRow(kind) * static_cast<size_t>(n) / page;
    std::vector<int32_t>& own = owner_[kind][to];
    own.assign(shared, to);
    for (size_t p = 0; p < shared;) {
      const int o = PageOwner(kind, from, p);
      size_t q = p + 1;
      while (q < shared && PageOwner(kind, from, q) == o) ++q;
      const Status st = MapPages(to, o, kind, p, q - p);
      if (!st.ok()) {
        LS_LOG_WARN("kv cache: slot %d: %s (copying instead of sharing)", to, st.message().c_str());
        own.resize(p);
        const Status back = Privatize(to, 0);
        if (!back.ok()) LS_LOG_WARN("kv cache: slot %d: %s", to, back.message().c_str());
        return CopyCells(from, to, n);
      }
      std::vector<int32_t>& lent = lent_[kind][o];
      if (lent.size() < q) lent.resize(q, 0);
      for (size_t i = p; i < q; ++i) {
        own[i] = o;
        ++lent[i];
      }
      n_borrowed_[kind][to] += q - p;
      p = q;
    }
  }
  // The rest is copied: on global runs the rows of the page the boundary falls in, on local runs the window
  // before n (as CopyCells).
  const int32_t lo = window_ > 0 ? std::max(slots_[from].floor, std::max<int32_t>(0, n - window_)) : 0;
  if (window_ > 0) slots_[to].floor = lo;
  for (int il = 0; il < config_.n_layer; ++il) {
    for (int kv = 0; kv < 2; ++kv) {
      const size_t row = kv == 0 ? k_row_bytes_ : v_row_bytes_;
      const size_t begin = is_local(il) ? row * static_cast<size_t>(lo) : row * static_cast<size_t>(n) / page * page;
      const size_t end = row * static_cast<size_t>(n);
      if (end > begin) std::memcpy(RunBase(il, kv, to) + begin, RunBase(il, kv, from) + begin, end - begin);
    }
  }
  SetCells(to, n);
}

int KvCache::PageOwner(int kind, int slot, size_t p) const {
  const std::vector<int32_t>& own = owner_[kind][slot];
  return p < own.size() ? own[p] : slot;
}

Status KvCache::MapPages(int view, int home, int kind, size_t p, size_t count) {
  const size_t page = vm::PageSize();
  for (int il = 0; il < config_.n_layer; ++il) {
    if (is_local(il)) continue;
    uint8_t* at = RunBase(il, kind, view) + p * page;
    const uint64_t offset = static_cast<uint64_t>(RunBase(il, kind, home) - base_) + p * page;
    LS_RETURN_IF_ERROR(vm::MapFilePages(at, count * page, fd_, offset));
    (void)vm::AdviseNoHugePages(at, count * page);  // a new mapping does not inherit the arena's advice
  }
  return Status::Ok();
}

Status KvCache::Privatize(int slot, int32_t cell, int32_t keep_to) {
  if (!shares_pages()) return Status::Ok();
  keep_to = std::max(keep_to, cell);
  const size_t page = vm::PageSize();
  for (int kind = 0; kind < 2; ++kind) {
    const size_t row = KindRow(kind);
    const size_t first = row * static_cast<size_t>(cell) / page;  // the first page holding a cell >= `cell`
    const size_t keep_bytes = row * static_cast<size_t>(keep_to);  // the run's bytes whose rows are kept
    // Pages it maps from another slot: its own again (untouched pages: zero), the kept rows copied over.
    std::vector<int32_t>& own = owner_[kind][slot];
    for (size_t p = first; p < own.size();) {
      const int o = own[p];
      size_t q = p + 1;
      while (q < own.size() && own[q] == o) ++q;
      if (o != slot) {
        LS_RETURN_IF_ERROR(MapPages(slot, slot, kind, p, q - p));
        for (size_t i = p; i < q && i * page < keep_bytes; ++i) {  // kept rows: copied from the owner's page
          const size_t n = std::min(page, keep_bytes - i * page);
          for (int il = 0; il < config_.n_layer; ++il) {
            if (is_local(il)) continue;
            std::memcpy(RunBase(il, kind, slot) + i * page, RunBase(il, kind, o) + i * page, n);
          }
        }
        for (size_t i = p; i < q; ++i) --lent_[kind][o][i];
        n_borrowed_[kind][slot] -= q - p;
      }
      p = q;
    }
    if (own.size() > first) own.resize(first);
    // Its own pages others map: handed, copied, to one of them, in runs of one set of borrowers.
    std::vector<int32_t>& lent = lent_[kind][slot];
    auto borrowers_of = [&](size_t p) {
      std::vector<int> b;
      for (int x = 0; x < config_.n_slot; ++x) {
        if (x != slot && PageOwner(kind, x, p) == slot) b.push_back(x);
      }
      return b;
    };
    for (size_t p = first; p < lent.size();) {
      if (lent[p] == 0) {
        ++p;
        continue;
      }
      const std::vector<int> borrowers = borrowers_of(p);
      size_t q = p + 1;
      while (q < lent.size() && lent[q] > 0 && borrowers_of(q) == borrowers) ++q;
      if (borrowers.empty()) return Internal("kv cache: page lent to nobody");
      LS_RETURN_IF_ERROR(HandOver(kind, slot, p, q - p, borrowers));
      p = q;
    }
    if (lent.size() > first) lent.resize(first);
  }
  return Status::Ok();
}

Status KvCache::HandOver(int kind, int slot, size_t p, size_t count, const std::vector<int>& borrowers) {
  const size_t page = vm::PageSize();
  const int x = borrowers[0];
  LS_RETURN_IF_ERROR(MapPages(x, x, kind, p, count));
  for (int il = 0; il < config_.n_layer; ++il) {
    if (!is_local(il)) {
      std::memcpy(RunBase(il, kind, x) + p * page, RunBase(il, kind, slot) + p * page, count * page);
    }
  }
  for (size_t b = 1; b < borrowers.size(); ++b) LS_RETURN_IF_ERROR(MapPages(borrowers[b], x, kind, p, count));
  std::vector<int32_t>& lent_x = lent_[kind][x];
  if (lent_x.size() < p + count) lent_x.resize(p + count, 0);
  for (size_t i = p; i < p + count; ++i) {
    for (int b : borrowers) owner_[kind][b][i] = x;
    lent_x[i] = static_cast<int32_t>(borrowers.size()) - 1;
    lent_[kind][slot][i] = 0;
  }
  n_borrowed_[kind][x] -= count;
  return Status::Ok();
}

void KvCache::SetRestored(int slot, int32_t n, int32_t floor) {
  SlotCells& s = slots_[slot];
  s.floor = window_ > 0 ? std::clamp<int32_t>(floor, 0, n) : 0;
  SetCells(slot, n);
}

uint64_t KvCache::BytesForCells(int32_t cells) const {
  cells = std::clamp<int32_t>(cells, 0, config_.n_ctx_slot);
  const uint64_t global = RunBytes(k_row_bytes_, 0, cells) + RunBytes(v_row_bytes_, 0, cells);
  uint64_t local = global;
  if (n_local_ > 0 && !config_.eager) {
    // Between two steps a local run holds `window` rows, during one up to window + step, wherever they
    // start: at most one page more than those rows fill.
    const int32_t step = config_.max_step > 0 ? config_.max_step : config_.n_ctx_slot;
    const int32_t held = static_cast<int32_t>(std::min<int64_t>(cells, int64_t{window_} + step));
    const uint64_t page = vm::PageSize();
    const uint64_t k = std::min(RunBytes(k_row_bytes_, 0, cells), RunBytes(k_row_bytes_, 0, held) + page);
    const uint64_t v = std::min(RunBytes(v_row_bytes_, 0, cells), RunBytes(v_row_bytes_, 0, held) + page);
    local = k + v;
  }
  return static_cast<uint64_t>(config_.n_layer - n_local_) * global + static_cast<uint64_t>(n_local_) * local;
}

int32_t KvCache::CellsForBytes(uint64_t bytes) const {
  // BytesForCells is non-decreasing in cells: binary search for the last count that fits.
  int32_t lo = 0, hi = config_.n_ctx_slot;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo + 1) / 2;
    if (BytesForCells(mid) <= bytes) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

uint64_t KvCache::reserved_bytes_k() const {
  return static_cast<uint64_t>(config_.n_layer) * config_.n_slot * k_run_stride_;
}
uint64_t KvCache::reserved_bytes_v() const {
  return static_cast<uint64_t>(config_.n_layer) * config_.n_slot * v_run_stride_;
}

uint64_t KvCache::committed_bytes(int slot) const {
  const SlotCells& s = slots_[slot];
  const uint64_t global = RunBytes(k_row_bytes_, 0, s.high_water) + RunBytes(v_row_bytes_, 0, s.high_water);
  const int32_t floor = config_.eager ? 0 : s.floor;  // eager mode keeps every page
  const uint64_t local = RunBytes(k_row_bytes_, floor, s.high_water) + RunBytes(v_row_bytes_, floor, s.high_water);
  return static_cast<uint64_t>(config_.n_layer - n_local_) * global + static_cast<uint64_t>(n_local_) * local;
}

uint64_t KvCache::committed_bytes() const {
  uint64_t total = 0;
  for (int s = 0; s < config_.n_slot; ++s) total += committed_bytes(s);
  return total - shared_bytes();
}

uint64_t KvCache::shared_bytes(int slot) const {
  const uint64_t pages = n_borrowed_[0][slot] + n_borrowed_[1][slot];
  return pages * vm::PageSize() * static_cast<uint64_t>(config_.n_layer - n_local_);
}

uint64_t KvCache::shared_bytes() const {
  uint64_t total = 0;
  for (int s = 0; s < config_.n_slot; ++s) total += shared_bytes(s);
  return total;
}

uint64_t KvCache::lent_bytes(int slot) const {
  uint64_t pages = 0;
  for (int kind = 0; kind < 2; ++kind) {
    for (int32_t n : lent_[kind][slot]) pages += n > 0 ? 1 : 0;
  }
  return pages * vm::PageSize() * static_cast<uint64_t>(config_.n_layer - n_local_);
}

uint64_t KvCache::MappedBytesForCells(int32_t n) const {
  if (!shares_pages()) return 0;
  n = std::clamp<int32_t>(n, 0, config_.n_ctx_slot);
  const uint64_t page = vm::PageSize();
  const uint64_t pages = KindRow(0) * static_cast<uint64_t>(n) / page + KindRow(1) * static_cast<uint64_t>(n) / page;
  return pages * page * static_cast<uint64_t>(config_.n_layer - n_local_);
}

Result<uint64_t> KvCache::Trim(int slot, int32_t n_keep) {
  SlotCells& s = slots_[slot];
  n_keep = std::clamp<int32_t>(n_keep, 0, config_.n_ctx_slot);
  // A point the local layers can no longer continue from keeps nothing (never a window with holes).
  if (n_keep < s.n_cells && ReusableCells(slot, n_keep) != n_keep) n_keep = 0;
  if (n_keep < s.high_water) LS_RETURN_IF_ERROR(Privatize(slot, n_keep));
  s.n_cells = std::min(s.n_cells, n_keep);
  const uint64_t before = committed_bytes(slot);
  const int32_t floor = s.floor;  // the local runs' pages before it are gone already
  if (n_keep == 0) s.floor = 0;
  if (config_.eager || s.high_water <= n_keep) return uint64_t{0};
  const size_t page = vm::PageSize();
  for (int il = 0; il < config_.n_layer; ++il) {
    for (int kv = 0; kv < 2; ++kv) {
      const size_t row = kv == 0 ? k_row_bytes_ : v_row_bytes_;
      size_t keep = vm::AlignUp(row * static_cast<size_t>(n_keep), page);
      if (is_local(il)) keep = std::max(keep, row * static_cast<size_t>(floor) / page * page);
      const size_t used = vm::AlignUp(row * static_cast<size_t>(s.high_water), page);
      if (used > keep) LS_RETURN_IF_ERROR(Drop(RunBase(il, kv, slot) + keep, used - keep));
    }
  }
  s.high_water = n_keep;
  return before - committed_bytes(slot);
}

Status KvCache::DropCells(int slot, int32_t begin, int32_t count) {
  SlotCells& s = slots_[slot];
  if (n_local_ > 0) {
    return Unimplemented("kv cache: a sliding-window model's slot cannot drop cells from its middle");
  }
  if (begin < 0 || count <= 0 || count > s.n_cells - begin) {
    return InvalidArgument("kv cache: cannot drop cells [" + std::to_string(begin) + ", " +
                           std::to_string(begin + count) + ") of a slot holding " +
                           std::to_string(s.n_cells));
  }
  LS_RETURN_IF_ERROR(Privatize(slot, begin, s.n_cells));  // rows >= begin are rewritten below
  const size_t moved = static_cast<size_t>(s.n_cells - begin - count);
  for (int il = 0; il < config_.n_layer; ++il) {
    for (int kv = 0; kv < 2; ++kv) {
      const size_t row = kv == 0 ? k_row_bytes_ : v_row_bytes_;
      uint8_t* run = RunBase(il, kv, slot);
      std::memmove(run + row * static_cast<size_t>(begin), run + row * static_cast<size_t>(begin + count),
                   row * moved);
    }
  }
  s.n_cells -= count;  // high_water stays: the pages past the new end are still committed, written again next
  return Status::Ok();
}

Status KvCache::Rewrite(int slot, int32_t cells) {
  // Pages it maps from others would become its own unwritten pages below its high-water mark, which the
  // accounting cannot tell from written ones: such a slot starts empty, as with local layers.
  if (window_ > 0 || n_borrowed_[0][slot] + n_borrowed_[1][slot] > 0) return Trim(slot, 0).status();
  SlotCells& s = slots_[slot];
  LS_RETURN_IF_ERROR(Trim(slot, std::clamp<int32_t>(cells, 0, s.n_cells)).status());  // pages past `cells` go
  LS_RETURN_IF_ERROR(Privatize(slot, 0));  // the rest its own and lent to nobody: they will be written
  s.n_cells = 0;                           // high_water stays: those pages are still committed
  return Status::Ok();
}

Result<uint64_t> KvCache::ReleaseAll() {
  if (config_.eager) {
    for (auto& s : slots_) s.n_cells = s.floor = 0;
    return uint64_t{0};
  }
  const uint64_t before = committed_bytes();
  if (fd_ >= 0) {
    // Every address back on its own page of the file, then all of the file's pages freed.
    LS_RETURN_IF_ERROR(vm::MapFilePages(base_, reserved_, fd_, 0));
    (void)vm::AdviseNoHugePages(base_, reserved_);
  }
  LS_RETURN_IF_ERROR(Drop(base_, reserved_));
  for (auto& s : slots_) s = SlotCells{};
  for (int kind = 0; kind < 2; ++kind) {
    for (auto& v : owner_[kind]) v.clear();
    for (auto& v : lent_[kind]) v.clear();
    n_borrowed_[kind].assign(config_.n_slot, 0);
  }
  return before;
}

Result<uint64_t> KvCache::ResidentBytes() const {
  if (fd_ >= 0) return vm::MemoryFileBytes(fd_);
  LS_ASSIGN_OR_RETURN(size_t pages, vm::ResidentPages(base_, reserved_));
  return static_cast<uint64_t>(pages) * vm::PageSize();
}

Result<size_t> KvCache::ResidentPagesOfRun(int il, int kv, int slot) const {
  return vm::ResidentPages(RunBase(il, kv, slot), run_stride(kv));
}

}  // namespace lazyslot
