// `lazyslot synth`: writes a random-weight GGUF (llama, qwen2, qwen3, qwen3moe, phi3, gemma3, bert or
// nomic-bert) that both lazyslot and llama.cpp load, with a synthetic byte-level BPE vocabulary or the
// tokenizer copied from another GGUF.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/synth_model.h"
#include "cli/synth_vocab.h"
#include "gguf/gguf.h"
#include "gguf/keys.h"
#include "gguf/writer.h"

namespace lazyslot::cli {
namespace {

struct SynthOptions {
  std::string arch = "qwen3";
  bool arch_given = false;  // --arch was on the command line (not its default)
  std::string preset;
  std::string type = "f32";
  uint64_t seed = 42;
  std::string out;
  std::string vocab_from;
  // Shape overrides: 0 / NaN = keep the preset's value.
  int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_vocab = 0, n_ctx = 0;
  int64_t sliding_window = 0;
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_rot = 0;
  double rope_base = 0, eps = 0;
  bool tied = false, untied = false;
};

Status BuildShape(const SynthOptions& o, SynthShape* s) {
  s->arch = o.arch;
  const std::string preset = !o.preset.empty()        ? o.preset
                             : o.arch == "bert"       ? "bge-small"
                             : o.arch == "nomic-bert" ? "nomic-embed"
                                                      : "tiny";
  if (!ApplyPreset(preset, s)) {
    return InvalidArgument(
        "--preset must be tiny, qwen3-0.6b, gemma3-1b, qwen3moe-a3b, phi4-mini, bge-small or nomic-embed, got '" +
        o.preset + "'");
  }
  // A preset of another architecture brings its own; with --arch given, the two must agree.
  if (s->arch != o.arch && o.arch_given) {
    return InvalidArgument("--preset " + preset + " is a " + s->arch + ", not a " + o.arch);
  }
  if (o.arch == "llama" && o.rope_base == 0) s->rope_base = 10000.0f;
  if (o.arch == "llama" && o.eps == 0) s->eps = 1e-5f;
  if (o.n_embd) s->n_embd = o.n_embd;
  if (o.n_layer) s->n_layer = o.n_layer;
  if (o.n_head) s->n_head = o.n_head;
  if (o.n_head_kv) s->n_head_kv = o.n_head_kv;
  if (o.head_dim) s->head_dim = o.head_dim;
  if (o.n_ff) s->n_ff = o.n_ff;
  if (o.n_vocab) s->n_vocab = o.n_vocab;
  if (o.n_ctx) s->n_ctx = o.n_ctx;
  if (o.rope_base != 0) s->rope_base = static_cast<float>(o.rope_base);
  if (o.eps != 0) s->eps = static_cast<float>(o.eps);
  if (o.tied) s->tied = true;
  if (o.untied) s->tied = false;
  if (o.sliding_window) s->sliding_window = o.sliding_window;
  if (o.n_expert) s->n_expert = o.n_expert;
  if (o.n_expert_used) s->n_expert_used = o.n_expert_used;
  if (o.n_ff_exp) s->n_ff_exp = o.n_ff_exp;
  if (o.n_rot) s->n_rot = o.n_rot;
  if (s->arch == "gemma3" && s->sliding_window == 0) s->sliding_window = std::min<int64_t>(512, s->n_ctx);
  return Status::Ok();
}

Status RunSynth(const SynthOptions& o) {
  if (o.out.empty()) return InvalidArgument("-o/--output is required");
  TensorType type;
  if (!ParseTypeName(o.type, &type)) return InvalidArgument("--type: unknown tensor type '" + o.type + "'");
  SynthShape shape;
  LS_RETURN_IF_ERROR(BuildShape(o, &shape));

  // The tokenizer comes from another file (n_vocab = its token count) or is synthesized.
  std::unique_ptr<gguf::File> vocab_src;
  if (!o.vocab_from.empty()) {
    LS_ASSIGN_OR_RETURN(vocab_src, gguf::File::Open(o.vocab_from));
    LS_ASSIGN_OR_RETURN(const gguf::Value* tokens,
                        vocab_src->GetArray(gguf::keys::kTokenizerTokens, gguf::ValueType::kString));
    const int64_t n_tokens = static_cast<int64_t>(tokens->strings.size());
    if (o.n_vocab != 0 && o.n_vocab != n_tokens) {
      return InvalidArgument("--n-vocab " + std::to_string(o.n_vocab) + " disagrees with the " +
                             std::to_string(n_tokens) + " tokens of " + o.vocab_from);
    }
    shape.n_vocab = n_tokens;
  }
  LS_RETURN_IF_ERROR(ValidateSynth(shape, type));

  gguf::Writer w;
  LS_RETURN_IF_ERROR(AddSynthModel(shape, type, o.seed, &w));  // architecture keys + lazy tensors
  if (vocab_src) {
    for (const gguf::KeyValue& kv : vocab_src->metadata()) {
      if (kv.key.rfind(gguf::keys::kTokenizerPrefix, 0) == 0) LS_RETURN_IF_ERROR(w.CopyKv(kv.value, kv.key));
    }
  } else {
    LS_ASSIGN_OR_RETURN(SynthVocab vocab, BuildSynthVocab(shape.n_vocab));
    WriteSynthVocab(vocab, &w);
  }

  // Progress only for a person watching: never in logs or pipes.
  const bool show = ::isatty(STDERR_FILENO) != 0;
  int last_pct = -1;
  auto progress = [&](uint64_t done, uint64_t total) {
    if (!show || total == 0) return;
    const int pct = static_cast<int>(done * 100 / total);
    if (pct == last_pct) return;
    last_pct = pct;
    std::fprintf(stderr, "\rsynth: writing tensors %3d%% (%.1f / %.1f MiB)", pct, done / 1048576.0,
                 total / 1048576.0);
    if (done == total) std::fprintf(stderr, "\n");
  };
  LS_RETURN_IF_ERROR(w.Write(o.out, progress));
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(o.out, ec);
  std::printf("wrote %s (%s %s, %s, %zu tensors, %ju bytes = %.1f MiB)\n", o.out.c_str(), shape.arch.c_str(),
              shape.name.c_str(), TypeName(type), w.n_tensors(), ec ? uintmax_t{0} : size,
              ec ? 0.0 : size / 1048576.0);
  return Status::Ok();
}

}  // namespace

void AddSynthCommand(CLI::App& root, int* exit_code) {
  auto o = std::make_shared<SynthOptions>();
  CLI::App* sub =
      root.add_subcommand("synth", "Write a random-weight GGUF model (for demos, tests and benchmarks)");
  CLI::Option* arch =
      sub->add_option("--arch", o->arch,
                      "Architecture: llama, qwen2, qwen3, qwen3moe, phi3, gemma3, bert or nomic-bert")
          ->check(CLI::IsMember({"llama", "qwen2", "qwen3", "qwen3moe", "phi3", "gemma3", "bert", "nomic-bert"}))
          ->capture_default_str();
  sub->add_option(
         "--preset", o->preset,
         "Shape preset: tiny (default), qwen3-0.6b, gemma3-1b, qwen3moe-a3b (Qwen3-30B-A3B's layers, 12 of "
         "48), phi4-mini (a phi3), bge-small (a bert; the default for --arch bert) or nomic-embed (a nomic-bert; "
         "the default for --arch nomic-bert)")
      ->check(CLI::IsMember({"tiny", "qwen3-0.6b", "gemma3-1b", "qwen3moe-a3b", "phi4-mini", "bge-small",
                             "nomic-embed"}));
  sub->add_option("--type", o->type, "Weight type: f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed of the deterministic weights")->capture_default_str();
  sub->add_option("-o,--output", o->out, "Output GGUF path")->required();
  sub->add_option("--vocab-from", o->vocab_from,
                  "Copy the tokenizer.* keys of this GGUF instead of synthesizing");
  sub->add_option("--n-embd", o->n_embd, "Embedding width");
  sub->add_option("--n-layer", o->n_layer, "Number of blocks");
  sub->add_option("--n-head", o->n_head, "Attention heads");
  sub->add_option("--n-head-kv", o->n_head_kv, "KV heads (GQA)");
  sub->add_option("--head-dim", o->head_dim, "Head dimension (key/value length)");
  sub->add_option("--n-ff", o->n_ff, "Feed-forward width");
  sub->add_option("--n-vocab", o->n_vocab, "Vocabulary size");
  sub->add_option("--n-ctx", o->n_ctx, "Training context length (metadata)");
  sub->add_option("--rope-base", o->rope_base, "RoPE frequency base");
  sub->add_option("--eps", o->eps, "RMSNorm epsilon");
  sub->add_option("--sliding-window", o->sliding_window, "gemma3: the local layers' window (default 512)");
  sub->add_option("--n-expert", o->n_expert, "qwen3moe: experts per layer (default 8)");
  sub->add_option("--n-expert-used", o->n_expert_used, "qwen3moe: experts a token is routed to (default 2)");
  sub->add_option("--n-ff-exp", o->n_ff_exp, "qwen3moe: one expert's feed-forward width (default 256)");
  sub->add_option("--n-rot", o->n_rot, "Rotated dims per head (partial rotary; default: all of --head-dim)");
  auto* tied = sub->add_flag("--tied", o->tied, "Tie the output head to token_embd (no output.weight)");
  sub->add_flag("--untied", o->untied, "Write a separate output.weight")->excludes(tied);
  sub->callback([o, exit_code, arch] {
    o->arch_given = arch->count() > 0;
    Status s = RunSynth(*o);
    if (!s.ok()) {
      std::fprintf(stderr, "lazyslot synth: error: %s\n", s.message().c_str());
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace lazyslot::cli
