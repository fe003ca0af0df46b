// GBNF grammars whose sentences are exactly the valid calls of a tool-call format (the role of llama.cpp's
// common_chat_params_init_* grammars), with arguments from each tool's JSON schema via
// grammar::JsonSchemaToGbnf, plus the trigger texts that switch a lazy grammar on.
#include <string>

#include "chat/tool_call_formats.h"
#include "chat/tool_calls.h"
#include "grammar/grammar.h"

namespace lazyslot {
namespace {

using nlohmann::ordered_json;
namespace tci = tool_call_internal;

// A GBNF string literal.
std::string Lit(std::string_view s) { return grammar::GbnfLiteral(s); }

std::string Rule(const std::string& name, const std::string& body) { return name + " ::= " + body + "\n"; }

// Text that never contains "</parameter>": segments that are a non-'<' byte, or a run of '<' + partial
// matches of "/parameter>" ended by a byte that breaks the match; the value may end in a partial match.
// (The value is always followed by "\n</parameter>", so the match cannot span the boundary.)
std::string XmlTextRules() {
  constexpr std::string_view kRest = "/parameter>";  // "</parameter>" after its '<'
  std::string pre;                                   // proper prefixes of kRest: "" .. "/parameter"
  for (size_t k = kRest.size() - 1; k-- > 0;) {
    std::string next = "(";
    next.append(Lit(kRest.substr(k, 1)));
    if (!pre.empty()) next.append(" ").append(pre);
    next.append(")?");
    pre = std::move(next);
  }
  std::string brk;  // a partial match of length k, then a byte that is neither '<' nor kRest[k]
  for (size_t k = kRest.size(); k-- > 0;) {
    std::string next = "[^<";
    next.push_back(kRest[k]);
    next.push_back(']');
    if (!brk.empty()) {
      std::string alt = "(";
      alt.append(next).append(" | ").append(Lit(kRest.substr(k, 1))).append(" ").append(brk).append(")");
      next = std::move(alt);
    }
    brk = std::move(next);
  }
  return Rule("tc-xml-text", "tc-xml-seg* (\"<\" tc-xml-pre)*") +
         Rule("tc-xml-seg", "[^<] | (\"<\" tc-xml-pre)* \"<\" tc-xml-brk") + Rule("tc-xml-pre", pre) +
         Rule("tc-xml-brk", brk);
}

std::vector<std::string> TypesOf(const ordered_json& schema) {
  std::vector<std::string> types;
  auto it = schema.find("type");
  if (it == schema.end()) return types;
  if (it->is_string()) types.push_back(it->get<std::string>());
  if (it->is_array()) {
    for (const auto& t : *it) {
      if (t.is_string()) types.push_back(t.get<std::string>());
    }
  }
  return types;
}

class Builder {
 public:
  Builder(ToolCallFormat format, ToolGrammar* out) : format_(format), out_(out) {}

  // The first schema that cannot be enforced: the request's error, naming the tool (never loosened).
  void Fail(size_t i, const Status& st) {
    if (!error_.ok()) return;
    std::string m = st.message();
    if (m.rfind("json_schema: ", 0) == 0) m.erase(0, 13);
    error_ = InvalidArgument("tools[" + std::to_string(i) + "].function.parameters: " + m);
  }
  const Status& error() const { return error_; }

  // The arguments object of tool i, as JSON.
  std::string JsonArgs(size_t i, const ToolSpec& tool) {
    const std::string prefix = "tool-" + std::to_string(i) + "-args";
    Result<std::string> g = grammar::JsonSchemaToGbnf(tool.parameters, prefix);
    if (g.ok()) {
      rules_ += *g + "\n";
    } else {
      Fail(i, g.status());
    }
    return prefix;
  }

  // Qwen3-Coder: one <parameter=K> block per schema property, in schema order; required ones mandatory.
  std::string XmlParams(size_t i, const ToolSpec& tool) {
    need_xml_text_ = true;
    const std::string base = "tool-" + std::to_string(i);
    auto props = tool.parameters.find("properties");
    if (props == tool.parameters.end() || !props->is_object() || props->empty()) {
      const std::string name = base + "-any";
      rules_ += Rule(name, "(\"<parameter=\" [A-Za-z0-9_.-]+ \">\\n\" tc-xml-text \"\\n</parameter>\\n\")*");
      return name;
    }
    std::vector<std::string> required;
    auto req = tool.parameters.find("required");
    if (req != tool.parameters.end() && req->is_array()) {
      for (const auto& r : *req) {
        if (r.is_string()) required.push_back(r.get<std::string>());
      }
    }
    std::string seq;
    size_t j = 0;
    for (auto it = props->begin(); it != props->end(); ++it, ++j) {
      const std::string pname = base + "-p" + std::to_string(j);
      std::string value = "tc-xml-text";
      const std::vector<std::string> types = it->is_object() ? TypesOf(*it) : std::vector<std::string>{};
      bool textual = types.empty();
      for (const std::string& t : types) textual = textual || t == "string";
      if (!textual) {
        Result<std::string> g = grammar::JsonSchemaToGbnf(*it, pname + "-value");
        if (g.ok()) {
          rules_ += *g + "\n";
          value = pname + "-value";
        } else {
          Fail(i, g.status());
        }
      }
      rules_ +=
          Rule(pname, Lit("<parameter=" + it.key() + ">\n") + " " + value + " " + Lit("\n</parameter>\n"));
      const bool is_required = std::find(required.begin(), required.end(), it.key()) != required.end();
      seq += (seq.empty() ? "" : " ") + pname + (is_required ? "" : "?");
    }
    const std::string name = base + "-params";
    rules_ += Rule(name, seq.empty() ? "\"\"" : seq);
    return name;
  }

  // One call to tool i, in the format's canonical layout.
  std::string Call(size_t i, const ToolSpec& tool) {
    const std::string& n = tool.name;
    switch (format_) {
      case ToolCallFormat::kHermes2Pro:
        return Lit("<tool_call>\n{\"name\": \"" + n + "\", \"arguments\": ") + " " + JsonArgs(i, tool) + " " +
               Lit("}\n</tool_call>");
      case ToolCallFormat::kQwen3CoderXml:
        return Lit("<tool_call>\n<function=" + n + ">\n") + " " + XmlParams(i, tool) + " " +
               Lit("</function>\n</tool_call>");
      case ToolCallFormat::kLlama3x:
      case ToolCallFormat::kLlama3xBuiltinTools:
        return Lit("{\"name\"") + " tc-ws \":\" tc-ws " + Lit("\"" + n + "\"") + " tc-ws \",\" tc-ws " +
               Lit("\"parameters\"") + " tc-ws \":\" tc-ws " + JsonArgs(i, tool) + " tc-ws \"}\"";
      case ToolCallFormat::kMistralNemo:
        return Lit("{\"name\": \"" + n + "\", \"arguments\": ") + " " + JsonArgs(i, tool) + " " +
               Lit(", \"id\": \"") + " [a-zA-Z0-9]{9} \"\\\"}\"";
      case ToolCallFormat::kMagistral:
        return Lit("[TOOL_CALLS]" + n + "[ARGS]") + " " + JsonArgs(i, tool);
      case ToolCallFormat::kDeepSeekR1:
        return Lit(std::string(tci::kDsCallBegin) + "function" + std::string(tci::kDsSep) + n +
                   "\n```json\n") +
               " " + JsonArgs(i, tool) + " " + Lit("\n```" + std::string(tci::kDsCallEnd));
      case ToolCallFormat::kDeepSeekV31:
        return Lit(std::string(tci::kDsCallBegin) + n + std::string(tci::kDsSep)) + " " + JsonArgs(i, tool) +
               " " + Lit(tci::kDsCallEnd);
      case ToolCallFormat::kGeneric:
        return Lit("{\"name\": \"" + n + "\", \"arguments\": ") + " " + JsonArgs(i, tool) + " \"}\"";
      case ToolCallFormat::kFunctionaryV31:
        return Lit("<function=" + n + ">") + " " + JsonArgs(i, tool) + " " + Lit("</function>");
      case ToolCallFormat::kFunctionaryV32:
        return Lit(n + "\n") + " " + JsonArgs(i, tool);
    }
    return "\"\"";
  }

  // The calls rule: one call, or one or more in the layout the template writes between calls.
  std::string Calls(bool parallel) {
    const std::string one = "tc-call";
    auto many = [&](const std::string& sep) { return parallel ? one + " (" + sep + " " + one + ")*" : one; };
    switch (format_) {
      case ToolCallFormat::kHermes2Pro:
      case ToolCallFormat::kQwen3CoderXml:
      case ToolCallFormat::kLlama3x:
      case ToolCallFormat::kLlama3xBuiltinTools:
        return many("\"\\n\"");
      case ToolCallFormat::kFunctionaryV32:
        return many("\">>>\"");
      case ToolCallFormat::kMistralNemo:
        return Lit("[TOOL_CALLS][") + " " + many("\", \"") + " \"]\"";
      case ToolCallFormat::kMagistral:
      case ToolCallFormat::kFunctionaryV31:  // calls back to back, as the template writes them
        return parallel ? one + "+" : one;
      case ToolCallFormat::kDeepSeekR1:
        return Lit(tci::kDsCallsBegin) + " " + many("\"\\n\"") + " " + Lit(tci::kDsCallsEnd);
      case ToolCallFormat::kDeepSeekV31:
        return Lit(tci::kDsCallsBegin) + " " + (parallel ? one + "+" : one) + " " + Lit(tci::kDsCallsEnd);
      case ToolCallFormat::kGeneric:
        // One call may be written either way when several are allowed.
        return (parallel ? Lit("{\"tool_calls\": [") + " " + many("\", \"") + " \"]}\" | " : std::string()) +
               Lit("{\"tool_call\": ") + " " + one + " \"}\"";
    }
    return one;
  }

  std::string Finish(const std::string& root) {
    std::string g = Rule("root", root) + "tc-ws ::= [ \\t\\n]{0,8}\n" + rules_;
    if (need_xml_text_) g += XmlTextRules();
    return g;
  }

  void AddRule(const std::string& name, const std::string& body) { rules_ += Rule(name, body); }
  std::string* rules() { return &rules_; }

 private:
  ToolCallFormat format_;
  ToolGrammar* out_;
  std::string rules_;
  Status error_ = Status::Ok();
  bool need_xml_text_ = false;
};

}  // namespace

Result<ToolGrammar> BuildToolGrammar(ToolCallFormat format, const std::vector<ToolSpec>& tools,
                                     const ToolChoice& choice, bool parallel_tool_calls) {
  if (tools.empty()) return InvalidArgument("tool grammar: no tools were given");
  if (choice.mode == ToolChoiceMode::kNone) return InvalidArgument("tool grammar: tool_choice is \"none\"");
  ToolGrammar out;
  Builder b(format, &out);
  std::string alts;
  for (size_t i = 0; i < tools.size(); ++i) {
    if (choice.mode == ToolChoiceMode::kNamed && tools[i].name != choice.name) continue;
    const std::string name = "tc-call-" + std::to_string(i);
    b.AddRule(name, b.Call(i, tools[i]));
    alts += (alts.empty() ? "" : " | ") + name;
  }
  if (alts.empty()) {
    return InvalidArgument("tool_choice: names function '" + choice.name + "', which is not in tools");
  }
  // Tools left out by a named choice are still checked: a schema that cannot be enforced is refused.
  for (size_t i = 0; i < tools.size(); ++i) {
    if (choice.mode != ToolChoiceMode::kNamed || tools[i].name == choice.name) continue;
    Result<std::string> g = grammar::JsonSchemaToGbnf(tools[i].parameters, "tc-check");
    if (!g.ok()) b.Fail(i, g.status());
  }
  if (!b.error().ok()) return b.error();
  b.AddRule("tc-call", alts);
  const std::string calls = b.Calls(parallel_tool_calls);
  const bool auto_choice = choice.mode == ToolChoiceMode::kAuto;
  std::string root;
  switch (format) {
    case ToolCallFormat::kGeneric:
      // The generic format is JSON from the first byte either way; "auto" adds the plain-answer object.
      out.lazy = false;
      root = "tc-ws (" + calls + ")";
      if (auto_choice) {
        Result<std::string> s = grammar::JsonSchemaToGbnf({{"type", "string"}}, "tc-response");
        if (!s.ok()) return s.status();
        *b.rules() += *s + "\n";
        root = "tc-ws (" + calls + " | " + Lit("{\"response\": ") + " tc-response \"}\")";
      }
      break;
    case ToolCallFormat::kLlama3x:
    case ToolCallFormat::kLlama3xBuiltinTools:
      out.triggers = {"{\"name\""};
      out.triggers_only_at_start = true;
      out.notes.push_back("<|python_tag|> calls (built-in tools, code) are not part of the grammar");
      break;
    case ToolCallFormat::kHermes2Pro:
    case ToolCallFormat::kQwen3CoderXml:
      out.triggers = {"<tool_call>"};
      break;
    case ToolCallFormat::kMistralNemo:
    case ToolCallFormat::kMagistral:
      out.triggers = {"[TOOL_CALLS]"};
      break;
    case ToolCallFormat::kDeepSeekR1:
    case ToolCallFormat::kDeepSeekV31:
      out.triggers = {std::string(tci::kDsCallsBegin)};
      break;
    case ToolCallFormat::kFunctionaryV31:
      out.triggers = {"<function="};
      break;
    case ToolCallFormat::kFunctionaryV32:
      // A call after content: ">>>" and an offered tool's name (">>>all" opens more content, so ">>>" alone
      // cannot be the trigger). A call the output starts with follows the prompt's ">>>" and is not
      // constrained under "auto".
      for (size_t i = 0; i < tools.size(); ++i) {
        if (choice.mode != ToolChoiceMode::kNamed || tools[i].name == choice.name) {
          out.triggers.push_back(">>>" + tools[i].name + "\n");
        }
      }
      break;
  }
  if (format != ToolCallFormat::kGeneric) {
    out.lazy = auto_choice;
    root = calls;
    if (format == ToolCallFormat::kFunctionaryV32) {
      // Lazy sentences start at the trigger's ">>>"; from the first token, the recipient follows the prompt's
      // ">>>" at once (a leading space would not read as a recipient).
      if (auto_choice) root = "\">>>\" " + calls;
    } else if (!auto_choice) {
      // From the first token: at most a little whitespace first, and for Qwen3-style templates the empty
      // think block a non-thinking turn starts with.
      const bool think = format == ToolCallFormat::kHermes2Pro || format == ToolCallFormat::kQwen3CoderXml;
      root = std::string("tc-ws ") + (think ? "(\"<think>\" tc-ws \"</think>\" tc-ws)? " : "") + calls;
    }
  }
  out.gbnf = b.Finish(root);
  return out;
}

}  // namespace lazyslot
