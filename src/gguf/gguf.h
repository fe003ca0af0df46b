// GGUF reader: parses and validates the header, metadata and tensor infos, and maps tensor data read-only
// (or holds a copy on huge pages at the same addresses: mapping.h). Facts: ../shared/FORMATS.md section 1.
// Knows nothing about models.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gguf/mapping.h"
#include "gguf/tensor_type.h"

namespace lazyslot::gguf {

enum class ValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
const char* ValueTypeName(ValueType type);

// One metadata value. Scalars are widened into the fields below; arrays keep their element type.
struct Value {
  ValueType type = ValueType::kU8;
  ValueType elem_type = ValueType::kU8;  // for kArray
  uint64_t u = 0;                        // unsigned ints and bool
  int64_t i = 0;                         // signed ints
  double f = 0;                          // f32 / f64
  std::string str;                       // kString
  // kArray: exactly one of these is filled, by element type (ints -> ints, uints/bool -> uints, ...).
  std::vector<int64_t> ints;
  std::vector<uint64_t> uints;
  std::vector<double> floats;
  std::vector<std::string> strings;
  uint64_t array_size() const;
};

struct KeyValue {
  std::string key;
  Value value;
};

struct TensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the contiguous row length
  TensorType type = TensorType::kF32;
  uint64_t offset = 0;  // relative to the data section
  uint64_t nbytes = 0;
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  size_t row_bytes() const { return RowBytes(type, ne[0]); }
};

class File {
 public:
  // Opens, validates and maps `path`. Every failure names what is wrong, which key/tensor, and the offset.
  static Result<std::unique_ptr<File>> Open(const std::string& path);
  // Same validation on bytes already in memory (fuzzing, tests, embedded files). The bytes are copied into a
  // 64-byte-aligned buffer the File owns; `label` stands in for the path in path() and error messages.
  static Result<std::unique_ptr<File>> OpenBuffer(std::string_view bytes, const std::string& label);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t file_size() const { return file_size_; }

  const std::vector<KeyValue>& metadata() const { return kvs_; }
  const Value* Find(std::string_view key) const;

  // Typed getters check the stored type exactly ("key 'x' has type f32, expected u32").
  Result<uint32_t> GetU32(std::string_view key) const;
  Result<float> GetF32(std::string_view key) const;
  Result<bool> GetBool(std::string_view key) const;
  Result<std::string> GetString(std::string_view key) const;
  // Absent key -> `def`; present with the wrong type -> error.
  Result<uint32_t> GetU32Or(std::string_view key, uint32_t def) const;
  Result<float> GetF32Or(std::string_view key, float def) const;
  Result<bool> GetBoolOr(std::string_view key, bool def) const;
  // A per-layer key may be one u32 or an array of n_layer u32/i32: returns n_layer values.
  Result<std::vector<uint32_t>> GetU32PerLayer(std::string_view key, uint32_t n_layer) const;
  Result<std::vector<uint32_t>> GetU32PerLayerOr(std::string_view key, uint32_t n_layer, uint32_t def) const;
  // An array whose elements have type `elem_type` exactly (e.g. tokenizer.ggml.tokens: kString).
  Result<const Value*> GetArray(std::string_view key, ValueType elem_type) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* FindTensor(std::string_view name) const;
  // Pointer to a tensor's bytes inside the read-only mapping.
  const uint8_t* TensorData(const TensorInfo& t) const { return data_ + t.offset; }

  // The whole data section (for madvise on idle, resident-byte readings).
  const uint8_t* data_begin() const { return data_; }
  uint64_t data_size() const { return data_size_; }
  // Copies the file onto transparent huge pages at the same addresses (Mapping::CopyToHugePages); an error
  // leaves the file mapping, which serves the same bytes. `file_tensors` stay on the file mapping (whole
  // 4 KiB pages inside them). Not for OpenBuffer files (Unimplemented).
  Status CopyToHugePages(const std::vector<const TensorInfo*>& file_tensors = {}) const;
  // True while the bytes lie on the huge-page copy.
  bool on_huge_pages() const { return mapping_ && mapping_->huge_pages(); }
  // This process's resident bytes of the file's mapping (the copy, and the ranges left to the file); of an
  // OpenBuffer file, of its buffer's mapping.
  Result<uint64_t> ResidentBytes() const;
  // Drops the resident pages (they page back from the page cache on next touch; a huge-page copy gives its
  // memory back and the file mapping serves until RestoreAfterRelease).
  Status ReleaseResidentPages() const;
  // After ReleaseResidentPages: copies the file onto huge pages again if it was there before.
  Status RestoreAfterRelease() const;
  // Mapping::SetCopyTransform with `data` = the copy's data section (data_begin()'s bytes in the copy); an
  // empty function removes it. Not for OpenBuffer files (Unimplemented).
  Status SetCopyTransform(std::function<void(uint8_t* data)> transform) const;

 private:
  File() = default;
  std::string path_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t file_size_ = 0;
  std::vector<KeyValue> kvs_;
  std::vector<TensorInfo> tensors_;
  std::unique_ptr<Mapping> mapping_;  // the mapped file (Open), else nullptr
  uint8_t* owned_ = nullptr;          // aligned copy of the bytes (OpenBuffer), else nullptr
  const uint8_t* data_ = nullptr;
  uint64_t data_size_ = 0;
  std::map<std::string, size_t, std::less<>> kv_index_;      // key -> index in kvs_
  std::map<std::string, size_t, std::less<>> tensor_index_;  // name -> index in tensors_
  friend class Parser;
};

}  // namespace lazyslot::gguf
