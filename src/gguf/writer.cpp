// GGUF writer (FORMATS.md section 1): header + metadata + tensor infos are serialized in memory, then tensor
// data is streamed one tensor at a time, so peak memory is the largest single tensor.
#include "gguf/writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "gguf/keys.h"

namespace lazyslot::gguf {

namespace {

constexpr uint32_t kDefaultAlignment = 32;
constexpr size_t kMaxTensorName = 64;

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

class Buffer {
 public:
  template <typename T>
  void Put(T v) {
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  // A scalar of type t from the widened fields of v (or from index k of v's array vectors).
  void PutScalar(ValueType t, uint64_t u, int64_t i, double f) {
    switch (t) {
      case ValueType::kU8:
        Put<uint8_t>(static_cast<uint8_t>(u));
        break;
      case ValueType::kI8:
        Put<int8_t>(static_cast<int8_t>(i));
        break;
      case ValueType::kU16:
        Put<uint16_t>(static_cast<uint16_t>(u));
        break;
      case ValueType::kI16:
        Put<int16_t>(static_cast<int16_t>(i));
        break;
      case ValueType::kU32:
        Put<uint32_t>(static_cast<uint32_t>(u));
        break;
      case ValueType::kI32:
        Put<int32_t>(static_cast<int32_t>(i));
        break;
      case ValueType::kU64:
        Put<uint64_t>(u);
        break;
      case ValueType::kI64:
        Put<int64_t>(i);
        break;
      case ValueType::kF32:
        Put<float>(static_cast<float>(f));
        break;
      case ValueType::kF64:
        Put<double>(f);
        break;
      case ValueType::kBool:
        Put<uint8_t>(u != 0 ? 1 : 0);
        break;
      case ValueType::kString:
      case ValueType::kArray:
        break;  // not scalars
    }
  }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

bool IsSigned(ValueType t) {
  return t == ValueType::kI8 || t == ValueType::kI16 || t == ValueType::kI32 || t == ValueType::kI64;
}
bool IsFloat(ValueType t) { return t == ValueType::kF32 || t == ValueType::kF64; }

Value Scalar(ValueType t) {
  Value v;
  v.type = t;
  return v;
}

}  // namespace

Status Writer::SetValue(const std::string& key, Value v) {
  if (v.type == ValueType::kArray) {
    if (v.elem_type == ValueType::kArray)
      return InvalidArgument("gguf writer: key '" + key + "': nested array");
    // Exactly the vector the element type uses may be filled.
    const bool ok = v.elem_type == ValueType::kString ? v.array_size() == v.strings.size()
                    : IsSigned(v.elem_type)           ? v.array_size() == v.ints.size()
                    : IsFloat(v.elem_type)            ? v.array_size() == v.floats.size()
                                                      : v.array_size() == v.uints.size();
    if (!ok) {
      return InvalidArgument("gguf writer: key '" + key + "': array elements are not in the vector for " +
                             ValueTypeName(v.elem_type));
    }
  }
  for (KeyValue& kv : kvs_) {
    if (kv.key == key) {
      kv.value = std::move(v);
      return Status::Ok();
    }
  }
  kvs_.push_back(KeyValue{key, std::move(v)});
  return Status::Ok();
}

const Value* Writer::Find(const std::string& key) const {
  for (const KeyValue& kv : kvs_) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

// Scalar setters cannot fail (SetValue only rejects malformed arrays).
#define LS_WRITER_SETTER(Name, CType, VType, field)    \
  void Writer::Name(const std::string& key, CType x) { \
    Value v = Scalar(ValueType::VType);                \
    v.field = x;                                       \
    (void)SetValue(key, std::move(v));                 \
  }
LS_WRITER_SETTER(SetU8, uint8_t, kU8, u)
LS_WRITER_SETTER(SetI8, int8_t, kI8, i)
LS_WRITER_SETTER(SetU16, uint16_t, kU16, u)
LS_WRITER_SETTER(SetI16, int16_t, kI16, i)
LS_WRITER_SETTER(SetU32, uint32_t, kU32, u)
LS_WRITER_SETTER(SetI32, int32_t, kI32, i)
LS_WRITER_SETTER(SetU64, uint64_t, kU64, u)
LS_WRITER_SETTER(SetI64, int64_t, kI64, i)
LS_WRITER_SETTER(SetF32, float, kF32, f)
LS_WRITER_SETTER(SetF64, double, kF64, f)
LS_WRITER_SETTER(SetBool, bool, kBool, u)
#undef LS_WRITER_SETTER

void Writer::SetString(const std::string& key, std::string x) {
  Value v = Scalar(ValueType::kString);
  v.str = std::move(x);
  (void)SetValue(key, std::move(v));
}

void Writer::SetArrayU32(const std::string& key, const std::vector<uint32_t>& x) {
  Value v = Scalar(ValueType::kArray);
  v.elem_type = ValueType::kU32;
  v.uints.assign(x.begin(), x.end());
  (void)SetValue(key, std::move(v));
}

void Writer::SetArrayI32(const std::string& key, const std::vector<int32_t>& x) {
  Value v = Scalar(ValueType::kArray);
  v.elem_type = ValueType::kI32;
  v.ints.assign(x.begin(), x.end());
  (void)SetValue(key, std::move(v));
}

void Writer::SetArrayF32(const std::string& key, const std::vector<float>& x) {
  Value v = Scalar(ValueType::kArray);
  v.elem_type = ValueType::kF32;
  v.floats.assign(x.begin(), x.end());
  (void)SetValue(key, std::move(v));
}

void Writer::SetArrayString(const std::string& key, std::vector<std::string> x) {
  Value v = Scalar(ValueType::kArray);
  v.elem_type = ValueType::kString;
  v.strings = std::move(x);
  (void)SetValue(key, std::move(v));
}

Status Writer::CheckTensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne,
                           uint64_t* nbytes) const {
  const std::string ctx = "gguf writer: tensor '" + name + "': ";
  if (name.empty() || name.size() >= kMaxTensorName) {
    return InvalidArgument(ctx + "name must be 1 to " + std::to_string(kMaxTensorName - 1) + " bytes");
  }
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) return InvalidArgument(ctx + "duplicate tensor name");
  }
  const TypeTraits* traits = LookupType(static_cast<uint32_t>(type));
  if (traits == nullptr) return InvalidArgument(ctx + "unknown tensor type");
  if (ne.empty() || ne.size() > 4) return InvalidArgument(ctx + "needs 1 to 4 dimensions");
  uint64_t rows = 1;
  for (size_t d = 0; d < ne.size(); ++d) {
    if (ne[d] < 0) return InvalidArgument(ctx + "negative dimension");
    if (d > 0 && __builtin_mul_overflow(rows, static_cast<uint64_t>(ne[d]), &rows)) {
      return InvalidArgument(ctx + "size overflows");
    }
  }
  if (ne[0] % traits->block_size != 0) {
    return InvalidArgument(ctx + "row length " + std::to_string(ne[0]) + " is not a multiple of the " +
                           traits->name + " block size " + std::to_string(traits->block_size));
  }
  uint64_t row_bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(ne[0] / traits->block_size), traits->block_bytes,
                             &row_bytes) ||
      __builtin_mul_overflow(row_bytes, rows, nbytes)) {
    return InvalidArgument(ctx + "size overflows");
  }
  return Status::Ok();
}

Status Writer::AddTensor(const std::string& name, TensorType type, std::vector<int64_t> ne,
                         std::vector<uint8_t> bytes) {
  uint64_t nbytes = 0;
  LS_RETURN_IF_ERROR(CheckTensor(name, type, ne, &nbytes));
  if (bytes.size() != nbytes) {
    return InvalidArgument("gguf writer: tensor '" + name + "': got " + std::to_string(bytes.size()) +
                           " bytes, its shape and type need " + std::to_string(nbytes));
  }
  tensors_.push_back(PendingTensor{name, type, std::move(ne), nbytes, std::move(bytes), {}});
  return Status::Ok();
}

Status Writer::AddTensor(const std::string& name, TensorType type, std::vector<int64_t> ne, FillFn fill) {
  uint64_t nbytes = 0;
  LS_RETURN_IF_ERROR(CheckTensor(name, type, ne, &nbytes));
  if (!fill) return InvalidArgument("gguf writer: tensor '" + name + "': empty fill function");
  tensors_.push_back(PendingTensor{name, type, std::move(ne), nbytes, {}, std::move(fill)});
  return Status::Ok();
}

uint32_t Writer::Alignment() const {
  const Value* v = Find(keys::kGeneralAlignment);
  if (v != nullptr && v->type == ValueType::kU32 && v->u != 0 && (v->u & (v->u - 1)) == 0) {
    return static_cast<uint32_t>(v->u);
  }
  return kDefaultAlignment;
}

std::vector<uint8_t> Writer::SerializeHeader() const {
  const uint64_t align = Alignment();
  Buffer b;
  b.bytes().insert(b.bytes().end(), {'G', 'G', 'U', 'F'});
  b.Put<uint32_t>(3);
  b.Put<int64_t>(static_cast<int64_t>(tensors_.size()));
  b.Put<int64_t>(static_cast<int64_t>(kvs_.size()));
  for (const KeyValue& kv : kvs_) {
    const Value& v = kv.value;
    b.PutString(kv.key);
    b.Put<uint32_t>(static_cast<uint32_t>(v.type));
    if (v.type == ValueType::kString) {
      b.PutString(v.str);
    } else if (v.type == ValueType::kArray) {
      b.Put<uint32_t>(static_cast<uint32_t>(v.elem_type));
      b.Put<uint64_t>(v.array_size());
      for (const std::string& s : v.strings) b.PutString(s);
      for (int64_t x : v.ints) b.PutScalar(v.elem_type, 0, x, 0);
      for (uint64_t x : v.uints) b.PutScalar(v.elem_type, x, 0, 0);
      for (double x : v.floats) b.PutScalar(v.elem_type, 0, 0, x);
    } else {
      b.PutScalar(v.type, v.u, v.i, v.f);
    }
  }
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    b.PutString(t.name);
    b.Put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t n : t.ne) b.Put<int64_t>(n);
    b.Put<uint32_t>(static_cast<uint32_t>(t.type));
    b.Put<uint64_t>(offset);
    offset += AlignUp(t.nbytes, align);
  }
  if (!tensors_.empty()) b.bytes().resize(AlignUp(b.bytes().size(), align), 0);
  return std::move(b.bytes());
}

uint64_t Writer::FileSize() const {
  uint64_t size = SerializeHeader().size();
  for (const PendingTensor& t : tensors_) size += AlignUp(t.nbytes, Alignment());
  return size;
}

namespace {

// Owns the temporary file; removes it unless Commit() renamed it into place.
class TempFile {
 public:
  explicit TempFile(const std::string& path)
      : path_(path), tmp_(path + ".tmp." + std::to_string(::getpid())) {}
  ~TempFile() {
    if (fp_ != nullptr) std::fclose(fp_);
    if (!committed_) std::remove(tmp_.c_str());
  }
  Status Open() {
    fp_ = std::fopen(tmp_.c_str(), "wb");
    if (fp_ == nullptr) return IoError("gguf writer: cannot create " + tmp_ + ": " + std::strerror(errno));
    return Status::Ok();
  }
  Status Put(const void* data, size_t n) {
    if (n > 0 && std::fwrite(data, 1, n, fp_) != n) {
      return IoError("gguf writer: write to " + tmp_ + " failed: " + std::strerror(errno));
    }
    return Status::Ok();
  }
  Status Commit() {
    const bool flushed = std::fflush(fp_) == 0;
    const bool closed = std::fclose(fp_) == 0;
    fp_ = nullptr;
    if (!flushed || !closed)
      return IoError("gguf writer: closing " + tmp_ + " failed: " + std::strerror(errno));
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      return IoError("gguf writer: rename " + tmp_ + " -> " + path_ + " failed: " + std::strerror(errno));
    }
    committed_ = true;
    return Status::Ok();
  }

 private:
  std::string path_;
  std::string tmp_;
  std::FILE* fp_ = nullptr;
  bool committed_ = false;
};

}  // namespace

Status Writer::Write(const std::string& path, ProgressFn progress) const {
  const Value* align_kv = Find(keys::kGeneralAlignment);
  if (align_kv != nullptr && (align_kv->type != ValueType::kU32 || Alignment() != align_kv->u)) {
    return InvalidArgument("gguf writer: general.alignment must be a u32 power of two");
  }
  const uint64_t align = Alignment();
  uint64_t total = 0;
  for (const PendingTensor& t : tensors_) total += t.nbytes;

  TempFile out(path);
  LS_RETURN_IF_ERROR(out.Open());
  const std::vector<uint8_t> header = SerializeHeader();
  LS_RETURN_IF_ERROR(out.Put(header.data(), header.size()));

  const std::vector<uint8_t> zeros(align, 0);
  std::vector<uint8_t> scratch;  // reused by lazy tensors; grows to the largest one
  uint64_t done = 0;
  if (progress) progress(0, total);
  for (const PendingTensor& t : tensors_) {
    if (t.fill) {
      scratch.resize(t.nbytes);
      LS_RETURN_IF_ERROR(t.fill(scratch.data(), t.nbytes));
      LS_RETURN_IF_ERROR(out.Put(scratch.data(), t.nbytes));
    } else {
      LS_RETURN_IF_ERROR(out.Put(t.bytes.data(), t.nbytes));
    }
    LS_RETURN_IF_ERROR(out.Put(zeros.data(), AlignUp(t.nbytes, align) - t.nbytes));
    done += t.nbytes;
    if (progress) progress(done, total);
  }
  return out.Commit();
}

}  // namespace lazyslot::gguf
