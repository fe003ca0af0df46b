// The KV cache: one reservation, laid out [layer][K|V][slot][cell][n_embd_kv], one row per token, V not
// transposed (cell index = position). Every (layer, K|V, slot) run starts on a page boundary, so a slot
// holding n tokens has committed exactly ceil(n * row_bytes / page) pages per global run and nothing else.
// Nothing is written at creation (no memset: untouched pages read as zero and cost no memory) except in eager
// mode.
//
// The reservation maps a sparse memory file (memfd) whose layout is the same: each page's "home" in the file
// is its own offset. Slots that start alike can then hold their common prefix once: ShareCells maps one
// slot's whole pages at another slot's addresses, so attention still reads each slot's rows contiguously
// (docs/decisions/0019-shared-prefix-pages.md).
//
// Storage and bookkeeping are apart: the runs are only storage, and per slot the cache records what each
// group of layers holds. Global layers hold cells [0, n_cells). Local (sliding-window) layers hold only the
// last `window` cells [floor, n_cells): after each forward the pages wholly behind floor are given back, so a
// local run keeps at most ceil(window * row / page) + 1 pages between steps (window + step rows during one).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/tensor_type.h"

namespace lazyslot {

struct KvConfig {
  int n_layer = 0;
  int n_slot = 1;
  int32_t n_ctx_slot = 0;  // cells per slot
  int64_t n_embd_k = 0;    // n_head_kv * head_dim_k
  int64_t n_embd_v = 0;    // n_head_kv * head_dim_v
  // Width of one head's slice of a row; attention addresses each head's slice on its own, so a block type
  // (q8_0) needs head_dim to be a multiple of its block size. 0: not checked beyond the row width.
  int64_t head_dim = 0;
  TensorType type_k = TensorType::kF16;
  TensorType type_v = TensorType::kF16;
  bool eager = false;  // commit and zero-fill everything at creation (llama.cpp's behaviour, for comparison)
  // ShareCells maps the source's pages (needs a memory file and lazy mode); false: it copies them.
  bool share_pages = true;
  // Per layer, the sliding window of a local layer (its queries see the last `window` cells), 0 for a
  // global one; empty: every layer global. All local layers share one window.
  std::vector<int32_t> layer_window;
  // Most cells one forward pass adds to a slot (the batch size): a local run holds window + step rows during
  // a step, which BytesForCells counts. 0: n_ctx_slot.
  int32_t max_step = 0;
};

// KV cache types a user may choose (--cache-type-k/-v): f16, q8_0, f32.
bool ParseKvCacheType(const std::string& name, TensorType* out);

class KvCache {
 public:
  static Result<std::unique_ptr<KvCache>> Create(const KvConfig& config);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  const KvConfig& config() const { return config_; }
  size_t k_row_bytes() const { return k_row_bytes_; }
  size_t v_row_bytes() const { return v_row_bytes_; }

  // Row of one cell; writing to it commits its page.
  uint8_t* KRow(int il, int slot, int32_t cell) { return RunBase(il, 0, slot) + cell * k_row_bytes_; }
  uint8_t* VRow(int il, int slot, int32_t cell) { return RunBase(il, 1, slot) + cell * v_row_bytes_; }
  const uint8_t* KRow(int il, int slot, int32_t cell) const {
    return const_cast<KvCache*>(this)->KRow(il, slot, cell);
  }
  const uint8_t* VRow(int il, int slot, int32_t cell) const {
    return const_cast<KvCache*>(this)->VRow(il, slot, cell);
  }

  // Cell bookkeeping: a slot's sequence holds cells [0, n_cells) (cell index = position).
  int32_t n_cells(int slot) const { return slots_[slot].n_cells; }
  // Most cells written since the slot's last trim/release: what its committed pages cover.
  int32_t high_water(int slot) const { return slots_[slot].high_water; }
  // The first cell local layers still hold (0 without local layers): cells before it are gone there.
  int32_t local_floor(int slot) const { return slots_[slot].floor; }
  // The window of local layers (0: the model has none), and whether layer il is one.
  int32_t window() const { return window_; }
  bool is_local(int il) const { return !config_.layer_window.empty() && config_.layer_window[il] > 0; }
  // Records that cells [0, n) now hold data (called after the forward pass wrote them), then gives back the
  // local runs' pages that no later query can see: those wholly before n - window.
  void SetCells(int slot, int32_t n);
  // n when the slot can continue its sequence at cell n (after keeping cells [0, n)): n <= n_cells and every
  // local layer still holds the window such a query needs, [n - window + 1, n); else 0, the only other
  // point it can continue from (a sliding window keeps only its end: with a window of w, n_cells - 1 and
  // n_cells are always reusable, earlier points only while nothing has slid out).
  int32_t ReusableCells(int slot, int32_t n) const;
  // Keeps cells [0, n_keep) and returns the pages past them to the kernel at once. Returns the bytes given
  // back. A point ReusableCells refuses keeps nothing. Eager mode keeps every page (as llama.cpp does) and
  // only moves the cell count.
  Result<uint64_t> Trim(int slot, int32_t n_keep);
  // Copies cells [0, n) of slot `from` into slot `to` (every layer, K and V; on local layers only the window
  // before n) and sets `to`'s cell count to n; `to` must hold no more than n cells, and ReusableCells(from,
  // n) must be n. It commits those cells' pages in `to` (a copy, not shared pages).
  void CopyCells(int from, int to, int32_t n);
  // As CopyCells, but on global layers `to` maps `from`'s whole pages of cells [0, n) instead of copying
  // them (the page the boundary falls in is copied; local layers copy their window): both slots then read one
  // copy. `to` is emptied first. A page two slots map is never written again: a slot that trims, releases or
  // rewinds into it first takes its own page back (if it maps another's) or hands its page, copied, to one of
  // the slots that map it (if it is the owner). Copies instead when !shares_pages().
  void ShareCells(int from, int to, int32_t n);
  // Whether ShareCells maps pages (asked for, a memory file backs the arena and it is not eager mode).
  bool shares_pages() const { return fd_ >= 0 && !config_.eager && config_.share_pages; }
  // Sets a slot restored from a file: cells [0, n) held, local layers from `floor` (whose rows the caller
  // wrote). floor must be 0 without local layers and at most n.
  void SetRestored(int slot, int32_t n, int32_t floor);
  // Empties a slot whose rows are about to be written again from cell 0 (a restore), keeping its own
  // committed pages for up to `cells` cells so the new rows land in them instead of in pages released and
  // committed again (a page committed costs about 5 us on a VM: 2 s for 439 MiB); pages past them are
  // released; pages it lent are handed over, as in a trim. A slot that maps others' pages, or a cache with
  // local (sliding-window) layers: Trim(slot, 0).
  Status Rewrite(int slot, int32_t cells);
  // Context shift: removes cells [begin, begin + count) of a slot, moving the rows after them down by `count`
  // (every layer, K and V) so that the slot holds n_cells - count cells. The moved K rows still carry their
  // old positions' rotation: the caller re-rotates them (Forward::ShiftKeys). The pages holding cells >=
  // begin become the slot's own first (their rows kept). Errors: a cache with sliding-window layers, whose
  // local runs hold only a window (kUnimplemented); a range outside [0, n_cells) (kInvalidArgument).
  Status DropCells(int slot, int32_t begin, int32_t count);
  // Returns every page of every slot (idle release); eager mode only empties the slots. Returns the bytes.
  Result<uint64_t> ReleaseAll();

  // Memory accounting. Reserved = address space; committed = pages touched per the cache's own tracking
  // (high-water mark of each slot since its last trim), which mincore() confirms in the memory tests.
  uint64_t reserved_bytes() const { return reserved_; }
  uint64_t reserved_bytes_k() const;
  uint64_t reserved_bytes_v() const;
  // Distinct committed bytes: a page several slots map counts once.
  uint64_t committed_bytes() const;
  // Bytes one slot maps: its own pages and those it maps from others (shared_bytes).
  uint64_t committed_bytes(int slot) const;
  // Of committed_bytes(slot), the bytes of other slots' pages it maps; summed over the slots, the bytes
  // sharing saves (committed_bytes() = the sum of committed_bytes(slot) - shared_bytes()).
  uint64_t shared_bytes(int slot) const;
  uint64_t shared_bytes() const;
  // Of a slot's own pages, the bytes other slots map (a page counted once however many map it). Trimming
  // the slot does not free them: they are handed to a borrower.
  uint64_t lent_bytes(int slot) const;
  // Bytes ShareCells(from, to, n) maps rather than copies (the whole pages of cells [0, n) on global runs):
  // what the admission of a request that shares n cells does not add to the distinct total. 0 when
  // !shares_pages().
  uint64_t MappedBytesForCells(int32_t n) const;
  // Most bytes committed at once since creation (checked at every SetCells: the --kv-budget proof).
  uint64_t peak_committed_bytes() const { return peak_committed_; }
  // Bytes one slot commits at most while it holds `cells` cells (all layers, K and V, whole pages; a local
  // layer min(cells, window + step) rows, plus the page its window's start may straddle). The budget
  // admission reserves with this, so it is the same page math as the tracking above.
  uint64_t BytesForCells(int32_t cells) const;
  // Most cells one slot can hold within `bytes` (capped at n_ctx_slot).
  int32_t CellsForBytes(uint64_t bytes) const;
  // Bytes the kernel holds for the arena, each page once: the memory file's allocation (mincore of the
  // arena without one).
  Result<uint64_t> ResidentBytes() const;
  // Resident pages of one (layer, K|V, slot) run (for tests).
  Result<size_t> ResidentPagesOfRun(int il, int kv, int slot) const;
  size_t run_stride(int kv) const { return kv == 0 ? k_run_stride_ : v_run_stride_; }

 private:
  KvCache() = default;
  uint8_t* RunBase(int il, int kv, int slot) const;
  // Bytes committed in one run of rows `row` of a slot holding [floor, high_water) (floor 0: a global run).
  static uint64_t RunBytes(size_t row, int32_t floor, int32_t high_water);
  // Gives back the local runs' pages wholly before `floor` and records it as the slot's floor.
  Status RaiseFloor(int slot, int32_t floor);
  // Returns [p, p + bytes) of one slot's own pages to the kernel.
  Status Drop(uint8_t* p, size_t bytes);
  // Sharing (ShareCells). A kind is the global runs of one row size: 0 the K runs, 1 the V runs. Pages are
  // numbered within a run, and a slot's page p of every run of a kind has the same owner.
  size_t KindRow(int kind) const { return kind == 0 ? k_row_bytes_ : v_row_bytes_; }
  // The slot whose page p `slot` maps (itself unless shared).
  int PageOwner(int kind, int slot, size_t p) const;
  // Maps `view`'s pages [p, p + count) of every global run of `kind` onto `home`'s pages in the file.
  Status MapPages(int view, int home, int kind, size_t p, size_t count);
  // Makes every page of `slot` that holds a cell >= `cell` its own and lent to nobody, keeping the rows of
  // cells below `keep_to` (at least `cell`; the default: below `cell`): the slot may then write or release
  // them.
  Status Privatize(int slot, int32_t cell, int32_t keep_to = -1);
  // Hands `slot`'s pages [p, p + count) of `kind`, which `borrowers` map, to borrowers[0]: copied into its
  // own pages, which the other borrowers then map.
  Status HandOver(int kind, int slot, size_t p, size_t count, const std::vector<int>& borrowers);

  struct SlotCells {
    int32_t n_cells = 0;
    int32_t high_water = 0;  // most cells written since the last trim/release: what is committed
    int32_t floor = 0;       // local layers: the first cell held (their pages before it are given back)
  };

  KvConfig config_;
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0;
  size_t k_run_stride_ = 0, v_run_stride_ = 0;  // page-aligned bytes per (layer, slot) run
  uint8_t* base_ = nullptr;
  uint64_t reserved_ = 0;
  uint64_t peak_committed_ = 0;
  int32_t window_ = 0;   // local layers' window, 0 when none
  int n_local_ = 0;      // local layers
  std::vector<SlotCells> slots_;
  int fd_ = -1;          // the memory file behind the arena (-1: an anonymous reservation, no sharing)
  // Per kind and slot: owner_[kind][slot][p], the slot whose page p it maps (past the vector's end, itself);
  // lent_[kind][slot][p], how many other slots map its page p.
  std::vector<std::vector<int32_t>> owner_[2], lent_[2];
  std::vector<size_t> n_borrowed_[2];  // per kind and slot: its pages that another slot owns
};

}  // namespace lazyslot
