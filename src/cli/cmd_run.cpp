// `lazyslot run`: generates text for one prompt and streams it to stdout; timings go to stderr.
// It drives the same Engine (scheduler, sampler, stop handling) that the server uses, with one slot.
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "engine/engine.h"

namespace lazyslot::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  int n_predict = 128;
  int32_t n_ctx = 4096;
  int threads = 0;
  SamplingParams sampling;
  int64_t seed = -1;
  bool no_special = false;
  std::string flash_attn = "on";
};

Status Run(const RunOptions& o) {
  EngineConfig cfg;
  cfg.model_path = o.model;
  cfg.n_parallel = 1;
  cfg.n_ctx = o.n_ctx;
  cfg.n_threads = o.threads;
  cfg.flash_attn = o.flash_attn != "off";
  LS_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(cfg));
  GenerationRequest req;
  LS_ASSIGN_OR_RETURN(req.prompt, engine->tokenizer().Tokenize(o.prompt, !o.no_special, true));
  req.n_predict = o.n_predict;
  req.sampling = o.sampling;
  req.sampling.seed = o.seed >= 0 ? static_cast<uint64_t>(o.seed) : std::random_device{}();
  LS_ASSIGN_OR_RETURN(std::shared_ptr<RequestStream> stream, engine->Submit(std::move(req)));
  std::fputs(o.prompt.c_str(), stdout);
  std::fflush(stdout);
  for (;;) {
    Event ev;
    if (!stream->Pop(&ev, std::chrono::milliseconds(1000))) continue;
    if (ev.type == Event::kError) return ev.error;
    if (ev.type == Event::kToken) {
      std::fputs(ev.text.c_str(), stdout);
      std::fflush(stdout);
      continue;
    }
    std::fputs("\n", stdout);
    std::fprintf(stderr,
                 "\nprompt: %d tokens in %.1f ms (%.1f tokens/s)\n"
                 "generation: %d tokens in %.1f ms (%.2f tokens/s), finish reason: %s\n",
                 ev.n_prompt, ev.prompt_ms, ev.n_prompt * 1000.0 / std::max(ev.prompt_ms, 1e-3), ev.n_generated,
                 ev.generation_ms, std::max(ev.n_generated - 1, 0) * 1000.0 / std::max(ev.generation_ms, 1e-3),
                 ev.finish_reason.c_str());
    return Status::Ok();
  }
}

}  // namespace

void AddRunCommand(CLI::App& root, int* exit_code) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = root.add_subcommand("run", "Generate text for a prompt and stream it to stdout");
  cmd->add_option("-m,--model", o->model, "GGUF model file")->required();
  cmd->add_option("-p,--prompt", o->prompt, "Prompt text")->required();
  cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate (-1: until end of text)")->capture_default_str();
  cmd->add_option("-c,--ctx-size", o->n_ctx, "Context size in tokens")->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "Threads (default: physical cores)");
  cmd->add_option("--temp", o->sampling.temperature, "Temperature (0: greedy)")->capture_default_str();
  cmd->add_option("--top-k", o->sampling.top_k, "Top-k (0: off)")->capture_default_str();
  cmd->add_option("--top-p", o->sampling.top_p, "Top-p (1: off)")->capture_default_str();
  cmd->add_option("--min-p", o->sampling.min_p, "Min-p (0: off)")->capture_default_str();
  cmd->add_option("--repeat-penalty", o->sampling.repeat_penalty, "Repetition penalty (1: off)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random seed (-1: random)")->capture_default_str();
  cmd->add_option("--flash-attn", o->flash_attn, "Online-softmax attention (llama.cpp -fa)")
      ->check(CLI::IsMember({"on", "off", "auto"}))
      ->capture_default_str();
  cmd->add_flag("--no-special", o->no_special, "Do not add BOS/EOS to the prompt");
  cmd->callback([o, exit_code] {
    Status st = Run(*o);
    if (!st.ok()) {
      std::fprintf(stderr, "lazyslot run: %s\n", st.message().c_str());
      *exit_code = 1;
    }
  });
}

}  // namespace lazyslot::cli
