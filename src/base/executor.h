#pragma once
// The process-wide executor: a small pool of threads that runs every task of the daemon (workqueue syncs, event
// handler dispatch, informer list/decode steps, periodic controller loops). A thread is a resource, not a unit
// of work (STYLE.md §9).
//
// - Executor: `core` threads live for the process. When work has waited 2 ms with no thread free (every thread
//   is blocked on an API call or a rate limiter), the pool adds a thread, up to `max`, and checks again 2 ms
//   later, as Go's sysmon hands a blocked thread's P to a new one; a burst of short tasks adds none. Parked core
//   threads are woken before extra ones, so extras that stay cold leave after 10 s.
// - Strand: tasks posted to one strand run one at a time, in order, on the executor (per-handler ordering).
// - parallelFor(n, maxInFlight, fn): fn(0..n-1) with at most maxInFlight at once; the caller runs items too,
//   so it never deadlocks when called from a pool task. Replaces std::async / thread fan-out.
//
// Thread-safe. Tasks must not throw (an escaping exception is caught, logged and dropped).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <stop_token>
#include <vector>

#include "base/clock.h"

namespace kcm {

class Executor {
 public:
  using Task = std::function<void()>;
  // idleTimeout: how long a thread above `core` may stay cold before it leaves.
  Executor(int core, int max, std::chrono::milliseconds idleTimeout = std::chrono::seconds(10));
  ~Executor();  // finishes queued tasks, then joins
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // The daemon's pool: core = max(2, min(4, 2 x cores)), max = 64 (KCM_EXECUTOR_THREADS overrides core).
  static Executor& global();

  void post(Task t);
  // Threads now alive, and the most ever (tests, benchmarks).
  int threads() const;
  int peakThreads() const { return peak_.load(); }

 private:
  struct Idle {  // one parked worker
    std::condition_variable cv;
    bool woken = false;
  };
  void worker(bool core);
  void spawnLocked(bool core);
  void checkStalled();

  const int core_, max_;
  const std::chrono::milliseconds idleTimeout_;
  mutable std::mutex mu_;
  std::deque<Task> q_;
  // Parked workers, as stacks (the most recently parked is woken first); core threads before extra ones, so
  // extras get work only while every core thread is busy and go cold otherwise.
  std::vector<Idle*> idleCore_, idleExtra_;
  int alive_ = 0;
  bool stopping_ = false, checkScheduled_ = false;
  uint64_t checkTimer_ = 0;  // the pending checkStalled on the process timer; cancelled by the destructor
  std::chrono::steady_clock::time_point lastTake_{};
  std::atomic<int> peak_{0};
  std::vector<std::thread> threads_;  // joined on destruction (an extra thread that leaves detaches itself)
};

// Serial execution on an executor: at most one posted task runs at a time, in post order.
// Destroying a strand with tasks pending waits for the running task to end and drops the rest.
class Strand {
 public:
  explicit Strand(Executor& ex = Executor::global());
  ~Strand();
  Strand(const Strand&) = delete;
  Strand& operator=(const Strand&) = delete;

  void post(Executor::Task t);
  // Drops queued tasks and waits for the running one (not from inside a task of this strand).
  void drain();
  size_t pending() const;

  struct State;  // implementation detail (shared with the pool task that runs the strand)

 private:
  std::shared_ptr<State> st_;
  Executor& ex_;
};

// Runs fn(i) for i in [0, n) with at most maxInFlight concurrently (on the executor and the calling thread).
// Returns when every call returned.
void parallelFor(size_t n, size_t maxInFlight, const std::function<void(size_t)>& fn,
                 Executor& ex = Executor::global());

// wait.Until on the executor: once `ready` holds (polled every 100 ms of real time), runs fn, then again
// `period` (of `clock`) after each run ends, until stop or destruction. No thread of its own.
class Periodic {
 public:
  Periodic() = default;
  ~Periodic() { stop(); }  // waits for a running fn
  Periodic(const Periodic&) = delete;
  Periodic& operator=(const Periodic&) = delete;

  void start(Clock& clock, Clock::Duration period, std::stop_token stop, std::function<void()> fn,
             std::function<bool()> ready = {}, Executor& ex = Executor::global());
  void stop();

  struct State;  // implementation detail

 private:
  std::shared_ptr<State> st_;
};

}  // namespace kcm
