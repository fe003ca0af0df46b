// libFuzzer target: any bytes as a slot state file (kv/kv_state.h), read back into a small KV cache the way
// /slots/{id}?action=restore and the parking store do: SlotStateTokens, ReadSlotStateHeader, then
// RestoreSlotState into a slot that already holds cells, beside another slot that holds cells too.
//
// Input: one mode byte, then the file. Mode bit 0 picks the cache (0: two global f16 layers; 1: three layers,
// two of them sliding-window, K q8_0 / V f32); bit 1 pads or cuts the file to the size its header implies and
// bit 2 rewrites its checksum (so mutated headers and rows get past those checks); bits 3-7 are how many
// cells (times 2) the restored slot holds before.
//
// Properties: no crash, no out-of-bounds read (ASan), no escaping exception; every error carries a message
// naming the file, with a code the routes map to 4xx/5xx (InvalidArgument 400, Io 500); ReadSlotStateHeader
// accepts exactly the files whose header RestoreSlotState accepts; a file refused on its header leaves the
// slot untouched, one refused later leaves it empty; the other slot is never touched; a restored slot holds
// the header's cells and floor with the file's rows, and saving it again writes the same bytes.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "core/hash.h"
#include "core/log.h"
#include "fuzz_check.h"
#include "kv/kv_cache.h"
#include "kv/kv_state.h"

namespace {

using lazyslot::KvCache;
using lazyslot::KvConfig;
using lazyslot::TensorType;

constexpr uint64_t kModelId = 0x6c617a79736c6f74ull;  // the seeds carry it (fuzz/make_seeds.py)
constexpr size_t kHeader = 88;                         // kv_state.cpp's Header
constexpr size_t kMaxFile = 1 << 20;

// Field offsets in the header (kv_state.h).
constexpr size_t kOffTokens = 64, kOffFloor = 68, kOffScope = 72, kOffChecksum = 80, kOffModel = 56;

template <typename T>
T Get(const std::string& f, size_t off) {
  T v;
  std::memcpy(&v, f.data() + off, sizeof v);
  return v;
}

std::unique_ptr<KvCache> MakeCache(bool windowed) {
  KvConfig c;
  c.n_slot = 2;
  if (!windowed) {
    c.n_layer = 2;
    c.n_ctx_slot = 48;
    c.n_embd_k = 32;
    c.n_embd_v = 16;
    c.head_dim = 16;
  } else {
    c.n_layer = 3;
    c.n_ctx_slot = 64;
    c.n_embd_k = c.n_embd_v = 32;
    c.head_dim = 32;
    c.type_k = TensorType::kQ8_0;
    c.type_v = TensorType::kF32;
    c.layer_window = {8, 0, 8};
    c.max_step = 16;
  }
  auto kv = KvCache::Create(c);
  FUZZ_CHECK(kv.ok(), kv.status().message());
  return std::move(kv).value();
}

struct Fixture {
  std::unique_ptr<KvCache> kv;
  int32_t other_cells;  // slot 1's cells, written once
};

Fixture& Cache(bool windowed) {
  static Fixture* f[2] = {nullptr, nullptr};
  if (f[windowed] == nullptr) f[windowed] = new Fixture{MakeCache(windowed), windowed ? 30 : 20};
  return *f[windowed];
}

uint8_t Tag(int slot, int il, int k, int32_t cell) {
  return static_cast<uint8_t>(1 + (slot * 97 + il * 13 + k * 5 + cell * 7) % 251);
}

void Fill(KvCache& kv, int slot, int32_t n) {
  for (int il = 0; il < kv.config().n_layer; ++il) {
    for (int32_t cell = 0; cell < n; ++cell) {
      std::memset(kv.KRow(il, slot, cell), Tag(slot, il, 0, cell), kv.k_row_bytes());
      std::memset(kv.VRow(il, slot, cell), Tag(slot, il, 1, cell), kv.v_row_bytes());
    }
  }
  kv.SetCells(slot, n);
}

bool AllBytes(const uint8_t* p, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != v) return false;
  return true;
}

// The slot still holds `n` cells written by Fill (on local layers, those from its floor on).
void CheckFilled(const KvCache& kv, int slot, int32_t n, const char* what) {
  FUZZ_CHECK(kv.n_cells(slot) == n, std::string(what) + ": slot " + std::to_string(slot) + " holds " +
                                        std::to_string(kv.n_cells(slot)) + " cells, expected " + std::to_string(n));
  for (int il = 0; il < kv.config().n_layer; ++il) {
    for (int32_t cell = kv.is_local(il) ? kv.local_floor(slot) : 0; cell < n; ++cell) {
      FUZZ_CHECK(AllBytes(kv.KRow(il, slot, cell), kv.k_row_bytes(), Tag(slot, il, 0, cell)) &&
                     AllBytes(kv.VRow(il, slot, cell), kv.v_row_bytes(), Tag(slot, il, 1, cell)),
                 std::string(what) + ": slot " + std::to_string(slot) + " row " + std::to_string(cell) +
                     " of layer " + std::to_string(il) + " changed");
    }
  }
}

uint64_t ExpectedSize(const KvCache& kv, uint32_t n_tokens, uint32_t floor) {
  uint64_t size = kHeader + uint64_t{n_tokens} * 4;
  for (int il = 0; il < kv.config().n_layer; ++il) {
    const uint64_t rows = kv.is_local(il) ? n_tokens - std::min(floor, n_tokens) : n_tokens;
    size += rows * (kv.k_row_bytes() + kv.v_row_bytes());
  }
  return size;
}

void CheckError(const lazyslot::Status& s, const std::string& path) {
  FUZZ_CHECK(!s.ok(), "error path with an OK status");
  FUZZ_CHECK(s.code() == lazyslot::Code::kInvalidArgument || s.code() == lazyslot::Code::kIo,
             "code " + std::to_string(static_cast<int>(s.code())) + ": " + s.message());
  FUZZ_CHECK(s.message().find(path) != std::string::npos, "message does not name the file: " + s.message());
}

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out.flush());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

const std::string& Dir() {
  static const std::string* dir = [] {
    const char* base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    auto* d = new std::string(std::string(base) + "/lazyslot-kv-fuzz-" + std::to_string(::getpid()));
    (void)::mkdir(d->c_str(), 0700);
    std::atexit([] {  // the scratch files go with the process
      for (const char* f : {"/slot.bin", "/again.bin"}) (void)::unlink((Dir() + f).c_str());
      (void)::rmdir(Dir().c_str());
    });
    return d;
  }();
  return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (lazyslot::SetLogLevel(lazyslot::LogLevel::kSilent), true);
  (void)quiet;
  if (size == 0 || size > kMaxFile) return 0;
  const uint8_t mode = data[0];
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  Fixture& fx = Cache(mode & 1);
  KvCache& kv = *fx.kv;
  if (kv.n_cells(1) != fx.other_cells) Fill(kv, 1, fx.other_cells);

  if ((mode & 2) && file.size() >= kHeader) {
    const uint64_t want = ExpectedSize(kv, Get<uint32_t>(file, kOffTokens), Get<uint32_t>(file, kOffFloor));
    if (want <= kMaxFile) file.resize(want, '\x5a');
  }
  if ((mode & 4) && file.size() >= kHeader) {
    std::memset(file.data() + kOffChecksum, 0, 8);
    lazyslot::Checksum64 sum;
    sum.Update(file.data(), file.size());
    const uint64_t digest = sum.Digest();
    std::memcpy(file.data() + kOffChecksum, &digest, 8);
  }
  const int32_t before = std::min<int32_t>((mode >> 3) * 2, kv.config().n_ctx_slot);
  (void)kv.Trim(0, 0);
  Fill(kv, 0, before);
  CheckFilled(kv, 0, before, "fill");

  const std::string path = Dir() + "/slot.bin";
  FUZZ_CHECK(WriteFile(path, file), "cannot write " + path);

  auto tokens = lazyslot::SlotStateTokens(path);
  if (tokens.ok()) {
    FUZZ_CHECK(file.size() >= kHeader && *tokens == Get<uint32_t>(file, kOffTokens), "SlotStateTokens");
  } else {
    CheckError(tokens.status(), path);
  }

  auto header = lazyslot::ReadSlotStateHeader(kv, kModelId, path);
  if (header.ok()) {
    FUZZ_CHECK(tokens.ok(), "header accepted, but SlotStateTokens refused it");
    FUZZ_CHECK(header->tokens.size() == *tokens && header->file_bytes == file.size() &&
                   header->model_id == kModelId && header->scope == Get<uint64_t>(file, kOffScope),
               "ReadSlotStateHeader info");
    FUZZ_CHECK(header->tokens.size() <= static_cast<size_t>(kv.config().n_ctx_slot), "more tokens than a slot");
    FUZZ_CHECK(header->tokens.empty() ||
                   std::memcmp(header->tokens.data(), file.data() + kHeader, header->tokens.size() * 4) == 0,
               "tokens differ from the file's");
  } else {
    CheckError(header.status(), path);
  }
  CheckFilled(kv, 0, before, "ReadSlotStateHeader");

  auto restored = lazyslot::RestoreSlotState(kv, 0, kModelId, path);
  CheckFilled(kv, 1, fx.other_cells, "restore into slot 0");
  if (!restored.ok()) {
    CheckError(restored.status(), path);
    if (!header.ok()) {
      CheckFilled(kv, 0, before, "a file refused on its header");
    } else {
      FUZZ_CHECK(kv.n_cells(0) == 0, "a failed restore left " + std::to_string(kv.n_cells(0)) + " cells");
    }
    return 0;
  }
  FUZZ_CHECK(header.ok(), "restored a file whose header ReadSlotStateHeader refused");
  FUZZ_CHECK(restored->tokens == header->tokens && restored->scope == header->scope, "restore info");
  const uint32_t n = Get<uint32_t>(file, kOffTokens);
  const uint32_t floor = Get<uint32_t>(file, kOffFloor);
  FUZZ_CHECK(kv.n_cells(0) == static_cast<int32_t>(n), "restored cells");
  FUZZ_CHECK(Get<uint64_t>(file, kOffModel) == kModelId, "model identity not checked");
  const int32_t held_from = kv.local_floor(0);
  FUZZ_CHECK(kv.window() > 0 || held_from == 0, "floor without local layers");
  FUZZ_CHECK(held_from >= static_cast<int32_t>(std::min(floor, n)) && held_from <= static_cast<int32_t>(n),
             "floor " + std::to_string(held_from) + " for file floor " + std::to_string(floor));
  // Rows: the file's, layer by layer (K then V), on local layers from the file's floor on.
  size_t off = kHeader + size_t{n} * 4;
  for (int il = 0; il < kv.config().n_layer; ++il) {
    const int32_t first = kv.is_local(il) ? static_cast<int32_t>(std::min(floor, n)) : 0;
    const size_t rows = n - first;
    for (int k = 0; k < 2; ++k) {
      const size_t row = k == 0 ? kv.k_row_bytes() : kv.v_row_bytes();
      for (int32_t cell = kv.is_local(il) ? held_from : 0; cell < static_cast<int32_t>(n); ++cell) {
        const uint8_t* mine = k == 0 ? kv.KRow(il, 0, cell) : kv.VRow(il, 0, cell);
        FUZZ_CHECK(std::memcmp(mine, file.data() + off + (cell - first) * row, row) == 0,
                   "row " + std::to_string(cell) + " of layer " + std::to_string(il) + " differs from the file");
      }
      off += rows * row;
    }
  }
  FUZZ_CHECK(off == file.size(), "rows end at " + std::to_string(off) + " of " + std::to_string(file.size()));
  // Saved again, the slot is the same file (when nothing slid out of the window while it was restored).
  if (held_from == static_cast<int32_t>(std::min(floor, n))) {
    const std::string again = Dir() + "/again.bin";
    auto saved = lazyslot::SaveSlotState(kv, 0, restored->tokens, kModelId, again, restored->scope,
                                         /*durable=*/false);
    FUZZ_CHECK(saved.ok(), saved.status().message());
    FUZZ_CHECK(*saved == file.size() && ReadFile(again) == file, "saved again, the file differs");
  }
  return 0;
}
