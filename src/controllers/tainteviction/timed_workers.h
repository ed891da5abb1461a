#pragma once
// upstream pkg/controller/tainteviction/timed_workers.go: work keyed by "ns/name", run once no earlier than its
// fire time. Work due at once (fireAt <= createdAt) starts right away with no timed worker; later work gets a
// timed worker (an entry on the clock's timer). Either way the key stays taken while the work is pending or
// running, and is removed when the work returns, whatever its result, so a later addWork runs it again (a pod
// still terminating after its eviction is retried on the next taint change). Work runs on the process executor
// so slow API calls do not delay other keys.
// Thread-safe; no lock is held while work runs.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

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

  // No-op while the key is taken (pending or running). Runs fn (fireAt - createdAt) from now, at once when that
  // is not positive.
  void addWork(const std::string& key, Clock::TimePoint createdAt, Clock::TimePoint fireAt);
  // Frees the key (pending work will not run; running work finishes). True when the key had a timed worker,
  // fired or not (upstream CancelWork: a non-nil worker); work started at once reports false.
  bool cancelWork(const std::string& key);
  // The key's timed worker, until its work returns (upstream GetWorkerUnsafe; nullopt for work started at once).
  std::optional<Worker> getWorker(const std::string& key) const;
  // Keys whose work has not started yet.
  size_t scheduled() const;

 private:
  struct Entry {
    uint64_t id;
    Worker w;
    bool timed;          // has a timed worker (upstream: non-nil *TimedWorker)
    bool started = false;
    Clock::TimerId timer = 0;
  };
  void fire(const std::string& key, uint64_t id);
  void startLocked(const std::string& key, uint64_t id, Clock::TimePoint fireAt);

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
