// Finds a request's socket and polls it for a closed peer (see connection.h).
#include "server/http/connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "server/http/httplib_include.h"

namespace lazyslot::server {
namespace {

// Address text and port of a socket address, in the form httplib reports them (inet_ntop).
bool AddrPort(const sockaddr_storage& ss, std::string* addr, int* port) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    if (!inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf))) return false;
    *port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (!inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf))) return false;
    *port = ntohs(a->sin6_port);
  } else {
    return false;
  }
  *addr = buf;
  return true;
}

bool Matches(int fd, const httplib::Request& req) {
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISSOCK(sb.st_mode)) return false;
  sockaddr_storage peer{}, local{};
  socklen_t peer_len = sizeof(peer), local_len = sizeof(local);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  std::string addr;
  int port = -1;
  if (!AddrPort(peer, &addr, &port) || port != req.remote_port || addr != req.remote_addr) return false;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
  if (!AddrPort(local, &addr, &port) || port != req.local_port) return false;
  return true;
}

}  // namespace

int FindConnectionSocket(const httplib::Request& req) {
  if (req.remote_port <= 0 || req.local_port <= 0) return -1;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int fd = std::atoi(e->d_name);
    if (fd == dirfd(dir)) continue;
    if (Matches(fd, req)) {
      found = fd;
      break;
    }
  }
  closedir(dir);
  return found;
}

bool PeerClosed(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (p.revents & POLLIN) {
    char c;
    const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }
  return false;
}

}  // namespace lazyslot::server
