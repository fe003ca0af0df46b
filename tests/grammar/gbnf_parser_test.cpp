// GBNF parsing: exact error positions, and acceptance / rejection of whole strings for each feature.
#include <gtest/gtest.h>

#include "grammar/grammar.h"

namespace lazyslot::grammar {
namespace {

std::string ErrorOf(std::string_view text) {
  auto g = ParseGbnf(text);
  if (g.ok()) return "ok";
  EXPECT_EQ(g.status().code(), Code::kInvalidArgument);
  return g.status().message();
}

// Whole-string match: accepted and complete.
bool Matches(const GrammarPtr& g, std::string_view s) {
  Matcher m(g);
  return m.Accept(s) && m.CanEnd();
}

GrammarPtr Must(std::string_view text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? *g : nullptr;
}

TEST(GbnfErrors, ExactLineAndColumn) {
  EXPECT_EQ(ErrorOf("root ::= x"), "grammar: line 1, column 10: undefined rule 'x'");
  EXPECT_EQ(ErrorOf("root ::= \"a\"\n\nfoo ::= bar baz\n"),
            "grammar: line 3, column 9: undefined rule 'bar'");
  EXPECT_EQ(ErrorOf("a ::= \"x\"\n"), "grammar: line 2, column 1: no 'root' rule");
  EXPECT_EQ(ErrorOf("root ::= \"abc"), "grammar: line 1, column 10: unterminated string literal");
  EXPECT_EQ(ErrorOf("root ::= [a-z"), "grammar: line 1, column 10: unterminated character class");
  EXPECT_EQ(ErrorOf("root ::= [z-a]"), "grammar: line 1, column 11: character range out of order");
  EXPECT_EQ(ErrorOf("root ::= \"\\q\""), "grammar: line 1, column 11: unknown escape '\\q'");
  EXPECT_EQ(ErrorOf("root ::= \"\\x4\""), "grammar: line 1, column 11: expected 2 hex digits after \\x");
  EXPECT_EQ(ErrorOf("root ::= \"\\UFFFFFFFF\""), "grammar: line 1, column 11: code point above U+10FFFF");
  EXPECT_EQ(ErrorOf("root ::= \"\\uD800\""), "grammar: line 1, column 11: surrogate code point in escape");
  EXPECT_EQ(ErrorOf("root ::= (\"a\"\n"), "grammar: line 1, column 10: unclosed '('");
  EXPECT_EQ(ErrorOf("root ::= \"a\")"), "grammar: line 1, column 13: unexpected ')'");
  EXPECT_EQ(ErrorOf("root ::= * \"a\""), "grammar: line 1, column 10: '*' with nothing to repeat");
  EXPECT_EQ(ErrorOf("root = \"a\""), "grammar: line 1, column 6: expected '::=' after rule name 'root'");
  EXPECT_EQ(ErrorOf("root ::= \"a\"{3,1}"), "grammar: line 1, column 13: repetition {m,n} with n < m");
  EXPECT_EQ(ErrorOf("root ::= \"a\"{2"), "grammar: line 1, column 15: expected '}'");
  EXPECT_EQ(ErrorOf("root ::= \"a\" b ::= \"c\""),
            "grammar: line 1, column 16: unexpected ':' (expected a newline or the end of input)");
  EXPECT_EQ(ErrorOf("root ::= \"a\"\nroot ::= \"b\""),
            "grammar: line 2, column 1: rule 'root' defined twice");
  EXPECT_EQ(ErrorOf("  # comment\n  root ::= x # y\n"), "grammar: line 2, column 12: undefined rule 'x'");
}

TEST(GbnfErrors, LeftRecursionAndEmptyLoops) {
  EXPECT_EQ(ErrorOf("root ::= root \"a\" | \"b\""),
            "grammar: line 1, column 1: left recursion in rule 'root'");
  EXPECT_EQ(ErrorOf("root ::= a\na ::= b \"x\"\nb ::= \"\" | a"),
            "grammar: line 2, column 1: left recursion in rule 'a'");
  EXPECT_EQ(ErrorOf("root ::= (\"a\"?)*"),
            "grammar: line 1, column 16: repeated expression can match the empty string (left recursion)");
  EXPECT_EQ(ErrorOf("root ::= \"x\" root | \"\""), "ok");  // right recursion is fine
}

TEST(GbnfErrors, PathologicalSizes) {
  EXPECT_EQ(ErrorOf("root ::= \"a\"{0,1000000}"),
            "grammar: line 1, column 16: repetition count above the limit of 100000");
  std::string deep = "root ::= " + std::string(200, '(') + "\"a\"" + std::string(200, ')');
  EXPECT_EQ(ErrorOf(deep), "grammar: line 1, column 138: parentheses nested deeper than 128");
  // 60 rules each repeating the previous 100000 times: over the element limit, refused quickly.
  std::string big = "root ::= r0\n";
  for (int i = 0; i < 60; ++i) {
    big.append("r")
        .append(std::to_string(i))
        .append(" ::= r")
        .append(std::to_string(i + 1))
        .append("{100000}\n");
  }
  big += "r60 ::= \"a\"\n";
  EXPECT_NE(ErrorOf(big).find("grammar too large"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\xC3\""), "ok");  // invalid UTF-8 in the grammar text
}

TEST(GbnfMatch, LiteralsAndEscapes) {
  auto g = Must("root ::= \"a\\n\\t\\\\\\\"\\x41\\u00e9\\U0001F600\\[\\]\"");
  EXPECT_TRUE(Matches(g, "a\n\t\\\"A\xC3\xA9\xF0\x9F\x98\x80[]"));
  EXPECT_FALSE(Matches(g, "a\n\t\\\"A\xC3\xA9"));
  auto u = Must("root ::= \"日本\" | \"é\"+");
  EXPECT_TRUE(Matches(u, "日本"));
  EXPECT_TRUE(Matches(u, "ééé"));
  EXPECT_FALSE(Matches(u, "日"));
}

TEST(GbnfMatch, ClassesAndAny) {
  auto g = Must("root ::= [a-c0-9_] [^a-z] . [\\x00-\\x1f\\]-]");
  EXPECT_TRUE(Matches(g, "b5\xC3\xA9\x01"));  // b, 5 (not a-z), é, \x01
  EXPECT_TRUE(Matches(g, "_5\xC3\xA9\x01"));
  EXPECT_TRUE(Matches(g, "9Z\xF0\x9F\x98\x80]"));
  EXPECT_TRUE(Matches(g, "a\xE6\x97\xA5x-"));
  EXPECT_FALSE(Matches(g, "dZx-"));
  EXPECT_FALSE(Matches(g, "aqx-"));
  EXPECT_FALSE(Matches(g, "aZx^"));
  auto neg = Must("root ::= [^\"]*");
  EXPECT_TRUE(Matches(neg, "any thing \xE2\x82\xAC"));
  EXPECT_FALSE(Matches(neg, "a\"b"));
  EXPECT_FALSE(Matches(neg, "\xFF"));              // invalid UTF-8
  EXPECT_FALSE(Matches(neg, "\xC0\x80"));          // overlong
  EXPECT_FALSE(Matches(neg, "\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(Matches(neg, "\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_TRUE(Matches(neg, "\xF4\x8F\xBF\xBF"));
  auto empty = Must("root ::= [] | \"x\"");
  EXPECT_TRUE(Matches(empty, "x"));
}

TEST(GbnfMatch, Repetitions) {
  auto g = Must("root ::= \"a\"{2} \"b\"{1,3} \"c\"{2,} \"d\"* \"e\"+ \"f\"?");
  EXPECT_TRUE(Matches(g, "aabcce"));
  EXPECT_TRUE(Matches(g, "aabbbcccccddddeeef"));
  EXPECT_FALSE(Matches(g, "abcce"));
  EXPECT_FALSE(Matches(g, "aabbbbcce"));
  EXPECT_FALSE(Matches(g, "aabce"));
  EXPECT_FALSE(Matches(g, "aabccff"));
  auto lit = Must("root ::= \"ab\"{2,3} (\"x\" | \"yz\")*");  // a literal repeats as a whole
  EXPECT_TRUE(Matches(lit, "ababab"));
  EXPECT_TRUE(Matches(lit, "ababyzxyz"));
  EXPECT_FALSE(Matches(lit, "aba"));
  EXPECT_FALSE(Matches(lit, "abababab"));
  auto chained = Must("root ::= \"a\"{2}*");
  EXPECT_TRUE(Matches(chained, ""));
  EXPECT_TRUE(Matches(chained, "aaaa"));
  EXPECT_FALSE(Matches(chained, "aaa"));
}

TEST(GbnfMatch, RulesCommentsNewlines) {
  auto g = Must(
      "# a comment line\n"
      "root ::= item (\n"
      "    \",\" item   # inside parentheses newlines are fine\n"
      "  )* |\n"
      "  \"none\"\n"
      "item ::= [0-9]+ | word\n"
      "word ::= [a-z-]+\n");
  EXPECT_TRUE(Matches(g, "1,abc,22"));
  EXPECT_TRUE(Matches(g, "none"));
  EXPECT_FALSE(Matches(g, "1,"));
  EXPECT_FALSE(Matches(g, ",1"));
  auto nested = Must("root ::= \"(\" root \")\" | \"\"");
  EXPECT_TRUE(Matches(nested, "((()))"));
  EXPECT_FALSE(Matches(nested, "(()"));
  auto custom = ParseGbnf("start ::= \"s\"", "start");
  ASSERT_TRUE(custom.ok());
  EXPECT_TRUE(Matches(*custom, "s"));
}

TEST(GbnfMatch, CanEndMustEnd) {
  auto g = Must("root ::= \"ab\" \"c\"?");
  Matcher m(g);
  EXPECT_FALSE(m.CanEnd());
  ASSERT_TRUE(m.Accept("ab"));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(m.MustEnd());
  ASSERT_TRUE(m.Accept("c"));
  EXPECT_TRUE(m.MustEnd());
  EXPECT_FALSE(m.Accept("c"));
  EXPECT_TRUE(m.MustEnd());
}

}  // namespace
}  // namespace lazyslot::grammar
