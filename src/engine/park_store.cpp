// The park store (park_store.h): a directory of slot files indexed by their tokens.
#include "engine/park_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/hash.h"
#include "core/log.h"

namespace lazyslot {
namespace {

constexpr char kSuffix[] = ".lzkv";

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

double MiB(uint64_t b) { return static_cast<double>(b) / (1 << 20); }

}  // namespace

Result<std::unique_ptr<ParkStore>> ParkStore::Open(const std::string& dir, uint64_t max_bytes, const KvCache& kv,
                                                   uint64_t model_id) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return InvalidArgument("--kv-park " + dir + ": cannot create the directory: " + ec.message());
  if (!fs::is_directory(dir, ec)) return InvalidArgument("--kv-park " + dir + ": not a directory");
  // Writable: a probe file created and removed (access() would not see a read-only mount).
  const std::string probe = dir + "/.probe." + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return InvalidArgument("--kv-park " + dir + ": not writable (" + std::string(std::strerror(errno)) + ")");
  }
  ::close(fd);
  ::unlink(probe.c_str());
  std::unique_ptr<ParkStore> store(new ParkStore(dir, max_bytes, model_id));
  // What a previous process left: temporaries of writes it never finished (killed mid-write) go, and each
  // file is checked against this cache and model (the checksum is checked when it is read back).
  struct Found {
    fs::file_time_type mtime;
    SlotStateInfo info;
    std::string path;
  };
  std::vector<Found> found;
  for (const fs::directory_entry& d : fs::directory_iterator(dir, ec)) {
    const std::string path = d.path().string();
    const std::string name = d.path().filename().string();
    if (!d.is_regular_file(ec)) continue;
    if (name.find(".tmp.") != std::string::npos && name.rfind("park-", 0) == 0) {
      ::unlink(path.c_str());
      LS_LOG_INFO("kv park: removed %s, a write that never finished", name.c_str());
      continue;
    }
    if (!EndsWith(name, kSuffix)) continue;
    Result<SlotStateInfo> info = ReadSlotStateHeader(kv, model_id, path);
    if (!info.ok()) {
      ::unlink(path.c_str());
      LS_LOG_WARN("kv park: deleted %s, which this server cannot use: %s", name.c_str(),
                  info.status().message().c_str());
      continue;
    }
    found.push_back({d.last_write_time(ec), std::move(info).value(), path});
  }
  // Oldest first, so the least recently written file is the first to go under the cap.
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.mtime < b.mtime; });
  for (Found& f : found) {
    Entry e;
    e.path = f.path;
    e.tokens = std::move(f.info.tokens);
    e.scope = f.info.scope;
    e.bytes = f.info.file_bytes;
    store->Add(std::move(e));
  }
  while (store->max_bytes_ > 0 && store->bytes_ > store->max_bytes_) {
    store->Remove(store->Oldest(), "over --kv-park-max");
  }
  LS_LOG_INFO("kv park: %s holds %zu parked conversations, %.1f MiB%s", dir.c_str(), store->n_live_,
              MiB(store->bytes_), max_bytes > 0 ? "" : " (no --kv-park-max)");
  return store;
}

std::string ParkStore::NameFor(const std::vector<TokenId>& tokens, uint64_t scope) const {
  Checksum64 sum(scope);
  sum.Update(tokens.data(), tokens.size() * sizeof(TokenId));
  char name[64];
  std::snprintf(name, sizeof name, "park-%016llx-%zu%s", static_cast<unsigned long long>(sum.Digest()),
                tokens.size(), kSuffix);
  return dir_ + "/" + name;
}

int ParkStore::Add(Entry e) {
  int id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<int>(entries_.size());
    entries_.emplace_back();
  }
  e.live = true;
  e.used = ++tick_;
  bytes_ += e.bytes;
  ++n_live_;
  index_.Extend(id, e.tokens, e.scope);
  entries_[id] = std::move(e);
  return id;
}

int ParkStore::Oldest() const {
  int oldest = -1;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.live && (oldest < 0 || e.used < entries_[oldest].used)) oldest = static_cast<int>(i);
  }
  return oldest;
}

void ParkStore::Remove(int entry, const char* why) {
  if (entry < 0) return;
  Entry& e = entries_[entry];
  if (!e.live) return;
  if (::unlink(e.path.c_str()) != 0 && errno != ENOENT) {
    LS_LOG_WARN("kv park: cannot delete %s: %s", e.path.c_str(), std::strerror(errno));
  }
  LS_LOG_DEBUG("kv park: deleted %s (%s)", e.path.c_str(), why);
  index_.Truncate(entry, 0);
  bytes_ -= e.bytes;
  --n_live_;
  e = Entry{};
  free_.push_back(entry);
}

Result<uint64_t> ParkStore::Park(const KvCache& kv, int slot, const std::vector<TokenId>& tokens,
                                 uint64_t scope) {
  const std::string path = NameFor(tokens, scope);
  for (Entry& e : entries_) {
    if (e.live && e.path == path && e.scope == scope && e.tokens == tokens) {
      e.used = ++tick_;  // held already: the write is saved, and the file is fresh again
      return uint64_t{0};
    }
  }
  const uint64_t need = SlotStateBytes(kv, slot);
  if (max_bytes_ > 0 && need > max_bytes_) {
    ++counters_.failures;
    return ResourceExhausted("the conversation's " + std::to_string(need) + " bytes exceed --kv-park-max " +
                             std::to_string(max_bytes_));
  }
  // Room first, so a write never takes the disk past the cap.
  while (max_bytes_ > 0 && bytes_ + need > max_bytes_) {
    const int oldest = Oldest();
    if (oldest < 0) break;
    Remove(oldest, "least recently used, over --kv-park-max");
  }
  // Not fsync'd: a file torn by a power loss fails the size or checksum check and is deleted, never used, so
  // the write runs at memory speed rather than the disk's (the kernel writes it back).
  Result<uint64_t> written = SaveSlotState(kv, slot, tokens, model_id_, path, scope, /*durable=*/false);
  if (!written.ok()) {
    ++counters_.failures;
    return written.status();
  }
  // Files this one supersedes: a prefix of these tokens, in this scope (the conversation went on).
  std::vector<int> older;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.live && e.scope == scope && e.tokens.size() < tokens.size() &&
        std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin())) {
      older.push_back(static_cast<int>(i));
    }
  }
  for (int id : older) Remove(id, "superseded by a longer one of the same conversation");
  Entry e;
  e.path = path;
  e.tokens = tokens;
  e.scope = scope;
  e.bytes = *written;
  Add(std::move(e));
  ++counters_.parks;
  return *written;
}

ParkStore::Match ParkStore::Find(const std::vector<TokenId>& prompt, int32_t limit, uint64_t scope) const {
  Match m;
  int32_t blocks = 0;
  for (int id : index_.Longest(prompt, limit, scope, &blocks)) {
    const Entry& e = entries_[id];
    if (!e.live || e.scope != scope) continue;
    const size_t n = std::min({e.tokens.size(), prompt.size(), static_cast<size_t>(std::max(limit, 0))});
    int32_t common = 0;
    while (static_cast<size_t>(common) < n && e.tokens[common] == prompt[common]) ++common;
    if (common > m.common) {
      m.entry = id;
      m.common = common;
      m.n_tokens = static_cast<int32_t>(e.tokens.size());
    }
  }
  return m;
}

Result<SlotStateInfo> ParkStore::Restore(KvCache& kv, int slot, const Match& m) {
  Entry& e = entries_[m.entry];
  Result<SlotStateInfo> info = RestoreSlotState(kv, slot, model_id_, e.path);
  Status bad = info.status();
  if (info.ok() && (info->tokens != e.tokens || info->scope != e.scope)) {
    bad = InvalidArgument("slot file " + e.path + ": its tokens changed since it was indexed");
    (void)kv.Trim(slot, 0);
  }
  if (!bad.ok()) {
    ++counters_.failures;
    LS_LOG_WARN("kv park: deleted %s, which failed to restore (the request computes instead): %s",
                e.path.c_str(), bad.message().c_str());
    Remove(m.entry, "failed to restore");
    return bad;
  }
  e.used = ++tick_;
  ++counters_.resumes;
  return info;
}

}  // namespace lazyslot
