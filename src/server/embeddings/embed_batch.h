// What every embedding and rerank route shares (/v1/embeddings, /embedding, TEI's /embed and /embed_all,
// /v1/rerank and its aliases): fitting inputs into a slot (refused, or cut with truncation), the request
// limits, the one loop that submits a request's inputs to the engine and collects the results in input
// order, normalisation, and TEI's error shape. See docs/embeddings.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "server/generation/openai_params.h"
#include "server/server_state.h"

namespace lazyslot::server {

// Which end of an input too long for a slot truncation cuts away (TEI's truncation_direction: Right keeps
// the start).
enum class TruncateSide { kRight, kLeft };

struct TruncateOptions {
  bool truncate = false;
  TruncateSide side = TruncateSide::kRight;
};

// `truncate` (a boolean; absent or null: --auto-truncate) and `truncation_direction` ("Right" or "Left",
// any case; absent: Right).
Result<TruncateOptions> ParseTruncateOptions(const Json& body, const ServerState& st);

// The most tokens one input may have: a slot's context and, for models with learned positions (non-causal
// encoders such as BERT), the trained context.
int32_t MaxInputTokens(const ModelContext& m);

// How many tokens at the start (BOS/CLS) and at the end (EOS and/or SEP) of `ids` are the special tokens
// Tokenize(add_special = true) adds; truncation keeps them.
std::pair<size_t, size_t> AddedSpecialTokens(const Tokenizer& tok, const std::vector<TokenId>& ids);

// Cuts `ids` to `limit` tokens, keeping its first `n_head` and last `n_tail` tokens and dropping from the
// `side` end of what lies between.
void CutTokens(std::vector<TokenId>* ids, size_t limit, size_t n_head, size_t n_tail, TruncateSide side);

// The inputs of one request, tokenized and fitted to MaxInputTokens.
struct PreparedInputs {
  std::vector<std::vector<TokenId>> prompts;
  size_t n_truncated = 0;  // inputs that were cut
  int64_t n_tokens = 0;    // after truncation
};

// Tokenizes text inputs as /v1/embeddings always has (special tokens added, control-token text parsed) and
// takes token-id inputs as given; an input longer than MaxInputTokens is cut when `t.truncate` (text keeps
// the special tokens the tokenizer added, token ids are cut as they are), else refused with a 400 naming
// `field[i]` and both figures. Checks the request limits before and after. false: `res` holds the error.
bool PrepareInputs(const ServerState& st, const ModelContext& m, std::vector<PromptInput> inputs,
                   const std::string& field, const TruncateOptions& t, httplib::Response& res,
                   PreparedInputs* out);

// The request limits, a 413 naming the limit and the request's figure (false: `res` holds it):
// --max-client-batch-size on the number of inputs (documents), --max-batch-tokens on their tokens.
bool CheckInputCount(const ServerState& st, size_t n_inputs, const std::string& field,
                     httplib::Response& res);
bool CheckTokenCount(const ServerState& st, int64_t n_tokens, const std::string& field,
                     httplib::Response& res);

// An input longer than MaxInputTokens without truncation: llama-server's 400 exceed_context_size_error.
// `name` ("input[3]", or "" for a request of one input) starts the message; `what` says what has the tokens.
void SetInputTooLong(const ModelContext& m, httplib::Response& res, const std::string& name, int64_t n_tokens,
                     const std::string& what = "the input");

// Says that a request's inputs were cut: the X-Truncated-Inputs header and one log line.
void ReportTruncation(const ModelContext& m, httplib::Response& res, const char* route, size_t n_truncated,
                      size_t n_inputs);

struct EmbedResult {
  std::vector<float> values;  // Event::embedding: pooled vector, rank scores or [n_prompt, n_embd] rows
  int32_t n_prompt = 0;
};

// Submits every prompt as an embedding request (`unpooled`: every token's hidden state) and collects the
// results in input order. Up to max(--parallel, --max-queue / 2) inputs are in the engine at once, so the
// engine can pack many short inputs into one forward pass; when the queue is full of other requests it
// waits for room instead of failing once its first input was accepted (503 only for that first one).
// Honours --request-timeout (504), the drain (503 server_shutdown) and a client that hangs up (499),
// cancelling what it submitted. `field` names an input in errors ("input[3]: ..."). false: `res` holds the
// error.
bool RunEmbeddings(ServerState& st, const ModelContext& m, const httplib::Request& req,
                   httplib::Response& res, std::vector<std::vector<TokenId>> prompts, bool unpooled,
                   const std::string& field, std::vector<EmbedResult>* out);

// llama-server's embd_normalize (common_embd_normalize): -1 none, 0 max-abs scaled to int16 (32760),
// 1 taxicab, 2 euclidean, > 2 p-norm. A zero vector stays zero.
void NormalizeEmbedding(std::vector<float>* v, int norm);
// `embd_normalize` (an integer in [-1, 100]); absent: `def`.
Result<int> ParseEmbdNormalize(const Json& body, int def);
// `dimensions` (Matryoshka): 0 when absent, else an integer in [1, n_embd]; errors name the field.
Result<int64_t> ParseDimensions(const Json& body, const ModelContext& m);

// The refusals of the embedding routes: a server without --embeddings (501, as llama-server) or one started
// with --rerank, whose engine returns scores instead of embeddings (501). false: `res` holds the error.
bool CheckEmbeddingsServed(const ModelContext& m, httplib::Response& res);

// TEI's error body {"error", "error_type"} with TEI's status codes, set directly, or made from the
// OpenAI-style error a shared helper already put in `res`: 400 -> 422 Validation, 413 -> 413 Validation,
// 501 -> 424 Backend, 503 -> 429 Overloaded (the drain: 503 Unhealthy), others keep their status (Backend).
void SetTeiError(httplib::Response& res, int status, const std::string& message, const char* error_type);
void ConvertToTeiError(httplib::Response& res);

}  // namespace lazyslot::server
