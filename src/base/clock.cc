#include "base/clock.h"

#include <thread>

namespace kcm {

// ---- TimerQueue ----

uint64_t TimerQueue::add(TimePoint due, std::function<void()> fn) {
  std::lock_guard l(mu_);
  uint64_t id = nextId_++;
  byDue_.emplace(due, std::make_pair(id, std::move(fn)));
  dueOf_.emplace(id, due);
  return id;
}

bool TimerQueue::cancel(uint64_t id) {
  std::unique_lock l(mu_);
  auto it = dueOf_.find(id);
  if (it == dueOf_.end()) {
    // Already fired: wait until it is no longer running (unless we are inside it).
    if (running_ == id && runner_ != std::this_thread::get_id()) doneCv_.wait(l, [&] { return running_ != id; });
    return false;
  }
  for (auto e = byDue_.lower_bound(it->second); e != byDue_.end() && e->first == it->second; ++e)
    if (e->second.first == id) {
      byDue_.erase(e);
      break;
    }
  dueOf_.erase(it);
  return true;
}

size_t TimerQueue::fireDue(TimePoint now) {
  size_t n = 0;
  std::unique_lock l(mu_);
  while (!byDue_.empty() && byDue_.begin()->first <= now) {
    auto node = byDue_.extract(byDue_.begin());
    uint64_t id = node.mapped().first;
    dueOf_.erase(id);
    running_ = id;
    runner_ = std::this_thread::get_id();
    l.unlock();
    node.mapped().second();
    node.mapped().second = nullptr;
    l.lock();
    running_ = 0;
    doneCv_.notify_all();
    ++n;
  }
  return n;
}

bool TimerQueue::next(TimePoint& due) const {
  std::lock_guard l(mu_);
  if (byDue_.empty()) return false;
  due = byDue_.begin()->first;
  return true;
}

size_t TimerQueue::size() const {
  std::lock_guard l(mu_);
  return byDue_.size();
}

// ---- RealClock ----

RealClock& RealClock::get() {
  static RealClock* c = new RealClock();  // never destroyed: its timer thread runs until exit
  return *c;
}

bool RealClock::sleepFor(Duration d, std::stop_token stop) {
  if (!stop.stop_possible()) {
    std::this_thread::sleep_for(d);
    return true;
  }
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock l(m);
  return !cv.wait_for(l, stop, d, [] { return false; }) && !stop.stop_requested();
}

Clock::TimerId RealClock::schedule(TimePoint due, std::function<void()> fn) {
  std::call_once(started_, [this] { std::thread([this] { loop(); }).detach(); });
  TimerId id = timers_.add(due, std::move(fn));
  {
    std::lock_guard l(mu_);  // pairs with the wait in loop(): no lost wake-up
  }
  cv_.notify_one();
  return id;
}

bool RealClock::cancel(TimerId id) { return timers_.cancel(id); }

void RealClock::loop() {
  std::unique_lock l(mu_);
  while (true) {
    l.unlock();
    timers_.fireDue(now());
    l.lock();
    TimePoint due;
    if (timers_.next(due)) {
      if (due > now()) cv_.wait_until(l, due);
    } else {
      cv_.wait_for(l, std::chrono::seconds(60));
    }
  }
}

// ---- FakeClock ----

void FakeClock::advance(Duration d) {
  TimePoint t;
  {
    std::lock_guard l(mu_);
    now_ += d;
    t = now_;
  }
  timers_.fireDue(t);
}

Clock::TimerId FakeClock::schedule(TimePoint due, std::function<void()> fn) {
  return timers_.add(due, std::move(fn));  // even when already due: it fires at the next advance()
}

}  // namespace kcm
