#include "controllers/nodelifecycle/rate_limited_queue.h"

namespace kcm::controllers {

RateLimitedTimedQueue::RateLimitedTimedQueue(double qps, Clock& clock) : clock_(clock), qps_(qps) {
  if (qps > 0) limiter_ = std::make_unique<client::RateLimiter>(qps, kBurst, clock_);
}

bool RateLimitedTimedQueue::add(const std::string& value, const std::string& uid) {
  std::lock_guard l(mu_);
  if (!known_.insert(value).second) return false;
  auto now = clock_.now();
  queue_.emplace(now, TimedValue{value, uid, now, now});
  return true;
}

bool RateLimitedTimedQueue::remove(const std::string& value) {
  std::lock_guard l(mu_);
  std::erase_if(queue_, [&](const auto& kv) { return kv.second.value == value; });
  return known_.erase(value) > 0;
}

bool RateLimitedTimedQueue::head(TimedValue& out) const {
  std::lock_guard l(mu_);
  if (queue_.empty()) return false;
  out = queue_.begin()->second;
  return true;
}

void RateLimitedTimedQueue::tryProcess(const ActionFunc& fn) {
  std::lock_guard ll(limiterMu_);
  TimedValue v;
  while (head(v)) {
    if (!limiter_ || !limiter_->tryAccept()) break;
    auto now = clock_.now();
    if (now < v.processAt) break;
    auto [done, wait] = fn(v);
    std::lock_guard l(mu_);
    // The value may have been removed (or removed and re-added) while fn ran: only touch the same entry.
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->second.value != v.value || it->second.addedAt != v.addedAt) continue;
      queue_.erase(it);
      if (!done) {
        v.processAt = now + wait + Clock::Duration(1);
        queue_.emplace(v.processAt, v);
      }
      break;
    }
  }
}

void RateLimitedTimedQueue::swapLimiter(double qps) {
  std::lock_guard ll(limiterMu_);
  if (qps_ == qps) return;
  std::unique_ptr<client::RateLimiter> next;
  if (qps > 0) {
    next = std::make_unique<client::RateLimiter>(qps, kBurst, clock_);
    // An exhausted bucket stays exhausted across the swap.
    if (!limiter_ || !limiter_->tryAccept()) next->tryAccept();
  }
  limiter_ = std::move(next);
  qps_ = qps;
}

double RateLimitedTimedQueue::qps() const {
  std::lock_guard ll(limiterMu_);
  return qps_;
}

size_t RateLimitedTimedQueue::queued() const {
  std::lock_guard l(mu_);
  return queue_.size();
}

}  // namespace kcm::controllers
