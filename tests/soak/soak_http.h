// Minimal HTTP/1.1 client on raw loopback sockets for the soak driver: one request per connection, body
// decoded (chunked or Content-Length) and handed over as it arrives, so a caller can drop a stream mid-way.
#pragma once

#include <functional>
#include <string>

namespace lazyslot::soak {

// How an exchange went wrong on the transport level (an HTTP error status is not a failure here).
enum class Failure {
  kNone,
  kConnect,      // connect() refused or failed
  kSend,         // the request could not be written
  kTimeout,      // no byte for longer than the request's timeout
  kClosedEarly,  // the server closed or reset the connection before the response was complete
  kMalformed,    // the status line, headers or chunk framing could not be parsed
};
const char* FailureName(Failure f);

struct Reply {
  int status = 0;  // HTTP status; 0 when none was read
  Failure failure = Failure::kNone;
  std::string detail;      // errno text or what could not be parsed
  bool abandoned = false;  // the caller's sink asked to hang up before the end
  std::string body;        // decoded body (as far as it was read)
};

// Receives decoded body bytes as they arrive; return false to close the connection at once.
using BodySink = std::function<bool(const std::string& piece)>;

struct Exchange {
  int port = 0;
  std::string method = "GET";
  std::string path = "/";
  std::string body;                 // sent as application/json when non-empty (or when method is POST)
  double timeout_s = 300;           // most seconds to wait for any one read
  BodySink sink;                    // optional
  bool hang_up_with_reset = false;  // on abandon: RST (SO_LINGER 0) instead of an orderly FIN
};

// Runs one request on a new connection ("Connection: close") and returns what came back.
Reply Send(const Exchange& ex);

}  // namespace lazyslot::soak
