// Reranking through the real server (curl): Jina/Cohere's /v1/rerank and its aliases, TEI's /rerank shape,
// scores compared with llama-server's (reference/bert-rerank-tiny-f32.json "rank", which also checks how a
// pair is built), sorting, top_n, returned documents, truncation, limits and every refusal; the 501 of a
// server without --rerank.
#include <gtest/gtest.h>

#include <cmath>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kReranker[] = "models/bert-rerank-tiny-f32.gguf";
constexpr char kRankRef[] = "reference/bert-rerank-tiny-f32.json";
constexpr char kQwen[] = "models/qwen3-tiny-f32.gguf";
constexpr double kScoreTol = 1e-3;  // reference/README.md, F32 rank scores

std::string Words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += i % 2 ? "river " : "mountain ";
  return s;
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

void ExpectError(const HttpResult& r, int status, const std::string& needle) {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = r.Json();
  ASSERT_TRUE(j.contains("error")) << r.body;
  const std::string msg =
      j["error"].is_object() ? j["error"].value("message", "") : j["error"].get<std::string>();
  EXPECT_NE(msg.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << r.body;
}

// TEI's error shape: {"error": "...", "error_type": "..."}.
void ExpectTeiError(const HttpResult& r, int status, const std::string& type, const std::string& needle) {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = r.Json();
  ASSERT_TRUE(j.contains("error") && j["error"].is_string()) << r.body;
  EXPECT_EQ(j.value("error_type", ""), type) << r.body;
  EXPECT_NE(j["error"].get<std::string>().find(needle), std::string::npos) << r.body;
}

TEST(ServerRerank, ScoresMatchLlamaServer) {
  REQUIRE_SHARED_FILE(kReranker);
  REQUIRE_SHARED_FILE(kRankRef);
  const json ref = LoadJsonFile(SharedPath(kRankRef))["rank"];
  ASSERT_GE(ref.size(), 3u);
  START_SERVER(srv, {"-m", SharedPath(kReranker), "--rerank", "-np", "2"});
  EXPECT_EQ(srv->Get("/props").Json()["reranking"], true);
  EXPECT_EQ(srv->Get("/props").Json()["pooling"], "rank");
  for (const json& e : ref) {
    SCOPED_TRACE(e["document"].get<std::string>());
    HttpResult r = srv->Post("/v1/rerank", {{"query", e["query"]}, {"documents", {e["document"]}}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = r.Json();
    EXPECT_EQ(j["object"], "list");
    ASSERT_EQ(j["results"].size(), 1u);
    EXPECT_EQ(j["results"][0]["index"], 0);
    EXPECT_NEAR(j["results"][0]["relevance_score"].get<double>(), e["score"].get<double>(), kScoreTol);
    EXPECT_FALSE(j["results"][0].contains("document"));
    // The pair's tokens: [CLS] query [SEP] document [SEP], as llama-server builds it.
    EXPECT_EQ(j["usage"]["prompt_tokens"], e["tokens"].size());
    EXPECT_EQ(j["usage"]["total_tokens"], e["tokens"].size());
  }

  // Several documents: sorted by score, highest first, each keeping its index; usage counts every pair.
  const json& paris = ref[0];
  const json& cafe = ref[2];
  ASSERT_EQ(paris["query"], cafe["query"]);
  ASSERT_GT(paris["score"].get<double>(), cafe["score"].get<double>());
  const json docs = {cafe["document"], paris["document"]};
  const size_t n_tokens = paris["tokens"].size() + cafe["tokens"].size();
  for (const char* path : {"/v1/rerank", "/rerank", "/reranking", "/v1/reranking"}) {
    SCOPED_TRACE(path);
    HttpResult r = srv->Post(path, {{"query", paris["query"]}, {"documents", docs}, {"model", "m"}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = r.Json();
    ASSERT_EQ(j["results"].size(), 2u);
    EXPECT_EQ(j["results"][0]["index"], 1);
    EXPECT_EQ(j["results"][1]["index"], 0);
    EXPECT_NEAR(j["results"][0]["relevance_score"].get<double>(), paris["score"].get<double>(), kScoreTol);
    EXPECT_NEAR(j["results"][1]["relevance_score"].get<double>(), cafe["score"].get<double>(), kScoreTol);
    EXPECT_EQ(j["usage"]["prompt_tokens"], n_tokens);
  }

  // top_n keeps the best; larger than the list: all. return_documents and {"text"} documents (Cohere, Jina).
  json j = srv->Post("/v1/rerank", {{"query", paris["query"]}, {"documents", docs}, {"top_n", 1}}).Json();
  ASSERT_EQ(j["results"].size(), 1u) << j.dump();
  EXPECT_EQ(j["results"][0]["index"], 1);
  EXPECT_EQ(j["usage"]["prompt_tokens"], n_tokens);  // every pair was scored
  j = srv->Post("/v1/rerank", {{"query", paris["query"]}, {"documents", docs}, {"top_n", 10}}).Json();
  EXPECT_EQ(j["results"].size(), 2u) << j.dump();
  j = srv->Post("/v1/rerank", {{"query", paris["query"]},
                               {"documents", {{{"text", cafe["document"]}}, {{"text", paris["document"]}}}},
                               {"return_documents", true}})
          .Json();
  ASSERT_EQ(j["results"].size(), 2u) << j.dump();
  EXPECT_EQ(j["results"][0]["document"]["text"], paris["document"]);
  EXPECT_EQ(j["results"][1]["document"]["text"], cafe["document"]);

  // TEI's shape on /rerank (the body has `texts`): a bare list, the score through a sigmoid unless
  // raw_scores; return_text.
  HttpResult tei = srv->Post("/rerank", {{"query", paris["query"]}, {"texts", docs}, {"return_text", true}});
  ASSERT_EQ(tei.status, 200) << tei.body;
  const json t = tei.Json();
  ASSERT_TRUE(t.is_array() && t.size() == 2u) << tei.body;
  EXPECT_EQ(t[0]["index"], 1);
  EXPECT_EQ(t[0]["text"], paris["document"]);
  EXPECT_NEAR(t[0]["score"].get<double>(), Sigmoid(paris["score"].get<double>()), kScoreTol);
  EXPECT_NEAR(t[1]["score"].get<double>(), Sigmoid(cafe["score"].get<double>()), kScoreTol);
  const json raw =
      srv->Post("/rerank", {{"query", paris["query"]}, {"texts", docs}, {"raw_scores", true}}).Json();
  ASSERT_TRUE(raw.is_array() && raw.size() == 2u) << raw.dump();
  EXPECT_FALSE(raw[0].contains("text"));
  EXPECT_NEAR(raw[0]["score"].get<double>(), paris["score"].get<double>(), kScoreTol);
  EXPECT_NEAR(raw[1]["score"].get<double>(), cafe["score"].get<double>(), kScoreTol);
}

// A copy of the GGUF `src` with the string `key` = `value` added; "" when it cannot be written.
std::string CopyWithString(const std::string& src, const std::string& key, const std::string& value) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::Open(src);
  if (!f.ok()) return "";
  gguf::Writer w;
  for (const gguf::KeyValue& kv : (*f)->metadata()) {
    if (!w.CopyKv(kv.value, kv.key).ok()) return "";
  }
  w.SetString(key, value);
  for (const gguf::TensorInfo& t : (*f)->tensors()) {
    const uint8_t* p = (*f)->TensorData(t);
    if (!w.AddTensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                     std::vector<uint8_t>(p, p + t.nbytes))
             .ok()) {
      return "";
    }
  }
  const std::string path = NewScratchFile("rerank-template") + ".gguf";
  return w.Write(path).ok() ? path : "";
}

// With a `tokenizer.chat_template.rerank`, the pair is that text with {query} and {document} put in and
// control-token text parsed (llama-server's format_prompt_rerank). A template that swaps the two texts
// scores (q, d) as the plain pair scores (d, q).
TEST(ServerRerank, RerankTemplateIsUsed) {
  REQUIRE_SHARED_FILE(kReranker);
  REQUIRE_SHARED_FILE(kRankRef);
  const json e = LoadJsonFile(SharedPath(kRankRef))["rank"][0];
  const std::string swapped = CopyWithString(SharedPath(kReranker), "tokenizer.chat_template.rerank",
                                             "[CLS]{document}[SEP]{query}[SEP]");
  ASSERT_FALSE(swapped.empty());
  START_SERVER(plain, {"-m", SharedPath(kReranker), "--rerank"});
  START_SERVER(tmpl, {"-m", swapped, "--rerank"});
  const json want = plain->Post("/v1/rerank", {{"query", e["document"]}, {"documents", {e["query"]}}}).Json();
  const json got = tmpl->Post("/v1/rerank", {{"query", e["query"]}, {"documents", {e["document"]}}}).Json();
  ASSERT_TRUE(want.contains("results") && got.contains("results")) << want.dump() << got.dump();
  EXPECT_EQ(got["usage"]["prompt_tokens"], e["tokens"].size());
  EXPECT_EQ(got["usage"], want["usage"]);
  EXPECT_NEAR(got["results"][0]["relevance_score"].get<double>(),
              want["results"][0]["relevance_score"].get<double>(),
              1e-4);  // two processes: the F32 kernels are chosen by timing at load (avx2 or avx512)
  EXPECT_GT(std::fabs(got["results"][0]["relevance_score"].get<double>() - e["score"].get<double>()), 1e-4);
  // Truncation cuts the document only: the pair fills the slot.
  START_SERVER(small, {"-m", swapped, "--rerank", "-c", "40", "-np", "1"});
  HttpResult r =
      small->Post("/v1/rerank", {{"query", e["query"]}, {"documents", {Words(80)}}, {"truncate", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_LE(r.Json()["usage"]["prompt_tokens"].get<int>(), 40);
  EXPECT_GE(r.Json()["usage"]["prompt_tokens"].get<int>(), 38);
  EXPECT_EQ(r.Json()["usage"]["truncated"], 1);
}

TEST(ServerRerank, BadRequestsAndTruncation) {
  REQUIRE_SHARED_FILE(kReranker);
  START_SERVER(srv, {"-m", SharedPath(kReranker), "--rerank", "-c", "64", "-np", "1"});
  const std::string q = "what is the capital of france?";
  ExpectError(srv->Post("/v1/rerank", {{"query", q}, {"documents", json::array()}}), 400, "documents");
  ExpectError(srv->Post("/v1/rerank", {{"query", q}}), 400, "documents: is required");
  ExpectError(srv->Post("/v1/rerank", {{"documents", {"a"}}}), 400, "query: is required");
  ExpectError(srv->Post("/v1/rerank", {{"query", 3}, {"documents", {"a"}}}), 400, "query: expected a string");
  ExpectError(srv->Post("/v1/rerank", {{"query", q}, {"documents", {1, 2}}}), 400,
              "documents[0]: expected a string");
  ExpectError(srv->Post("/v1/rerank", {{"query", q}, {"documents", {{{"txt", "a"}}}}}), 400,
              "documents[0].txt");
  for (int top_n : {0, -1}) {
    ExpectError(srv->Post("/v1/rerank", {{"query", q}, {"documents", {"a"}}, {"top_n", top_n}}), 400,
                "top_n: must be between 1 and");
  }
  ExpectError(srv->Post("/v1/rerank", {{"query", q}, {"documents", {"a"}}, {"top_k", 1}}), 400,
              "top_k: unknown field (did you mean 'top_n'?)");
  ExpectError(srv->Post("/v1/rerank", {{"query", q}, {"documents", {"a"}}, {"raw_scores", true}}), 400,
              "raw_scores: unknown field");
  // TEI's shape and codes for a TEI body.
  ExpectTeiError(srv->Post("/rerank", {{"query", q}, {"texts", json::array()}}), 400, "Empty",
                 "`texts` cannot be empty");
  ExpectTeiError(srv->Post("/rerank", {{"query", q}, {"texts", {"a"}}, {"top_k", 1}}), 422, "Validation",
                 "top_k");
  ExpectTeiError(srv->Post("/rerank", {{"query", q}, {"texts", {"a"}}, {"documents", {"a"}}}), 422,
                 "Validation", "not both");

  // A pair longer than the slot (64): a 400 naming the document and both figures, unless truncated.
  const json body = {{"query", q}, {"documents", {"Paris is nice.", Words(80)}}};
  HttpResult r = srv->Post("/v1/rerank", body);
  ExpectError(r, 400, "documents[1]: the request exceeds the available context size");
  EXPECT_EQ(r.Json()["error"]["type"], "exceed_context_size_error") << r.body;
  EXPECT_EQ(r.Json()["error"]["n_ctx"], 64) << r.body;
  EXPECT_GT(r.Json()["error"]["n_prompt_tokens"].get<int>(), 64) << r.body;
  ExpectTeiError(srv->Post("/rerank", {{"query", q}, {"texts", {Words(80)}}}), 422, "Validation",
                 "texts[0]: the request exceeds the available context size");
  json cut = body;
  cut["truncate"] = true;
  r = srv->Post("/v1/rerank", cut);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["usage"]["truncated"], 1) << r.body;
  EXPECT_EQ(r.Header("X-Truncated-Inputs"), "1");
  // Both pairs scored; the cut one fills the slot exactly.
  const json short_only = srv->Post("/v1/rerank", {{"query", q}, {"documents", {"Paris is nice."}}}).Json();
  EXPECT_EQ(r.Json()["usage"]["prompt_tokens"].get<int>(),
            short_only["usage"]["prompt_tokens"].get<int>() + 64);
  cut["truncation_direction"] = "Left";
  EXPECT_EQ(srv->Post("/v1/rerank", cut).status, 200);
  cut["truncation_direction"] = "Up";
  ExpectError(srv->Post("/v1/rerank", cut), 400, "truncation_direction");
  // Embedding routes refuse on a reranking server.
  ExpectError(srv->Post("/v1/embeddings", {{"input", "x"}}), 501, "--rerank");
  ExpectError(srv->Post("/embedding", {{"content", "x"}}), 501, "--rerank");
  ExpectTeiError(srv->Post("/embed", {{"inputs", "x"}}), 424, "Backend", "--rerank");
}

TEST(ServerRerank, AutoTruncateAndLimits) {
  REQUIRE_SHARED_FILE(kReranker);
  START_SERVER(srv, {"-m", SharedPath(kReranker), "--reranking", "-c", "64", "-np", "1", "--auto-truncate",
                     "--max-client-batch-size", "2", "--max-batch-tokens", "100"});
  const std::string q = "what is the capital of france?";
  HttpResult r = srv->Post("/rerank", {{"query", q}, {"texts", {Words(80)}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Header("X-Truncated-Inputs"), "1");
  // A request's truncate: false still refuses.
  ExpectError(srv->Post("/v1/rerank", {{"query", q}, {"documents", {Words(80)}}, {"truncate", false}}), 400,
              "documents[0]");
  // 413s name the limit and the request's figure, in both shapes.
  ExpectError(srv->Post("/v1/rerank", {{"query", q}, {"documents", {"a", "b", "c"}}}), 413,
              "3 inputs in one request, but this server takes at most 2 (--max-client-batch-size)");
  ExpectTeiError(srv->Post("/rerank", {{"query", q}, {"texts", {"a", "b", "c"}}}), 413, "Validation",
                 "--max-client-batch-size");
  r = srv->Post("/v1/rerank", {{"query", q}, {"documents", {Words(80), Words(80)}}});
  ExpectError(r, 413, "the request has 128 tokens in all, but this server takes at most 100 per request");
  EXPECT_EQ(r.Json()["error"]["type"], "invalid_request_error") << r.body;
}

TEST(ServerRerank, NotARerankingServer) {
  REQUIRE_SHARED_FILE(kQwen);
  for (const std::vector<std::string>& flags : {std::vector<std::string>{}, {"--embeddings"}}) {
    std::vector<std::string> args = {"-m", SharedPath(kQwen)};
    args.insert(args.end(), flags.begin(), flags.end());
    START_SERVER(srv, args);
    EXPECT_EQ(srv->Get("/props").Json()["reranking"], false);
    for (const char* path : {"/v1/rerank", "/rerank", "/reranking", "/v1/reranking"}) {
      for (const json& body :
           {json{{"query", "q"}, {"documents", {"a"}}}, json{{"query", "q"}, {"texts", {"a"}}}}) {
        HttpResult r = srv->Post(path, body);
        ExpectError(r, 501, "This server does not support reranking. Start it with `--reranking`");
        EXPECT_EQ(r.Json()["error"]["type"], "not_supported_error") << r.body;
      }
    }
  }
}

TEST(ServerRerank, FlagConflicts) {
  const std::string bin = LAZYSLOT_BINARY;
  // --rerank is --pooling rank: any other pooling contradicts it.
  EXPECT_NE(std::system((bin + " serve --rerank --pooling mean >/dev/null 2>&1").c_str()), 0);
  std::string help;
  RunShell(bin + " serve --help", &help);
  for (const char* flag :
       {"--rerank", "--auto-truncate", "--max-client-batch-size", "--max-batch-tokens", "--embd-normalize"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace lazyslot::testing
