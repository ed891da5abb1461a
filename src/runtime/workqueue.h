#pragma once
// A rate-limited, delaying work queue with client-go's semantics (k8s.io/client-go/util/workqueue):
//  - a key is never handed to two workers at once (processing set); adds while it is processed are collapsed
//    into one re-run after done() (dirty set); duplicate adds of a waiting key are collapsed;
//  - addAfter() delays, addRateLimited() delays by the rate limiter (per-item exponential 5 ms..1000 s, max'ed
//    with an overall 10 qps / 100 burst bucket, as DefaultTypedControllerRateLimiter), forget() resets it;
//  - shutDown() wakes getters; shutDownWithDrain() also waits for keys in processing to be done;
//  - no thread of its own: delayed adds are entries on the clock's timer, and a consumer either blocks in get()
//    or is told by the ready callback that a key became available (ControllerBase dispatches pool tasks on it);
//  - workqueue_* metrics with upstream's names, label name=<queue name>.
// Thread-safe.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "base/clock.h"
#include "client/rate_limiter.h"
#include "base/metrics.h"

namespace kcm::runtime {

// workqueue.TypedRateLimiter.
class ItemRateLimiter {
 public:
  virtual ~ItemRateLimiter() = default;
  virtual Clock::Duration when(const std::string& item) = 0;
  virtual void forget(const std::string& item) = 0;
  virtual int numRequeues(const std::string& item) = 0;
};

class ItemExponentialFailureRateLimiter : public ItemRateLimiter {
 public:
  ItemExponentialFailureRateLimiter(Clock::Duration base, Clock::Duration max) : base_(base), max_(max) {}
  Clock::Duration when(const std::string& item) override;
  void forget(const std::string& item) override;
  int numRequeues(const std::string& item) override;

 private:
  const Clock::Duration base_, max_;
  std::mutex mu_;
  std::unordered_map<std::string, int> failures_;
};

class BucketRateLimiter : public ItemRateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, Clock& clock = RealClock::get()) : bucket_(qps, burst, clock) {}
  Clock::Duration when(const std::string&) override { return bucket_.reserve(); }
  void forget(const std::string&) override {}
  int numRequeues(const std::string&) override { return 0; }

 private:
  client::RateLimiter bucket_;
};

class MaxOfRateLimiter : public ItemRateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<ItemRateLimiter>> ls) : ls_(std::move(ls)) {}
  Clock::Duration when(const std::string& item) override;
  void forget(const std::string& item) override;
  int numRequeues(const std::string& item) override;

 private:
  std::vector<std::unique_ptr<ItemRateLimiter>> ls_;
};

// 5 ms .. 1000 s per item, max'ed with 10 qps / 100 burst overall.
std::unique_ptr<ItemRateLimiter> defaultControllerRateLimiter(Clock& clock = RealClock::get());

class WorkQueue {
 public:
  explicit WorkQueue(std::string name, std::unique_ptr<ItemRateLimiter> limiter = nullptr,
                     Clock& clock = RealClock::get(), metrics::Registry& registry = metrics::Registry::global());
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void add(const std::string& key);
  void addAfter(const std::string& key, Clock::Duration d);
  void addRateLimited(const std::string& key);
  void forget(const std::string& key);
  int numRequeues(const std::string& key);
  // Blocks until a key is available or the queue shuts down (nullopt).
  std::optional<std::string> get();
  // A key if one is ready now (marked processing, as get()), else nullopt.
  std::optional<std::string> tryGet();
  // Called (outside the queue's lock, from whichever thread added it) whenever a key becomes ready. Set once,
  // before any add.
  void setReadyCallback(std::function<void()> cb) { onReady_ = std::move(cb); }
  void done(const std::string& key);
  size_t len() const;
  void shutDown();
  void shutDownWithDrain();
  bool shuttingDown() const;
  const std::string& name() const { return name_; }

 private:
  bool addLocked(const std::string& key);  // true when the key became ready
  std::optional<std::string> takeLocked();
  void armLocked();                          // a timer entry for the earliest waiting key
  void onTimer(Clock::TimePoint due);
  void armMetricsLocked();
  void notifyReady() {
    if (onReady_) onReady_();
  }

  const std::string name_;
  std::unique_ptr<ItemRateLimiter> limiter_;
  Clock& clock_;
  metrics::Registry& reg_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_, processing_;
  std::unordered_map<std::string, Clock::TimePoint> addedAt_, startedAt_;
  bool shuttingDown_ = false, drain_ = false;
  // Delayed adds: ready time -> keys, and the earliest ready time per key (a later addAfter never delays it).
  std::multimap<Clock::TimePoint, std::string> waiting_;
  std::unordered_map<std::string, Clock::TimePoint> waitingReady_;
  std::map<Clock::TimePoint, Clock::TimerId> armed_;  // outstanding timer entries by due time
  Clock::TimerId metricsTimer_ = 0;
  bool closed_ = false;  // destructor running: timers stop re-arming
  std::function<void()> onReady_;
  // Metrics.
  metrics::Gauge& depth_;
  metrics::Counter& adds_;
  metrics::Histogram& queueLatency_;
  metrics::Histogram& workDuration_;
  metrics::Counter& retries_;
  metrics::Gauge& unfinished_;
  metrics::Gauge& longestRunning_;
};

}  // namespace kcm::runtime
