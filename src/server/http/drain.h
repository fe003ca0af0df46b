// The socket side of a drain (SIGTERM; docs/deploy.md, "Draining"): stop accepting on the main port while the
// connections already accepted are still served, each closed once its current response is out, and close the
// kept-alive connections still idle when the drain ends. cpp-httplib 0.11 has no "stop listening but keep
// serving" call; see StopListening for how it is done with the socket it listens on.
#pragma once

#include <mutex>
#include <set>

namespace httplib {
struct Request;
}

namespace lazyslot::server {

// Which connections are in the middle of a request: the pre-routing hook calls Begin for every request, the
// logger hook (after the response, streamed ones included, is written) calls End. Keyed by the peer's port,
// which is all CloseIdle can compare without reformatting addresses; two clients on different hosts that
// share a port only make CloseIdle leave one idle connection open, never close a busy one.
class ConnectionTracker {
 public:
  void Begin(const httplib::Request& req);
  void End(const httplib::Request& req);

  // Shuts down the read side of every TCP connection accepted on `local_port` that is between requests: none
  // is being answered on it and no bytes of a next one are waiting. httplib's keep-alive wait then reads end
  // of file and closes the connection at once. A request whose bytes arrive in the same instant may still find
  // the connection closing, as with any HTTP/1.1 server that closes idle connections (RFC 9112 9.6), and a
  // balancer does not retry a POST it already sent: so the drain calls this only at its end, once the
  // balancer has had the time to find the listener closed and stop choosing this replica. Returns how many
  // were closed.
  int CloseIdle(int local_port);

  // How many TCP connections accepted on `local_port` are open, busy or idle.
  int CountOpen(int local_port);

 private:
  std::mutex mu_;
  std::multiset<int> busy_ports_;
};

// Makes a listening socket refuse new connections from now on, while every connection it already accepted
// keeps being served. shutdown() on a listening TCP socket takes it out of the LISTEN state (Linux: a SYN to
// the port is answered with a reset, i.e. "connection refused", which every balancer retries on another
// replica whatever the method) and wakes the thread blocked in accept() with EINVAL; cpp-httplib's accept
// loop then closes the descriptor itself and leaves its workers running (their keep-alive loops only end on
// stop()). So after this call the owner must never close `fd` or call httplib::Server::stop(). Before the
// shutdown it waits up to 50 ms for the accept queue to empty (connections whose handshake completed but
// that httplib has not accepted yet would otherwise be reset). Returns false if shutdown() failed.
bool StopListening(int fd);

// True when bytes are waiting to be read on `fd` (a pipelined request, or the unread body of a refused one).
bool HasUnreadBytes(int fd);

// During a drain, after a response went out: shuts the read side of `req`'s connection so httplib closes it
// at once, unless a pipelined next request is already waiting (that one is served too, with
// `Connection: close`, and its connection closed after it).
void CloseAfterResponseUnlessPipelined(const httplib::Request& req);

}  // namespace lazyslot::server
