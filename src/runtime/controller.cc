#include "runtime/controller.h"

#include "base/log.h"

#include <cstdio>

namespace kcm::runtime {

ControllerBase::ControllerBase(std::string name, SyncFunc sync, Clock& clock, int maxRetries,
                               std::unique_ptr<ItemRateLimiter> limiter)
    : name_(std::move(name)), sync_(std::move(sync)), clock_(clock), maxRetries_(maxRetries),
      queue_(name_, limiter ? std::move(limiter) : defaultControllerRateLimiter(clock), clock),
      executor_(Executor::global()) {
  queue_.setReadyCallback([this] { dispatch(); });
}

ControllerBase::~ControllerBase() {
  onStop_.reset();  // no stop callback may run against a half-destroyed base
  stopAll();
  std::unique_lock l(mu_);
  idleCv_.wait(l, [&] { return inFlight_ == 0; });
}

bool ControllerBase::processNextWorkItem() {
  auto key = queue_.get();
  if (!key) return false;
  processKey(*key);
  return true;
}

void ControllerBase::processKey(const std::string& k) {
  const std::string* key = &k;
  SyncResult r;
  try {
    r = sync_(*key);
  } catch (const std::exception& e) {  // no exception leaves a worker: treat as a retryable error
    r = SyncResult::error(Status(StatusCode::kInternal, std::string("sync threw: ") + e.what()));
  }
  if (r.status.ok()) {
    queue_.forget(*key);
    if (r.requeueAfter) queue_.addAfter(*key, *r.requeueAfter);
  } else if (!r.retry || (maxRetries_ >= 0 && queue_.numRequeues(*key) >= maxRetries_)) {
    KLOG_V(2, "\"Dropping key out of the queue\" controller=" + log::quote(name_) + " key=" + log::quote(*key) +
                  " err=" + log::quote(r.status.message()));
    queue_.forget(*key);
  } else {
    if (!r.quiet)
      // Upstream's workers hand the error to HandleError: the "UnhandledError" logger's line.
      KLOG_ERROR("\"Unhandled Error\" err=" +
                 log::quote("error syncing " + name_ + " " + *key + ": " + r.status.message() + ", requeuing") +
                 " logger=\"UnhandledError\"");
    else
      KLOG_V(4, "\"Sync failed\" controller=" + log::quote(name_) + " key=" + log::quote(*key) +
                    " err=" + log::quote(r.status.message()));
    queue_.addRateLimited(*key);
  }
  queue_.done(*key);
}

void ControllerBase::stopAll() {
  Clock::TimerId t;
  {
    std::lock_guard l(mu_);
    stopped_ = true;
    t = pollTimer_;
    pollTimer_ = 0;
  }
  if (t) RealClock::get().cancel(t);
  queue_.shutDown();
}

void ControllerBase::start(int workers, std::stop_token stop, std::vector<std::function<bool()>> hasSynced) {
  {
    std::lock_guard l(mu_);
    workers_ = std::max(1, workers);
    hasSynced_ = std::move(hasSynced);
  }
  onStop_ = std::make_unique<std::stop_callback<std::function<void()>>>(stop, std::function<void()>([this] { stopAll(); }));
  // WaitForNamedCacheSyncWithContext's lines, at level 0 as there.
  if (!hasSynced_.empty()) KLOG_INFO("\"Waiting for caches to sync\"");
  pollSynced();
}

// Cache sync is real readiness, not simulated time: polled every 100 ms on the real clock's timer.
void ControllerBase::pollSynced() {
  {
    std::lock_guard l(mu_);
    pollTimer_ = 0;
    if (stopped_) return;
    bool all = true;
    for (const auto& s : hasSynced_) all = all && s();
    if (!all) {
      pollTimer_ = RealClock::get().scheduleAfter(std::chrono::milliseconds(100), [this] { pollSynced(); });
      return;
    }
    started_ = true;
    if (!hasSynced_.empty()) KLOG_INFO("\"Caches are synced\"");
    hasSynced_.clear();
  }
  dispatch();
}

void ControllerBase::dispatch() {
  std::lock_guard l(mu_);
  dispatchLocked();
}

// Posts sync tasks while keys are ready and permits are left. A task drains up to a batch of keys, then gives
// the pool thread back; its last step (permit returned, re-dispatch) happens under mu_, so once the destructor
// has seen inFlight_ == 0 no task touches this object again.
void ControllerBase::dispatchLocked() {
  if (!started_ || stopped_) return;
  for (size_t ready = queue_.len(); inFlight_ < workers_ && ready > 0; --ready) {
    ++inFlight_;
    executor_.post([this] {
      for (int i = 0; i < 32; ++i) {
        auto key = queue_.tryGet();
        if (!key) break;
        processKey(*key);
      }
      std::lock_guard g(mu_);
      --inFlight_;
      dispatchLocked();  // keys that arrived while we were full
      if (inFlight_ == 0) idleCv_.notify_all();
    });
  }
}

bool ControllerBase::run(int workers, std::stop_token stop, const std::vector<std::function<bool()>>& hasSynced) {
  start(workers, stop, hasSynced);
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lk(m);
  cv.wait(lk, stop, [] { return false; });
  stopAll();
  std::unique_lock l(mu_);
  idleCv_.wait(l, [&] { return inFlight_ == 0; });
  return started_;
}

bool ControllerBase::started() const {
  std::lock_guard l(mu_);
  return started_;
}

int ControllerBase::inFlight() const {
  std::lock_guard l(mu_);
  return inFlight_;
}

}  // namespace kcm::runtime
