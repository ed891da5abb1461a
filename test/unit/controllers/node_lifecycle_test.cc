// Pure parts of node-lifecycle and taint-eviction: toleration matching, zone states, the per-zone rate-limited
// taint queue and the timed eviction queue.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "controllers/nodelifecycle/node_lifecycle_controller.h"
#include "controllers/nodelifecycle/rate_limited_queue.h"
#include "controllers/tainteviction/timed_workers.h"
#include "controllers/util/node_util.h"
#include "controllers/util/taints.h"

namespace kcm::controllers {
namespace {

using api::core::v1::NodeCondition;
using api::core::v1::Taint;
using api::core::v1::Toleration;
using namespace std::chrono_literals;

Taint taint(const std::string& key, const std::string& value, const std::string& effect) {
  Taint t;
  t.key = key;
  t.value = value;
  t.effect = effect;
  return t;
}
Toleration tol(const std::string& key, const std::string& op, const std::string& value, const std::string& effect,
               std::optional<int64_t> seconds = std::nullopt) {
  Toleration t;
  t.key = key;
  t.operator_ = op;
  t.value = value;
  t.effect = effect;
  t.tolerationSeconds = seconds;
  return t;
}

TEST(Taints, TolerationMatchingFollowsUpstream) {
  Taint t = taint("k", "v", "NoExecute");
  EXPECT_TRUE(toleratesTaint(tol("k", "Equal", "v", "NoExecute"), t));
  EXPECT_TRUE(toleratesTaint(tol("k", "", "v", ""), t));          // empty operator = Equal, empty effect = all
  EXPECT_FALSE(toleratesTaint(tol("k", "Equal", "w", "NoExecute"), t));
  EXPECT_FALSE(toleratesTaint(tol("k", "Exists", "", "NoSchedule"), t));
  EXPECT_TRUE(toleratesTaint(tol("", "Exists", "", ""), t));       // tolerates everything
  EXPECT_FALSE(toleratesTaint(tol("other", "Exists", "", ""), t));
  // Lt/Gt only with the TaintTolerationComparisonOperators gate.
  Taint n = taint("k", "5", "NoExecute");
  EXPECT_FALSE(toleratesTaint(tol("k", "Gt", "3", "NoExecute"), n));
  EXPECT_TRUE(toleratesTaint(tol("k", "Gt", "3", "NoExecute"), n, true));
  EXPECT_FALSE(toleratesTaint(tol("k", "Lt", "3", "NoExecute"), n, true));
  EXPECT_FALSE(toleratesTaint(tol("k", "Gt", "03", "NoExecute"), n, true));  // not a decimal integer
}

TEST(Taints, MinTolerationTimeAndMatchingTolerations) {
  std::vector<Taint> taints = {taint("a", "", "NoExecute"), taint("b", "", "NoExecute")};
  auto m = getMatchingTolerations(taints, {tol("a", "Exists", "", "", 30), tol("b", "Exists", "", "", 10)});
  ASSERT_TRUE(m.allTolerated);
  EXPECT_EQ(getMinTolerationTime(m.used), 10s);
  EXPECT_FALSE(getMatchingTolerations(taints, {tol("a", "Exists", "", "")}).allTolerated);
  EXPECT_EQ(getMinTolerationTime({tol("a", "Exists", "", "")}), -1s);          // forever
  EXPECT_EQ(getMinTolerationTime({tol("a", "Exists", "", "", -5)}), 0s);       // <= 0: now
  EXPECT_EQ(getMinTolerationTime({}), 0s);
}

TEST(Taints, SetDiffIsByKeyAndEffect) {
  auto d = taintSetDiff({taint("a", "", "NoSchedule"), taint("b", "", "NoSchedule")},
                        {taint("b", "x", "NoSchedule"), taint("c", "", "NoSchedule")});
  ASSERT_EQ(d.toAdd.size(), 1u);
  EXPECT_EQ(d.toAdd[0].key, "a");
  ASSERT_EQ(d.toRemove.size(), 1u);
  EXPECT_EQ(d.toRemove[0].key, "c");
}

TEST(NodeLifecycle, ZoneKeyFromTopologyLabels) {
  api::core::v1::Node n;
  EXPECT_EQ(getZoneKey(n), "");
  n.metadata.labels["topology.kubernetes.io/zone"] = "zone-a";
  EXPECT_EQ(getZoneKey(n), std::string(":\0:zone-a", 9));
  n.metadata.labels["failure-domain.beta.kubernetes.io/region"] = "r1";
  EXPECT_EQ(getZoneKey(n), std::string("r1:\0:zone-a", 11));
}

TEST(NodeLifecycle, ComputeZoneState) {
  auto cond = [](const char* s) {
    NodeCondition c;
    c.type = "Ready";
    c.status = s;
    return std::optional<NodeCondition>(c);
  };
  EXPECT_EQ(computeZoneState({cond("True"), cond("True")}, 0.55).second, ZoneState::kNormal);
  EXPECT_EQ(computeZoneState({cond("Unknown"), std::nullopt}, 0.55).second, ZoneState::kFullDisruption);
  // Two unhealthy of three is not partial: at least three must be unhealthy.
  EXPECT_EQ(computeZoneState({cond("False"), cond("Unknown"), cond("True")}, 0.55).second, ZoneState::kNormal);
  auto [n, s] = computeZoneState({cond("False"), cond("Unknown"), cond("False"), cond("True")}, 0.55);
  EXPECT_EQ(n, 3);
  EXPECT_EQ(s, ZoneState::kPartialDisruption);
  EXPECT_EQ(computeZoneState({cond("False"), cond("Unknown"), cond("False"), cond("True"), cond("True"), cond("True")},
                             0.55)
                .second,
            ZoneState::kNormal);  // 3/6 < 0.55
}

TEST(RateLimitedTimedQueue, UniqueValuesRateLimitedAndRetried) {
  FakeClock clock;
  RateLimitedTimedQueue q(1.0, clock);  // 1 per second, burst 1
  EXPECT_TRUE(q.add("a", "1"));
  EXPECT_FALSE(q.add("a", "1"));  // already known
  EXPECT_TRUE(q.add("b", "2"));
  std::vector<std::string> done;
  auto take = [&](const TimedValue& v) {
    done.push_back(v.value);
    return std::make_pair(true, Clock::Duration{});
  };
  q.tryProcess(take);
  EXPECT_EQ(done, std::vector<std::string>{"a"});  // one token
  q.tryProcess(take);
  EXPECT_EQ(done.size(), 1u);
  clock.advance(1s);
  q.tryProcess(take);
  EXPECT_EQ(done, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(q.add("a", "1"));  // processed values stay known until removed
  EXPECT_TRUE(q.remove("a"));
  EXPECT_TRUE(q.add("a", "1"));

  // A failed value is retried after its wait; qps 0 stops everything.
  clock.advance(1s);
  int calls = 0;
  q.tryProcess([&](const TimedValue&) {
    ++calls;
    return std::make_pair(false, Clock::Duration(5s));
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(q.queued(), 1u);
  q.swapLimiter(0);
  clock.advance(10s);
  q.tryProcess(take);
  EXPECT_EQ(done.size(), 2u);
  q.swapLimiter(1.0);
  clock.advance(1s);
  q.tryProcess(take);
  EXPECT_EQ(done.back(), "a");
}

TEST(TimedWorkerQueue, FiresOnceAtItsTimeAndCancels) {
  std::mutex mu;
  std::vector<std::string> fired;
  TimedWorkerQueue q([&](const std::string& key, Clock::TimePoint) {
    std::lock_guard l(mu);
    fired.push_back(key);
    return Status::Ok();
  });
  auto now = RealClock::get().now();
  q.addWork("ns/now", now, now);
  q.addWork("ns/later", now, now + 300ms);
  q.addWork("ns/cancelled", now, now + 200ms);
  EXPECT_TRUE(q.getWorker("ns/later").has_value());
  EXPECT_TRUE(q.cancelWork("ns/cancelled"));
  EXPECT_FALSE(q.cancelWork("ns/cancelled"));
  std::this_thread::sleep_for(100ms);
  {
    std::lock_guard l(mu);
    EXPECT_EQ(fired, std::vector<std::string>{"ns/now"});
  }
  std::this_thread::sleep_for(400ms);
  {
    std::lock_guard l(mu);
    EXPECT_EQ(fired, (std::vector<std::string>{"ns/now", "ns/later"}));
  }
  // Work that returned is forgotten (upstream timed_workers.go): adding it again runs it again.
  EXPECT_FALSE(q.cancelWork("ns/now"));  // nothing left to cancel
  q.addWork("ns/now", now, now);
  std::this_thread::sleep_for(100ms);
  std::lock_guard l(mu);
  EXPECT_EQ(fired.size(), 3u);
}

}  // namespace
}  // namespace kcm::controllers
