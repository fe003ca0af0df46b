// Reading response_format, json_schema and grammar (see output_constraint.h).
#include "server/generation/output_constraint.h"

#include <string_view>

namespace lazyslot::server {
namespace {

// The grammar library prefixes its messages with "grammar: " or "json_schema: "; the field name replaces it.
Status Named(const std::string& field, const Status& st) {
  std::string m = st.message();
  for (std::string_view p : {"grammar: ", "json_schema: "}) {
    if (m.rfind(p, 0) == 0) {
      m.erase(0, p.size());
      break;
    }
  }
  return Status(st.code(), field + ": " + m);
}

Result<OutputConstraint> FromSchema(const Json& schema, const std::string& field) {
  Result<std::string> gbnf = grammar::JsonSchemaToGbnf(schema, "root");
  if (!gbnf.ok()) return Named(field, gbnf.status());
  return OutputConstraint{std::move(*gbnf), {}, field};
}

Result<OutputConstraint> FromResponseFormat(const Json& rf) {
  if (!rf.is_object()) return InvalidArgument("response_format: expected an object, got " + TypeName(rf));
  auto type = rf.find("type");
  if (type == rf.end() || !type->is_string()) return InvalidArgument("response_format.type: is required");
  const std::string& t = type->get_ref<const std::string&>();
  for (auto it = rf.begin(); it != rf.end(); ++it) {
    const bool known = it.key() == "type" || (t == "json_schema" && it.key() == "json_schema") ||
                       (t == "json_object" && it.key() == "schema");
    if (!known)
      return InvalidArgument("response_format." + it.key() + ": unknown field for type \"" + t + "\"");
  }
  if (t == "text") return OutputConstraint{};
  if (t == "json_object") {
    // llama-server also takes a schema here.
    if (Present(rf, "schema")) return FromSchema(rf.at("schema"), "response_format.schema");
    return OutputConstraint{grammar::JsonObjectGbnf("root"), {}, "response_format"};
  }
  if (t != "json_schema") {
    return InvalidArgument(
        "response_format.type: expected \"text\", \"json_object\" or \"json_schema\", got \"" + t + "\"");
  }
  auto js = rf.find("json_schema");
  if (js == rf.end() || js->is_null()) return InvalidArgument("response_format.json_schema: is required");
  if (!js->is_object()) {
    return InvalidArgument("response_format.json_schema: expected an object, got " + TypeName(*js));
  }
  for (auto it = js->begin(); it != js->end(); ++it) {
    const std::string& k = it.key();
    if (k != "name" && k != "description" && k != "schema" && k != "strict") {
      return InvalidArgument("response_format.json_schema." + k + ": unknown field");
    }
  }
  if (Present(*js, "name") && !js->at("name").is_string()) {
    return InvalidArgument("response_format.json_schema.name: expected a string");
  }
  if (Present(*js, "strict") && !js->at("strict").is_boolean()) {
    return InvalidArgument("response_format.json_schema.strict: expected a boolean");
  }
  // OpenAI's schema is optional; without one the answer is any JSON object.
  if (!Present(*js, "schema"))
    return OutputConstraint{grammar::JsonObjectGbnf("root"), {}, "response_format"};
  return FromSchema(js->at("schema"), "response_format.json_schema.schema");
}

}  // namespace

Result<OutputConstraint> ParseOutputConstraint(const Json& body) {
  std::vector<const char*> given;
  for (const char* f : {"response_format", "json_schema", "grammar"}) {
    if (Present(body, f)) given.push_back(f);
  }
  // response_format {"type": "text"} constrains nothing and combines with anything.
  OutputConstraint out;
  for (const char* f : given) {
    OutputConstraint c;
    if (std::string_view(f) == "response_format") {
      LS_ASSIGN_OR_RETURN(c, FromResponseFormat(body.at(f)));
    } else if (std::string_view(f) == "json_schema") {
      LS_ASSIGN_OR_RETURN(c, FromSchema(body.at(f), "json_schema"));
    } else {
      const Json& g = body.at(f);
      if (!g.is_string()) return InvalidArgument("grammar: expected a string (GBNF), got " + TypeName(g));
      if (g.get_ref<const std::string&>().empty()) continue;
      c = OutputConstraint{g.get<std::string>(), {}, "grammar"};
    }
    if (c.gbnf.empty()) continue;
    if (!out.gbnf.empty()) {
      return InvalidArgument(std::string(f) + ": cannot be combined with " + out.field +
                             " (give one constraint on the output)");
    }
    out = std::move(c);
  }
  return out;
}

Result<grammar::GrammarPtr> CompileConstraint(const OutputConstraint& c) {
  Result<grammar::GrammarPtr> g = grammar::ParseGbnf(c.gbnf, "root");
  if (!g.ok()) {
    // A grammar the client wrote is its error; one we generated from a schema or tools is ours.
    if (c.field == "grammar") return Named("grammar", g.status());
    return Internal(c.field + ": the generated grammar does not compile: " + g.status().message());
  }
  return g;
}

}  // namespace lazyslot::server
