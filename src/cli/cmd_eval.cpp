// `lazyslot eval`: runs token ids through the model and prints JSON in the format of ../shared/reference:
// logits per position, a greedy continuation, or a pooled embedding (an encoder's only output). The numerics
// tests use the same path.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "engine/pooling.h"
#include "engine/sampler.h"
#include "kv/kv_cache.h"
#include "model/encoder.h"
#include "model/forward.h"
#include "model/model.h"
#include "ops/elementwise.h"

namespace lazyslot::cli {
namespace {

struct EvalOptions {
  std::string model;
  std::string tokens;
  int greedy = 0;
  std::string embed;
  int threads = 0;
  bool flash_attn = false;
};

Result<std::vector<int32_t>> ParseTokens(const std::string& s) {
  std::vector<int32_t> ids;
  std::istringstream in(s);
  std::string word;
  while (in >> word) {
    try {
      size_t used = 0;
      long v = std::stol(word, &used);
      if (used != word.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(word);
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      return InvalidArgument("--tokens: '" + word + "' is not a token id");
    }
  }
  if (ids.empty()) return InvalidArgument("--tokens: no token ids given");
  return ids;
}

// {"pooling", "tokens", "embedding"}: the hidden rows pooled and L2-normalised, as ../shared/reference stores
// embeddings (the engine returns them raw).
nlohmann::json EmbeddingJson(const std::string& name, PoolingType pooling, const std::vector<int32_t>& tokens,
                             const ForwardOutput& out, int64_t n_embd) {
  nlohmann::json j;
  j["pooling"] = name;
  j["tokens"] = tokens;
  std::vector<float> v =
      PoolEmbedding(pooling, out.hidden.data(), static_cast<int64_t>(out.hidden_rows.size()), n_embd);
  L2Normalize(v.data(), n_embd);
  j["embedding"] = std::move(v);
  return j;
}

Result<nlohmann::json> Eval(const EvalOptions& o) {
  LS_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, ParseTokens(o.tokens));
  PoolingType pooling = PoolingType::kNone;
  if (!o.embed.empty() && (!ParsePooling(o.embed, &pooling) || pooling == PoolingType::kNone)) {
    return InvalidArgument("--embed must be mean, last or cls, got '" + o.embed + "'");
  }
  LS_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::Load(o.model, {.threads = o.threads}));
  const HParams& hp = model->hparams();
  if (model->arch().encoder) {
    if (pooling == PoolingType::kNone) {
      return InvalidArgument(o.model + " is an encoder (" + hp.arch + "): it gives embeddings (--embed " +
                             "mean|cls), not logits or greedy ids");
    }
    ThreadPool pool(o.threads);
    Encoder enc(*model, pool);
    Batch batch;
    for (size_t i = 0; i < tokens.size(); ++i) batch.Add(tokens[i], static_cast<int32_t>(i), 0, Batch::kHidden);
    ForwardOutput out;
    LS_RETURN_IF_ERROR(enc.Run(batch, &out));
    return EmbeddingJson(o.embed, pooling, tokens, out, hp.n_embd);
  }
  KvConfig kc;
  kc.n_layer = hp.n_layer;
  kc.n_slot = 1;
  kc.n_ctx_slot = static_cast<int32_t>(tokens.size()) + o.greedy;
  kc.n_embd_k = kc.n_embd_v = hp.n_embd_kv();
  kc.layer_window = hp.layer_window;
  LS_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> kv, KvCache::Create(kc));
  ThreadPool pool(o.threads);
  Forward fwd(*model, *kv, pool, o.flash_attn ? AttentionMode::kFlash : AttentionMode::kStandard);

  Batch batch;
  const bool all_rows = o.greedy == 0;  // logits or embeddings for every position
  const bool embed = pooling != PoolingType::kNone;
  const uint8_t flag = embed ? Batch::kHidden : Batch::kLogits;
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.Add(tokens[i], static_cast<int32_t>(i), 0, all_rows || i + 1 == tokens.size() ? flag : static_cast<uint8_t>(Batch::kNone));
  }
  ForwardOutput out;
  LS_RETURN_IF_ERROR(fwd.Run(batch, &out));

  if (embed) return EmbeddingJson(o.embed, pooling, tokens, out, hp.n_embd);
  nlohmann::json j;
  if (o.greedy > 0) {
    std::vector<int32_t> greedy;
    int32_t pos = static_cast<int32_t>(tokens.size());
    for (int step = 0; step < o.greedy; ++step) {
      const int32_t next = Sampler::Argmax(out.logits.data(), hp.n_vocab);
      greedy.push_back(next);
      if (step + 1 == o.greedy) break;
      batch.Clear();
      batch.Add(next, pos++, 0, Batch::kLogits);
      LS_RETURN_IF_ERROR(fwd.Run(batch, &out));
    }
    j["prompt"] = tokens;
    j["greedy"] = greedy;
    return j;
  }
  j["n_vocab"] = hp.n_vocab;
  j["tokens"] = tokens;
  nlohmann::json rows = nlohmann::json::array();
  for (size_t r = 0; r < out.logit_rows.size(); ++r) {
    rows.push_back(std::vector<float>(out.logits.begin() + r * hp.n_vocab, out.logits.begin() + (r + 1) * hp.n_vocab));
  }
  j["logits"] = std::move(rows);
  return j;
}

}  // namespace

void AddEvalCommand(CLI::App& root, int* exit_code) {
  auto opts = std::make_shared<EvalOptions>();
  CLI::App* cmd = root.add_subcommand("eval", "Run token ids through a model; print logits, greedy ids or an embedding as JSON");
  cmd->add_option("-m,--model", opts->model, "GGUF model file")->required();
  cmd->add_option("--tokens", opts->tokens, "Space-separated token ids, e.g. \"1 2 3\"")->required();
  auto* greedy = cmd->add_option("--greedy", opts->greedy, "Print N greedy (argmax) continuation ids")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--embed", opts->embed, "Print the pooled, L2-normalised embedding: mean, last or cls")->excludes(greedy);
  cmd->add_option("-t,--threads", opts->threads, "Threads (default: physical cores)");
  cmd->add_flag("--flash-attn", opts->flash_attn,
                "Online-softmax attention with an F16 accumulator (llama.cpp -fa on); default off, as the reference");
  cmd->callback([opts, exit_code] {
    Result<nlohmann::json> r = Eval(*opts);
    if (!r.ok()) {
      std::fprintf(stderr, "lazyslot eval: %s\n", r.status().message().c_str());
      *exit_code = 1;
      return;
    }
    std::printf("%s\n", r->dump().c_str());
    *exit_code = 0;
  });
}

}  // namespace lazyslot::cli
