// GGUF reader: maps the file read-only, then parses and validates the header, the key-value metadata and the
// tensor-info table in place (FORMATS.md section 1). Nothing read from the file is trusted before it is
// checked.
#include "gguf/gguf.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <new>

#include "core/vm.h"
#include "gguf/keys.h"

namespace lazyslot::gguf {

static_assert(std::endian::native == std::endian::little, "the reader decodes little-endian fields in place");

namespace {

constexpr uint64_t kMaxStringLength = uint64_t{1} << 30;
constexpr uint64_t kMaxArrayCount = uint64_t{1} << 30;
constexpr uint32_t kMaxDims = 4;
constexpr size_t kMaxTensorName = 64;  // ggml's GGML_MAX_NAME, which includes the terminating NUL
// Smallest possible encodings, used to reject counts the remaining bytes cannot possibly hold.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // key length, value type, a 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset

// Size in bytes of a scalar value type; 0 for string/array/unknown.
size_t ScalarSize(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kBool:
      return 1;
    case ValueType::kU16:
    case ValueType::kI16:
      return 2;
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32:
      return 4;
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64:
      return 8;
    default:
      return 0;
  }
}

bool IsKnownValueType(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::kF64); }

std::string TypeDescription(const Value& v) {
  if (v.type == ValueType::kArray) return std::string("array[") + ValueTypeName(v.elem_type) + "]";
  return ValueTypeName(v.type);
}

}  // namespace

const char* ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kU8:
      return "u8";
    case ValueType::kI8:
      return "i8";
    case ValueType::kU16:
      return "u16";
    case ValueType::kI16:
      return "i16";
    case ValueType::kU32:
      return "u32";
    case ValueType::kI32:
      return "i32";
    case ValueType::kF32:
      return "f32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kU64:
      return "u64";
    case ValueType::kI64:
      return "i64";
    case ValueType::kF64:
      return "f64";
  }
  return "unknown";
}

uint64_t Value::array_size() const { return ints.size() + uints.size() + floats.size() + strings.size(); }

// Walks the mapped bytes with a cursor; every read checks the bytes it needs against the file size first.
class Parser {
 public:
  Parser(File* file, const uint8_t* base, uint64_t size) : f_(file), base_(base), size_(size) {}

  Status Parse() {
    LS_RETURN_IF_ERROR(ParseHeader());
    LS_RETURN_IF_ERROR(ParseMetadata());
    LS_RETURN_IF_ERROR(ParseAlignment());
    LS_RETURN_IF_ERROR(ParseTensorInfos());
    return CheckTensorData();
  }

 private:
  Status Fail(const std::string& ctx, const std::string& what) const {
    return Corrupt("gguf: " + f_->path_ + ": " + (ctx.empty() ? "" : ctx + ": ") + what);
  }
  uint64_t remaining() const { return size_ - pos_; }

  // Copies n bytes at the cursor into dst (n is small: one field).
  Status ReadRaw(void* dst, uint64_t n, const char* field, const std::string& ctx) {
    if (n > remaining()) {
      return Fail(ctx, "truncated: " + std::string(field) + " needs " + std::to_string(n) +
                           " bytes at offset " + std::to_string(pos_) + ", but the file ends at " +
                           std::to_string(size_));
    }
    std::memcpy(dst, base_ + pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  template <typename T>
  Status Read(T* out, const char* field, const std::string& ctx) {
    return ReadRaw(out, sizeof(T), field, ctx);
  }

  Status ReadString(std::string* out, const char* field, const std::string& ctx) {
    const uint64_t at = pos_;
    uint64_t len = 0;
    LS_RETURN_IF_ERROR(Read(&len, field, ctx));
    if (len > kMaxStringLength) {
      return Fail(ctx, std::string(field) + " length " + std::to_string(len) + " at offset " +
                           std::to_string(at) + " exceeds the limit of 2^30 bytes");
    }
    if (len > remaining()) {
      return Fail(ctx, std::string(field) + " length " + std::to_string(len) + " at offset " +
                           std::to_string(at) + " runs past the end of the file (" +
                           std::to_string(remaining()) + " bytes left)");
    }
    out->assign(reinterpret_cast<const char*>(base_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }

  Status ParseHeader() {
    if (size_ < 4) return Fail("", "file is too small to be GGUF (" + std::to_string(size_) + " bytes)");
    if (std::memcmp(base_, "GGUF", 4) != 0) {
      char hex[32];
      std::snprintf(hex, sizeof(hex), "%02x %02x %02x %02x", base_[0], base_[1], base_[2], base_[3]);
      return Fail("", std::string("bad magic at offset 0: bytes ") + hex + ", expected 'GGUF' (47 47 55 46)");
    }
    pos_ = 4;
    uint32_t version = 0;
    LS_RETURN_IF_ERROR(Read(&version, "version", "header"));
    if (version != 0 && (version & 0xFFFF) == 0) {
      return Fail("header", "version field at offset 4 reads " + std::to_string(version) +
                                ": the file is byte-swapped (big-endian GGUF), which is not supported");
    }
    if (version == 1) {
      return Fail("header",
                  "GGUF version 1 (at offset 4) is not supported (it uses 32-bit counts); "
                  "reconvert the model; supported versions are 2 and 3");
    }
    if (version != 2 && version != 3) {
      return Fail("header", "unsupported GGUF version " + std::to_string(version) +
                                " at offset 4; supported versions are 2 and 3");
    }
    f_->version_ = version;
    LS_RETURN_IF_ERROR(Read(&n_tensors_, "n_tensors", "header"));
    LS_RETURN_IF_ERROR(Read(&n_kv_, "n_kv", "header"));
    if (n_tensors_ < 0)
      return Fail("header", "n_tensors at offset 8 is negative (" + std::to_string(n_tensors_) + ")");
    if (n_kv_ < 0) return Fail("header", "n_kv at offset 16 is negative (" + std::to_string(n_kv_) + ")");
    if (static_cast<uint64_t>(n_kv_) > remaining() / kMinKvBytes) {
      return Fail("header", "n_kv " + std::to_string(n_kv_) + " at offset 16 is impossible: the remaining " +
                                std::to_string(remaining()) + " bytes hold at most " +
                                std::to_string(remaining() / kMinKvBytes) + " key-value pairs");
    }
    if (static_cast<uint64_t>(n_tensors_) > remaining() / kMinTensorInfoBytes) {
      return Fail("header", "n_tensors " + std::to_string(n_tensors_) +
                                " at offset 8 is impossible: the remaining " + std::to_string(remaining()) +
                                " bytes hold at most " + std::to_string(remaining() / kMinTensorInfoBytes) +
                                " tensor infos");
    }
    return Status::Ok();
  }

  Status ReadScalar(ValueType t, Value* v, const char* field, const std::string& ctx) {
    switch (t) {
      case ValueType::kU8: {
        uint8_t x;
        LS_RETURN_IF_ERROR(Read(&x, field, ctx));
        v->u = x;
        break;
      }
      case ValueType::kI8: {
        int8_t x;
        LS_RETURN_IF_ERROR(Read(&x, field, ctx));
        v->i = x;
        break;
      }
      case ValueType::kU16: {
        uint16_t x;
        LS_RETURN_IF_ERROR(Read(&x, field, ctx));
        v->u = x;
        break;
      }
      case ValueType::kI16: {
        int16_t x;
        LS_RETURN_IF_ERROR(Read(&x, field, ctx));
        v->i = x;
        break;
      }
      case ValueType::kU32: {
        uint32_t x;
        LS_RETURN_IF_ERROR(Read(&x, field, ctx));
        v->u = x;
        break;
      }
      case ValueType::kI32: {
        int32_t x;
        LS_RETURN_IF_ERROR(Read(&x, field, ctx));
        v->i = x;
        break;
      }
      case ValueType::kU64: {
        uint64_t x;
        LS_RETURN_IF_ERROR(Read(&x, field, ctx));
        v->u = x;
        break;
      }
      case ValueType::kI64: {
        int64_t x;
        LS_RETURN_IF_ERROR(Read(&x, field, ctx));
        v->i = x;
        break;
      }
      case ValueType::kF32: {
        float x;
        LS_RETURN_IF_ERROR(Read(&x, field, ctx));
        v->f = x;
        break;
      }
      case ValueType::kF64: {
        double x;
        LS_RETURN_IF_ERROR(Read(&x, field, ctx));
        v->f = x;
        break;
      }
      case ValueType::kBool: {
        uint8_t x;
        LS_RETURN_IF_ERROR(Read(&x, field, ctx));
        v->u = x != 0;
        break;
      }
      case ValueType::kString:
        return ReadString(&v->str, field, ctx);
      case ValueType::kArray:
        return Fail(ctx, "internal: array is not a scalar");
    }
    return Status::Ok();
  }

  Status ReadArray(Value* v, const std::string& ctx) {
    const uint64_t type_at = pos_;
    uint32_t elem = 0;
    LS_RETURN_IF_ERROR(Read(&elem, "array element type", ctx));
    if (elem == static_cast<uint32_t>(ValueType::kArray)) {
      return Fail(ctx,
                  "nested arrays are not supported (element type at offset " + std::to_string(type_at) + ")");
    }
    if (!IsKnownValueType(elem)) {
      return Fail(ctx, "unknown array element type " + std::to_string(elem) + " at offset " +
                           std::to_string(type_at));
    }
    v->elem_type = static_cast<ValueType>(elem);
    const uint64_t count_at = pos_;
    uint64_t count = 0;
    LS_RETURN_IF_ERROR(Read(&count, "array count", ctx));
    if (count > kMaxArrayCount) {
      return Fail(ctx, "array count " + std::to_string(count) + " at offset " + std::to_string(count_at) +
                           " exceeds the limit of 2^30 elements");
    }
    // Strings take at least their 8-byte length; this bounds the allocation below by the file size.
    const uint64_t min_elem = v->elem_type == ValueType::kString ? 8 : ScalarSize(v->elem_type);
    if (count * min_elem > remaining()) {
      return Fail(ctx, "array of " + std::to_string(count) + " " + ValueTypeName(v->elem_type) +
                           " at offset " + std::to_string(count_at) + " runs past the end of the file (" +
                           std::to_string(remaining()) + " bytes left)");
    }
    Value elem_value;
    switch (v->elem_type) {
      case ValueType::kI8:
      case ValueType::kI16:
      case ValueType::kI32:
      case ValueType::kI64:
        v->ints.reserve(count);
        for (uint64_t k = 0; k < count; ++k) {
          LS_RETURN_IF_ERROR(ReadScalar(v->elem_type, &elem_value, "array element", ctx));
          v->ints.push_back(elem_value.i);
        }
        break;
      case ValueType::kF32:
      case ValueType::kF64:
        v->floats.reserve(count);
        for (uint64_t k = 0; k < count; ++k) {
          LS_RETURN_IF_ERROR(ReadScalar(v->elem_type, &elem_value, "array element", ctx));
          v->floats.push_back(elem_value.f);
        }
        break;
      case ValueType::kString:
        v->strings.resize(count);
        for (uint64_t k = 0; k < count; ++k) {
          LS_RETURN_IF_ERROR(ReadString(&v->strings[k], "array string", ctx));
        }
        break;
      default:  // unsigned ints and bool
        v->uints.reserve(count);
        for (uint64_t k = 0; k < count; ++k) {
          LS_RETURN_IF_ERROR(ReadScalar(v->elem_type, &elem_value, "array element", ctx));
          v->uints.push_back(elem_value.u);
        }
        break;
    }
    return Status::Ok();
  }

  Status ParseMetadata() {
    f_->kvs_.reserve(static_cast<size_t>(n_kv_));
    for (int64_t k = 0; k < n_kv_; ++k) {
      const uint64_t at = pos_;
      KeyValue kv;
      LS_RETURN_IF_ERROR(ReadString(&kv.key, "key",
                                    "key #" + std::to_string(k) + " (at offset " + std::to_string(at) + ")"));
      const std::string ctx = "key '" + kv.key + "' (at offset " + std::to_string(at) + ")";
      if (f_->kv_index_.count(kv.key) != 0) return Fail(ctx, "duplicate key");
      const uint64_t type_at = pos_;
      uint32_t type = 0;
      LS_RETURN_IF_ERROR(Read(&type, "value type", ctx));
      if (!IsKnownValueType(type)) {
        return Fail(ctx,
                    "unknown value type " + std::to_string(type) + " at offset " + std::to_string(type_at));
      }
      kv.value.type = static_cast<ValueType>(type);
      if (kv.value.type == ValueType::kArray) {
        LS_RETURN_IF_ERROR(ReadArray(&kv.value, ctx));
      } else {
        LS_RETURN_IF_ERROR(ReadScalar(kv.value.type, &kv.value, "value", ctx));
      }
      f_->kv_index_.emplace(kv.key, f_->kvs_.size());
      f_->kvs_.push_back(std::move(kv));
    }
    return Status::Ok();
  }

  Status ParseAlignment() {
    const Value* v = f_->Find(keys::kGeneralAlignment);
    if (v == nullptr) return Status::Ok();
    const std::string ctx = "key 'general.alignment'";
    if (v->type != ValueType::kU32) return Fail(ctx, "has type " + TypeDescription(*v) + ", expected u32");
    if (v->u == 0 || (v->u & (v->u - 1)) != 0) {
      return Fail(ctx, "alignment " + std::to_string(v->u) + " is not a power of two");
    }
    f_->alignment_ = static_cast<uint32_t>(v->u);
    return Status::Ok();
  }

  Status ParseTensorInfos() {
    if (static_cast<uint64_t>(n_tensors_) > remaining() / kMinTensorInfoBytes) {
      return Fail("header", "n_tensors " + std::to_string(n_tensors_) + " is impossible: the " +
                                std::to_string(remaining()) + " bytes after the metadata hold at most " +
                                std::to_string(remaining() / kMinTensorInfoBytes) + " tensor infos");
    }
    f_->tensors_.reserve(static_cast<size_t>(n_tensors_));
    for (int64_t k = 0; k < n_tensors_; ++k) {
      const uint64_t at = pos_;
      TensorInfo t;
      LS_RETURN_IF_ERROR(
          ReadString(&t.name, "tensor name",
                     "tensor #" + std::to_string(k) + " (info at offset " + std::to_string(at) + ")"));
      const std::string ctx = "tensor '" + t.name + "' (info at offset " + std::to_string(at) + ")";
      if (t.name.size() >= kMaxTensorName) {
        return Fail(ctx, "name is " + std::to_string(t.name.size()) + " bytes; names must be shorter than " +
                             std::to_string(kMaxTensorName));
      }
      if (f_->tensor_index_.count(t.name) != 0) return Fail(ctx, "duplicate tensor name");
      LS_RETURN_IF_ERROR(Read(&t.n_dims, "n_dims", ctx));
      if (t.n_dims > kMaxDims) {
        return Fail(ctx, "n_dims " + std::to_string(t.n_dims) + " exceeds the maximum of " +
                             std::to_string(kMaxDims));
      }
      // Rows are checked on their own: with ne[0] = 0 the element count is 0 whatever the other dims are.
      int64_t n_elements = 1;
      int64_t n_rows = 1;
      for (uint32_t d = 0; d < t.n_dims; ++d) {
        LS_RETURN_IF_ERROR(Read(&t.ne[d], "ne", ctx));
        if (t.ne[d] < 0)
          return Fail(ctx, "ne[" + std::to_string(d) + "] = " + std::to_string(t.ne[d]) + " is negative");
        if (__builtin_mul_overflow(n_elements, t.ne[d], &n_elements) ||
            (d > 0 && __builtin_mul_overflow(n_rows, t.ne[d], &n_rows))) {
          return Fail(ctx, "element count overflows int64 at ne[" + std::to_string(d) +
                               "] = " + std::to_string(t.ne[d]));
        }
      }
      const uint64_t type_at = pos_;
      uint32_t type_id = 0;
      LS_RETURN_IF_ERROR(Read(&type_id, "tensor type", ctx));
      const TypeTraits* traits = LookupType(type_id);
      if (traits == nullptr) {
        return Fail(ctx, "unknown tensor type id " + std::to_string(static_cast<int32_t>(type_id)) +
                             " at offset " + std::to_string(type_at));
      }
      t.type = static_cast<TensorType>(type_id);
      if (t.ne[0] % traits->block_size != 0) {
        return Fail(ctx, "row length " + std::to_string(t.ne[0]) + " is not a multiple of the " +
                             traits->name + " block size " + std::to_string(traits->block_size));
      }
      LS_RETURN_IF_ERROR(Read(&t.offset, "data offset", ctx));
      if (t.offset % f_->alignment_ != 0) {
        return Fail(ctx, "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                             std::to_string(f_->alignment_));
      }
      // nbytes = blocks per row * block bytes * rows; n_elements did not overflow, but the byte count may.
      uint64_t row_bytes = 0;
      if (__builtin_mul_overflow(static_cast<uint64_t>(t.ne[0] / traits->block_size), traits->block_bytes,
                                 &row_bytes) ||
          __builtin_mul_overflow(row_bytes, static_cast<uint64_t>(t.n_rows()), &t.nbytes)) {
        return Fail(ctx, "byte size overflows 64 bits");
      }
      f_->tensor_index_.emplace(t.name, f_->tensors_.size());
      f_->tensors_.push_back(std::move(t));
      info_offsets_.push_back(at);
    }
    return Status::Ok();
  }

  Status CheckTensorData() {
    const uint64_t align = f_->alignment_;
    const uint64_t data_start = (pos_ + align - 1) / align * align;
    if (n_tensors_ > 0 && data_start > size_) {
      return Fail("", "truncated: the data section starts at offset " + std::to_string(data_start) +
                          " (after alignment padding) but the file is " + std::to_string(size_) + " bytes");
    }
    const uint64_t data_size = data_start <= size_ ? size_ - data_start : 0;
    const auto& ts = f_->tensors_;
    for (size_t k = 0; k < ts.size(); ++k) {
      const TensorInfo& t = ts[k];
      if (t.offset > data_size || t.nbytes > data_size - t.offset) {
        return Fail("tensor '" + t.name + "' (info at offset " + std::to_string(info_offsets_[k]) + ")",
                    "data [" + std::to_string(data_start + t.offset) + ", " +
                        std::to_string(data_start + t.offset + t.nbytes) +
                        ") runs past the end of the file (" + std::to_string(size_) + " bytes)");
      }
    }
    // Any non-overlapping layout is accepted (llama.cpp additionally wants them packed in table order).
    std::vector<size_t> order(ts.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ts[a].offset < ts[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const TensorInfo& a = ts[order[k - 1]];
      const TensorInfo& b = ts[order[k]];
      if (a.nbytes > 0 && b.nbytes > 0 && a.offset + a.nbytes > b.offset) {
        return Fail(
            "tensor '" + b.name + "' (info at offset " + std::to_string(info_offsets_[order[k]]) + ")",
            "data at offset " + std::to_string(data_start + b.offset) + " overlaps tensor '" + a.name +
                "' [" + std::to_string(data_start + a.offset) + ", " +
                std::to_string(data_start + a.offset + a.nbytes) + ")");
      }
    }
    f_->data_ = base_ + std::min(data_start, size_);
    f_->data_size_ = data_size;
    return Status::Ok();
  }

  File* f_;
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
  int64_t n_tensors_ = 0;
  int64_t n_kv_ = 0;
  std::vector<uint64_t> info_offsets_;  // where each tensor's info starts, for error messages
};

Result<std::unique_ptr<File>> File::Open(const std::string& path) {
  std::unique_ptr<File> file(new File());
  file->path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = "gguf: " + path + ": cannot open: " + std::strerror(err);
    return err == ENOENT ? NotFound(msg) : IoError(msg);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError("gguf: " + path + ": fstat failed: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("gguf: " + path + ": not a regular file");
  }
  file->file_size_ = static_cast<uint64_t>(st.st_size);
  if (file->file_size_ == 0) {
    ::close(fd);
    return Corrupt("gguf: " + path + ": file is empty");
  }
  // Private read-only mapping: tensor data is read in place and pages can be dropped again (madvise).
  LS_ASSIGN_OR_RETURN(file->mapping_, Mapping::Map(fd, file->file_size_, path));
  const uint8_t* map = file->mapping_->data();
  Parser parser(file.get(), map, file->file_size_);
  LS_RETURN_IF_ERROR(parser.Parse());
  return file;
}

// Tensor data inside the buffer is only as aligned as the buffer itself: 64 bytes covers every SIMD load.
constexpr std::align_val_t kBufferAlignment{64};

Result<std::unique_ptr<File>> File::OpenBuffer(std::string_view bytes, const std::string& label) {
  std::unique_ptr<File> file(new File());
  file->path_ = label;
  file->file_size_ = bytes.size();
  if (bytes.empty()) return Corrupt("gguf: " + label + ": file is empty");
  // Exactly bytes.size() bytes, so an address sanitizer flags any read past the end of the "file".
  file->owned_ = static_cast<uint8_t*>(::operator new(bytes.size(), kBufferAlignment, std::nothrow));
  if (file->owned_ == nullptr) {
    return ResourceExhausted("gguf: " + label + ": cannot allocate " + std::to_string(bytes.size()) +
                             " bytes for the in-memory copy");
  }
  std::memcpy(file->owned_, bytes.data(), bytes.size());
  Parser parser(file.get(), file->owned_, file->file_size_);
  LS_RETURN_IF_ERROR(parser.Parse());
  return file;
}

File::~File() {
  if (owned_ != nullptr) ::operator delete(owned_, kBufferAlignment);
}

Status File::CopyToHugePages(const std::vector<const TensorInfo*>& file_tensors) const {
  if (!mapping_) return Unimplemented("gguf: " + path_ + ": an in-memory file has no mapping to copy");
  const uint64_t data_offset = static_cast<uint64_t>(data_ - mapping_->data());
  Mapping::Ranges ranges;
  for (const TensorInfo* t : file_tensors) ranges.push_back({data_offset + t->offset, t->nbytes});
  std::sort(ranges.begin(), ranges.end());
  return mapping_->CopyToHugePages(std::move(ranges));
}

Result<uint64_t> File::ResidentBytes() const {
  return mapping_ ? mapping_->ResidentBytes() : vm::MappingRssBytes(data_);
}

Status File::ReleaseResidentPages() const { return mapping_ ? mapping_->Release() : Status::Ok(); }

Status File::RestoreAfterRelease() const { return mapping_ ? mapping_->RestoreCopy() : Status::Ok(); }

Status File::SetCopyTransform(std::function<void(uint8_t* data)> transform) const {
  if (!mapping_) return Unimplemented("gguf: " + path_ + ": an in-memory file has no copy to transform");
  if (!transform) return mapping_->SetCopyTransform(nullptr);
  const size_t offset = static_cast<size_t>(data_ - mapping_->data());
  return mapping_->SetCopyTransform([t = std::move(transform), offset](uint8_t* base) { t(base + offset); });
}

const Value* File::Find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const TensorInfo* File::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status KeyError(const std::string& path, std::string_view key, const std::string& what) {
  return Corrupt("gguf: " + path + ": key '" + std::string(key) + "' " + what);
}
Status WrongType(const std::string& path, std::string_view key, const Value& v, const char* expected) {
  return KeyError(path, key, "has type " + TypeDescription(v) + ", expected " + expected);
}

}  // namespace

Result<uint32_t> File::GetU32(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("gguf: " + path_ + ": key '" + std::string(key) + "' not found");
  if (v->type != ValueType::kU32) return WrongType(path_, key, *v, "u32");
  return static_cast<uint32_t>(v->u);
}

Result<float> File::GetF32(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("gguf: " + path_ + ": key '" + std::string(key) + "' not found");
  if (v->type != ValueType::kF32) return WrongType(path_, key, *v, "f32");
  return static_cast<float>(v->f);
}

Result<bool> File::GetBool(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("gguf: " + path_ + ": key '" + std::string(key) + "' not found");
  if (v->type != ValueType::kBool) return WrongType(path_, key, *v, "bool");
  return v->u != 0;
}

Result<std::string> File::GetString(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("gguf: " + path_ + ": key '" + std::string(key) + "' not found");
  if (v->type != ValueType::kString) return WrongType(path_, key, *v, "string");
  return v->str;
}

Result<uint32_t> File::GetU32Or(std::string_view key, uint32_t def) const {
  if (Find(key) == nullptr) return def;
  return GetU32(key);
}

Result<float> File::GetF32Or(std::string_view key, float def) const {
  if (Find(key) == nullptr) return def;
  return GetF32(key);
}

Result<bool> File::GetBoolOr(std::string_view key, bool def) const {
  if (Find(key) == nullptr) return def;
  return GetBool(key);
}

Result<std::vector<uint32_t>> File::GetU32PerLayer(std::string_view key, uint32_t n_layer) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("gguf: " + path_ + ": key '" + std::string(key) + "' not found");
  if (v->type == ValueType::kU32) return std::vector<uint32_t>(n_layer, static_cast<uint32_t>(v->u));
  if (v->type != ValueType::kArray || (v->elem_type != ValueType::kU32 && v->elem_type != ValueType::kI32)) {
    return WrongType(path_, key, *v, "u32 or array[u32|i32]");
  }
  if (v->array_size() != n_layer) {
    return KeyError(path_, key,
                    "has " + std::to_string(v->array_size()) + " values, expected one per layer (" +
                        std::to_string(n_layer) + ")");
  }
  std::vector<uint32_t> out(n_layer);
  for (uint32_t il = 0; il < n_layer; ++il) {
    if (v->elem_type == ValueType::kU32) {
      out[il] = static_cast<uint32_t>(v->uints[il]);
    } else {
      if (v->ints[il] < 0) {
        return KeyError(
            path_, key,
            "value " + std::to_string(v->ints[il]) + " for layer " + std::to_string(il) + " is negative");
      }
      out[il] = static_cast<uint32_t>(v->ints[il]);
    }
  }
  return out;
}

Result<std::vector<uint32_t>> File::GetU32PerLayerOr(std::string_view key, uint32_t n_layer,
                                                     uint32_t def) const {
  if (Find(key) == nullptr) return std::vector<uint32_t>(n_layer, def);
  return GetU32PerLayer(key, n_layer);
}

Result<const Value*> File::GetArray(std::string_view key, ValueType elem_type) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound("gguf: " + path_ + ": key '" + std::string(key) + "' not found");
  if (v->type != ValueType::kArray || v->elem_type != elem_type) {
    const std::string expected = std::string("array[") + ValueTypeName(elem_type) + "]";
    return WrongType(path_, key, *v, expected.c_str());
  }
  return v;
}

}  // namespace lazyslot::gguf
