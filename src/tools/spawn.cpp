// The tools layer's one process spawner (see spawn.h): posix_spawn into a new process group, pipes for
// stdin/stdout/stderr as asked, the environment with overrides, and the group's kill-and-reap.
#include "tools/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "tools/tool_support.h"

extern char** environ;

namespace lazyslot::tools::internal {
namespace {

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

void NonBlocking(int fd) {
  if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// The server's environment with `overrides` set over it, as "NAME=value" strings.
std::vector<std::string> MergedEnvironment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::map<std::string, std::string> set;
  for (const auto& [k, v] : overrides) set[k] = v;
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    const std::string name = eq ? std::string(*e, eq - *e) : std::string(*e);
    if (set.count(name) == 0) out.emplace_back(*e);
  }
  for (const auto& [k, v] : set) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

Result<Spawned> SpawnInGroup(const SpawnSpec& spec) {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if ((spec.stdin_pipe && ::pipe2(in, O_CLOEXEC) != 0) || ::pipe2(out, O_CLOEXEC) != 0 ||
      (!spec.stderr_to_stdout && ::pipe2(err, O_CLOEXEC) != 0)) {
    const int e = errno;
    CloseAll({in[0], in[1], out[0], out[1], err[0], err[1]});
    return IoError("cannot run " + spec.program + ": pipe: " + ErrnoText(e));
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawnattr_init(&attr);
  if (spec.stdin_pipe) {
    ::posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  } else {
    ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  }
  ::posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  ::posix_spawn_file_actions_adddup2(&fa, spec.stderr_to_stdout ? out[1] : err[1], 2);
  if (!spec.cwd.empty()) ::posix_spawn_file_actions_addchdir_np(&fa, spec.cwd.c_str());
  sigset_t no_signals, defaults;
  sigemptyset(&no_signals);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2})
    sigaddset(&defaults, s);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  ::posix_spawnattr_setpgroup(&attr, 0);
  ::posix_spawnattr_setsigmask(&attr, &no_signals);
  ::posix_spawnattr_setsigdefault(&attr, &defaults);

  std::vector<std::string> args = spec.argv;
  if (args.empty()) args.push_back(spec.program);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  if (!spec.env.empty()) {
    env_strings = MergedEnvironment(spec.env);
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  char** env = spec.env.empty() ? environ : envp.data();
  pid_t pid = -1;
  const int rc = spec.search_path ? ::posix_spawnp(&pid, spec.program.c_str(), &fa, &attr, argv.data(), env)
                                  : ::posix_spawn(&pid, spec.program.c_str(), &fa, &attr, argv.data(), env);
  ::posix_spawn_file_actions_destroy(&fa);
  ::posix_spawnattr_destroy(&attr);
  CloseAll({in[0], out[1], err[1]});  // the child's ends
  if (rc != 0) {
    CloseAll({in[1], out[0], err[0]});
    std::string where = spec.cwd.empty() ? "" : " in " + spec.cwd;
    std::string message = "cannot run '" + spec.program + "'" + where + ": " + ErrnoText(rc);
    return rc == ENOENT ? NotFound(std::move(message)) : IoError(std::move(message));
  }
  NonBlocking(in[1]);
  NonBlocking(out[0]);
  NonBlocking(err[0]);
  return Spawned{pid, in[1], out[0], err[0]};
}

bool ChildEnded(pid_t pid) {
  siginfo_t si{};
  if (::waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) return true;  // already reaped
  return si.si_pid == pid;
}

int KillGroupAndReap(pid_t pid) {
  if (pid <= 0) return -1;
  ::kill(-pid, SIGKILL);
  int status = 0;
  pid_t waited;
  do waited = ::waitpid(pid, &status, 0);
  while (waited < 0 && errno == EINTR);
  if (waited != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

}  // namespace lazyslot::tools::internal
