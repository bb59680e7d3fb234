// Status and Result<T>: how internals report failure (CONVENTIONS.md §5).
//
// A Status carries a kreplay_status_t code and a message; Result<T> holds either a value or a
// non-OK Status. RETURN_IF_ERROR / ASSIGN_OR_RETURN propagate; KR_CHECK guards invariants and
// aborts with a message, since a broken invariant inside an injected library cannot be recovered.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "kreplay/fwd.h"

namespace kreplay {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(kreplay_status_t code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == KREPLAY_STATUS_SUCCESS; }
  kreplay_status_t code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  kreplay_status_t code_ = KREPLAY_STATUS_SUCCESS;
  std::string message_;
};

inline Status Error(kreplay_status_t code, std::string message) {
  return {code, std::move(message)};
}

/// Bad input from the user (an option, an input file, a database, a section file): the message
/// names the problem and the fix.
inline Status InvalidArgument(std::string message) {
  return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, std::move(message));
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Status(KREPLAY_STATUS_ERROR_INTERNAL, "Result from an OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

[[noreturn]] inline void CheckFailed(const char* expr, const char* file, int line,
                                     const char* msg) {
  std::fprintf(stderr, "==KREPLAY== FATAL: check failed: %s at %s:%d%s%s\n", expr, file, line,
               msg[0] ? ": " : "", msg);
  std::fflush(stderr);
  std::abort();
}

}  // namespace kreplay

#define KR_CONCAT_INNER(a, b) a##b
#define KR_CONCAT(a, b) KR_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                   \
  do {                                          \
    ::kreplay::Status kr_status_ = (expr);      \
    if (!kr_status_.ok()) return kr_status_;    \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(KR_CONCAT(kr_result_, __LINE__), lhs, expr)

#define KR_CHECK(cond)                                                 \
  do {                                                                 \
    if (!(cond)) ::kreplay::CheckFailed(#cond, __FILE__, __LINE__, ""); \
  } while (0)

#define KR_CHECK_MSG(cond, msg)                                           \
  do {                                                                    \
    if (!(cond)) ::kreplay::CheckFailed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
