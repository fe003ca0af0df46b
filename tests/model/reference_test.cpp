// Numerics against llama.cpp: every model in ../shared/models gives the reference logits (short, long,
// long2k, long300, twoseq), greedy continuations and pooled embeddings of ../shared/reference/MODEL.json, within the
// tolerances of ../shared/reference/README.md (chosen from the model's weight types, never per file). A
// mixture of experts' row may instead meet them with a near tie of its routing taken the other way (kNearTie).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "engine/pooling.h"
#include "engine/sampler.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "ops/moe_route.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using nlohmann::json;

const char* kModels[] = {
    "stories260K",      "TinyLLama-v0-Q4_0", "llama-2-tiny-random", "qwen2-tiny-f32",    "qwen2-tiny-q8_0",
    "qwen2-tiny-q4_k_m", "qwen3-tiny-f32",   "qwen3-tiny-f16",      "qwen3-tiny-bf16",   "qwen3-tiny-q8_0",
    "qwen3-tiny-q4_0",  "qwen3-tiny-q4_k_m", "qwen3-tiny-q5_k_m",   "qwen3-tiny-q6_k",   "qwen3-hd128-f32",
    "qwen3-hd128-q8_0", "qwen3-vocab-tiny-q8_0", "gemma3-tiny-f32",    "gemma3-tiny-q8_0",
    "qwen3moe-tiny-f32", "qwen3moe-tiny-q8_0", "qwen3moe-tiny-q4_k_m", "phi3-tiny-f32", "phi3-tiny-q8_0",
    "phi3-tiny-q4_k_m",
};

enum class Precision { kF32, kHalf, kQuantized };

// The widest rounding any weight matrix of the model implies.
Precision ModelPrecision(const Model& m) {
  Precision p = Precision::kF32;
  for (const auto& t : m.file().tensors()) {
    if (t.n_dims < 2) continue;
    if (t.type == TensorType::kF16 || t.type == TensorType::kBF16) {
      p = std::max(p, Precision::kHalf);
    } else if (t.type != TensorType::kF32) {
      p = Precision::kQuantized;
    }
  }
  return p;
}

double LogitTolerance(Precision p) {
  switch (p) {
    case Precision::kF32: return 1e-3;
    case Precision::kHalf: return 1e-2;
    case Precision::kQuantized: return 3e-2;
  }
  return 0;
}

double EmbedTolerance(Precision p) { return p == Precision::kF32 ? 1e-5 : 2e-3; }

struct Loaded {
  std::unique_ptr<Model> model;
  json ref;
};

const Loaded& Load(const std::string& name) {
  static std::map<std::string, Loaded> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Loaded l;
  auto m = Model::Load(testing::SharedPath("models/" + name + ".gguf"));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (m.ok()) l.model = std::move(m).value();
  std::ifstream in(testing::SharedPath("reference/" + name + ".json"));
  l.ref = json::parse(in);
  return cache.emplace(name, std::move(l)).first->second;
}

// Runs the sequences together in one batch (one slot each, from position 0); returns logits per sequence
// for the positions >= logits_from. `route` watches (and may change) a mixture of experts' routing.
std::vector<std::vector<float>> RunSequences(const Model& model, const std::vector<std::vector<int32_t>>& seqs,
                                             int32_t logits_from, bool hidden, ForwardOutput* out_raw,
                                             const Forward::RouteHook& route = nullptr) {
  const HParams& hp = model.hparams();
  KvConfig kc;
  kc.n_layer = hp.n_layer;
  kc.n_slot = static_cast<int>(seqs.size());
  kc.n_ctx_slot = 1;
  for (const auto& s : seqs) kc.n_ctx_slot = std::max<int32_t>(kc.n_ctx_slot, static_cast<int32_t>(s.size()));
  kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
  kc.layer_window = hp.layer_window;
  auto kv = KvCache::Create(kc);
  EXPECT_TRUE(kv.ok()) << kv.status().ToString();
  ThreadPool pool(2);
  Forward fwd(model, **kv, pool);
  fwd.SetRouteHook(route);
  Batch b;
  // Interleave the sequences so each batch really mixes slots.
  size_t longest = 0;
  for (const auto& s : seqs) longest = std::max(longest, s.size());
  for (size_t i = 0; i < longest; ++i) {
    for (size_t s = 0; s < seqs.size(); ++s) {
      const uint8_t flag = hidden ? Batch::kHidden : Batch::kLogits;
      if (i < seqs[s].size()) b.Add(seqs[s][i], static_cast<int32_t>(i), static_cast<int32_t>(s), static_cast<int32_t>(i) >= logits_from ? flag : static_cast<uint8_t>(Batch::kNone));
    }
  }
  ForwardOutput out;
  Status st = fwd.Run(b, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<std::vector<float>> per_seq(seqs.size());
  const size_t width = hidden ? hp.n_embd : hp.n_vocab;
  const std::vector<float>& data = hidden ? out.hidden : out.logits;
  const std::vector<int32_t>& rows = hidden ? out.hidden_rows : out.logit_rows;
  for (size_t r = 0; r < rows.size(); ++r) {
    const int32_t s = b.slot[rows[r]];
    per_seq[s].insert(per_seq[s].end(), data.begin() + r * width, data.begin() + (r + 1) * width);
  }
  if (out_raw) *out_raw = std::move(out);
  return per_seq;
}

// max |ours - ref| / (max - min of ref) over one row of logits.
double RowError(const float* ours, const std::vector<float>& ref) {
  const auto [mn, mx] = std::minmax_element(ref.begin(), ref.end());
  double err = 0;
  for (size_t v = 0; v < ref.size(); ++v) err = std::max(err, std::abs(double(ours[v]) - ref[v]));
  return err / (*mx - *mn);
}

// Whether row r's argmax may differ from the reference's: only where the reference's top-two margin is
// within twice the tolerance.
bool ArgmaxAgrees(const float* ours, const std::vector<float>& ref, double tol) {
  std::vector<float> sorted = ref;
  std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
  const auto [mn, mx] = std::minmax_element(ref.begin(), ref.end());
  if ((sorted[0] - sorted[1]) / (*mx - *mn) <= 2 * tol) return true;
  const int32_t n = static_cast<int32_t>(ref.size());
  return Sampler::Argmax(ours, n) == Sampler::Argmax(ref.data(), n);
}

// Compares logits row by row; returns the worst normalised error. A row over the tolerance (or whose argmax
// differs) passes only if `excuse(row)` shows that it is met another legitimate way (a mixture of experts'
// near tie routed the other way).
double CompareLogits(const std::vector<float>& ours, const json& ref_rows, int32_t n_vocab, double tol,
                     const std::string& what, const std::function<bool(size_t row)>& excuse = nullptr) {
  double worst = 0;
  EXPECT_EQ(ours.size(), ref_rows.size() * n_vocab) << what;
  if (ours.size() != ref_rows.size() * n_vocab) return 1e9;
  for (size_t r = 0; r < ref_rows.size(); ++r) {
    const auto ref = ref_rows[r].get<std::vector<float>>();
    const float* o = ours.data() + r * n_vocab;
    const double rel = RowError(o, ref);
    if (rel <= tol && ArgmaxAgrees(o, ref, tol)) {
      worst = std::max(worst, rel);
      continue;
    }
    if (excuse && excuse(r)) continue;
    worst = std::max(worst, rel);
    EXPECT_LE(rel, tol) << what << " row " << r << ": max |ours - ref| over the range";
    EXPECT_TRUE(ArgmaxAgrees(o, ref, tol)) << what << " row " << r;
  }
  return worst;
}

// A mixture of experts routes a token whose k-th and (k+1)-th router logits lie within kNearTie either way
// on the rounding of its inputs. The reference's attention rounds Q, K, V and the probabilities to F16, so a
// value 1e-7 away from ours lands on the other side of an F16 step now and then, and a later layer's router
// sees logits ~1e-2 away (the reference README's pitfall; docs/decisions/0018). A row over the tolerance is
// checked again with one near tie at or before it routed the other way, at the same tolerance.
constexpr float kNearTie = 0.05f;

struct NearTie {
  int il;
  int64_t row;
  float gap;
};

// The k+1 best experts of a token's router logits, best first (weights: their probabilities).
void TopExperts(const float* logits, int n_expert, int k1, std::vector<int32_t>* ids, std::vector<float>* w) {
  std::vector<float> probs(n_expert);
  ids->resize(k1);
  w->resize(k1);
  RouteTopK(logits, n_expert, k1, /*normalize=*/false, ids->data(), w->data(), probs.data());
}

// Records every near tie of the routing.
Forward::RouteHook RecordNearTies(const HParams& hp, std::vector<NearTie>* ties) {
  return [=, &hp](int il, int64_t row, const float* logits, int32_t*, float*) {
    const int k = hp.n_expert_used;
    if (k >= hp.n_expert) return;
    std::vector<int32_t> ids;
    std::vector<float> w;
    TopExperts(logits, hp.n_expert, k + 1, &ids, &w);
    const float gap = logits[ids[k - 1]] - logits[ids[k]];
    if (gap < kNearTie) ties->push_back({il, row, gap});
  };
}

// Routes the tie's token to its (k+1)-th expert in place of its k-th, weights renormalised as the engine does.
Forward::RouteHook FlipTie(const HParams& hp, NearTie tie) {
  return [=, &hp](int il, int64_t row, const float* logits, int32_t* ids, float* weights) {
    if (il != tie.il || row != tie.row) return;
    const int k = hp.n_expert_used;
    std::vector<int32_t> top;
    std::vector<float> w;
    TopExperts(logits, hp.n_expert, k + 1, &top, &w);
    top[k - 1] = top[k];
    w[k - 1] = w[k];
    double sum = 0;
    for (int j = 0; j < k; ++j) sum += w[j];
    const float denom = std::max(static_cast<float>(sum), 6.103515625e-5f);
    for (int j = 0; j < k; ++j) {
      ids[j] = top[j];
      weights[j] = w[j] / denom;
    }
  };
}

class ReferenceTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    REQUIRE_SHARED_FILE("models/" + std::string(GetParam()) + ".gguf");
    REQUIRE_SHARED_FILE("reference/" + std::string(GetParam()) + ".json");
  }
};

TEST_P(ReferenceTest, LogitsMatch) {
  const Loaded& l = Load(GetParam());
  ASSERT_TRUE(l.model);
  const Precision p = ModelPrecision(*l.model);
  const double tol = LogitTolerance(p);
  const int32_t n_vocab = l.model->hparams().n_vocab;
  for (const char* key : {"short", "long", "long2k", "long300"}) {
    if (!l.ref.contains(key)) continue;
    const json& r = l.ref[key];
    ASSERT_EQ(r["n_vocab"].get<int32_t>(), n_vocab);
    const auto tokens = r["tokens"].get<std::vector<int32_t>>();
    const int32_t from = r.contains("logits_from") ? r["logits_from"].get<int32_t>() : 0;
    auto r_logits_row = [&r](size_t row) { return r["logits"][row].get<std::vector<float>>(); };
    const HParams& hp = l.model->hparams();
    std::vector<NearTie> ties;
    auto ours = RunSequences(*l.model, {tokens}, from, false, nullptr,
                             hp.n_expert > 0 ? RecordNearTies(hp, &ties) : nullptr);
    // Row r (position from + r) over the tolerance: met with one near tie at or before it routed the other way.
    auto excuse = [&](size_t r) {
      const int64_t pos = from + static_cast<int64_t>(r);
      for (const NearTie& tie : ties) {
        if (tie.row > pos) continue;
        auto flipped = RunSequences(*l.model, {tokens}, from, false, nullptr, FlipTie(hp, tie));
        const auto ref = r_logits_row(r);
        const double rel = RowError(flipped[0].data() + r * n_vocab, ref);
        if (rel <= tol && ArgmaxAgrees(flipped[0].data() + r * n_vocab, ref, tol)) {
          std::printf("[ reference ] %-22s %-7s row %zu: %.3g of range with layer %d token %lld's near tie "
                      "(router logits %.3g apart) routed the other way\n",
                      GetParam(), key, r, rel, tie.il, static_cast<long long>(tie.row), tie.gap);
          return true;
        }
      }
      return false;
    };
    const double worst =
        CompareLogits(ours[0], r["logits"], n_vocab, tol, std::string(GetParam()) + " " + key, excuse);
    std::printf("[ reference ] %-22s %-7s worst error %.3g of range (tolerance %.0e)\n", GetParam(), key, worst, tol);
  }
}

TEST_P(ReferenceTest, TwoSequencesInOneBatchMatch) {
  const Loaded& l = Load(GetParam());
  ASSERT_TRUE(l.model);
  if (!l.ref.contains("twoseq")) GTEST_SKIP() << "no twoseq reference";
  const double tol = LogitTolerance(ModelPrecision(*l.model));
  const json& r = l.ref["twoseq"];
  auto s0 = r["seq0"]["tokens"].get<std::vector<int32_t>>();
  auto s1 = r["seq1"]["tokens"].get<std::vector<int32_t>>();
  auto ours = RunSequences(*l.model, {s0, s1}, 0, false, nullptr);
  const int32_t n_vocab = l.model->hparams().n_vocab;
  CompareLogits(ours[0], r["seq0"]["logits"], n_vocab, tol, std::string(GetParam()) + " twoseq seq0");
  CompareLogits(ours[1], r["seq1"]["logits"], n_vocab, tol, std::string(GetParam()) + " twoseq seq1");
  // Slot isolation: each sequence alone gives the same logits as in the shared batch, bit for bit.
  auto alone = RunSequences(*l.model, {s1}, 0, false, nullptr);
  EXPECT_EQ(alone[0], ours[1]);
}

TEST_P(ReferenceTest, GreedyMatchesWhileMarginIsClear) {
  const Loaded& l = Load(GetParam());
  ASSERT_TRUE(l.model);
  if (!l.ref.contains("greedy")) GTEST_SKIP() << "no greedy reference";
  const HParams& hp = l.model->hparams();
  for (const json& g : l.ref["greedy"]) {
    const auto prompt = g["prompt"].get<std::vector<int32_t>>();
    const auto expect = g["greedy"].get<std::vector<int32_t>>();
    const auto margin = g["margin"].get<std::vector<float>>();
    KvConfig kc;
    kc.n_layer = hp.n_layer;
    kc.n_ctx_slot = static_cast<int32_t>(prompt.size() + expect.size());
    kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
    kc.layer_window = hp.layer_window;
    auto kv = KvCache::Create(kc);
    ASSERT_TRUE(kv.ok());
    ThreadPool pool(2);
    Forward fwd(*l.model, **kv, pool);
    Batch b;
    for (size_t i = 0; i < prompt.size(); ++i) b.Add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size() ? Batch::kLogits : Batch::kNone);
    ForwardOutput out;
    ASSERT_TRUE(fwd.Run(b, &out).ok());
    for (size_t step = 0; step < expect.size(); ++step) {
      const int32_t next = Sampler::Argmax(out.logits.data(), hp.n_vocab);
      if (margin[step] < 0.05f) break;  // a near tie: a correct engine may choose differently from here on
      ASSERT_EQ(next, expect[step]) << GetParam() << " greedy step " << step;
      b.Clear();
      b.Add(next, static_cast<int32_t>(prompt.size() + step), 0, Batch::kLogits);
      ASSERT_TRUE(fwd.Run(b, &out).ok());
    }
  }
}

TEST_P(ReferenceTest, EmbeddingsMatch) {
  const Loaded& l = Load(GetParam());
  ASSERT_TRUE(l.model);
  if (!l.ref.contains("embed")) GTEST_SKIP() << "no embed reference";
  const double tol = EmbedTolerance(ModelPrecision(*l.model));
  for (auto& [name, e] : l.ref["embed"].items()) {
    PoolingType pooling;
    ASSERT_TRUE(ParsePooling(name, &pooling)) << name;
    const auto tokens = e["tokens"].get<std::vector<int32_t>>();
    const auto ref = e["embedding"].get<std::vector<float>>();
    auto hidden = RunSequences(*l.model, {tokens}, 0, true, nullptr);
    const int64_t n_embd = l.model->hparams().n_embd;
    auto ours = PoolEmbedding(pooling, hidden[0].data(), static_cast<int64_t>(tokens.size()), n_embd);
    ASSERT_EQ(ours.size(), ref.size());
    double dot = 0, na = 0, nb = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      dot += double(ours[i]) * ref[i];
      na += double(ours[i]) * ours[i];
      nb += double(ref[i]) * ref[i];
    }
    const double cos = dot / std::sqrt(na * nb);
    EXPECT_LE(1 - cos, tol) << GetParam() << " embed " << name;
    std::printf("[ reference ] %-22s embed %-5s 1-cos %.3g (tolerance %.0e)\n", GetParam(), name.c_str(), 1 - cos, tol);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ReferenceTest, ::testing::ValuesIn(kModels),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace lazyslot
