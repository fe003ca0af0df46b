// Test helper: assembles GGUF bytes field by field (FORMATS.md section 1), so tests can build broken files
// the writer would refuse to produce, and a scratch directory to put them in.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace lazyslot::testing {

class RawGguf {
 public:
  template <typename T>
  RawGguf& Put(T v) {
    const size_t at = b_.size();
    b_.resize(at + sizeof(T));
    std::memcpy(b_.data() + at, &v, sizeof(T));
    return *this;
  }
  RawGguf& Magic(const char* m = "GGUF") {
    b_.insert(b_.end(), m, m + 4);
    return *this;
  }
  RawGguf& Header(uint32_t version, int64_t n_tensors, int64_t n_kv) {
    return Magic().Put<uint32_t>(version).Put<int64_t>(n_tensors).Put<int64_t>(n_kv);
  }
  RawGguf& Str(const std::string& s) {
    Put<uint64_t>(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  RawGguf& KvU32(const std::string& key, uint32_t v) { return Str(key).Put<uint32_t>(4).Put<uint32_t>(v); }
  RawGguf& KvStr(const std::string& key, const std::string& v) { return Str(key).Put<uint32_t>(8).Str(v); }
  RawGguf& Info(const std::string& name, const std::vector<int64_t>& ne, uint32_t type, uint64_t offset) {
    Str(name).Put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (int64_t n : ne) Put<int64_t>(n);
    return Put<uint32_t>(type).Put<uint64_t>(offset);
  }
  RawGguf& PadTo(size_t align) {
    b_.resize((b_.size() + align - 1) / align * align, 0);
    return *this;
  }
  RawGguf& Zeros(size_t n) {
    b_.resize(b_.size() + n, 0);
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return b_; }
  size_t size() const { return b_.size(); }

 private:
  std::vector<uint8_t> b_;
};

// A per-process scratch directory, removed at exit of the fixture that owns it.
class ScratchDir {
 public:
  ScratchDir() {
    dir_ = std::filesystem::temp_directory_path() / ("lazyslot_gguf_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string WriteFile(const std::string& name, const uint8_t* data, size_t n) const {
    const std::string p = Path(name);
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n));
    return p;
  }
  std::string WriteFile(const std::string& name, const std::vector<uint8_t>& b) const {
    return WriteFile(name, b.data(), b.size());
  }

 private:
  std::filesystem::path dir_;
};

inline std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace lazyslot::testing
