#include "runtime/controller.h"

#include <cstdio>

namespace kcm::runtime {

ControllerBase::ControllerBase(std::string name, SyncFunc sync, Clock& clock, int maxRetries,
                               std::unique_ptr<ItemRateLimiter> limiter)
    : name_(std::move(name)), sync_(std::move(sync)), clock_(clock), maxRetries_(maxRetries),
      queue_(name_, limiter ? std::move(limiter) : defaultControllerRateLimiter(clock), clock) {}

bool ControllerBase::processNextWorkItem() {
  auto key = queue_.get();
  if (!key) return false;
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
    std::fprintf(stderr, "%s: dropping %s out of the queue: %s\n", name_.c_str(), key->c_str(),
                 r.status.toString().c_str());
    queue_.forget(*key);
  } else {
    std::fprintf(stderr, "%s: error syncing %s, requeuing: %s\n", name_.c_str(), key->c_str(),
                 r.status.toString().c_str());
    queue_.addRateLimited(*key);
  }
  queue_.done(*key);
  return true;
}

void ControllerBase::start(int workers, std::stop_token stop, std::vector<std::function<bool()>> hasSynced) {
  // Stops with the caller's token, or when the base is destroyed (the jthread's own token).
  runner_ = std::jthread([this, workers, stop, synced = std::move(hasSynced)](std::stop_token own) {
    std::stop_source combined;
    std::stop_callback a(stop, [&] { combined.request_stop(); });
    std::stop_callback b(own, [&] { combined.request_stop(); });
    run(workers, combined.get_token(), synced);
  });
}

bool ControllerBase::run(int workers, std::stop_token stop, const std::vector<std::function<bool()>>& hasSynced) {
  for (const auto& synced : hasSynced)
    while (!synced()) {
      if (!clock_.sleepFor(std::chrono::milliseconds(100), stop) || stop.stop_requested()) {
        queue_.shutDown();
        return false;
      }
    }
  std::vector<std::jthread> threads;
  for (int i = 0; i < workers; ++i)
    threads.emplace_back([this] {
      while (processNextWorkItem()) {
      }
    });
  std::stop_callback onStop(stop, [this] { queue_.shutDown(); });
  threads.clear();  // joins once the queue is shut down
  return true;
}

}  // namespace kcm::runtime
