// Virtual-memory helpers on Linux: mmap/madvise/mincore and /proc/self/status.
#include "core/vm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace lazyslot::vm {

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

Result<void*> Reserve(size_t bytes) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return ResourceExhausted("cannot reserve " + std::to_string(bytes) + " bytes of address space: " +
                             std::strerror(errno));
  }
  return p;
}

void Unreserve(void* p, size_t bytes) {
  if (p && bytes) munmap(p, bytes);
}

Status Release(void* p, size_t bytes) {
  if (!p || bytes == 0) return Status::Ok();
  if (madvise(p, AlignUp(bytes, PageSize()), MADV_DONTNEED) != 0) {
    return IoError(std::string("madvise(MADV_DONTNEED) failed: ") + std::strerror(errno));
  }
  return Status::Ok();
}

Result<int> CreateMemoryFile(const char* name, size_t bytes) {
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return IoError(std::string("memfd_create failed: ") + std::strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    close(fd);
    return ResourceExhausted("cannot size a memory file to " + std::to_string(bytes) + " bytes: " +
                             std::strerror(err));
  }
  return fd;
}

Result<void*> MapMemoryFile(int fd, size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    return ResourceExhausted("cannot map a memory file of " + std::to_string(bytes) + " bytes: " +
                             std::strerror(errno));
  }
  return p;
}

Status MapFilePages(void* p, size_t bytes, int fd, uint64_t offset) {
  if (bytes == 0) return Status::Ok();
  void* got = mmap(p, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd,
                   static_cast<off_t>(offset));
  if (got == MAP_FAILED) return IoError(std::string("mmap(MAP_FIXED) of file pages failed: ") + std::strerror(errno));
  return Status::Ok();
}

Status RemoveFilePages(void* p, size_t bytes) {
  if (!p || bytes == 0) return Status::Ok();
  if (madvise(p, AlignUp(bytes, PageSize()), MADV_REMOVE) != 0) {
    return IoError(std::string("madvise(MADV_REMOVE) failed: ") + std::strerror(errno));
  }
  return Status::Ok();
}

Result<uint64_t> MemoryFileBytes(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return IoError(std::string("fstat failed: ") + std::strerror(errno));
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

void CloseFile(int fd) {
  if (fd >= 0) close(fd);
}

Result<size_t> ResidentPages(const void* p, size_t bytes) {
  if (!p || bytes == 0) return size_t{0};
  const size_t page = PageSize();
  const size_t n = AlignUp(bytes, page) / page;
  std::vector<unsigned char> vec(n);
  if (mincore(const_cast<void*>(p), n * page, vec.data()) != 0) {
    return IoError(std::string("mincore failed: ") + std::strerror(errno));
  }
  size_t resident = 0;
  for (unsigned char v : vec) resident += v & 1;
  return resident;
}

Status AdviseNoHugePages(void* p, size_t bytes) {
  if (!p || bytes == 0) return Status::Ok();
  if (madvise(p, AlignUp(bytes, PageSize()), MADV_NOHUGEPAGE) != 0) {
    return IoError(std::string("madvise(MADV_NOHUGEPAGE) failed: ") + std::strerror(errno));
  }
  return Status::Ok();
}

Status PopulateForWrite(void* p, size_t bytes) {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older headers lack the name
#endif
  if (!p || bytes == 0) return Status::Ok();
  if (madvise(p, AlignUp(bytes, PageSize()), MADV_POPULATE_WRITE) != 0) {
    return IoError(std::string("madvise(MADV_POPULATE_WRITE) failed: ") + std::strerror(errno));
  }
  return Status::Ok();
}

Result<uint64_t> RangeFieldBytes(const void* p, size_t bytes, const char* field) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return IoError(std::string("cannot open /proc/self/smaps: ") + std::strerror(errno));
  const auto begin = reinterpret_cast<uintptr_t>(p), end = begin + bytes;
  const std::string format = std::string(field) + ": %llu kB";
  char line[512];
  bool inside = false, any = false;
  uint64_t total = 0;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long lo = 0, hi = 0, kb = 0;
    // Mapping header lines start with "lo-hi " in hex; field lines ("Rss:   12 kB") never parse as that.
    if (std::sscanf(line, "%llx-%llx ", &lo, &hi) == 2) {
      if (lo >= end) break;  // entries come in address order
      inside = hi > begin;
      any = any || inside;
    } else if (inside && std::sscanf(line, format.c_str(), &kb) == 1) {
      total += static_cast<uint64_t>(kb) * 1024;
    }
  }
  std::fclose(f);
  if (!any) return NotFound("no mapping in /proc/self/smaps overlaps the range");
  return total;
}

Result<uint64_t> MappingFieldBytes(const void* p, const char* field) { return RangeFieldBytes(p, 1, field); }

Result<uint64_t> MappingRssBytes(const void* p) { return MappingFieldBytes(p, "Rss"); }

Result<uint64_t> RangeRssBytes(const void* p, size_t bytes) { return RangeFieldBytes(p, bytes, "Rss"); }

ProcessMemory ReadProcessMemory() {
  ProcessMemory m;
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return m;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long kb = 0;
    if (std::sscanf(line, "VmRSS: %llu kB", &kb) == 1) m.rss = kb * 1024;
    else if (std::sscanf(line, "RssAnon: %llu kB", &kb) == 1) m.rss_anon = kb * 1024;
    else if (std::sscanf(line, "RssFile: %llu kB", &kb) == 1) m.rss_file = kb * 1024;
    else if (std::sscanf(line, "RssShmem: %llu kB", &kb) == 1) m.rss_shmem = kb * 1024;
  }
  std::fclose(f);
  return m;
}

}  // namespace lazyslot::vm
