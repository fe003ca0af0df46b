// Raw-socket HTTP/1.1 client for the soak driver (see soak_http.h). Responses are read with poll() and a
// per-read timeout; chunked bodies are decoded chunk by chunk so SSE events reach the sink as they are sent.
#include "soak_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "loopback.h"

namespace lazyslot::soak {
namespace {

// Buffered reads from one socket; every wait gives up after `timeout_ms` without a byte.
class Reader {
 public:
  Reader(int fd, int timeout_ms) : fd_(fd), timeout_ms_(timeout_ms) {}

  // Reads a line ending in CRLF (returned without it).
  bool Line(std::string* out) {
    for (;;) {
      const size_t eol = buf_.find("\r\n", pos_);
      if (eol != std::string::npos) {
        out->assign(buf_, pos_, eol - pos_);
        pos_ = eol + 2;
        return true;
      }
      if (buf_.size() - pos_ > 64 * 1024) return Fail(Failure::kMalformed, "header line over 64 KiB");
      if (!More()) return false;
    }
  }

  // Reads exactly n bytes.
  bool Exactly(size_t n, std::string* out) {
    while (buf_.size() - pos_ < n) {
      if (!More()) return false;
    }
    out->assign(buf_, pos_, n);
    pos_ += n;
    Compact();
    return true;
  }

  // Whatever is buffered, else the next read; false at EOF (eof() then true) or on failure.
  bool Some(std::string* out) {
    if (pos_ == buf_.size() && !More()) return false;
    out->assign(buf_, pos_, std::string::npos);
    pos_ = buf_.size();
    Compact();
    return true;
  }

  bool eof() const { return eof_; }
  Failure failure() const { return failure_; }
  const std::string& detail() const { return detail_; }
  bool Fail(Failure f, std::string detail) {
    failure_ = f;
    detail_ = std::move(detail);
    return false;
  }

 private:
  bool More() {
    pollfd p{fd_, POLLIN, 0};
    const int r = poll(&p, 1, timeout_ms_);
    if (r == 0) return Fail(Failure::kTimeout, "no data for " + std::to_string(timeout_ms_) + " ms");
    if (r < 0) {
      if (errno == EINTR) return More();
      return Fail(Failure::kClosedEarly, std::string("poll: ") + std::strerror(errno));
    }
    char tmp[16384];
    const ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n == 0) {
      eof_ = true;
      return Fail(Failure::kClosedEarly, "connection closed by the server");
    }
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) return More();
      return Fail(Failure::kClosedEarly, std::string("recv: ") + std::strerror(errno));
    }
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  void Compact() {
    if (pos_ > 65536) {
      buf_.erase(0, pos_);
      pos_ = 0;
    }
  }

  int fd_;
  int timeout_ms_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  Failure failure_ = Failure::kNone;
  std::string detail_;
};

int Connect(int port, std::string* detail) {
  const int s = testing::ConnectLoopback(port);
  if (s < 0) *detail = std::string("connect: ") + std::strerror(errno);
  return s;
}

bool SendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

// Reads status line and headers; fills status, chunked and content_length (-1: none).
bool ReadHead(Reader& r, Reply* reply, bool* chunked, long long* content_length) {
  std::string line;
  if (!r.Line(&line)) return false;
  // "HTTP/1.1 200 OK"
  if (line.rfind("HTTP/1.", 0) != 0 || line.size() < 12) {
    return r.Fail(Failure::kMalformed, "bad status line '" + line.substr(0, 80) + "'");
  }
  reply->status = std::atoi(line.c_str() + 9);
  if (reply->status < 100 || reply->status > 599) {
    return r.Fail(Failure::kMalformed, "bad status line '" + line.substr(0, 80) + "'");
  }
  *chunked = false;
  *content_length = -1;
  for (;;) {
    if (!r.Line(&line)) return false;
    if (line.empty()) return true;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return r.Fail(Failure::kMalformed, "bad header '" + line + "'");
    const std::string name = Lower(line.substr(0, colon));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (name == "transfer-encoding" && Lower(value).find("chunked") != std::string::npos) *chunked = true;
    if (name == "content-length") *content_length = std::atoll(value.c_str());
  }
}

}  // namespace

const char* FailureName(Failure f) {
  switch (f) {
    case Failure::kNone:
      return "none";
    case Failure::kConnect:
      return "connect failed";
    case Failure::kSend:
      return "send failed";
    case Failure::kTimeout:
      return "read timeout";
    case Failure::kClosedEarly:
      return "connection closed early";
    case Failure::kMalformed:
      return "malformed response";
  }
  return "?";
}

Reply Send(const Exchange& ex) {
  Reply reply;
  const int fd = Connect(ex.port, &reply.detail);
  if (fd < 0) {
    reply.failure = Failure::kConnect;
    return reply;
  }
  std::string req = ex.method + " " + ex.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!ex.body.empty() || ex.method == "POST") {
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(ex.body.size()) + "\r\n";
  }
  req += "\r\n";
  req += ex.body;
  if (!SendAll(fd, req)) {
    reply.failure = Failure::kSend;
    reply.detail = std::string("send: ") + std::strerror(errno);
    close(fd);
    return reply;
  }

  Reader r(fd, static_cast<int>(ex.timeout_s * 1000));
  bool abandoned = false;
  // Appends a decoded piece and lets the sink see it; false once the sink hangs up.
  auto deliver = [&](const std::string& piece) {
    reply.body += piece;
    if (ex.sink && !ex.sink(piece)) abandoned = true;
    return !abandoned;
  };
  bool chunked = false;
  long long length = -1;
  bool ok = ReadHead(r, &reply, &chunked, &length);
  if (ok && chunked) {
    std::string line, data;
    for (;;) {
      if (!r.Line(&line)) {
        ok = false;
        break;
      }
      char* end = nullptr;
      const unsigned long long n = std::strtoull(line.c_str(), &end, 16);
      if (end == line.c_str()) {
        ok = r.Fail(Failure::kMalformed, "bad chunk size line '" + line.substr(0, 40) + "'");
        break;
      }
      if (n == 0) {  // trailers, then the empty line
        while ((ok = r.Line(&line)) && !line.empty()) {
        }
        break;
      }
      if (!r.Exactly(n, &data) || !r.Line(&line)) {
        ok = false;
        break;
      }
      if (!line.empty()) {
        ok = r.Fail(Failure::kMalformed, "chunk not followed by CRLF");
        break;
      }
      if (!deliver(data)) break;
    }
  } else if (ok && length >= 0) {
    std::string data;
    long long left = length;
    while (left > 0 && r.Some(&data)) {
      if (static_cast<long long>(data.size()) > left) data.resize(static_cast<size_t>(left));
      left -= static_cast<long long>(data.size());
      if (!deliver(data)) break;
    }
    ok = left == 0 || abandoned;
  } else if (ok) {  // neither: the body runs to the end of the connection
    std::string data;
    while (r.Some(&data)) {
      if (!deliver(data)) break;
    }
    ok = r.eof() || abandoned;
  }
  if (abandoned) {
    reply.abandoned = true;
    if (ex.hang_up_with_reset) {
      linger lg{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    }
  } else if (!ok) {
    reply.failure = r.failure() == Failure::kNone ? Failure::kMalformed : r.failure();
    reply.detail = r.detail();
  }
  close(fd);
  return reply;
}

}  // namespace lazyslot::soak
