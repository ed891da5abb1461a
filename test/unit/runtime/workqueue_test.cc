#include "runtime/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

namespace kcm::runtime {
namespace {

using namespace std::chrono;

TEST(WorkQueue, CollapsesDuplicateAddsAndKeepsOrder) {
  WorkQueue q("test-dedupe");
  q.add("a");
  q.add("b");
  q.add("a");
  EXPECT_EQ(q.len(), 2u);
  EXPECT_EQ(q.get(), "a");
  EXPECT_EQ(q.get(), "b");
}

TEST(WorkQueue, AddWhileProcessingRerunsAfterDone) {
  WorkQueue q("test-rerun");
  q.add("a");
  auto k = q.get();
  ASSERT_EQ(k, "a");
  q.add("a");
  EXPECT_EQ(q.len(), 0u);  // not handed out while processing
  q.add("a");
  q.done("a");
  EXPECT_EQ(q.len(), 1u);  // exactly one re-run
  EXPECT_EQ(q.get(), "a");
  q.done("a");
  EXPECT_EQ(q.len(), 0u);
}

TEST(WorkQueue, NeverHandsOneKeyToTwoWorkersUnderStress) {
  WorkQueue q("test-stress");
  std::mutex mu;
  std::set<std::string> inFlight;
  std::atomic<int> violations{0}, processed{0};
  std::atomic<bool> producing{true};
  std::vector<std::thread> workers;
  for (int w = 0; w < 16; ++w)
    workers.emplace_back([&] {
      while (auto k = q.get()) {
        {
          std::lock_guard l(mu);
          if (!inFlight.insert(*k).second) ++violations;
        }
        std::this_thread::sleep_for(microseconds(50));
        {
          std::lock_guard l(mu);
          inFlight.erase(*k);
        }
        ++processed;
        q.done(*k);
      }
    });
  std::vector<std::thread> producers;
  for (int p = 0; p < 4; ++p)
    producers.emplace_back([&, p] {
      for (int i = 0; i < 5000; ++i) q.add("key-" + std::to_string((i * 7 + p) % 20));
    });
  for (auto& t : producers) t.join();
  producing = false;
  q.shutDownWithDrain();
  for (auto& t : workers) t.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GE(processed.load(), 20);  // every key at least once; more only when adds overlap processing
}

TEST(WorkQueue, AddAfterWaitsForTheClock) {
  FakeClock clock;
  WorkQueue q("test-after", nullptr, clock);
  q.addAfter("a", seconds(10));
  q.addAfter("a", seconds(20));  // later duplicate does not postpone
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_EQ(q.len(), 0u);
  clock.advance(seconds(10));
  for (int i = 0; i < 100 && q.len() == 0; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(q.len(), 1u);
  EXPECT_EQ(q.get(), "a");
}

TEST(WorkQueue, ShutDownWakesGetters) {
  WorkQueue q("test-shutdown");
  std::thread t([&] { EXPECT_FALSE(q.get().has_value()); });
  std::this_thread::sleep_for(milliseconds(20));
  q.shutDown();
  t.join();
  EXPECT_TRUE(q.shuttingDown());
  q.add("ignored");
  EXPECT_EQ(q.len(), 0u);
}

TEST(RateLimiters, ItemExponentialSequence) {
  ItemExponentialFailureRateLimiter rl(milliseconds(5), seconds(1000));
  std::vector<long> got;
  for (int i = 0; i < 5; ++i) got.push_back(duration_cast<milliseconds>(rl.when("x")).count());
  EXPECT_EQ(got, (std::vector<long>{5, 10, 20, 40, 80}));
  EXPECT_EQ(rl.numRequeues("x"), 5);
  EXPECT_EQ(duration_cast<milliseconds>(rl.when("y")).count(), 5);  // per item
  for (int i = 0; i < 30; ++i) rl.when("x");
  EXPECT_EQ(rl.when("x"), seconds(1000));  // capped
  rl.forget("x");
  EXPECT_EQ(rl.numRequeues("x"), 0);
  EXPECT_EQ(duration_cast<milliseconds>(rl.when("x")).count(), 5);
}

TEST(RateLimiters, DefaultControllerIsMaxOfExponentialAndBucket) {
  FakeClock clock;
  auto rl = defaultControllerRateLimiter(clock);
  // The first 100 distinct items fit the burst: only the 5 ms per-item delay applies.
  for (int i = 0; i < 100; ++i) EXPECT_EQ(duration_cast<milliseconds>(rl->when("k" + std::to_string(i))).count(), 5);
  // The 101st waits for the 10 qps bucket: 100 ms.
  EXPECT_EQ(duration_cast<milliseconds>(rl->when("k100")).count(), 100);
}

TEST(Metrics, WorkqueueFamiliesHaveUpstreamNames) {
  metrics::Registry reg;
  WorkQueue q("named", nullptr, RealClock::get(), reg);
  q.add("a");
  q.get();
  q.done("a");
  q.addRateLimited("b");
  std::string text = reg.render();
  for (const char* m : {"workqueue_depth{name=\"named\"}", "workqueue_adds_total{name=\"named\"} 1",
                        "workqueue_queue_duration_seconds_count{name=\"named\"} 1",
                        "workqueue_work_duration_seconds_count{name=\"named\"} 1",
                        "workqueue_retries_total{name=\"named\"} 1", "workqueue_unfinished_work_seconds{name=\"named\"}",
                        "workqueue_longest_running_processor_seconds{name=\"named\"}", "# TYPE workqueue_depth gauge"})
    EXPECT_NE(text.find(m), std::string::npos) << m << "\n" << text;
}

}  // namespace
}  // namespace kcm::runtime

namespace kcm::metrics {
namespace {

// A multi-line HELP (the job controller's, as upstream words them) stays one line of the text format.
TEST(Metrics, HelpTextIsEscapedAsTheTextFormatWantsIt) {
  Registry reg;
  reg.counter("two_lines_total", "first line\nsecond \\ line").inc();
  const std::string text = reg.render();
  EXPECT_NE(text.find("# HELP two_lines_total [ALPHA] first line\\nsecond \\\\ line\n# TYPE two_lines_total counter\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace kcm::metrics
