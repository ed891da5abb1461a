#include "client/rate_limiter.h"

#include <algorithm>

namespace kcm::client {

RateLimiter::RateLimiter(double qps, int burst, Clock& clock)
    : qps_(qps), burst_(std::max(1, burst)), clock_(clock), tokens_(burst_), last_(clock.now()) {}

Clock::Duration RateLimiter::reserve() {
  if (qps_ <= 0) return Clock::Duration::zero();
  std::lock_guard l(mu_);
  auto now = clock_.now();
  if (now > last_) {
    double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return Clock::Duration::zero();
  return std::chrono::duration_cast<Clock::Duration>(std::chrono::duration<double>(-tokens_ / qps_));
}

bool RateLimiter::tryAccept() {
  if (qps_ <= 0) return true;
  std::lock_guard l(mu_);
  auto now = clock_.now();
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * qps_);
    last_ = now;
  }
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

bool RateLimiter::accept(std::stop_token stop) {
  auto wait = reserve();
  if (wait <= Clock::Duration::zero()) return true;
  return clock_.sleepFor(wait, stop);
}

}  // namespace kcm::client
