// ParseMcpServers (tools/mcp/mcp_config.h): the Claude Desktop / Cursor "mcpServers" document into server
// definitions, every field read, other clients' fields ignored, and each malformed field named in the error.
#include "tools/mcp/mcp_config.h"

#include <gtest/gtest.h>

namespace lazyslot::tools::mcp {
namespace {

TEST(McpConfig, ReadsEveryField) {
  Result<std::vector<ServerConfig>> r = ParseMcpServers(R"({"mcpServers": {
      "files": {"command": "npx", "args": ["-y", "@scope/pkg", "/srv"], "env": {"TOKEN": "t1", "MODE": "ro"},
                "cwd": "/tmp", "timeout_ms": 1500, "disabled": false, "autoApprove": []},
      "echo_2": {"command": "/usr/bin/python3", "type": "stdio"}}})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  const ServerConfig& a = (*r)[0];
  EXPECT_EQ(a.name, "files") << "config order is kept";
  EXPECT_EQ(a.command, "npx");
  EXPECT_EQ(a.args, (std::vector<std::string>{"-y", "@scope/pkg", "/srv"}));
  EXPECT_EQ(a.env.at("TOKEN"), "t1");
  EXPECT_EQ(a.env.at("MODE"), "ro");
  EXPECT_EQ(a.cwd, "/tmp");
  EXPECT_EQ(a.timeout_ms, 1500);
  const ServerConfig& b = (*r)[1];
  EXPECT_EQ(b.name, "echo_2");
  EXPECT_TRUE(b.args.empty());
  EXPECT_EQ(b.timeout_ms, 30000) << "llama-server's default";
}

TEST(McpConfig, AnEmptyListIsAllowed) {
  Result<std::vector<ServerConfig>> r = ParseMcpServers(R"({"mcpServers": {}})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST(McpConfig, NamesWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not valid JSON"},
      {"[1]", "expected {\"mcpServers\""},
      {R"({"mcpServers": []})", "expected {\"mcpServers\""},
      {R"({"mcpServers": {"a": 3}})", "mcpServers.a: expected an object"},
      {R"({"mcpServers": {"a": {"command": ""}}})", "mcpServers.a.command: required"},
      {R"({"mcpServers": {"a": {"command": 5}}})", "mcpServers.a.command: required"},
      {R"({"mcpServers": {"a": {"command": "x", "args": [1]}}})", "mcpServers.a.args"},
      {R"({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}})", "mcpServers.a.env.K"},
      {R"({"mcpServers": {"a": {"command": "x", "env": {"A=B": "1"}}}})", "is not a variable name"},
      {R"({"mcpServers": {"a": {"command": "x", "cwd": 1}}})", "mcpServers.a.cwd"},
      {R"({"mcpServers": {"a": {"command": "x", "timeout_ms": 0}}})", "mcpServers.a.timeout_ms"},
      {R"({"mcpServers": {"a": {"command": "x", "timeout_ms": 1.5}}})", "mcpServers.a.timeout_ms"},
      {R"({"mcpServers": {"a": {"command": "x", "type": "sse"}}})", "only \"stdio\""},
      {R"({"mcpServers": {"a": {"url": "http://h/mcp"}}})", "remote MCP servers"},
      {R"({"mcpServers": {"a:b": {"command": "x"}}})", "server name 'a:b'"},
      {R"({"mcpServers": {"": {"command": "x"}}})", "server name ''"},
  };
  for (const auto& [doc, expected] : cases) {
    Result<std::vector<ServerConfig>> r = ParseMcpServers(doc);
    ASSERT_FALSE(r.ok()) << doc;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << doc;
    EXPECT_NE(r.status().message().find(expected), std::string::npos) << doc << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace lazyslot::tools::mcp
