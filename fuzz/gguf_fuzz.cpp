// libFuzzer target: arbitrary bytes as a GGUF file (gguf::File::OpenBuffer), then every accessor on what was
// accepted, and the tokenizer built from its metadata. Accepted files must be internally consistent.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/log.h"
#include "fuzz_check.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace {

using lazyslot::gguf::File;
using lazyslot::gguf::TensorInfo;
using lazyslot::gguf::Value;
using lazyslot::gguf::ValueType;

// Every typed getter on every key: each must return a value or an error, never crash.
void ExerciseMetadata(const File& f) {
  for (const auto& kv : f.metadata()) {
    const Value* v = f.Find(kv.key);
    FUZZ_CHECK(v == &kv.value, "Find('" + lazyslot::fuzz::Escape(kv.key) + "') returns another entry");
    if (v->type == ValueType::kArray) {
      FUZZ_CHECK(v->array_size() == v->ints.size() || v->array_size() == v->uints.size() ||
                     v->array_size() == v->floats.size() || v->array_size() == v->strings.size(),
                 "array value fills more than one element vector");
      (void)f.GetArray(kv.key, v->elem_type);
    }
    (void)f.GetU32(kv.key);
    (void)f.GetF32(kv.key);
    (void)f.GetBool(kv.key);
    (void)f.GetString(kv.key);
    (void)f.GetU32Or(kv.key, 7);
    (void)f.GetF32Or(kv.key, 0.5f);
    (void)f.GetBoolOr(kv.key, true);
    (void)f.GetU32PerLayer(kv.key, 3);
    (void)f.GetU32PerLayerOr(kv.key, 1, 2);
    auto per_layer = f.GetU32PerLayer(kv.key, static_cast<uint32_t>(v->array_size()));
    if (per_layer.ok()) FUZZ_CHECK(per_layer->size() == v->array_size(), "GetU32PerLayer size");
  }
  FUZZ_CHECK(f.Find("\x01no such key") == nullptr, "absent key found");
}

// Tensor table: names index back to themselves, byte sizes agree with the shape, data lies in the file.
void ExerciseTensors(const File& f) {
  const uint8_t* file_end = f.data_begin() + f.data_size();
  for (const TensorInfo& t : f.tensors()) {
    FUZZ_CHECK(f.FindTensor(t.name) == &t, "FindTensor('" + lazyslot::fuzz::Escape(t.name) + "')");
    FUZZ_CHECK(t.n_dims <= 4, "n_dims " + std::to_string(t.n_dims));
    for (int d = 0; d < 4; ++d) FUZZ_CHECK(t.ne[d] >= 0, "negative ne");
    FUZZ_CHECK(static_cast<uint64_t>(t.n_rows()) * t.row_bytes() == t.nbytes,
               "nbytes " + std::to_string(t.nbytes) + " != rows x row bytes");
    FUZZ_CHECK(t.offset <= f.data_size() && t.nbytes <= f.data_size() - t.offset,
               "tensor '" + lazyslot::fuzz::Escape(t.name) + "' data outside the data section");
    if (t.nbytes > 0) {
      // Touch both ends: an address sanitizer reports any byte outside the owned buffer.
      const uint8_t* p = f.TensorData(t);
      volatile uint8_t sink = p[0];
      sink = p[t.nbytes - 1];
      (void)sink;
      FUZZ_CHECK(p + t.nbytes <= file_end, "tensor ends past the data section");
    }
  }
}

// A tokenizer from fuzzed metadata: loading may fail, but one that loads must tokenize and detokenize.
void ExerciseTokenizer(const File& f) {
  auto tok = lazyslot::Tokenizer::FromGguf(f);
  if (!tok.ok()) return;
  const lazyslot::Tokenizer& t = **tok;
  const int32_t n_vocab = t.n_vocab();
  FUZZ_CHECK(n_vocab >= 0, "negative n_vocab");
  static const char* const kTexts[] = {"Hello world", " <s>x</s>\n\n\t 123 ", "\xE2\x96\x81\xC3\xA9\xFF"};
  for (const char* text : kTexts) {
    for (int mode = 0; mode < 4; ++mode) {
      auto ids = t.Tokenize(text, mode & 1, mode & 2);
      if (!ids.ok()) continue;
      for (lazyslot::TokenId id : *ids) {
        FUZZ_CHECK(id >= 0 && id < n_vocab, "token id " + std::to_string(id) + " outside the vocabulary");
      }
      (void)t.Detokenize(*ids, mode & 1, mode & 2);
    }
  }
  // Every per-token accessor on a bounded prefix of the vocabulary and on out-of-range ids.
  for (lazyslot::TokenId id : {-1, n_vocab, n_vocab + 1, 0x7fffffff}) {
    (void)t.TokenToPiece(id, true);
    (void)t.TokenText(id);
    (void)t.IsEog(id);
    (void)t.IsControl(id);
  }
  for (lazyslot::TokenId id = 0; id < n_vocab && id < 512; ++id) {
    (void)t.TokenToPiece(id, true);
    (void)t.TokenToPiece(id, false);
    (void)t.IsEog(id);
    (void)t.IsControl(id);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (lazyslot::SetLogLevel(lazyslot::LogLevel::kSilent), true);
  (void)quiet;
  auto file = File::OpenBuffer(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.gguf");
  if (!file.ok()) {
    FUZZ_CHECK(!file.status().message().empty(), "error without a message");
    return 0;
  }
  const File& f = **file;
  FUZZ_CHECK(f.file_size() == size, "file_size " + std::to_string(f.file_size()));
  FUZZ_CHECK(f.version() == 2 || f.version() == 3, "version " + std::to_string(f.version()));
  FUZZ_CHECK(f.alignment() != 0 && (f.alignment() & (f.alignment() - 1)) == 0, "alignment");
  FUZZ_CHECK(f.data_size() <= size, "data section larger than the file");
  ExerciseMetadata(f);
  ExerciseTensors(f);
  ExerciseTokenizer(f);
  (void)f.ReleaseResidentPages();
  return 0;
}
