// Shared helpers for the tokenizer tests: load a tokenizer from ../shared once per process, read files.
#pragma once

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace lazyslot::testing {

// Opens ../shared/<rel> and builds its tokenizer (cached: the 150k-token vocabularies take a while).
inline const Tokenizer* SharedTokenizer(const std::string& rel) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto it = cache.find(rel);
  if (it != cache.end()) return it->second.get();
  auto file = gguf::File::Open(SharedPath(rel));
  EXPECT_TRUE(file.ok()) << rel << ": " << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::FromGguf(**file);
  EXPECT_TRUE(tok.ok()) << rel << ": " << tok.status().ToString();
  if (!tok.ok()) return nullptr;
  return (cache[rel] = std::move(tok).value()).get();
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<TokenId> MustTokenize(const Tokenizer& tok, const std::string& text, bool add_special,
                                         bool parse_special) {
  auto r = tok.Tokenize(text, add_special, parse_special);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<TokenId>{};
}

}  // namespace lazyslot::testing
