// Slot state files: one slot's token ids and the K/V rows of its used cells, so a conversation's cache can
// be saved and restored (llama-server's /slots/{id}?action=save|restore). Little-endian layout:
//   header  "LZSLOTKV" magic[8], u32 version, u32 type_k, u32 type_v, u32 n_layer,
//           u64 n_embd_k, u64 n_embd_v, u64 k_row_bytes, u64 v_row_bytes, u64 model_id,
//           u32 n_tokens, u32 local_floor (0 without sliding-window layers), u64 scope (the cache scope of
//           the request that wrote the cells, GenerationRequest::cache_scope), u64 checksum (Checksum64 of
//           the header with this field 0, the tokens and the rows)
//   tokens  i32[n_tokens]
//   rows    for each layer: K rows [n][k_row_bytes], then V rows [n][v_row_bytes], where n = n_tokens on a
//           global layer and n_tokens - local_floor on a local one (its rows from cell local_floor on: the
//           window it holds)
// The file size must be exactly what the header implies, which catches truncation, and the checksum must
// match, which catches corruption (a restore reads the rows into the slot, checks, and empties the slot on a
// mismatch). Version 2; version 1 had neither scope nor checksum.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "kv/kv_cache.h"

namespace lazyslot {

struct SlotStateInfo {
  uint64_t model_id = 0;  // identity of the weights the rows were computed with
  uint64_t scope = 0;     // the cache scope the rows belong to
  std::vector<int32_t> tokens;
  uint64_t file_bytes = 0;
};

// Writes cells [0, tokens.size()) of `slot` with their tokens to `path` atomically (a temporary file in
// the same directory, then rename). tokens.size() must equal kv.n_cells(slot). durable: fsync the file
// before the rename and the directory after it (a /slots save); without it (parking) a power loss may leave
// a torn file under the name, which the size and checksum checks then refuse.
Result<uint64_t> SaveSlotState(const KvCache& kv, int slot, const std::vector<int32_t>& tokens,
                               uint64_t model_id, const std::string& path, uint64_t scope = 0,
                               bool durable = true);

// The size of the file SaveSlotState writes for `slot` as it is now.
uint64_t SlotStateBytes(const KvCache& kv, int slot);

// The number of tokens a slot file holds (its header only; full validation happens on restore).
Result<uint32_t> SlotStateTokens(const std::string& path);

// Validates everything of `path` against the cache but the checksum (which needs the rows: RestoreSlotState
// checks it) and returns its tokens, scope and size, without touching the cache. Errors as RestoreSlotState.
Result<SlotStateInfo> ReadSlotStateHeader(const KvCache& kv, uint64_t model_id, const std::string& path);

// Validates `path` against the cache (types, widths, layers, model, size) and reads its rows into `slot`,
// whose previous cells are released first; only the pages the file's cells need are committed. A file
// refused on its header or size leaves the slot untouched; a read that fails midway, or rows that do not
// match the checksum, leave it empty. Errors: kNotFound, kInvalidArgument (foreign, truncated, too long for
// the slot or corrupt, with what differs), kIo.
Result<SlotStateInfo> RestoreSlotState(KvCache& kv, int slot, uint64_t model_id, const std::string& path);

}  // namespace lazyslot
