#pragma once
// Errors as values. A Status is OK or carries a canonical code and a message naming what failed.
// Result<T> is a value or a non-OK Status. Both are cheap to move; neither throws.
#include <optional>
#include <string>
#include <vector>
#include <utility>
#include <variant>

namespace kcm {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad input: flags, config files, malformed objects
  kNotFound,          // 404
  kAlreadyExists,     // 409 AlreadyExists
  kConflict,          // 409 Conflict (resourceVersion / precondition)
  kGone,              // 410 Gone / Expired (too old resourceVersion)
  kUnauthorized,      // 401
  kForbidden,         // 403
  kInvalid,           // 422 Invalid
  kTooManyRequests,   // 429
  kTimeout,           // 504 / request deadline
  kUnavailable,       // connection refused, 503, dropped connection
  kInternal,          // 500 and anything unexpected
  kCancelled,         // the caller stopped
  kMethodNotAllowed,  // 405 MethodNotAllowed (a verb the resource does not serve)
};

const char* statusCodeName(StatusCode c);
// The HTTP status an apiserver answered with for an error of this code (404, 409, 422, ...); 0 where the code
// names no single answer (a dropped connection, a cancelled call, an internal error).
int httpStatusCode(StatusCode c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NotFound: pods \"x\" not found"
  std::string toString() const;
  // Prefixes the message with context: "reading kubeconfig /x: <message>".
  Status withContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// utilerrors.NewAggregate(errs).Error(): OK for none, one error reads as itself, several as "[a, b]" with a
// repeated message once. The code is the first error's.
Status NewAggregate(const std::vector<Status>& errs);

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}   // NOLINT: must not be OK

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace kcm
