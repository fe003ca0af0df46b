// Status and Result<T>: how input-dependent failures travel up the layers without exceptions.
// Library code returns these; only src/cli/ turns them into an exit code, and src/server/ into HTTP errors.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace lazyslot {

enum class Code {
  kOk = 0,
  kInvalidArgument,    // bad input from a caller (request field, flag value)
  kNotFound,           // file, key, tensor, route
  kOutOfRange,         // e.g. prompt longer than the context
  kCorrupt,            // malformed file contents
  kUnimplemented,      // valid input we do not support (unknown architecture, tensor type)
  kResourceExhausted,  // memory budget, queue full
  kUnavailable,        // loading, overloaded
  kCancelled,          // client went away
  kIo,                 // read/write/mmap failure
  kInternal,
};

const char* CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
inline Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
inline Status OutOfRange(std::string m) { return Status(Code::kOutOfRange, std::move(m)); }
inline Status Corrupt(std::string m) { return Status(Code::kCorrupt, std::move(m)); }
inline Status Unimplemented(std::string m) { return Status(Code::kUnimplemented, std::move(m)); }
inline Status ResourceExhausted(std::string m) { return Status(Code::kResourceExhausted, std::move(m)); }
inline Status Unavailable(std::string m) { return Status(Code::kUnavailable, std::move(m)); }
inline Status Cancelled(std::string m) { return Status(Code::kCancelled, std::move(m)); }
inline Status IoError(std::string m) { return Status(Code::kIo, std::move(m)); }
inline Status Internal(std::string m) { return Status(Code::kInternal, std::move(m)); }

// Result<T> holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) v_ = Status(Code::kInternal, "Result constructed from OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace lazyslot

#define LS_CONCAT_INNER(a, b) a##b
#define LS_CONCAT(a, b) LS_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define LS_RETURN_IF_ERROR(expr)                   \
  do {                                             \
    ::lazyslot::Status ls_status_ = (expr);        \
    if (!ls_status_.ok()) return ls_status_;       \
  } while (0)

// `LS_ASSIGN_OR_RETURN(auto x, MakeX());` binds the value or returns the error.
#define LS_ASSIGN_OR_RETURN(lhs, expr) LS_ASSIGN_OR_RETURN_IMPL(LS_CONCAT(ls_result_, __LINE__), lhs, expr)
#define LS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

// Programmer invariants (never input-dependent): print and abort.
#define LS_CHECK(cond)                                                                   \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);      \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
#ifdef NDEBUG
#define LS_DCHECK(cond) \
  do {                  \
  } while (0)
#else
#define LS_DCHECK(cond) LS_CHECK(cond)
#endif
