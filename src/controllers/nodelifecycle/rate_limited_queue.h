#pragma once
// upstream pkg/controller/nodelifecycle/scheduler: a queue of unique node names, each with the time it may be
// processed, drained by try() as far as a token bucket (burst 1) lets it. One per zone; the node-lifecycle
// controller swaps the bucket's rate when the zone's disruption state changes (qps <= 0: nothing passes).
// A name stays "known" after being processed until remove(), so it is not added twice. Thread-safe.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "base/clock.h"
#include "client/rate_limiter.h"

namespace kcm::controllers {

struct TimedValue {
  std::string value;
  std::string uid;
  Clock::TimePoint addedAt;
  Clock::TimePoint processAt;
};

class RateLimitedTimedQueue {
 public:
  // Upstream's NodeEvictionPeriod and EvictionRateLimiterBurst.
  static constexpr auto kNodeEvictionPeriod = std::chrono::milliseconds(100);
  static constexpr int kBurst = 1;

  RateLimitedTimedQueue(double qps, Clock& clock = RealClock::get());
  // false when the value is already known.
  bool add(const std::string& value, const std::string& uid);
  // Forgets the value (queued or processed); whether it was known.
  bool remove(const std::string& value);
  // Processes due values in processAt order while tokens last. fn returns (done, retryAfter): done values leave
  // the queue (still known); others are retried after retryAfter.
  using ActionFunc = std::function<std::pair<bool, Clock::Duration>(const TimedValue&)>;
  void tryProcess(const ActionFunc& fn);
  void swapLimiter(double qps);
  double qps() const;
  size_t queued() const;

 private:
  bool head(TimedValue& out) const;
  Clock& clock_;
  mutable std::mutex mu_;  // the queue
  std::multimap<Clock::TimePoint, TimedValue> queue_;
  std::set<std::string> known_;
  mutable std::mutex limiterMu_;  // held across try(), as upstream
  double qps_;
  std::unique_ptr<client::RateLimiter> limiter_;  // null: never accepts
};

}  // namespace kcm::controllers
