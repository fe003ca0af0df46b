// Loading tokenizer.ggml.* into a Vocab, the special-token partition and the clean-up pass (FORMATS.md 5).
#include "tokenizer/tokenizer_vocab.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>

#include "core/log.h"
#include "core/utf8.h"
#include "gguf/keys.h"
#include "tokenizer/unicode.h"

namespace lazyslot::tok {

namespace {

namespace keys = gguf::keys;

constexpr const char* kKeyModel = keys::kTokenizerModel;
constexpr const char* kKeyPre = keys::kTokenizerPre;
constexpr const char* kKeyTokens = keys::kTokenizerTokens;
constexpr const char* kKeyScores = keys::kTokenizerScores;
constexpr const char* kKeyTypes = keys::kTokenizerTokenType;

bool IsSignedInt(gguf::ValueType t) {
  return t == gguf::ValueType::kI8 || t == gguf::ValueType::kI16 || t == gguf::ValueType::kI32 ||
         t == gguf::ValueType::kI64;
}
bool IsUnsignedInt(gguf::ValueType t) {
  return t == gguf::ValueType::kU8 || t == gguf::ValueType::kU16 || t == gguf::ValueType::kU32 ||
         t == gguf::ValueType::kU64;
}

Status KeyError(const std::string& key, const std::string& what) {
  return Corrupt("tokenizer metadata: key '" + key + "' " + what);
}

// A special token id key: absent -> keep *id; present and < n_vocab -> take it; present and out of range
// (e.g. 4294967295 for "none") -> keep the default, as llama.cpp does.
Status ReadSpecialId(const gguf::File& file, const std::string& key, int32_t n_vocab, TokenId* id) {
  const gguf::Value* v = file.Find(key);
  if (v == nullptr) return Status::Ok();
  int64_t value;
  if (IsUnsignedInt(v->type)) {
    value = v->u > uint64_t(INT32_MAX) ? INT64_MAX : int64_t(v->u);
  } else if (IsSignedInt(v->type)) {
    value = v->i;
  } else {
    return KeyError(key, std::string("has type ") + gguf::ValueTypeName(v->type) + ", expected an integer");
  }
  if (value < 0 || value >= n_vocab) {
    LS_LOG_WARN("tokenizer: %s = %lld is outside the vocabulary (%d tokens), keeping %d", key.c_str(),
                static_cast<long long>(value), n_vocab, *id);
    return Status::Ok();
  }
  *id = static_cast<TokenId>(value);
  return Status::Ok();
}

uint8_t AttrFromType(int64_t type) {
  switch (type) {
    case 1:
      return kAttrNormal;
    case 2:
      return kAttrUnknown;
    case 3:
      return kAttrControl;
    case 4:
      return kAttrUserDefined;
    case 5:
      return kAttrUnused;
    case 6:
      return kAttrByte;
    default:
      return kAttrUndefined;
  }
}

// "<0xXX>" -> XX; -1 if the text is not of that form.
int ParseByteToken(const std::string& s) {
  if (s.size() != 6 || s.compare(0, 3, "<0x") != 0 || s[5] != '>') return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(s[3]), lo = hex(s[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// Inverse of the GPT-2 byte map for a normal BPE token. A code point outside the map renders as
// "[UNK_BYTE_0x<utf8 hex><token text>]", the marker llama.cpp emits.
std::string DecodeByteLevel(const std::string& text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    const uint32_t cp = unicode::DecodeOne(text, &pos);
    const int b = unicode::CodePointToByte(cp);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
      continue;
    }
    std::string utf8;
    AppendUtf8(cp, &utf8);
    out += "[UNK_BYTE_0x";
    static const char kHex[] = "0123456789abcdef";
    for (char c : utf8) {
      out.push_back(kHex[static_cast<uint8_t>(c) >> 4]);
      out.push_back(kHex[static_cast<uint8_t>(c) & 15]);
    }
    out += text + "]";
  }
  return out;
}

// Texts that llama.cpp recognises as end-of-turn / FIM tokens even when the metadata does not say so. Such
// tokens are forced to control type.
// clang-format off
const std::initializer_list<const char*> kEotTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
    "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
const std::initializer_list<const char*> kEogTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["};
const std::initializer_list<const char*> kFimPreTexts = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>",
    "<｜fim▁begin｜>"};
const std::initializer_list<const char*> kFimSufTexts = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>",
    "<｜fim▁hole｜>"};
const std::initializer_list<const char*> kFimMidTexts = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>",
    "<｜fim▁end｜>"};
const std::initializer_list<const char*> kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
const std::initializer_list<const char*> kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                                         "<reponame>"};
const std::initializer_list<const char*> kFimSepTexts = {"<|file_sep|>"};
// clang-format on

// Special ids recognised by text, EOG set, and the special-token list (llama.cpp's load order).
void DeriveSpecials(Vocab* v) {
  const int32_t n = v->n_vocab();
  TokenId fim_pad = -1, fim_rep = -1, fim_sep = -1, fim_pre = -1, fim_suf = -1, fim_mid = -1;
  // The first listed text present in the vocabulary fills an unset slot and becomes control.
  auto detect = [&](TokenId* slot, std::initializer_list<const char*> texts) {
    if (*slot >= 0) return;
    for (const char* t : texts) {
      const TokenId id = v->Find(t);
      if (id < 0) continue;
      *slot = id;
      v->attr[id] |= kAttrControl;
      return;
    }
  };
  detect(&v->eot, kEotTexts);
  detect(&v->eom, {"<|eom_id|>"});
  detect(&fim_pre, kFimPreTexts);
  detect(&fim_suf, kFimSufTexts);
  detect(&fim_mid, kFimMidTexts);
  detect(&fim_pad, kFimPadTexts);
  detect(&fim_rep, kFimRepTexts);
  detect(&fim_sep, kFimSepTexts);
  v->is_eog.assign(n, 0);
  for (TokenId id : {fim_pad, fim_rep, fim_sep, v->eos, v->eot, v->eom}) {
    if (v->Valid(id)) v->is_eog[id] = 1;
  }
  for (const char* t : kEogTexts) {
    const TokenId id = v->Find(t);
    if (id < 0) continue;
    v->is_eog[id] = 1;
    v->attr[id] |= kAttrControl;
  }
  for (const char* t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    const TokenId id = v->Find(t);  // gpt-oss channel markers are always rendered
    if (id >= 0) v->attr[id] = kAttrUserDefined;
  }
  // Harmony-style vocabularies use <|end|> between messages, not as the end of generation.
  auto eog_with = [&](const char* t) {
    TokenId id = v->Find(t);
    return v->Valid(id) && v->is_eog[id] ? id : TokenId(-1);
  };
  const TokenId end_id = eog_with("<|end|>");
  if (end_id >= 0 && ((eog_with("<|return|>") >= 0 && eog_with("<|call|>") >= 0) ||
                      (eog_with("<|calls|>") >= 0 && eog_with("<|flush|>") >= 0))) {
    v->is_eog[end_id] = 0;
    v->attr[end_id] = kAttrUserDefined;
  }
  const TokenId s_id = eog_with("</s>");
  if (s_id >= 0 && eog_with("<|tool_response>") >= 0) {
    v->is_eog[s_id] = 0;
    v->attr[s_id] = kAttrNormal;
  }

  for (TokenId id = 0; id < n; ++id) {
    if (v->attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) v->special_tokens.push_back(id);
  }
  std::stable_sort(v->special_tokens.begin(), v->special_tokens.end(),
                   [&](TokenId a, TokenId b) { return v->text[a].size() > v->text[b].size(); });
}

}  // namespace

Result<Vocab> LoadVocab(const gguf::File& file) {
  Vocab v;
  const gguf::Value* model_value = file.Find(kKeyModel);
  if (model_value == nullptr)
    return NotFound(std::string("tokenizer metadata: key '") + kKeyModel + "' is missing");
  LS_ASSIGN_OR_RETURN(const std::string model, file.GetString(kKeyModel));
  std::string pre_name;
  if (file.Find(kKeyPre) != nullptr) {
    LS_ASSIGN_OR_RETURN(pre_name, file.GetString(kKeyPre));
  }

  if (model == "llama") {
    v.type = VocabType::kSpm;
    v.bos = 1, v.eos = 2, v.unk = 0;
    v.add_space_prefix = true;
    v.add_bos = true;
  } else if (model == "gpt2") {
    v.type = VocabType::kBpe;
    v.bos = 11, v.eos = 11;  // llama.cpp's BPE defaults, normally overridden by the keys
    v.clean_spaces = true;
    if (pre_name.empty()) {
      LS_LOG_WARN("tokenizer: %s is missing, using the 'default' pre-tokenizer (quality may suffer)",
                  kKeyPre);
      v.pre = PreType::kDefault;
    } else if (!PreTypeFromName(pre_name, &v.pre)) {
      LS_LOG_WARN("tokenizer: unknown %s '%s', using the 'default' pre-tokenizer (quality may suffer)",
                  kKeyPre, pre_name.c_str());
      v.pre = PreType::kDefault;
    }
    if (v.pre == PreType::kLlama3) {
      v.ignore_merges = true;
      v.add_bos = true;
    } else if (v.pre == PreType::kQwen2) {
      v.clean_spaces = false;
    }
  } else if (model == "bert") {
    // llama.cpp's WPM defaults: [CLS] 101 as BOS, no EOS, [UNK] 100, [SEP] 102 (pad 0 and mask 103 are not
    // used here). tokenizer.ggml.pre is not consulted for WPM.
    v.type = VocabType::kWpm;
    v.bos = 101, v.unk = 100, v.sep = 102;
    v.add_bos = true, v.add_sep = true;
    v.clean_spaces = true;
  } else {
    return Unimplemented("tokenizer metadata: " + std::string(kKeyModel) + " = '" + model +
                         "' is not supported (supported: llama, gpt2, bert)");
  }
  LS_ASSIGN_OR_RETURN(v.add_space_prefix, file.GetBoolOr(keys::kTokenizerAddSpacePrefix, v.add_space_prefix));

  // Token texts.
  const gguf::Value* tokens = file.Find(kKeyTokens);
  if (tokens == nullptr)
    return NotFound(std::string("tokenizer metadata: key '") + kKeyTokens + "' is missing");
  if (tokens->type != gguf::ValueType::kArray || tokens->elem_type != gguf::ValueType::kString) {
    return KeyError(kKeyTokens, "is not an array of strings");
  }
  if (tokens->strings.empty()) return KeyError(kKeyTokens, "is empty");
  if (tokens->strings.size() > size_t(INT32_MAX)) return KeyError(kKeyTokens, "has too many entries");
  const size_t n = tokens->strings.size();
  v.text = tokens->strings;
  v.score.assign(n, 0.0f);
  v.attr.assign(n, kAttrNormal);
  v.text_to_id.Reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (v.text[i].empty()) v.text[i] = "[EMPTY_" + std::to_string(i) + "]";
    v.max_token_len = std::max(v.max_token_len, v.text[i].size());
    const int32_t first = v.text_to_id.Insert(v.text, static_cast<int32_t>(i));
    if (first != static_cast<int32_t>(i)) {
      return KeyError(kKeyTokens, "has a duplicate token '" + v.text[i] + "' at ids " +
                                      std::to_string(first) + " and " + std::to_string(i));
    }
  }

  if (const gguf::Value* scores = file.Find(kKeyScores)) {
    if (scores->type != gguf::ValueType::kArray ||
        (scores->elem_type != gguf::ValueType::kF32 && scores->elem_type != gguf::ValueType::kI32)) {
      return KeyError(kKeyScores, "is not an array of f32 or i32");
    }
    if (scores->array_size() < n) {
      return KeyError(kKeyScores, "has " + std::to_string(scores->array_size()) + " entries for " +
                                      std::to_string(n) + " tokens");
    }
    for (size_t i = 0; i < n; ++i) {
      v.score[i] = scores->floats.empty() ? float(scores->ints[i]) : float(scores->floats[i]);
    }
  }
  if (const gguf::Value* types = file.Find(kKeyTypes)) {
    if (types->type != gguf::ValueType::kArray ||
        !(IsSignedInt(types->elem_type) || IsUnsignedInt(types->elem_type))) {
      return KeyError(kKeyTypes, "is not an array of integers");
    }
    if (types->array_size() < n) {
      return KeyError(kKeyTypes, "has " + std::to_string(types->array_size()) + " entries for " +
                                     std::to_string(n) + " tokens");
    }
    for (size_t i = 0; i < n; ++i) {
      v.attr[i] = AttrFromType(types->ints.empty() ? int64_t(types->uints[i]) : types->ints[i]);
    }
  }

  // Special ids: defaults outside the vocabulary are disabled, then the keys override.
  const int32_t nv = v.n_vocab();
  for (TokenId* id : {&v.bos, &v.eos, &v.unk, &v.sep}) {
    if (*id >= nv) *id = -1;
  }
  LS_RETURN_IF_ERROR(ReadSpecialId(file, keys::kTokenizerBosId, nv, &v.bos));
  LS_RETURN_IF_ERROR(ReadSpecialId(file, keys::kTokenizerEosId, nv, &v.eos));
  LS_RETURN_IF_ERROR(ReadSpecialId(file, keys::kTokenizerEotId, nv, &v.eot));
  LS_RETURN_IF_ERROR(ReadSpecialId(file, keys::kTokenizerEomId, nv, &v.eom));
  LS_RETURN_IF_ERROR(ReadSpecialId(file, keys::kTokenizerUnkId, nv, &v.unk));
  // llama.cpp's spelling of the key.
  LS_RETURN_IF_ERROR(ReadSpecialId(file, keys::kTokenizerSepId, nv, &v.sep));
  LS_ASSIGN_OR_RETURN(v.add_sep, file.GetBoolOr(keys::kTokenizerAddSep, v.add_sep));
  LS_ASSIGN_OR_RETURN(v.add_bos, file.GetBoolOr(keys::kTokenizerAddBos, v.add_bos));
  LS_ASSIGN_OR_RETURN(v.add_eos, file.GetBoolOr(keys::kTokenizerAddEos, v.add_eos));
  if (v.type == VocabType::kWpm) {
    // BertNormalizer options; strip_accents follows lowercase unless set.
    LS_ASSIGN_OR_RETURN(v.lowercase, file.GetBoolOr(keys::kTokenizerNormalizerLowercase, v.lowercase));
    LS_ASSIGN_OR_RETURN(v.strip_accents, file.GetBoolOr(keys::kTokenizerNormalizerStripAccents, v.lowercase));
  }
  // WPM frames with [CLS]/[SEP] whatever add_bos/add_eos say (llama.cpp), and callers that frame pairs fall
  // back from EOS to SEP, so the two checks below are for SPM and BPE only.
  if (v.type != VocabType::kWpm && v.add_bos && v.bos < 0) {
    return Corrupt(std::string("tokenizer metadata: ") + keys::kTokenizerAddBos +
                   " is true but there is no BOS token id");
  }
  if (v.type != VocabType::kWpm && v.add_eos && v.eos < 0) {
    return Corrupt(std::string("tokenizer metadata: ") + keys::kTokenizerAddEos +
                   " is true but there is no EOS token id");
  }

  DeriveSpecials(&v);
  v.fim = FindFimTokens(file, v);
  return v;
}

FimTokens FindFimTokens(const gguf::File& file, const Vocab& vocab) {
  auto by_key = [&](const char* key) -> TokenId {
    Result<uint32_t> id = file.GetU32(key);
    return id.ok() && static_cast<int32_t>(*id) < vocab.n_vocab() ? static_cast<TokenId>(*id) : -1;
  };
  FimTokens t;
  t.pre = by_key(keys::kTokenizerFimPreId);
  t.suf = by_key(keys::kTokenizerFimSufId);
  t.mid = by_key(keys::kTokenizerFimMidId);
  t.pad = by_key(keys::kTokenizerFimPadId);
  t.rep = by_key(keys::kTokenizerFimRepId);
  t.sep = by_key(keys::kTokenizerFimSepId);
  struct Text {
    TokenId* slot;
    std::vector<const char*> texts;
  };
  // The usual texts of Qwen, StarCoder, CodeLlama, DeepSeek Coder and Codestral (pad: only FIM's own
  // spellings, not a vocabulary's general <PAD> / [PAD]).
  const std::vector<Text> known = {
      {&t.pre,
       {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", "\xe2\x96\x81<PRE>",
        "<\xef\xbd\x9c"
        "fim\xe2\x96\x81"
        "begin\xef\xbd\x9c>",
        "[PREFIX]"}},
      {&t.suf,
       {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>", "\xe2\x96\x81<SUF>",
        "<\xef\xbd\x9c"
        "fim\xe2\x96\x81"
        "hole\xef\xbd\x9c>",
        "[SUFFIX]"}},
      {&t.mid,
       {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>", "\xe2\x96\x81<MID>",
        "<\xef\xbd\x9c"
        "fim\xe2\x96\x81"
        "end\xef\xbd\x9c>",
        "[MIDDLE]"}},
      {&t.pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>"}},
      {&t.rep, {"<|repo_name|>", "<repo_name>", "<reponame>"}},
      {&t.sep, {"<|file_sep|>", "<file_sep>", "<filename>"}},
  };
  // A slot the key left unset takes the lowest id whose text is one of its texts (texts are unique).
  for (const Text& k : known) {
    if (*k.slot >= 0) continue;
    *k.slot = -1;
    for (const char* want : k.texts) {
      const TokenId id = vocab.Find(want);
      if (id >= 0 && (*k.slot < 0 || id < *k.slot)) *k.slot = id;
    }
  }
  return t;
}

void TextIndex::Reserve(size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  if (cap > slots_.size()) slots_.assign(cap, Slot{0, -1}), count_ = 0;
}

void TextIndex::Rehash(const std::vector<std::string>& texts, size_t capacity) {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(capacity, Slot{0, -1});
  const size_t mask = capacity - 1;
  for (const Slot& s : old) {
    if (s.index < 0) continue;
    size_t i = Hash(texts[s.index]) & mask;
    while (slots_[i].index >= 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

int32_t TextIndex::Find(const std::vector<std::string>& texts, std::string_view s) const {
  if (slots_.empty()) return -1;
  const uint64_t h = Hash(s);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.index < 0) return -1;
    if (slot.tag == uint32_t(h >> 32) && texts[slot.index] == s) return slot.index;
  }
}

int32_t TextIndex::Insert(const std::vector<std::string>& texts, int32_t index) {
  if (2 * (count_ + 1) > slots_.size()) Rehash(texts, std::max<size_t>(16, slots_.size() * 2));
  const std::string& s = texts[index];
  const uint64_t h = Hash(s);
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  for (; slots_[i].index >= 0; i = (i + 1) & mask) {
    if (slots_[i].tag == uint32_t(h >> 32) && texts[slots_[i].index] == s) return slots_[i].index;
  }
  slots_[i] = Slot{uint32_t(h >> 32), index};
  ++count_;
  return index;
}

std::string Vocab::Piece(TokenId id) const {
  if (!Valid(id)) return std::string();
  const uint8_t a = attr[id];
  const std::string& t = text[id];
  if (a & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return t;
  if (a & kAttrNormal) {
    if (type == VocabType::kBpe) return DecodeByteLevel(t);
    std::string p;  // U+2581 '▁' -> ' '
    p.reserve(t.size());
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.compare(i, 3, "\xE2\x96\x81") == 0) {
        p.push_back(' ');
        i += 2;
      } else {
        p.push_back(t[i]);
      }
    }
    return p;
  }
  if (a & kAttrByte) {
    const int b = ParseByteToken(t);
    if (b >= 0) return std::string(1, static_cast<char>(b));
  }
  return std::string();  // unused / undefined
}

std::vector<Fragment> PartitionSpecial(const Vocab& vocab, std::string_view text, bool parse_special) {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({-1, 0, text.size()});
  std::vector<Fragment> next;
  for (TokenId id : vocab.special_tokens) {
    const uint8_t a = vocab.attr[id];
    if (!parse_special && (a & (kAttrControl | kAttrUnknown))) continue;
    const std::string& needle = vocab.text[id];
    // Cheap check first: rebuild the fragment list only if some raw fragment contains the token.
    bool found = false;
    for (const Fragment& f : frags) {
      if (f.token < 0 && text.substr(f.offset, f.length).find(needle) != std::string_view::npos) {
        found = true;
        break;
      }
    }
    if (!found) continue;
    next.clear();
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t start = f.offset;
      const size_t end = f.offset + f.length;
      while (start < end) {
        const size_t hit = text.substr(0, end).find(needle, start);
        if (hit == std::string_view::npos) break;
        if (hit > start) next.push_back({-1, start, hit - start});
        next.push_back({id, hit, needle.size()});
        start = hit + needle.size();
      }
      if (start < end) next.push_back({-1, start, end - start});
    }
    frags.swap(next);
  }
  return frags;
}

std::string CleanSpaces(const std::string& text) {
  if (text.empty()) return text;
  // Pass 1: drop the space before ? ! . ,
  std::string a(1, text[0]);
  for (size_t i = 1; i < text.size(); ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
    a.push_back(x);
  }
  // Pass 2: " ' " -> "'" (a consumed space cannot serve as the left space of the next match).
  std::string b(1, a[0]);
  bool prev_consumed = false;
  for (size_t i = 1; i < a.size(); ++i) {
    const char x = a[i];
    if (x == '\'' && i + 1 < a.size() && !prev_consumed && a[i - 1] == ' ' && a[i + 1] == ' ') {
      b.pop_back();
      b.push_back(x);
      ++i;  // skip the right space
      prev_consumed = true;
      continue;
    }
    prev_consumed = false;
    b.push_back(x);
  }
  // Pass 3: drop the space before 's 'm 're 've (not 't 'd 'll).
  std::string c(1, b[0]);
  for (size_t i = 1; i < b.size(); ++i) {
    const char x = b[i];
    if (b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      const char x2 = i + 2 < b.size() ? b[i + 2] : '\0';
      if (x1 == 's' || x1 == 'm' || ((x1 == 'r' || x1 == 'v') && x2 == 'e')) c.pop_back();
    }
    c.push_back(x);
  }
  return c;
}

}  // namespace lazyslot::tok
