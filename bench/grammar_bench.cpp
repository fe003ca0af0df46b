// grammar_bench: the cost of constrained sampling on the real Qwen3 vocabulary (151,936 tokens): building the
// VocabIndex, compiling a JSON schema, and per-token FillMask / Allows / Accept over a realistic JSON
// document tokenized by the real tokenizer (positions inside strings, numbers, between keys).
// Usage: grammar_bench [path/to/qwen3-vocab.gguf] [repeats]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

#ifndef LAZYSLOT_SHARED_DIR_DEFAULT
#define LAZYSLOT_SHARED_DIR_DEFAULT "../shared"
#endif

using namespace lazyslot;
using Clock = std::chrono::steady_clock;

namespace {

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void Report(const char* what, std::vector<double> v, const char* unit, double scale) {
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  auto q = [&](double p) { return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))] * scale; };
  std::printf("%-28s n=%-5zu median %8.3f %s  p90 %8.3f %s  max %8.3f %s  mean %8.3f %s\n", what, v.size(),
              q(0.5), unit, q(0.9), unit, v.back() * scale, unit, sum / v.size() * scale, unit);
}

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "id": {"type": "string", "format": "uuid"},
    "name": {"type": "string", "minLength": 1, "maxLength": 80},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "score": {"type": "number"},
    "status": {"enum": ["active", "inactive", "pending"]},
    "email": {"type": "string"},
    "address": {
      "type": "object",
      "properties": {
        "street": {"type": "string"},
        "city": {"type": "string"},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
        "country": {"type": "string"}
      },
      "required": ["street", "city", "country"]
    },
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
    "orders": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "order_id": {"type": "integer"},
          "total": {"type": "number", "minimum": 0},
          "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
          "shipped": {"type": "boolean"}
        },
        "required": ["order_id", "total", "items", "shipped"]
      }
    },
    "notes": {"type": ["string", "null"]}
  },
  "required": ["id", "name", "age", "status", "address", "tags", "orders"],
  "$defs": {
    "item": {
      "type": "object",
      "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}, "price": {"type": "number"}},
      "required": ["sku", "qty", "price"]
    }
  }
})";

const char* kDocument =
    R"({"id": "3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d", "name": "María-José Carreño Quiñones", "age": 42, "score": 87.25, "status": "active", "email": "maria.jose@example.com", "address": {"street": "Calle de Alcalá 123, 4º izquierda", "city": "Madrid", "zip": "28009", "country": "España"}, "tags": ["premium", "early-adopter", "newsletter", "東京", "vip"], "orders": [{"order_id": 10023, "total": 149.99, "items": [{"sku": "BK-2231", "qty": 2, "price": 24.5}, {"sku": "EL-0917", "qty": 1, "price": 100.99}], "shipped": true}, {"order_id": 10057, "total": 18.0, "items": [{"sku": "GR-7781", "qty": 3, "price": 6.0}], "shipped": false}], "notes": "Prefers delivery after 6 pm; \"fragile\" items must be double-boxed.\nCall before arrival."})";

}  // namespace

int main(int argc, char** argv) {
  std::string path =
      argc > 1 ? argv[1] : std::string(LAZYSLOT_SHARED_DIR_DEFAULT) + "/models/qwen3-vocab-tiny-q8_0.gguf";
  int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  auto file = gguf::File::Open(path);
  if (!file.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), file.status().ToString().c_str());
    return 1;
  }
  auto tok = Tokenizer::FromGguf(**file);
  if (!tok.ok()) {
    std::fprintf(stderr, "tokenizer: %s\n", tok.status().ToString().c_str());
    return 1;
  }
  const Tokenizer& t = **tok;
  std::vector<std::string> pieces(t.n_vocab());
  for (int32_t id = 0; id < t.n_vocab(); ++id) pieces[id] = t.IsControl(id) ? "" : t.TokenToPiece(id, false);

  auto t0 = Clock::now();
  grammar::VocabIndex vocab(std::move(pieces));
  auto t1 = Clock::now();
  auto gbnf = grammar::JsonSchemaToGbnf(nlohmann::ordered_json::parse(kSchema));
  auto t2 = Clock::now();
  if (!gbnf.ok()) {
    std::fprintf(stderr, "%s\n", gbnf.status().ToString().c_str());
    return 1;
  }
  auto g = grammar::ParseGbnf(*gbnf);
  auto t3 = Clock::now();
  if (!g.ok()) {
    std::fprintf(stderr, "%s\n", g.status().ToString().c_str());
    return 1;
  }
  std::printf("vocab: %d tokens; VocabIndex build %.1f ms\n", vocab.size(), Ms(t1 - t0));
  std::printf("schema -> GBNF %.2f ms (%zu bytes), ParseGbnf %.2f ms\n", Ms(t2 - t1), gbnf->size(),
              Ms(t3 - t2));

  auto ids = t.Tokenize(kDocument, false, false);
  if (!ids.ok()) return 1;
  std::printf("document: %zu bytes, %zu tokens\n", std::string(kDocument).size(), ids->size());

  std::vector<double> fill, allows, accept;
  std::vector<uint8_t> mask;
  for (int r = 0; r < repeats; ++r) {
    grammar::Matcher m(*g);  // a fresh matcher each repeat: its node cache starts empty, as per request
    for (size_t i = 0; i < ids->size(); ++i) {
      int32_t id = (*ids)[i];
      auto a = Clock::now();
      bool ok = m.Allows(vocab, id);
      auto b = Clock::now();
      m.FillMask(vocab, &mask);
      auto c = Clock::now();
      if (!ok || !mask[id]) {
        std::fprintf(stderr, "token %zu (%d '%s') rejected by the grammar\n", i, id, vocab.piece(id).c_str());
        return 1;
      }
      bool accepted = m.Accept(vocab.piece(id));
      auto d = Clock::now();
      if (!accepted) return 1;
      allows.push_back(Ms(b - a));
      fill.push_back(Ms(c - b));
      accept.push_back(Ms(d - c));
    }
    if (!m.CanEnd()) std::fprintf(stderr, "document incomplete for the grammar\n");
  }
  Report("FillMask", fill, "ms", 1);
  Report("Allows (true pick)", allows, "us", 1000);
  Report("Accept", accept, "us", 1000);
  return 0;
}
