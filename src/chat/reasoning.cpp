// Reasoning split: --reasoning-format names, reasoning syntax detection from a chat template, and one
// incremental state machine (think tags or gpt-oss harmony channels) that serves both the whole-output split
// and the streamed deltas, so the two cannot disagree.
#include "chat/reasoning.h"

#include <algorithm>
#include <array>
#include <utility>

namespace lazyslot {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

constexpr std::string_view kHarmonyStart = "<|start|>";
constexpr std::string_view kHarmonyChannel = "<|channel|>";
constexpr std::string_view kHarmonyMessage = "<|message|>";
constexpr std::array<std::string_view, 2> kHarmonyHeaderMarkers = {kHarmonyStart, kHarmonyChannel};
constexpr std::array<std::string_view, 3> kHarmonyEndMarkers = {"<|end|>", "<|return|>", "<|call|>"};
// A header ("<|start|>assistant<|channel|>commentary to=functions.x <|constrain|>json") longer than this
// without "<|message|>" is not a header: its marker is plain text.
constexpr size_t kMaxHarmonyHeader = 256;

// std::isspace in the "C" locale, as llama.cpp's stripping uses.
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

size_t LeadingSpace(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

std::string_view StripTrailingSpace(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Length of the longest suffix of `text` that is a proper prefix of `tag` (0 if none).
size_t PartialSuffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

template <size_t N>
size_t PartialSuffixAny(std::string_view text, const std::array<std::string_view, N>& tags) {
  size_t best = 0;
  for (std::string_view tag : tags) best = std::max(best, PartialSuffix(text, tag));
  return best;
}

// The earliest occurrence of any of `tags` in `text`: its position and length (npos if none).
template <size_t N>
std::pair<size_t, size_t> FindAny(std::string_view text, const std::array<std::string_view, N>& tags) {
  std::pair<size_t, size_t> best = {std::string_view::npos, 0};
  for (std::string_view tag : tags) {
    const size_t at = text.find(tag);
    if (at < best.first) best = {at, tag.size()};
  }
  return best;
}

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace

Result<ReasoningFormat> ParseReasoningFormat(std::string_view name) {
  if (name == "none") return ReasoningFormat::kNone;
  if (name == "deepseek") return ReasoningFormat::kDeepSeek;
  if (name == "deepseek-legacy") return ReasoningFormat::kDeepSeekLegacy;
  if (name == "auto") return ReasoningFormat::kAuto;
  return InvalidArgument("unknown reasoning format \"" + std::string(name) +
                         "\"; expected one of: none, deepseek, deepseek-legacy, auto");
}

Result<int> ParseReasoningSwitch(std::string_view value) {
  if (value == "on" || value == "enabled" || value == "true" || value == "1") return 1;
  if (value == "off" || value == "disabled" || value == "false" || value == "0") return 0;
  if (value == "auto" || value == "-1") return -1;
  return InvalidArgument("unknown value for --reasoning: '" + std::string(value) + "' (expected on, off or auto)");
}

const char* ReasoningFormatName(ReasoningFormat format) {
  switch (format) {
    case ReasoningFormat::kNone:
      return "none";
    case ReasoningFormat::kDeepSeek:
      return "deepseek";
    case ReasoningFormat::kDeepSeekLegacy:
      return "deepseek-legacy";
    case ReasoningFormat::kAuto:
      return "auto";
  }
  return "unknown";
}

const char* ReasoningSyntaxName(ReasoningSyntax syntax) {
  switch (syntax) {
    case ReasoningSyntax::kNone:
      return "none";
    case ReasoningSyntax::kThinkTags:
      return "think tags";
    case ReasoningSyntax::kGptOssChannels:
      return "gpt-oss channels";
  }
  return "unknown";
}

ReasoningSyntax DetectReasoningSyntax(std::string_view template_source) {
  if (Contains(template_source, kHarmonyChannel)) return ReasoningSyntax::kGptOssChannels;
  if (Contains(template_source, kThinkOpen) || Contains(template_source, "reasoning_content")) {
    return ReasoningSyntax::kThinkTags;
  }
  return ReasoningSyntax::kNone;
}

bool TemplateSupportsThinkingSwitch(std::string_view template_source) {
  return Contains(template_source, "enable_thinking");
}

bool TemplateSupportsReasoningEffort(std::string_view template_source) {
  return Contains(template_source, "reasoning_effort");
}

// ---- The state machine ------------------------------------------------------------------------------------

class ReasoningStreamParser::Impl {
 public:
  explicit Impl(const ReasoningOptions& options)
      : passthrough_(options.syntax == ReasoningSyntax::kNone || options.format == ReasoningFormat::kNone),
        inline_(options.format == ReasoningFormat::kDeepSeekLegacy) {
    if (options.syntax == ReasoningSyntax::kGptOssChannels) {
      state_ = State::kBetween;
    } else {
      state_ = options.in_think_at_start ? State::kForcedStart : State::kStart;
    }
  }

  std::vector<ReasoningDelta> Feed(std::string_view chunk) {
    if (finished_ || chunk.empty()) return {};
    if (passthrough_) {
      Content(chunk);
    } else {
      pending_.append(chunk);
      Run(/*finish=*/false);
    }
    return std::exchange(out_, {});
  }

  std::vector<ReasoningDelta> Finish() {
    if (finished_) return {};
    finished_ = true;
    if (!passthrough_) Run(/*finish=*/true);
    pending_.clear();
    return std::exchange(out_, {});
  }

 private:
  enum class State {
    // Think tags.
    kStart,        // before the first non-space: a <think> may open a block
    kForcedStart,  // as kStart, but already inside a block (the prompt opened it)
    kThink,        // inside a block
    kAfterClose,   // after </think>: spaces are dropped, another <think> may follow
    kContent,      // the answer: everything passes
    // gpt-oss harmony.
    kBetween,  // outside a message
    kHeader,   // from <|start|> or <|channel|> up to <|message|>
    kBody,     // a message body, up to its end marker
  };
  enum class BodyKind { kAnalysis, kFinal, kRaw };

  void Emit(bool reasoning, std::string_view text) {
    if (text.empty()) return;
    if (!out_.empty() && out_.back().reasoning == reasoning) {
      out_.back().text.append(text);
    } else {
      out_.push_back({reasoning, std::string(text)});
    }
  }
  void Content(std::string_view text) { Emit(false, text); }

  // Reasoning text of the current block; the block's leading spaces are dropped. With deepseek-legacy the
  // text goes inline into the content, the block's open tag first.
  void Reasoning(std::string_view text) {
    if (!block_started_) {
      text.remove_prefix(LeadingSpace(text));
      if (text.empty()) return;
      block_started_ = true;
      if (inline_) Content(kThinkOpen);
    }
    Emit(!inline_, text);
  }
  void CloseBlock() {
    if (inline_ && block_started_) Content(kThinkClose);
    block_started_ = false;
  }

  // Drops the first n pending bytes.
  void Consume(size_t n) { pending_.erase(0, n); }

  // Decides as much pending text as it can; with `finish`, all of it.
  void Run(bool finish) {
    while (Step(finish)) {
    }
  }

  // One transition; false when the pending text cannot be decided further yet.
  bool Step(bool finish) {
    switch (state_) {
      case State::kStart:
      case State::kForcedStart:
        return StepStart(finish);
      case State::kThink:
        return StepThink(finish);
      case State::kAfterClose:
        return StepAfterClose(finish);
      case State::kContent:
        Content(pending_);
        pending_.clear();
        return false;
      case State::kBetween:
        return StepBetween(finish);
      case State::kHeader:
        return StepHeader(finish);
      case State::kBody:
        return StepBody(finish);
    }
    return false;
  }

  bool StepStart(bool finish) {
    const bool forced = state_ == State::kForcedStart;
    const size_t space = LeadingSpace(pending_);
    const std::string_view rest = std::string_view(pending_).substr(space);
    if (rest.substr(0, kThinkOpen.size()) == kThinkOpen) {
      // Spaces before the tag stay in the content (llama.cpp keeps them); inside a forced block they are
      // the reasoning's leading spaces, which are dropped.
      if (!forced) Content(std::string_view(pending_).substr(0, space));
      Consume(space + kThinkOpen.size());
      block_started_ = false;
      state_ = State::kThink;
      return true;
    }
    const bool undecided = rest.empty() || kThinkOpen.substr(0, rest.size()) == rest;
    if (undecided && !finish) return false;
    // No block at the start (or the output ended on a partial "<think>", kept as text).
    state_ = forced ? State::kThink : State::kContent;
    block_started_ = false;
    return true;
  }

  bool StepThink(bool finish) {
    const size_t close = pending_.find(kThinkClose);
    if (close != std::string::npos) {
      Reasoning(StripTrailingSpace(std::string_view(pending_).substr(0, close)));
      Consume(close + kThinkClose.size());
      CloseBlock();
      state_ = State::kAfterClose;
      return true;
    }
    // A partial "</think>" at the end is held back; at the end of the output it is dropped, as llama.cpp
    // does (the model was cut off in the middle of closing its block).
    const size_t safe = pending_.size() - PartialSuffix(pending_, kThinkClose);
    const std::string_view decided = StripTrailingSpace(std::string_view(pending_).substr(0, safe));
    Reasoning(decided);
    if (finish) {
      pending_.clear();
      CloseBlock();
      return false;
    }
    Consume(decided.size());  // trailing spaces wait: they are stripped if the block closes after them
    return false;
  }

  bool StepAfterClose(bool finish) {
    Consume(LeadingSpace(pending_));
    if (pending_.empty()) return false;
    if (pending_.compare(0, kThinkOpen.size(), kThinkOpen) == 0) {
      Consume(kThinkOpen.size());
      block_started_ = false;
      state_ = State::kThink;
      return true;
    }
    if (!finish && kThinkOpen.substr(0, pending_.size()) == pending_) return false;
    state_ = State::kContent;
    return true;
  }

  bool StepBetween(bool finish) {
    const auto [at, len] = FindAny(pending_, kHarmonyHeaderMarkers);
    const std::string_view view = pending_;
    // Whitespace alone between two messages (or before the first) is dropped, as llama.cpp skips the text
    // between messages; once other text came, everything up to the next header is content.
    if (at != std::string::npos) {
      const std::string_view before = view.substr(0, at);
      if (between_text_ || LeadingSpace(before) < before.size()) Content(before);
      Consume(at);
      header_marker_ = len;
      state_ = State::kHeader;
      return true;
    }
    const size_t hold = finish ? 0 : PartialSuffixAny(view, kHarmonyHeaderMarkers);
    const std::string_view decided = view.substr(0, view.size() - hold);
    if (!finish && !between_text_ && LeadingSpace(decided) == decided.size()) return false;
    if (!decided.empty()) between_text_ = true;
    Content(decided);
    Consume(decided.size());
    return false;
  }

  bool StepHeader(bool finish) {
    const size_t at = pending_.find(kHarmonyMessage);
    if (at != std::string::npos && at <= kMaxHarmonyHeader) {
      const std::string_view header = std::string_view(pending_).substr(0, at);
      if (Contains(header, " to=")) {
        body_kind_ = BodyKind::kRaw;  // a tool call
      } else if (Contains(header, "<|channel|>analysis")) {
        body_kind_ = inline_ ? BodyKind::kRaw : BodyKind::kAnalysis;
      } else if (Contains(header, "<|channel|>final")) {
        body_kind_ = BodyKind::kFinal;
      } else {
        body_kind_ = BodyKind::kRaw;  // commentary (preamble), or a channel this layer does not know
      }
      const size_t header_end = at + kHarmonyMessage.size();
      if (body_kind_ == BodyKind::kRaw) Content(std::string_view(pending_).substr(0, header_end));
      Consume(header_end);
      block_started_ = false;
      state_ = State::kBody;
      return true;
    }
    const bool too_long =
        at != std::string::npos || pending_.size() >= kMaxHarmonyHeader + kHarmonyMessage.size();
    if (!too_long && !finish) return false;
    // Not a header: its marker is text.
    between_text_ = true;
    Content(std::string_view(pending_).substr(0, header_marker_));
    Consume(header_marker_);
    state_ = State::kBetween;
    return true;
  }

  bool StepBody(bool finish) {
    const std::string_view view = pending_;
    const auto [at, len] = FindAny(view, kHarmonyEndMarkers);
    if (at != std::string::npos) {
      const std::string_view body = view.substr(0, at);
      switch (body_kind_) {
        case BodyKind::kAnalysis:
          Reasoning(StripTrailingSpace(body));
          block_started_ = false;
          break;
        case BodyKind::kFinal:
          Content(body);
          break;
        case BodyKind::kRaw:
          Content(view.substr(0, at + len));
          break;
      }
      Consume(at + len);
      between_text_ = false;
      state_ = State::kBetween;
      return true;
    }
    const size_t hold = PartialSuffixAny(view, kHarmonyEndMarkers);
    if (body_kind_ == BodyKind::kAnalysis) {
      // As a think block: trailing spaces wait, a partial end marker at the end of the output is dropped.
      const std::string_view decided = StripTrailingSpace(view.substr(0, view.size() - hold));
      Reasoning(decided);
      if (finish) {
        pending_.clear();
      } else {
        Consume(decided.size());
      }
      return false;
    }
    const std::string_view decided = view.substr(0, finish ? view.size() : view.size() - hold);
    Content(decided);
    Consume(decided.size());
    return false;
  }

  const bool passthrough_;
  const bool inline_;
  State state_;
  BodyKind body_kind_ = BodyKind::kFinal;
  bool block_started_ = false;  // the current reasoning block has had a non-space character
  size_t header_marker_ = 0;    // length of the marker that opened the pending header
  bool between_text_ = false;   // text other than whitespace came since the last message ended
  bool finished_ = false;
  std::string pending_;  // undecided text
  std::vector<ReasoningDelta> out_;
};

ReasoningStreamParser::ReasoningStreamParser(ReasoningOptions options)
    : impl_(std::make_unique<Impl>(options)) {}
ReasoningStreamParser::~ReasoningStreamParser() = default;
ReasoningStreamParser::ReasoningStreamParser(ReasoningStreamParser&&) noexcept = default;
ReasoningStreamParser& ReasoningStreamParser::operator=(ReasoningStreamParser&&) noexcept = default;

std::vector<ReasoningDelta> ReasoningStreamParser::Feed(std::string_view chunk) {
  return impl_ ? impl_->Feed(chunk) : std::vector<ReasoningDelta>{};
}

std::vector<ReasoningDelta> ReasoningStreamParser::Finish() {
  return impl_ ? impl_->Finish() : std::vector<ReasoningDelta>{};
}

ReasoningSplit SplitReasoning(std::string_view text, const ReasoningOptions& options) {
  ReasoningOptions whole = options;
  // llama-server keeps deepseek-legacy reasoning inline only when streaming.
  if (whole.format == ReasoningFormat::kDeepSeekLegacy) whole.format = ReasoningFormat::kDeepSeek;
  ReasoningStreamParser parser(whole);
  ReasoningSplit split;
  for (const auto& batch : {parser.Feed(text), parser.Finish()}) {
    for (const ReasoningDelta& d : batch) (d.reasoning ? split.reasoning : split.content).append(d.text);
  }
  return split;
}

}  // namespace lazyslot
