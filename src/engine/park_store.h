// Parked conversations (--kv-park DIR, issue 39): before an idle slot's KV is released (idle timeout,
// --kv-park-after, budget eviction, a slot reassigned to another conversation), its cells are written to DIR
// as a slot file (kv/kv_state.h: atomic, checksummed, only the cells held). A later prompt that starts with a
// parked conversation's tokens reads the file back instead of computing them.
//
// The store indexes each file's tokens by 32-token block chain hashes (engine/prefix_index.h) seeded with its
// cache scope, so the longest parked prefix of a prompt costs O(prompt / 32) lookups whatever the number of
// files; the tokens decide. Files are named by a hash of (scope, tokens): the same conversation parked twice
// is one file. The disk used stays under --kv-park-max, least recently used files deleted first. A file that
// is foreign (another model, cache types, shape), truncated, corrupt or half-written is never used: it is
// deleted with one log line and the request computes. Files survive a restart: Open indexes what a previous
// process of the same model left. Scheduler thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/prefix_index.h"
#include "kv/kv_cache.h"
#include "kv/kv_state.h"

namespace lazyslot {

class ParkStore {
 public:
  struct Counters {
    uint64_t parks = 0;     // files written
    uint64_t resumes = 0;   // files read back into a slot
    uint64_t failures = 0;  // writes that failed (disk full, I/O) and files refused on reading
  };
  struct Match {
    int entry = -1;       // -1: none
    int32_t common = 0;   // prompt tokens the file holds (its tokens' common prefix with the prompt)
    int32_t n_tokens = 0; // all its tokens (a restore reads them all)
  };

  // Opens (creating it if missing) `dir`, which must be a writable directory, for a cache of this shape and
  // model; deletes leftover temporaries and every file this cache cannot use, and indexes the rest.
  // max_bytes 0: no cap.
  static Result<std::unique_ptr<ParkStore>> Open(const std::string& dir, uint64_t max_bytes, const KvCache& kv,
                                                 uint64_t model_id);

  // Writes `slot`'s cells (`tokens`, scope `scope`) unless a file holds exactly them already; files whose
  // tokens are a prefix of these are deleted (superseded); older files go while the cap needs room. Returns
  // the bytes written (0: held already).
  Result<uint64_t> Park(const KvCache& kv, int slot, const std::vector<TokenId>& tokens, uint64_t scope);
  // The file holding the longest prefix of `prompt` (at most `limit` tokens) in `scope`.
  Match Find(const std::vector<TokenId>& prompt, int32_t limit, uint64_t scope) const;
  // Reads the match's file into `slot` (all its cells; the caller trims to what it reuses). A file that
  // fails (missing, foreign, truncated, corrupt, tokens changed) is deleted with one log line and the slot
  // left empty.
  Result<SlotStateInfo> Restore(KvCache& kv, int slot, const Match& m);

  const std::string& dir() const { return dir_; }
  uint64_t bytes() const { return bytes_; }
  size_t files() const { return n_live_; }
  const Counters& counters() const { return counters_; }
  std::string path(int entry) const { return entries_[entry].path; }

 private:
  struct Entry {
    std::string path;
    std::vector<TokenId> tokens;
    uint64_t scope = 0;
    uint64_t bytes = 0;
    uint64_t used = 0;  // tick of the last park or resume: the least recent goes first
    bool live = false;
  };
  ParkStore(std::string dir, uint64_t max_bytes, uint64_t model_id)
      : dir_(std::move(dir)), max_bytes_(max_bytes), model_id_(model_id) {}
  std::string NameFor(const std::vector<TokenId>& tokens, uint64_t scope) const;
  int Add(Entry e);
  void Remove(int entry, const char* why);  // the file and its entry (entry -1: nothing)
  int Oldest() const;                       // the least recently used live entry, -1 when none

  std::string dir_;
  uint64_t max_bytes_ = 0;
  uint64_t model_id_ = 0;
  std::vector<Entry> entries_;
  std::vector<int> free_;  // ids of removed entries, reused
  PrefixIndex index_{0};
  uint64_t bytes_ = 0;
  size_t n_live_ = 0;
  uint64_t tick_ = 0;
  Counters counters_;
};

}  // namespace lazyslot
