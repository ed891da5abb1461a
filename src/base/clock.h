#pragma once
// An injectable monotonic clock with a timer. Everything that waits, measures time or schedules work takes a
// Clock& so tests can use FakeClock (time moves only when told, and due timers fire as it moves). Thread-safe.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <unordered_map>

namespace kcm {

// Pending one-shot callbacks ordered by due time. cancel() guarantees the callback is not running once it
// returns (unless called from that callback). Used by the clocks below; thread-safe.
class TimerQueue {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  uint64_t add(TimePoint due, std::function<void()> fn);  // returns an id > 0
  bool cancel(uint64_t id);
  // Runs every entry due at or before now (in due order, outside the lock). Returns how many ran.
  size_t fireDue(TimePoint now);
  // The earliest due time, if any.
  bool next(TimePoint& due) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable doneCv_;
  std::multimap<TimePoint, std::pair<uint64_t, std::function<void()>>> byDue_;
  std::unordered_map<uint64_t, TimePoint> dueOf_;
  uint64_t nextId_ = 1;
  uint64_t running_ = 0;
  std::thread::id runner_;
};

class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;
  using TimerId = uint64_t;
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  // Wall time (what metav1.Time stamps record). FakeClock's moves with now(), from a fixed start.
  virtual std::chrono::system_clock::time_point wallNow() const = 0;
  // Sleeps for d or until stop is requested. Returns false when stopped early.
  virtual bool sleepFor(Duration d, std::stop_token stop = {}) = 0;
  // Runs fn once at `due` (RealClock: on the process's one timer thread; FakeClock: on the thread whose
  // advance() passes `due`). fn must be short: it posts real work to an executor.
  virtual TimerId schedule(TimePoint due, std::function<void()> fn) = 0;
  TimerId scheduleAfter(Duration d, std::function<void()> fn) { return schedule(now() + d, std::move(fn)); }
  // Cancels a pending callback; false if it already ran. Once it returns the callback is not running.
  virtual bool cancel(TimerId id) = 0;
};

class RealClock final : public Clock {
 public:
  static RealClock& get();
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point wallNow() const override { return std::chrono::system_clock::now(); }
  bool sleepFor(Duration d, std::stop_token stop = {}) override;
  TimerId schedule(TimePoint due, std::function<void()> fn) override;
  bool cancel(TimerId id) override;

 private:
  RealClock() = default;
  void loop();
  TimerQueue timers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::once_flag started_;
};

// Time advances only through advance() or sleepFor() (which advances by the requested duration, so code that
// sleeps in a loop runs instantly and deterministically). Timers due by the new time fire inside advance();
// one scheduled at or before now() fires at the next advance(), never inside schedule().
class FakeClock final : public Clock {
 public:
  // 2026-01-01T00:00:00Z unless given.
  static constexpr std::chrono::seconds kDefaultWallStart{1767225600};
  FakeClock() = default;
  explicit FakeClock(std::chrono::system_clock::time_point wallStart) : wallStart_(wallStart) {}
  TimePoint now() const override {
    std::lock_guard l(mu_);
    return now_;
  }
  bool sleepFor(Duration d, std::stop_token stop = {}) override {
    if (stop.stop_requested()) return false;
    advance(d);
    return true;
  }
  std::chrono::system_clock::time_point wallNow() const override {
    std::lock_guard l(mu_);
    return wallStart_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(now_ - kStart);
  }
  void advance(Duration d);
  TimerId schedule(TimePoint due, std::function<void()> fn) override;
  bool cancel(TimerId id) override { return timers_.cancel(id); }
  size_t pendingTimers() const { return timers_.size(); }

 private:
  mutable std::mutex mu_;
  static constexpr TimePoint kStart{std::chrono::hours(1000)};
  TimePoint now_{kStart};
  std::chrono::system_clock::time_point wallStart_{kDefaultWallStart};
  TimerQueue timers_;
};

}  // namespace kcm
