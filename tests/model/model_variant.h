// A copy of a shared model file with its metadata edited and tensors dropped, reshaped or added, written
// under the test's temp dir: the broken files a user might hold, made from real ones.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "test_util.h"

namespace lazyslot::testing {

struct ModelVariant {
  std::function<void(gguf::Writer&)> edit = {};  // applied after the source's metadata is copied
  std::string drop_tensor = {};
  std::string drop_key = {};
  // This tensor gets dims `reshape_ne` and the first bytes of its data (as many as the new shape holds).
  std::string reshape_tensor = {};
  std::vector<int64_t> reshape_ne = {};
  std::function<void(gguf::Writer&)> add_tensors = {};  // applied after the source's tensors are copied
};

// Writes ../shared/`shared_model` changed by `v` as TempDir()/model_variant/<name>.gguf; returns its path.
inline std::string WriteModelVariant(const std::string& shared_model, const std::string& name,
                                     const ModelVariant& v) {
  auto src = gguf::File::Open(SharedPath(shared_model));
  EXPECT_TRUE(src.ok()) << src.status().ToString();
  if (!src.ok()) return "";
  const gguf::File& f = **src;
  gguf::Writer w;
  for (const gguf::KeyValue& kv : f.metadata()) {
    if (kv.key != v.drop_key) {
      EXPECT_TRUE(w.CopyKv(kv.value, kv.key).ok());
    }
  }
  if (v.edit) v.edit(w);
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (t.name == v.drop_tensor) continue;
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    size_t bytes = t.nbytes;
    if (t.name == v.reshape_tensor) {
      ne = v.reshape_ne;
      int64_t rows = 1;
      for (size_t d = 1; d < ne.size(); ++d) rows *= ne[d];
      bytes = std::min<size_t>(bytes, RowBytes(t.type, ne[0]) * static_cast<size_t>(rows));
    }
    const uint8_t* data = f.TensorData(t);
    EXPECT_TRUE(w.AddTensor(t.name, t.type, ne, std::vector<uint8_t>(data, data + bytes)).ok()) << t.name;
  }
  if (v.add_tensors) v.add_tensors(w);
  const std::string dir = ::testing::TempDir() + "model_variant";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name + ".gguf";
  const Status st = w.Write(path);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return path;
}

// Loads `path` expecting a refusal whose message names `what`.
inline void ExpectModelRefused(const std::string& path, const std::string& what) {
  auto m = Model::Load(path, {.huge_pages = false});
  ASSERT_FALSE(m.ok()) << path << " loaded";
  EXPECT_NE(m.status().message().find(what), std::string::npos) << m.status().ToString();
}

}  // namespace lazyslot::testing
