// Noticing that an HTTP client went away while its request waits or generates. cpp-httplib 0.11 (Debian 12)
// does not expose the connection's socket to handlers, so we find it by its address pair.
#pragma once

namespace httplib {
struct Request;
}

namespace lazyslot::server {

// The socket serving `req`, found by matching its local and remote address and port against this process's
// open sockets (/proc/self/fd); -1 if none matches. Cost: one fstat + two getsockname-like calls per fd.
int FindConnectionSocket(const httplib::Request& req);

// True when the peer of `fd` has closed or reset the connection (a read would give EOF or an error).
// A pipelined next request (data waiting) is not a close. fd < 0: false.
bool PeerClosed(int fd);

}  // namespace lazyslot::server
