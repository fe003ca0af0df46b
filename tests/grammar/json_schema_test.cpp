// JSON schema -> GBNF: for each supported keyword, many random grammar outputs checked by an independent
// validator (schema_checker.h), hand-written strings that must be rejected, and the errors for
// unsupported keywords and malformed schemas.
#include <gtest/gtest.h>

#include "grammar/grammar.h"
#include "grammar/schema_checker.h"

namespace lazyslot::grammar {
namespace {

using testing::OJ;

GrammarPtr Compile(const OJ& schema) {
  auto text = JsonSchemaToGbnf(schema);
  EXPECT_TRUE(text.ok()) << schema.dump() << ": " << text.status().message();
  if (!text.ok()) return nullptr;
  auto g = ParseGbnf(*text);
  EXPECT_TRUE(g.ok()) << *text << "\n" << g.status().message();
  return g.ok() ? *g : nullptr;
}

const VocabIndex& Vocab() {
  static VocabIndex v(testing::SyntheticVocab());
  return v;
}

// Samples `n` outputs; each must parse as JSON and validate against the schema.
void ExpectSamplesValid(const char* schema_text, int n = 150, uint32_t seed = 1) {
  SCOPED_TRACE(schema_text);
  OJ schema = OJ::parse(schema_text);
  GrammarPtr g = Compile(schema);
  ASSERT_NE(g, nullptr);
  std::mt19937 rng(seed);
  int complete = 0;
  std::string out;
  for (int i = 0; i < n; ++i) {
    if (!testing::Sample(g, Vocab(), rng, &out)) continue;
    ++complete;
    nlohmann::json v;
    try {
      v = nlohmann::json::parse(out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not JSON: " << out << " (" << e.what() << ")";
      continue;
    }
    EXPECT_TRUE(testing::Validate(schema, schema, v)) << "invalid output: " << out;
  }
  EXPECT_GE(complete, n * 3 / 4) << "too many samples ran past the length cap";
}

// Whole-string acceptance by the schema's grammar.
bool Accepts(const char* schema_text, const std::string& s) {
  GrammarPtr g = Compile(OJ::parse(schema_text));
  if (!g) return false;
  Matcher m(g);
  return m.Accept(s) && m.CanEnd();
}

std::string ErrorOf(const char* schema_text) {
  auto r = JsonSchemaToGbnf(OJ::parse(schema_text));
  if (r.ok()) return "ok";
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  return r.status().message();
}

TEST(JsonSchemaSamples, Primitives) {
  ExpectSamplesValid(R"({"type": "string"})");
  ExpectSamplesValid(R"({"type": "integer"})");
  ExpectSamplesValid(R"({"type": "number"})");
  ExpectSamplesValid(R"({"type": "boolean"})");
  ExpectSamplesValid(R"({"type": "null"})");
  ExpectSamplesValid(R"({"type": ["string", "null", "integer"]})");
  ExpectSamplesValid(R"({})", 60);
  ExpectSamplesValid(R"(true)", 60);
}

TEST(JsonSchemaSamples, Objects) {
  ExpectSamplesValid(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
      "c": {"type": "boolean"}, "d": {"type": "null"}}, "required": ["b", "d"]})");
  ExpectSamplesValid(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
      "additionalProperties": false})");
  ExpectSamplesValid(R"({"type": "object", "properties": {"a": {"type": "integer"}, "ab": {"type": "null"}},
      "additionalProperties": {"type": "string", "maxLength": 3}})");
  ExpectSamplesValid(R"({"type": "object", "properties": {"name": {"type": "boolean"}},
      "additionalProperties": true})",
                     80);
  ExpectSamplesValid(R"({"type": "object"})", 80);
  ExpectSamplesValid(R"({"type": "object", "required": ["x", "y"]})", 80);
  ExpectSamplesValid(R"({"properties": {"a": {"const": 1}, "b": false}, "required": ["a"]})");
}

TEST(JsonSchemaSamples, Arrays) {
  ExpectSamplesValid(R"({"type": "array", "items": {"type": "integer"}})");
  ExpectSamplesValid(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 4})");
  ExpectSamplesValid(R"({"type": "array", "minItems": 1, "maxItems": 1})", 80);
  ExpectSamplesValid(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
      "items": false})");
  ExpectSamplesValid(R"({"type": "array", "prefixItems": [{"const": "x"}, {"type": "null"}],
      "items": {"type": "boolean"}, "minItems": 1, "maxItems": 5})");
  ExpectSamplesValid(
      R"({"type": "array", "prefixItems": [{"type": "null"}, {"type": "null"}, {"type": "null"}],
      "minItems": 2})",
      80);
  ExpectSamplesValid(R"({"type": "array", "items": {"type": "integer"}, "maxItems": 0})", 20);
}

TEST(JsonSchemaSamples, EnumConst) {
  ExpectSamplesValid(R"({"enum": ["red", "green", 3, null, {"a": [1, "é"]}, "quo\"te\n"]})");
  ExpectSamplesValid(R"({"const": {"k": [true, 1.5]}})", 30);
  ExpectSamplesValid(R"({"type": "string", "enum": ["a", 1, "b"]})", 50);
  ExpectSamplesValid(R"({"type": "integer", "enum": [1, 2.0, 2.5, "x"]})", 50);
}

TEST(JsonSchemaSamples, Combinators) {
  ExpectSamplesValid(R"({"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string", "maxLength": 2}]})");
  ExpectSamplesValid(R"({"oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]})");
  ExpectSamplesValid(R"({"oneOf": [
      {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind", "x"]},
      {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind"]}]})");
  ExpectSamplesValid(R"({"oneOf": [
      {"type": "object", "properties": {"p": {"type": "integer"}}, "required": ["p"]},
      {"type": "object", "properties": {"q": {"type": "integer"}}, "required": ["q"]}]})");
  ExpectSamplesValid(R"({"allOf": [
      {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
      {"$ref": "#/$defs/b"}], "$defs": {"b": {"properties": {"b": {"type": "string"}}, "required": ["b"]}}})");
}

TEST(JsonSchemaSamples, Refs) {
  ExpectSamplesValid(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
      "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"},
      "maxItems": 2}}, "required": ["v"]}}})");
  ExpectSamplesValid(
      R"({"type": "object", "properties": {"x": {"$ref": "#/definitions/s"}}, "required": ["x"],
      "definitions": {"s": {"type": "string", "minLength": 2}}})");
  ExpectSamplesValid(R"({"type": "array", "items": {"$ref": "#"}, "maxItems": 2})", 80);
}

TEST(JsonSchemaSamples, StringLengthsAndFormats) {
  ExpectSamplesValid(R"({"type": "string", "minLength": 2, "maxLength": 5})");
  ExpectSamplesValid(R"({"type": "string", "minLength": 3})");
  ExpectSamplesValid(R"({"type": "string", "maxLength": 0})", 20);
  for (const char* f : {"date", "time", "date-time", "uuid", "ipv4"}) {
    std::string s = std::string(R"({"type": "string", "format": ")") + f + "\"}";
    ExpectSamplesValid(s.c_str(), 120);
  }
}

TEST(JsonSchemaSamples, Patterns) {
  for (const char* p :
       {"^[a-z]{2,4}-\\\\d+$", "ab|cd", "^(?:foo|bar)+$", "^\\\\w+@\\\\w+\\\\.com$",
        "^[^a-z\\\"\\\\\\\\]{1,3}$", "^a.c$", "^x(y|z)?\\\\.$", "^\\\\D\\\\W[\\\\d_]$",
        "^\\\\u00e9+[\\\\x41-\\\\x43]$", "^(?<year>\\\\d{4})$", "b$", "^\\\\n\\\\t\\\\\\\\$"}) {
    std::string s = std::string(R"({"type": "string", "pattern": ")") + p + "\"}";
    ExpectSamplesValid(s.c_str(), 100);
  }
}

TEST(JsonSchemaSamples, IntegerRanges) {
  for (const char* b :
       {R"("minimum": -5, "maximum": 120)", R"("minimum": 0)", R"("maximum": -3)",
        R"("exclusiveMinimum": 9, "exclusiveMaximum": 100)", R"("minimum": 1.5, "maximum": 3.5)",
        R"("minimum": -1234, "maximum": -1000)", R"("minimum": 7, "maximum": 7)",
        R"("minimum": 99, "maximum": 1001)", R"("exclusiveMinimum": -1, "maximum": 0)",
        R"("minimum": 5, "exclusiveMinimum": 5, "maximum": 10)"}) {
    std::string s = std::string(R"({"type": "integer", )") + b + "}";
    ExpectSamplesValid(s.c_str(), 120);
  }
}

TEST(JsonSchemaSamples, NumberRanges) {
  for (const char* b :
       {R"("minimum": 0, "maximum": 1)", R"("exclusiveMinimum": 0, "exclusiveMaximum": 1)",
        R"("minimum": -3)", R"("exclusiveMaximum": -2)", R"("minimum": -10, "exclusiveMaximum": 10)",
        R"("exclusiveMinimum": -1, "exclusiveMaximum": 0)", R"("minimum": 5, "maximum": 5)"}) {
    std::string s = std::string(R"({"type": "number", )") + b + "}";
    ExpectSamplesValid(s.c_str(), 120);
  }
}

TEST(JsonSchemaSamples, NestedDocument) {
  ExpectSamplesValid(R"({"type": "object", "properties": {
      "id": {"type": "string", "format": "uuid"}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "status": {"enum": ["active", "inactive"]}, "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
      "address": {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                  "city": {"type": "string"}}, "required": ["zip"]},
      "score": {"type": "number", "minimum": 0}}, "required": ["id", "age", "address"]})",
                     100);
}

TEST(JsonSchemaReject, HandWritten) {
  const char* range = R"({"type": "integer", "minimum": -5, "maximum": 120})";
  EXPECT_TRUE(Accepts(range, "120"));
  EXPECT_TRUE(Accepts(range, "-5"));
  EXPECT_TRUE(Accepts(range, "0"));
  EXPECT_FALSE(Accepts(range, "121"));
  EXPECT_FALSE(Accepts(range, "-6"));
  EXPECT_FALSE(Accepts(range, "007"));
  EXPECT_FALSE(Accepts(range, "1.0"));
  const char* unit = R"({"type": "number", "exclusiveMinimum": 0, "maximum": 1})";
  EXPECT_TRUE(Accepts(unit, "0.001"));
  EXPECT_TRUE(Accepts(unit, "1.000"));
  EXPECT_FALSE(Accepts(unit, "0"));
  EXPECT_FALSE(Accepts(unit, "0.0"));
  EXPECT_FALSE(Accepts(unit, "1.01"));
  EXPECT_FALSE(Accepts(unit, "-0.5"));
  const char* date = R"({"type": "string", "format": "date"})";
  EXPECT_TRUE(Accepts(date, "\"2024-02-29\""));
  EXPECT_TRUE(Accepts(date, "\"2000-02-29\""));
  EXPECT_FALSE(Accepts(date, "\"1900-02-29\""));
  EXPECT_FALSE(Accepts(date, "\"2023-02-29\""));
  EXPECT_FALSE(Accepts(date, "\"2024-04-31\""));
  EXPECT_FALSE(Accepts(date, "\"2024-13-01\""));
  EXPECT_FALSE(Accepts(R"({"type": "string", "format": "uuid"})", "\"123e4567-e89b-12d3-a456-42661417400\""));
  EXPECT_FALSE(Accepts(R"({"type": "string", "format": "time"})", "\"24:00:00Z\""));
  const char* obj = R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                        "required": ["a"], "additionalProperties": false})";
  EXPECT_TRUE(Accepts(obj, "{\"a\": 1, \"b\": \"x\"}"));
  EXPECT_TRUE(Accepts(obj, "{ \"a\" : 1 }"));
  EXPECT_FALSE(Accepts(obj, "{\"b\": \"x\"}"));
  EXPECT_FALSE(Accepts(obj, "{\"a\": 1, \"c\": 2}"));
  EXPECT_FALSE(Accepts(obj, "{\"a\": 1,}"));
  EXPECT_FALSE(Accepts(obj, "{\"a\": 1, \"a\": 2}"));
  const char* extra = R"({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties":
                          {"type": "boolean"}})";
  EXPECT_TRUE(Accepts(extra, "{\"a\": 1, \"ab\": true}"));
  EXPECT_FALSE(Accepts(extra, "{\"a\": 1, \"a\": true}"));  // a listed key cannot come back as an extra one
  EXPECT_FALSE(Accepts(extra, "{\"ab\": 1}"));
  const char* arr = R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})";
  EXPECT_TRUE(Accepts(arr, "[1, 2]"));
  EXPECT_FALSE(Accepts(arr, "[1]"));
  EXPECT_FALSE(Accepts(arr, "[1,2,3,4]"));
  EXPECT_FALSE(Accepts(arr, "[1,\"x\"]"));
  const char* str = R"({"type": "string", "maxLength": 2})";
  EXPECT_TRUE(Accepts(str, "\"\\u00e9\\ud83d\\ude00\""));  // two code points
  EXPECT_FALSE(Accepts(str, "\"abc\""));
  EXPECT_FALSE(Accepts(R"({"type": "string"})", "\"a\nb\""));     // raw control character
  EXPECT_FALSE(Accepts(R"({"type": "string"})", "\"\\ud800\""));  // unpaired surrogate escape
  EXPECT_FALSE(Accepts(R"({"type": "string"})", "\"\\x41\""));    // not a JSON escape
  EXPECT_FALSE(Accepts(R"({"type": "string", "pattern": "^a+$"})", "\"ab\""));
  EXPECT_TRUE(Accepts(R"({"type": "string", "pattern": "b"})", "\"abc\""));
  EXPECT_FALSE(Accepts(R"({"enum": ["x", "y"]})", "\"z\""));
  EXPECT_FALSE(Accepts(R"({"type": "boolean"})", "true  \n                          "));  // bounded space
}

TEST(JsonSchemaErrors, UnsupportedKeywords) {
  EXPECT_EQ(ErrorOf(R"({"type": "string", "foo": 1})"), "json_schema: unsupported keyword 'foo' at /");
  EXPECT_EQ(ErrorOf(R"({"properties": {"a": {"patternProperties": {}}}})"),
            "json_schema: unsupported keyword 'patternProperties' at /properties/a");
  EXPECT_EQ(ErrorOf(R"({"type": "integer", "multipleOf": 3})"),
            "json_schema: unsupported keyword 'multipleOf' at /");
  EXPECT_EQ(ErrorOf(R"({"items": {"not": {}}})"), "json_schema: unsupported keyword 'not' at /items");
  EXPECT_EQ(ErrorOf(R"({"type": "array", "uniqueItems": true})"),
            "json_schema: unsupported keyword 'uniqueItems' at /");
  EXPECT_EQ(ErrorOf(R"({"type": "array", "uniqueItems": false})"), "ok");
  EXPECT_EQ(ErrorOf(R"({"$defs": {"a~b/c": {"if": true}}, "$ref": "#/$defs/a~0b~1c"})"),
            "json_schema: unsupported keyword 'if' at /$defs/a~0b~1c");
  EXPECT_EQ(ErrorOf(R"({"type": "string", "format": "email"})"),
            "json_schema: unsupported format 'email' at /format");
  EXPECT_EQ(ErrorOf(R"({"type": "string", "pattern": "^(?=a)b$"})"),
            "json_schema: pattern: lookahead '(?=' is unsupported at /pattern");
  EXPECT_EQ(ErrorOf(R"({"type": "string", "pattern": "(a)\\1"})"),
            "json_schema: pattern: the backreference '\\1' is unsupported at /pattern");
  EXPECT_EQ(ErrorOf(R"({"type": "string", "pattern": "a\\b"})"),
            "json_schema: pattern: the word boundary '\\b' is unsupported at /pattern");
  EXPECT_EQ(ErrorOf(R"({"type": "string", "pattern": "a^b"})"),
            "json_schema: pattern: '^' after the start of the pattern is unsupported at /pattern");
  EXPECT_EQ(
      ErrorOf(R"({"type": "string", "pattern": "(a*)*"})"),
      "json_schema: pattern: a repeated group that can match the empty string is unsupported at /pattern");
  EXPECT_EQ(ErrorOf(R"({"type": "number", "minimum": 0.5})"),
            "json_schema: a non-integer 'minimum' for type 'number' is unsupported at /");
  EXPECT_EQ(ErrorOf(R"({"type": "string", "pattern": "a", "maxLength": 3})"),
            "json_schema: combining 'pattern', 'format' and 'minLength'/'maxLength' is unsupported at /");
  EXPECT_EQ(ErrorOf(R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})"),
            "json_schema: 'oneOf' branches 0 and 1 may match the same value (use anyOf, or tell them apart "
            "by type, "
            "const/enum or required properties) at /oneOf");
  EXPECT_EQ(ErrorOf(R"({"allOf": [{"type": "string"}]})"),
            "json_schema: 'allOf' is supported only for object schemas with properties and required (not "
            "'type') at "
            "/allOf/0");
  EXPECT_EQ(ErrorOf(R"({"anyOf": [{"type": "string"}], "minLength": 2})"),
            "json_schema: keyword 'minLength' beside 'anyOf' is unsupported at /");
}

TEST(JsonSchemaErrors, MalformedSchemas) {
  EXPECT_EQ(ErrorOf(R"(3)"), "json_schema: a schema must be an object or a boolean at /");
  EXPECT_EQ(ErrorOf(R"({"properties": {"a": "x"}})"),
            "json_schema: a schema must be an object or a boolean at /properties/a");
  EXPECT_EQ(ErrorOf(R"({"required": 3})"),
            "json_schema: 'required' must be an array of strings at /required");
  EXPECT_EQ(ErrorOf(R"({"minItems": -1})"),
            "json_schema: 'minItems' must be a non-negative integer at /minItems");
  EXPECT_EQ(ErrorOf(R"({"type": "strin"})"), "json_schema: unknown type \"strin\" at /type");
  EXPECT_EQ(ErrorOf(R"({"$ref": "#/$defs/missing"})"),
            "json_schema: $ref '#/$defs/missing' points to nothing at /");
  EXPECT_EQ(ErrorOf(R"({"$ref": "http://x/y.json"})"),
            "json_schema: remote $ref 'http://x/y.json' is unsupported at /");
  EXPECT_EQ(ErrorOf(R"(false)"), "json_schema: the schema can never be satisfied at /");
  EXPECT_EQ(ErrorOf(R"({"type": "integer", "minimum": 5, "maximum": 4})"),
            "json_schema: no integer satisfies the minimum/maximum at /");
  EXPECT_EQ(ErrorOf(R"({"type": "array", "minItems": 3, "maxItems": 2})"),
            "json_schema: no array satisfies minItems/maxItems/prefixItems/items at /");
  EXPECT_EQ(ErrorOf(R"({"type": "string", "maxLength": 1000000})"),
            "json_schema: minLength/maxLength above 100000 is unsupported at /");
  EXPECT_EQ(ErrorOf(R"({"properties": {"a": false}, "required": ["a"]})"),
            "json_schema: required property 'a' can never be satisfied at /properties/a");
  EXPECT_NE(ErrorOf(R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})").find("left recursion"),
            std::string::npos);
  auto bad_prefix = JsonSchemaToGbnf(OJ::parse("{}"), "a_b");
  EXPECT_FALSE(bad_prefix.ok());
}

TEST(JsonSchemaNaming, PrefixesCombine) {
  auto a = JsonSchemaToGbnf(OJ::parse(R"({"type": "object", "properties": {"x": {"type": "integer"}}})"),
                            "tool-a");
  auto b = JsonSchemaToGbnf(OJ::parse(R"({"type": "array", "items": {"type": "string"}})"), "tool-b");
  ASSERT_TRUE(a.ok() && b.ok());
  for (const std::string* text : {&*a, &*b}) {
    std::string prefix = text == &*a ? "tool-a" : "tool-b";
    size_t pos = 0;
    while (pos < text->size()) {  // every rule name is the prefix or prefix-...
      size_t eol = text->find('\n', pos);
      std::string name = text->substr(pos, text->find(" ::=", pos) - pos);
      EXPECT_TRUE(name == prefix || name.rfind(prefix + "-", 0) == 0) << name;
      pos = eol + 1;
    }
  }
  std::string combined = "root ::= tool-a | tool-b\n" + *a + *b;
  auto g = ParseGbnf(combined);
  ASSERT_TRUE(g.ok()) << g.status().message();
  Matcher m(*g);
  EXPECT_TRUE(m.Accept("[\"q\"]") && m.CanEnd());
  auto obj = ParseGbnf(JsonObjectGbnf("obj"), "obj");
  ASSERT_TRUE(obj.ok());
  Matcher o(*obj);
  EXPECT_TRUE(o.Accept("{\"k\": [1, {\"z\": null}]}") && o.CanEnd());
  Matcher o2(*obj);
  EXPECT_FALSE(o2.Accept("[1]"));
}

}  // namespace
}  // namespace lazyslot::grammar
