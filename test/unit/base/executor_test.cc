// The runtime's building blocks: the executor (bounded growth when blocked, shrink when cold), strands
// (one at a time, in order), parallelFor (bounded, caller participates), Periodic, and the clocks' timers.
#include "base/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace kcm {
namespace {

using namespace std::chrono;

template <class P>
bool eventually(P p, milliseconds limit = milliseconds(3000)) {
  for (auto end = steady_clock::now() + limit; steady_clock::now() < end;) {
    if (p()) return true;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return p();
}

TEST(Executor, ShortTasksRunOnTheCoreThreadsWithoutGrowing) {
  Executor ex(2, 16);
  std::atomic<int> done{0};
  for (int i = 0; i < 2000; ++i) ex.post([&] { ++done; });
  ASSERT_TRUE(eventually([&] { return done.load() == 2000; }));
  EXPECT_LE(ex.peakThreads(), 3);  // a burst of short tasks is no reason to add threads
}

TEST(Executor, GrowsWhenEveryThreadIsBlockedAndShrinksBack) {
  Executor ex(2, 16, milliseconds(200));
  std::mutex gate;
  std::unique_lock hold(gate);
  std::atomic<int> started{0};
  for (int i = 0; i < 6; ++i) ex.post([&] {
    ++started;
    std::lock_guard g(gate);  // blocked, as a sync waiting on the apiserver
  });
  // All six make progress although only two threads existed: the pool added threads for the waiting work.
  ASSERT_TRUE(eventually([&] { return started.load() == 6; }));
  EXPECT_GE(ex.threads(), 6);
  EXPECT_LE(ex.threads(), 16);
  hold.unlock();
  // Extra threads leave once cold (200 ms here, 10 s in the daemon).
  ASSERT_TRUE(eventually([&] { return ex.threads() == 2; })) << ex.threads();
}

TEST(Strand, RunsOneTaskAtATimeInPostOrder) {
  Executor ex(4, 8);
  Strand s(ex);
  std::vector<int> order;
  std::atomic<int> inside{0}, maxInside{0};
  for (int i = 0; i < 500; ++i)
    s.post([&, i] {
      int now = ++inside;
      maxInside = std::max(maxInside.load(), now);
      order.push_back(i);  // unsynchronised on purpose: the strand serialises
      --inside;
    });
  ASSERT_TRUE(eventually([&] { return s.pending() == 0; }));
  EXPECT_EQ(maxInside.load(), 1);
  ASSERT_EQ(order.size(), 500u);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(order[i], i);
}

TEST(Strand, DrainDropsQueuedWorkAndWaitsForTheRunningTask) {
  Executor ex(2, 4);
  Strand s(ex);
  std::atomic<bool> release{false}, started{false};
  std::atomic<int> ran{0};
  s.post([&] {
    started = true;
    while (!release) std::this_thread::sleep_for(milliseconds(1));
    ++ran;
  });
  for (int i = 0; i < 10; ++i) s.post([&] { ++ran; });
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(50));
    release = true;
  });
  s.drain();  // returns once the running task ended
  EXPECT_EQ(ran.load(), 1);
  t.join();
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(ran.load(), 1);  // the queued ten were dropped
}

TEST(ParallelFor, CoversEveryIndexOnceWithinTheBoundEvenFromAPoolTask) {
  Executor ex(1, 8);  // one core thread: the caller (a pool task) must take part, or this would deadlock
  std::vector<std::atomic<int>> hits(300);
  std::atomic<int> inFlight{0}, maxInFlight{0};
  std::atomic<bool> finished{false};
  ex.post([&] {
    parallelFor(hits.size(), 4, [&](size_t i) {
      int now = ++inFlight;
      maxInFlight = std::max(maxInFlight.load(), now);
      std::this_thread::sleep_for(microseconds(200));
      ++hits[i];
      --inFlight;
    }, ex);
    finished = true;
  });
  ASSERT_TRUE(eventually([&] { return finished.load(); }));
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_LE(maxInFlight.load(), 4);
}

TEST(FakeClockTimer, FiresDueEntriesInOrderWhenAdvancedAndNeverAfterCancel) {
  FakeClock clock;
  std::vector<int> fired;
  clock.scheduleAfter(seconds(2), [&] { fired.push_back(2); });
  clock.scheduleAfter(seconds(1), [&] { fired.push_back(1); });
  auto id = clock.scheduleAfter(seconds(3), [&] { fired.push_back(3); });
  clock.scheduleAfter(seconds(0), [&] { fired.push_back(0); });  // due now: fires at the next advance
  EXPECT_TRUE(fired.empty());
  clock.advance(milliseconds(1500));
  EXPECT_EQ(fired, (std::vector<int>{0, 1}));
  EXPECT_TRUE(clock.cancel(id));
  clock.advance(seconds(5));
  EXPECT_EQ(fired, (std::vector<int>{0, 1, 2}));
  EXPECT_FALSE(clock.cancel(id));
  EXPECT_EQ(clock.pendingTimers(), 0u);
}

TEST(RealClockTimer, RunsOnTheTimerThreadAndCancelWaitsForARunningCallback) {
  std::atomic<bool> ran{false};
  RealClock::get().scheduleAfter(milliseconds(5), [&] { ran = true; });
  ASSERT_TRUE(eventually([&] { return ran.load(); }));
  std::atomic<bool> inside{false}, finished{false};
  auto id = RealClock::get().scheduleAfter(milliseconds(1), [&] {
    inside = true;
    std::this_thread::sleep_for(milliseconds(50));
    finished = true;
  });
  ASSERT_TRUE(eventually([&] { return inside.load(); }));
  EXPECT_FALSE(RealClock::get().cancel(id));  // already fired...
  EXPECT_TRUE(finished.load());               // ...and cancel returned only once it was done
}

TEST(Periodic, WaitsUntilReadyThenRunsEveryPeriodOfTheClockUntilStopped) {
  FakeClock clock;
  std::atomic<int> runs{0};
  std::atomic<bool> ready{false};
  std::stop_source stop;
  Periodic p;
  p.start(clock, seconds(10), stop.get_token(), [&] { ++runs; }, [&] { return ready.load(); });
  std::this_thread::sleep_for(milliseconds(250));
  EXPECT_EQ(runs.load(), 0);  // not ready: polled, never run
  ready = true;
  ASSERT_TRUE(eventually([&] { return runs.load() == 1; }));
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_EQ(runs.load(), 1);  // the next run waits for the clock
  ASSERT_TRUE(eventually([&] {
    clock.advance(seconds(10));
    return runs.load() >= 2;
  }));
  stop.request_stop();
  int after = runs.load();
  clock.advance(seconds(100));
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_EQ(runs.load(), after);
}

}  // namespace
}  // namespace kcm
