#pragma once
// The controller boilerplate, written once (upstream repeats it in every pkg/controller/*):
//   informer events -> key (handlers only compute keys) -> rate-limited WorkQueue -> sync(key) on N workers.
// A controller supplies its event->key mapping and sync(); the base owns the queue, the workers, waiting for
// cache sync, and what to do with a sync result:
//   ok                -> forget(key)              (reset its backoff)
//   requeueAfter(d)   -> forget(key), addAfter(d) (periodic work, e.g. progress deadlines)
//   error             -> addRateLimited(key)      (5 ms doubling to 1000 s per key), logged once here
//   errorNoRetry      -> forget(key)              (terminal: logged, not retried)
// Thread-safe. run() blocks until stop, then shuts the queue down and joins the workers.
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "runtime/workqueue.h"

namespace kcm::runtime {

struct SyncResult {
  Status status;
  std::optional<Clock::Duration> requeueAfter;
  bool retry = true;
  static SyncResult ok() { return {}; }
  static SyncResult after(Clock::Duration d) { return {Status::Ok(), d, true}; }
  static SyncResult error(Status s) { return {std::move(s), std::nullopt, true}; }
  static SyncResult errorNoRetry(Status s) { return {std::move(s), std::nullopt, false}; }
};

class ControllerBase {
 public:
  using SyncFunc = std::function<SyncResult(const std::string& key)>;

  // name: the controller's name (queue metrics label, logs). maxRetries < 0: retry forever (most controllers);
  // otherwise drop the key after that many rate-limited retries, as some upstream controllers do.
  // limiter: the queue's rate limiter (default: defaultControllerRateLimiter).
  ControllerBase(std::string name, SyncFunc sync, Clock& clock = RealClock::get(), int maxRetries = -1,
                 std::unique_ptr<ItemRateLimiter> limiter = nullptr);
  virtual ~ControllerBase() = default;

  WorkQueue& queue() { return queue_; }
  void enqueue(const std::string& key) { queue_.add(key); }
  void enqueueAfter(const std::string& key, Clock::Duration d) { queue_.addAfter(key, d); }
  template <class T>
  void enqueueObject(const T& obj) {
    const auto& m = obj.metadata;
    enqueue(m.namespace_.empty() ? m.name : m.namespace_ + "/" + m.name);
  }

  // Waits for every hasSynced to be true (or stop), then runs `workers` threads until stop.
  // Returns false when stopped before the caches synced.
  bool run(int workers, std::stop_token stop, const std::vector<std::function<bool()>>& hasSynced = {});
  // run() on a thread the base owns (joined on destruction): what a controller's init calls.
  void start(int workers, std::stop_token stop, std::vector<std::function<bool()>> hasSynced = {});
  // One item, for tests: false when the queue is shut down.
  bool processNextWorkItem();
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  SyncFunc sync_;
  Clock& clock_;
  int maxRetries_;
  WorkQueue queue_;
  std::jthread runner_;  // last: joined before the queue goes away
};

}  // namespace kcm::runtime
