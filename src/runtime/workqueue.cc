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
  static const auto b = metrics::exponentialBuckets(10e-9, 10, 12);  // 10ns .. 1000s, like upstream
  return b;
}
}  // namespace

WorkQueue::WorkQueue(std::string name, std::unique_ptr<ItemRateLimiter> limiter, Clock& clock,
                     metrics::Registry& reg)
    : name_(std::move(name)),
      limiter_(limiter ? std::move(limiter) : defaultControllerRateLimiter(clock)),
      clock_(clock),
      depth_(reg.gauge("workqueue_depth", "Current depth of workqueue", {{"name", name_}})),
      adds_(reg.counter("workqueue_adds_total", "Total number of adds handled by workqueue", {{"name", name_}})),
      queueLatency_(reg.histogram("workqueue_queue_duration_seconds",
                                  "How long in seconds an item stays in workqueue before being requested.",
                                  latencyBuckets(), {{"name", name_}})),
      workDuration_(reg.histogram("workqueue_work_duration_seconds",
                                  "How long in seconds processing an item from workqueue takes.", latencyBuckets(),
                                  {{"name", name_}})),
      retries_(reg.counter("workqueue_retries_total", "Total number of retries handled by workqueue",
                           {{"name", name_}})),
      unfinished_(reg.gauge("workqueue_unfinished_work_seconds",
                            "How many seconds of work has been done that is in progress and hasn't been observed by "
                            "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
                            "threads by observing the rate at which this increases.",
                            {{"name", name_}})),
      longestRunning_(reg.gauge("workqueue_longest_running_processor_seconds",
                                "How many seconds has the longest running processor for workqueue been running.",
                                {{"name", name_}})),
      waiter_([this](std::stop_token st) { waitingLoop(st); }) {}

WorkQueue::~WorkQueue() {
  shutDown();
  waiter_.request_stop();
  waitCv_.notify_all();
}

void WorkQueue::addLocked(const std::string& key) {
  if (shuttingDown_) return;
  adds_.inc();
  if (dirty_.count(key)) return;
  dirty_.insert(key);
  addedAt_.emplace(key, clock_.now());
  if (processing_.count(key)) return;  // re-queued by done()
  queue_.push_back(key);
  depth_.set(static_cast<double>(queue_.size()));
  cv_.notify_one();
}

void WorkQueue::add(const std::string& key) {
  std::lock_guard l(mu_);
  addLocked(key);
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
  }
  waitCv_.notify_all();
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
  return key;
}

void WorkQueue::done(const std::string& key) {
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
  } else if (processing_.empty()) {
    cv_.notify_all();  // shutDownWithDrain waits for this
  }
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
  waitCv_.notify_all();
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

void WorkQueue::waitingLoop(std::stop_token stop) {
  std::unique_lock l(mu_);
  auto lastMetrics = clock_.now();
  while (!stop.stop_requested()) {
    auto now = clock_.now();
    while (!waiting_.empty() && waiting_.begin()->first <= now) {
      std::string key = waiting_.begin()->second;
      waiting_.erase(waiting_.begin());
      waitingReady_.erase(key);
      addLocked(key);
    }
    if (now - lastMetrics >= milliseconds(500)) {  // upstream updates these every 500 ms
      double total = 0, longest = 0;
      for (const auto& [k, t] : startedAt_) {
        double s = duration<double>(now - t).count();
        total += s;
        longest = std::max(longest, s);
      }
      unfinished_.set(total);
      longestRunning_.set(longest);
      lastMetrics = now;
    }
    // Sleep until the next delayed key is due, at most 100 ms of real time (so an injected FakeClock that
    // advances is noticed); an addAfter() wakes us early.
    auto wait = milliseconds(100);
    if (!waiting_.empty())
      wait = std::clamp(duration_cast<milliseconds>(waiting_.begin()->first - now), milliseconds(1), wait);
    waitCv_.wait_for(l, stop, wait, [&] { return false; });
  }
}

}  // namespace kcm::runtime
