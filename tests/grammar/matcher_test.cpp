// The matcher: byte-level input with UTF-8 split across tokens, state left unchanged on rejection, copy
// semantics, FillMask == Allows on small vocabularies, and the parser-work allowance (an ambiguous recursive
// grammar is exhausted, an unambiguous one never).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "grammar/grammar.h"

namespace lazyslot::grammar {
namespace {

GrammarPtr Must(std::string_view text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? *g : nullptr;
}

TEST(Matcher, Utf8SplitAcrossTokens) {
  auto g = Must("root ::= \"\xE6\x97\xA5\" [\xC3\xA0-\xC3\xBF] \"\xF0\x9F\x98\x80\"");  // 日 [à-ÿ] 😀
  Matcher m(g);
  EXPECT_TRUE(m.Accept("\xE6"));
  EXPECT_FALSE(m.CanEnd());
  EXPECT_FALSE(m.Accept("\x98"));  // 日 is E6 97 A5: E6 98 is another character
  EXPECT_TRUE(m.Accept("\x97"));
  EXPECT_TRUE(m.Accept("\xA5\xC3"));
  EXPECT_FALSE(m.Accept("\x9F"));  // U+00DF is below à
  EXPECT_TRUE(m.Accept("\xA9\xF0\x9F"));
  EXPECT_TRUE(m.Accept("\x98"));
  EXPECT_FALSE(m.CanEnd());
  EXPECT_TRUE(m.Accept("\x80"));
  EXPECT_TRUE(m.MustEnd());
}

TEST(Matcher, PartialSequencesArePruned) {
  auto g = Must("root ::= [\xC3\xA9]");  // only é (C3 A9)
  Matcher m(g);
  EXPECT_TRUE(m.Accept("\xC3"));
  Matcher fresh(g);
  EXPECT_FALSE(fresh.Accept("\xC4"));  // no code point starting with C4 is allowed
  EXPECT_FALSE(fresh.Accept("\xE0"));
  EXPECT_FALSE(fresh.Accept("\x80"));  // a stray continuation byte
  auto any = Must("root ::= .*");
  Matcher a(any);
  EXPECT_FALSE(a.Accept("\xE0\x80"));  // overlong three-byte form
  EXPECT_FALSE(a.Accept("\xED\xA0"));  // surrogate
  EXPECT_FALSE(a.Accept("\xF4\x90"));  // above U+10FFFF
  EXPECT_FALSE(a.Accept("\xF8"));
  EXPECT_TRUE(a.Accept("\xED\x9F\xBF"));  // U+D7FF
  EXPECT_TRUE(a.CanEnd());
  EXPECT_TRUE(a.Accept("\xF0"));
  EXPECT_FALSE(a.CanEnd());  // inside a sequence
}

TEST(Matcher, RejectLeavesStateUnchanged) {
  auto g = Must("root ::= \"abc\" | \"abd\"");
  Matcher m(g);
  ASSERT_TRUE(m.Accept("a"));
  EXPECT_FALSE(m.Accept("bx"));  // b would be fine, x not: nothing consumed
  EXPECT_TRUE(m.Accept("b"));
  EXPECT_TRUE(m.Accept("d"));
  EXPECT_TRUE(m.MustEnd());
}

TEST(Matcher, CopiesAreIndependent) {
  auto g = Must("root ::= [a-z]+ \"!\"");
  Matcher a(g);
  ASSERT_TRUE(a.Accept("ab"));
  Matcher b = a;  // copy
  ASSERT_TRUE(b.Accept("c!"));
  EXPECT_TRUE(b.MustEnd());
  EXPECT_FALSE(a.CanEnd());
  ASSERT_TRUE(a.Accept("!"));
  EXPECT_TRUE(a.MustEnd());
  Matcher c(g);
  c = b;  // copy assignment
  EXPECT_TRUE(c.MustEnd());
  Matcher d(std::move(c));
  EXPECT_TRUE(d.MustEnd());
  Matcher e(g);
  e = std::move(d);
  EXPECT_TRUE(e.MustEnd());
  Matcher f(g);
  EXPECT_TRUE(f.Accept("zz"));  // a fresh matcher of the same grammar starts over
}

// Tokens over a small alphabet, incl. UTF-8 pieces split at every position.
std::vector<std::string> SmallVocab() {
  std::vector<std::string> v = {
      "",         "a",        "b",    "ab",   "ba",   "abc",  "\"",       "\\",       "\\\"", "{",
      "}",        "{\"",      "\":",  ",",    " ",    "\n",   "0",        "1",        "12",   "-",
      ".",        "e",        "true", "null", "\xC3", "\xA9", "\xC3\xA9", "\xE6\x97", "\xA5", "\xE6\x97\xA5",
      "\xF0\x9F", "\x98\x80", "\xFF", ""};
  for (int c = 0; c < 128; ++c) v.push_back(std::string(1, static_cast<char>(c)));
  v.push_back("a");  // a duplicate piece: both ids must be allowed alike
  return v;
}

void ExpectMaskMatchesAllows(const Matcher& m, const VocabIndex& vocab) {
  std::vector<uint8_t> mask;
  m.FillMask(vocab, &mask);
  ASSERT_EQ(mask.size(), static_cast<size_t>(vocab.size()));
  for (int32_t t = 0; t < vocab.size(); ++t) {
    Matcher copy = m;
    bool accepted = !vocab.piece(t).empty() && copy.Accept(vocab.piece(t));
    ASSERT_EQ(mask[t] != 0, m.Allows(vocab, t)) << "token " << t;
    ASSERT_EQ(mask[t] != 0, accepted) << "token " << t;
  }
}

TEST(Matcher, FillMaskEqualsAllowsOnRandomWalks) {
  VocabIndex vocab(SmallVocab());
  const char* grammars[] = {
      "root ::= \"{\" ws (pair (\",\" ws pair)*)? \"}\"\npair ::= str \":\" ws val\nstr ::= \"\\\"\" "
      "([^\"\\\\] | "
      "\"\\\\\" [\"\\\\n])* \"\\\"\" ws\nval ::= str | [0-9]+ ws | \"true\" ws | root\nws ::= [ \\n]?",
      "root ::= ([a-c] | \"\xC3\xA9\" | \"\xE6\x97\xA5\")* \"!\"?",
      "root ::= [^a]{0,5}",
  };
  std::mt19937 rng(7);
  for (const char* text : grammars) {
    auto g = Must(text);
    ASSERT_NE(g, nullptr);
    for (int walk = 0; walk < 20; ++walk) {
      Matcher m(g);
      for (int step = 0; step < 30; ++step) {
        ExpectMaskMatchesAllows(m, vocab);
        std::vector<uint8_t> mask;
        m.FillMask(vocab, &mask);
        std::vector<int32_t> ok;
        for (int32_t t = 0; t < vocab.size(); ++t)
          if (mask[t]) ok.push_back(t);
        if (ok.empty()) break;
        ASSERT_TRUE(m.Accept(vocab.piece(ok[rng() % ok.size()])));
      }
    }
  }
}

TEST(Matcher, ControlTokensNeverAllowed) {
  VocabIndex vocab({"", "a", ""});
  Matcher m(Must("root ::= \"a\"*"));
  EXPECT_FALSE(m.Allows(vocab, 0));
  EXPECT_TRUE(m.Allows(vocab, 1));
  EXPECT_FALSE(m.Allows(vocab, 2));
  EXPECT_FALSE(m.Allows(vocab, 3));  // out of range
  EXPECT_FALSE(m.Allows(vocab, -1));
}

TEST(Matcher, ManyStatesStayBounded) {
  // A long output through a grammar with many distinct stack sets: the engine resets its node cache and
  // keeps working (the result must not change).
  std::string text = "root ::= (";
  for (int i = 0; i < 3000; ++i) text += (i ? " | " : "") + std::string("\"k") + std::to_string(i) + "\"";
  text += ") (\",\" root)?";
  auto g = Must(text);
  VocabIndex vocab(SmallVocab());
  Matcher m(g);
  for (int i = 0; i < 3000; ++i) {
    std::string k = i ? ",k" : "k";
    k.append(std::to_string(i));
    ASSERT_TRUE(m.Accept(k)) << i;
    if (i % 500 == 0) ExpectMaskMatchesAllows(m, vocab);
  }
  EXPECT_TRUE(m.CanEnd());
}

// A recursive rule with three ways to read each "a" keeps 3^n parser stacks (capped), each n deep: unbounded,
// one step would cost seconds within a few hundred bytes. The allowance ends it instead, for good.
TEST(Matcher, AmbiguousRecursionExhaustsItsAllowanceInsteadOfStalling) {
  auto g = Must(R"(root ::= "a" root "b" | "a" root "c" | "a" root "d" | "z")");
  VocabIndex vocab(SmallVocab());
  Matcher m(g);
  std::vector<uint8_t> mask;
  int steps = 0;
  for (; steps < 2000 && !m.Exhausted(); ++steps) {
    m.RefillWork();
    m.FillMask(vocab, &mask);
    if (m.Exhausted()) break;
    ASSERT_TRUE(m.Accept("a")) << "step " << steps;
  }
  ASSERT_TRUE(m.Exhausted()) << "2000 bytes of an exponentially ambiguous grammar within the allowance";
  std::printf("exhausted after %d bytes\n", steps);
  EXPECT_GT(steps, 5);  // not at once: the first steps are cheap
  // Exhausted for good, copies included, whatever is refilled: the caller ends the output with an error.
  m.RefillWork();
  Matcher copy(m);
  EXPECT_TRUE(copy.Exhausted());
  EXPECT_FALSE(m.Accept("a"));
  EXPECT_FALSE(copy.Accept("z"));
  for (int32_t t = 0; t < vocab.size(); ++t) EXPECT_FALSE(m.Allows(vocab, t)) << t;
  m.FillMask(vocab, &mask);
  EXPECT_EQ(std::count(mask.begin(), mask.end(), 1), 0);
}

// The same depth of recursion read one way only stays far inside the allowance, however long the output:
// each step costs the depth of the one stack, not a multiple of it.
TEST(Matcher, UnambiguousRecursionNeverExhausts) {
  auto g = Must(R"(root ::= "a" root "b" | "z")");
  VocabIndex vocab(SmallVocab());
  Matcher m(g);
  std::vector<uint8_t> mask;
  for (int i = 0; i < 2000; ++i) {
    m.RefillWork();
    if (i % 50 == 0) m.FillMask(vocab, &mask);
    ASSERT_TRUE(m.Accept("a")) << i;
  }
  ASSERT_TRUE(m.Accept("z"));
  for (int i = 0; i < 2000; ++i) {
    m.RefillWork();
    ASSERT_TRUE(m.Accept("b")) << i;
  }
  EXPECT_TRUE(m.MustEnd());
  EXPECT_FALSE(m.Exhausted());
}

}  // namespace
}  // namespace lazyslot::grammar
