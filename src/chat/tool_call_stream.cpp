// The incremental tool-call parser: scans the output as it grows, emits content up to anything that could
// start a call, and emits a call once the format's matcher says it is complete. ParseToolCalls is this parser
// fed the whole text at once, so the streamed and the one-shot results agree by construction.
#include <random>

#include "chat/tool_call_formats.h"
#include "chat/tool_calls.h"

namespace lazyslot {

using tool_call_internal::CallMatch;
using tool_call_internal::MatchCallAt;
using tool_call_internal::Scan;

namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

bool IsWs(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Length of the longest suffix of `text` (from `from` on) that is a proper prefix of `marker`.
size_t PartialSuffix(std::string_view text, size_t from, std::string_view marker) {
  const size_t avail = text.size() - from;
  for (size_t n = std::min(avail, marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

// Bytes at the end of `text` that begin a UTF-8 sequence not yet complete: held back so that no content delta
// splits a character.
size_t IncompleteUtf8Tail(std::string_view text) {
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const unsigned char c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace

struct ToolCallStreamParser::Impl {
  ToolCallFormat format;
  std::vector<ToolSpec> tools;
  std::vector<std::string> markers;  // call triggers, then "<think>"
  bool bare_json = false;
  bool header_pending = false;  // the output's start may still be a header without its trigger
  std::mt19937_64 rng;

  std::string text;  // all output so far
  size_t pos = 0;    // text[0, pos) is decided
  bool in_think = false;
  bool finished = false;
  // Content emission: whitespace is held until a non-space follows (dropped before a call, at the start and
  // at the end), which is how `content` comes out trimmed around calls.
  std::string pending_ws;
  bool content_started = false;
  bool outside_content = false;  // non-space content outside <think> seen: bare JSON can no longer start
  ParsedOutput result;
  std::vector<ToolStreamDelta>* out = nullptr;

  Impl(ToolCallFormat f, std::vector<ToolSpec> t, const ToolCallParseOptions& options)
      : format(f), tools(std::move(t)), in_think(options.in_think_at_start) {
    const auto& fm = tool_call_internal::MarkersFor(f);
    markers = fm.triggers;
    markers.emplace_back(kThinkOpen);
    bare_json = fm.bare_json;
    header_pending = fm.header_at_start && !in_think;
    if (options.id_seed != 0) {
      rng.seed(options.id_seed);
    } else {
      std::random_device rd;
      rng.seed((static_cast<uint64_t>(rd()) << 32) ^ rd());
    }
  }

  std::string NewId() {
    static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) id.push_back(kAlnum[rng() % 62]);
    return id;
  }

  void EmitContent(std::string_view s, bool think) {
    std::string add;
    for (char c : s) {
      if (IsWs(c)) {
        pending_ws.push_back(c);
        continue;
      }
      if (content_started) add += pending_ws;
      pending_ws.clear();
      add.push_back(c);
      content_started = true;
      if (!think) outside_content = true;
    }
    if (add.empty()) return;
    result.content += add;
    if (!out->empty() && out->back().tool_index < 0) {
      out->back().content += add;
    } else {
      ToolStreamDelta d;
      d.content = std::move(add);
      out->push_back(std::move(d));
    }
  }

  void EmitCalls(CallMatch& m) {
    pending_ws.clear();
    if (m.has_content) EmitContent(m.content, false);
    for (auto& raw : m.calls) {
      ToolCall call;
      call.id = raw.id.empty() ? NewId() : raw.id;
      call.name = raw.name;
      call.arguments = raw.arguments.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
      ToolStreamDelta head;
      head.tool_index = static_cast<int>(result.tool_calls.size());
      head.id = call.id;
      head.name = call.name;
      ToolStreamDelta args;
      args.tool_index = head.tool_index;
      args.arguments = call.arguments;
      out->push_back(std::move(head));
      out->push_back(std::move(args));
      result.tool_calls.push_back(std::move(call));
    }
  }

  // Decides as much of text[pos, end) as the bytes allow.
  void Advance(bool final) {
    const std::string_view t = text;
    while (pos < t.size()) {
      if (in_think) {
        const size_t close = t.find(kThinkClose, pos);
        if (close == std::string_view::npos) {
          const size_t keep =
              final ? 0
                    : std::min(std::max(PartialSuffix(t, pos, kThinkClose), IncompleteUtf8Tail(t)),
                               t.size() - pos);
          EmitContent(t.substr(pos, t.size() - keep - pos), true);
          pos = t.size() - keep;
          return;
        }
        EmitContent(t.substr(pos, close + kThinkClose.size() - pos), true);
        pos = close + kThinkClose.size();
        in_think = false;
        continue;
      }
      // The earliest place a call or a think block may start.
      size_t at = std::string_view::npos;
      size_t which = 0;
      for (size_t i = 0; i < markers.size(); ++i) {
        const size_t f = t.find(markers[i], pos);
        if (f < at) {
          at = f;
          which = i;
        }
      }
      bool bare = false, header = false;
      if (header_pending && pos == 0) {
        at = 0;
        header = true;
      } else if (bare_json && !outside_content) {
        size_t f = pos;
        while (f < t.size() && IsWs(t[f])) ++f;
        if (f < t.size() && t[f] == '{' && f < at) {
          at = f;
          bare = true;
        }
      }
      if (at == std::string_view::npos) {
        size_t keep = 0;
        if (!final) {
          for (const std::string& mk : markers) keep = std::max(keep, PartialSuffix(t, pos, mk));
          keep = std::min(std::max(keep, IncompleteUtf8Tail(t)), t.size() - pos);
        }
        EmitContent(t.substr(pos, t.size() - keep - pos), false);
        pos = t.size() - keep;
        return;
      }
      EmitContent(t.substr(pos, at - pos), false);
      pos = at;
      if (!bare && !header && markers[which] == kThinkOpen) {
        EmitContent(kThinkOpen, true);
        pos += kThinkOpen.size();
        in_think = true;
        continue;
      }
      CallMatch m = MatchCallAt(format, t, at, final, tools);
      if (m.scan == Scan::kNeedMore) return;
      header_pending = false;
      if (m.scan == Scan::kComplete) {
        EmitCalls(m);
        pos = m.end;
        continue;
      }
      // Not a call after all: its first marker becomes content and scanning resumes after it (a header at
      // the start has none: its text is scanned again as ordinary output).
      if (header) continue;
      const size_t n = bare ? 1 : markers[which].size();
      EmitContent(t.substr(at, n), false);
      pos = at + n;
    }
  }

  std::vector<ToolStreamDelta> Run(std::string_view chunk, bool final) {
    std::vector<ToolStreamDelta> deltas;
    if (finished) return deltas;
    out = &deltas;
    text.append(chunk);
    Advance(final);
    if (final) {
      pending_ws.clear();
      finished = true;
    }
    out = nullptr;
    return deltas;
  }
};

ToolCallStreamParser::ToolCallStreamParser(ToolCallFormat format, std::vector<ToolSpec> tools,
                                           ToolCallParseOptions options)
    : impl_(std::make_unique<Impl>(format, std::move(tools), options)) {}
ToolCallStreamParser::~ToolCallStreamParser() = default;
ToolCallStreamParser::ToolCallStreamParser(ToolCallStreamParser&&) noexcept = default;
ToolCallStreamParser& ToolCallStreamParser::operator=(ToolCallStreamParser&&) noexcept = default;

std::vector<ToolStreamDelta> ToolCallStreamParser::Feed(std::string_view chunk) {
  return impl_->Run(chunk, false);
}
std::vector<ToolStreamDelta> ToolCallStreamParser::Finish() { return impl_->Run({}, true); }
const ParsedOutput& ToolCallStreamParser::result() const { return impl_->result; }

ParsedOutput ParseToolCalls(std::string_view text, ToolCallFormat format, const std::vector<ToolSpec>& tools,
                            const ToolCallParseOptions& options) {
  ToolCallStreamParser parser(format, tools, options);
  (void)parser.Feed(text);
  (void)parser.Finish();
  return parser.result();
}

nlohmann::ordered_json ToolStreamDelta::ToOpenAiJson() const {
  using nlohmann::ordered_json;
  if (tool_index < 0) return {{"content", content}};
  ordered_json call = {{"index", tool_index}};
  if (!name.empty()) {
    call["id"] = id;
    call["type"] = "function";
    call["function"] = {{"name", name}, {"arguments", arguments}};
  } else {
    call["function"] = {{"arguments", arguments}};
  }
  return {{"tool_calls", ordered_json::array({call})}};
}

}  // namespace lazyslot
