// The embedding routes beyond OpenAI's basics, through the real server (curl): TEI's /embed and /embed_all,
// llama-server's native /embedding (embd_normalize, --pooling none rows), /v1/embeddings' dimensions,
// normalize and truncate, truncation that keeps the special tokens, the request limits (413) and the
// refusals in each API's error shape. Vectors are compared with llama.cpp's (reference/<model>.json "embed").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kQwen[] = "models/qwen3-tiny-f32.gguf";
constexpr char kBert[] = "models/bert-tiny-f32.gguf";

using Vec = std::vector<float>;

Vec Floats(const json& j) { return j.get<Vec>(); }

double Dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) s += double{a[i]} * b[i];
  return s;
}
double Norm(const Vec& a) { return std::sqrt(Dot(a, a)); }
double Cosine(const Vec& a, const Vec& b) { return Dot(a, b) / (Norm(a) * Norm(b)); }

// The first `n` components, L2-normalised (what `dimensions` gives).
Vec Shortened(const Vec& v, size_t n) {
  Vec out(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
  const double norm = Norm(out);
  for (float& x : out) x = static_cast<float>(x / norm);
  return out;
}

// Pools per-token rows as the server's --pooling would.
Vec Pool(const json& rows, const std::string& pooling) {
  if (pooling == "cls") return Floats(rows.front());
  if (pooling == "last") return Floats(rows.back());
  Vec acc(rows[0].size(), 0.0f);
  for (const json& r : rows) {
    const Vec v = Floats(r);
    for (size_t i = 0; i < v.size(); ++i) acc[i] += v[i];
  }
  return acc;
}

std::string Words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += i % 2 ? "river " : "mountain ";
  return s;
}

void ExpectError(const HttpResult& r, int status, const std::string& needle) {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = r.Json();
  ASSERT_TRUE(j.contains("error") && j["error"].is_object()) << r.body;
  EXPECT_NE(j["error"].value("message", "").find(needle), std::string::npos)
      << "wanted '" << needle << "' in " << r.body;
}

void ExpectTeiError(const HttpResult& r, int status, const std::string& type, const std::string& needle) {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = r.Json();
  ASSERT_TRUE(j.contains("error") && j["error"].is_string()) << r.body;
  EXPECT_EQ(j.value("error_type", ""), type) << r.body;
  EXPECT_NE(j["error"].get<std::string>().find(needle), std::string::npos)
      << "wanted '" << needle << "' in " << r.body;
}

// The reference's tolerance on 1 - cosine: reference/README.md, 1e-5 for F32 weights, 2e-3 quantized.
double Tolerance(const std::string& model) { return model.find("f32") != std::string::npos ? 1e-5 : 2e-3; }

// Every pooled route against the reference, for one model and pooling.
void CheckAgainstReference(const std::string& model, const std::string& pooling) {
  SCOPED_TRACE(model + " --pooling " + pooling);
  const double tol = Tolerance(model);
  const std::string ref_file = "reference/" + model + ".json";
  REQUIRE_SHARED_FILE("models/" + model + ".gguf");
  REQUIRE_SHARED_FILE(ref_file);
  const json ref = LoadJsonFile(SharedPath(ref_file))["embed"][pooling];
  const json tokens = ref["tokens"];
  const Vec want = Floats(ref["embedding"]);  // L2-normalised by refgen
  START_SERVER(srv, {"-m", SharedPath("models/" + model + ".gguf"), "--embeddings", "--pooling", pooling});

  // TEI /embed: a list of one token list -> [[floats]], L2-normalised by default.
  HttpResult r = srv->Post("/embed", {{"inputs", {tokens}}});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.Json();
  ASSERT_TRUE(j.is_array() && j.size() == 1u) << r.body;
  const Vec got = Floats(j[0]);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_GE(Cosine(got, want), 1 - tol);
  EXPECT_NEAR(Norm(got), 1.0, 1e-5);
  EXPECT_EQ(r.Header("x-compute-tokens"), std::to_string(tokens.size()));
  // normalize: false keeps the pooled vector as the model gives it: the same direction.
  const Vec raw = Floats(srv->Post("/embed", {{"inputs", tokens}, {"normalize", false}}).Json()[0]);
  EXPECT_GE(Cosine(raw, want), 1 - tol);
  // dimensions: the first N components, renormalised (TEI, OpenAI's text-embedding-3 semantics).
  const size_t n = want.size() / 4;
  const Vec shortened = Shortened(want, n);
  const Vec tei_short = Floats(srv->Post("/embed", {{"inputs", tokens}, {"dimensions", n}}).Json()[0]);
  ASSERT_EQ(tei_short.size(), n);
  EXPECT_GE(Cosine(tei_short, shortened), 1 - tol);
  EXPECT_NEAR(Norm(tei_short), 1.0, 1e-5);
  j = srv->Post("/v1/embeddings", {{"input", tokens}, {"dimensions", n}}).Json();
  ASSERT_TRUE(j.contains("data")) << j.dump();
  EXPECT_EQ(Floats(j["data"][0]["embedding"]), tei_short);

  // llama-server's /embedding: [{"index", "embedding": [[...]]}], embd_normalize as common_embd_normalize.
  r = srv->Post("/embedding", {{"content", tokens}});
  ASSERT_EQ(r.status, 200) << r.body;
  j = r.Json();
  ASSERT_TRUE(j.is_array() && j.size() == 1u) << r.body;
  EXPECT_EQ(j[0]["index"], 0);
  ASSERT_EQ(j[0]["embedding"].size(), 1u);
  EXPECT_GE(Cosine(Floats(j[0]["embedding"][0]), want), 1 - tol);
  EXPECT_NEAR(Norm(Floats(j[0]["embedding"][0])), 1.0, 1e-5);
  auto native = [&](int norm) {
    return Floats(
        srv->Post("/embedding", {{"content", tokens}, {"embd_normalize", norm}}).Json()[0]["embedding"][0]);
  };
  const Vec none = native(-1), maxabs = native(0), taxicab = native(1), p3 = native(3);
  EXPECT_GE(Cosine(none, want), 1 - tol);
  double max = 0, sum = 0, p3sum = 0;
  for (float x : maxabs) max = std::max(max, std::fabs(double{x}));
  for (float x : taxicab) sum += std::fabs(double{x});
  for (float x : p3) p3sum += std::pow(std::fabs(double{x}), 3);
  EXPECT_NEAR(max, 32760.0, 0.01);
  EXPECT_NEAR(sum, 1.0, 1e-4);
  EXPECT_NEAR(p3sum, 1.0, 1e-4);
  // /v1/embeddings takes the same options.
  j = srv->Post("/v1/embeddings", {{"input", tokens}, {"embd_normalize", 1}, {"encoding_format", "float"}})
          .Json();
  EXPECT_EQ(Floats(j["data"][0]["embedding"]), taxicab);
  j = srv->Post("/v1/embeddings", {{"input", tokens}, {"normalize", false}}).Json();
  EXPECT_EQ(Floats(j["data"][0]["embedding"]), none);

  // TEI /embed_all: every token's hidden state, not normalised; pooling them gives the reference.
  r = srv->Post("/embed_all", {{"inputs", {tokens, tokens}}});
  ASSERT_EQ(r.status, 200) << r.body;
  j = r.Json();
  ASSERT_TRUE(j.is_array() && j.size() == 2u) << r.body;
  ASSERT_EQ(j[0].size(), tokens.size()) << r.body.substr(0, 300);
  ASSERT_EQ(j[0][0].size(), want.size());
  EXPECT_GE(Cosine(Pool(j[0], pooling), want), 1 - tol);
  EXPECT_EQ(j[0], j[1]);
}

TEST(ServerTei, Qwen3PoolingsMatchReference) {
  for (const char* pooling : {"mean", "last", "cls"}) CheckAgainstReference("qwen3-tiny-f32", pooling);
}

TEST(ServerTei, BertPoolingsMatchReference) {
  for (const char* pooling : {"mean", "cls"}) CheckAgainstReference("bert-tiny-f32", pooling);
}

TEST(ServerTei, NomicBertPoolingsMatchReference) {
  for (const char* model : {"nomic-bert-tiny-f32", "nomic-bert-tiny-q8_0"}) {
    for (const char* pooling : {"mean", "cls"}) CheckAgainstReference(model, pooling);
  }
}

// Two sequences in one request, which the server packs into its encoder passes together, each match
// llama.cpp's embedding of them in one batch (reference "embed_batch"), on the OpenAI and TEI routes.
TEST(ServerTei, NomicBertBatchMatchesReference) {
  for (const char* model : {"nomic-bert-tiny-f32", "nomic-bert-tiny-q8_0"}) {
    const std::string ref_file = std::string("reference/") + model + ".json";
    REQUIRE_SHARED_FILE(std::string("models/") + model + ".gguf");
    REQUIRE_SHARED_FILE(ref_file);
    const double tol = Tolerance(model);
    for (const char* pooling : {"mean", "cls"}) {
      SCOPED_TRACE(std::string(model) + " --pooling " + pooling);
      const json ref = LoadJsonFile(SharedPath(ref_file))["embed_batch"][pooling];
      const json inputs = {ref["seq0"]["tokens"], ref["seq1"]["tokens"]};
      START_SERVER(srv, {"-m", SharedPath(std::string("models/") + model + ".gguf"), "--embeddings",
                         "--pooling", pooling});
      HttpResult r = srv->Post("/v1/embeddings", {{"input", inputs}});
      ASSERT_EQ(r.status, 200) << r.body;
      json j = r.Json();
      ASSERT_EQ(j["data"].size(), 2u) << r.body.substr(0, 300);
      EXPECT_EQ(j["usage"]["prompt_tokens"], inputs[0].size() + inputs[1].size());
      for (int s = 0; s < 2; ++s) {
        const Vec want = Floats(ref[s == 0 ? "seq0" : "seq1"]["embedding"]);
        EXPECT_EQ(j["data"][s]["index"], s);
        EXPECT_GE(Cosine(Floats(j["data"][s]["embedding"]), want), 1 - tol) << "seq" << s;
      }
      r = srv->Post("/embed", {{"inputs", inputs}});
      ASSERT_EQ(r.status, 200) << r.body;
      j = r.Json();
      ASSERT_EQ(j.size(), 2u);
      EXPECT_GE(Cosine(Floats(j[1]), Floats(ref["seq1"]["embedding"])), 1 - tol);
    }
  }
}

// --pooling none: /embedding answers every token's row (not normalised), /v1/embeddings and /embed refuse.
TEST(ServerTei, PoolingNoneRows) {
  REQUIRE_SHARED_FILE(kQwen);
  REQUIRE_SHARED_FILE("reference/qwen3-tiny-f32.json");
  const json ref = LoadJsonFile(SharedPath("reference/qwen3-tiny-f32.json"))["embed"]["mean"];
  START_SERVER(srv, {"-m", SharedPath(kQwen), "--embeddings", "--pooling", "none"});
  HttpResult r = srv->Post("/embedding", {{"content", ref["tokens"]}, {"embd_normalize", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json rows = r.Json()[0]["embedding"];
  ASSERT_EQ(rows.size(), ref["tokens"].size()) << r.body.substr(0, 300);
  EXPECT_GE(Cosine(Pool(rows, "mean"), Floats(ref["embedding"])), 1 - 1e-5);
  ExpectError(srv->Post("/v1/embeddings", {{"input", "x"}}), 400, "--pooling none");
  ExpectTeiError(srv->Post("/embed", {{"inputs", "x"}}), 422, "Validation", "/embed_all");
  EXPECT_EQ(srv->Post("/embed_all", {{"inputs", "x"}}).status, 200);
}

// Truncation cuts to the slot and keeps the special tokens the tokenizer added (TEI's rule); token ids given
// by the client are cut as they are.
void CheckTruncation(const char* model) {
  SCOPED_TRACE(model);
  REQUIRE_SHARED_FILE(model);
  const int kSlot = 32;
  START_SERVER(srv, {"-m", SharedPath(model), "--embeddings", "-c", std::to_string(kSlot), "-np", "1"});
  const std::string text = Words(60);
  const json with = srv->Post("/tokenize", {{"content", text}, {"add_special", true}}).Json()["tokens"];
  const json without = srv->Post("/tokenize", {{"content", text}, {"add_special", false}}).Json()["tokens"];
  ASSERT_GT(with.size(), static_cast<size_t>(kSlot));
  const size_t head = with.size() > without.size() && with[0] != without[0] ? 1 : 0;
  const size_t tail = with.size() - without.size() - head;
  std::vector<int> ids = with.get<std::vector<int>>();
  const size_t keep = kSlot - head - tail;
  std::vector<int> right(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(head + keep));
  right.insert(right.end(), ids.end() - static_cast<std::ptrdiff_t>(tail), ids.end());
  std::vector<int> left(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(head));
  left.insert(left.end(), ids.end() - static_cast<std::ptrdiff_t>(tail + keep), ids.end());

  // Refused without truncate, in each API's shape, with both figures.
  HttpResult r = srv->Post("/v1/embeddings", {{"input", text}});
  ExpectError(r, 400, "the input has " + std::to_string(with.size()) + " tokens");
  EXPECT_EQ(r.Json()["error"]["n_ctx"], kSlot);
  ExpectTeiError(srv->Post("/embed", {{"inputs", {"short", text}}}), 422, "Validation",
                 "inputs[1]: the request exceeds the available context size");
  ExpectError(srv->Post("/embedding", {{"content", text}}), 400, "exceeds the available context size");

  const Vec want_right = Floats(srv->Post("/embed", {{"inputs", right}}).Json()[0]);
  const Vec want_left = Floats(srv->Post("/embed", {{"inputs", left}}).Json()[0]);
  r = srv->Post("/embed", {{"inputs", text}, {"truncate", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Floats(r.Json()[0]), want_right);
  EXPECT_EQ(r.Header("X-Truncated-Inputs"), "1");
  EXPECT_EQ(r.Header("x-compute-tokens"), std::to_string(kSlot));
  r = srv->Post("/embed", {{"inputs", text}, {"truncate", true}, {"truncation_direction", "Left"}});
  EXPECT_EQ(Floats(r.Json()[0]), want_left);
  r = srv->Post("/v1/embeddings", {{"input", {"short", text}}, {"truncate", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["usage"]["truncated"], 1);
  EXPECT_EQ(Floats(r.Json()["data"][1]["embedding"]), want_right);
  // Token ids: the first kSlot of them.
  std::vector<int> first(ids.begin(), ids.begin() + kSlot);
  const Vec want_ids = Floats(srv->Post("/embed", {{"inputs", first}}).Json()[0]);
  EXPECT_EQ(Floats(srv->Post("/embed", {{"inputs", ids}, {"truncate", true}}).Json()[0]), want_ids);
  EXPECT_EQ(srv->Post("/embed_all", {{"inputs", text}, {"truncate", true}}).Json()[0].size(),
            static_cast<size_t>(kSlot));
}

TEST(ServerTei, TruncationKeepsSpecialTokensQwen3) { CheckTruncation(kQwen); }
TEST(ServerTei, TruncationKeepsSpecialTokensBert) { CheckTruncation(kBert); }

TEST(ServerTei, BadRequestsAndLimits) {
  REQUIRE_SHARED_FILE(kQwen);
  START_SERVER(srv, {"-m", SharedPath(kQwen), "--embeddings", "--max-client-batch-size", "3",
                     "--max-batch-tokens", "100", "--auto-truncate", "-c", "64", "-np", "1"});
  const int n_embd = srv->Get("/v1/models").Json()["data"][0]["meta"]["n_embd"];
  const json three = {Words(12), Words(12), Words(12)};  // about 50 tokens each: 150 > 100
  // TEI's shape: 400 Empty, 422 Validation, 413 Validation for the limits.
  ExpectTeiError(srv->Post("/embed", {{"inputs", json::array()}}), 400, "Empty", "`inputs` cannot be empty");
  ExpectTeiError(srv->Post("/embed", json::object({{"normalize", true}})), 422, "Validation",
                 "inputs: is required");
  ExpectTeiError(srv->Post("/embed", {{"inputs", "x"}, {"normalise", true}}), 422, "Validation",
                 "normalise: unknown field (did you mean 'normalize'?)");
  ExpectTeiError(srv->Post("/embed", {{"inputs", "x"}, {"prompt_name", "query"}}), 422, "Validation",
                 "prompt_name: not supported");
  for (int d : {0, -3, n_embd + 1}) {
    ExpectTeiError(srv->Post("/embed", {{"inputs", "x"}, {"dimensions", d}}), 422, "Validation",
                   "dimensions: must be between 1 and " + std::to_string(n_embd));
  }
  ExpectTeiError(srv->Post("/embed", {{"inputs", "x"}, {"truncation_direction", "Up"}}), 422, "Validation",
                 "truncation_direction");
  ExpectTeiError(srv->Post("/embed_all", {{"inputs", "x"}, {"dimensions", 8}}), 422, "Validation",
                 "dimensions: unknown field");
  ExpectTeiError(srv->Post("/embed", {{"inputs", {"a", "b", "c", "d"}}}), 413, "Validation",
                 "4 inputs in one request, but this server takes at most 3 (--max-client-batch-size)");
  ExpectTeiError(srv->Post("/embed_all", {{"inputs", three}}), 413, "Validation",
                 "but this server takes at most 100 per request (--max-batch-tokens)");
  ExpectTeiError(srv->PostRaw("/embed", "{not json"), 422, "Validation", "not valid JSON");

  // OpenAI's shape on /v1/embeddings and /embedding.
  for (int d : {0, -1, n_embd + 1}) {
    ExpectError(srv->Post("/v1/embeddings", {{"input", "x"}, {"dimensions", d}}), 400,
                "dimensions: must be between 1 and " + std::to_string(n_embd));
  }
  ExpectError(srv->Post("/v1/embeddings", {{"input", "x"}, {"normalize", false}, {"embd_normalize", 2}}), 400,
              "either normalize or embd_normalize");
  ExpectError(srv->Post("/v1/embeddings", {{"input", "x"}, {"embd_normalize", -2}}), 400, "embd_normalize");
  ExpectError(srv->Post("/v1/embeddings", {{"input", "x"}, {"truncate", "yes"}}), 400,
              "truncate: expected a boolean");
  HttpResult r = srv->Post("/v1/embeddings", {{"input", {"a", "b", "c", "d"}}});
  ExpectError(r, 413, "input: 4 inputs in one request, but this server takes at most 3");
  EXPECT_EQ(r.Json()["error"]["type"], "invalid_request_error");
  ExpectError(srv->Post("/embedding", {{"content", three}}), 413, "--max-batch-tokens");
  ExpectError(srv->Post("/embedding", {{"content", "x"}, {"dimensions", 3}}), 400,
              "dimensions: unknown field");
  // --auto-truncate: long inputs are cut unless the request says otherwise.
  r = srv->Post("/v1/embeddings", {{"input", Words(100)}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["usage"]["truncated"], 1);
  EXPECT_EQ(r.Json()["usage"]["prompt_tokens"], 64);
  ExpectError(srv->Post("/v1/embeddings", {{"input", Words(100)}, {"truncate", false}}), 400,
              "exceeds the available context size");
  EXPECT_EQ(srv->Get("/props").Json()["max_client_batch_size"], 3);
  EXPECT_EQ(srv->Get("/props").Json()["auto_truncate"], true);
}

TEST(ServerTei, NotAnEmbeddingServer) {
  REQUIRE_SHARED_FILE(kQwen);
  START_SERVER(srv, {"-m", SharedPath(kQwen)});
  // TEI answers 424 for a model that does not embed; OpenAI's and llama-server's routes 501.
  ExpectTeiError(srv->Post("/embed", {{"inputs", "x"}}), 424, "Backend", "--embeddings");
  ExpectTeiError(srv->Post("/embed_all", {{"inputs", "x"}}), 424, "Backend", "--embeddings");
  ExpectError(srv->Post("/embedding", {{"content", "x"}}), 501, "--embeddings");
}

TEST(ServerTei, ManyInputsKeepTheirOrder) {
  REQUIRE_SHARED_FILE(kQwen);
  // 40 inputs with 2 slots and a queue of 8: the route keeps up to 4 in the engine and the results in order.
  START_SERVER(srv, {"-m", SharedPath(kQwen), "--embeddings", "-np", "2", "--max-queue", "8"});
  json inputs = json::array();
  for (int i = 0; i < 40; ++i) inputs.push_back("input number " + std::to_string(i % 5));
  HttpResult r = srv->Post("/embed", {{"inputs", inputs}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json all = r.Json();
  ASSERT_EQ(all.size(), 40u);
  for (int i = 0; i < 5; ++i) {
    const json one = srv->Post("/embed", {{"inputs", inputs[i]}}).Json();
    for (int k = i; k < 40; k += 5) EXPECT_EQ(all[k], one[0]) << k;
  }
}

// Three clients with 24 inputs each, one slot and a queue of 4: the queue fills up, and a request with inputs
// of its own in flight waits for them instead of failing. Only a request that has none in flight may be
// refused (503), and every answer holds each input's own vector.
TEST(ServerTei, ConcurrentRequestsShareTheQueue) {
  REQUIRE_SHARED_FILE(kQwen);
  START_SERVER(srv, {"-m", SharedPath(kQwen), "--embeddings", "-np", "1", "--max-queue", "4"});
  json inputs = json::array();
  for (int i = 0; i < 24; ++i) inputs.push_back("sentence " + std::to_string(i % 3) + " " + Words(i % 3 + 1));
  std::vector<json> want;
  for (int i = 0; i < 3; ++i) want.push_back(srv->Post("/v1/embeddings", {{"input", inputs[i]}}).Json());
  std::vector<HttpResult> results(3);
  std::vector<std::thread> threads;
  for (size_t c = 0; c < results.size(); ++c) {
    threads.emplace_back([&, c] { results[c] = srv->Post("/v1/embeddings", {{"input", inputs}}); });
  }
  for (std::thread& t : threads) t.join();
  int ok = 0;
  for (const HttpResult& r : results) {
    if (r.status == 503) continue;
    ASSERT_EQ(r.status, 200) << r.body;
    ++ok;
    const json data = r.Json()["data"];
    ASSERT_EQ(data.size(), 24u);
    for (int i = 0; i < 24; ++i) EXPECT_EQ(data[i]["embedding"], want[i % 3]["data"][0]["embedding"]) << i;
  }
  EXPECT_GE(ok, 1);
}

}  // namespace
}  // namespace lazyslot::testing
