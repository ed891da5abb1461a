#pragma once
// An injectable monotonic clock. Everything that waits or measures time takes a Clock& so tests can use
// FakeClock (time moves only when told). Thread-safe.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>

namespace kcm {

class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  // Sleeps for d or until stop is requested. Returns false when stopped early.
  virtual bool sleepFor(Duration d, std::stop_token stop = {}) = 0;
};

class RealClock final : public Clock {
 public:
  static RealClock& get();
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  bool sleepFor(Duration d, std::stop_token stop = {}) override;
};

// Time advances only through advance() or sleepFor() (which advances by the requested duration, so code that
// sleeps in a loop runs instantly and deterministically).
class FakeClock final : public Clock {
 public:
  TimePoint now() const override {
    std::lock_guard l(mu_);
    return now_;
  }
  bool sleepFor(Duration d, std::stop_token stop = {}) override {
    if (stop.stop_requested()) return false;
    advance(d);
    return true;
  }
  void advance(Duration d) {
    std::lock_guard l(mu_);
    now_ += d;
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_{std::chrono::hours(1000)};
};

}  // namespace kcm
