// How a GGUF file's bytes sit in memory: a read-only private mapping of the file at a 2 MiB-aligned address,
// which can be replaced, at the very same addresses, by a private copy on transparent huge pages. Pointers
// into the bytes stay valid whichever backing holds them, and every backing holds the file's bytes, so a
// reader never sees a change (docs/decisions/0010-weights-on-huge-pages.md), unless it asked for one: a copy
// transform rewrites the copy (a kernel's weight layout, docs/decisions/0012), and whoever sets it must then
// know which backing serves (huge_pages()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace lazyslot::gguf {

class Mapping {
 public:
  // Maps `size` bytes of the open file `fd` (the Mapping owns it from here on, on failure too). `path` names
  // it in errors.
  static Result<std::unique_ptr<Mapping>> Map(int fd, uint64_t size, const std::string& path);
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  const uint8_t* data() const { return base_; }

  // Copies the file into anonymous memory advised for 2 MiB pages and moves the copy over the mapping. A
  // decode step streams every weight once: with 4 KiB pages each page is a TLB miss (a two-level page walk
  // under a hypervisor), which a huge page turns into one miss per 2 MiB. An error (huge pages off, no
  // memory) leaves the file mapping in place.
  // `file_ranges` ([offset, offset + size) of the file, sorted, disjoint) stay the file mapping: the whole
  // 4 KiB pages inside each are neither read nor copied, so they cost no anonymous memory and page in from
  // the page cache when first read (a mixture-of-experts model's experts, docs/decisions/0018). Every later
  // copy (RestoreCopy) keeps them too.
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;
  Status CopyToHugePages(Ranges file_ranges = {});
  // Drops the resident pages: a file mapping's pages page back from the page cache on the next touch; a copy
  // is replaced by the file mapping again (its memory goes back to the kernel) until RestoreCopy.
  Status Release();
  // After Release: the huge-page copy again, if there was one; otherwise nothing to do.
  Status RestoreCopy();
  // True while the bytes lie in the huge-page copy.
  bool huge_pages() const;
  // This process's resident bytes of the whole region, whichever backing holds each page.
  Result<uint64_t> ResidentBytes() const;
  // Rewrites every copy of the region (base: its first byte, inside the copy) before it is made read-only:
  // the current one now, if the copy serves, and each one RestoreCopy makes. An empty function removes it
  // (the current copy keeps its bytes). The file mapping always holds the file's bytes.
  using Transform = std::function<void(uint8_t* base)>;
  Status SetCopyTransform(Transform transform);

 private:
  Mapping() = default;
  Status CopyLocked();
  Status RemapFileLocked();

  mutable std::mutex mu_;
  int fd_ = -1;
  std::string path_;
  uint64_t size_ = 0;        // the file's bytes
  uint8_t* base_ = nullptr;  // 2 MiB-aligned start of the region
  uint64_t region_ = 0;      // size_ rounded up to 2 MiB: the whole region [base_, base_ + region_)
  bool copied_ = false;      // the region holds the huge-page copy now
  bool wanted_ = false;      // CopyToHugePages succeeded once: RestoreCopy brings the copy back
  Transform transform_;      // applied to each copy (SetCopyTransform)
  Ranges file_pages_;        // page-aligned [begin, end) of the file that every copy leaves to the file
};

}  // namespace lazyslot::gguf
