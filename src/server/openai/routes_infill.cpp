// POST /infill: llama-server's fill-in-the-middle completion for models with FIM tokens. The prompt is laid
// out as llama-server does (repo-level pattern): [BOS] [FIM_REP]myproject\n ([FIM_SEP]filename\n text)...
// [FIM_SEP]filename\n [FIM_PRE]prefix [FIM_SUF]suffix [FIM_MID]prompt. Unlike llama-server, nothing is cut
// to fit a batch: a prompt longer than the context is a 400. A model without FIM tokens gets 501.
#include <string>
#include <vector>

#include "server/generation/native_params.h"
#include "server/generation/response_format.h"
#include "server/http/errors.h"
#include "server/http/request_body.h"

namespace lazyslot::server {
namespace {

Result<std::vector<TokenId>> Plain(const Tokenizer& tok, const std::string& text, const std::string& field) {
  Result<std::vector<TokenId>> ids = tok.Tokenize(text, false, false);
  if (!ids.ok()) return InvalidArgument(field + ": tokenizing failed: " + ids.status().message());
  return ids;
}

Result<std::vector<TokenId>> InfillPrompt(const ModelContext& m, const FimTokens& fim, const Json& body) {
  const Tokenizer& tok = m.engine->tokenizer();
  auto text_field = [&](const char* name, bool required) -> Result<std::string> {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) {
      if (required) return InvalidArgument(std::string(name) + ": is required");
      return std::string();
    }
    if (!it->is_string())
      return InvalidArgument(std::string(name) + ": expected a string, got " + TypeName(*it));
    return it->get<std::string>();
  };
  LS_ASSIGN_OR_RETURN(std::string prefix, text_field("input_prefix", true));
  LS_ASSIGN_OR_RETURN(std::string suffix, text_field("input_suffix", true));
  LS_ASSIGN_OR_RETURN(std::string prompt, text_field("prompt", false));
  std::vector<TokenId> out;
  if (tok.add_bos() && tok.bos() >= 0) out.push_back(tok.bos());
  auto append = [&out](const std::vector<TokenId>& ids) { out.insert(out.end(), ids.begin(), ids.end()); };
  if (fim.rep >= 0) {
    out.push_back(fim.rep);
    LS_ASSIGN_OR_RETURN(std::vector<TokenId> repo, Plain(tok, "myproject\n", "input_extra"));
    append(repo);
  }
  auto extra = body.find("input_extra");
  if (extra != body.end() && !extra->is_null()) {
    if (!extra->is_array())
      return InvalidArgument("input_extra: expected a list of {\"filename\", \"text\"}");
    for (size_t i = 0; i < extra->size(); ++i) {
      const std::string name = "input_extra[" + std::to_string(i) + "]";
      const Json& chunk = (*extra)[i];
      if (!chunk.is_object()) return InvalidArgument(name + ": expected an object, got " + TypeName(chunk));
      auto text = chunk.find("text");
      if (text == chunk.end() || !text->is_string())
        return InvalidArgument(name + ".text: expected a string");
      std::string filename = "tmp";
      if (auto fn = chunk.find("filename"); fn != chunk.end() && !fn->is_null()) {
        if (!fn->is_string()) return InvalidArgument(name + ".filename: expected a string");
        filename = fn->get<std::string>();
      }
      for (auto it = chunk.begin(); it != chunk.end(); ++it) {
        if (it.key() != "text" && it.key() != "filename") {
          return InvalidArgument(name + "." + it.key() + ": unknown field (expected filename and text)");
        }
      }
      if (fim.sep >= 0) {
        out.push_back(fim.sep);
        LS_ASSIGN_OR_RETURN(std::vector<TokenId> f, Plain(tok, filename + "\n", name + ".filename"));
        append(f);
      } else {
        LS_ASSIGN_OR_RETURN(std::vector<TokenId> f, Plain(tok, "\n\n--- snippet ---\n\n", name));
        append(f);
      }
      LS_ASSIGN_OR_RETURN(std::vector<TokenId> t, Plain(tok, text->get<std::string>(), name + ".text"));
      append(t);
    }
  }
  if (fim.sep >= 0) {
    out.push_back(fim.sep);
    LS_ASSIGN_OR_RETURN(std::vector<TokenId> f, Plain(tok, "filename\n", "input_prefix"));
    append(f);
  }
  LS_ASSIGN_OR_RETURN(std::vector<TokenId> pre, Plain(tok, prefix, "input_prefix"));
  LS_ASSIGN_OR_RETURN(std::vector<TokenId> suf, Plain(tok, suffix, "input_suffix"));
  out.push_back(fim.pre);
  append(pre);
  out.push_back(fim.suf);
  append(suf);
  out.push_back(fim.mid);
  Result<std::vector<TokenId>> p = tok.Tokenize(prompt, false, true);
  if (!p.ok()) return InvalidArgument("prompt: tokenizing failed: " + p.status().message());
  append(*p);
  return out;
}

void HandleInfill(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  const Deadline deadline(st.opts.request_timeout_s);
  std::optional<Json> body = ReadJsonBody(req, res, st.opts.max_body_size);
  if (!body) return;
  Status known = CheckKnownFields(*body, RequestKind::kNative);
  if (!known.ok()) return SetStatusError(res, known);
  Result<ModelRef> model = ResolveModel(st, req, &*body);
  if (!model.ok()) return SetStatusError(res, model.status());
  ModelContext& m = **model;
  // The vocabulary's FIM tokens (its tokenizer.ggml.fim_*_token_id, else found by their usual texts).
  const FimTokens& fim = m.engine->tokenizer().fim();
  if (fim.pre < 0 || fim.suf < 0 || fim.mid < 0) {
    std::string missing;
    if (fim.pre < 0) missing += " prefix";
    if (fim.suf < 0) missing += " suffix";
    if (fim.mid < 0) missing += " middle";
    return SetError(res, 501, "infill is not supported by this model: it has no FIM token for" + missing);
  }
  TextRun run;
  Status fields = ReadTextFields(st, m, *body, TextApi::kLlama, &run);
  if (!fields.ok()) return SetStatusError(res, fields);
  Result<NativeOptions> native = ParseNativeOptions(*body, m.engine->tokenizer(), /*read_prompt=*/false);
  if (!native.ok()) return SetStatusError(res, native.status());
  Result<std::vector<TokenId>> prompt = InfillPrompt(m, fim, *body);
  if (!prompt.ok()) return SetStatusError(res, prompt.status());
  run.id = NewId("cmpl-");
  run.deadline = deadline;
  run.prompts.push_back(std::move(*prompt));
  AnswerNatively(m, *native, &run);
  RunTextGeneration(st, std::move(*model), std::move(run), req, res);
}

}  // namespace

void RegisterInfillRoute(ServerState& st) {
  st.http.Post("/infill", [&st](const httplib::Request& req, httplib::Response& res) {
    try {
      HandleInfill(st, req, res);
    } catch (const std::exception& e) {
      SetError(res, 500, std::string("internal error: ") + e.what());
    }
  });
}

}  // namespace lazyslot::server
