#pragma once
// upstream pkg/controller/tainteviction/timed_workers.go: work keyed by "ns/name", each fired once at its time.
// A key whose work ran successfully stays known (so it is not scheduled twice) until cancelled; failed work
// forgets its key. Each key is an entry on the clock's timer; fired work runs on the process executor so slow API
// calls do not delay others.
// Thread-safe; no lock is held while work runs.
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace kcm::controllers {

class TimedWorkerQueue {
 public:
  using WorkFunc = std::function<Status(const std::string& key, Clock::TimePoint fireAt)>;
  struct Worker {
    Clock::TimePoint createdAt, fireAt;
  };

  TimedWorkerQueue(WorkFunc fn, int executors = 4, Clock& clock = RealClock::get());
  ~TimedWorkerQueue();  // cancels everything and waits for running work

  // No-op when the key is already known (scheduled, running or done).
  void addWork(const std::string& key, Clock::TimePoint createdAt, Clock::TimePoint fireAt);
  // Forgets the key; true when it was scheduled and not yet fired (work that ran is forgotten silently).
  bool cancelWork(const std::string& key);
  // The key's pending worker, if scheduled and not yet fired.
  std::optional<Worker> getWorker(const std::string& key) const;
  size_t scheduled() const;

 private:
  struct Entry {
    uint64_t id;
    Worker w;
    bool fired = false;
    Clock::TimerId timer = 0;
  };
  void fire(const std::string& key, uint64_t id);

  WorkFunc fn_;
  Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable runningCv_;
  uint64_t nextId_ = 1;
  int running_ = 0;
  bool closed_ = false;
  std::map<std::string, Entry> entries_;
};

}  // namespace kcm::controllers
