#include "base/status.h"

#include <algorithm>

namespace kcm {

const char* statusCodeName(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kConflict: return "Conflict";
    case StatusCode::kGone: return "Gone";
    case StatusCode::kUnauthorized: return "Unauthorized";
    case StatusCode::kForbidden: return "Forbidden";
    case StatusCode::kInvalid: return "Invalid";
    case StatusCode::kTooManyRequests: return "TooManyRequests";
    case StatusCode::kTimeout: return "Timeout";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kMethodNotAllowed: return "MethodNotAllowed";
  }
  return "Unknown";
}

std::string Status::toString() const {
  if (ok()) return "OK";
  return std::string(statusCodeName(code_)) + ": " + message_;
}

Status Status::withContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

Status NewAggregate(const std::vector<Status>& errs) {
  if (errs.empty()) return Status::Ok();
  std::vector<std::string> seen;
  for (const auto& e : errs)
    if (std::find(seen.begin(), seen.end(), e.message()) == seen.end()) seen.push_back(e.message());
  if (seen.size() == 1) return Status(errs.front().code(), seen.front());
  std::string msg;
  for (const auto& m : seen) msg += (msg.empty() ? "" : ", ") + m;
  return Status(errs.front().code(), "[" + msg + "]");
}

int httpStatusCode(StatusCode c) {
  switch (c) {
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kConflict: return 409;
    case StatusCode::kGone: return 410;
    case StatusCode::kUnauthorized: return 401;
    case StatusCode::kForbidden: return 403;
    case StatusCode::kInvalid: return 422;
    case StatusCode::kTooManyRequests: return 429;
    case StatusCode::kTimeout: return 504;
    case StatusCode::kMethodNotAllowed: return 405;
    default: return 0;
  }
}

}  // namespace kcm
