// Constrained sampling: a grammar (GBNF text, or a JSON schema turned into GBNF) compiled into a pushdown
// automaton over Unicode code points, and an incremental matcher that tells which vocabulary tokens keep the
// output a valid prefix. Works on the tokens' raw bytes, so a token may end or start inside a UTF-8 sequence.
// Depends only on core: the engine turns its tokenizer into a VocabIndex.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace lazyslot::grammar {

struct CompiledGrammar;  // rules as code-point elements (grammar_ir.h)

// An immutable compiled grammar; shared by every matcher that uses it (thread-safe to share).
using GrammarPtr = std::shared_ptr<const CompiledGrammar>;

// Parses llama.cpp's GBNF: `name ::= alternatives`, "literals" with \n \r \t \" \\ \[ \] \xHH \uHHHH
// \UHHHHHHHH escapes (\xHH is a code point, as in llama.cpp), [classes] with ranges and [^negation], `.`,
// (groups), `|`, `*` `+` `?` `{m}` `{m,}` `{m,n}`, # comments; newlines inside parentheses and after `|`.
// Errors are InvalidArgument "grammar: line L, column C: ..." (1-based, columns in bytes): syntax, an
// undefined rule (at its first use), no `root` rule (at the end of the text), a rule defined twice, left
// recursion (also a repetition of something that can match empty), counts above 100000, nesting deeper
// than 128, more than 4M elements in all.
Result<GrammarPtr> ParseGbnf(std::string_view text, std::string_view root = "root");

// A JSON schema as GBNF text. Every rule it writes is named `prefix` (the start rule) or `prefix-...`, so
// several schemas can be combined into one grammar (prefixes must differ and not be `other-prefix-...`).
// A keyword it cannot enforce is InvalidArgument naming the keyword and its JSON pointer, e.g.
// "json_schema: unsupported keyword 'patternProperties' at /properties/a". Every sentence of the grammar
// validates against the schema (the grammar may allow less than the schema does):
//  - type (one or an array; "integer" is written without fraction or exponent), enum, const (with "type"
//    beside them, values of other types are dropped);
//  - properties in schema order, required ones mandatory; additionalProperties false / true / a schema;
//    absent, extra keys are allowed only when no properties are listed (llama.cpp's choice: a model sticks
//    to the listed keys). Extra keys are typed without escapes and never spell a listed key;
//  - items, prefixItems (or draft-4 items arrays), minItems / maxItems (at most 100000);
//  - anyOf; oneOf is generated as anyOf, so it is accepted only when its branches provably exclude each
//    other (different types, disjoint const/enum, a required property with disjoint const/enum values, or
//    a required property the other branch never has), otherwise an error; allOf of object schemas
//    (properties, required) is merged;
//  - $ref to "#", "#/$defs/..", "#/definitions/..", any local JSON pointer (recursion allowed);
//  - string minLength / maxLength (code points, at most 100000), pattern (ECMA-262 subset: literals, .,
//  classes,
//    \d \w \s \D \W \S, escapes, groups, (?:..), named groups, |, * + ? {m} {m,} {m,n}, ^ and $ at the ends;
//    unanchored ends match anything; lookaround, backreferences, \b, \p are errors), format date / time /
//    date-time / uuid / ipv4 (one of pattern, format, lengths per schema);
//  - integer minimum / maximum / exclusive* exactly (digit-range rules; bounds within +-1e18); number bounds
//    exactly when they are integers (then no exponent is generated), a fractional bound is an error.
// Annotations (title, description, $schema, $id, $comment, default, examples, deprecated, readOnly,
// writeOnly, $defs, definitions) and "uniqueItems": false are accepted. Whitespace between tokens is
// bounded: nothing, " ", or a newline and up to 20 spaces or tabs.
Result<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema, std::string_view prefix = "root");

// Any JSON object (response_format json_object), with the same naming rule.
std::string JsonObjectGbnf(std::string_view prefix = "root");

// `"..."`: text as a GBNF literal, with escapes for `"`, `\` and control characters; other UTF-8 is copied.
std::string GbnfLiteral(std::string_view utf8);

// The vocabulary as bytes, indexed once per model (a trie over the pieces). pieces[id] is the token's text
// as raw bytes; an empty piece (control tokens) is never allowed while a grammar is active.
class VocabIndex {
 public:
  explicit VocabIndex(std::vector<std::string> pieces);
  ~VocabIndex();
  VocabIndex(const VocabIndex&) = delete;
  VocabIndex& operator=(const VocabIndex&) = delete;

  int32_t size() const;
  const std::string& piece(int32_t id) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Where one output stands in a grammar. Cheap to copy (shared pointers). A matcher and its copies share a
// cache of parser states (bounded: it is dropped past a few thousand states), guarded by a mutex, so copies
// may be used from different threads. End of generation (EOS) is the caller's: sample it only when CanEnd().
//
// The cost of Accept and FillMask does not grow with the length of the output for the grammars the JSON
// schema compiler writes, nor for most hand-written ones. A recursive rule with several ways to match the same
// text (`root ::= "a" root "b" | "a" root "c" | ...`) is different: each byte read can add parser stacks, each
// deeper than the last, so one step may come to cost seconds. The parser work is therefore bounded twice:
//  - one parser state holds at most 2^18 stack elements in all (JSON nested a thousand deep needs a few
//    tens of thousands), which bounds each step;
//  - a matcher and its copies share an allowance of 2^23 units (a stack element expanded or copied, a new
//    state ~256), which RefillWork() renews (a sampler calls it once per token): this bounds a whole mask
//    (an enum of 3,000 words costs ~0.85 M on its first mask over a 152k vocabulary).
// Past either, the lineage is Exhausted() for good: every later Accept and Allows is false and FillMask
// allows nothing, so the caller ends the output with an error instead of stalling everyone else's tokens.
class Matcher {
 public:
  explicit Matcher(GrammarPtr grammar);
  ~Matcher();
  Matcher(const Matcher&);
  Matcher& operator=(const Matcher&);
  Matcher(Matcher&&) noexcept;
  Matcher& operator=(Matcher&&) noexcept;

  // Advances over `bytes`. Returns false and leaves the state unchanged when they are not a valid
  // continuation.
  bool Accept(std::string_view bytes);
  // Whether `token`'s bytes would be accepted now (the sampler's fast path: check the pick first).
  bool Allows(const VocabIndex& vocab, int32_t token) const;
  // allowed[t] = 1 when token t's bytes keep the output a valid prefix, else 0 (resized to vocab.size()).
  void FillMask(const VocabIndex& vocab, std::vector<uint8_t>* allowed) const;
  // The output so far is a complete sentence of the grammar (end of generation may be sampled).
  bool CanEnd() const;
  // Complete and no byte can follow: generation must end.
  bool MustEnd() const;
  // The fewest bytes that complete the grammar from here (0 when CanEnd; SIZE_MAX when nothing can).
  // A lower bound on the tokens a complete answer still needs, when the vocabulary has one token per byte.
  size_t MinBytesToEnd() const;
  // Renews the parser-work allowance this matcher shares with its copies (see above).
  void RefillWork();
  // The allowance ran out: this matcher and its copies refuse every byte from now on.
  bool Exhausted() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lazyslot::grammar
