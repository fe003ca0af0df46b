// Slot state files (see kv_state.h): header, token ids, then each layer's held K and V rows.
#include "kv/kv_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/hash.h"
#include "core/vm.h"

namespace lazyslot {
namespace {

constexpr char kMagic[8] = {'L', 'Z', 'S', 'L', 'O', 'T', 'K', 'V'};
constexpr uint32_t kVersion = 2;

#pragma pack(push, 1)
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t type_k, type_v;
  uint32_t n_layer;
  uint64_t n_embd_k, n_embd_v;
  uint64_t k_row_bytes, v_row_bytes;
  uint64_t model_id;
  uint32_t n_tokens;
  uint32_t local_floor;  // local layers' first row (0 without them)
  uint64_t scope;        // cache scope of the cells
  uint64_t checksum;     // Checksum64 of this header with checksum 0, the tokens and the rows
};
#pragma pack(pop)
static_assert(sizeof(Header) == 88, "slot file header is 88 bytes");

// Starts a file's checksum: the header with its checksum field 0.
Checksum64 HeaderChecksum(Header h) {
  h.checksum = 0;
  Checksum64 sum;
  sum.Update(&h, sizeof h);
  return sum;
}

std::string Errno() { return std::strerror(errno); }

// Writes/reads all of a buffer, retrying short transfers.
bool WriteAll(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    b += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    const ssize_t r = ::read(fd, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    b += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Rows of layer il a file holds: all n_tokens, or on a local layer those from local_floor on.
uint64_t LayerRows(const Header& h, const KvCache& kv, int il) {
  return kv.is_local(il) ? h.n_tokens - std::min(h.local_floor, h.n_tokens) : h.n_tokens;
}

uint64_t ExpectedSize(const Header& h, const KvCache& kv) {
  uint64_t size = sizeof(Header) + uint64_t{h.n_tokens} * sizeof(int32_t);
  for (uint32_t il = 0; il < h.n_layer; ++il) size += LayerRows(h, kv, static_cast<int>(il)) * (h.k_row_bytes + h.v_row_bytes);
  return size;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_;
};

}  // namespace

Result<uint64_t> SaveSlotState(const KvCache& kv, int slot, const std::vector<int32_t>& tokens,
                               uint64_t model_id, const std::string& path, uint64_t scope, bool durable) {
  const KvConfig& c = kv.config();
  if (slot < 0 || slot >= c.n_slot)
    return InvalidArgument("slot " + std::to_string(slot) + " does not exist");
  if (static_cast<int64_t>(tokens.size()) != kv.n_cells(slot)) {
    return Internal("slot " + std::to_string(slot) + " holds " + std::to_string(kv.n_cells(slot)) +
                    " cells but " + std::to_string(tokens.size()) + " tokens were given");
  }
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.type_k = static_cast<uint32_t>(c.type_k);
  h.type_v = static_cast<uint32_t>(c.type_v);
  h.n_layer = static_cast<uint32_t>(c.n_layer);
  h.n_embd_k = static_cast<uint64_t>(c.n_embd_k);
  h.n_embd_v = static_cast<uint64_t>(c.n_embd_v);
  h.k_row_bytes = kv.k_row_bytes();
  h.v_row_bytes = kv.v_row_bytes();
  h.model_id = model_id;
  h.n_tokens = static_cast<uint32_t>(tokens.size());
  h.local_floor = static_cast<uint32_t>(kv.local_floor(slot));
  h.scope = scope;

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return IoError("cannot create " + tmp + ": " + Errno());
  // The header goes first with checksum 0 and again at the end with the sum of what followed it.
  Checksum64 sum = HeaderChecksum(h);
  auto write = [&](const void* p, size_t n) {
    sum.Update(p, n);
    return WriteAll(fd.get(), p, n);
  };
  bool ok = WriteAll(fd.get(), &h, sizeof h) && write(tokens.data(), tokens.size() * sizeof(int32_t));
  // Rows of a (layer, K|V, slot) run are contiguous: one write per run (a local layer's from its floor).
  for (int il = 0; ok && il < c.n_layer; ++il) {
    const int32_t first = kv.is_local(il) ? kv.local_floor(slot) : 0;
    const size_t rows = LayerRows(h, kv, il);
    ok = write(kv.KRow(il, slot, first), rows * kv.k_row_bytes()) &&
         write(kv.VRow(il, slot, first), rows * kv.v_row_bytes());
  }
  h.checksum = sum.Digest();
  if (ok) ok = ::pwrite(fd.get(), &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h);
  if (ok && durable) ok = ::fsync(fd.get()) == 0;
  const std::string err = ok ? "" : Errno();
  if (::close(fd.release()) != 0 && ok) ok = false;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = err.empty() ? Errno() : err;
    ::unlink(tmp.c_str());
    return IoError("cannot write slot file " + path + ": " + why);
  }
  if (!durable) return ExpectedSize(h, kv);
  // The rename is durable only once the directory entry is on disk too.
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() >= 0) (void)::fsync(dfd.get());
  return ExpectedSize(h, kv);
}

uint64_t SlotStateBytes(const KvCache& kv, int slot) {
  Header h{};
  h.n_layer = static_cast<uint32_t>(kv.config().n_layer);
  h.k_row_bytes = kv.k_row_bytes();
  h.v_row_bytes = kv.v_row_bytes();
  h.n_tokens = static_cast<uint32_t>(kv.n_cells(slot));
  h.local_floor = static_cast<uint32_t>(kv.local_floor(slot));
  return ExpectedSize(h, kv);
}

Result<uint32_t> SlotStateTokens(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return NotFound("slot file " + path + " does not exist");
    return IoError("cannot open " + path + ": " + Errno());
  }
  Header h{};
  if (!ReadAll(fd.get(), &h, sizeof h))
    return InvalidArgument("slot file " + path + ": too short for a header");
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) {
    return InvalidArgument("slot file " + path + ": not a lazyslot slot file (bad magic)");
  }
  if (h.version != kVersion) {
    return InvalidArgument("slot file " + path + ": version " + std::to_string(h.version) +
                           ", this build reads version " + std::to_string(kVersion));
  }
  return h.n_tokens;
}

namespace {

// Opens `path` and validates its header and size against the cache; on success *h holds the header and the
// descriptor is positioned at the tokens.
Result<int> OpenChecked(const KvCache& kv, uint64_t model_id, const std::string& path, Header* out,
                        uint64_t* file_bytes) {
  const KvConfig& c = kv.config();
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return NotFound("slot file " + path + " does not exist");
    return IoError("cannot open " + path + ": " + Errno());
  }
  struct stat sb;
  if (::fstat(fd.get(), &sb) != 0) return IoError("cannot stat " + path + ": " + Errno());
  const uint64_t size = static_cast<uint64_t>(sb.st_size);
  Header h{};
  const std::string what = "slot file " + path + ": ";
  if (size < sizeof h || !ReadAll(fd.get(), &h, sizeof h)) {
    return InvalidArgument(what + "too short for a header (" + std::to_string(size) + " bytes, need " +
                           std::to_string(sizeof h) + ")");
  }
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0)
    return InvalidArgument(what + "not a lazyslot slot file (bad magic)");
  if (h.version != kVersion) {
    return InvalidArgument(what + "version " + std::to_string(h.version) + ", this build reads version " +
                           std::to_string(kVersion));
  }
  if (h.model_id != model_id) {
    char ids[80];
    std::snprintf(ids, sizeof ids, " (model identity %016llx, this server's %016llx)",
                  static_cast<unsigned long long>(h.model_id), static_cast<unsigned long long>(model_id));
    return InvalidArgument(what + "saved with a different model" + ids);
  }
  auto type_name = [](uint32_t t) {
    const TypeTraits* tr = LookupType(t);
    return std::string(tr ? tr->name : "unknown");
  };
  if (h.type_k != static_cast<uint32_t>(c.type_k) || h.type_v != static_cast<uint32_t>(c.type_v)) {
    return InvalidArgument(what + "saved with cache types K " + type_name(h.type_k) + " / V " +
                           type_name(h.type_v) + ", this server uses K " + TypeName(c.type_k) + " / V " +
                           TypeName(c.type_v));
  }
  if (h.n_layer != static_cast<uint32_t>(c.n_layer) || h.n_embd_k != static_cast<uint64_t>(c.n_embd_k) ||
      h.n_embd_v != static_cast<uint64_t>(c.n_embd_v) || h.k_row_bytes != kv.k_row_bytes() ||
      h.v_row_bytes != kv.v_row_bytes()) {
    return InvalidArgument(what + "shape " + std::to_string(h.n_layer) + " layers x " +
                           std::to_string(h.n_embd_k) + "/" + std::to_string(h.n_embd_v) +
                           " does not match the cache's " + std::to_string(c.n_layer) + " x " +
                           std::to_string(c.n_embd_k) + "/" + std::to_string(c.n_embd_v));
  }
  if (h.n_tokens > static_cast<uint32_t>(c.n_ctx_slot)) {
    return InvalidArgument(what + "holds " + std::to_string(h.n_tokens) + " tokens, but a slot holds " +
                           std::to_string(c.n_ctx_slot));
  }
  // Local layers hold the window before the end: a floor past it (or on a model without them) is foreign.
  const uint32_t max_floor = kv.window() > 0 ? std::max<int64_t>(0, int64_t{h.n_tokens} - kv.window() + 1) : 0;
  if (h.local_floor > max_floor) {
    return InvalidArgument(what + "its local layers start at cell " + std::to_string(h.local_floor) + " of " +
                           std::to_string(h.n_tokens) + ", but this cache needs them from cell " +
                           std::to_string(max_floor) + " or earlier (window " + std::to_string(kv.window()) + ")");
  }
  const uint64_t expect = ExpectedSize(h, kv);
  if (size != expect) {
    return InvalidArgument(what + std::to_string(size) + " bytes, but its header (" +
                           std::to_string(h.n_tokens) + " tokens) implies " + std::to_string(expect) +
                           (size < expect ? " (truncated)" : " (trailing bytes)"));
  }
  *out = h;
  *file_bytes = size;
  return fd.release();
}

}  // namespace

Result<SlotStateInfo> ReadSlotStateHeader(const KvCache& kv, uint64_t model_id, const std::string& path) {
  Header h{};
  SlotStateInfo info;
  LS_ASSIGN_OR_RETURN(const int raw, OpenChecked(kv, model_id, path, &h, &info.file_bytes));
  Fd fd(raw);
  info.model_id = h.model_id;
  info.scope = h.scope;
  info.tokens.resize(h.n_tokens);
  if (!ReadAll(fd.get(), info.tokens.data(), info.tokens.size() * sizeof(int32_t))) {
    return IoError("slot file " + path + ": read failed: " + Errno());
  }
  return info;
}

Result<SlotStateInfo> RestoreSlotState(KvCache& kv, int slot, uint64_t model_id, const std::string& path) {
  const KvConfig& c = kv.config();
  if (slot < 0 || slot >= c.n_slot)
    return InvalidArgument("slot " + std::to_string(slot) + " does not exist");
  Header h{};
  SlotStateInfo info;
  LS_ASSIGN_OR_RETURN(const int raw, OpenChecked(kv, model_id, path, &h, &info.file_bytes));
  Fd fd(raw);
  const std::string what = "slot file " + path + ": ";
  info.model_id = h.model_id;
  info.scope = h.scope;
  info.tokens.resize(h.n_tokens);
  if (!ReadAll(fd.get(), info.tokens.data(), info.tokens.size() * sizeof(int32_t))) {
    return IoError(what + "read failed: " + Errno());
  }
  // The slot's old cells go first (its pages kept for the file's cells, not released and committed again);
  // the rows are then read straight into the arena, which holds exactly the pages the file's cells occupy,
  // and summed there.
  LS_RETURN_IF_ERROR(kv.Rewrite(slot, static_cast<int32_t>(h.n_tokens)));
  // Each run's pages are committed in one call before the read, not faulted in one by one during it.
  auto populate = [](uint8_t* p, size_t n) {
    if (n == 0) return;
    const uintptr_t page = vm::PageSize();
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p) / page * page;
    (void)vm::PopulateForWrite(reinterpret_cast<void*>(begin), reinterpret_cast<uintptr_t>(p) + n - begin);
  };
  Checksum64 sum = HeaderChecksum(h);
  sum.Update(info.tokens.data(), info.tokens.size() * sizeof(int32_t));
  bool ok = true;
  for (int il = 0; ok && il < c.n_layer; ++il) {
    const int32_t first = kv.is_local(il) ? static_cast<int32_t>(h.local_floor) : 0;
    const size_t rows = LayerRows(h, kv, il);
    populate(kv.KRow(il, slot, first), rows * kv.k_row_bytes());
    populate(kv.VRow(il, slot, first), rows * kv.v_row_bytes());
    ok = ReadAll(fd.get(), kv.KRow(il, slot, first), rows * kv.k_row_bytes()) &&
         ReadAll(fd.get(), kv.VRow(il, slot, first), rows * kv.v_row_bytes());
    if (ok) {
      sum.Update(kv.KRow(il, slot, first), rows * kv.k_row_bytes());
      sum.Update(kv.VRow(il, slot, first), rows * kv.v_row_bytes());
    }
  }
  const auto n = static_cast<int32_t>(h.n_tokens);
  kv.SetRestored(slot, n, static_cast<int32_t>(h.local_floor));
  if (!ok) {
    const std::string why = Errno();
    (void)kv.Trim(slot, 0);  // gives back what was read
    return IoError(what + "read failed: " + why);
  }
  if (sum.Digest() != h.checksum) {
    (void)kv.Trim(slot, 0);
    return InvalidArgument(what + "corrupt (its checksum does not match its contents)");
  }
  return info;
}

}  // namespace lazyslot
