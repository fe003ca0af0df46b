// Closing the listener and idle connections for a drain (see drain.h).
#include "server/http/drain.h"

#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "server/http/connection.h"
#include "server/http/httplib_include.h"

namespace lazyslot::server {
namespace {

// The port of an AF_INET or AF_INET6 address; -1 for any other family.
int PortOf(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  return -1;
}

}  // namespace

void ConnectionTracker::Begin(const httplib::Request& req) {
  std::lock_guard<std::mutex> lock(mu_);
  busy_ports_.insert(req.remote_port);
}

void ConnectionTracker::End(const httplib::Request& req) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = busy_ports_.find(req.remote_port);
  if (it != busy_ports_.end()) busy_ports_.erase(it);
}

// Calls fn(fd, remote_port) for every TCP connection this process accepted on `local_port` (the listening
// socket, which has no peer, is left out).
template <typename Fn>
void ForEachConnection(int local_port, Fn fn) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int fd = std::atoi(e->d_name);
    if (fd == dirfd(dir)) continue;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISSOCK(sb.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
    int type = 0;
    socklen_t type_len = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || type != SOCK_STREAM) continue;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) continue;
    if (PortOf(local) != local_port) continue;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) continue;
    const int remote_port = PortOf(peer);
    if (remote_port >= 0) fn(fd, remote_port);
  }
  closedir(dir);
}

int ConnectionTracker::CloseIdle(int local_port) {
  int closed = 0;
  // Held for the whole scan: a request that begins meanwhile waits here, then sees the drain flag.
  std::lock_guard<std::mutex> lock(mu_);
  ForEachConnection(local_port, [&](int fd, int remote_port) {
    if (busy_ports_.count(remote_port) > 0 || HasUnreadBytes(fd)) return;
    if (::shutdown(fd, SHUT_RD) == 0) ++closed;
  });
  return closed;
}

int ConnectionTracker::CountOpen(int local_port) {
  int open = 0;
  ForEachConnection(local_port, [&](int, int) { ++open; });
  return open;
}

bool StopListening(int fd) {
  if (fd < 0) return false;
  // A listening socket's tcp_info reports its accept queue's length in tcpi_unacked (Linux).
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  for (;;) {
    tcp_info info{};
    socklen_t len = sizeof(info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 || info.tcpi_unacked == 0) break;
    if (std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return ::shutdown(fd, SHUT_RDWR) == 0;
}

bool HasUnreadBytes(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN)) return false;
  char c;
  return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

void CloseAfterResponseUnlessPipelined(const httplib::Request& req) {
  const int fd = FindConnectionSocket(req);
  if (fd >= 0 && !HasUnreadBytes(fd)) ::shutdown(fd, SHUT_RD);
}

}  // namespace lazyslot::server
