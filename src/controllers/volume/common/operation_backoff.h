#pragma once
// The exponential backoff of upstream's goroutinemap / nestedpendingoperations, as the storage controllers use it
// for their operations (provision, delete, attach, detach).
#include <map>
#include <mutex>
#include <string>

#include "base/clock.h"

namespace kcm::controllers::volume::common {

// An operation that failed is not run again before its backoff
// (500 ms doubling to 2m2s) has passed; one that succeeds is forgotten.
class OperationBackoff {
 public:
  explicit OperationBackoff(Clock& clock) : clock_(clock) {}
  bool mayRun(const std::string& op);
  void done(const std::string& op, bool failed);

 private:
  struct Entry {
    Clock::TimePoint lastError;
    Clock::Duration wait{};
  };
  Clock& clock_;
  std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

}  // namespace kcm::controllers::volume::common
