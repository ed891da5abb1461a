#include "controllers/tainteviction/timed_workers.h"

namespace kcm::controllers {

TimedWorkerQueue::TimedWorkerQueue(WorkFunc fn, int executors, Clock& clock) : fn_(std::move(fn)), clock_(clock) {
  threads_.emplace_back([this](std::stop_token s) { timerLoop(s); });
  for (int i = 0; i < executors; ++i) threads_.emplace_back([this](std::stop_token s) { execLoop(s); });
}

TimedWorkerQueue::~TimedWorkerQueue() {
  {
    std::lock_guard l(mu_);
    entries_.clear();
    timers_.clear();
    ready_.clear();
  }
  for (auto& t : threads_) t.request_stop();
  cv_.notify_all();
  execCv_.notify_all();
  threads_.clear();  // joins
}

void TimedWorkerQueue::addWork(const std::string& key, Clock::TimePoint createdAt, Clock::TimePoint fireAt) {
  std::lock_guard l(mu_);
  if (entries_.count(key)) return;
  uint64_t id = nextId_++;
  entries_[key] = Entry{id, Worker{createdAt, fireAt}};
  timers_.emplace(fireAt, std::make_pair(key, id));
  cv_.notify_all();
}

bool TimedWorkerQueue::cancelWork(const std::string& key) {
  std::lock_guard l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  bool pending = !it->second.fired;
  entries_.erase(it);  // its timer is skipped when it comes due (id no longer matches)
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

void TimedWorkerQueue::timerLoop(std::stop_token stop) {
  std::unique_lock l(mu_);
  while (!stop.stop_requested()) {
    if (timers_.empty()) {
      cv_.wait(l, stop, [&] { return !timers_.empty(); });
      continue;
    }
    auto due = timers_.begin()->first;
    auto now = clock_.now();
    if (due > now) {
      // Real time: wait on the condition variable (woken early by new work). Fake clocks are advanced by tests,
      // which then see work fire within a second.
      cv_.wait_for(l, stop, std::min<Clock::Duration>(due - now, std::chrono::seconds(1)),
                   [] { return false; });
      continue;
    }
    auto [key, id] = timers_.begin()->second;
    timers_.erase(timers_.begin());
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.id != id) continue;  // cancelled
    it->second.fired = true;
    ready_.emplace_back(key, id);
    execCv_.notify_one();
  }
}

void TimedWorkerQueue::execLoop(std::stop_token stop) {
  std::unique_lock l(mu_);
  while (!stop.stop_requested()) {
    if (!execCv_.wait(l, stop, [&] { return !ready_.empty(); })) return;
    auto [key, id] = ready_.front();
    ready_.pop_front();
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.id != id) continue;
    auto fireAt = it->second.w.fireAt;
    l.unlock();
    Status s = fn_(key, fireAt);
    l.lock();
    it = entries_.find(key);
    // Success keeps the key (no second eviction); failure forgets it so a later update can schedule it again.
    if (!s.ok() && it != entries_.end() && it->second.id == id) entries_.erase(it);
  }
}

}  // namespace kcm::controllers
