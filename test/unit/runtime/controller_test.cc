#include "runtime/controller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>

namespace kcm::runtime {
namespace {

using namespace std::chrono;

TEST(ControllerBase, ForgetsOnSuccessRequeuesErrorsAndHonoursRequeueAfter) {
  FakeClock clock;
  std::map<std::string, int> calls;
  ControllerBase c(
      "test-controller",
      [&](const std::string& key) {
        int n = ++calls[key];
        if (key == "fails-twice" && n <= 2) return SyncResult::error(Status(StatusCode::kConflict, "conflict"));
        if (key == "periodic" && n == 1) return SyncResult::after(seconds(30));
        if (key == "terminal") return SyncResult::errorNoRetry(Status(StatusCode::kInvalid, "bad spec"));
        return SyncResult::ok();
      },
      clock);
  for (const char* k : {"ok", "fails-twice", "periodic", "terminal"}) c.enqueue(k);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(c.processNextWorkItem());
  EXPECT_EQ(c.queue().numRequeues("fails-twice"), 1);
  EXPECT_EQ(c.queue().numRequeues("terminal"), 0);
  // The failed key comes back after its backoff (5 ms), the periodic one after 30 s.
  clock.advance(milliseconds(10));
  for (int i = 0; i < 100 && c.queue().len() == 0; ++i) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_TRUE(c.processNextWorkItem());
  EXPECT_EQ(calls["fails-twice"], 2);
  clock.advance(seconds(30));
  for (int i = 0; i < 100 && c.queue().len() < 2; ++i) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_TRUE(c.processNextWorkItem());
  ASSERT_TRUE(c.processNextWorkItem());
  EXPECT_EQ(calls["periodic"], 2);
  EXPECT_EQ(calls["fails-twice"], 3);
  EXPECT_EQ(c.queue().numRequeues("fails-twice"), 0);  // forgotten after success
  EXPECT_EQ(calls["terminal"], 1);
}

TEST(ControllerBase, RunsWorkersAfterCachesSyncAndStops) {
  std::atomic<int> synced{0};
  std::atomic<bool> cacheSynced{false};
  ControllerBase c("test-run", [&](const std::string&) {
    ++synced;
    return SyncResult::ok();
  });
  for (int i = 0; i < 50; ++i) c.enqueue("k" + std::to_string(i));
  std::stop_source stop;
  std::thread t([&] { c.run(4, stop.get_token(), {[&] { return cacheSynced.load(); }}); });
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_EQ(synced.load(), 0);  // waits for the cache
  cacheSynced = true;
  for (int i = 0; i < 200 && synced.load() < 50; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(synced.load(), 50);
  stop.request_stop();
  t.join();
  EXPECT_TRUE(c.queue().shuttingDown());
}

TEST(ControllerBase, NeverHasMoreSyncsInFlightThanItsWorkersAndNeverTwoForOneKey) {
  std::atomic<int> inFlight{0}, maxInFlight{0}, done{0};
  std::mutex mu;
  std::set<std::string> running;
  bool sameKeyTwice = false;
  ControllerBase c("test-permits", [&](const std::string& key) {
    {
      std::lock_guard l(mu);
      sameKeyTwice |= !running.insert(key).second;
    }
    int now = ++inFlight;
    int prev = maxInFlight.load();
    while (now > prev && !maxInFlight.compare_exchange_weak(prev, now)) {
    }
    std::this_thread::sleep_for(milliseconds(2));  // blocked, as on an API call
    --inFlight;
    {
      std::lock_guard l(mu);
      running.erase(key);
    }
    ++done;
    return SyncResult::ok();
  });
  std::stop_source stop;
  c.start(3, stop.get_token());
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < 40; ++i) c.enqueue("k" + std::to_string(i));
  for (int i = 0; i < 500 && (done.load() < 40 || c.inFlight() > 0 || c.queue().len() > 0); ++i)
    std::this_thread::sleep_for(milliseconds(10));
  EXPECT_GE(done.load(), 40);
  EXPECT_LE(done.load(), 120);
  EXPECT_LE(maxInFlight.load(), 3);
  EXPECT_GE(maxInFlight.load(), 2);  // the permits are used, not one sync at a time
  EXPECT_FALSE(sameKeyTwice);
  stop.request_stop();
}

TEST(ControllerBase, DropsAfterMaxRetries) {
  FakeClock clock;
  int calls = 0;
  ControllerBase c("test-max", [&](const std::string&) {
    ++calls;
    return SyncResult::error(Status(StatusCode::kInternal, "boom"));
  }, clock, /*maxRetries=*/2);
  c.enqueue("k");
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 200 && c.queue().len() == 0; ++i) {
      clock.advance(milliseconds(100));
      std::this_thread::sleep_for(milliseconds(2));
    }
    ASSERT_TRUE(c.processNextWorkItem());
  }
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(c.queue().numRequeues("k"), 0);  // dropped and forgotten
  clock.advance(seconds(2000));
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_EQ(c.queue().len(), 0u);
}

}  // namespace
}  // namespace kcm::runtime
