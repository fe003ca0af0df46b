// Mapping: a GGUF file mapped at a 2 MiB-aligned address, and its optional copy on transparent huge pages
// moved over the same addresses (mremap), so tensor pointers never change. Linux only.
#include "gguf/mapping.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/log.h"
#include "core/vm.h"

namespace lazyslot::gguf {
namespace {

constexpr uint64_t kHugePage = uint64_t{2} << 20;

uint64_t AlignUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

// "what failed: <strerror(err)>"; callers read errno into `err` before building `what`.
std::string Errno(const std::string& what, int err) { return what + " failed: " + std::strerror(err); }

// A region of `bytes` (a multiple of 2 MiB) at a 2 MiB-aligned address: `bytes` + 2 MiB are mapped, and the
// slack on either side of the aligned part is unmapped again.
Result<uint8_t*> MapAligned(uint64_t bytes, int prot, int flags) {
  void* p = ::mmap(nullptr, bytes + kHugePage, prot, flags | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    return ResourceExhausted(Errno("mmap of " + std::to_string(bytes) + " bytes", err));
  }
  uint8_t* raw = static_cast<uint8_t*>(p);
  uint8_t* base = reinterpret_cast<uint8_t*>(AlignUp(reinterpret_cast<uintptr_t>(raw), kHugePage));
  if (base > raw) ::munmap(raw, static_cast<size_t>(base - raw));
  ::munmap(base + bytes, static_cast<size_t>(raw + bytes + kHugePage - (base + bytes)));
  return base;
}

// Whether the kernel backs MADV_HUGEPAGE regions with huge pages ("[always]" or "[madvise]").
Status HugePagesAvailable() {
  const char* path = "/sys/kernel/mm/transparent_hugepage/enabled";
  FILE* f = std::fopen(path, "r");
  if (!f) return Unavailable(std::string("transparent huge pages: cannot read ") + path);
  char line[128] = {};
  const bool read = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  if (!read || std::strstr(line, "[never]") != nullptr) {
    return Unavailable(std::string("transparent huge pages are off (") + path + ": never)");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Mapping>> Mapping::Map(int fd, uint64_t size, const std::string& path) {
  std::unique_ptr<Mapping> m(new Mapping());
  m->fd_ = fd;
  m->path_ = path;
  m->size_ = size;
  const uint64_t region = AlignUp(size, kHugePage);
  // The region is reserved inaccessible first; the file then covers its start, the rest stays reserved.
  Result<uint8_t*> base = MapAligned(region, PROT_NONE, MAP_NORESERVE);
  if (!base.ok()) return IoError("gguf: " + path + ": " + base.status().message());
  m->base_ = *base;
  m->region_ = region;
  if (::mmap(m->base_, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
    const int err = errno;
    return IoError("gguf: " + path + ": " + Errno("mmap", err));
  }
  return m;
}

Mapping::~Mapping() {
  if (base_ != nullptr) ::munmap(base_, region_);
  if (fd_ >= 0) ::close(fd_);
}

bool Mapping::huge_pages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return copied_;
}

Result<uint64_t> Mapping::ResidentBytes() const { return vm::RangeRssBytes(base_, region_); }

Status Mapping::CopyToHugePages(Ranges file_ranges) {
  std::lock_guard<std::mutex> lock(mu_);
  if (copied_) return Status::Ok();
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  file_pages_.clear();
  for (const auto& [offset, size] : file_ranges) {
    const uint64_t begin = AlignUp(offset, page), end = std::min(offset + size, size_) / page * page;
    if (begin >= end) continue;
    if (!file_pages_.empty() && begin <= file_pages_.back().second) {
      file_pages_.back().second = std::max(file_pages_.back().second, end);
    } else {
      file_pages_.push_back({begin, end});
    }
  }
  LS_RETURN_IF_ERROR(CopyLocked());
  wanted_ = true;
  return Status::Ok();
}

Status Mapping::CopyLocked() {
  LS_RETURN_IF_ERROR(HugePagesAvailable());
  Result<uint8_t*> copy = MapAligned(region_, PROT_READ | PROT_WRITE, 0);
  if (!copy.ok()) return copy.status();
  // Unmaps the copy and returns `what` failed with errno's reason.
  auto fail = [&](const char* what) {
    const int err = errno;
    ::munmap(*copy, region_);
    return IoError("gguf: " + path_ + ": " + Errno(what, err));
  };
  if (::madvise(*copy, region_, MADV_HUGEPAGE) != 0) return fail("madvise(MADV_HUGEPAGE)");
  // The file's bytes between the ranges left to the file mapping.
  uint64_t from = 0;
  for (size_t r = 0; r <= file_pages_.size(); ++r) {
    const uint64_t to = r < file_pages_.size() ? file_pages_[r].first : size_;
    for (uint64_t done = from; done < to;) {
      const ssize_t n = ::pread(fd_, *copy + done, to - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) errno = EIO;  // the file is shorter than when it was opened
      if (n <= 0) return fail("read");
      done += static_cast<uint64_t>(n);
    }
    if (r < file_pages_.size()) from = file_pages_[r].second;
  }
  if (transform_) transform_(*copy);
  // Read-only like the file mapping; then the copy takes the mapping's place, page tables and all.
  if (::mprotect(*copy, region_, PROT_READ) != 0) return fail("mprotect");
  if (::mremap(*copy, region_, region_, MREMAP_MAYMOVE | MREMAP_FIXED, base_) == MAP_FAILED) {
    return fail("mremap");
  }
  copied_ = true;
  // The ranges left to the file are mapped from it again over the copy's untouched pages.
  for (const auto& [begin, end] : file_pages_) {
    if (::mmap(base_ + begin, end - begin, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd_, static_cast<off_t>(begin)) ==
        MAP_FAILED) {
      const int err = errno;
      (void)RemapFileLocked();  // all of it the file mapping again, which serves the same bytes
      return IoError("gguf: " + path_ + ": " + Errno("mmap", err));
    }
  }
  return Status::Ok();
}

Status Mapping::SetCopyTransform(Transform transform) {
  std::lock_guard<std::mutex> lock(mu_);
  transform_ = std::move(transform);
  if (!copied_ || !transform_) return Status::Ok();
  if (::mprotect(base_, region_, PROT_READ | PROT_WRITE) != 0) {
    const int err = errno;
    transform_ = nullptr;  // the copy keeps the file's bytes
    return IoError("gguf: " + path_ + ": " + Errno("mprotect", err));
  }
  transform_(base_);
  if (::mprotect(base_, region_, PROT_READ) != 0) {  // the rewrite stands; only the protection is lost
    const int err = errno;
    LS_LOG_WARN("gguf: %s: the rewritten copy stays writable (%s)", path_.c_str(),
                Errno("mprotect", err).c_str());
  }
  return Status::Ok();
}

Status Mapping::RemapFileLocked() {
  // The file over the copy's pages (which go back to the kernel), then the tail past it reserved again.
  const uint64_t mapped = AlignUp(size_, static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)));
  if (::mmap(base_, size_, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd_, 0) == MAP_FAILED ||
      (mapped < region_ &&
       ::mmap(base_ + mapped, region_ - mapped, PROT_NONE,
              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)) {
    const int err = errno;
    return IoError("gguf: " + path_ + ": " + Errno("mmap", err));
  }
  copied_ = false;
  return Status::Ok();
}

Status Mapping::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  if (copied_) return RemapFileLocked();
  if (::madvise(base_, size_, MADV_DONTNEED) != 0) {
    const int err = errno;
    return IoError("gguf: " + path_ + ": " + Errno("madvise(MADV_DONTNEED)", err));
  }
  return Status::Ok();
}

Status Mapping::RestoreCopy() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!wanted_ || copied_) return Status::Ok();
  return CopyLocked();
}

}  // namespace lazyslot::gguf
