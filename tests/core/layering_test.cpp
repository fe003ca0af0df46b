// The folders show the architecture: every `#include "<layer>/..."` in src/ goes to the file's own layer or
// one below it (docs/ARCHITECTURE.md, the link order in CMakeLists.txt), and inside `server` a room includes
// only the rooms below it (decision 0022). Reads the sources, so a new upward include fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace lazyslot {
namespace {

namespace fs = std::filesystem;

// What each layer may include besides itself: its CMake link dependencies and theirs.
const std::map<std::string, std::set<std::string>>& LayerDeps() {
  static const std::map<std::string, std::set<std::string>> deps = [] {
    const std::map<std::string, std::vector<std::string>> direct = {
        {"core", {}},
        {"gguf", {"core"}},
        {"quant", {"gguf"}},
        {"ops", {"quant"}},
        {"tokenizer", {"gguf"}},
        {"grammar", {"core"}},
        {"tools", {"core"}},
        {"chat", {"tokenizer", "grammar"}},
        {"kv", {"quant"}},
        {"model", {"kv", "ops"}},
        {"engine", {"model", "tokenizer", "grammar"}},
        {"router", {"engine"}},
        {"server", {"router", "engine", "chat", "tools"}},
        {"cli", {"server"}},
    };
    std::map<std::string, std::set<std::string>> closure;
    for (const auto& [layer, _] : direct) {
      std::vector<std::string> todo = {layer};
      std::set<std::string>& seen = closure[layer];
      while (!todo.empty()) {
        const std::string l = todo.back();
        todo.pop_back();
        for (const std::string& d : direct.at(l)) {
          if (seen.insert(d).second) todo.push_back(d);
        }
      }
    }
    return closure;
  }();
  return deps;
}

// Inside server: what each room may include besides itself. "" is the server folder's own files
// (http_server, server_state, model_context, memory_monitor), which assemble the rooms.
const std::map<std::string, std::set<std::string>>& RoomDeps() {
  static const std::map<std::string, std::set<std::string>> deps = {
      {"http", {}},
      {"generation", {"http", ""}},
      {"openai", {"http", "generation", ""}},
      {"anthropic", {"http", "generation", ""}},
      {"responses", {"http", "generation", ""}},
      {"embeddings", {"http", "generation", ""}},
      {"admin", {"http", "generation", ""}},
      {"vertex", {"http", "generation", ""}},
  };
  return deps;
}

// The server folder's own headers may include only http/ (what a room includes of them must not pull a
// dialect in); its .cpp files assemble everything and may include any room.
bool RootHeaderMayInclude(const std::string& room) { return room.empty() || room == "http"; }

// "server/generation/x.h" -> "generation"; "server/x.h" -> "".
std::string RoomOf(const std::string& path_in_server) {
  const size_t slash = path_in_server.find('/');
  return slash == std::string::npos ? "" : path_in_server.substr(0, slash);
}

TEST(Layering, NoIncludeRunsUpTheLayersOrAcrossServerRooms) {
  const fs::path src = fs::path(LAZYSLOT_SOURCE_DIR) / "src";
  ASSERT_TRUE(fs::is_directory(src)) << src;
  const std::regex include_re(R"(^\s*#\s*include\s*"([a-z_0-9]+)/([^"]+)\")");
  std::vector<std::string> violations;
  size_t files = 0, includes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    if (!entry.is_regular_file()) continue;
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cpp") continue;
    const fs::path rel = fs::relative(entry.path(), src);
    const std::string layer = rel.begin()->string();
    ASSERT_TRUE(LayerDeps().count(layer)) << "a folder the layer table does not know: src/" << layer
                                          << " (add it to LayerDeps and to docs/ARCHITECTURE.md)";
    ++files;
    const std::string rel_s = rel.generic_string();
    const std::string room = layer == "server" ? RoomOf(rel_s.substr(std::string("server/").size())) : "";
    if (layer == "server" && !room.empty()) {
      ASSERT_TRUE(RoomDeps().count(room)) << "a server room the table does not know: src/server/" << room;
    }
    std::ifstream in(entry.path());
    std::string line;
    int line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      std::smatch m;
      if (!std::regex_search(line, m, include_re)) continue;
      const std::string target = m[1];
      if (!LayerDeps().count(target)) continue;  // a system header in quotes, or a generated file
      ++includes;
      const std::string where = "src/" + rel_s + ":" + std::to_string(line_no) + ": " + line;
      if (target != layer && !LayerDeps().at(layer).count(target)) {
        violations.push_back(where + "  (" + layer + " may not include " + target + ")");
        continue;
      }
      if (layer != "server" || target != "server") continue;
      const std::string to_room = RoomOf(m[2]);
      if (to_room == room) continue;
      if (room.empty()) {
        if (ext == ".h" && !RootHeaderMayInclude(to_room)) {
          violations.push_back(where + "  (a header of src/server/ may include only http/)");
        }
        continue;
      }
      if (!RoomDeps().at(room).count(to_room)) {
        violations.push_back(where + "  (server room " + room + " may not include " +
                             (to_room.empty() ? std::string("the server folder's files") : to_room) + ")");
      }
    }
  }
  EXPECT_GT(files, 200u);
  EXPECT_GT(includes, 500u);
  for (const std::string& v : violations) ADD_FAILURE() << v;
}

}  // namespace
}  // namespace lazyslot
