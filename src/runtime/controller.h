#pragma once
// The controller boilerplate, written once (upstream repeats it in every pkg/controller/*):
//   informer events -> key (handlers only compute keys) -> rate-limited WorkQueue -> sync(key) on N workers.
// A controller supplies its event->key mapping and sync(); the base owns the queue, the workers, waiting for
// cache sync, and what to do with a sync result:
//   ok                -> forget(key)              (reset its backoff)
//   requeueAfter(d)   -> forget(key), addAfter(d) (periodic work, e.g. progress deadlines)
//   error             -> addRateLimited(key)      (5 ms doubling to 1000 s per key), logged once here
//   errorNoRetry      -> forget(key)              (terminal: logged, not retried)
// Workers are not threads: `workers` (upstream's --concurrent-*-syncs) is how many sync tasks the controller may
// have in flight on the process executor at once. start() returns at once; cache sync is polled on the timer.
// Thread-safe. Destruction shuts the queue down and waits for in-flight syncs.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/executor.h"
#include "base/status.h"
#include "runtime/workqueue.h"

namespace kcm::runtime {

struct SyncResult {
  Status status;
  std::optional<Clock::Duration> requeueAfter;
  bool retry = true;
  bool quiet = false;  // an expected failure (upstream's IgnorableError): retried, logged at V(4) only
  static SyncResult ok() { return {}; }
  static SyncResult after(Clock::Duration d) { return {Status::Ok(), d, true}; }
  static SyncResult error(Status s) { return {std::move(s), std::nullopt, true}; }
  static SyncResult errorNoRetry(Status s) { return {std::move(s), std::nullopt, false}; }
  static SyncResult ignorable(Status s) { return {std::move(s), std::nullopt, true, true}; }
};

class ControllerBase {
 public:
  using SyncFunc = std::function<SyncResult(const std::string& key)>;

  // name: the controller's name (queue metrics label, logs). maxRetries < 0: retry forever (most controllers);
  // otherwise drop the key after that many rate-limited retries, as some upstream controllers do.
  // limiter: the queue's rate limiter (default: defaultControllerRateLimiter).
  ControllerBase(std::string name, SyncFunc sync, Clock& clock = RealClock::get(), int maxRetries = -1,
                 std::unique_ptr<ItemRateLimiter> limiter = nullptr);
  virtual ~ControllerBase();

  WorkQueue& queue() { return queue_; }
  void enqueue(const std::string& key) { queue_.add(key); }
  void enqueueAfter(const std::string& key, Clock::Duration d) { queue_.addAfter(key, d); }
  template <class T>
  void enqueueObject(const T& obj) {
    const auto& m = obj.metadata;
    enqueue(m.namespace_.empty() ? m.name.str() : m.namespace_ + "/" + m.name);
  }

  // Once every hasSynced is true, processes keys with up to `workers` syncs in flight, until stop (or
  // destruction). Returns at once: what a controller's init calls.
  void start(int workers, std::stop_token stop, std::vector<std::function<bool()>> hasSynced = {});
  // start(), then blocks until stop and the in-flight syncs ended. False when stopped before the caches synced.
  bool run(int workers, std::stop_token stop, const std::vector<std::function<bool()>>& hasSynced = {});
  bool started() const;
  // Syncs in flight now (health checks, tests).
  int inFlight() const;
  // One item, for tests: false when the queue is shut down.
  bool processNextWorkItem();
  const std::string& name() const { return name_; }

 private:
  void processKey(const std::string& key);  // sync, then forget/requeue and done
  void pollSynced();
  void dispatch();
  void dispatchLocked();
  void stopAll();

  std::string name_;
  SyncFunc sync_;
  Clock& clock_;
  int maxRetries_;
  WorkQueue queue_;
  Executor& executor_;
  mutable std::mutex mu_;
  std::condition_variable idleCv_;
  int workers_ = 0, inFlight_ = 0;
  bool started_ = false, stopped_ = false;
  Clock::TimerId pollTimer_ = 0;
  std::vector<std::function<bool()>> hasSynced_;
  std::unique_ptr<std::stop_callback<std::function<void()>>> onStop_;
};

}  // namespace kcm::runtime
