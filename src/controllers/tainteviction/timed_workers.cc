#include "controllers/tainteviction/timed_workers.h"

#include <vector>

#include "base/executor.h"
#include "base/log.h"

namespace kcm::controllers {

TimedWorkerQueue::TimedWorkerQueue(WorkFunc fn, int /*executors: the process executor serves*/, Clock& clock)
    : fn_(std::move(fn)), clock_(clock) {}

TimedWorkerQueue::~TimedWorkerQueue() {
  std::vector<Clock::TimerId> timers;
  {
    std::lock_guard l(mu_);
    closed_ = true;
    for (const auto& [k, e] : entries_)
      if (e.timer) timers.push_back(e.timer);
    entries_.clear();
  }
  for (auto t : timers) clock_.cancel(t);  // outside mu_: a firing callback takes it
  std::unique_lock l(mu_);
  runningCv_.wait(l, [&] { return running_ == 0; });
}

void TimedWorkerQueue::addWork(const std::string& key, Clock::TimePoint createdAt, Clock::TimePoint fireAt) {
  std::lock_guard l(mu_);
  if (closed_ || entries_.count(key)) return;
  const uint64_t id = nextId_++;
  // As upstream createWorker: the delay is fireAt - createdAt, counted from now.
  const Clock::Duration delay = fireAt - createdAt;
  Entry& e = entries_[key] = Entry{id, Worker{createdAt, fireAt}, delay > Clock::Duration::zero()};
  if (!e.timed) {
    startLocked(key, id, fireAt);
    return;
  }
  e.timer = clock_.scheduleAfter(delay, [this, key, id] { fire(key, id); });
}

bool TimedWorkerQueue::cancelWork(const std::string& key) {
  Clock::TimerId t = 0;
  bool timed;
  {
    std::lock_guard l(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return false;
    timed = it->second.timed;
    if (!it->second.started) t = it->second.timer;
    entries_.erase(it);
  }
  if (t) clock_.cancel(t);  // a callback already firing finds the id gone and does nothing
  return timed;
}

std::optional<TimedWorkerQueue::Worker> TimedWorkerQueue::getWorker(const std::string& key) const {
  std::lock_guard l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.timed) return std::nullopt;
  return it->second.w;
}

size_t TimedWorkerQueue::scheduled() const {
  std::lock_guard l(mu_);
  size_t n = 0;
  for (const auto& [k, e] : entries_) n += e.started ? 0 : 1;
  return n;
}

void TimedWorkerQueue::fire(const std::string& key, uint64_t id) {
  std::lock_guard l(mu_);
  auto it = entries_.find(key);
  if (closed_ || it == entries_.end() || it->second.id != id) return;  // cancelled
  it->second.timer = 0;
  startLocked(key, id, it->second.w.fireAt);
}

void TimedWorkerQueue::startLocked(const std::string& key, uint64_t id, Clock::TimePoint fireAt) {
  entries_.at(key).started = true;
  ++running_;
  Executor::global().post([this, key, id, fireAt] {
    if (Status s = fn_(key, fireAt); !s.ok())
      KLOG_ERROR("\"TaintEvictionController: timed worker failed\" item=\"" + key + "\" err=\"" + s.message() + "\"");
    std::lock_guard l(mu_);
    // Done, successful or not: the key is free again (upstream getWrappedWorkerFunc). A newer entry for the key
    // (the old one was cancelled meanwhile) is not ours to remove.
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.id == id) entries_.erase(it);
    if (--running_ == 0) runningCv_.notify_all();
  });
}

}  // namespace kcm::controllers
