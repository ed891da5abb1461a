#include "runtime/workqueue.h"

#include <algorithm>
#include <cmath>

namespace kcm::runtime {

using namespace std::chrono;

Clock::Duration ItemExponentialFailureRateLimiter::when(const std::string& item) {
  std::lock_guard l(mu_);
  int exp = failures_[item]++;
  double backoff = duration<double>(base_).count() * std::pow(2.0, exp);
  if (backoff > duration<double>(max_).count()) return max_;
  return duration_cast<Clock::Duration>(duration<double>(backoff));
}

void ItemExponentialFailureRateLimiter::forget(const std::string& item) {
  std::lock_guard l(mu_);
  failures_.erase(item);
}

int ItemExponentialFailureRateLimiter::numRequeues(const std::string& item) {
  std::lock_guard l(mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

Clock::Duration MaxOfRateLimiter::when(const std::string& item) {
  Clock::Duration d{0};
  for (auto& l : ls_) d = std::max(d, l->when(item));
  return d;
}

void MaxOfRateLimiter::forget(const std::string& item) {
  for (auto& l : ls_) l->forget(item);
}

int MaxOfRateLimiter::numRequeues(const std::string& item) {
  int n = 0;
  for (auto& l : ls_) n = std::max(n, l->numRequeues(item));
  return n;
}

std::unique_ptr<ItemRateLimiter> defaultControllerRateLimiter(Clock& clock) {
  std::vector<std::unique_ptr<ItemRateLimiter>> ls;
  ls.push_back(std::make_unique<ItemExponentialFailureRateLimiter>(milliseconds(5), seconds(1000)));
  ls.push_back(std::make_unique<BucketRateLimiter>(10, 100, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(ls));
}

namespace {
const std::vector<double>& latencyBuckets() {
  static const auto b = metrics::exponentialBuckets(10e-9, 10, 10);  // 10ns .. 10s, as component-base's
  return b;
}
// An unnamed queue has no metrics (client-go's noMetrics): its series go to a registry nobody renders.
metrics::Registry& registryFor(const std::string& name, metrics::Registry& reg) {
  static metrics::Registry* unnamed = new metrics::Registry();
  return name.empty() ? *unnamed : reg;
}
}  // namespace

WorkQueue::WorkQueue(std::string name, std::unique_ptr<ItemRateLimiter> limiter, Clock& clock,
                     metrics::Registry& registry)
    : name_(std::move(name)),
      limiter_(limiter ? std::move(limiter) : defaultControllerRateLimiter(clock)),
      clock_(clock),
      reg_(registryFor(name_, registry)),
      depth_(reg_.gauge("workqueue_depth", "Current depth of workqueue", {{"name", name_}})),
      adds_(reg_.counter("workqueue_adds_total", "Total number of adds handled by workqueue", {{"name", name_}})),
      queueLatency_(reg_.histogram("workqueue_queue_duration_seconds",
                                  "How long in seconds an item stays in workqueue before being requested.",
                                  latencyBuckets(), {{"name", name_}})),
      workDuration_(reg_.histogram("workqueue_work_duration_seconds",
                                  "How long in seconds processing an item from workqueue takes.", latencyBuckets(),
                                  {{"name", name_}})),
      retries_(reg_.counter("workqueue_retries_total", "Total number of retries handled by workqueue",
                           {{"name", name_}})),
      unfinished_(reg_.gauge("workqueue_unfinished_work_seconds",
                            "How many seconds of work has done that is in progress and hasn't been observed by "
                            "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
                            "threads by observing the rate at which this increases.",
                            {{"name", name_}})),
      longestRunning_(reg_.gauge("workqueue_longest_running_processor_seconds",
                                "How many seconds has the longest running processor for workqueue been running.",
                                {{"name", name_}})) {}

WorkQueue::~WorkQueue() {
  shutDown();
  std::vector<Clock::TimerId> ids;
  {
    std::lock_guard l(mu_);
    closed_ = true;
    for (const auto& [due, id] : armed_) ids.push_back(id);
    if (metricsTimer_) ids.push_back(metricsTimer_);
  }
  for (auto id : ids) clock_.cancel(id);  // waits for a callback that is running now
}

bool WorkQueue::addLocked(const std::string& key) {
  if (shuttingDown_) return false;
  adds_.inc();
  if (dirty_.count(key)) return false;
  dirty_.insert(key);
  addedAt_.emplace(key, clock_.now());
  if (processing_.count(key)) return false;  // re-queued by done()
  queue_.push_back(key);
  depth_.set(static_cast<double>(queue_.size()));
  cv_.notify_one();
  return true;
}

void WorkQueue::add(const std::string& key) {
  bool ready;
  {
    std::lock_guard l(mu_);
    ready = addLocked(key);
  }
  if (ready) notifyReady();
}

void WorkQueue::armLocked() {
  if (closed_ || waiting_.empty()) return;
  auto due = waiting_.begin()->first;
  if (!armed_.empty() && armed_.begin()->first <= due) return;  // an entry fires no later than that
  armed_[due] = clock_.schedule(due, [this, due] { onTimer(due); });
}

void WorkQueue::onTimer(Clock::TimePoint due) {
  bool ready = false;
  {
    std::lock_guard l(mu_);
    armed_.erase(due);
    auto now = clock_.now();
    while (!waiting_.empty() && waiting_.begin()->first <= now) {
      std::string key = waiting_.begin()->second;
      waiting_.erase(waiting_.begin());
      waitingReady_.erase(key);
      ready |= addLocked(key);
    }
    armLocked();
  }
  if (ready) notifyReady();
}

// workqueue_unfinished_work_seconds / _longest_running_processor_seconds, refreshed every 500 ms as upstream,
// but only while something is being processed (an idle queue costs no wake-ups).
void WorkQueue::armMetricsLocked() {
  if (closed_ || metricsTimer_ || processing_.empty()) return;
  metricsTimer_ = clock_.scheduleAfter(milliseconds(500), [this] {
    std::lock_guard l(mu_);
    metricsTimer_ = 0;
    auto now = clock_.now();
    double total = 0, longest = 0;
    for (const auto& [k, t] : startedAt_) {
      double s = duration<double>(now - t).count();
      total += s;
      longest = std::max(longest, s);
    }
    unfinished_.set(total);
    longestRunning_.set(longest);
    armMetricsLocked();
  });
}

void WorkQueue::addAfter(const std::string& key, Clock::Duration d) {
  if (d <= Clock::Duration::zero()) return add(key);
  {
    std::lock_guard l(mu_);
    if (shuttingDown_) return;
    auto ready = clock_.now() + d;
    auto it = waitingReady_.find(key);
    if (it != waitingReady_.end()) {
      if (it->second <= ready) return;  // already due sooner
      for (auto w = waiting_.lower_bound(it->second); w != waiting_.end() && w->first == it->second; ++w)
        if (w->second == key) {
          waiting_.erase(w);
          break;
        }
    }
    waitingReady_[key] = ready;
    waiting_.emplace(ready, key);
    armLocked();
  }
}

void WorkQueue::addRateLimited(const std::string& key) {
  retries_.inc();
  addAfter(key, limiter_->when(key));
}

void WorkQueue::forget(const std::string& key) { limiter_->forget(key); }

int WorkQueue::numRequeues(const std::string& key) { return limiter_->numRequeues(key); }

std::optional<std::string> WorkQueue::get() {
  std::unique_lock l(mu_);
  cv_.wait(l, [&] { return !queue_.empty() || shuttingDown_; });
  return takeLocked();
}

std::optional<std::string> WorkQueue::tryGet() {
  std::lock_guard l(mu_);
  return takeLocked();
}

std::optional<std::string> WorkQueue::takeLocked() {
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  depth_.set(static_cast<double>(queue_.size()));
  auto now = clock_.now();
  if (auto it = addedAt_.find(key); it != addedAt_.end()) {
    queueLatency_.observe(duration<double>(now - it->second).count());
    addedAt_.erase(it);
  }
  startedAt_[key] = now;
  processing_.insert(key);
  dirty_.erase(key);
  armMetricsLocked();
  return key;
}

void WorkQueue::done(const std::string& key) {
  bool ready = false;
  {
    std::lock_guard l(mu_);
    if (auto it = startedAt_.find(key); it != startedAt_.end()) {
      workDuration_.observe(duration<double>(clock_.now() - it->second).count());
      startedAt_.erase(it);
    }
    processing_.erase(key);
    if (dirty_.count(key)) {
      queue_.push_back(key);
      depth_.set(static_cast<double>(queue_.size()));
      cv_.notify_one();
      ready = true;
    } else if (processing_.empty()) {
      unfinished_.set(0);
      longestRunning_.set(0);
      cv_.notify_all();  // shutDownWithDrain waits for this
    }
  }
  if (ready) notifyReady();
}

size_t WorkQueue::len() const {
  std::lock_guard l(mu_);
  return queue_.size();
}

void WorkQueue::shutDown() {
  {
    std::lock_guard l(mu_);
    shuttingDown_ = true;
  }
  cv_.notify_all();
}

void WorkQueue::shutDownWithDrain() {
  std::unique_lock l(mu_);
  shuttingDown_ = true;
  drain_ = true;
  cv_.notify_all();
  cv_.wait(l, [&] { return processing_.empty(); });
}

bool WorkQueue::shuttingDown() const {
  std::lock_guard l(mu_);
  return shuttingDown_;
}

}  // namespace kcm::runtime
