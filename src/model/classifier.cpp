// Classifier head (classifier.h).
#include "model/classifier.h"

#include <algorithm>
#include <cmath>

#include "ops/elementwise.h"
#include "ops/matmul.h"

namespace lazyslot {

bool LastTokenRanks(const Model& model) { return model.hparams().arch == "qwen3"; }

std::vector<float> ClassifierScores(const Model& model, ThreadPool& pool, const float* pooled,
                                    int64_t n_rows) {
  const ClassifierWeights& c = model.classifier();
  const int64_t n_embd = model.hparams().n_embd, n_out = model.hparams().n_cls_out;
  std::vector<float> scores(n_rows * n_out);
  if (!c.present() || n_rows == 0) return scores;
  MatMulScratch mm;
  std::vector<float> h(pooled, pooled + n_rows * n_embd);
  if (c.cls.data) {
    std::vector<float> t(n_rows * n_embd);
    MatMul(pool, c.cls, h.data(), n_rows, t.data(), n_embd, mm);
    for (int64_t r = 0; r < n_rows; ++r) {
      float* row = t.data() + r * n_embd;
      if (!c.cls_b.empty()) AddInPlace(row, c.cls_b.data(), n_embd);
      for (int64_t i = 0; i < n_embd; ++i) row[i] = std::tanh(row[i]);
    }
    h.swap(t);
  }
  MatMul(pool, c.out, h.data(), n_rows, scores.data(), n_out, mm);
  for (int64_t r = 0; r < n_rows; ++r) {
    float* s = scores.data() + r * n_out;
    if (!c.out_b.empty()) AddInPlace(s, c.out_b.data(), n_out);
    if (!LastTokenRanks(model)) continue;
    const float mx = *std::max_element(s, s + n_out);
    double sum = 0;
    for (int64_t i = 0; i < n_out; ++i) sum += s[i] = std::exp(s[i] - mx);
    for (int64_t i = 0; i < n_out; ++i) s[i] = static_cast<float>(s[i] / sum);
  }
  return scores;
}

}  // namespace lazyslot
