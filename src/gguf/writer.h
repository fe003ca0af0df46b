// GGUF writer: collects metadata and tensors, then writes a version-3 file that llama.cpp loads (offsets
// packed in table order, each tensor padded to the alignment). Tensors may be produced lazily while writing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf.h"

namespace lazyslot::gguf {

class Writer {
 public:
  // Fills exactly nbytes at dst with the tensor's encoded data; called once, during Write().
  using FillFn = std::function<Status(uint8_t* dst, size_t nbytes)>;
  using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

  // Setting an existing key replaces its value in place (the key keeps its position).
  void SetU8(const std::string& key, uint8_t v);
  void SetI8(const std::string& key, int8_t v);
  void SetU16(const std::string& key, uint16_t v);
  void SetI16(const std::string& key, int16_t v);
  void SetU32(const std::string& key, uint32_t v);
  void SetI32(const std::string& key, int32_t v);
  void SetU64(const std::string& key, uint64_t v);
  void SetI64(const std::string& key, int64_t v);
  void SetF32(const std::string& key, float v);
  void SetF64(const std::string& key, double v);
  void SetBool(const std::string& key, bool v);
  void SetString(const std::string& key, std::string v);
  void SetArrayU32(const std::string& key, const std::vector<uint32_t>& v);
  void SetArrayI32(const std::string& key, const std::vector<int32_t>& v);
  void SetArrayF32(const std::string& key, const std::vector<float>& v);
  void SetArrayString(const std::string& key, std::vector<std::string> v);
  // Any value, including arrays of any element type (elements taken from the vector its elem_type uses).
  Status SetValue(const std::string& key, Value v);
  // Copies a value read from a File under `key`.
  Status CopyKv(const Value& v, const std::string& key) { return SetValue(key, v); }
  const Value* Find(const std::string& key) const;

  // ne in ggml order (ne[0] = row length), 1 to 4 dims. bytes must be exactly the tensor's size.
  Status AddTensor(const std::string& name, TensorType type, std::vector<int64_t> ne,
                   std::vector<uint8_t> bytes);
  Status AddTensor(const std::string& name, TensorType type, std::vector<int64_t> ne, FillFn fill);

  size_t n_tensors() const { return tensors_.size(); }
  // Size of the file Write() will produce.
  uint64_t FileSize() const;

  // Writes `path` via a temporary file in the same directory, renamed on success. progress(done, total) is
  // called with tensor-data bytes after each tensor.
  Status Write(const std::string& path, ProgressFn progress = {}) const;

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    uint64_t nbytes = 0;
    std::vector<uint8_t> bytes;  // used when fill is empty
    FillFn fill;
  };
  Status CheckTensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne,
                     uint64_t* nbytes) const;
  uint32_t Alignment() const;
  std::vector<uint8_t> SerializeHeader() const;

  std::vector<KeyValue> kvs_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace lazyslot::gguf
