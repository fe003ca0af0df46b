// Router mode's model-list administration through the real server (issue 36): POST /models (llama-server
// downloads from the hub) and DELETE /models?model= (llama-server deletes a download) are refused with a 501
// that says how to add or remove a model, and a DELETE never touches the model's file; preset sections that
// only name a download (hf-repo, hf-file, model-url) are listed with a per-model error while the other models
// serve; a per-model api-key is a start-up error; --api-key covers every model and the list-changing routes.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "server_harness.h"

namespace lazyslot::testing {
namespace {

namespace fs = std::filesystem;
constexpr char kStories[] = "models/stories260K.gguf";

std::string ModelsDir(const std::vector<std::string>& ids) {
  const std::string dir = NewScratchFile("models");
  fs::create_directories(dir);
  for (const std::string& id : ids) fs::copy_file(SharedPath(kStories), dir + "/" + id + ".gguf");
  return dir;
}

std::string WritePreset(const std::string& text) {
  const std::string path = NewScratchFile("preset") + ".ini";
  std::ofstream(path) << text;
  return path;
}

// GET /models as id -> entry.
std::map<std::string, json> Listed(const ServerProcess& srv, const std::string& query = "") {
  std::map<std::string, json> out;
  const json j = srv.Get("/models" + query).Json();
  if (!j.contains("data")) return out;
  for (const json& m : j["data"]) out[m["id"].get<std::string>()] = m;
  return out;
}

HttpResult Complete(const ServerProcess& srv, const std::string& model,
                    const std::vector<std::string>& headers = {}) {
  return srv.Post("/v1/completions",
                  {{"model", model}, {"prompt", "Once"}, {"max_tokens", 4}, {"temperature", 0}}, headers);
}

HttpResult Delete(const ServerProcess& srv, const std::string& path,
                  const std::vector<std::string>& headers = {}) {
  return Curl("DELETE", srv.Url(path), "", headers);
}

std::string ErrorType(const HttpResult& r) {
  const json j = r.Json();
  return j.contains("error") ? j["error"].value("type", "") : "<no error: " + r.body + ">";
}

std::string StartupError(const std::vector<std::string>& args) {
  auto srv = ServerProcess::Launch(args);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (srv->Running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(srv->Running()) << "serve started: " << srv->Log();
  EXPECT_NE(srv->exit_status(), 0) << srv->Log();
  return srv->Log();
}

}  // namespace

TEST(ServerRouterAdmin, DownloadAndDeleteAreRefusedAndTheFileIsKept) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string dir = ModelsDir({"a", "b"});
  START_SERVER(srv, {"--models-dir", dir, "-c", "256", "-np", "1"});
  ASSERT_EQ(Complete(*srv, "a").status, 200);

  // POST /models: a download. 501 naming what to do instead (the directory to put the file in).
  HttpResult add = srv->Post("/models", {{"model", "ggml-org/test-model-router-download:F16"}});
  EXPECT_EQ(add.status, 501) << add.body;
  EXPECT_EQ(ErrorType(add), "not_supported_error");
  EXPECT_NE(add.body.find("downloading models is not supported"), std::string::npos) << add.body;
  EXPECT_NE(add.body.find("--models-dir " + dir), std::string::npos) << add.body;
  EXPECT_EQ(Listed(*srv).count("ggml-org/test-model-router-download:F16"), 0u);
  // Bad requests stay 400s, and a model that is listed already is llama-server's "already exists".
  EXPECT_EQ(srv->Post("/models", json::object()).status, 400);
  EXPECT_EQ(srv->Post("/models", {{"model", 3}}).status, 400);
  EXPECT_EQ(srv->Post("/models", {{"model", "x"}, {"extra", 1}}).status, 400);
  HttpResult exists = srv->Post("/models", {{"model", "b"}});
  EXPECT_EQ(exists.status, 400) << exists.body;
  EXPECT_NE(exists.body.find("already exists"), std::string::npos) << exists.body;

  // DELETE of a listed model, loaded or not: 501, and its file, the listing and the model all stay.
  const auto size_before = fs::file_size(dir + "/a.gguf");
  for (const std::string id : {"a", "b"}) {
    HttpResult del = Delete(*srv, "/models?model=" + id);
    EXPECT_EQ(del.status, 501) << del.body;
    EXPECT_EQ(ErrorType(del), "not_supported_error");
    EXPECT_NE(del.body.find("never deletes model files"), std::string::npos) << del.body;
    EXPECT_NE(del.body.find("move its file out of --models-dir " + dir), std::string::npos) << del.body;
    ASSERT_TRUE(fs::exists(dir + "/" + id + ".gguf"));
  }
  EXPECT_EQ(fs::file_size(dir + "/a.gguf"), size_before);
  EXPECT_EQ(Listed(*srv, "?reload=1").size(), 2u);
  EXPECT_EQ(Listed(*srv)["a"]["status"]["value"], "loaded");
  EXPECT_EQ(Complete(*srv, "a").status, 200);
  EXPECT_EQ(Delete(*srv, "/models?model=zzz").status, 404);
  EXPECT_EQ(Delete(*srv, "/models").status, 400);

  // One model: neither route exists in llama-server's sense; 501 too.
  START_SERVER(one, {"-m", SharedPath(kStories), "-c", "256", "-np", "1"});
  EXPECT_EQ(one->Post("/models", {{"model", "org/x"}}).status, 501);
  EXPECT_EQ(Delete(*one, "/models?model=stories260K").status, 501);
  EXPECT_TRUE(fs::exists(SharedPath(kStories)));
}

TEST(ServerRouterAdmin, DownloadOnlyPresetSectionsAreListedWithTheirErrorOthersServe) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string model = SharedPath(kStories);
  const std::string preset = WritePreset(
      "[hub]\n"
      "hf-repo = ggml-org/test-model-stories260K\n"
      "[hub2]\n"
      "hf_repo = ggml-org/x\n"
      "hf-file = x-f16.gguf\n"
      "[url]\n"
      "model-url = https://example.invalid/m.gguf\n"
      "[local]\n"
      "model = " +
      model +
      "\n"
      "hf-repo = ggml-org/ignored\n");  // a local file wins over a download key
  START_SERVER(srv, {"--models-preset", preset, "-c", "256", "-np", "1"});
  std::map<std::string, json> listed = Listed(*srv);
  ASSERT_EQ(listed.size(), 4u) << srv->Get("/models").body;
  for (const std::string id : {"hub", "hub2", "url"}) {
    const json& status = listed[id]["status"];
    EXPECT_EQ(status["value"], "unloaded") << status.dump();
    EXPECT_EQ(status.value("failed", false), true) << status.dump();
    const std::string error = status.value("error", "");
    EXPECT_NE(error.find("downloads are not supported"), std::string::npos) << error;
    EXPECT_NE(error.find("model = /path/file.gguf"), std::string::npos) << error;
  }
  EXPECT_NE(listed["hub2"]["status"]["error"].get<std::string>().find("hf-file = x-f16.gguf"),
            std::string::npos);
  EXPECT_FALSE(listed["local"]["status"].contains("failed")) << listed["local"].dump();
  EXPECT_EQ(listed["local"]["path"],
            fs::path(model).lexically_normal().string());  // as the preset resolves it

  // Requests for them: 501 with the same reason; nothing is loaded or evicted for them.
  HttpResult chat = srv->Post("/v1/chat/completions",
                              {{"model", "hub"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  EXPECT_EQ(chat.status, 501) << chat.body;
  EXPECT_NE(chat.body.find("ggml-org/test-model-stories260K"), std::string::npos) << chat.body;
  EXPECT_EQ(srv->Post("/models/load", {{"model", "hub2"}}).status, 501);
  EXPECT_EQ(srv->Get("/props?model=url").status, 501);
  EXPECT_EQ(srv->Get("/health?ready=1&model=url").status, 501);  // a probe says why, too
  EXPECT_EQ(Complete(*srv, "local").status, 200);
  EXPECT_EQ(Listed(*srv)["local"]["status"]["value"], "loaded");

  // A rescan sees sections come and go; giving a section a file makes it serve.
  std::ofstream(preset) << "[hub]\nmodel = " << model << "\n[local]\nmodel = " << model
                        << "\n[hub3]\nhf-repo = ggml-org/y\n";
  const json reload = srv->Get("/models?reload=1").Json();
  EXPECT_EQ(reload["reload"]["removed"], json({"hub2", "url"})) << reload.dump();
  EXPECT_EQ(reload["reload"]["added"], json({"hub3"})) << reload.dump();
  EXPECT_EQ(reload["reload"]["changed"], json({"hub"})) << reload.dump();
  EXPECT_EQ(Complete(*srv, "hub").status, 200);
  EXPECT_EQ(Complete(*srv, "hub3").status, 501);
  EXPECT_EQ(Complete(*srv, "local").status, 200);

  // Only download sections: the server starts (files can be added and rescanned), every request says why.
  START_SERVER(empty, {"--models-preset", WritePreset("[hub]\nhf-repo = ggml-org/z\n"), "-c", "256"});
  EXPECT_EQ(Complete(*empty, "hub").status, 501);
}

TEST(ServerRouterAdmin, PresetMistakesAboutDownloadsAndKeysAreStartupErrors) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string model = SharedPath(kStories);
  // A download key as a default for every model.
  std::string log =
      StartupError({"--models-preset", WritePreset("[*]\nhf-repo = org/x\n[a]\nmodel = " + model + "\n")});
  EXPECT_NE(log.find(":2: 'hf-repo' cannot be a default in [*]"), std::string::npos) << log;
  // A per-model API key: llama-server's router drops it; silently ignoring a key would leave the model open.
  log = StartupError({"--models-preset", WritePreset("[a]\nmodel = " + model + "\napi-key = secret\n")});
  EXPECT_NE(log.find(":3: api-key: per-model API keys are not supported"), std::string::npos) << log;
  EXPECT_NE(log.find("--api-key"), std::string::npos) << log;
  log = StartupError({"--models-preset", WritePreset("[a]\nhf-repo =\n")});
  EXPECT_NE(log.find(":2: hf-repo: needs a value"), std::string::npos) << log;
}

TEST(ServerRouterAdmin, ApiKeyCoversEveryModelAndTheListChangingRoutes) {
  REQUIRE_SHARED_FILE(kStories);
  const std::string dir = ModelsDir({"a", "b"});
  START_SERVER(srv, {"--models-dir", dir, "-c", "256", "-np", "1", "--api-key", "sk-router-secret"});
  const std::vector<std::string> auth = {"Authorization: Bearer sk-router-secret"};
  // As llama-server's test_router_api_key_required: no key, 401 authentication_error; load and ask with it.
  HttpResult no_key = Complete(*srv, "a");
  EXPECT_EQ(no_key.status, 401) << no_key.body;
  EXPECT_EQ(ErrorType(no_key), "authentication_error");
  EXPECT_EQ(srv->Post("/models/load", {{"model", "a"}}).status, 401);
  EXPECT_EQ(srv->Post("/models/load", {{"model", "a"}}, auth).status, 200);
  EXPECT_EQ(Complete(*srv, "a", auth).status, 200);
  EXPECT_EQ(Complete(*srv, "b", {"Authorization: Bearer wrong"}).status, 401);
  EXPECT_EQ(Complete(*srv, "b", auth).status, 200);
  // The list is public to read (llama-server's public /models); changing it is not.
  EXPECT_EQ(srv->Get("/models").status, 200);
  EXPECT_EQ(srv->Get("/v1/models").status, 200);
  EXPECT_EQ(srv->Post("/models", {{"model", "org/x"}}).status, 401);
  EXPECT_EQ(Delete(*srv, "/models?model=a").status, 401);
  EXPECT_EQ(Delete(*srv, "/models?model=a", auth).status, 501);
  EXPECT_TRUE(fs::exists(dir + "/a.gguf"));
}

}  // namespace lazyslot::testing
