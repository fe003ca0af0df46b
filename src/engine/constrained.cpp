// ConstrainedOutput: the sampler's pick is checked against the grammar first (one trie walk for one token);
// only a rejected pick costs a mask over the whole vocabulary and a second draw among the allowed tokens.
// Drawing, rejecting and redrawing from the masked logits gives the same distribution as drawing from the
// masked logits directly, so the fast path changes no result's probability.
#include "engine/constrained.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <utility>

#include "core/log.h"

namespace lazyslot {

namespace {

std::vector<std::string> GrammarPieces(const Tokenizer& tok) {
  std::vector<std::string> pieces(static_cast<size_t>(tok.n_vocab()));
  for (TokenId id = 0; id < tok.n_vocab(); ++id) {
    if (!tok.IsControl(id)) pieces[id] = tok.TokenToPiece(id, /*render_special=*/false);
  }
  return pieces;
}

// Closing considers the likeliest tokens and every single byte (one of which always shortens a
// completion that exists).
constexpr int kClosingTopK = 32;

}  // namespace

ConstraintVocab::ConstraintVocab(const Tokenizer& tok) : index(GrammarPieces(tok)) {
  byte_token.fill(-1);
  for (TokenId id = 0; id < index.size(); ++id) {
    const std::string& p = index.piece(id);
    if (p.size() == 1 && byte_token[static_cast<uint8_t>(p[0])] < 0)
      byte_token[static_cast<uint8_t>(p[0])] = id;
  }
  eog = tok.eos() >= 0 && tok.IsEog(tok.eos()) ? tok.eos() : -1;
  for (TokenId id = 0; id < tok.n_vocab() && eog < 0; ++id) {
    if (tok.IsEog(id)) eog = id;
  }
}

ConstrainedOutput::ConstrainedOutput(grammar::GrammarPtr grammar, std::vector<std::string> triggers,
                                     bool at_start)
    : grammar_(std::move(grammar)), triggers_(std::move(triggers)), at_start_(at_start) {
  for (const std::string& t : triggers_) max_trigger_ = std::max(max_trigger_, t.size());
  if (grammar_ && triggers_.empty()) matcher_.emplace(grammar_);
}

TokenId ConstrainedOutput::Closing(const Sampler& sampler, const float* raw_logits, int32_t n_vocab,
                                   const ConstraintVocab& vocab, size_t need) const {
  // Ranked with the request's logit_bias, so a banned token stays banned here too.
  std::vector<float> biased(raw_logits, raw_logits + n_vocab);
  sampler.ApplyBias(biased.data(), n_vocab);
  const float* logits = biased.data();
  std::vector<TokenId> cand;
  cand.reserve(kClosingTopK + 256);
  for (TokenId t : vocab.byte_token) {
    if (t >= 0 && t < n_vocab) cand.push_back(t);
  }
  std::vector<TokenId> top(static_cast<size_t>(n_vocab));
  for (TokenId t = 0; t < n_vocab; ++t) top[t] = t;
  const int k = std::min<int>(kClosingTopK, n_vocab);
  std::partial_sort(top.begin(), top.begin() + k, top.end(), [&](TokenId a, TokenId b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  cand.insert(cand.end(), top.begin(), top.begin() + k);
  TokenId best = -1;
  for (TokenId t : cand) {
    if (t >= vocab.index.size() || (best >= 0 && logits[t] <= logits[best])) continue;
    if (logits[t] == -std::numeric_limits<float>::infinity()) continue;
    if (!matcher_->Allows(vocab.index, t)) continue;
    grammar::Matcher next = *matcher_;
    if (next.Accept(vocab.index.piece(t)) && next.MinBytesToEnd() < need) best = t;
  }
  return best;
}

Result<TokenId> ConstrainedOutput::Pick(Sampler& sampler, const float* logits, int32_t n_vocab,
                                        const ConstraintVocab& cv, const Tokenizer& tok, int32_t tokens_left,
                                        std::vector<float>* scratch, std::vector<uint8_t>* mask) {
  if (!matcher_) return sampler.Sample(logits, n_vocab);
  ++n_checked_;
  matcher_->RefillWork();
  // A grammar too ambiguous to follow within the matcher's allowance (grammar.h) ends the output here, with
  // an error, rather than stall every slot of the batch for seconds a token.
  auto checked = [&](TokenId t) -> Result<TokenId> {
    if (!matcher_->Exhausted()) return t;
    return InvalidArgument(
        "grammar: too ambiguous to follow: the output so far needs more parser work than allowed (a recursive "
        "rule with several ways to match the same text, such as root ::= \"a\" root \"b\" | \"a\" root \"c\", "
        "keeps more and deeper parser stacks with each character); write the grammar so that one reading of the "
        "output is possible at each point");
  };
  const grammar::VocabIndex& vocab = cv.index;
  const bool can_end = matcher_->CanEnd();
  // The budget: after this token, the shortest completion plus an end-of-generation token must still fit
  // in the tokens left. A token that would break it (opening another call, a longer branch) is refused.
  const size_t left = static_cast<size_t>(std::max(tokens_left, 0));
  const size_t need = matcher_->MinBytesToEnd();
  auto fits = [&](TokenId t) {
    if (tok.IsEog(t) || need == SIZE_MAX) return true;
    grammar::Matcher next = *matcher_;
    next.Accept(vocab.piece(t));
    const size_t after = next.MinBytesToEnd();
    return after == 0 || (after != SIZE_MAX && after + 2 <= left);
  };
  auto close = [&]() -> TokenId {
    ++n_closing_;
    if (can_end && cv.eog >= 0) return cv.eog;
    return Closing(sampler, logits, n_vocab, cv, need);
  };
  if (need != SIZE_MAX && left <= need + 1) {
    const TokenId t = close();
    if (t >= 0) return checked(t);
  }
  auto allowed = [&](TokenId t) {
    if (tok.IsEog(t)) return can_end;
    return t < vocab.size() && matcher_->Allows(vocab, t);
  };
  const TokenId pick = sampler.Sample(logits, n_vocab);
  if (allowed(pick) && fits(pick)) return checked(pick);

  ++n_masked_;
  matcher_->FillMask(vocab, mask);
  scratch->assign(logits, logits + n_vocab);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  bool any = false;
  for (int32_t t = 0; t < n_vocab; ++t) {
    const bool ok = tok.IsEog(t) ? can_end : (t < vocab.size() && (*mask)[t]);
    if (ok) {
      any = true;
    } else {
      (*scratch)[t] = kNegInf;
    }
  }
  if (!any) {
    if (matcher_->Exhausted()) return checked(-1);
    return InvalidArgument("grammar: no token of the vocabulary can continue the output here");
  }
  const TokenId second = sampler.Sample(scratch->data(), n_vocab);
  if (fits(second)) return checked(second);
  const TokenId t = close();
  return checked(t >= 0 ? t : second);
}

void ConstrainedOutput::Advance(const std::string& piece) {
  if (matcher_) {
    // Pick() allowed these bytes, so they are accepted; an end-of-generation token has none.
    if (!piece.empty() && !matcher_->Accept(piece)) LS_LOG_WARN("grammar: an allowed token was rejected");
    return;
  }
  if (given_up_ || triggers_.empty() || !grammar_) return;
  seen_ += piece;
  size_t best = std::string::npos;
  if (at_start_) {
    const size_t first = seen_.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return;
    const std::string_view rest = std::string_view(seen_).substr(first);
    bool undecided = false;
    for (const std::string& t : triggers_) {
      if (rest.substr(0, t.size()) == t) best = first;
      if (rest.size() < t.size() && std::string_view(t).substr(0, rest.size()) == rest) undecided = true;
    }
    if (best == std::string::npos) {
      if (!undecided) given_up_ = true;  // the output starts with something else: no call
      if (given_up_) seen_.clear();
      return;
    }
  } else {
    for (const std::string& t : triggers_) best = std::min(best, seen_.find(t));
  }
  if (best != std::string::npos) {
    grammar::Matcher m(grammar_);
    if (m.Accept(std::string_view(seen_).substr(best))) {
      matcher_ = std::move(m);
    } else {
      given_up_ = true;
      LS_LOG_WARN(
          "grammar: the text after a trigger does not start a valid sentence; output left unconstrained");
    }
    seen_.clear();
    return;
  }
  // Keep only the bytes a trigger could still start in.
  if (seen_.size() >= max_trigger_) seen_.erase(0, seen_.size() - (max_trigger_ - 1));
}

}  // namespace lazyslot
