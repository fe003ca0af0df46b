// Numerics of the encoder pass against llama.cpp (../shared/reference/bert-*.json and nomic-bert-*.json,
// README "embed", "embed_batch", "rank"): pooled embeddings of bert-tiny-{f32,q8_0} and
// nomic-bert-tiny-{f32,q8_0} alone and two in one batch, and the classifier scores of bert-rerank-tiny-f32,
// at the README's tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "engine/pooling.h"
#include "model/classifier.h"
#include "model/encoder.h"
#include "model/model.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using nlohmann::json;

struct Loaded {
  std::unique_ptr<Model> model;
  json ref;
};

Loaded Load(const std::string& name) {
  Loaded l;
  auto m = Model::Load(testing::SharedPath("models/" + name + ".gguf"));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (m.ok()) l.model = std::move(m).value();
  std::ifstream in(testing::SharedPath("reference/" + name + ".json"));
  l.ref = json::parse(in);
  return l;
}

double OneMinusCos(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  return 1 - dot / std::sqrt(na * nb);
}

// Encodes the sequences in one batch (slot s = sequence s) and pools each.
std::vector<std::vector<float>> Encode(const Model& model, const std::vector<std::vector<int32_t>>& seqs,
                                       PoolingType pooling) {
  ThreadPool pool(2);
  Encoder enc(model, pool);
  Batch b;
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (size_t i = 0; i < seqs[s].size(); ++i) {
      b.Add(seqs[s][i], static_cast<int32_t>(i), static_cast<int32_t>(s), Batch::kHidden);
    }
  }
  ForwardOutput out;
  Status st = enc.Run(b, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  const int64_t n_embd = model.hparams().n_embd;
  std::vector<std::vector<float>> pooled;
  size_t row = 0;
  for (const auto& seq : seqs) {
    pooled.push_back(
        PoolEmbedding(pooling, out.hidden.data() + row * n_embd, static_cast<int64_t>(seq.size()), n_embd));
    row += seq.size();
  }
  return pooled;
}

class BertEmbedTest : public ::testing::TestWithParam<const char*> {};

TEST_P(BertEmbedTest, EmbeddingsMatchEveryLength) {
  REQUIRE_SHARED_FILE(std::string("models/") + GetParam() + ".gguf");
  const Loaded l = Load(GetParam());
  ASSERT_TRUE(l.model);
  const double tol = std::string(GetParam()).find("f32") != std::string::npos ? 1e-5 : 2e-3;
  int checked = 0;
  for (const char* key : {"embed", "embed33", "embed120"}) {
    ASSERT_TRUE(l.ref.contains(key)) << key;
    for (auto& [name, e] : l.ref[key].items()) {
      PoolingType pooling;
      ASSERT_TRUE(ParsePooling(name, &pooling)) << name;
      const auto tokens = e["tokens"].get<std::vector<int32_t>>();
      const auto ref = e["embedding"].get<std::vector<float>>();
      const auto ours = Encode(*l.model, {tokens}, pooling)[0];
      ASSERT_EQ(ours.size(), ref.size());
      const double d = OneMinusCos(ours, ref);
      EXPECT_LE(d, tol) << GetParam() << " " << key << " " << name;
      std::printf("[ reference ] %-20s %-8s %-4s %3zu tokens 1-cos %.3g (tolerance %.0e)\n", GetParam(), key,
                  name.c_str(), tokens.size(), d, tol);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6);
}

TEST_P(BertEmbedTest, TwoSequencesInOneBatchMatch) {
  REQUIRE_SHARED_FILE(std::string("models/") + GetParam() + ".gguf");
  const Loaded l = Load(GetParam());
  ASSERT_TRUE(l.model);
  const double tol = std::string(GetParam()).find("f32") != std::string::npos ? 1e-5 : 2e-3;
  ASSERT_TRUE(l.ref.contains("embed_batch"));
  for (auto& [name, e] : l.ref["embed_batch"].items()) {
    PoolingType pooling;
    ASSERT_TRUE(ParsePooling(e["pooling"].get<std::string>(), &pooling)) << name;
    const auto t0 = e["seq0"]["tokens"].get<std::vector<int32_t>>();
    const auto t1 = e["seq1"]["tokens"].get<std::vector<int32_t>>();
    const auto both = Encode(*l.model, {t0, t1}, pooling);
    const double d0 = OneMinusCos(both[0], e["seq0"]["embedding"].get<std::vector<float>>());
    const double d1 = OneMinusCos(both[1], e["seq1"]["embedding"].get<std::vector<float>>());
    EXPECT_LE(d0, tol) << name << " seq0";
    EXPECT_LE(d1, tol) << name << " seq1";
    // Each sequence alone gives the same numbers: the batch does not mix them.
    const auto alone = Encode(*l.model, {t1}, pooling)[0];
    EXPECT_EQ(alone, both[1]) << name;
    std::printf("[ reference ] %-20s batch %-4s 1-cos %.3g / %.3g\n", GetParam(), name.c_str(), d0, d1);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, BertEmbedTest,
                         ::testing::Values("bert-tiny-f32", "bert-tiny-q8_0", "nomic-bert-tiny-f32",
                                           "nomic-bert-tiny-q8_0"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return s;
                         });

TEST(BertRerankTest, ScoresMatch) {
  REQUIRE_SHARED_FILE("models/bert-rerank-tiny-f32.gguf");
  const Loaded l = Load("bert-rerank-tiny-f32");
  ASSERT_TRUE(l.model);
  ASSERT_EQ(l.model->hparams().n_cls_out, 1);
  ASSERT_EQ(l.model->hparams().pooling, PoolingType::kRank);
  ThreadPool pool(2);
  Encoder enc(*l.model, pool);
  ASSERT_TRUE(l.ref.contains("rank"));
  ASSERT_FALSE(l.ref["rank"].empty());
  const int64_t n_embd = l.model->hparams().n_embd;
  for (const auto& r : l.ref["rank"]) {
    const auto tokens = r["tokens"].get<std::vector<int32_t>>();
    Batch b;
    for (size_t i = 0; i < tokens.size(); ++i) {
      b.Add(tokens[i], static_cast<int32_t>(i), 0, i == 0 ? Batch::kHidden : Batch::kNone);
    }
    ForwardOutput out;
    ASSERT_TRUE(enc.Run(b, &out).ok());
    ASSERT_EQ(out.hidden.size(), static_cast<size_t>(n_embd));
    const auto scores = ClassifierScores(*l.model, pool, out.hidden.data(), 1);
    ASSERT_EQ(scores.size(), 1u);
    const double want = r["score"].get<double>();
    EXPECT_NEAR(scores[0], want, 1e-3) << r["query"] << " / " << r["document"];
    std::printf("[ reference ] rank %+.6f vs %+.6f (|d| %.2g, tolerance 1e-3)\n", scores[0], want,
                std::fabs(scores[0] - want));
  }
}

TEST(BertEncoderTest, RefusesWhatItCannotCompute) {
  REQUIRE_SHARED_FILE("models/bert-tiny-f32.gguf");
  auto m = Model::Load(testing::SharedPath("models/bert-tiny-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Model& model = **m;
  EXPECT_TRUE(model.arch().encoder);
  EXPECT_FALSE(model.hparams().causal);
  EXPECT_EQ(model.hparams().n_cls_out, 0);
  ThreadPool pool(1);
  Encoder enc(model, pool);
  ForwardOutput out;
  Batch logits;
  logits.Add(101, 0, 0, Batch::kLogits);
  Status st = enc.Run(logits, &out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("logits"), std::string::npos) << st.message();
  Batch gap;  // a sequence must be whole: positions from 0
  gap.Add(101, 1, 0, Batch::kHidden);
  EXPECT_EQ(enc.Run(gap, &out).code(), Code::kInvalidArgument);
  Batch too_long;  // past the learned positions
  for (int i = 0; i <= model.hparams().n_ctx_train; ++i) too_long.Add(999, i, 0, Batch::kNone);
  st = enc.Run(too_long, &out);
  EXPECT_EQ(st.code(), Code::kOutOfRange);
  EXPECT_NE(st.message().find("trained positions"), std::string::npos) << st.message();
  Batch split;  // one slot's rows must be contiguous
  split.Add(101, 0, 0, Batch::kHidden);
  split.Add(101, 0, 1, Batch::kHidden);
  split.Add(102, 1, 0, Batch::kHidden);
  EXPECT_EQ(enc.Run(split, &out).code(), Code::kInvalidArgument);
  // After the refusals a good batch still runs.
  Batch ok;
  ok.Add(101, 0, 0, Batch::kHidden);
  ok.Add(102, 1, 0, Batch::kHidden);
  EXPECT_TRUE(enc.Run(ok, &out).ok());
  EXPECT_EQ(out.hidden.size(), 2u * model.hparams().n_embd);
  EXPECT_GT(enc.scratch_bytes(), 0u);
  enc.ReleaseScratch();
  EXPECT_EQ(enc.scratch_bytes(), 0u);
}

}  // namespace
}  // namespace lazyslot
