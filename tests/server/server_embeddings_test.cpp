// POST /v1/embeddings through the real server: inputs as text, token ids, lists of both, llama-server's mixed
// lists; float and base64 encodings; pooled vectors compared with llama.cpp's (reference/<model>.json
// "embed"), L2-normalised; /embeddings as llama-server's native route.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

constexpr char kStories[] = "models/stories260K.gguf";

std::vector<float> Floats(const json& j) { return j.get<std::vector<float>>(); }

std::vector<float> DecodeBase64Floats(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const int v = val(c);
    if (v < 0) continue;  // padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);  // little-endian f32 on x86-64
  return out;
}

double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

double Norm(const std::vector<float>& a) {
  double s = 0;
  for (float x : a) s += double{x} * x;
  return std::sqrt(s);
}

TEST(ServerEmbeddings, PoolingsMatchLlamaCppReference) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_SHARED_FILE("reference/stories260K.json");
  const json ref = LoadJsonFile(SharedPath("reference/stories260K.json"))["embed"];
  for (const std::string pooling : {"mean", "cls", "last"}) {
    SCOPED_TRACE(pooling);
    START_SERVER(srv, {"-m", SharedPath(kStories), "--embeddings", "--pooling", pooling, "-np", "2"});
    const json& r = ref[pooling];
    HttpResult res = srv->Post("/v1/embeddings", {{"input", r["tokens"]}, {"model", "x"}});
    ASSERT_EQ(res.status, 200) << res.body;
    const json j = res.Json();
    EXPECT_EQ(j["object"], "list");
    ASSERT_EQ(j["data"].size(), 1u);
    EXPECT_EQ(j["data"][0]["object"], "embedding");
    EXPECT_EQ(j["data"][0]["index"], 0);
    const std::vector<float> got = Floats(j["data"][0]["embedding"]);
    const std::vector<float> want = Floats(r["embedding"]);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_GE(Cosine(got, want), 1 - 1e-5);  // F32 model: reference/README.md tolerance
    EXPECT_NEAR(Norm(got), 1.0, 1e-4);
    EXPECT_EQ(j["usage"]["prompt_tokens"], r["tokens"].size());
    EXPECT_EQ(j["usage"]["total_tokens"], r["tokens"].size());
    EXPECT_EQ(srv->Get("/props").Json()["pooling"], pooling);
  }
}

TEST(ServerEmbeddings, InputFormsAndEncodings) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "--embeddings", "-np", "2", "--max-queue", "2"});
  // Single string, then a batch (more inputs than slots + queue: the route feeds them in a window).
  const json single = srv->Post("/v1/embeddings", {{"input", "The cat sat."}}).Json();
  ASSERT_TRUE(single.contains("data")) << single.dump();
  const std::vector<float> cat = Floats(single["data"][0]["embedding"]);
  EXPECT_NEAR(Norm(cat), 1.0, 1e-4);

  const json inputs = {"Once upon a time", "The cat sat.", "Lily and Tom", "The cat sat.", "a", "b", "c"};
  HttpResult batch = srv->Post("/v1/embeddings", {{"input", inputs}, {"encoding_format", "float"}});
  ASSERT_EQ(batch.status, 200) << batch.body;
  const json b = batch.Json();
  ASSERT_EQ(b["data"].size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(b["data"][i]["index"], i);
  EXPECT_EQ(Floats(b["data"][1]["embedding"]), cat);  // batched == alone
  EXPECT_EQ(Floats(b["data"][3]["embedding"]), cat);
  EXPECT_LT(Cosine(Floats(b["data"][0]["embedding"]), cat), 0.9999);

  // base64: little-endian f32 bytes of the same vectors.
  HttpResult b64 = srv->Post("/v1/embeddings", {{"input", inputs}, {"encoding_format", "base64"}});
  ASSERT_EQ(b64.status, 200) << b64.body;
  const json b64_json = b64.Json();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const json& e = b64_json["data"][i]["embedding"];
    ASSERT_TRUE(e.is_string());
    EXPECT_EQ(DecodeBase64Floats(e.get<std::string>()), Floats(b["data"][i]["embedding"])) << i;
  }

  // Token ids: one list, and a list of lists; the text's tokens give the text's vector.
  const json ids =
      srv->Post("/tokenize", {{"content", "The cat sat."}, {"add_special", true}}).Json()["tokens"];
  EXPECT_EQ(Floats(srv->Post("/v1/embeddings", {{"input", ids}}).Json()["data"][0]["embedding"]), cat);
  const json lists = srv->Post("/v1/embeddings", {{"input", {ids, ids}}}).Json();
  ASSERT_EQ(lists["data"].size(), 2u);
  EXPECT_EQ(Floats(lists["data"][1]["embedding"]), cat);

  // llama-server's mixed lists: ids and strings in one list are one prompt, the strings tokenized in place
  // (BOS only at the start); a list of such lists is several prompts.
  // The string's tokens (no BOS: it is not at the start) in its place: equal to sending those ids.
  const json tail =
      srv->Post("/tokenize", {{"content", "Once upon"}, {"add_special", false}}).Json()["tokens"];
  json mixed = ids, expected = ids;
  mixed.push_back("Once upon");
  for (const json& t : tail) expected.push_back(t);
  const std::vector<float> want =
      Floats(srv->Post("/v1/embeddings", {{"input", expected}}).Json()["data"][0]["embedding"]);
  const json one = srv->Post("/v1/embeddings", {{"input", mixed}}).Json();
  ASSERT_EQ(one["data"].size(), 1u) << one.dump();
  EXPECT_EQ(Floats(one["data"][0]["embedding"]), want);
  EXPECT_LT(Cosine(want, cat), 0.9999);
  const json two = srv->Post("/v1/embeddings", {{"input", {ids, mixed}}}).Json();
  ASSERT_EQ(two["data"].size(), 2u) << two.dump();
  EXPECT_EQ(Floats(two["data"][0]["embedding"]), cat);
  EXPECT_EQ(Floats(two["data"][1]["embedding"]), want);

  // Errors name the field.
  for (const json& body : {json{{"input", json::array()}}, json{{"input", 5}}, json{{"model", "x"}},
                           json{{"input", "x"}, {"encoding_format", "hex"}}, json{{"input", {"a", -3}}},
                           json{{"input", {"a", json::array()}}}}) {
    HttpResult r = srv->Post("/v1/embeddings", body);
    EXPECT_EQ(r.status, 400) << body.dump() << " -> " << r.body;
    const std::string msg = r.Json()["error"]["message"];
    EXPECT_TRUE(msg.rfind("input", 0) == 0 || msg.rfind("encoding_format", 0) == 0) << msg;
  }
  HttpResult empty = srv->Post("/v1/embeddings", {{"input", ""}});
  EXPECT_EQ(empty.status, 200) << empty.body;  // BOS alone is a valid sequence for this model
}

// /v1/embeddings cannot return per-token rows; /embeddings and /embedding are llama-server's native route,
// which does: one unnormalised row per token.
TEST(ServerEmbeddings, PoolingNoneIsRefusedByTheOpenAiRouteAndServedByTheNativeOnes) {
  REQUIRE_SHARED_FILE(kStories);
  START_SERVER(srv, {"-m", SharedPath(kStories), "--embeddings", "--pooling", "none", "-c", "64"});
  HttpResult r = srv->Post("/v1/embeddings", {{"input", "x"}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("--pooling"), std::string::npos) << r.body;
  const size_t n_tokens = srv->Post("/tokenize", {{"content", "hello hello hello"}, {"add_special", true}})
                              .Json()["tokens"]
                              .size();
  for (const char* path : {"/embeddings", "/embedding"}) {
    const HttpResult native = srv->Post(path, {{"input", "hello hello hello"}});
    ASSERT_EQ(native.status, 200) << path << ": " << native.body;
    const json rows = native.Json()[0]["embedding"];
    EXPECT_EQ(rows.size(), n_tokens) << path;
    double sq = 0;
    for (float x : Floats(rows[0])) sq += double(x) * x;
    EXPECT_GT(std::fabs(sq - 1.0), 1e-3) << path << ": rows are not normalised";
  }
  // An input over the context: llama-server's "too large" in the message.
  const HttpResult too_long_native = srv->Post("/embeddings", {{"input", std::string(2000, 'a')}});
  EXPECT_EQ(too_long_native.status, 400) << too_long_native.body;
  EXPECT_NE(too_long_native.body.find("too large"), std::string::npos) << too_long_native.body;
}

}  // namespace
}  // namespace lazyslot::testing
