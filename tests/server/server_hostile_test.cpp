// Issue 6: a table of malformed and abusive requests sent to a real `lazyslot serve`. Each must get its
// precise 4xx with an OpenAI-style error body, the server must stay up, and greedy requests answered
// right after every case must give exactly the text they gave before the first one.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "server_hostile_util.h"

namespace lazyslot::testing {
namespace {

using namespace hostile;  // NOLINT: the suites' shared vocabulary

// Real Qwen3 byte-level BPE tokenizer and Jinja chat template on a tiny random body: cheap to run, and the
// template and tokenizer see every hostile string for real.
constexpr char kModel[] = "models/qwen3-vocab-tiny-q8_0.gguf";
constexpr int kCtxPerSlot = 128;  // -c 256 -np 2: "longer than the context" costs little

json Chat(json extra = json::object()) {
  json j = {{"messages", Msgs("hi")}, {"max_tokens", 2}};
  j.update(extra);
  return j;
}
json Completion(json extra = json::object()) {
  json j = {{"prompt", "Once upon a time"}, {"max_tokens", 2}};
  j.update(extra);
  return j;
}
// One valid tool, for the tool_choice cases.
json Tools() {
  return json::array({{{"type", "function"},
                       {"function",
                        {{"name", "get_weather"},
                         {"parameters",
                          {{"type", "object"},
                           {"properties", {{"city", {{"type", "string"}}}}},
                           {"required", {"city"}}}}}}}});
}

std::vector<Case> HostileCases(const std::string& slot_dir) {
  (void)slot_dir;
  const std::string chat = "/v1/chat/completions", comp = "/v1/completions", emb = "/v1/embeddings";
  const std::string nesting = "nests arrays/objects more than 128 levels deep";
  const std::string not_json = "not valid JSON";
  std::vector<Case> c = {
      // --- The body as a whole: syntax, encoding, size, nesting.
      {"body", "empty body", "POST", chat, kJson, Text(""), 400, "the request body is empty"},
      {"body", "truncated JSON", "POST", chat, kJson, Text(R"({"messages": [)"), 400, not_json},
      {"body", "JSON array instead of an object", "POST", comp, kJson, Text("[1, 2]"), 400,
       "must be a JSON object, got array"},
      {"body", "JSON string instead of an object", "POST", comp, kJson, Text(R"("hello")"), 400,
       "must be a JSON object, got string"},
      {"body", "NaN literal", "POST", comp, kJson, Text(R"({"prompt": "x", "temperature": NaN})"), 400,
       not_json},
      {"body", "Infinity literal", "POST", comp, kJson, Text(R"({"prompt": "x", "top_p": -Infinity})"), 400,
       not_json},
      {"body", "number overflowing a double", "POST", comp, kJson,
       Text(R"({"prompt": "x", "max_tokens": 1e999})"), 400, "number overflow"},
      {"body", "trailing garbage after the object", "POST", comp, kJson, Text(R"({"prompt": "x"} trailing)"),
       400, not_json},
      {"body", "single-quoted strings", "POST", comp, kJson, Text("{'prompt': 'x'}"), 400, not_json},
      {"body", "comment in JSON", "POST", comp, kJson, Text(R"({"prompt": "x" /* hi */})"), 400, not_json},
      {"body", "raw control character in a string", "POST", comp, kJson,
       Text(std::string("{\"prompt\": \"a\x01b\"}")), 400, "control character"},
      {"body", "100,000 nested arrays as the body", "POST", chat, kJson, [] { return Nested(100000); }, 400,
       nesting},
      {"body", "100,000 nested arrays inside a field", "POST", chat, kJson,
       [] {
         return R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"x": )" +
                Nested(100000) + "}}";
       },
       400, nesting},
      {"body", "20,000 nested objects", "POST", comp, kJson,
       [] {
         std::string s;
         for (int i = 0; i < 20000; ++i) s += "{\"a\":";
         return s + "1" + std::string(20000, '}');
       },
       400, nesting},
      {"body", "unclosed nesting, 1 MB of '['", "POST", comp, kJson, [] { return std::string(1 << 20, '['); },
       400, nesting},
      {"body", "10 MB body", "POST", chat, kJson,
       [] {
         return Chat({{"messages", Msgs(std::string(10u << 20, 'a'))}}).dump();
       },
       413, "larger than the server's limit of 8 MiB (--max-body-size)"},
      {"body",
       "10 MB body, chunked transfer encoding",
       "POST",
       comp,
       kJson,
       [] {
         return Completion({{"prompt", std::string(10u << 20, 'a')}}).dump();
       },
       413,
       "larger than the server's limit of 8 MiB",
       {"Transfer-Encoding: chunked"}},
      {"body",
       "gzip Content-Encoding on a plain body",
       "POST",
       comp,
       kJson,
       Body(Completion()),
       400,
       "Content-Encoding: gzip",
       {"Content-Encoding: gzip"}},

      // --- Text encoding: JSON is UTF-8; anything else is refused, never "repaired".
      {"utf8", "invalid UTF-8 byte in a chat message", "POST", chat, kJson,
       Text("{\"messages\": [{\"role\": \"user\", \"content\": \"caf\xff\"}]}"), 400, "UTF-8"},
      {"utf8", "overlong UTF-8 encoding in a prompt", "POST", comp, kJson,
       Text("{\"prompt\": \"\xc0\xaf\", \"max_tokens\": 2}"), 400, "UTF-8"},
      {"utf8", "truncated UTF-8 sequence in /tokenize", "POST", "/tokenize", kJson,
       Text("{\"content\": \"\xe2\x82\"}"), 400, "UTF-8"},
      {"utf8", "invalid UTF-8 in an embedding input", "POST", emb, kJson,
       Text("{\"input\": \"\xed\xa0\x80\"}"), 400, "UTF-8"},
      {"utf8", "unpaired surrogate escape", "POST", comp, kJson, Text(R"({"prompt": "\ud800 x"})"), 400,
       "surrogate"},
      {"utf8", "UTF-16 body with a byte-order mark", "POST", comp, kJson,
       Text(std::string("\xff\xfe{\0\"\0", 6)), 400, not_json},

      // --- Content-Type: JSON only (absent is read as JSON, as llama-server does).
      {"content-type", "text/plain", "POST", chat, "text/plain", Body(Chat()), 415,
       "Content-Type 'text/plain'"},
      {"content-type", "form-urlencoded (curl -d without -H)", "POST", comp,
       "application/x-www-form-urlencoded", Body(Completion()), 415, "application/json"},
      {"content-type", "form-urlencoded over httplib's 8 KiB form limit", "POST", comp,
       "application/x-www-form-urlencoded",
       [] {
         return Completion({{"prompt", std::string(20000, 'a')}}).dump();
       },
       415, "Content-Type 'application/x-www-form-urlencoded'"},
      {"content-type", "multipart/form-data without a boundary", "POST", emb, "multipart/form-data",
       Body({{"input", "x"}}), 415, "Content-Type 'multipart/form-data'"},
      {"content-type", "JSON in latin-1", "POST", "/tokenize", "application/json; charset=iso-8859-1",
       Body({{"content", "x"}}), 415, "charset 'iso-8859-1'"},
      {"content-type", "application/xml", "POST", "/detokenize", "application/xml", Body({{"tokens", {1}}}),
       415, "Content-Type 'application/xml'"},

      // --- Unknown fields (refused so that a typo is not silently ignored).
      {"fields", "typo max_token", "POST", chat, kJson, Body(Chat({{"max_token", 5}})), 400,
       "max_token: unknown field (did you mean 'max_tokens'?)"},
      {"fields", "unknown field on completions", "POST", comp, kJson,
       Body(Completion({{"frobnicate", true}})), 400, "frobnicate: unknown field"},
      {"fields", "unknown field on embeddings", "POST", emb, kJson, Body({{"input", "x"}, {"inptu", "y"}}),
       400, "inptu: unknown field (did you mean 'input'?)"},
      {"fields", "unknown field on /tokenize", "POST", "/tokenize", kJson,
       Body({{"content", "x"}, {"pieces", 1}}), 400, "pieces: unknown field"},
      {"fields", "10,000-byte field name", "POST", comp, kJson,
       Body(Completion({{std::string(10000, 'k'), 1}})), 400, "unknown field"},
      {"fields", "logit_bias over 100", "POST", chat, kJson, Body(Chat({{"logit_bias", {{"15", 101}}}})), 400,
       "logit_bias.15: must be between -100 and 100"},
      {"fields", "logit_bias id outside the vocabulary", "POST", comp, kJson,
       Body(Completion({{"logit_bias", {{"99999999", 1}}}})), 400, "logit_bias.99999999: token id"},
      {"fields", "logit_bias text with a string bias", "POST", chat, kJson,
       Body(Chat({{"logit_bias", {{"no-such-token-text", "1"}}}})), 400,
       "logit_bias.no-such-token-text: expected a number, got string"},
      {"fields", "logit_bias pair of three", "POST", "/completion", kJson,
       Body({{"prompt", "x"}, {"n_predict", 2}, {"logit_bias", {{1, 2, 3}}}}), 400,
       "logit_bias[0]: expected a [token, bias] pair"},
      {"fields", "logit_bias bias true", "POST", "/completion", kJson,
       Body({{"prompt", "x"}, {"n_predict", 2}, {"logit_bias", {{1, true}}}}), 400, "logit_bias[0][1]"},
      {"fields", "tool_choice required without tools", "POST", chat, kJson,
       Body(Chat({{"tool_choice", "required"}})), 400, "tool_choice"},
      {"tools", "tool_choice names a tool not offered", "POST", chat, kJson,
       Body(Chat(
           {{"tools", Tools()}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}})),
       400, "'nope'"},
      {"tools", "tool without a name", "POST", chat, kJson,
       Body(Chat({{"tools", {{{"type", "function"}, {"function", {{"description", "x"}}}}}}})), 400,
       "tools[0].function.name"},
      {"tools", "tool parameters of a bad type", "POST", chat, kJson,
       Body(Chat({{"tools",
                   {{{"type", "function"},
                     {"function",
                      {{"name", "f"},
                       {"parameters", {{"type", "object"}, {"properties", {{"a", {{"type", 7}}}}}}}}}}}},
                  {"tool_choice", "required"}})),
       400, "tools[0]"},
      {"tools", "tool call arguments in history are not JSON", "POST", chat, kJson,
       Body({{"max_tokens", 2},
             {"messages",
              {{{"role", "user"}, {"content", "hi"}},
               {{"role", "assistant"},
                {"content", nullptr},
                {"tool_calls",
                 {{{"id", "c1"},
                   {"type", "function"},
                   {"function", {{"name", "f"}, {"arguments", "{oops"}}}}}}},
               {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "1"}}}}}),
       400, "messages[1].tool_calls[0].function.arguments"},
      {"grammar", "GBNF syntax error names line and column", "POST", chat, kJson,
       Body(Chat({{"grammar", "root ::= \"a\" rest\nrest ::= [a-"}})), 400, "line 2"},
      {"grammar", "GBNF undefined rule", "POST", comp, kJson, Body(Completion({{"grammar", "root ::= foo"}})),
       400, "foo"},
      {"grammar", "unsupported schema keyword", "POST", chat, kJson,
       Body(Chat(
           {{"response_format",
             {{"type", "json_schema"},
              {"json_schema",
               {{"name", "x"}, {"schema", {{"type", "object"}, {"patternProperties", json::object()}}}}}}}})),
       400, "patternProperties"},
      // Three readings of each "a" (session 30): before the matcher's work bound, one step of this grammar
      // took seconds within 300 tokens and stalled every other slot's tokens with it.
      {"grammar", "ambiguous recursive grammar", "POST", comp, kJson,
       Body(Completion({{"max_tokens", 100},
                        {"grammar", R"(root ::= "a" root "b" | "a" root "c" | "a" root "d" | [a]{70} "z")"}})),
       400, "grammar: too ambiguous to follow"},
      {"grammar", "schema and grammar together", "POST", comp, kJson,
       Body(Completion({{"grammar", "root ::= \"a\""}, {"json_schema", {{"type", "string"}}}})), 400,
       "cannot be combined"},
      {"grammar", "unknown response_format field", "POST", chat, kJson,
       Body(Chat({{"response_format", {{"type", "json_object"}, {"strict", true}}}})), 400,
       "response_format.strict"},
      {"fields", "embedding dimensions 0", "POST", emb, kJson, Body({{"input", "x"}, {"dimensions", 0}}), 400,
       "dimensions: must be between 1 and"},
      {"fields", "model is a number", "POST", comp, kJson, Body(Completion({{"model", 7}})), 400,
       "model: expected a string, got integer"},

      // --- Chat messages.
      {"chat", "messages missing", "POST", chat, kJson, Body({{"max_tokens", 2}}), 400,
       "messages: is required"},
      {"chat", "empty messages list", "POST", chat, kJson, Body({{"messages", json::array()}}), 400,
       "messages: must contain at least one message"},
      {"chat", "messages is a string", "POST", chat, kJson, Body({{"messages", "hi"}}), 400,
       "messages: expected a list of messages, got string"},
      {"chat", "a message is a number", "POST", chat, kJson, Body({{"messages", {5}}}), 400,
       "messages[0]: expected an object, got integer"},
      {"chat", "role missing", "POST", chat, kJson, Body({{"messages", {{{"content", "hi"}}}}}), 400,
       "messages[0].role: is required"},
      {"chat", "role is a number", "POST", chat, kJson,
       Body({{"messages", {{{"role", 1}, {"content", "hi"}}}}}), 400,
       "messages[0].role: expected a string, got integer"},
      {"chat", "unknown role", "POST", chat, kJson,
       Body({{"messages", {{{"role", "user"}, {"content", "hi"}}, {{"role", "wizard"}, {"content", "x"}}}}}),
       400, "messages[1].role: 'wizard' is not a role"},
      {"chat", "content is an object", "POST", chat, kJson,
       Body({{"messages", {{{"role", "user"}, {"content", {{"text", "hi"}}}}}}}), 400,
       "messages[0].content: expected a string, a list of parts or null, got object"},
      {"chat", "content part without text", "POST", chat, kJson,
       Body({{"messages", {{{"role", "user"}, {"content", {{{"type", "text"}}}}}}}}), 400,
       "messages[0].content[0].text: expected a string"},
      {"chat", "image part with invalid base64", "POST", chat, kJson,
       Body({{"messages",
              {{{"role", "user"},
                {"content",
                 {{{"type", "image_url"},
                   {"image_url", {{"url", "data:image/png;base64,!!not-base64!!"}}}}}}}}}}),
       400, "messages[0].content[0].type: 'image_url' is not supported"},
      {"chat", "tools is a string", "POST", chat, kJson, Body(Chat({{"tools", "calculator"}})), 400,
       "tools: expected a list, got string"},
      {"chat", "chat_template_kwargs is a list", "POST", chat, kJson,
       Body(Chat({{"chat_template_kwargs", {1}}})), 400,
       "chat_template_kwargs: expected an object, got array"},
      {"chat", "prompt longer than the context", "POST", chat, kJson,
       Body(Chat({{"messages", Msgs(Words(300))}})), 400, "tokens, but a slot's context holds 128"},
      {"chat", "bad parameter with stream: true (JSON error, not SSE)", "POST", chat, kJson,
       Body(Chat({{"stream", true}, {"temperature", -1}})), 400,
       "temperature: must be between 0 and 1000000, got -1"},

      // --- Generation parameters.
      {"params", "temperature is a string", "POST", comp, kJson, Body(Completion({{"temperature", "hot"}})),
       400, "temperature: expected a number, got string"},
      {"params", "negative temperature", "POST", comp, kJson, Body(Completion({{"temperature", -0.5}})), 400,
       "temperature: must be between 0 and 1000000, got -0.5"},
      {"params", "top_p above 1", "POST", comp, kJson, Body(Completion({{"top_p", 2}})), 400,
       "top_p: must be between 0 and 1, got 2"},
      {"params", "fractional top_k", "POST", comp, kJson, Body(Completion({{"top_k", 1.5}})), 400,
       "top_k: expected an integer, got 1.5"},
      {"params", "min_p is an object", "POST", comp, kJson, Body(Completion({{"min_p", {{"a", 1}}}})), 400,
       "min_p: expected a number, got object"},
      {"params", "negative max_tokens", "POST", comp, kJson, Body(Completion({{"max_tokens", -5}})), 400,
       "max_tokens: must be between -1 and 2147483647, got -5"},
      {"params", "max_tokens 0", "POST", comp, kJson, Body(Completion({{"max_tokens", 0}})), 400,
       "max_tokens: must be at least 1"},
      {"params", "max_tokens 1e30", "POST", comp, kJson, Body(Completion({{"max_tokens", 1e30}})), 400,
       "max_tokens: must be between -1 and 2147483647"},
      {"params", "max_tokens beyond uint64", "POST", comp, kJson,
       Text(R"({"prompt": "x", "max_tokens": 184467440737095516150})"), 400,
       "max_tokens: must be between -1 and 2147483647"},
      {"params", "max_tokens 2^63", "POST", comp, kJson,
       Text(R"({"prompt": "x", "max_tokens": 9223372036854775808})"), 400,
       "max_tokens: must be between -1 and 2147483647, got 9223372036854775808"},
      {"params", "max_tokens is a boolean", "POST", comp, kJson, Body(Completion({{"max_tokens", true}})),
       400, "max_tokens: expected an integer, got boolean"},
      {"params", "max_completion_tokens is a string", "POST", chat, kJson,
       Body(Chat({{"max_completion_tokens", "10"}})), 400,
       "max_completion_tokens: expected an integer, got string"},
      {"params", "n above --max-queue", "POST", chat, kJson, Body(Chat({{"n", 9}})), 400,
       "n: 9 choices in one request, but this server queues at most 8 at once (--max-queue)"},
      {"params", "n = 0", "POST", comp, kJson, Body(Completion({{"n", 0}})), 400,
       "n: must be between 1 and 256, got 0"},
      {"params", "best_of = 3", "POST", comp, kJson, Body(Completion({{"best_of", 3}})), 400,
       "best_of: only 1 is supported"},
      {"params", "fractional seed", "POST", comp, kJson, Body(Completion({{"seed", 1.5}})), 400,
       "seed: expected an integer"},
      {"params", "stop list of 10,000 entries", "POST", comp, kJson,
       [] { return Completion({{"stop", std::vector<std::string>(10000, "zz")}}).dump(); }, 400,
       "stop: at most 32 stop strings, got 10000"},
      {"params", "stop string of 100 KB", "POST", chat, kJson,
       [] { return Chat({{"stop", std::string(100000, 's')}}).dump(); }, 400,
       "stop: a stop string may have at most 256 bytes, got 100000"},
      {"params", "stop list with a number", "POST", comp, kJson, Body(Completion({{"stop", {"a", 1}}})), 400,
       "stop[1]: expected a string, got integer"},
      {"params", "stream is a string", "POST", comp, kJson, Body(Completion({{"stream", "yes"}})), 400,
       "stream: expected a boolean, got string"},
      {"params", "stream_options is a list", "POST", chat, kJson, Body(Chat({{"stream_options", {1}}})), 400,
       "stream_options: expected an object, got array"},
      {"params", "logprobs is a string", "POST", chat, kJson, Body(Chat({{"logprobs", "yes"}})), 400,
       "logprobs: expected a boolean, got string"},
      {"params", "top_logprobs 21", "POST", chat, kJson,
       Body(Chat({{"logprobs", true}, {"top_logprobs", 21}})), 400,
       "top_logprobs: must be between 0 and 20, got 21"},
      {"params", "top_logprobs without logprobs", "POST", chat, kJson, Body(Chat({{"top_logprobs", 2}})), 400,
       "top_logprobs: requires logprobs to be true"},
      {"params", "completions logprobs 21", "POST", comp, kJson, Body(Completion({{"logprobs", 21}})), 400,
       "logprobs: must be between 0 and 20, got 21"},
      {"params", "response_format json_schema without a schema object", "POST", chat, kJson,
       Body(Chat({{"response_format", {{"type", "json_schema"}}}})), 400,
       "response_format.json_schema: is required"},
      {"params", "frequency_penalty 5", "POST", comp, kJson, Body(Completion({{"frequency_penalty", 5}})),
       400, "frequency_penalty: must be between -2 and 2, got 5"},
      {"params", "repeat_last_n -2", "POST", comp, kJson, Body(Completion({{"repeat_last_n", -2}})), 400,
       "repeat_last_n: must be between -1"},
      {"params", "echo", "POST", comp, kJson, Body(Completion({{"echo", true}})), 400,
       "echo: echoing the prompt"},

      // --- Completion prompts.
      {"prompt", "prompt missing", "POST", comp, kJson, Body({{"max_tokens", 2}}), 400,
       "prompt: is required"},
      {"prompt", "prompt is a number", "POST", comp, kJson, Body({{"prompt", 42}}), 400,
       "prompt: expected a string, a list of strings"},
      {"prompt", "empty prompt list", "POST", comp, kJson, Body({{"prompt", json::array()}}), 400,
       "prompt: must not be an empty list"},
      {"prompt", "negative token id", "POST", comp, kJson, Body({{"prompt", {1, -3}}}), 400,
       "prompt[1]: must be between 0 and 2147483647, got -3"},
      {"prompt", "token id outside the vocabulary", "POST", comp, kJson, Body({{"prompt", {1, 151936}}}), 400,
       "token id 151936 is outside the vocabulary [0, 151936)"},
      {"prompt", "list mixing strings and objects", "POST", comp, kJson,
       Body({{"prompt", {"a", {{"b", 1}}}}}), 400,
       "prompt[1]: expected a string or a list of token ids, got object"},
      {"prompt", "token prompt longer than the context", "POST", comp, kJson,
       [] { return json{{"prompt", std::vector<int>(1000, 100)}}.dump(); }, 400,
       "the prompt has 1000 tokens, but a slot's context holds 128"},
      {"prompt", "200 KB text prompt", "POST", "/completion", kJson,
       [] { return json{{"prompt", Words(16000)}, {"n_predict", 2}}.dump(); }, 400,
       "tokens, but a slot's context holds 128"},
      {"prompt", "1,000 prompts in one request", "POST", comp, kJson,
       [] { return json{{"prompt", std::vector<std::string>(1000, "x")}}.dump(); }, 400,
       "prompt: 1000 prompts in one request, but this server queues at most 8 at once (--max-queue)"},

      // --- Embeddings.
      {"embeddings", "input missing", "POST", emb, kJson, Body({{"model", "m"}}), 400, "input: is required"},
      {"embeddings", "input is a number", "POST", emb, kJson, Body({{"input", 3.5}}), 400,
       "input: expected a string"},
      {"embeddings", "empty input list", "POST", emb, kJson, Body({{"input", json::array()}}), 400,
       "input: must not be an empty list"},
      {"embeddings", "empty token list", "POST", emb, kJson, Body({{"input", {json::array()}}}), 400,
       "input[0]: must not be an empty list"},
      {"embeddings", "encoding_format base65", "POST", emb, kJson,
       Body({{"input", "x"}, {"encoding_format", "base65"}}), 400,
       "encoding_format: must be \"float\" or \"base64\", got \"base65\""},
      {"embeddings", "encoding_format is a number", "POST", emb, kJson,
       Body({{"input", "x"}, {"encoding_format", 64}}), 400,
       "encoding_format: expected a string, got integer"},
      {"embeddings", "input longer than the context", "POST", emb, kJson,
       Body({{"input", {"short", Words(300)}}}), 400,
       "input[1]: the request exceeds the available context size"},

      // --- /tokenize and /detokenize.
      {"tokenize", "content is a number", "POST", "/tokenize", kJson, Body({{"content", 5}}), 400,
       "content: expected a string, got integer"},
      {"tokenize", "with_pieces is a string", "POST", "/tokenize", kJson,
       Body({{"content", "x"}, {"with_pieces", "yes"}}), 400, "with_pieces: expected a boolean, got string"},
      {"tokenize", "tokens is a string", "POST", "/detokenize", kJson, Body({{"tokens", "1 2 3"}}), 400,
       "tokens: expected a list of token ids, got string"},
      {"tokenize", "negative token", "POST", "/detokenize", kJson, Body({{"tokens", {-1}}}), 400,
       "tokens[0]: must be between 0"},
      {"tokenize", "token 1e10", "POST", "/detokenize", kJson, Body({{"tokens", {1, 1e10}}}), 400,
       "tokens[1]: must be between 0 and 2147483647"},
      {"tokenize", "token outside the vocabulary", "POST", "/detokenize", kJson,
       Body({{"tokens", {1, 999999}}}), 400, "tokens[1]: token id 999999 is outside the vocabulary"},

      // --- Slots.
      {"slots", "slot id is not a number", "POST", "/slots/abc?action=erase", kNoType, Text(""), 404,
       "no route for POST /slots/abc"},
      {"slots", "slot id out of range", "POST", "/slots/7?action=erase", kNoType, Text(""), 400,
       "slot id 7 does not exist"},
      {"slots", "slot id beyond int", "POST", "/slots/99999999999999999999?action=erase", kNoType, Text(""),
       400, "slot id: '99999999999999999999' is not a slot number"},
      {"slots", "unknown action", "POST", "/slots/0?action=explode", kNoType, Text(""), 400,
       "action: must be save, restore or erase, got 'explode'"},
      {"slots", "save without filename", "POST", "/slots/0?action=save", kJson, Body(json::object()), 400,
       "filename: is required"},
      {"slots", "save with a path in the filename", "POST", "/slots/0?action=save", kJson,
       Body({{"filename", "../../etc/passwd"}}), 400, "filename"},
      {"slots", "restore a file that does not exist", "POST", "/slots/0?action=restore", kJson,
       Body({{"filename", "nope.bin"}}), 404, "nope.bin"},
      {"slots", "unknown field in a slot action", "POST", "/slots/0?action=save", kJson,
       Body({{"filename", "a.bin"}, {"file", "b"}}), 400, "file: unknown field"},

      // --- Routes, methods and the HTTP layer.
      {"routes", "unknown route", "GET", "/v2/models", kNoType, nullptr, 404, "no route for GET /v2/models"},
      {"routes", "unknown POST route", "POST", "/v1/nothing", kJson, Body(json::object()), 404,
       "no route for POST /v1/nothing"},
      {"routes", "GET on a POST route", "GET", chat, kNoType, nullptr, 404,
       "no route for GET /v1/chat/completions"},
      {"routes", "PUT on a POST route", "PUT", comp, kJson, Body(Completion()), 404, "no route for PUT"},
      {"routes", "DELETE /health", "DELETE", "/health", kNoType, nullptr, 404, "no route for DELETE /health"},
      {"routes", "20 KB URL", "GET", "/v1/models?q=" + std::string(20000, 'x'), kNoType, nullptr, 414, "URI"},
  };
  return c;
}

// Cases that must be accepted (the edges of the rules above).
std::vector<Case> AcceptedCases() {
  const std::string chat = "/v1/chat/completions", comp = "/v1/completions";
  std::string deepest =
      "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 2, "
      "\"chat_template_kwargs\": {\"x\": " +
      Nested(126) + "}}";  // body object, kwargs object, 126 arrays: 128 levels
  return {
      {"accepted", "no Content-Type header", "POST", comp, kNoType, Body(Completion()), 200, "choices"},
      {"accepted", "charset=UTF-8 in any case", "POST", chat, "application/json; charset=\"UTF-8\"",
       Body(Chat()), 200, "choices"},
      {"accepted", "application/*+json", "POST", comp, "application/vnd.api+json", Body(Completion()), 200,
       "choices"},
      {"accepted", "nesting exactly at the limit", "POST", chat, kJson, Text(deepest), 200, "choices"},
      {"accepted", "duplicate keys: the last wins", "POST", comp, kJson,
       Text(R"({"prompt": "x", "max_tokens": 0, "max_tokens": 3, "ignore_eos": true})"), 200,
       "\"completion_tokens\":3"},
      {"accepted", "NUL and escapes inside a string", "POST", comp, kJson,
       Text(R"({"prompt": "a\u0000b\t\"c\"\ud83d\ude00", "max_tokens": 2})"), 200, "choices"},
      {"accepted", "huge max_tokens stops at the end of the slot", "POST", comp, kJson,
       Body(Completion({{"max_tokens", 2147483647}, {"ignore_eos", true}})), 200,
       "\"finish_reason\":\"length\""},
      {"accepted", "32 stop strings of 256 bytes", "POST", comp, kJson,
       [] {
         return Completion({{"stop", std::vector<std::string>(32, std::string(256, 'q'))}}).dump();
       },
       200, "choices"},
      {"accepted", "metadata fields OpenAI clients send", "POST", chat, kJson,
       Body(
           Chat({{"model", "any"}, {"user", "u1"}, {"tool_choice", "auto"}, {"logit_bias", json::object()}})),
       200, "choices"},
  };
}

// The greedy requests replayed after every case.
struct Probe {
  std::string path;
  json body;
  std::string Text(const json& r) const {
    if (!r.is_object() || !r.contains("choices") || r["choices"].empty())
      return "<no choices: " + r.dump() + ">";
    const json& c = r["choices"][0];
    return c.contains("message") ? c["message"]["content"].get<std::string>() : c["text"].get<std::string>();
  }
};

TEST(ServerHostile, EveryMalformedRequestGetsAPrecise4xxAndTheServerStaysCorrect) {
  REQUIRE_SHARED_FILE(kModel);
  const std::string slot_dir = NewScratchFile("hostile-slots");
  std::filesystem::create_directories(slot_dir);
  START_SERVER(srv, {"-m", SharedPath(kModel), "-c", std::to_string(2 * kCtxPerSlot), "-np", "2",
                     "--embeddings", "--slot-save-path", slot_dir, "--max-queue", "8"});
  const auto t0 = std::chrono::steady_clock::now();

  const std::vector<Probe> probes = {
      {"/v1/chat/completions",
       {{"messages", Msgs("Tell me a story about a cat.")},
        {"temperature", 0},
        {"max_tokens", 8},
        {"ignore_eos", true}}},
      {"/v1/completions",
       {{"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", 8}, {"ignore_eos", true}}},
  };
  std::vector<std::string> expected;
  for (const Probe& p : probes) {
    const HttpResult r = srv->Post(p.path, p.body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.Json()["usage"]["completion_tokens"], 8) << r.body;
    expected.push_back(p.Text(r.Json()));
  }
  auto check_probes = [&](const std::string& after) {
    for (size_t i = 0; i < probes.size(); ++i) {
      const HttpResult r = srv->Post(probes[i].path, probes[i].body);
      EXPECT_EQ(r.status, 200) << "after " << after << ": " << r.body;
      EXPECT_EQ(probes[i].Text(r.Json()), expected[i]) << "after " << after << " (" << probes[i].path << ")";
    }
  };

  std::vector<Case> cases = HostileCases(slot_dir);
  const size_t n_hostile = cases.size();
  EXPECT_GE(n_hostile, 60u);
  for (Case& k : AcceptedCases()) cases.push_back(std::move(k));
  for (const Case& k : cases) {
    const std::string body = k.body ? k.body() : "";
    const Reply r = Send(*srv, k.method, k.path, k.content_type, k.body ? &body : nullptr, k.headers);
    if (k.status == 200) {
      SCOPED_TRACE(k.category + " / " + k.name);
      EXPECT_EQ(r.status, 200) << r.body.substr(0, 500);
      EXPECT_NE(r.body.find(k.message_part), std::string::npos) << r.body.substr(0, 500);
    } else {
      ExpectOpenAiError(k, r);
    }
    ASSERT_TRUE(srv->Running()) << "the server died on '" << k.name << "'; log:\n" << srv->Log();
    check_probes(k.name);
  }

  // Request lines cpp-httplib 0.11 cannot parse (unknown method, no path, bad version) get a 400 naming the
  // request line while the client keeps its side open. When the client half-closes at once, the library may
  // write nothing (it skips the reply once it sees end of file, a race on loopback): then either reply is
  // fine, and bytes that never form a line (a TLS hello) get none. The server must carry on in every case.
  const std::vector<std::string> unparseable = {"HELLO\r\n\r\n", "GET\r\n\r\n",
                                                "GET /health HTTP/9.9\r\n\r\n"};
  auto expect_line_error = [](const Reply& r, const std::string& raw) {
    EXPECT_EQ(r.status, 400) << raw << ": " << r.body;
    EXPECT_NE(r.body.find("malformed HTTP request line"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("\"invalid_request_error\""), std::string::npos) << r.body;
  };
  for (const std::string& raw : unparseable) {
    expect_line_error(SendRaw(srv->port(), raw, /*half_close=*/false), raw);
    ASSERT_TRUE(srv->Running()) << srv->Log();
    const Reply r = SendRaw(srv->port(), raw, /*half_close=*/true);
    if (r.status != 0) expect_line_error(r, raw);
    ASSERT_TRUE(srv->Running()) << srv->Log();
  }
  const std::string tls_hello("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
  EXPECT_EQ(SendRaw(srv->port(), tls_hello, /*half_close=*/true).status, 0);
  ASSERT_TRUE(srv->Running()) << srv->Log();
  check_probes("unparseable request lines");

  // Every slot is idle again, no client mistake was answered 500, and the server is healthy.
  const json slots = srv->Get("/slots").Json();
  ASSERT_TRUE(slots.is_array()) << slots.dump();
  EXPECT_EQ(slots.size(), 2u);
  for (const json& s : slots) EXPECT_EQ(s["is_processing"], false) << s.dump();
  const std::string metrics = srv->Get("/metrics").body;
  EXPECT_EQ(metrics.find("status=\"500\""), std::string::npos) << metrics;
  EXPECT_EQ(srv->Get("/health").status, 200);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[hostile] %zu malformed + %zu accepted cases, probes after each, in %.1f s\n", n_hostile,
              cases.size() - n_hostile, secs);
}

// --max-body-size takes sizes with units; a body just over the limit is refused, one at it accepted.
TEST(ServerHostile, MaxBodySizeFlag) {
  REQUIRE_SHARED_FILE(kModel);
  START_SERVER(srv, {"-m", SharedPath(kModel), "-c", "256", "--max-body-size", "1KiB"});
  std::string at_limit = Completion({{"prompt", ""}}).dump();
  at_limit = Completion({{"prompt", std::string(1024 - at_limit.size(), 'a')}}).dump();
  ASSERT_EQ(at_limit.size(), 1024u);
  Reply ok = Send(*srv, "POST", "/tokenize", kJson, &at_limit, {});
  EXPECT_NE(ok.status, 413) << ok.body;
  const std::string over = at_limit + " ";
  const Reply r = Send(*srv, "POST", "/v1/completions", kJson, &over, {});
  ExpectOpenAiError(
      {"flag", "1 KiB limit", "POST", "/v1/completions", kJson, nullptr, 413,
       "the request body (1025 bytes) is larger than the server's limit of 1 KiB (--max-body-size)"},
      r);
  EXPECT_EQ(srv->Post("/v1/completions", Completion()).status, 200);

  const std::string bin = LAZYSLOT_BINARY;
  EXPECT_NE(std::system((bin + " serve --max-body-size lots >/dev/null 2>&1").c_str()), 0);
  EXPECT_NE(std::system((bin + " serve --max-body-size 0 >/dev/null 2>&1").c_str()), 0);
  std::string help;
  RunShell(bin + " serve --help", &help);
  EXPECT_NE(help.find("--max-body-size"), std::string::npos);
}

}  // namespace
}  // namespace lazyslot::testing
