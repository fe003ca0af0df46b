// Virtual-memory helpers: reserve address space without committing it, release pages, map one memory file's
// pages at several addresses, and read what the kernel says is resident (mincore, /proc/self). The KV arena
// and the memory tests are built on these.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace lazyslot::vm {

size_t PageSize();
inline size_t AlignUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Anonymous private mapping with MAP_NORESERVE: reads as zero, commits a page on its first write.
Result<void*> Reserve(size_t bytes);
void Unreserve(void* p, size_t bytes);
// Returns the pages of [p, p + bytes) to the kernel (p page-aligned; bytes rounded up). They read as zero after.
Status Release(void* p, size_t bytes);
// A memory file (memfd) of `bytes`, sparse: its pages cost nothing until written. Closed on exec.
Result<int> CreateMemoryFile(const char* name, size_t bytes);
// The whole of memory file `fd` mapped shared with MAP_NORESERVE: like Reserve, but a page written here is a
// page of the file, which other addresses may map too (MapFilePages).
Result<void*> MapMemoryFile(int fd, size_t bytes);
// Maps [offset, offset + bytes) of memory file `fd` over [p, p + bytes) (MAP_FIXED, shared; page-aligned):
// p then reads and writes the file's pages there, whatever it mapped before.
Status MapFilePages(void* p, size_t bytes, int fd, uint64_t offset);
// Frees the memory file's pages behind [p, p + bytes) (MADV_REMOVE): they read as zero after, at every address
// that maps them. (MADV_DONTNEED would only unmap them here and keep the file's memory.)
Status RemoveFilePages(void* p, size_t bytes);
// Bytes the memory file has allocated: its pages counted once, however many addresses map them.
Result<uint64_t> MemoryFileBytes(int fd);
void CloseFile(int fd);
// Pages of [p, p + bytes) that are resident, by mincore(). p page-aligned. For a file mapping this is the
// page cache's view (pages stay "resident" after MADV_DONTNEED); use MappingRssBytes for the process's share.
Result<size_t> ResidentPages(const void* p, size_t bytes);
// Asks the kernel not to back [p, p + bytes) with transparent huge pages (p page-aligned), so pages commit
// one at a time and committed bytes stay proportional to what was written.
Status AdviseNoHugePages(void* p, size_t bytes);
// Commits the pages of [p, p + bytes) now, writable, in one call (MADV_POPULATE_WRITE, Linux 5.14+), where
// touching them one by one would take a fault per page: about 5 us each on a VM, so 2 s for 439 MiB read into
// fresh pages. The range must be page-aligned at p. Kernels without it: an error, nothing done.
Status PopulateForWrite(void* p, size_t bytes);
// Resident bytes this process maps for the mapping that contains `p` ("Rss:" of its /proc/self/smaps entry).
Result<uint64_t> MappingRssBytes(const void* p);
// Any "Field:  N kB" line of that entry in bytes, e.g. "AnonHugePages" (the bytes on transparent huge pages).
Result<uint64_t> MappingFieldBytes(const void* p, const char* field);
// A field summed over every mapping that overlaps [p, p + bytes): a region the kernel keeps as several
// entries (a weights copy with ranges left to the file, decision 0018).
Result<uint64_t> RangeFieldBytes(const void* p, size_t bytes, const char* field);
Result<uint64_t> RangeRssBytes(const void* p, size_t bytes);

// Process memory from /proc/self: resident set, and its anonymous and file-backed parts (bytes).
struct ProcessMemory {
  uint64_t rss = 0;
  uint64_t rss_anon = 0;
  uint64_t rss_file = 0;
  uint64_t rss_shmem = 0;  // pages of memory files (the KV arena): counted once per address that maps them
};
ProcessMemory ReadProcessMemory();

}  // namespace lazyslot::vm
