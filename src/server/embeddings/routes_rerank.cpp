// POST /v1/rerank, /rerank, /reranking, /v1/reranking (llama-server's names, served with --rerank): a query
// scored against documents by the model's classifier head. Jina/Cohere's shape ({query, documents, top_n,
// return_documents} -> {model, object, usage, results: [{index, relevance_score, document?}]}), or TEI's when
// the body has `texts` ({query, texts, raw_scores, return_text, truncate} -> [{index, score, text?}], TEI's
// errors); both sorted by score, highest first. Pairs are built as llama-server's format_prompt_rerank
// builds them. See docs/embeddings.md.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "server/embeddings/embed_batch.h"
#include "server/generation/openai_params.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"
#include "server/server_state.h"

namespace lazyslot::server {
namespace {

struct RerankRequest {
  bool tei = false;  // the body has `texts`
  std::string field = "documents";
  std::string query;
  std::vector<std::string> documents;
  size_t top_n = std::numeric_limits<size_t>::max();
  bool return_documents = false;  // Jina/Cohere `return_documents`, TEI `return_text`
  bool raw_scores = false;        // TEI: no sigmoid
  TruncateOptions truncate;
};

Result<RerankRequest> ParseRerank(const Json& body, const ServerState& st) {
  RerankRequest r;
  r.tei = body.contains("texts");
  r.field = r.tei ? "texts" : "documents";
  static const std::vector<std::string> kJina = {
      "query", "documents", "top_n", "return_documents", "truncate", "truncation_direction", "model", "user"};
  static const std::vector<std::string> kTei = {"query", "texts",    "raw_scores",           "return_text",
                                                "top_n", "truncate", "truncation_direction", "model"};
  if (r.tei && body.contains("documents")) {
    return InvalidArgument("texts: give either documents (Jina/Cohere) or texts (TEI), not both");
  }
  LS_RETURN_IF_ERROR(CheckFieldNames(body, r.tei ? kTei : kJina));
  if (!Present(body, "query")) return InvalidArgument("query: is required");
  if (!body.at("query").is_string()) {
    return InvalidArgument("query: expected a string, got " + TypeName(body.at("query")));
  }
  r.query = body.at("query").get<std::string>();
  if (!Present(body, r.field)) return InvalidArgument(r.field + ": is required");
  const Json& docs = body.at(r.field);
  if (!docs.is_array()) {
    return InvalidArgument(r.field + ": expected a non-empty list of strings, got " + TypeName(docs));
  }
  for (size_t i = 0; i < docs.size(); ++i) {
    const std::string name = r.field + "[" + std::to_string(i) + "]";
    const Json& d = docs[i];
    if (d.is_string()) {
      r.documents.push_back(d.get<std::string>());
    } else if (!r.tei && d.is_object()) {  // Jina's and Cohere's {"text": ...}
      LS_RETURN_IF_ERROR(CheckFieldNames(d, {"text"}, name));
      if (!d.contains("text") || !d.at("text").is_string()) {
        return InvalidArgument(name + ".text: expected a string");
      }
      r.documents.push_back(d.at("text").get<std::string>());
    } else {
      return InvalidArgument(name + ": expected a string" + (r.tei ? "" : " or {\"text\": string}") +
                             ", got " + TypeName(d));
    }
  }
  if (Present(body, "top_n")) {
    LS_ASSIGN_OR_RETURN(int64_t n, GetInteger(body, "top_n", 1, std::numeric_limits<int32_t>::max()));
    r.top_n = static_cast<size_t>(n);
  }
  LS_ASSIGN_OR_RETURN(r.return_documents, GetBool(body, r.tei ? "return_text" : "return_documents", false));
  LS_ASSIGN_OR_RETURN(r.raw_scores, GetBool(body, "raw_scores", false));
  LS_ASSIGN_OR_RETURN(r.truncate, ParseTruncateOptions(body, st));
  return r;
}

// llama.cpp's string_replace_all.
void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s->find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(*s, pos, hit - pos).append(to);
  }
  out.append(*s, pos, std::string::npos);
  *s = std::move(out);
}

// The tokens of (query, document) pairs, as llama-server's format_prompt_rerank builds them: with the
// model's `tokenizer.chat_template.rerank`, that text with {query} and {document} substituted, tokenized
// with control-token text parsed and nothing added; else BOS (if add_bos), the query, EOS or else SEP (if
// add_eos), SEP (if add_sep), the document, EOS or else SEP (if add_eos), each text tokenized plainly.
class PairBuilder {
 public:
  PairBuilder(const ModelContext& m, std::string query)
      : tok_(m.engine->tokenizer()), query_(std::move(query)) {
    Result<std::string> t = m.engine->model().ChatTemplate("rerank");
    if (t.ok()) tmpl_ = std::move(*t);
  }

  Status Init() {
    if (tmpl_) return Status::Ok();
    LS_ASSIGN_OR_RETURN(query_ids_, tok_.Tokenize(query_, false, false));
    return Status::Ok();
  }

  // The pair for `doc`; longer than `limit` only when it may not be cut (`t.truncate` false) or cannot be.
  // Cutting follows TEI: without a template, tokens come off the longer of query and document first
  // (longest-first), from the `t.side` end; with a template, off the document only.
  Result<std::vector<TokenId>> Build(const std::string& doc, const TruncateOptions& t, size_t limit,
                                     bool* cut) const {
    *cut = false;
    if (tmpl_) return BuildFromTemplate(doc, t, limit, cut);
    LS_ASSIGN_OR_RETURN(std::vector<TokenId> d, tok_.Tokenize(doc, false, false));
    std::vector<TokenId> q = query_ids_;
    const size_t overhead = Assemble({}, {}).size();
    if (t.truncate && q.size() + d.size() + overhead > limit && limit > overhead) {
      size_t nq = q.size(), nd = d.size();
      while (nq + nd + overhead > limit) (nq > nd ? nq : nd) -= 1;
      CutTokens(&q, nq, 0, 0, t.side);
      CutTokens(&d, nd, 0, 0, t.side);
      *cut = true;
    }
    return Assemble(q, d);
  }

 private:
  std::vector<TokenId> Assemble(const std::vector<TokenId>& q, const std::vector<TokenId>& d) const {
    const TokenId eos = tok_.eos() >= 0 ? tok_.eos() : tok_.sep();
    std::vector<TokenId> out;
    out.reserve(q.size() + d.size() + 4);
    if (tok_.add_bos() && tok_.bos() >= 0) out.push_back(tok_.bos());
    out.insert(out.end(), q.begin(), q.end());
    if (tok_.add_eos() && eos >= 0) out.push_back(eos);
    if (tok_.add_sep() && tok_.sep() >= 0) out.push_back(tok_.sep());
    out.insert(out.end(), d.begin(), d.end());
    if (tok_.add_eos() && eos >= 0) out.push_back(eos);
    return out;
  }

  Result<std::vector<TokenId>> FromTemplate(const std::string& doc) const {
    std::string prompt = *tmpl_;
    ReplaceAll(&prompt, "{query}", query_);
    ReplaceAll(&prompt, "{document}", doc);
    return tok_.Tokenize(prompt, false, true);
  }

  // Cuts the document's tokens by what the prompt is over the limit and renders the rest back to text,
  // until the prompt fits (text boundaries may tokenize differently, hence the loop).
  Result<std::vector<TokenId>> BuildFromTemplate(const std::string& doc, const TruncateOptions& t,
                                                 size_t limit, bool* cut) const {
    LS_ASSIGN_OR_RETURN(std::vector<TokenId> ids, FromTemplate(doc));
    if (!t.truncate || ids.size() <= limit) return ids;
    LS_ASSIGN_OR_RETURN(std::vector<TokenId> d, tok_.Tokenize(doc, false, false));
    size_t excess = ids.size() - limit;
    for (int attempt = 0; attempt < 8 && ids.size() > limit && excess < d.size(); ++attempt) {
      std::vector<TokenId> kept = d;
      CutTokens(&kept, d.size() - excess, 0, 0, t.side);
      LS_ASSIGN_OR_RETURN(ids, FromTemplate(tok_.Detokenize(kept, false, false)));
      *cut = true;
      if (ids.size() > limit) excess += ids.size() - limit;
    }
    return ids;  // still too long: the query and the template alone do not fit
  }

  const Tokenizer& tok_;
  std::string query_;
  std::optional<std::string> tmpl_;
  std::vector<TokenId> query_ids_;
};

// TEI's score: the raw head output with raw_scores, else a probability (sigmoid of one label, softmax of
// several, the first label's). LM rerankers (Qwen3) already give the probability of "yes".
float TeiScore(const ModelContext& m, const std::vector<float>& v, bool raw) {
  if (raw || m.engine->model().hparams().causal) return v[0];
  if (v.size() == 1) return 1.0f / (1.0f + std::exp(-v[0]));
  const float max = *std::max_element(v.begin(), v.end());
  double den = 0;
  for (float x : v) den += std::exp(static_cast<double>(x - max));
  return static_cast<float>(std::exp(static_cast<double>(v[0] - max)) / den);
}

void Rerank(ServerState& st, const httplib::Request& req, httplib::Response& res, bool* tei) {
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  *tei = body->contains("texts");
  Result<RerankRequest> parsed = ParseRerank(*body, st);
  if (!parsed.ok()) return SetStatusError(res, parsed.status());
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) return SetStatusError(res, model.status());
  const ModelContext& m = **model;
  // These refusals keep llama-server's shape (and words) whatever shape the body has.
  if (m.engine->config().pooling != PoolingType::kRank) {
    *tei = false;
    return SetError(res, 501, "This server does not support reranking. Start it with `--reranking`");
  }
  if (m.engine->n_cls_out() <= 0) {
    *tei = false;
    return SetError(res, 501, "the model has no classifier head (cls.output), so it cannot rerank");
  }
  RerankRequest& r = *parsed;
  if (r.documents.empty()) {
    if (r.tei) return SetTeiError(res, 400, "`texts` cannot be empty", "Empty");
    return SetError(res, 400, "documents: must be a non-empty list of strings", "documents");
  }
  if (!CheckInputCount(st, r.documents.size(), r.field, res)) return;

  PairBuilder pairs(m, r.query);
  if (Status s = pairs.Init(); !s.ok()) return SetError(res, 400, "query: tokenizing failed: " + s.message());
  const size_t limit = static_cast<size_t>(MaxInputTokens(m));
  std::vector<std::vector<TokenId>> prompts;
  size_t n_truncated = 0;
  int64_t n_tokens = 0;
  for (size_t i = 0; i < r.documents.size(); ++i) {
    const std::string name = r.field + "[" + std::to_string(i) + "]";
    bool cut = false;
    Result<std::vector<TokenId>> ids = pairs.Build(r.documents[i], r.truncate, limit, &cut);
    if (!ids.ok())
      return SetError(res, 400, name + ": tokenizing failed: " + ids.status().message(), r.field);
    if (ids->size() > limit) {
      return SetInputTooLong(m, res, name, static_cast<int64_t>(ids->size()),
                             r.truncate.truncate ? "the query alone (with the pair's special tokens)"
                                                 : "the query and document pair");
    }
    n_truncated += cut ? 1 : 0;
    n_tokens += static_cast<int64_t>(ids->size());
    prompts.push_back(std::move(*ids));
  }
  if (!CheckTokenCount(st, n_tokens, r.field, res)) return;
  std::vector<EmbedResult> results;
  if (!RunEmbeddings(st, m, req, res, std::move(prompts), /*unpooled=*/false, r.field, &results)) return;

  struct Ranked {
    size_t index;
    float score;
  };
  std::vector<Ranked> ranked;
  int64_t n_evaluated = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const std::vector<float>& v = results[i].values;
    ranked.push_back({i, r.tei ? TeiScore(m, v, r.raw_scores) : v[0]});
    n_evaluated += results[i].n_prompt;
  }
  auto key = [](float s) { return std::isnan(s) ? -std::numeric_limits<float>::infinity() : s; };
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const Ranked& a, const Ranked& b) { return key(a.score) > key(b.score); });
  if (ranked.size() > r.top_n) ranked.resize(r.top_n);
  ReportTruncation(m, res, "rerank", n_truncated, r.documents.size());

  nlohmann::json list = nlohmann::json::array();
  for (const Ranked& x : ranked) {
    nlohmann::json item = {{"index", x.index}, {r.tei ? "score" : "relevance_score", x.score}};
    if (r.return_documents && r.tei) item["text"] = r.documents[x.index];
    if (r.return_documents && !r.tei) item["document"] = {{"text", r.documents[x.index]}};
    list.push_back(std::move(item));
  }
  if (r.tei) return res.set_content(Dump(list), "application/json; charset=utf-8");
  nlohmann::json usage = {{"prompt_tokens", n_evaluated}, {"total_tokens", n_evaluated}};
  if (r.truncate.truncate) usage["truncated"] = n_truncated;
  const nlohmann::json out = {
      {"model", m.model_id}, {"object", "list"}, {"usage", std::move(usage)}, {"results", std::move(list)}};
  res.set_content(Dump(out), "application/json; charset=utf-8");
}

void HandleRerank(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  bool tei = false;
  Rerank(st, req, res, &tei);
  if (tei) ConvertToTeiError(res);
}

}  // namespace

void RegisterRerankRoutes(ServerState& st) {
  for (const char* path : {"/v1/rerank", "/rerank", "/reranking", "/v1/reranking"}) {
    st.http.Post(path, GuardRoute(st, HandleRerank, false));
  }
}

}  // namespace lazyslot::server
