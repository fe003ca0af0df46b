// Every case of shared/models/vocab/*.inp|.out must tokenize to exactly llama.cpp's ids (FORMATS.md 5c), and
// detokenize back to the input (after clean-up for the clean_spaces vocabularies). WPM (BERT) text is
// normalised, so there the round trip goes ids -> text -> ids instead (less the [UNK]s, which render as "").
#include <gtest/gtest.h>

#include <sstream>

#include "tokenizer/tokenizer_vocab.h"
#include "tokenizer_test_util.h"

namespace lazyslot {
namespace {

using testing::ReadFile;
using testing::SharedPath;
using testing::SharedTokenizer;

enum class RoundTrip {
  kText,         // Detokenize(ids) == input
  kCleanedText,  // Detokenize(ids) == CleanSpaces(input): the vocabulary has clean_spaces
  kIds,          // Tokenize(Detokenize(ids)) == ids without [UNK]: WPM lower-cases and drops characters
};

struct VectorSet {
  const char* vectors;  // NAME in ggml-vocab-NAME.gguf.inp/.out
  const char* model;    // GGUF holding the tokenizer
  RoundTrip round_trip;
};

std::ostream& operator<<(std::ostream& os, const VectorSet& s) { return os << s.vectors << " x " << s.model; }

struct Case {
  std::string text;
  std::vector<TokenId> ids;
};

std::vector<Case> ReadCases(const std::string& name) {
  const std::string inp = ReadFile(SharedPath("models/vocab/ggml-vocab-" + name + ".gguf.inp"));
  const std::string out = ReadFile(SharedPath("models/vocab/ggml-vocab-" + name + ".gguf.out"));
  static const std::string kSep = "\n__ggml_vocab_test__\n";
  std::vector<Case> cases;
  for (size_t start = 0; start < inp.size();) {
    const size_t sep = inp.find(kSep, start);
    if (sep == std::string::npos) break;
    cases.push_back({inp.substr(start, sep - start), {}});
    start = sep + kSep.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (size_t i = 0; std::getline(lines, line); ++i) {
    if (i >= cases.size()) {
      ADD_FAILURE() << name << ": .out has more lines than .inp has cases";
      break;
    }
    std::istringstream ids(line);
    for (int id; ids >> id;) cases[i].ids.push_back(id);
  }
  return cases;
}

std::string Ids(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) {
    s.push_back(' ');
    s += std::to_string(id);
  }
  return s;
}

class VocabVectors : public ::testing::TestWithParam<VectorSet> {};

TEST_P(VocabVectors, MatchLlamaCpp) {
  const VectorSet& set = GetParam();
  REQUIRE_SHARED_FILE(std::string("models/vocab/ggml-vocab-") + set.vectors + ".gguf.inp");
  REQUIRE_SHARED_FILE(set.model);
  const Tokenizer* tok = SharedTokenizer(set.model);
  ASSERT_NE(tok, nullptr);
  const std::vector<Case> cases = ReadCases(set.vectors);
  ASSERT_EQ(cases.size(), 46u);
  int pass = 0, round_trips = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    auto got = tok->Tokenize(c.text, /*add_special=*/false, /*parse_special=*/false);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    if (*got == c.ids) {
      ++pass;
    } else {
      ADD_FAILURE() << set << " case " << i << " text [" << c.text << "]\n  expected:" << Ids(c.ids)
                    << "\n  got:     " << Ids(*got);
    }
    const std::string back = tok->Detokenize(*got, /*remove_special=*/false, /*render_special=*/false);
    if (set.round_trip == RoundTrip::kIds) {
      std::vector<TokenId> want;
      for (TokenId id : *got) {
        if (tok->TokenText(id) != "[UNK]") want.push_back(id);
      }
      auto again = tok->Tokenize(back, /*add_special=*/false, /*parse_special=*/false);
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      if (*again == want) {
        ++round_trips;
      } else {
        ADD_FAILURE() << set << " case " << i << " round trip via [" << back << "]:\n  expected:" << Ids(want)
                      << "\n  got:     " << Ids(*again);
      }
      continue;
    }
    const std::string want = set.round_trip == RoundTrip::kCleanedText ? tok::CleanSpaces(c.text) : c.text;
    if (back == want) {
      ++round_trips;
    } else {
      ADD_FAILURE() << set << " case " << i << " round trip: [" << back << "] != [" << want << "]";
    }
  }
  std::printf("[ vectors  ] %s: %d/%zu ids match, %d/%zu round trips\n", set.model, pass, cases.size(),
              round_trips, cases.size());
}

INSTANTIATE_TEST_SUITE_P(
    All, VocabVectors,
    ::testing::Values(VectorSet{"llama-spm", "models/vocab/ggml-vocab-llama-spm.gguf", RoundTrip::kText},
                      VectorSet{"llama-spm", "models/llama-2-tiny-random.gguf", RoundTrip::kText},
                      VectorSet{"gpt-2", "models/vocab/ggml-vocab-gpt-2.gguf", RoundTrip::kCleanedText},
                      VectorSet{"qwen2", "models/vocab/ggml-vocab-qwen3-derived.gguf", RoundTrip::kText},
                      VectorSet{"qwen2", "models/qwen3-vocab-tiny-q8_0.gguf", RoundTrip::kText},
                      VectorSet{"llama-bpe", "models/vocab/ggml-vocab-llama3-derived.gguf",
                                RoundTrip::kCleanedText},
                      VectorSet{"bert-bge", "models/vocab/ggml-vocab-bert-bge.gguf", RoundTrip::kIds},
                      VectorSet{"bert-bge-10k", "models/bert-tiny-f32.gguf", RoundTrip::kIds},
                      VectorSet{"bert-bge-10k", "models/bert-tiny-q8_0.gguf", RoundTrip::kIds},
                      VectorSet{"bert-bge-10k", "models/bert-rerank-tiny-f32.gguf", RoundTrip::kIds}));

}  // namespace
}  // namespace lazyslot
