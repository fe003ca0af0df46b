// Starting a child process in its own process group, with pipes to it (internal to the tools layer): the
// one spawner behind exec_shell_command (shell.cpp) and the MCP servers (mcp/mcp_session.cpp). Also the
// group's end: whether the child has ended, and killing the group then reaping the child.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace lazyslot::tools::internal {

struct SpawnSpec {
  std::string program;  // a path, or (search_path) a name looked up on PATH
  bool search_path = false;
  std::vector<std::string> argv;  // argv[0] first
  std::string cwd;                // empty: the server's working directory
  // Set over the server's environment (a name given twice: the last wins).
  std::vector<std::pair<std::string, std::string>> env;
  bool stdin_pipe = false;        // false: stdin is /dev/null
  bool stderr_to_stdout = false;  // true: stderr goes into stdout's pipe; false: its own pipe
};

// The child's pid (also its process group id) and the parent's ends of its pipes (-1 where none), which
// the caller owns and closes. Every end is close-on-exec; stdout's and stderr's are non-blocking.
struct Spawned {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
};

// Starts `spec` in a new process group, with default signal dispositions and an empty signal mask.
// kNotFound when the program does not exist, kIo for any other failure (the message names the program).
Result<Spawned> SpawnInGroup(const SpawnSpec& spec);

// True once the child has ended. It stays a zombie (WNOWAIT), so its process group id cannot be reused
// before KillGroupAndReap.
bool ChildEnded(pid_t pid);

// Kills the child's whole process group with SIGKILL (safe while the unreaped leader keeps the id ours)
// and reaps the child. Returns its exit code: the status, 128 + signal when killed, -1 if unknown.
int KillGroupAndReap(pid_t pid);

}  // namespace lazyslot::tools::internal
