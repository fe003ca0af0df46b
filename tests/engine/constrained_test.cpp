// ConstrainedOutput on a small byte vocabulary with hand-set logits: the grammar overrides the sampler's
// pick, end-of-generation only where the grammar may end, lazy triggers (anywhere, or only at the start),
// and answers closed within the token budget (a pick whose shortest completion no longer fits is refused).
#include "engine/constrained.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lazyslot {
namespace {

// Tokens 0..255 are the single bytes, kEog ends generation (a control token: no text), then a few longer
// pieces.
constexpr TokenId kEog = 256;
const std::vector<std::string> kLong = {"<tool_call>", "hello", "abc", "\"}"};

class ByteTokenizer : public Tokenizer {
 public:
  ByteTokenizer() {
    for (int b = 0; b < 256; ++b) text_.push_back(std::string(1, static_cast<char>(b)));
    text_.push_back("<eog>");
    text_.insert(text_.end(), kLong.begin(), kLong.end());
  }
  Result<std::vector<TokenId>> Tokenize(std::string_view, bool, bool) const override {
    return Unimplemented("not needed");
  }
  std::string TokenToPiece(TokenId id, bool render_special) const override {
    return id == kEog && !render_special ? std::string() : text_[id];
  }
  std::string Detokenize(const std::vector<TokenId>&, bool, bool) const override { return {}; }
  int32_t n_vocab() const override { return static_cast<int32_t>(text_.size()); }
  TokenId bos() const override { return -1; }
  TokenId eos() const override { return kEog; }
  bool add_bos() const override { return false; }
  bool add_eos() const override { return false; }
  TokenId sep() const override { return -1; }
  bool add_sep() const override { return false; }
  bool IsEog(TokenId id) const override { return id == kEog; }
  bool IsControl(TokenId id) const override { return id == kEog; }
  const std::string& TokenText(TokenId id) const override { return text_[id]; }

 private:
  std::vector<std::string> text_;
};

TokenId Id(const std::string& piece) {
  if (piece.size() == 1) return static_cast<uint8_t>(piece[0]);
  for (size_t i = 0; i < kLong.size(); ++i) {
    if (kLong[i] == piece) return kEog + 1 + static_cast<TokenId>(i);
  }
  return -1;
}

grammar::GrammarPtr Gbnf(const char* text) {
  auto g = grammar::ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

struct Fixture {
  ByteTokenizer tok;
  ConstraintVocab vocab{tok};
  Sampler greedy{[] {
    SamplingParams p;
    p.temperature = 0;  // argmax: the logits decide what the model "wants"
    return p;
  }()};
  std::vector<float> scratch;
  std::vector<uint8_t> mask;

  // Logits preferring `want` (by piece; "<eog>" for end of generation), then `second`.
  std::vector<float> Logits(const std::string& want, const std::string& second = "") const {
    std::vector<float> l(static_cast<size_t>(tok.n_vocab()), 0.0f);
    auto at = [](const std::string& p) { return p == "<eog>" ? kEog : Id(p); };
    l[at(want)] = 10.0f;
    if (!second.empty()) l[at(second)] = 5.0f;
    return l;
  }
  TokenId Pick(ConstrainedOutput& c, const std::vector<float>& logits, int32_t left = 1000) {
    Result<TokenId> t = c.Pick(greedy, logits.data(), tok.n_vocab(), vocab, tok, left, &scratch, &mask);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : -1;
  }
  // Picks and advances until the grammar ends or `budget` tokens are used; the model always wants `want`.
  std::string Run(ConstrainedOutput& c, const std::string& want, int32_t budget, bool* ended) {
    std::string out;
    *ended = false;
    for (int32_t used = 0; used < budget; ++used) {
      const TokenId t = Pick(c, Logits(want), budget - used);
      if (t == kEog) {
        *ended = true;
        break;
      }
      out += tok.TokenToPiece(t, false);
      c.Advance(tok.TokenToPiece(t, false));
      if (c.MustEnd()) {
        *ended = true;
        break;
      }
    }
    return out;
  }
};

TEST(ConstrainedOutput, GrammarOverridesThePickAndEndsWhereItMust) {
  Fixture f;
  ConstrainedOutput c(Gbnf("root ::= \"ab\""), {});
  ASSERT_TRUE(c.active());
  EXPECT_EQ(f.Pick(c, f.Logits("x")), Id("a"));  // the model wants 'x'; only 'a' is allowed
  c.Advance("a");
  EXPECT_EQ(f.Pick(c, f.Logits("<eog>")), Id("b"));  // cannot end after "a"
  c.Advance("b");
  EXPECT_TRUE(c.MustEnd());
  EXPECT_EQ(c.n_checked(), 2);
  EXPECT_EQ(c.n_masked(), 2);
}

// A grammar too ambiguous to follow (grammar.h: the parser-work allowance) ends the output with an error
// naming the cause, within a bounded number of tokens, instead of making every later token slower.
TEST(ConstrainedOutput, TooAmbiguousGrammarEndsWithAnError) {
  Fixture f;
  ConstrainedOutput c(Gbnf(R"(root ::= "a" root "b" | "a" root "c" | "a" root "d" | "z")"), {});
  Status error;
  int tokens = 0;
  for (; tokens < 2000; ++tokens) {
    const std::vector<float> logits = f.Logits("a");
    Result<TokenId> t = c.Pick(f.greedy, logits.data(), f.tok.n_vocab(), f.vocab, f.tok, 100000, &f.scratch, &f.mask);
    if (!t.ok()) {
      error = t.status();
      break;
    }
    ASSERT_EQ(*t, Id("a"));
    c.Advance("a");
  }
  ASSERT_FALSE(error.ok()) << tokens << " tokens and no error";
  EXPECT_EQ(error.code(), Code::kInvalidArgument);
  EXPECT_NE(error.message().find("grammar: too ambiguous to follow"), std::string::npos) << error.message();
  EXPECT_GT(tokens, 5);
}

TEST(ConstrainedOutput, AllowedPickNeedsNoMaskAndEogOnlyWhenComplete) {
  Fixture f;
  ConstrainedOutput c(Gbnf("root ::= [a-z]+"), {});
  EXPECT_EQ(f.Pick(c, f.Logits("<eog>", "q")), Id("q"));
  c.Advance("q");
  EXPECT_EQ(f.Pick(c, f.Logits("hello")), Id("hello"));  // a multi-byte piece the grammar allows
  c.Advance("hello");
  EXPECT_EQ(f.Pick(c, f.Logits("<eog>")), kEog);
  EXPECT_EQ(c.n_masked(), 1);  // only the first pick (end of generation on an empty answer) was rejected
}

TEST(ConstrainedOutput, LazyGrammarStartsAtItsTrigger) {
  Fixture f;
  ConstrainedOutput c(Gbnf("root ::= \"<tool_call>\" [a-c]+ \"!\""), {"<tool_call>"});
  EXPECT_FALSE(c.active());
  EXPECT_EQ(f.Pick(c, f.Logits("x")), Id("x"));  // free text before any trigger
  c.Advance("well <tool");
  EXPECT_FALSE(c.active());
  c.Advance("_call>");  // the trigger completes across two pieces
  ASSERT_TRUE(c.active());
  EXPECT_EQ(f.Pick(c, f.Logits("x", "b")), Id("b"));
  c.Advance("b");
  EXPECT_EQ(f.Pick(c, f.Logits("<eog>", "!")), Id("!"));
  c.Advance("!");
  EXPECT_TRUE(c.MustEnd());
}

TEST(ConstrainedOutput, TriggerAtStartOnly) {
  Fixture f;
  auto g = Gbnf("root ::= \"{\" [a-z]* \"}\"");
  ConstrainedOutput late(g, {"{"}, /*at_start=*/true);
  late.Advance("  ");
  late.Advance("x {");  // text came first: no call, and never one later
  EXPECT_FALSE(late.active());
  late.Advance("{");
  EXPECT_FALSE(late.active());

  ConstrainedOutput early(g, {"{"}, /*at_start=*/true);
  early.Advance(" \n");
  early.Advance("{ab");
  ASSERT_TRUE(early.active());
  EXPECT_EQ(f.Pick(early, f.Logits("!", "}")), Id("}"));
}

TEST(ConstrainedOutput, AnswerIsClosedWithinTheBudget) {
  Fixture f;
  // The model would write 'a' forever; a string must still end within 6 tokens.
  for (int32_t budget = 3; budget <= 8; ++budget) {
    ConstrainedOutput c(Gbnf("root ::= \"\\\"\" [a-z]* \"\\\"\""), {});
    bool ended = false;
    const std::string out = f.Run(c, "a", budget, &ended);
    EXPECT_TRUE(ended) << "budget " << budget << ": " << out;
    EXPECT_EQ(out.front(), '"');
    EXPECT_EQ(out.back(), '"');
    EXPECT_LE(static_cast<int32_t>(out.size()), budget);
    EXPECT_GT(c.n_closing(), 0);
  }
}

TEST(ConstrainedOutput, PickThatNoLongerFitsIsRefused) {
  Fixture f;
  // After "x" the model wants the long branch; with 4 tokens left it cannot finish, so the answer ends.
  ConstrainedOutput c(Gbnf("root ::= \"x\" (\"y\" \"zzzzzzzz\")?"), {});
  c.Advance("x");
  EXPECT_EQ(f.Pick(c, f.Logits("y"), /*left=*/4), kEog);
  // With room enough, the same pick is taken.
  EXPECT_EQ(f.Pick(c, f.Logits("y"), /*left=*/40), Id("y"));
}

TEST(ConstrainedOutput, MinBytesToEnd) {
  auto g = Gbnf("root ::= \"ab\" tail\ntail ::= \"c\" | \"de\" tail");
  grammar::Matcher m(g);
  EXPECT_EQ(m.MinBytesToEnd(), 3u);
  ASSERT_TRUE(m.Accept("abd"));
  EXPECT_EQ(m.MinBytesToEnd(), 2u);  // "e" then "c"
  ASSERT_TRUE(m.Accept("ec"));
  EXPECT_EQ(m.MinBytesToEnd(), 0u);
  grammar::Matcher u(Gbnf("root ::= [\\u00e9-\\u00ea] \"!\""));
  EXPECT_EQ(u.MinBytesToEnd(), 3u);  // a 2-byte character, then "!"
  ASSERT_TRUE(u.Accept("\xc3"));
  EXPECT_EQ(u.MinBytesToEnd(), 2u);
}

}  // namespace
}  // namespace lazyslot
