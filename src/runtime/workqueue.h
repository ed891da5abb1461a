#pragma once
// A rate-limited, delaying work queue with client-go's semantics (k8s.io/client-go/util/workqueue):
//  - a key is never handed to two workers at once (processing set); adds while it is processed are collapsed
//    into one re-run after done() (dirty set); duplicate adds of a waiting key are collapsed;
//  - addAfter() delays, addRateLimited() delays by the rate limiter (per-item exponential 5 ms..1000 s, max'ed
//    with an overall 10 qps / 100 burst bucket, as DefaultTypedControllerRateLimiter), forget() resets it;
//  - shutDown() wakes getters; shutDownWithDrain() also waits for keys in processing to be done;
//  - workqueue_* metrics with upstream's names, label name=<queue name>.
// Thread-safe.
#include <chrono>
#include <condition_variable>
#include <deque>
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
  void done(const std::string& key);
  size_t len() const;
  void shutDown();
  void shutDownWithDrain();
  bool shuttingDown() const;
  const std::string& name() const { return name_; }

 private:
  void waitingLoop(std::stop_token stop);
  void addLocked(const std::string& key);

  const std::string name_;
  std::unique_ptr<ItemRateLimiter> limiter_;
  Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_, processing_;
  std::unordered_map<std::string, Clock::TimePoint> addedAt_, startedAt_;
  bool shuttingDown_ = false, drain_ = false;
  // Delayed adds: ready time -> keys, and the earliest ready time per key (a later addAfter never delays it).
  std::multimap<Clock::TimePoint, std::string> waiting_;
  std::unordered_map<std::string, Clock::TimePoint> waitingReady_;
  std::condition_variable_any waitCv_;
  // Metrics.
  metrics::Gauge& depth_;
  metrics::Counter& adds_;
  metrics::Histogram& queueLatency_;
  metrics::Histogram& workDuration_;
  metrics::Counter& retries_;
  metrics::Gauge& unfinished_;
  metrics::Gauge& longestRunning_;
  std::jthread waiter_;
};

}  // namespace kcm::runtime
