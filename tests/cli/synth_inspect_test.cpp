// `lazyslot synth` and `lazyslot inspect`, run as the real executable (LAZYSLOT_BINARY); the files synth
// writes are checked with the GGUF reader: metadata keys, tensor names, shapes and types, vocabulary,
// determinism.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "test_util.h"

namespace lazyslot {
namespace {

using ::lazyslot::testing::SharedPath;

struct RunResult {
  int rc = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class SynthInspect : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("lazyslot_cli_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs `lazyslot ARGS` with stdout and stderr captured separately.
  RunResult Run(const std::string& args) {
    const std::string err_path = Path("stderr.txt");
    const std::string cmd = std::string(LAZYSLOT_BINARY) + " " + args + " 2>" + err_path;
    RunResult r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
    const int status = ::pclose(p);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = Slurp(err_path);
    return r;
  }

  std::unique_ptr<gguf::File> Open(const std::string& path) {
    auto r = gguf::File::Open(path);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  std::filesystem::path dir_;
};

std::vector<int64_t> Shape(const gguf::TensorInfo& t) { return std::vector<int64_t>(t.ne, t.ne + t.n_dims); }

TEST_F(SynthInspect, EveryArchAndTypeHasTheRightKeysAndTensors) {
  const char* archs[] = {"llama", "qwen2", "qwen3"};
  const char* types[] = {"f32", "f16", "q8_0", "q4_0", "q4_k"};
  const int64_t n_embd = 256, n_layer = 2, n_head = 4, n_head_kv = 2, hd = 64, n_ff = 512, n_vocab = 300;
  for (const char* arch : archs) {
    for (const char* type : types) {
      SCOPED_TRACE(std::string(arch) + " " + type);
      const std::string out = Path(std::string(arch) + "_" + type + ".gguf");
      const RunResult r = Run(std::string("synth --arch ") + arch + " --type " + type +
                              " --seed 3 --n-layer 2 --n-ff 512 --n-vocab 300 -o " + out);
      ASSERT_EQ(r.rc, 0) << r.err;
      EXPECT_NE(r.out.find(out), std::string::npos) << r.out;
      EXPECT_TRUE(r.err.empty()) << "stderr is not a terminal, so no progress expected: " << r.err;
      auto f = Open(out);
      ASSERT_NE(f, nullptr);
      const std::string a = arch;
      EXPECT_EQ(*f->GetString("general.architecture"), a);
      EXPECT_TRUE(f->GetString("general.name").ok());
      EXPECT_TRUE(f->GetU32("general.file_type").ok());
      EXPECT_EQ(*f->GetU32(a + ".embedding_length"), n_embd);
      EXPECT_EQ(*f->GetU32(a + ".block_count"), n_layer);
      EXPECT_EQ(*f->GetU32(a + ".feed_forward_length"), n_ff);
      EXPECT_EQ(*f->GetU32(a + ".attention.head_count"), n_head);
      EXPECT_EQ(*f->GetU32(a + ".attention.head_count_kv"), n_head_kv);
      EXPECT_EQ(*f->GetU32(a + ".attention.key_length"), hd);
      EXPECT_EQ(*f->GetU32(a + ".attention.value_length"), hd);
      EXPECT_EQ(*f->GetU32(a + ".rope.dimension_count"), hd);
      EXPECT_TRUE(f->GetU32(a + ".context_length").ok());
      EXPECT_GT(*f->GetF32(a + ".attention.layer_norm_rms_epsilon"), 0.0f);
      EXPECT_GT(*f->GetF32(a + ".rope.freq_base"), 0.0f);

      TensorType want;
      ASSERT_TRUE(ParseTypeName(type, &want));
      // Tied by default: no output.weight; qwen2 has q/k/v biases, qwen3 per-head q/k norms.
      const size_t per_layer = 9 + (a == "qwen2" ? 3 : 0) + (a == "qwen3" ? 2 : 0);
      EXPECT_EQ(f->tensors().size(), 2 + n_layer * per_layer);
      EXPECT_EQ(f->FindTensor("output.weight"), nullptr);
      const gguf::TensorInfo* embd = f->FindTensor("token_embd.weight");
      ASSERT_NE(embd, nullptr);
      EXPECT_EQ(embd->type, want);
      EXPECT_EQ(Shape(*embd), (std::vector<int64_t>{n_embd, n_vocab}));
      struct Want {
        std::string name;
        std::vector<int64_t> shape;
        bool weight;
      };
      std::vector<Want> wants = {{"output_norm.weight", {n_embd}, false},
                                 {"blk.1.attn_norm.weight", {n_embd}, false},
                                 {"blk.1.attn_q.weight", {n_embd, n_head * hd}, true},
                                 {"blk.1.attn_k.weight", {n_embd, n_head_kv * hd}, true},
                                 {"blk.1.attn_v.weight", {n_embd, n_head_kv * hd}, true},
                                 {"blk.1.attn_output.weight", {n_head * hd, n_embd}, true},
                                 {"blk.1.ffn_norm.weight", {n_embd}, false},
                                 {"blk.1.ffn_gate.weight", {n_embd, n_ff}, true},
                                 {"blk.1.ffn_up.weight", {n_embd, n_ff}, true},
                                 {"blk.1.ffn_down.weight", {n_ff, n_embd}, true}};
      if (a == "qwen3") {
        wants.push_back({"blk.0.attn_q_norm.weight", {hd}, false});
        wants.push_back({"blk.0.attn_k_norm.weight", {hd}, false});
      }
      if (a == "qwen2") {
        wants.push_back({"blk.0.attn_q.bias", {n_head * hd}, false});
        wants.push_back({"blk.0.attn_k.bias", {n_head_kv * hd}, false});
        wants.push_back({"blk.0.attn_v.bias", {n_head_kv * hd}, false});
      }
      for (const Want& w : wants) {
        const gguf::TensorInfo* t = f->FindTensor(w.name);
        ASSERT_NE(t, nullptr) << w.name;
        EXPECT_EQ(Shape(*t), w.shape) << w.name;
        EXPECT_EQ(t->type, w.weight ? want : TensorType::kF32) << w.name;
      }
      EXPECT_EQ(f->FindTensor("blk.0.attn_q_norm.weight") != nullptr, a == "qwen3");
      EXPECT_EQ(f->FindTensor("blk.0.attn_q.bias") != nullptr, a == "qwen2");
      // llama.cpp's layout: offsets packed in table order with alignment padding.
      uint64_t offset = 0;
      for (const gguf::TensorInfo& t : f->tensors()) {
        EXPECT_EQ(t.offset, offset) << t.name;
        offset += (t.nbytes + f->alignment() - 1) / f->alignment() * f->alignment();
      }
      auto tokens = f->GetArray("tokenizer.ggml.tokens", gguf::ValueType::kString);
      ASSERT_TRUE(tokens.ok());
      EXPECT_EQ((*tokens)->strings.size(), static_cast<size_t>(n_vocab));
    }
  }
}

// gemma3: the sandwich norms and q/k norms per layer, the window key, and a file that loads and runs:
// `bench` at a depth past the window, whose tests slide it (each test starts from the held context again).
TEST_F(SynthInspect, Gemma3HasItsNormsAndWindowAndBenchesAtDepth) {
  const std::string out = Path("gemma3.gguf");
  RunResult r = Run("synth --arch gemma3 --type q8_0 --n-layer 6 --n-vocab 300 --sliding-window 32 -o " + out);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto f = Open(out);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->GetU32("gemma3.attention.sliding_window"), 32u);
  EXPECT_EQ(f->Find("gemma3.attention.sliding_window_pattern"), nullptr) << "llama.cpp's default period 6";
  for (const char* name : {"blk.5.attn_q_norm.weight", "blk.5.attn_k_norm.weight", "blk.5.post_attention_norm.weight",
                           "blk.5.post_ffw_norm.weight"}) {
    EXPECT_NE(f->FindTensor(name), nullptr) << name;
  }
  r = Run("bench -m " + out + " -p 16 -n 4 -d 100 -r 2 --no-bandwidth");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("pp16 @ d100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tg4 @ d100"), std::string::npos) << r.out;
  EXPECT_NE(Run("synth --arch gemma3 --sliding-window 99999 -o " + Path("bad.gguf")).rc, 0);
}

// qwen3moe: the expert keys, an F32 router and 3-D expert tensors per layer, and a file that loads and
// benches (bench counts the experts a token reads, not all of them).
TEST_F(SynthInspect, Qwen3MoeHasItsExpertsAndBenches) {
  const std::string out = Path("qwen3moe.gguf");
  RunResult r = Run("synth --arch qwen3moe --type q4_k --n-layer 2 --n-vocab 300 --n-expert 16 --n-expert-used 4 "
                    "--n-ff-exp 512 -o " + out);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto f = Open(out);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->GetU32("qwen3moe.expert_count"), 16u);
  EXPECT_EQ(*f->GetU32("qwen3moe.expert_used_count"), 4u);
  EXPECT_EQ(*f->GetU32("qwen3moe.expert_feed_forward_length"), 512u);
  const gguf::TensorInfo* router = f->FindTensor("blk.1.ffn_gate_inp.weight");
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->type, TensorType::kF32);
  const gguf::TensorInfo* down = f->FindTensor("blk.1.ffn_down_exps.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->type, TensorType::kQ4_K);
  EXPECT_EQ(down->n_dims, 3u);
  EXPECT_EQ(down->ne[0], 512);
  EXPECT_EQ(down->ne[2], 16);
  EXPECT_EQ(f->FindTensor("blk.0.ffn_gate.weight"), nullptr);
  r = Run("bench -m " + out + " -p 16 -n 4 -r 2 --no-bandwidth");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("tg4"), std::string::npos) << r.out;
  EXPECT_NE(Run("synth --arch qwen3moe --n-expert 4 --n-expert-used 5 -o " + Path("bad.gguf")).rc, 0);
}

// phi3: the fused attn_qkv and ffn_up, partial rotary with LongRoPE's factors and keys, and a file that loads
// and benches.
TEST_F(SynthInspect, Phi3HasFusedTensorsAndLongRopeAndBenches) {
  const std::string out = Path("phi3.gguf");
  RunResult r = Run("synth --arch phi3 --type q8_0 --n-layer 2 --n-vocab 300 --n-ff 512 --n-rot 48 --n-ctx 16384 -o " +
                    out);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto f = Open(out);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->GetU32("phi3.rope.dimension_count"), 48u);
  EXPECT_EQ(*f->GetU32("phi3.rope.scaling.original_context_length"), 4096u);
  EXPECT_NEAR(*f->GetF32("phi3.rope.scaling.attn_factor"), 1.0801234f, 1e-6f);  // sqrt(1 + ln 4 / ln 4096)
  const gguf::TensorInfo* qkv = f->FindTensor("blk.1.attn_qkv.weight");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->ne[1], (4 + 2 + 2) * 64);
  const gguf::TensorInfo* up = f->FindTensor("blk.1.ffn_up.weight");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->ne[1], 2 * 512);
  const gguf::TensorInfo* factors = f->FindTensor("rope_factors_long.weight");
  ASSERT_NE(factors, nullptr);
  EXPECT_EQ(factors->ne[0], 24);
  EXPECT_EQ(f->FindTensor("blk.0.attn_q.weight"), nullptr);
  r = Run("bench -m " + out + " -p 16 -n 4 -r 2 --no-bandwidth");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("tg4"), std::string::npos) << r.out;
  EXPECT_NE(Run("synth --arch phi3 --n-rot 65 -o " + Path("bad.gguf")).rc, 0);
}

// nomic-bert: the fused attn_qkv, the SwiGLU FFN, no position embeddings, mean pooling and RoPE keys, and a
// file that loads and embeds (eval --embed: a unit vector).
TEST_F(SynthInspect, NomicBertHasFusedQkvAndNoPositionsAndEmbeds) {
  const std::string out = Path("nomic.gguf");
  RunResult r = Run("synth --arch nomic-bert --type q8_0 --n-layer 2 --n-vocab 300 -o " + out);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto f = Open(out);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->GetU32("nomic-bert.pooling_type"), 1u);
  EXPECT_FLOAT_EQ(*f->GetF32("nomic-bert.rope.freq_base"), 1000.0f);
  EXPECT_FALSE(*f->GetBool("nomic-bert.attention.causal"));
  const gguf::TensorInfo* qkv = f->FindTensor("blk.1.attn_qkv.weight");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->ne[1], 3 * 768);
  EXPECT_NE(f->FindTensor("blk.1.ffn_gate.weight"), nullptr);
  EXPECT_EQ(f->FindTensor("position_embd.weight"), nullptr);
  EXPECT_EQ(f->FindTensor("blk.0.attn_q.weight"), nullptr);
  r = Run("eval -m " + out + " --tokens \"1 20 30 2\" --embed mean -t 1");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("embedding")) << r.out;
  double norm = 0;
  for (const nlohmann::json& x : j["embedding"]) norm += x.get<double>() * x.get<double>();
  EXPECT_EQ(j["embedding"].size(), 768u);
  EXPECT_NEAR(norm, 1.0, 1e-4);
  EXPECT_NE(Run("eval -m " + out + " --tokens \"1 20 30 2\" --greedy 2").rc, 0) << "an encoder has no logits";
  EXPECT_NE(Run("synth --arch nomic-bert --n-head-kv 4 -o " + Path("bad.gguf")).rc, 0);
  EXPECT_NE(Run("synth --arch nomic-bert --preset bge-small -o " + Path("bad.gguf")).rc, 0);
}

TEST_F(SynthInspect, WeightsHaveSaneMagnitudes) {
  const std::string out = Path("f32.gguf");
  ASSERT_EQ(Run("synth --arch qwen3 --type f32 --n-layer 1 --n-vocab 300 -o " + out).rc, 0);
  auto f = Open(out);
  ASSERT_NE(f, nullptr);
  for (const gguf::TensorInfo& t : f->tensors()) {
    const float* x = reinterpret_cast<const float*>(f->TensorData(t));
    const bool norm = t.name.find("norm") != std::string::npos;
    const double bound = norm ? 1.05 : 1.0 / std::sqrt(static_cast<double>(t.ne[0]));
    double sum = 0;
    for (int64_t k = 0; k < t.n_elements(); ++k) {
      ASSERT_TRUE(std::isfinite(x[k])) << t.name;
      if (norm) {
        ASSERT_GE(x[k], 0.95f) << t.name;
      } else {
        ASSERT_LE(std::fabs(x[k]), bound) << t.name;
      }
      sum += x[k];
    }
    const double mean = sum / static_cast<double>(t.n_elements());
    if (norm) {
      EXPECT_NEAR(mean, 1.0, 0.01) << t.name;
    } else {
      EXPECT_NEAR(mean, 0.0, bound * 0.1) << t.name;
    }
  }
}

TEST_F(SynthInspect, SyntheticVocabIsConsistent) {
  const std::string out = Path("vocab.gguf");
  ASSERT_EQ(Run("synth --n-layer 1 --n-vocab 1000 -o " + out).rc, 0);
  auto f = Open(out);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->GetString("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(*f->GetString("tokenizer.ggml.pre"), "qwen2");
  EXPECT_EQ(*f->GetBool("tokenizer.ggml.add_bos_token"), false);
  EXPECT_NE(f->GetString("tokenizer.chat_template")->find("<|im_start|>"), std::string::npos);
  const auto& tokens = (*f->GetArray("tokenizer.ggml.tokens", gguf::ValueType::kString))->strings;
  const auto& types = (*f->GetArray("tokenizer.ggml.token_type", gguf::ValueType::kI32))->ints;
  const auto& merges = (*f->GetArray("tokenizer.ggml.merges", gguf::ValueType::kString))->strings;
  ASSERT_EQ(tokens.size(), 1000u);
  ASSERT_EQ(types.size(), 1000u);
  const uint32_t eos = *f->GetU32("tokenizer.ggml.eos_token_id");
  ASSERT_LT(eos, tokens.size());
  EXPECT_EQ(tokens[eos], "<|im_end|>");
  EXPECT_EQ(types[eos], 3);
  EXPECT_EQ(tokens[997], "<|endoftext|>");
  EXPECT_EQ(tokens[998], "<|im_start|>");
  EXPECT_EQ(types[998], 3);
  EXPECT_EQ(types[0], 1);
  std::set<std::string> all(tokens.begin(), tokens.end());
  EXPECT_EQ(all.size(), tokens.size()) << "duplicate tokens";
  EXPECT_EQ(tokens[0], "!");
  EXPECT_EQ(all.count("\xc4\xa0"), 1u);  // 'Ġ' (space)
  EXPECT_EQ(all.count("\xc4\x8a"), 1u);  // 'Ċ' (newline)
  EXPECT_EQ(all.count("\xc4\xa0the"), 1u) << "merges should produce common English words";
  ASSERT_EQ(merges.size(), tokens.size() - 256 - 3);
  for (const std::string& m : merges) {
    const size_t sp = m.find(' ', 1);
    ASSERT_NE(sp, std::string::npos) << m;
    const std::string a = m.substr(0, sp), b = m.substr(sp + 1);
    EXPECT_EQ(all.count(a), 1u) << m;
    EXPECT_EQ(all.count(b), 1u) << m;
    EXPECT_EQ(all.count(a + b), 1u) << m;
  }
}

TEST_F(SynthInspect, UntiedWritesOutputWeight) {
  const std::string out = Path("untied.gguf");
  ASSERT_EQ(Run("synth --arch qwen2 --untied --type q8_0 --n-layer 1 --n-vocab 300 -o " + out).rc, 0);
  auto f = Open(out);
  ASSERT_NE(f, nullptr);
  const gguf::TensorInfo* o = f->FindTensor("output.weight");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->type, TensorType::kQ8_0);
  EXPECT_EQ(Shape(*o), Shape(*f->FindTensor("token_embd.weight")));
}

TEST_F(SynthInspect, DeterministicForASeed) {
  const std::string a = Path("a.gguf"), b = Path("b.gguf"), c = Path("c.gguf");
  const std::string args = "synth --type q4_0 --n-layer 2 --n-vocab 500 ";
  ASSERT_EQ(Run(args + "--seed 11 -o " + a).rc, 0);
  ASSERT_EQ(Run(args + "--seed 11 -o " + b).rc, 0);
  ASSERT_EQ(Run(args + "--seed 12 -o " + c).rc, 0);
  const std::string ba = Slurp(a);
  EXPECT_GT(ba.size(), 100000u);
  EXPECT_TRUE(ba == Slurp(b)) << "same seed, different bytes";
  EXPECT_FALSE(ba == Slurp(c)) << "different seeds, same bytes";
}

TEST_F(SynthInspect, VocabFromCopiesTheTokenizer) {
  REQUIRE_SHARED_FILE("models/qwen3-vocab-tiny-q8_0.gguf");
  const std::string src_path = SharedPath("models/qwen3-vocab-tiny-q8_0.gguf");
  const std::string out = Path("qwen_vocab.gguf");
  const RunResult r =
      Run("synth --type q8_0 --n-embd 64 --n-head 2 --n-head-kv 1 --head-dim 32 --n-ff 128 "
          "--n-layer 1 --vocab-from " +
          src_path + " -o " + out);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto f = Open(out);
  auto src = Open(src_path);
  ASSERT_NE(f, nullptr);
  ASSERT_NE(src, nullptr);
  size_t copied = 0;
  for (const gguf::KeyValue& kv : src->metadata()) {
    if (kv.key.rfind("tokenizer.", 0) != 0) continue;
    ++copied;
    const gguf::Value* v = f->Find(kv.key);
    ASSERT_NE(v, nullptr) << kv.key;
    EXPECT_EQ(v->type, kv.value.type) << kv.key;
    EXPECT_EQ(v->strings, kv.value.strings) << kv.key;
    EXPECT_EQ(v->ints, kv.value.ints) << kv.key;
    EXPECT_EQ(v->str, kv.value.str) << kv.key;
    EXPECT_EQ(v->u, kv.value.u) << kv.key;
  }
  EXPECT_GE(copied, 5u);
  const size_t n_vocab = (*src->GetArray("tokenizer.ggml.tokens", gguf::ValueType::kString))->strings.size();
  EXPECT_EQ(Shape(*f->FindTensor("token_embd.weight")),
            (std::vector<int64_t>{64, static_cast<int64_t>(n_vocab)}));
}

TEST_F(SynthInspect, SynthErrorsAreClear) {
  RunResult r = Run("synth --type q8_0 --n-ff 100 -o " + Path("x.gguf"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("multiple"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("n_ff"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(Path("x.gguf")));
  r = Run("synth --arch qwen2 --head-dim 32 -o " + Path("x.gguf"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("qwen2"), std::string::npos) << r.err;
  r = Run("synth --n-head 4 --n-head-kv 3 -o " + Path("x.gguf"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("--n-head-kv"), std::string::npos) << r.err;
  r = Run("synth --n-vocab 100 -o " + Path("x.gguf"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("259"), std::string::npos) << r.err;
  r = Run("synth --type q3_k -o " + Path("x.gguf"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("q3_K"), std::string::npos) << r.err;
}

TEST_F(SynthInspect, InspectSharedModel) {
  REQUIRE_SHARED_FILE("models/qwen3-tiny-q8_0.gguf");
  const std::string path = SharedPath("models/qwen3-tiny-q8_0.gguf");
  auto f = Open(path);
  ASSERT_NE(f, nullptr);
  const RunResult r = Run("inspect " + path);
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const gguf::TensorInfo& t : f->tensors()) {
    EXPECT_NE(r.out.find(t.name), std::string::npos) << t.name;
  }
  EXPECT_NE(r.out.find("general.architecture"), std::string::npos);
  EXPECT_NE(r.out.find("q8_0"), std::string::npos);
  EXPECT_NE(r.out.find("array[string]"), std::string::npos);
  EXPECT_NE(r.out.find("(512 elements)"), std::string::npos) << "long arrays are summarized";
  // f16 K and V: 2 * n_layer * n_head_kv * head_dim * 2 bytes.
  const uint64_t n_layer = *f->GetU32("qwen3.block_count");
  const uint64_t n_head_kv = *f->GetU32("qwen3.attention.head_count_kv");
  const uint64_t hd = *f->GetU32("qwen3.attention.key_length");
  const uint64_t kv = 2 * n_layer * n_head_kv * hd * 2;
  EXPECT_NE(r.out.find("KV cache (f16): " + std::to_string(kv) + " bytes per token"), std::string::npos)
      << r.out;

  const RunResult j = Run("inspect --json " + path);
  ASSERT_EQ(j.rc, 0) << j.err;
  const nlohmann::json doc = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << j.out.substr(0, 500);
  EXPECT_EQ(doc["kv_bytes_per_token_f16"].get<uint64_t>(), kv);
  ASSERT_EQ(doc["tensors"].size(), f->tensors().size());
  EXPECT_EQ(doc["tensors"][0]["name"].get<std::string>(), f->tensors()[0].name);
  EXPECT_EQ(doc["metadata"]["general.architecture"]["value"].get<std::string>(), "qwen3");
  EXPECT_EQ(doc["metadata"]["tokenizer.ggml.tokens"]["value"]["count"].get<uint64_t>(), 512u);
  uint64_t total = 0;
  for (const auto& [type, t] : doc["totals_by_type"].items()) total += t["bytes"].get<uint64_t>();
  uint64_t want_total = 0;
  for (const gguf::TensorInfo& t : f->tensors()) want_total += t.nbytes;
  EXPECT_EQ(total, want_total);
}

TEST_F(SynthInspect, InspectRejectsBadFiles) {
  REQUIRE_SHARED_FILE("models/invalid/gguf-v1.gguf");
  RunResult r = Run("inspect " + SharedPath("models/invalid/gguf-v1.gguf"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("version 1"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  r = Run("inspect " + Path("missing.gguf"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("missing.gguf"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lazyslot
