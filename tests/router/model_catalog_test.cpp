// The model catalogue: directory scan (sorted, only valid *.gguf files), -m paths (ids, duplicates), the INI
// preset parser ([*] defaults, aliases, relative paths, every error with file:line) and file identities.
#include "router/model_catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "router_test_util.h"

namespace lazyslot {
namespace {

namespace fs = std::filesystem;
using testing::TempModelsDir;

std::vector<std::string> Ids(const ModelCatalog& c) {
  std::vector<std::string> ids;
  for (const CatalogEntry& e : c.entries()) ids.push_back(e.id);
  return ids;
}

CatalogSources Sources(std::string dir, std::vector<std::string> paths = {}, std::string preset = {}) {
  CatalogSources s;
  s.models_dir = std::move(dir);
  s.model_paths = std::move(paths);
  s.preset_path = std::move(preset);
  return s;
}

// Parses `ini` (no files needed) and returns the error message, or "" if it parsed.
std::string PresetError(const std::string& ini) {
  Result<std::vector<PresetSection>> r = ParsePreset(ini, "p.ini", "/models");
  return r.ok() ? "" : r.status().message();
}

TEST(ModelCatalogTest, DirectoryScanListsValidGgufFilesSortedById) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "zeta.gguf");
  dir.Link("stories260K.gguf", "alpha.gguf");
  dir.Link("stories260K.gguf", "org:model-Q4.gguf");
  dir.Write("notes.txt", "not a model");
  dir.Write("UPPER.GGUF", "wrong case, as llama-server");
  dir.Link("stories260K.gguf", ".partial.gguf");   // hidden
  dir.Link("stories260K.gguf", "has space.gguf");  // not a valid id: skipped with a warning
  fs::create_directory(dir.Path("sub.gguf"));      // directories are not models
  fs::create_symlink(dir.Path("missing-target"), dir.Path("dangling.gguf"));
  Result<ModelCatalog> c = ModelCatalog::Build(Sources(dir.path()));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(Ids(*c), (std::vector<std::string>{"alpha", "org:model-Q4", "zeta"}));
  const CatalogEntry* e = c->Find("alpha");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->path, dir.Path("alpha.gguf"));
  EXPECT_EQ(e->source, ModelSource::kModelsDir);
  EXPECT_TRUE(e->file.exists);
  EXPECT_EQ(e->file.size, fs::file_size(testing::SharedPath("models/stories260K.gguf")));
  EXPECT_EQ(c->Find("nope"), nullptr);
}

TEST(ModelCatalogTest, MissingDirectoryIsAnError) {
  Result<ModelCatalog> c = ModelCatalog::Build(Sources("/nonexistent/lazyslot-models"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kNotFound);
  EXPECT_NE(c.status().message().find("/nonexistent/lazyslot-models"), std::string::npos);
}

TEST(ModelCatalogTest, ModelPathsUseTheFileStemAndRefuseTwoFilesForOneId) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  TempModelsDir dir, other;
  const std::string a = dir.Link("stories260K.gguf", "tiny.gguf");
  const std::string b = other.Link("qwen3-tiny-f32.gguf", "tiny.gguf");
  const std::string q = dir.Link("qwen3-tiny-f32.gguf", "qwen.gguf");
  Result<ModelCatalog> c = ModelCatalog::Build(Sources("", {q, a, a}));  // the same file twice: once
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(Ids(*c), (std::vector<std::string>{"qwen", "tiny"}));
  EXPECT_EQ(c->Find("tiny")->source, ModelSource::kArgs);

  Result<ModelCatalog> dup = ModelCatalog::Build(Sources("", {a, b}));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), Code::kInvalidArgument);
  EXPECT_NE(dup.status().message().find(a), std::string::npos) << dup.status().message();
  EXPECT_NE(dup.status().message().find(b), std::string::npos) << dup.status().message();

  // The directory's file given again with -m is one model; another file with its id is an error.
  Result<ModelCatalog> same = ModelCatalog::Build(Sources(dir.path(), {a}));
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(Ids(*same), (std::vector<std::string>{"qwen", "tiny"}));
  Result<ModelCatalog> clash = ModelCatalog::Build(Sources(dir.path(), {b}));
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.status().message().find("--models-dir"), std::string::npos) << clash.status().message();

  Result<ModelCatalog> missing = ModelCatalog::Build(Sources("", {dir.Path("gone.gguf")}));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find("gone.gguf"), std::string::npos);
  // A rescan lists it anyway (the router then says the file is missing).
  EXPECT_TRUE(ModelCatalog::Build(Sources("", {dir.Path("gone.gguf")}), /*require_files=*/false).ok());
}

TEST(ModelCatalogTest, PresetMergesDefaultsAliasesAndRelativePaths) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  REQUIRE_SHARED_FILE("models/bert-tiny-f32.gguf");
  TempModelsDir dir, presets;
  dir.Link("stories260K.gguf", "story.gguf");
  presets.Link("qwen3-tiny-f32.gguf", "chat.gguf");
  const std::string ini = presets.Write("models.ini", R"(version = 1
; defaults for every model
[*]
c = 512
np = 2
cache-type-k = q8_0

[chat]
model = chat.gguf        # relative to this file's folder
alias = assistant, helper
ctx-size = 1024
chat-template = chatml ; a trailing comment
load-on-startup = true

[emb]
m = )" + testing::SharedPath("models/bert-tiny-f32.gguf") +
                                                          R"(
embeddings = on
pooling = mean
stop-timeout = 3

[story]
chat-template = "{{ messages ; # }}"
rerank = false
)");
  Result<ModelCatalog> c = ModelCatalog::Build(Sources(dir.path(), {}, ini));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(Ids(*c), (std::vector<std::string>{"chat", "emb", "story"}));

  const CatalogEntry* chat = c->Find("helper");
  ASSERT_NE(chat, nullptr);
  EXPECT_EQ(chat->id, "chat");
  EXPECT_EQ(c->Find("assistant"), chat);
  EXPECT_EQ(chat->path, presets.Path("chat.gguf"));
  EXPECT_EQ(chat->aliases, (std::vector<std::string>{"assistant", "helper"}));
  EXPECT_EQ(chat->source, ModelSource::kPreset);
  EXPECT_EQ(chat->overrides.n_ctx, 1024);
  EXPECT_EQ(chat->overrides.n_parallel, 2);  // from [*]
  EXPECT_EQ(chat->overrides.cache_type_k, TensorType::kQ8_0);
  EXPECT_EQ(chat->chat_template, "chatml");
  EXPECT_TRUE(chat->load_on_startup);
  EXPECT_NE(chat->origin.find("models.ini:8"), std::string::npos) << chat->origin;

  const CatalogEntry* emb = c->Find("emb");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->overrides.n_ctx, 512);
  EXPECT_EQ(emb->overrides.embeddings, true);
  EXPECT_EQ(emb->overrides.pooling, PoolingType::kMean);
  EXPECT_EQ(emb->stop_timeout_s, 3.0);
  EXPECT_FALSE(emb->load_on_startup);

  // The directory's model, adjusted by its section and by [*].
  const CatalogEntry* story = c->Find("story");
  ASSERT_NE(story, nullptr);
  EXPECT_EQ(story->path, dir.Path("story.gguf"));
  EXPECT_EQ(story->chat_template, "{{ messages ; # }}");
  EXPECT_EQ(story->overrides.n_ctx, 512);
  EXPECT_EQ(story->overrides.rerank, false);

  EngineConfig cfg;
  chat->overrides.ApplyTo(&cfg);
  EXPECT_EQ(cfg.n_ctx, 1024);
  EXPECT_EQ(cfg.n_parallel, 2);
  EXPECT_EQ(cfg.cache_type_k, TensorType::kQ8_0);
  EXPECT_EQ(cfg.cache_type_v, TensorType::kF16);
}

TEST(ModelCatalogTest, DefaultsApplyToModelsWithoutASection) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "story.gguf");
  const std::string ini = dir.Write("p.ini", "[*]\nctx-size = 300\nembeddings = true\n");
  Result<ModelCatalog> c = ModelCatalog::Build(Sources(dir.path(), {}, ini));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->entries().size(), 1u);
  EXPECT_EQ(c->entries()[0].overrides.n_ctx, 300);
  EXPECT_EQ(c->entries()[0].overrides.embeddings, true);
  EXPECT_EQ(c->entries()[0].source, ModelSource::kModelsDir);
}

TEST(ModelCatalogTest, RerankOverrideSetsRankPoolingAndEmbeddings) {
  ModelOverrides o;
  o.rerank = true;
  EngineConfig cfg;
  o.ApplyTo(&cfg);
  EXPECT_EQ(cfg.pooling, PoolingType::kRank);
  EXPECT_TRUE(cfg.embeddings);
  o.rerank = false;
  o.ApplyTo(&cfg);  // turns a base --rerank off
  EXPECT_EQ(cfg.pooling, PoolingType::kNone);
}

TEST(ModelCatalogTest, PresetErrorsNameFileAndLine) {
  struct Case {
    std::string ini, want;
  };
  const std::vector<Case> cases = {
      {"[a]\nmodel = /x.gguf\nn-gpu-layers = 3\n", "p.ini:3: unknown key 'n-gpu-layers'"},
      {"ctx-size = 5\n", "p.ini:1: 'ctx-size' before any [section]"},
      {"[a]\nembeddings = maybe\n", "p.ini:2: embeddings: expected a boolean"},
      {"[a]\nctx-size = 12k\n", "p.ini:2: ctx-size: expected an integer, got '12k'"},
      {"[a]\nparallel = 0\n", "p.ini:2: parallel: 0 is out of range"},
      {"[a]\npooling = max\n", "p.ini:2: pooling: pooling must be none, mean, cls, last or rank"},
      {"[a]\ncache-type-v = q4_9\n", "p.ini:2: cache-type-v: unknown type 'q4_9'"},
      {"[a]\nmodel = /x.gguf\n\n[a]\n", "p.ini:4: section [a] appears twice (first at line 1)"},
      {"[a]\nc = 1\nctx-size = 2\n", "p.ini:3: 'ctx-size' is set twice in [a] (first at line 2)"},
      {"[*]\nmodel = /x.gguf\n", "p.ini:2: 'model' cannot be a default in [*]"},
      {"[a]\nrerank = true\npooling = mean\n", "p.ini:1: [a]: rerank cannot be combined with pooling mean"},
      {"[a]\nchat-template = \"open\n", "p.ini:2: unterminated quoted value"},
      {"[a\n", "p.ini:1: section header without ']'"},
      {"[bad id]\n", "p.ini:1: invalid model id 'bad id'"},
      {"[a]\njust words\n", "p.ini:2: expected 'key = value'"},
      {"[a]\nalias = ok, .hidden\n", "p.ini:2: alias: invalid alias '.hidden'"},
      {"[a]\nversion = 1\n", "p.ini:2: 'version' belongs before the first section"},
  };
  for (const Case& c : cases) {
    const std::string err = PresetError(c.ini);
    EXPECT_NE(err.find(c.want), std::string::npos) << "ini:\n" << c.ini << "\ngot: " << err;
  }
  EXPECT_EQ(PresetError("version = 1\n# only comments\n[*]\nc = 64\n"), "");
}

TEST(ModelCatalogTest, PresetCatalogErrors) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  TempModelsDir dir;
  dir.Link("stories260K.gguf", "story.gguf");
  const std::string story = dir.Path("story.gguf");
  auto build_error = [&](const std::string& ini) {
    const std::string p = dir.Write("p.ini", ini);
    Result<ModelCatalog> c = ModelCatalog::Build(Sources(dir.path(), {}, p));
    return c.ok() ? std::string() : c.status().message();
  };
  EXPECT_NE(build_error("\n[other]\nctx-size = 64\n").find("p.ini:2: [other] has no 'model' key"),
            std::string::npos);
  EXPECT_NE(build_error("[x]\nmodel = missing.gguf\n").find("p.ini:1: [x] model " + dir.Path("missing.gguf")),
            std::string::npos);
  EXPECT_NE(build_error("[x]\nmodel = " + story + "\nalias = story\n")
                .find("alias 'story' of model 'x' is "
                      "already a model id"),
            std::string::npos);
  EXPECT_NE(build_error("[x]\nmodel = " + story + "\nalias = s\n[y]\nmodel = " + story + "\nalias = s\n")
                .find("alias 's' of model 'y' is already an alias of model 'x'"),
            std::string::npos);
  const std::string no_file = (fs::path(dir.path()) / "absent.ini").string();
  Result<ModelCatalog> c = ModelCatalog::Build(Sources("", {}, no_file));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(no_file), std::string::npos);
}

TEST(ModelCatalogTest, KnownIdsIsTruncated) {
  REQUIRE_SHARED_FILE("models/stories260K.gguf");
  TempModelsDir dir;
  for (int i = 0; i < 25; ++i) {
    std::string name = "m";
    name += std::to_string(100 + i);
    dir.Link("stories260K.gguf", name + ".gguf");
  }
  Result<ModelCatalog> c = ModelCatalog::Build(Sources(dir.path()));
  ASSERT_TRUE(c.ok());
  const std::string ids = c->KnownIds(20);
  EXPECT_EQ(ids.find("m100, m101, "), 0u) << ids;
  EXPECT_NE(ids.find("m119, ... and 5 more"), std::string::npos) << ids;
  EXPECT_EQ(ids.find("m120"), std::string::npos) << ids;
}

TEST(ModelCatalogTest, FileIdentityNoticesTruncationRewriteReplacementAndRemoval) {
  TempModelsDir dir;
  const std::string p = dir.Write("f.gguf", std::string(4096, 'x'));
  const FileIdentity a = IdentifyFile(p);
  ASSERT_TRUE(a.exists);
  EXPECT_EQ(DescribeFileChange(a, IdentifyFile(p)), "");

  fs::resize_file(p, 100);
  EXPECT_NE(DescribeFileChange(a, IdentifyFile(p)).find("was truncated (4096 -> 100 bytes)"),
            std::string::npos);

  const std::string q = dir.Write("g.gguf", std::string(4096, 'y'));
  const FileIdentity b = IdentifyFile(q);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  dir.Write("g.gguf", std::string(4096, 'z'));  // same inode and size, new mtime
  EXPECT_NE(DescribeFileChange(b, IdentifyFile(q)).find("was modified"), std::string::npos);

  const FileIdentity c = IdentifyFile(q);
  dir.Write("new.tmp", std::string(4096, 'w'));
  fs::rename(dir.Path("new.tmp"), q);
  EXPECT_NE(DescribeFileChange(c, IdentifyFile(q)).find("was replaced"), std::string::npos);

  fs::remove(q);
  EXPECT_NE(DescribeFileChange(c, IdentifyFile(q)).find("is gone (No such file or directory)"),
            std::string::npos);
}

TEST(ModelCatalogTest, ValidIds) {
  EXPECT_TRUE(IsValidModelId("qwen3-0.6b"));
  EXPECT_TRUE(IsValidModelId("ggml-org/gemma-3-4b-it-GGUF:Q4_K_M"));
  EXPECT_FALSE(IsValidModelId(""));
  EXPECT_FALSE(IsValidModelId(".hidden"));
  EXPECT_FALSE(IsValidModelId("a b"));
  EXPECT_FALSE(IsValidModelId("a,b"));
  EXPECT_FALSE(IsValidModelId("tab\there"));
  EXPECT_FALSE(IsValidModelId(std::string(257, 'a')));
}

}  // namespace
}  // namespace lazyslot
