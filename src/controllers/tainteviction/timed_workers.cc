#include "controllers/tainteviction/timed_workers.h"

#include "base/executor.h"

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
  uint64_t id = nextId_++;
  Entry& e = entries_[key] = Entry{id, Worker{createdAt, fireAt}};
  e.timer = clock_.schedule(fireAt, [this, key, id] { fire(key, id); });
}

bool TimedWorkerQueue::cancelWork(const std::string& key) {
  Clock::TimerId t = 0;
  bool pending;
  {
    std::lock_guard l(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return false;
    pending = !it->second.fired;
    if (pending) t = it->second.timer;
    entries_.erase(it);
  }
  if (t) clock_.cancel(t);  // a callback already firing finds the id gone and does nothing
  return pending;
}

std::optional<TimedWorkerQueue::Worker> TimedWorkerQueue::getWorker(const std::string& key) const {
  std::lock_guard l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.fired) return std::nullopt;
  return it->second.w;
}

size_t TimedWorkerQueue::scheduled() const {
  std::lock_guard l(mu_);
  size_t n = 0;
  for (const auto& [k, e] : entries_) n += e.fired ? 0 : 1;
  return n;
}

void TimedWorkerQueue::fire(const std::string& key, uint64_t id) {
  Clock::TimePoint fireAt;
  {
    std::lock_guard l(mu_);
    auto it = entries_.find(key);
    if (closed_ || it == entries_.end() || it->second.id != id) return;  // cancelled
    it->second.fired = true;
    it->second.timer = 0;
    fireAt = it->second.w.fireAt;
    ++running_;
  }
  Executor::global().post([this, key, id, fireAt] {
    Status s = fn_(key, fireAt);
    std::lock_guard l(mu_);
    auto it = entries_.find(key);
    // Success keeps the key (no second eviction); failure forgets it so a later update can schedule it again.
    if (!s.ok() && it != entries_.end() && it->second.id == id) entries_.erase(it);
    if (--running_ == 0) runningCv_.notify_all();
  });
}

}  // namespace kcm::controllers
