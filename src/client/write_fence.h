#pragma once
// A leader's licence to write (beyond client-go): open until the last successful Lease renewal's start plus the
// renew deadline, as measured by this process's monotonic clock. The leader elector extends it on every renewal;
// the controllers' RestClients refuse any request but GET and HEAD while it is closed. A leader frozen past its
// lease (SIGSTOP, a VM pause, a stalled host) therefore writes nothing once it resumes, even before its elector
// thread has run: a standby can only take the Lease over a whole lease duration (longer than the renew deadline)
// after it last saw the Lease change, so no write of the old leader lands after the new one acquired.
// Thread-safe.
#include <atomic>
#include <cstdint>
#include <limits>

#include "base/clock.h"

namespace kcm::client {

class WriteFence {
 public:
  explicit WriteFence(Clock& clock = RealClock::get()) : clock_(clock) {}
  // Open until `t` (moves the end either way: a renewal that started later than the last one).
  void openUntil(Clock::TimePoint t) { until_.store(t.time_since_epoch().count(), std::memory_order_release); }
  void close() { until_.store(std::numeric_limits<int64_t>::min(), std::memory_order_release); }
  bool open() const {
    return clock_.now().time_since_epoch().count() < until_.load(std::memory_order_acquire);
  }

 private:
  Clock& clock_;
  std::atomic<int64_t> until_{std::numeric_limits<int64_t>::min()};
};

}  // namespace kcm::client
