// The request fields that constrain what the model may write, read into one GBNF grammar: OpenAI's
// response_format (json_object, json_schema), llama-server's top-level json_schema and grammar, and (chat)
// the tool-call grammar of tools + tool_choice. Errors are 400s naming the field.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/grammar.h"
#include "server/generation/openai_params.h"

namespace lazyslot::server {

struct OutputConstraint {
  std::string gbnf;                   // empty: free text
  std::vector<std::string> triggers;  // non-empty: lazy, starts at the first trigger in the output
  std::string field;                  // the request field it came from, for error messages
};

// response_format / json_schema / grammar: at most one of them (a second one is a 400, not a silent choice).
Result<OutputConstraint> ParseOutputConstraint(const Json& body);

// Compiles the GBNF; errors name the constraint's field.
Result<grammar::GrammarPtr> CompileConstraint(const OutputConstraint& c);

}  // namespace lazyslot::server
