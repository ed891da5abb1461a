#pragma once
// Token-bucket rate limiter for API requests, as client-go's flowcontrol.NewTokenBucketRateLimiter:
// `qps` tokens per second, at most `burst` stored, starting full. One is shared by every request of a client.
// Thread-safe. No lock is held while waiting.
#include <mutex>
#include <stop_token>

#include "base/clock.h"

namespace kcm::client {

class RateLimiter {
 public:
  // qps <= 0 disables limiting (client-go: QPS < 0).
  RateLimiter(double qps, int burst, Clock& clock = RealClock::get());
  // Takes a token, waiting for one if needed. Returns false when stopped while waiting.
  bool accept(std::stop_token stop = {});
  // Reserves a token and returns how long the caller must wait before using it (0 when one is available).
  Clock::Duration reserve();
  // Takes a token only if one is available now (client-go's TryAccept).
  bool tryAccept();
  double qps() const { return qps_; }

 private:
  const double qps_;
  const double burst_;
  Clock& clock_;
  std::mutex mu_;
  double tokens_;
  Clock::TimePoint last_;
};

}  // namespace kcm::client
