#include "controllers/volume/common/operation_backoff.h"

#include <algorithm>
#include <chrono>

namespace kcm::controllers::volume::common {

bool OperationBackoff::mayRun(const std::string& op) {
  std::lock_guard l(mu_);
  auto it = entries_.find(op);
  return it == entries_.end() || clock_.now() >= it->second.lastError + it->second.wait;
}

void OperationBackoff::done(const std::string& op, bool failed) {
  std::lock_guard l(mu_);
  if (!failed) {
    entries_.erase(op);
    return;
  }
  constexpr Clock::Duration kInitial = std::chrono::milliseconds(500);
  constexpr Clock::Duration kMax = std::chrono::minutes(2) + std::chrono::seconds(2);
  auto& e = entries_[op];
  e.wait = e.wait == Clock::Duration::zero() ? kInitial : std::min(kMax, e.wait * 2);
  e.lastError = clock_.now();
}

}  // namespace kcm::controllers::volume::common
