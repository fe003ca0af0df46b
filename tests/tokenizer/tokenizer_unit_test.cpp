// Tokenizer behaviour beyond the vectors: special tokens, BOS/EOS, EOG, pieces and streaming, the llama.cpp
// server references, arbitrary bytes, speed. Expected ids come from ../shared (never from library code).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "core/utf8.h"
#include "tokenizer/tokenizer_vocab.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace lazyslot {
namespace {

using testing::MustTokenize;
using testing::ReadFile;
using testing::SharedPath;
using testing::SharedTokenizer;

constexpr char kQwen3[] = "models/qwen3-vocab-tiny-q8_0.gguf";
constexpr char kLlama3[] = "models/vocab/ggml-vocab-llama3-derived.gguf";
constexpr char kGpt2[] = "models/vocab/ggml-vocab-gpt-2.gguf";
constexpr char kLlamaSpm[] = "models/vocab/ggml-vocab-llama-spm.gguf";
constexpr char kStories[] = "models/stories260K.gguf";
constexpr char kTinyLlama[] = "models/TinyLLama-v0-Q4_0.gguf";

TEST(TokenizerSpecial, Qwen3ControlTokensParsedOnlyWhenAsked) {
  REQUIRE_SHARED_FILE(kQwen3);
  const Tokenizer* tok = SharedTokenizer(kQwen3);
  ASSERT_NE(tok, nullptr);
  const std::string text = "<|im_start|>user\nhi<|im_end|>";
  const std::vector<TokenId> ids = MustTokenize(*tok, text, /*add_special=*/true, /*parse_special=*/true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 151644);
  EXPECT_EQ(ids.back(), 151645);
  EXPECT_EQ(tok->TokenText(151644), "<|im_start|>");
  // The text between the specials is tokenized on its own.
  const std::vector<TokenId> inner = MustTokenize(*tok, "user\nhi", false, false);
  EXPECT_EQ(std::vector<TokenId>(ids.begin() + 1, ids.end() - 1), inner);
  // Without parse_special the markers are plain text.
  const std::vector<TokenId> plain = MustTokenize(*tok, text, false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 151644), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 151645), 0);
  EXPECT_EQ(tok->Detokenize(plain, false, false), text);
  EXPECT_EQ(tok->Detokenize(ids, false, /*render_special=*/true), text);
  EXPECT_EQ(tok->Detokenize(ids, false, /*render_special=*/false), "user\nhi");
}

TEST(TokenizerSpecial, UserDefinedTokensAlwaysSplit) {
  REQUIRE_SHARED_FILE(kQwen3);
  const Tokenizer* tok = SharedTokenizer(kQwen3);
  ASSERT_NE(tok, nullptr);
  // <think> (151667) is user-defined: split out even with parse_special = false, and always rendered.
  const std::vector<TokenId> ids = MustTokenize(*tok, "a<think>b</think>", false, false);
  EXPECT_NE(std::find(ids.begin(), ids.end(), 151667), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), 151668), ids.end());
  EXPECT_EQ(tok->TokenToPiece(151667, /*render_special=*/false), "<think>");
  EXPECT_FALSE(tok->IsControl(151667));
  EXPECT_EQ(tok->Detokenize(ids, false, false), "a<think>b</think>");
}

TEST(TokenizerSpecial, LongestSpecialTokenWins) {
  REQUIRE_SHARED_FILE(kQwen3);
  const Tokenizer* tok = SharedTokenizer(kQwen3);
  ASSERT_NE(tok, nullptr);
  // "</tool_call>" contains no shorter special, but "<tool_call></tool_call>" must give both ids in order.
  const std::vector<TokenId> ids = MustTokenize(*tok, "<tool_call></tool_call>", false, false);
  EXPECT_EQ(ids, (std::vector<TokenId>{151657, 151658}));
}

TEST(TokenizerSpecial, ControlPiecesRenderOnlyOnRequest) {
  REQUIRE_SHARED_FILE(kQwen3);
  const Tokenizer* tok = SharedTokenizer(kQwen3);
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tok->IsControl(151644));
  EXPECT_EQ(tok->TokenToPiece(151644, false), "");
  EXPECT_EQ(tok->TokenToPiece(151644, true), "<|im_start|>");
  EXPECT_EQ(tok->TokenToPiece(-1, true), "");
  EXPECT_EQ(tok->TokenToPiece(tok->n_vocab(), true), "");
  EXPECT_EQ(tok->TokenText(tok->n_vocab()), "");
}

TEST(TokenizerBos, PerModel) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_SHARED_FILE(kTinyLlama);
  REQUIRE_SHARED_FILE(kQwen3);
  REQUIRE_SHARED_FILE(kLlama3);
  for (const char* spm : {kStories, kTinyLlama}) {
    const Tokenizer* tok = SharedTokenizer(spm);
    ASSERT_NE(tok, nullptr);
    EXPECT_TRUE(tok->add_bos()) << spm;
    EXPECT_EQ(tok->bos(), 1) << spm;
    EXPECT_EQ(tok->eos(), 2) << spm;
    EXPECT_EQ(MustTokenize(*tok, "", true, false), std::vector<TokenId>{1}) << spm;
    EXPECT_EQ(MustTokenize(*tok, "", false, false), std::vector<TokenId>{}) << spm;
    EXPECT_EQ(MustTokenize(*tok, "Hi", true, false).front(), 1) << spm;
  }
  const Tokenizer* qwen = SharedTokenizer(kQwen3);
  ASSERT_NE(qwen, nullptr);
  EXPECT_FALSE(qwen->add_bos());
  EXPECT_EQ(qwen->bos(), 151643);  // present in the metadata but never prepended
  EXPECT_EQ(qwen->eos(), 151645);
  EXPECT_EQ(MustTokenize(*qwen, "Hi", true, false), MustTokenize(*qwen, "Hi", false, false));
  const Tokenizer* llama3 = SharedTokenizer(kLlama3);
  ASSERT_NE(llama3, nullptr);
  EXPECT_TRUE(llama3->add_bos());
  const std::vector<TokenId> ids = MustTokenize(*llama3, "Hi", true, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 128000);
  // remove_special drops the BOS again; llama-bpe has no prefix space to strip.
  EXPECT_EQ(llama3->Detokenize(ids, /*remove_special=*/true, false), "Hi");
  EXPECT_EQ(llama3->Detokenize(ids, false, /*render_special=*/true), "<|begin_of_text|>Hi");
}

TEST(TokenizerEog, Sets) {
  REQUIRE_SHARED_FILE(kQwen3);
  REQUIRE_SHARED_FILE(kLlama3);
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_SHARED_FILE(kGpt2);
  const Tokenizer* qwen = SharedTokenizer(kQwen3);
  ASSERT_NE(qwen, nullptr);
  for (TokenId id : {151645, 151643, 151662, 151663, 151664}) EXPECT_TRUE(qwen->IsEog(id)) << id;
  for (TokenId id : {151644, 151667, 0, 198, -1, 1 << 30}) EXPECT_FALSE(qwen->IsEog(id)) << id;
  const Tokenizer* llama3 = SharedTokenizer(kLlama3);
  ASSERT_NE(llama3, nullptr);
  for (TokenId id : {128001, 128009}) EXPECT_TRUE(llama3->IsEog(id)) << id;
  for (TokenId id : {128000, 128006}) EXPECT_FALSE(llama3->IsEog(id)) << id;
  const Tokenizer* stories = SharedTokenizer(kStories);
  ASSERT_NE(stories, nullptr);
  EXPECT_TRUE(stories->IsEog(2));
  EXPECT_FALSE(stories->IsEog(1));
  const Tokenizer* gpt2 = SharedTokenizer(kGpt2);
  ASSERT_NE(gpt2, nullptr);
  EXPECT_TRUE(gpt2->IsEog(50256));
}

// llama-server's /completion results: prompt tokenization, greedy tokens and their streamed text.
void CheckServerGreedy(const char* model, const char* reference) {
  const Tokenizer* tok = SharedTokenizer(model);
  ASSERT_NE(tok, nullptr);
  const nlohmann::json ref = nlohmann::json::parse(ReadFile(SharedPath(reference)));
  ASSERT_FALSE(ref.empty());
  for (const auto& entry : ref) {
    const std::string prompt = entry["prompt"];
    const auto with_bos = entry["tokens_with_bos"].get<std::vector<TokenId>>();
    const auto no_special = entry["tokens_no_special"].get<std::vector<TokenId>>();
    EXPECT_EQ(MustTokenize(*tok, prompt, true, false), with_bos) << prompt;
    EXPECT_EQ(MustTokenize(*tok, prompt, false, false), no_special) << prompt;
    EXPECT_EQ(tok->Detokenize(no_special, false, false), prompt);
    // A kept or removed BOS means index 0 is no longer the first text piece: its space stays.
    EXPECT_EQ(tok->Detokenize(with_bos, true, false), " " + prompt);
    EXPECT_EQ(tok->Detokenize(with_bos, false, false), " " + prompt);

    const auto greedy = entry["greedy_tokens"].get<std::vector<TokenId>>();
    std::string streamed;
    for (const auto& step : entry["steps"]) {
      const TokenId id = step["token"];
      EXPECT_EQ(tok->TokenToPiece(id, false), step["text"].get<std::string>()) << "token " << id;
    }
    for (TokenId id : greedy) streamed += tok->TokenToPiece(id, false);
    const std::string greedy_text = entry["greedy_text"];
    EXPECT_EQ(streamed, greedy_text) << prompt;
    // As one sequence: the kept-out BOS leaves the prompt's prefix space; alone, index 0 loses its space.
    std::vector<TokenId> all = with_bos;
    all.insert(all.end(), greedy.begin(), greedy.end());
    EXPECT_EQ(tok->Detokenize(all, true, false), " " + prompt + greedy_text);
    EXPECT_EQ(tok->Detokenize(greedy, false, false),
              greedy_text[0] == ' ' ? greedy_text.substr(1) : greedy_text);
  }
}

TEST(TokenizerReference, TinyLlamaServerGreedy) {
  REQUIRE_SHARED_FILE(kTinyLlama);
  REQUIRE_SHARED_FILE("reference/server-greedy/TinyLLama-v0-Q4_0.llamacpp-greedy.json");
  CheckServerGreedy(kTinyLlama, "reference/server-greedy/TinyLLama-v0-Q4_0.llamacpp-greedy.json");
  const Tokenizer* tok = SharedTokenizer(kTinyLlama);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(MustTokenize(*tok, "Once upon a time", true, false),
            (std::vector<TokenId>{1, 4612, 2619, 260, 647}));
}

TEST(TokenizerReference, Stories260KServerGreedy) {
  REQUIRE_SHARED_FILE(kStories);
  REQUIRE_SHARED_FILE("reference/server-greedy/stories260K.llamacpp-greedy.json");
  CheckServerGreedy(kStories, "reference/server-greedy/stories260K.llamacpp-greedy.json");
}

TEST(TokenizerStreaming, PiecesKeepSpacesAndPartialUtf8) {
  REQUIRE_SHARED_FILE(kQwen3);
  REQUIRE_SHARED_FILE(kLlamaSpm);
  const std::string text = " hello 世界🦙 ꙮ𓀀 done";  // the last two are rare: split into byte pieces
  for (const char* model : {kQwen3, kLlamaSpm}) {
    const Tokenizer* tok = SharedTokenizer(model);
    ASSERT_NE(tok, nullptr);
    const std::vector<TokenId> ids = MustTokenize(*tok, text, false, false);
    Utf8Stream stream;
    std::string joined, streamed;
    bool saw_partial = false;
    for (TokenId id : ids) {
      const std::string piece = tok->TokenToPiece(id, false);
      joined += piece;
      if (!IsValidUtf8(piece)) saw_partial = true;
      const std::string out = stream.Push(piece);
      EXPECT_TRUE(IsValidUtf8(out)) << model;
      streamed += out;
    }
    streamed += stream.Flush();
    // Per-token pieces are not stripped: SPM keeps the prefix space it added, plus the text's own space.
    const std::string expected = std::string(tok->add_bos() ? " " : "") + text;
    EXPECT_EQ(joined, expected) << model;
    EXPECT_EQ(streamed, expected) << model;
    EXPECT_TRUE(saw_partial) << model << ": expected byte-level pieces that split a character";
  }
}

// Arbitrary bytes: never an error for these vocabularies (all 256 bytes are reachable), and the round trip
// gives back the input, with invalid UTF-8 replaced by U+FFFD on the BPE side.
std::string ReplaceInvalid(const std::string& s) {
  std::string out;
  for (uint32_t cp : unicode::Decode(s)) AppendUtf8(cp, &out);
  return out;
}

std::string SpaceFor2581(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "\xE2\x96\x81") == 0) {
      out.push_back(' ');
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

TEST(TokenizerRobustness, RandomBytesRoundTrip) {
  REQUIRE_SHARED_FILE(kQwen3);
  REQUIRE_SHARED_FILE(kLlamaSpm);
  REQUIRE_SHARED_FILE(kGpt2);
  REQUIRE_SHARED_FILE(kLlama3);
  REQUIRE_SHARED_FILE(kStories);
  std::mt19937 rng(1234);
  const std::string alphabet[] = {"a",        " ",    "\n",   "'", "é",  "世", "🦙",
                                  "\xE2\x82", "\xFF", "\x80", "1", "<|", "<s>"};
  for (const char* model : {kQwen3, kLlamaSpm, kGpt2, kLlama3, kStories}) {
    const Tokenizer* tok = SharedTokenizer(model);
    ASSERT_NE(tok, nullptr);
    for (int iter = 0; iter < 300; ++iter) {
      std::string s;
      const int len = rng() % 40;
      for (int k = 0; k < len; ++k) {
        if (iter % 2) {
          s.push_back(static_cast<char>(rng() & 0xFF));
        } else {
          s += alphabet[rng() % std::size(alphabet)];
        }
      }
      for (bool parse_special : {false, true}) {
        auto ids = tok->Tokenize(s, true, parse_special);
        ASSERT_TRUE(ids.ok()) << model << ": " << ids.status().ToString();
        for (TokenId id : *ids) ASSERT_TRUE(id >= 0 && id < tok->n_vocab());
        const std::string back =
            tok->Detokenize(*ids, /*remove_special=*/true, /*render_special=*/parse_special);
        if (parse_special) continue;  // specials in the input render as their text only when asked: skip
        const bool spm = tok->TokenText(1) == "<s>";
        if (spm) {
          // The removed BOS leaves the prefix space in place. SPM symbols follow lead bytes without
          // validation, so an invalid byte can swallow part of an escaped space, which then reads back as raw
          // U+2581 bytes (llama.cpp does the same): compare with U+2581 mapped to ' ' on both sides.
          EXPECT_EQ(SpaceFor2581(back), s.empty() ? "" : " " + SpaceFor2581(s)) << model << " iter " << iter;
        } else {
          const std::string want = ReplaceInvalid(s);
          EXPECT_EQ(back, model == std::string(kQwen3) ? want : tok::CleanSpaces(want))
              << model << " iter " << iter;
        }
      }
    }
  }
}

TEST(TokenizerSpeed, LoadAndLongPrompt) {
  REQUIRE_SHARED_FILE(kQwen3);
  auto file = gguf::File::Open(SharedPath(kQwen3));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const auto t0 = std::chrono::steady_clock::now();
  auto tok = Tokenizer::FromGguf(**file);
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const double load_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();

  std::string text;
  const std::string para =
      "The quick brown fox jumps over the lazy dog. It's 2026, and tokenizers still matter: 12345 + 678 = "
      "13023!\n\tIndented line with    spaces, Ünïcödé, 中文字符, and emoji 🦙🚀.\n";
  while (text.size() < 60000) text += para;
  const auto t2 = std::chrono::steady_clock::now();
  auto ids = (*tok)->Tokenize(text, true, true);
  const auto t3 = std::chrono::steady_clock::now();
  ASSERT_TRUE(ids.ok());
  const double tok_ms = std::chrono::duration<double, std::milli>(t3 - t2).count();
  // One word of 50k letters: merging must not rescan the word per merge.
  const std::string word(50000, 'x');
  const auto t4 = std::chrono::steady_clock::now();
  auto word_ids = (*tok)->Tokenize(word, false, false);
  const auto t5 = std::chrono::steady_clock::now();
  ASSERT_TRUE(word_ids.ok());
  const double word_ms = std::chrono::duration<double, std::milli>(t5 - t4).count();
  std::printf(
      "[ speed    ] qwen3 load %.0f ms; %zu tokens from %zu bytes in %.1f ms; 50k-char word in %.1f ms\n",
      load_ms, ids->size(), text.size(), tok_ms, word_ms);
  EXPECT_GT(ids->size(), 10000u);
  EXPECT_EQ((*tok)->Detokenize(*ids, false, true), text);
  // Generous bounds for a loaded CI machine; typical numbers are several times lower.
  EXPECT_LT(load_ms, 2000);
  EXPECT_LT(tok_ms, 500);
  EXPECT_LT(word_ms, 500);
}

TEST(TokenizerSpeed, SpmLongPrompt) {
  REQUIRE_SHARED_FILE(kLlamaSpm);
  const Tokenizer* tok = SharedTokenizer(kLlamaSpm);
  ASSERT_NE(tok, nullptr);
  std::string text;
  while (text.size() < 60000)
    text += "Once upon a time, in a land far away, there lived 42 curious llamas 🦙.\n";
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<TokenId> ids = MustTokenize(*tok, text, true, false);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ speed    ] llama-spm: %zu tokens from %zu bytes in %.1f ms\n", ids.size(), text.size(), ms);
  EXPECT_GT(ids.size(), 10000u);
  EXPECT_EQ(tok->Detokenize(ids, true, false), " " + text);
  EXPECT_LT(ms, 500);
}

TEST(TokenizerLoad, SmallVocabularyModel) {
  // qwen3 architecture with the stories260K SPM vocabulary: the tokenizer follows tokenizer.ggml.model.
  REQUIRE_SHARED_FILE("models/qwen3-tiny-f32.gguf");
  auto file = gguf::File::Open(SharedPath("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(file.ok());
  auto tok = Tokenizer::FromGguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->n_vocab(), 512);
  EXPECT_TRUE((*tok)->add_bos());
  const Tokenizer* stories = SharedTokenizer(kStories);
  ASSERT_NE(stories, nullptr);
  EXPECT_EQ(MustTokenize(**tok, "Once upon a time", true, false),
            MustTokenize(*stories, "Once upon a time", true, false));
}

}  // namespace
}  // namespace lazyslot
