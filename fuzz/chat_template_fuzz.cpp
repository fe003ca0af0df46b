// libFuzzer target: the chat-template interpreter on a fuzzed template and fuzzed messages. The input is
// "<template source>\n#messages#\n<JSON>"; the JSON is a messages array or an object {"messages": [...],
// ...extra variables}. Parsing and rendering must end in text within the output limit or an error Status.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chat/chat_template.h"
#include "chat/jinja/jinja_eval.h"
#include "chat/jinja/jinja_parser.h"
#include "core/log.h"
#include "fuzz_check.h"

namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kSeparator = "\n#messages#\n";

Json DefaultMessages() {
  return Json::parse(R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"},
    {"role":"assistant","content":"Hi there."},{"role":"user","content":[{"type":"text","text":"How?"}]}])");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (lazyslot::SetLogLevel(lazyslot::LogLevel::kSilent), true);
  (void)quiet;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t sep = input.find(kSeparator);
  const std::string source(input.substr(0, sep));
  Json messages = DefaultMessages();
  Json extra = Json::object();
  extra["bos_token"] = "<s>";
  extra["eos_token"] = "</s>";
  if (sep != std::string_view::npos) {
    // Invalid JSON keeps the default conversation, so the template half is still explored.
    Json j = Json::parse(input.substr(sep + kSeparator.size()), nullptr, /*allow_exceptions=*/false);
    if (j.is_array()) {
      messages = std::move(j);
    } else if (j.is_object()) {
      auto it = j.find("messages");
      if (it != j.end()) messages = *it;
      for (auto kv = j.begin(); kv != j.end(); ++kv) {
        if (kv.key() != "messages") extra[kv.key()] = kv.value();
      }
    }
  }
  const bool add_generation_prompt = size % 2 == 1;

  auto program = lazyslot::jinja::ParseTemplate(source);
  auto parsed = lazyslot::ChatTemplate::Parse(source, "fuzz");
  FUZZ_CHECK(program.ok() == parsed.ok(), "ParseTemplate and ChatTemplate::Parse disagree");
  if (!program.ok()) {
    FUZZ_CHECK(!program.status().message().empty(), "parse error without a message");
    return 0;
  }

  if (!messages.is_array()) {
    FUZZ_CHECK(!parsed->Apply(messages, add_generation_prompt, extra).ok(), "Apply accepted a non-array");
    return 0;
  }
  // The same context ChatTemplate::Apply builds, rendered under tighter limits so each run stays fast.
  Json ctx = extra;
  ctx["messages"] = messages;
  ctx["add_generation_prompt"] = add_generation_prompt;
  auto context = lazyslot::jinja::Value::FromJson(ctx);
  if (!context.ok()) return 0;  // e.g. nested deeper than the value depth limit
  lazyslot::jinja::RenderLimits limits;
  limits.max_output_bytes = size_t{256} << 10;
  limits.max_work = int64_t{1} << 20;
  lazyslot::jinja::Evaluator evaluator(**program, limits);
  auto out = evaluator.Render(*context);
  if (!out.ok()) {
    FUZZ_CHECK(!out.status().message().empty(), "render error without a message");
    return 0;
  }
  FUZZ_CHECK(out->size() <= limits.max_output_bytes, "output of " + std::to_string(out->size()) + " bytes");

  // What finished under the tight limits also finishes under the defaults, with the same text (unless the
  // template reads the clock).
  auto applied = parsed->Apply(messages, add_generation_prompt, extra);
  FUZZ_CHECK(applied.ok(), "Apply failed where the direct render succeeded: " + applied.status().message());
  if (source.find("strftime_now") == std::string::npos) {
    FUZZ_CHECK(*applied == *out, "Apply and the direct render differ");
  }
  return 0;
}
