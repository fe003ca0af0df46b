// Request JSON -> validated parameters for the OpenAI-style routes. Every error is kInvalidArgument with a
// message that starts with the offending field ("temperature: expected a number, got string").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/sampler.h"
#include "server/http/json_body.h"
#include "tokenizer/tokenizer.h"

namespace lazyslot::server {

// `stop` limits: TextOutput compares every stop string against the held-back text at every token (cost
// grows with count x length^2), and OpenAI itself takes at most 4, so larger lists are refused with a 400.
constexpr size_t kMaxStopStrings = 32;
constexpr size_t kMaxCacheSalt = 1024;  // bytes of cache_salt
constexpr size_t kMaxStopBytes = 256;

// Which request a body belongs to, for CheckKnownFields.
// kNative: llama-server's /completion and /infill, whose own fields are known too.
enum class RequestKind { kChat, kCompletion, kNative, kEmbedding, kTokenize, kDetokenize, kSlotFile };

// Refuses top-level fields the route neither uses nor knows to be harmless metadata (as OpenAI does), so a
// typo such as "max_token" is a 400 naming the field (with the closest known name) instead of being
// silently ignored.
Status CheckKnownFields(const Json& body, RequestKind kind);

// Every key of `obj` must be in `known`; the first that is not is a 400 naming it ("prefix.key" with a
// prefix) and the closest known name within two edits. Used by every route's unknown-field check.
Status CheckFieldNames(const Json& obj, const std::vector<std::string>& known,
                       const std::string& prefix = "");

// /v1/completions fields this server refuses unless they have their default value: echo, suffix, best_of.
Status CheckCompletionExtras(const Json& body);

struct GenerationParams {
  SamplingParams sampling;
  bool seed_given = false;        // absent or -1: the route draws a random seed, as llama-server does
  int32_t repeat_last_n = 64;     // -1: the whole slot context
  int32_t n_predict = -1;         // max_completion_tokens | max_tokens | n_predict; -1: not given
  int n = 1;                      // choices per prompt (`n`, llama-server's `n_cmpl`)
  std::vector<std::string> stop;  // empty strings dropped
  bool ignore_eos = false;
  bool cache_prompt = true;  // llama-server's: reuse a slot's kept KV for a matching prompt prefix
  std::string cache_salt;    // vLLM's: KV reused and shared only with requests of the same salt
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // llama-server's `verbose`: the OpenAI answers carry `__verbose`, the native answer of the same generation
  // (its rendered prompt included). Default: on under --verbose, as llama-server.
  bool verbose = false;
  // llama-server's telemetry and placement, read on every text route (the OpenAI ones too, as llama-server):
  // `timings_per_token` puts the timings so far on every streamed token chunk; `return_progress` sends the
  // prompt's progress (at admission, then after each batch) while a stream waits for its first token;
  // `id_slot` >= 0 runs the request (its first choice) in that slot.
  bool timings_per_token = false;
  bool return_progress = false;
  int id_slot = -1;
  // llama-server's n_keep and n_discard: what a --context-shift keeps and drops (GenerationRequest).
  int32_t n_keep = 0;
  int32_t n_discard = 0;
  // llama-server's `backend_sampling` (and -bs/--backend-sampling): it samples on the accelerator there. This
  // server has one sampler, so it selects nothing different: the answer, post-sampling probabilities
  // included, is the same either way.
  bool backend_sampling = false;
};

// Reads the generation fields shared by /v1/chat/completions, /v1/completions and /completion, over the
// server's defaults (--temp, --top-k, --seed, ...).
// The engine's cache scope of a cache_salt (GenerationRequest::cache_scope): 0 for none, else a 64-bit hash
// that is never 0.
uint64_t CacheScope(const std::string& salt);
Result<GenerationParams> ParseGenerationParams(const Json& body, const SamplingParams& defaults = {});

// One prompt: text to tokenize, token ids given by the client, or llama-server's mixed list of both
// ([12, 34, "text", 56]: `mixed`, an array, with is_tokens false and text empty).
struct PromptInput {
  bool is_tokens = false;
  std::string text;
  std::vector<TokenId> tokens;
  Json mixed;
};

// `value` is a string, a list of token ids, a list of strings or a list of token-id lists (OpenAI's
// `prompt` and `input`), or as llama-server also takes them, a mixed list of ids and strings (one prompt) or a
// list whose elements are such mixed lists. Returns one PromptInput per prompt; `field` names it in errors.
Result<std::vector<PromptInput>> ParsePromptList(const Json& value, const std::string& field);

// The prompt's tokens: ids as given; text (and a mixed list's strings) tokenized with BOS as the model asks
// and control-token text parsed, as llama-server does. `field` names the prompt in errors.
Result<std::vector<TokenId>> TokenizePrompt(const Tokenizer& tok, PromptInput in, const std::string& field);

// A list of token ids (each an integer in int32 range).
Result<std::vector<TokenId>> ParseTokenList(const Json& value, const std::string& field);

// `logit_bias` in OpenAI's form, {"token id": bias} with biases in [-100, 100] (a key may also be the exact
// text of one vocabulary token, or as llama-server takes it any text, whose tokens each get the bias), or
// llama-server's [[token id or text, bias or false], ...], where a text gets the bias on each of its tokens
// and false bans. Errors name the entry: an id outside the vocabulary, a text of no tokens, a bias that is
// not a number.
Result<std::vector<std::pair<int32_t, float>>> ParseLogitBias(const Json& value, const Tokenizer& tok,
                                                              int32_t n_vocab);

// Validates chat `messages` (a non-empty list of objects with a `role` among system, developer, user,
// assistant, tool and function; `content` a string, null or a list of text parts) and returns them with text
// parts joined into one string per message.
Result<Json> ParseChatMessages(const Json& body);

// A field that is there and not null (JSON null means "absent" on every route).
bool Present(const Json& body, const std::string& field);

// Optional typed fields: absent or null -> `def`; present with the wrong type -> error naming the field.
Result<bool> GetBool(const Json& body, const std::string& field, bool def);
Result<std::string> GetString(const Json& body, const std::string& field, const std::string& def);
// A number with an integer value (1 and 1.0 both) within [lo, hi]; errors name `field`.
Result<int64_t> IntegerValue(const Json& v, const std::string& field, int64_t lo, int64_t hi);
// A present integer within [lo, hi] (1.0 counts as 1); the caller checks presence.
Result<int64_t> GetInteger(const Json& body, const std::string& field, int64_t lo, int64_t hi);

// Standard base64 (RFC 4648, with padding).
std::string Base64Encode(const void* data, size_t n);

}  // namespace lazyslot::server
