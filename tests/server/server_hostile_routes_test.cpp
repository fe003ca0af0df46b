// The hostile-request table (server_hostile_test.cpp) for every route added since it was written: Anthropic's
// /v1/messages and count_tokens, OpenAI's /v1/responses and input_tokens, /infill, /apply-template,
// /tokenize and /detokenize, the TEI routes /embed and /embed_all, rerank and its aliases, the router's
// /models/load and /models/unload, slot actions (with corrupt and truncated slot files), /tools and
// /cors-proxy. Each case gets its precise 4xx with an error body in its route's API shape (OpenAI, Anthropic
// or TEI) and a message naming the field and the fault; after every case the server answers the same greedy
// requests with exactly what they gave before the first case.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "server_hostile_util.h"

namespace lazyslot::testing {
namespace {

using namespace hostile;  // NOLINT: the suites' shared vocabulary

namespace fs = std::filesystem;

constexpr char kModel[] = "models/qwen3-vocab-tiny-q8_0.gguf";  // real Qwen3 tokenizer, template, FIM tokens
constexpr char kReranker[] = "models/bert-rerank-tiny-f32.gguf";
constexpr char kStories[] = "models/stories260K.gguf";

const std::string kNotJson = "not valid JSON";
const std::string kNesting = "nests arrays/objects more than 128 levels deep";

// A greedy request replayed after every case, and how to read its text.
struct Probe {
  std::string path;
  json body;
  std::function<std::string(const json&)> text;
};

std::string ChatText(const json& r) {
  if (!r.is_object() || !r.contains("choices") || r["choices"].empty()) return "<no choices: " + r.dump() + ">";
  const json& c = r["choices"][0];
  return c.contains("message") ? c["message"]["content"].get<std::string>() : c["text"].get<std::string>();
}

// Runs `cases` against `srv`, each followed by `probes`, whose answers must equal those before the first case.
void RunTable(ServerProcess& srv, const std::vector<Case>& cases, const std::vector<Probe>& probes,
              const char* label) {
  std::vector<std::string> expected;
  for (const Probe& p : probes) {
    const HttpResult r = srv.Post(p.path, p.body);
    ASSERT_EQ(r.status, 200) << p.path << ": " << r.body;
    expected.push_back(p.text(r.Json()));
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (const Case& k : cases) {
    RunCase(srv, k);
    ASSERT_TRUE(srv.Running()) << "the server died on '" << k.name << "'; log:\n" << srv.Log();
    for (size_t i = 0; i < probes.size(); ++i) {
      const HttpResult r = srv.Post(probes[i].path, probes[i].body);
      EXPECT_EQ(r.status, 200) << "after " << k.name << ": " << r.body;
      EXPECT_EQ(probes[i].text(r.Json()), expected[i]) << "after " << k.name << " (" << probes[i].path << ")";
    }
  }
  // No client mistake was answered 500 (a 501 names a feature this server was not started with).
  const std::string metrics = srv.Get("/metrics").body;
  EXPECT_EQ(metrics.find("status=\"500\""), std::string::npos) << metrics;
  EXPECT_EQ(srv.Get("/health").status, 200);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[hostile-routes] %s: %zu cases, %zu probes after each, in %.1f s\n", label, cases.size(),
              probes.size(), secs);
}

// The body-level faults every JSON route must refuse the same way; `shape` and `status400` (422 for TEI)
// follow the route's API.
std::vector<Case> BodyFaults(const std::string& cat, const std::string& path, Shape shape, int status400 = 400) {
  return {
      {cat, "empty body", "POST", path, kJson, Text(""), status400, "the request body is empty", {}, shape},
      {cat, "truncated JSON", "POST", path, kJson, Text(R"({"a": [)"), status400, kNotJson, {}, shape},
      {cat, "JSON array body", "POST", path, kJson, Text("[1, 2]"), status400, "must be a JSON object", {},
       shape},
      {cat, "invalid UTF-8 byte", "POST", path, kJson, Text("{\"model\": \"caf\xff\"}"), status400, "UTF-8", {},
       shape},
      {cat, "unpaired surrogate", "POST", path, kJson, Text(R"({"model": "\ud800"})"), status400, "surrogate",
       {}, shape},
      {cat, "100,000 nested arrays", "POST", path, kJson, [] { return Nested(100000); }, status400, kNesting,
       {}, shape},
      {cat, "text/plain", "POST", path, "text/plain", Text("{}"), 415, "Content-Type 'text/plain'", {},
       shape},
      {cat, "form-urlencoded", "POST", path, "application/x-www-form-urlencoded", Text("{}"), 415,
       "application/json", {}, shape},
  };
}

// --- /v1/messages, count_tokens, /v1/responses, input_tokens, /infill, /apply-template, /tokenize, TEI,
// slot actions, /tools and /cors-proxy on one server.

json Anthropic(json extra = json::object()) {
  json j = {{"model", "m"}, {"max_tokens", 2}, {"messages", Msgs("hi")}};
  j.update(extra);
  return j;
}
json Responses(json extra = json::object()) {
  json j = {{"input", "hi"}, {"max_output_tokens", 2}};
  j.update(extra);
  return j;
}
json Infill(json extra = json::object()) {
  json j = {{"input_prefix", "def f(x):\n"}, {"input_suffix", "\n    return y\n"}, {"n_predict", 2}};
  j.update(extra);
  return j;
}

std::vector<Case> AnthropicCases() {
  const std::string msg = "/v1/messages", count = "/v1/messages/count_tokens";
  const Shape a = Shape::kAnthropic;
  std::vector<Case> c = BodyFaults("messages", msg, a);
  for (Case& k : BodyFaults("count_tokens", count, a)) c.push_back(std::move(k));
  const std::vector<Case> more = {
      {"messages", "unknown field", "POST", msg, kJson, Body(Anthropic({{"max_token", 3}})), 400,
       "max_token: unknown field", {}, a},
      {"messages", "max_tokens missing", "POST", msg, kJson, Body({{"model", "m"}, {"messages", Msgs("hi")}}),
       400, "max_tokens: is required", {}, a},
      {"messages", "max_tokens a string", "POST", msg, kJson, Body(Anthropic({{"max_tokens", "5"}})), 400,
       "max_tokens: expected an integer, got string", {}, a},
      {"messages", "max_tokens 0", "POST", msg, kJson, Body(Anthropic({{"max_tokens", 0}})), 400,
       "max_tokens: must be between 1 and 2147483647, got 0", {}, a},
      {"messages", "max_tokens 1e30", "POST", msg, kJson, Body(Anthropic({{"max_tokens", 1e30}})), 400,
       "max_tokens: must be between 1 and 2147483647", {}, a},
      {"messages", "model missing", "POST", msg, kJson, Body({{"max_tokens", 2}, {"messages", Msgs("hi")}}),
       400, "model: is required", {}, a},
      {"messages", "messages a string", "POST", msg, kJson, Body(Anthropic({{"messages", "hi"}})), 400,
       "messages: expected a list of messages, got string", {}, a},
      {"messages", "unknown role", "POST", msg, kJson,
       Body(Anthropic({{"messages", {{{"role", "wizard"}, {"content", "x"}}}}})), 400,
       "messages[0].role: 'wizard' is not a role", {}, a},
      {"messages", "image block", "POST", msg, kJson,
       Body(Anthropic({{"messages",
                        {{{"role", "user"},
                          {"content", {{{"type", "image"}, {"source", {{"type", "base64"}}}}}}}}}})),
       400, "messages[0].content[0].type: 'image' is not supported", {}, a},
      {"messages", "tool_result for no tool_use", "POST", msg, kJson,
       Body(Anthropic({{"messages",
                        {{{"role", "user"},
                          {"content", {{{"type", "tool_result"}, {"tool_use_id", "nope"}, {"content", "1"}}}}}}}})),
       400, "'nope' matches no tool_use block", {}, a},
      {"messages", "system a number", "POST", msg, kJson, Body(Anthropic({{"system", 5}})), 400,
       "system: expected a string or a list of text blocks, got integer", {}, a},
      {"messages", "temperature a string", "POST", msg, kJson, Body(Anthropic({{"temperature", "hot"}})), 400,
       "temperature: expected a number", {}, a},
      {"messages", "temperature -1", "POST", msg, kJson, Body(Anthropic({{"temperature", -1}})), 400,
       "temperature: must be between 0 and 1000000, got -1", {}, a},
      {"messages", "stream a string", "POST", msg, kJson, Body(Anthropic({{"stream", "yes"}})), 400,
       "stream: expected a boolean", {}, a},
      {"messages", "10,000 stop_sequences", "POST", msg, kJson,
       [] { return Anthropic({{"stop_sequences", std::vector<std::string>(10000, "zz")}}).dump(); }, 400,
       "stop_sequences: at most 32 stop sequences, got 10000", {}, a},
      {"messages", "tool without input_schema object", "POST", msg, kJson,
       Body(Anthropic({{"tools", {{{"name", "f"}, {"input_schema", 7}}}}})), 400,
       "tools[0].input_schema: expected a JSON schema object, got integer", {}, a},
      {"messages", "prompt longer than the context", "POST", msg, kJson,
       Body(Anthropic({{"messages", Msgs(Words(300))}})), 400, "prompt is too long: 610 tokens > 127 maximum", {},
       a},
      // Answered before routing by the server's error hook, in Anthropic's shape too.
      {"messages", "10 MB body", "POST", msg, kJson,
       [] { return Anthropic({{"messages", Msgs(std::string(10u << 20, 'a'))}}).dump(); }, 413,
       "larger than the server's limit of 8 MiB", {}, a},
      {"messages", "GET", "GET", msg, kNoType, nullptr, 404, "no route for GET /v1/messages", {}, a},
      {"count_tokens", "max_tokens is not a count_tokens field", "POST", count, kJson,
       Body(Anthropic()), 400, "max_tokens: unknown field", {}, a},
      {"count_tokens", "messages missing", "POST", count, kJson, Body({{"model", "m"}}), 400,
       "messages: is required", {}, a},
      {"count_tokens", "content an object", "POST", count, kJson,
       Body({{"model", "m"}, {"messages", {{{"role", "user"}, {"content", {{"x", 1}}}}}}}), 400,
       "messages[0].content: expected a string or a list of content blocks, got object", {}, a},
  };
  c.insert(c.end(), more.begin(), more.end());
  return c;
}

std::vector<Case> ResponsesCases() {
  const std::string resp = "/v1/responses", count = "/v1/responses/input_tokens";
  std::vector<Case> c = BodyFaults("responses", resp, Shape::kOpenAi);
  for (Case& k : BodyFaults("input_tokens", count, Shape::kOpenAi)) c.push_back(std::move(k));
  const std::vector<Case> more = {
      {"responses", "unknown field", "POST", resp, kJson, Body(Responses({{"max_tokens", 3}})), 400,
       "max_tokens: unknown field"},
      {"responses", "input missing", "POST", resp, kJson, Body({{"max_output_tokens", 2}}), 400,
       "input: is required"},
      {"responses", "input a number", "POST", resp, kJson, Body(Responses({{"input", 5}})), 400,
       "input: expected a string or a list of items, got integer"},
      {"responses", "input item of an unknown type", "POST", resp, kJson,
       Body(Responses({{"input", {{{"type", "telepathy"}}}}})), 400,
       "input[0].type: 'telepathy' is not supported"},
      {"responses", "max_output_tokens 0", "POST", resp, kJson, Body(Responses({{"max_output_tokens", 0}})),
       400, "max_output_tokens: must be between 1 and 2147483647, got 0"},
      {"responses", "max_output_tokens 2^63", "POST", resp, kJson,
       Text(R"({"input": "hi", "max_output_tokens": 9223372036854775808})"), 400,
       "max_output_tokens: must be between 1 and 2147483647, got 9223372036854775808"},
      {"responses", "instructions a number", "POST", resp, kJson, Body(Responses({{"instructions", 1}})), 400,
       "instructions: expected a string, got integer"},
      {"responses", "previous_response_id (stateless)", "POST", resp, kJson,
       Body(Responses({{"previous_response_id", "resp_1"}})), 400,
       "previous_response_id: this server is stateless"},
      {"responses", "stream a string", "POST", resp, kJson, Body(Responses({{"stream", "yes"}})), 400,
       "stream: expected a boolean"},
      {"responses", "temperature -1", "POST", resp, kJson, Body(Responses({{"temperature", -1}})), 400,
       "temperature: must be between"},
      {"responses", "text.format of an unknown type", "POST", resp, kJson,
       Body(Responses({{"text", {{"format", {{"type", "xml"}}}}}})), 400,
       "text.format.type: expected \"text\", \"json_object\" or \"json_schema\", got \"xml\""},
      {"responses", "prompt longer than the context", "POST", resp, kJson,
       Body(Responses({{"input", Words(300)}})), 400, "a slot's context holds 128"},
      {"responses", "10 MB body", "POST", resp, kJson,
       [] { return Responses({{"input", std::string(10u << 20, 'a')}}).dump(); }, 413,
       "larger than the server's limit of 8 MiB"},
      {"responses", "GET", "GET", resp, kNoType, nullptr, 404, "no route for GET /v1/responses"},
      {"input_tokens", "input missing", "POST", count, kJson, Body(json::object()), 400, "input: is required"},
      {"input_tokens", "unknown field", "POST", count, kJson, Body(Responses({{"inptu", 1}})), 400,
       "inptu: unknown field"},
  };
  c.insert(c.end(), more.begin(), more.end());
  return c;
}

std::vector<Case> NativeCases() {
  std::vector<Case> c = BodyFaults("infill", "/infill", Shape::kOpenAi);
  for (Case& k : BodyFaults("apply-template", "/apply-template", Shape::kOpenAi)) c.push_back(std::move(k));
  for (Case& k : BodyFaults("tokenize", "/tokenize", Shape::kOpenAi)) c.push_back(std::move(k));
  for (Case& k : BodyFaults("detokenize", "/detokenize", Shape::kOpenAi)) c.push_back(std::move(k));
  const std::vector<Case> more = {
      {"infill", "input_prefix missing", "POST", "/infill", kJson, Body({{"input_suffix", "x"}}), 400,
       "input_prefix: is required"},
      {"infill", "input_suffix a number", "POST", "/infill", kJson, Body(Infill({{"input_suffix", 3}})), 400,
       "input_suffix: expected a string, got integer"},
      {"infill", "input_extra an object", "POST", "/infill", kJson, Body(Infill({{"input_extra", {{"a", 1}}}})),
       400, "input_extra: expected a list"},
      {"infill", "input_extra chunk without text", "POST", "/infill", kJson,
       Body(Infill({{"input_extra", {{{"filename", "a.py"}}}}})), 400, "input_extra[0].text: expected a string"},
      {"infill", "input_extra chunk with an unknown field", "POST", "/infill", kJson,
       Body(Infill({{"input_extra", {{{"text", "x"}, {"lines", 3}}}}})), 400, "input_extra[0].lines: unknown field"},
      {"infill", "unknown field", "POST", "/infill", kJson, Body(Infill({{"input_prefx", "x"}})), 400,
       "input_prefx: unknown field (did you mean 'input_prefix'?)"},
      {"infill", "n_predict a string", "POST", "/infill", kJson, Body(Infill({{"n_predict", "5"}})), 400,
       "n_predict: expected an integer, got string"},
      {"infill", "prefix longer than the context", "POST", "/infill", kJson,
       Body(Infill({{"input_prefix", Words(300)}})), 400, "a slot's context holds 128"},
      {"apply-template", "messages missing", "POST", "/apply-template", kJson, Body(json::object()), 400,
       "messages: is required"},
      {"apply-template", "a message is a number", "POST", "/apply-template", kJson, Body({{"messages", {5}}}),
       400, "messages[0]: expected an object, got integer"},
      {"apply-template", "unknown field", "POST", "/apply-template", kJson,
       Body({{"messages", Msgs("hi")}, {"max_token", 3}}), 400, "max_token: unknown field"},
      // No content: no tokens, as llama-server answers.
      {"tokenize", "content missing", "POST", "/tokenize", kJson, Body(json::object()), 200, "{\"tokens\":[]}"},
      {"tokenize", "add_special a string", "POST", "/tokenize", kJson,
       Body({{"content", "x"}, {"add_special", "yes"}}), 400, "add_special: expected a boolean"},
      {"tokenize", "GET", "GET", "/tokenize", kNoType, nullptr, 404, "no route for GET /tokenize"},
      {"detokenize", "tokens missing", "POST", "/detokenize", kJson, Body(json::object()), 200,
       "{\"content\":\"\"}"},
      {"detokenize", "tokens a nested list", "POST", "/detokenize", kJson, Body({{"tokens", {{1, 2}}}}), 400,
       "tokens[0]: expected an integer, got array"},
  };
  c.insert(c.end(), more.begin(), more.end());
  return c;
}

std::vector<Case> TeiCases() {
  const Shape t = Shape::kTei;
  std::vector<Case> c = BodyFaults("embed", "/embed", t, 422);
  for (Case& k : BodyFaults("embed_all", "/embed_all", t, 422)) c.push_back(std::move(k));
  const std::vector<Case> more = {
      {"embed", "inputs missing", "POST", "/embed", kJson, Body(json::object()), 422, "inputs: is required",
       {}, t},
      {"embed", "inputs empty", "POST", "/embed", kJson, Body({{"inputs", json::array()}}), 400,
       "`inputs` cannot be empty", {}, t},  // TEI's "Empty" is a 400,
      {"embed", "inputs a number", "POST", "/embed", kJson, Body({{"inputs", 5}}), 422,
       "inputs: expected a string, a list of strings", {}, t},
      {"embed", "unknown field", "POST", "/embed", kJson, Body({{"inputs", "x"}, {"normalise", true}}), 422,
       "normalise: unknown field (did you mean 'normalize'?)", {}, t},
      {"embed", "normalize a string", "POST", "/embed", kJson, Body({{"inputs", "x"}, {"normalize", "no"}}),
       422, "normalize: expected a boolean, got string", {}, t},
      {"embed", "dimensions 0", "POST", "/embed", kJson, Body({{"inputs", "x"}, {"dimensions", 0}}), 422,
       "dimensions: must be between 1 and 64, got 0", {}, t},
      {"embed", "truncation_direction Up", "POST", "/embed", kJson,
       Body({{"inputs", "x"}, {"truncate", true}, {"truncation_direction", "Up"}}), 422,
       "truncation_direction: must be \"Right\" or \"Left\"", {}, t},
      {"embed", "prompt_name", "POST", "/embed", kJson, Body({{"inputs", "x"}, {"prompt_name", "query"}}), 422,
       "prompt_name: not supported", {}, t},
      {"embed", "input longer than the context", "POST", "/embed", kJson, Body({{"inputs", Words(300)}}), 422,
       "the input has 602 tokens, too large for a slot's context of 128", {}, t},
      // Answered before routing by the server's error hook, in TEI's shape too.
      {"embed", "10 MB body", "POST", "/embed", kJson,
       [] { return json{{"inputs", std::string(10u << 20, 'a')}}.dump(); }, 413,
       "larger than the server's limit of 8 MiB", {}, t},
      {"embed_all", "normalize is an /embed field", "POST", "/embed_all", kJson,
       Body({{"inputs", "x"}, {"normalize", true}}), 422, "normalize: unknown field", {}, t},
      {"embed_all", "inputs a list of objects", "POST", "/embed_all", kJson, Body({{"inputs", {{{"a", 1}}}}}),
       422, "inputs[0]: expected a string or a list of token ids, got object", {}, t},
  };
  c.insert(c.end(), more.begin(), more.end());
  return c;
}

std::vector<Case> SlotCases() {
  return {
      {"slots", "restore: truncated slot file", "POST", "/slots/0?action=restore", kJson,
       Body({{"filename", "truncated.bin"}}), 400, "(truncated)"},
      {"slots", "restore: garbage slot file", "POST", "/slots/0?action=restore", kJson,
       Body({{"filename", "garbage.bin"}}), 400, "not a lazyslot slot file"},
      {"slots", "restore: empty slot file", "POST", "/slots/1?action=restore", kJson,
       Body({{"filename", "empty.bin"}}), 400, "empty.bin: too short for a header"},
      {"slots", "save: absolute path", "POST", "/slots/0?action=save", kJson, Body({{"filename", "/tmp/x.bin"}}),
       400, "filename"},
      {"slots", "restore: parent directory", "POST", "/slots/0?action=restore", kJson,
       Body({{"filename", "../good.bin"}}), 400, "filename"},
      {"slots", "save: backslash", "POST", "/slots/0?action=save", kJson, Body({{"filename", "a\\b.bin"}}), 400,
       "filename"},
      {"slots", "save: filename a number", "POST", "/slots/0?action=save", kJson, Body({{"filename", 7}}), 400,
       "filename: expected a string, got integer"},
      {"slots", "save: 10 KB filename", "POST", "/slots/0?action=save", kJson,
       Body({{"filename", std::string(10000, 'f')}}), 400,
       "filename: longer than 200 characters"},
      {"slots", "save: malformed JSON", "POST", "/slots/0?action=save", kJson, Text("{\"filename\":"), 400,
       kNotJson},
      {"slots", "erase: malformed JSON body", "POST", "/slots/0?action=erase", kJson, Text("{oops"), 400,
       kNotJson},
      {"slots", "action missing", "POST", "/slots/0", kJson, Body(json::object()), 400,
       "action: must be save, restore or erase, got ''"},
      {"slots", "negative slot id", "POST", "/slots/-1?action=erase", kNoType, Text(""), 404,
       "no route for POST /slots/-1"},
      {"slots", "GET a slot", "GET", "/slots/0", kNoType, nullptr, 404, "no route for GET /slots/0"},
  };
}

std::vector<Case> ToolAndProxyCases() {
  std::vector<Case> c = BodyFaults("tools", "/tools", Shape::kOpenAi);
  const std::vector<Case> more = {
      {"tools", "unknown field", "POST", "/tools", kJson, Body({{"tool", "read_file"}, {"cwd", "/"}}), 400,
       "unknown field 'cwd'"},
      {"tools", "tool a number", "POST", "/tools", kJson, Body({{"tool", 5}}), 400, "tool: required"},
      {"tools", "params a list", "POST", "/tools", kJson, Body({{"tool", "read_file"}, {"params", {1}}}), 400,
       "params: must be an object"},
      {"tools", "stream a string", "POST", "/tools", kJson,
       Body({{"tool", "read_file"}, {"params", {{"path", "note.txt"}}}, {"stream", "yes"}}), 400,
       "stream: must be a boolean"},
      {"tools", "unknown tool", "POST", "/tools", kJson, Body({{"tool", "no_such_tool"}}), 404,
       "unknown tool \"no_such_tool\""},
      // A tool's own refusal is its result (llama-server's shape, for the model to read), not an HTTP error.
      {"tools", "read outside --tools-dir", "POST", "/tools", kJson,
       Body({{"tool", "read_file"}, {"params", {{"path", "../../../../etc/passwd"}}}}), 200,
       "is outside the tools folder"},
      {"tools", "DELETE", "DELETE", "/tools", kNoType, nullptr, 404, "no route for DELETE /tools"},
      {"cors-proxy", "url missing", "GET", "/cors-proxy", kNoType, nullptr, 400, "url: required"},
      {"cors-proxy", "ftp url", "GET", "/cors-proxy?url=ftp%3A%2F%2Fexample.com%2F", kNoType, nullptr, 400,
       "is not an http or https URL"},
      {"cors-proxy", "credentials in the url", "GET", "/cors-proxy?url=http%3A%2F%2Fu%3Ap%40127.0.0.1%2F",
       kNoType, nullptr, 400, "credentials"},
      {"cors-proxy", "7 KB host name", "POST", "/cors-proxy?url=http%3A%2F%2F" + std::string(7000, 'h'), kJson,
       Text("{}"), 400, "url: the host name has 7000 characters; a DNS name has at most 253"},
  };
  c.insert(c.end(), more.begin(), more.end());
  return c;
}

TEST(ServerHostileRoutes, EveryRouteRefusesMalformedRequestsInItsShapeAndStaysCorrect) {
  REQUIRE_SHARED_FILE(kModel);
  const std::string slot_dir = NewScratchFile("hostile-routes-slots");
  const std::string tools_dir = NewScratchFile("hostile-routes-tools");
  fs::create_directories(slot_dir);
  fs::create_directories(tools_dir);
  std::ofstream(tools_dir + "/note.txt") << "a note\n";
  START_SERVER(srv, {"-m", SharedPath(kModel), "-c", "256", "-np", "2", "--embeddings", "--slot-save-path",
                     slot_dir, "--tools", "read_file", "--tools-dir", tools_dir, "--ui-mcp-proxy"});
  // Slot files to refuse: a real save cut in half, garbage, an empty file.
  ASSERT_EQ(srv->Post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 4}}).status, 200);
  const HttpResult saved = srv->Post("/slots/0?action=save", {{"filename", "good.bin"}});
  ASSERT_EQ(saved.status, 200) << saved.body;
  const std::string good = ReadAll(slot_dir + "/good.bin");
  ASSERT_GT(good.size(), 64u);
  std::ofstream(slot_dir + "/truncated.bin", std::ios::binary) << good.substr(0, good.size() / 2);
  std::ofstream(slot_dir + "/garbage.bin", std::ios::binary) << std::string(300, '\x7f');
  std::ofstream(slot_dir + "/empty.bin", std::ios::binary) << "";

  std::vector<Case> cases = AnthropicCases();
  for (auto* more : {&ResponsesCases, &NativeCases, &TeiCases, &SlotCases, &ToolAndProxyCases}) {
    for (Case& k : (*more)()) cases.push_back(std::move(k));
  }
  EXPECT_GE(cases.size(), 150u);
  const std::vector<Probe> probes = {
      {"/v1/chat/completions",
       {{"messages", Msgs("Tell me a story about a cat.")},
        {"temperature", 0},
        {"max_tokens", 8},
        {"ignore_eos", true}},
       ChatText},
      {"/v1/messages",
       {{"model", "m"},
        {"messages", Msgs("Tell me a story about a dog.")},
        {"temperature", 0},
        {"max_tokens", 8}},
       [](const json& r) { return r.is_object() && r.contains("content") ? r["content"].dump() : r.dump(); }},
  };
  RunTable(*srv, cases, probes, "chat server");
  // Nothing was written outside --slot-save-path, and both slots are idle.
  EXPECT_FALSE(fs::exists("/tmp/x.bin"));
  const json slots = srv->Get("/slots").Json();
  ASSERT_TRUE(slots.is_array()) << slots.dump();
  for (const json& s : slots) EXPECT_EQ(s["is_processing"], false) << s.dump();
}

// Routes whose feature the server was not started with: a precise refusal naming the flag, in the route's
// shape (501 is llama-server's answer for a feature this server does not serve; TEI's is 424).
TEST(ServerHostileRoutes, RoutesOfFeaturesNotStartedSayWhichFlag) {
  REQUIRE_SHARED_FILE(kModel);
  START_SERVER(srv, {"-m", SharedPath(kModel), "-c", "256", "-np", "1"});
  struct Off {
    std::string method, path;
    json body;
    int status;
    std::string part;
  };
  const std::vector<Off> offs = {
      {"POST", "/slots/0?action=save", {{"filename", "a.bin"}}, 501, "start the server with --slot-save-path"},
      {"POST", "/slots/0?action=restore", {{"filename", "a.bin"}}, 501, "start the server with --slot-save-path"},
      {"POST", "/models/load", {{"model", "a"}}, 501, "--models-dir"},
      {"POST", "/models/unload", {{"model", "a"}}, 501, "--models-dir"},
      {"POST", "/v1/rerank", {{"query", "q"}, {"documents", {"d"}}}, 501, "--reranking"},
      {"GET", "/tools", nullptr, 403, "--tools"},
      {"POST", "/tools", {{"tool", "read_file"}}, 403, "--tools"},
      {"GET", "/cors-proxy?url=http%3A%2F%2F127.0.0.1%2F", nullptr, 403, "--ui-mcp-proxy"},
  };
  for (const Off& o : offs) {
    const std::string body = o.body.is_null() ? "" : o.body.dump();
    const Reply r = Send(*srv, o.method, o.path, kJson, o.body.is_null() ? nullptr : &body, {});
    ExpectOpenAiError({"off", o.method + " " + o.path, o.method, o.path, kJson, nullptr, o.status, o.part}, r);
  }
  const std::string embed = json{{"inputs", "x"}}.dump();
  const Reply r = Send(*srv, "POST", "/embed", kJson, &embed, {});
  ExpectTeiError({"off", "/embed without --embeddings", "POST", "/embed", kJson, nullptr, 424, "--embeddings"},
                 r);
  EXPECT_EQ(srv->Post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}).status, 200);
}

TEST(ServerHostileRoutes, RerankRoutesRefuseMalformedRequests) {
  REQUIRE_SHARED_FILE(kReranker);
  START_SERVER(srv, {"-m", SharedPath(kReranker), "--rerank", "-c", "128", "-np", "2"});
  const json docs = {"a cat sat on the mat", "stock prices fell", "kittens purr"};
  std::vector<Case> cases;
  for (const std::string path : {"/v1/rerank", "/rerank", "/reranking", "/v1/reranking"}) {
    for (Case& k : BodyFaults("rerank " + path, path, Shape::kOpenAi)) cases.push_back(std::move(k));
  }
  const std::string p = "/v1/rerank";
  const Shape t = Shape::kTei;
  const std::vector<Case> more = {
      {"rerank", "query missing", "POST", p, kJson, Body({{"documents", docs}}), 400, "query: is required"},
      {"rerank", "query a number", "POST", p, kJson, Body({{"query", 1}, {"documents", docs}}), 400,
       "query: expected a string, got integer"},
      {"rerank", "documents missing", "POST", p, kJson, Body({{"query", "q"}}), 400, "documents: is required"},
      {"rerank", "documents empty", "POST", p, kJson, Body({{"query", "q"}, {"documents", json::array()}}), 400,
       "documents: must be a non-empty list"},
      {"rerank", "documents a string", "POST", p, kJson, Body({{"query", "q"}, {"documents", "d"}}), 400,
       "documents: expected a non-empty list of strings, got string"},
      {"rerank", "a document is a number", "POST", p, kJson, Body({{"query", "q"}, {"documents", {"a", 2}}}),
       400, "documents[1]: expected a string"},
      {"rerank", "a document object with an unknown field", "POST", p, kJson,
       Body({{"query", "q"}, {"documents", {{{"txt", "a"}}}}}), 400, "documents[0].txt: unknown field (did you mean 'text'?)"},
      {"rerank", "top_n 0", "POST", p, kJson, Body({{"query", "q"}, {"documents", docs}, {"top_n", 0}}), 400,
       "top_n: must be between 1"},
      {"rerank", "top_n a string", "POST", p, kJson, Body({{"query", "q"}, {"documents", docs}, {"top_n", "2"}}),
       400, "top_n: expected an integer"},
      {"rerank", "return_documents a string", "POST", p, kJson,
       Body({{"query", "q"}, {"documents", docs}, {"return_documents", "yes"}}), 400,
       "return_documents: expected a boolean"},
      {"rerank", "unknown field", "POST", p, kJson, Body({{"query", "q"}, {"documents", docs}, {"topn", 2}}),
       400, "topn: unknown field"},
      {"rerank", "invalid UTF-8 in a document", "POST", p, kJson,
       Text("{\"query\": \"q\", \"documents\": [\"\xc0\xaf\"]}"), 400, "UTF-8"},
      {"rerank", "documents longer than the context", "POST", p, kJson,
       Body({{"query", "q"}, {"documents", {Words(300)}}}), 400,
       "documents[0]: the request exceeds the available context size"},
      {"rerank", "texts and documents together", "POST", "/rerank", kJson,
       Body({{"query", "q"}, {"texts", docs}, {"documents", docs}}), 422,
       "give either documents (Jina/Cohere) or texts (TEI), not both", {}, t},
      {"rerank", "TEI: texts empty", "POST", "/rerank", kJson, Body({{"query", "q"}, {"texts", json::array()}}),
       400, "`texts` cannot be empty", {}, t},
      {"rerank", "TEI: raw_scores a string", "POST", "/rerank", kJson,
       Body({{"query", "q"}, {"texts", docs}, {"raw_scores", "no"}}), 422,
       "raw_scores: expected a boolean, got string", {}, t},
      {"rerank", "TEI: unknown field", "POST", "/rerank", kJson,
       Body({{"query", "q"}, {"texts", docs}, {"return_documents", true}}), 422, "return_documents: unknown field",
       {}, t},
      {"rerank", "GET", "GET", p, kNoType, nullptr, 404, "no route for GET /v1/rerank"},
  };
  cases.insert(cases.end(), more.begin(), more.end());
  const std::vector<Probe> probes = {
      {"/v1/rerank", {{"query", "a cat"}, {"documents", docs}}, [](const json& r) { return r["results"].dump(); }},
  };
  RunTable(*srv, cases, probes, "rerank server");
}

TEST(ServerHostileRoutes, RouterLoadAndUnloadRefuseMalformedRequests) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string dir = NewScratchFile("hostile-models");
  fs::create_directories(dir);
  fs::copy_file(SharedPath(kStories), dir + "/a.gguf");
  fs::copy_file(SharedPath(kStories), dir + "/b.gguf");
  START_SERVER(srv, {"--models-dir", dir, "-c", "256", "-np", "1"});
  std::vector<Case> cases = BodyFaults("load", "/models/load", Shape::kOpenAi);
  for (Case& k : BodyFaults("unload", "/models/unload", Shape::kOpenAi)) cases.push_back(std::move(k));
  const std::vector<Case> more = {
      {"load", "model missing", "POST", "/models/load", kJson, Body(json::object()), 400, "model: is required"},
      {"load", "model a number", "POST", "/models/load", kJson, Body({{"model", 1}}), 400,
       "model: expected a string, got integer"},
      {"load", "unknown field", "POST", "/models/load", kJson, Body({{"model", "a"}, {"force", true}}), 400,
       "force: unknown field"},
      {"load", "unknown model", "POST", "/models/load", kJson, Body({{"model", "zzz"}}), 404,
       "model 'zzz' not found; known models: a, b"},
      {"load", "a path as the model", "POST", "/models/load", kJson, Body({{"model", "../a"}}), 404,
       "model '../a' not found"},
      {"load", "an absolute path as the model", "POST", "/models/load", kJson,
       Body({{"model", SharedPath(kStories)}}), 404, "stories260K"},
      {"load", "10 KB model name", "POST", "/models/load", kJson, Body({{"model", std::string(10000, 'm')}}),
       404, "mmmm"},
      {"unload", "not loaded", "POST", "/models/unload", kJson, Body({{"model", "b"}}), 400,
       "model 'b' is not loaded"},
      {"unload", "unknown model", "POST", "/models/unload", kJson, Body({{"model", "zzz"}}), 404, "zzz"},
      {"load", "GET", "GET", "/models/load", kNoType, nullptr, 404, "no route for GET /models/load"},
      {"route", "chat with an unknown model", "POST", "/v1/chat/completions", kJson,
       Body({{"model", "zzz"}, {"messages", Msgs("hi")}, {"max_tokens", 2}}), 404, "zzz"},
      {"route", "chat with model a number", "POST", "/v1/chat/completions", kJson,
       Body({{"model", 5}, {"messages", Msgs("hi")}, {"max_tokens", 2}}), 400,
       "model: expected a string, got integer"},
  };
  cases.insert(cases.end(), more.begin(), more.end());
  const std::vector<Probe> probes = {
      {"/v1/completions",
       {{"model", "a"}, {"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", 8}, {"ignore_eos", true}},
       ChatText},
  };
  RunTable(*srv, cases, probes, "router");
  // The well-formed load and unload still work after all of it.
  EXPECT_EQ(srv->Post("/models/load", {{"model", "b"}}).status, 200);
  EXPECT_EQ(srv->Post("/models/unload", {{"model", "b"}}).status, 200);
}

}  // namespace
}  // namespace lazyslot::testing
