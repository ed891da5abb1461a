// Shared workload-controller helpers: pod predicates, scale-down ranking, slow start, the stale-cache guard.
#include "controllers/util/controller_utils.h"

#include <gtest/gtest.h>

#include <atomic>

#include <nlohmann/json.hpp>

#include "runtime/consistency.h"

namespace kcm::controllers {
namespace {

using api::core::v1::Pod;

PodPtr pod(const std::string& name, const std::string& node, const std::string& phase, bool ready,
           int64_t created, int64_t readySince = 0, const std::string& cost = "") {
  auto p = std::make_shared<Pod>();
  p->metadata.name = name;
  p->metadata.uid = "uid-" + name;
  p->metadata.creationTimestamp = api::Time::fromUnix(created);
  if (!cost.empty()) p->metadata.annotations[kPodDeletionCost] = cost;
  p->spec.nodeName = node;
  p->status.phase = phase;
  api::core::v1::PodCondition c;
  c.type = "Ready";
  c.status = ready ? "True" : "False";
  c.lastTransitionTime = api::Time::fromUnix(readySince ? readySince : created);
  p->status.conditions.push_back(c);
  return p;
}

std::vector<std::string> order(std::vector<RankedPod> pods, int64_t now) {
  sortPodsForDeletion(pods, toWallTime(api::Time::fromUnix(now)));
  std::vector<std::string> out;
  for (const auto& r : pods) out.push_back(r.pod->metadata.name);
  return out;
}

TEST(ControllerUtils, ScaleDownRanking) {
  const int64_t now = 1'000'000;
  // Unassigned, then Pending, then not ready, then ready.
  EXPECT_EQ(order({{pod("ready", "n", "Running", true, now - 100)}, {pod("unassigned", "", "Pending", false, now - 100)},
                   {pod("notready", "n", "Running", false, now - 100)}, {pod("pending", "n", "Pending", false, now - 100)}},
                  now),
            (std::vector<std::string>{"unassigned", "pending", "notready", "ready"}));
  // Lower deletion cost first, even before more related pods on the node.
  EXPECT_EQ(order({{pod("expensive", "n", "Running", true, now - 100, 0, "10"), 5},
                   {pod("cheap", "n", "Running", true, now - 100, 0, "-1"), 0}},
                  now),
            (std::vector<std::string>{"cheap", "expensive"}));
  // More pods of the owner family on the same node first.
  EXPECT_EQ(order({{pod("alone", "a", "Running", true, now - 100), 1}, {pod("crowded", "b", "Running", true, now - 100), 3}},
                  now),
            (std::vector<std::string>{"crowded", "alone"}));
  // Ready more recently first, on a logarithmic scale: 10 s vs 1000 s apart differ, 1000 s vs 1001 s do not
  // (then the UID decides).
  EXPECT_EQ(order({{pod("old", "n", "Running", true, now - 5000, now - 1000)}, {pod("new", "n", "Running", true, now - 5000, now - 10)}},
                  now),
            (std::vector<std::string>{"new", "old"}));
  EXPECT_EQ(order({{pod("b", "n", "Running", true, now - 5000, now - 1001)}, {pod("a", "n", "Running", true, now - 5000, now - 1000)}},
                  now),
            (std::vector<std::string>{"a", "b"}));
}

// upstream maxContainerRestarts: regular containers decide, then restartable (sidecar) init containers only;
// an ordinary init container's restarts never count.
TEST(ControllerUtils, ScaleDownRestartTieBreakIgnoresOrdinaryInitContainers) {
  const int64_t now = 1'000'000;
  auto withRestarts = [&](const std::string& name, int32_t regular, int32_t init, int32_t sidecar) {
    auto p = std::make_shared<Pod>(*pod(name, "n", "Running", true, now - 100));
    api::core::v1::Container ordinary, side;
    ordinary.name = "init";
    side.name = "sidecar";
    side.restartPolicy = "Always";
    p->spec.initContainers = {ordinary, side};
    api::core::v1::ContainerStatus c, i, s;
    c.name = "c";
    c.restartCount = regular;
    i.name = "init";
    i.restartCount = init;
    s.name = "sidecar";
    s.restartCount = sidecar;
    p->status.containerStatuses = {c};
    p->status.initContainerStatuses = {i, s};
    return PodPtr(p);
  };
  // Tied on everything that counts, the pods keep their order; 50 restarts of "init" must not move "b" first.
  EXPECT_EQ(order({{withRestarts("a", 1, 0, 0)}, {withRestarts("b", 1, 50, 0)}}, now),
            (std::vector<std::string>{"a", "b"}));
  // A sidecar's restarts do count, after the regular containers'.
  EXPECT_EQ(order({{withRestarts("a", 1, 0, 0)}, {withRestarts("b", 1, 0, 2)}}, now),
            (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(order({{withRestarts("a", 2, 0, 0)}, {withRestarts("b", 1, 0, 9)}}, now),
            (std::vector<std::string>{"a", "b"}));
}

TEST(ControllerUtils, PodPredicates) {
  auto p = pod("p", "n", "Running", true, 100, 100);
  EXPECT_TRUE(isPodActive(*p));
  auto at = [](double s) {
    return WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::duration<double>(s)));
  };
  EXPECT_TRUE(isPodAvailable(*p, 0, at(100)));
  EXPECT_FALSE(isPodAvailable(*p, 10, at(109)));
  EXPECT_FALSE(isPodAvailable(*p, 10, at(109.999)));
  EXPECT_TRUE(isPodAvailable(*p, 10, at(110)));  // at minReadySeconds already, as upstream
  EXPECT_TRUE(isPodAvailable(*p, 10, at(111)));
  // The next check, from the time the status was computed and again from the clock's time.
  FakeClock clock(at(104));
  EXPECT_EQ(findMinNextPodAvailabilityCheck({p}, 10, at(104), clock), std::chrono::seconds(6));
  clock.advance(std::chrono::milliseconds(2500));
  EXPECT_EQ(findMinNextPodAvailabilityCheck({p}, 10, at(104), clock), std::chrono::milliseconds(3500));
  clock.advance(std::chrono::seconds(5));  // past it since the evaluation: at once
  EXPECT_EQ(findMinNextPodAvailabilityCheck({p}, 10, at(104), clock), Clock::Duration::zero());
  EXPECT_EQ(findMinNextPodAvailabilityCheck({p}, 10, at(110), clock), std::nullopt);  // available then already
  EXPECT_EQ(findMinNextPodAvailabilityCheck({p}, 0, at(104), clock), std::nullopt);
  Pod t = *p;
  t.metadata.deletionTimestamp = api::Time::fromUnix(200);
  EXPECT_FALSE(isPodActive(t));
  EXPECT_TRUE(isPodTerminating(t));
  t.status.phase = "Succeeded";
  EXPECT_FALSE(isPodTerminating(t));
  EXPECT_EQ(podControllerIndexKeys(*p), std::vector<std::string>{""});  // orphan in namespace ""
}

// upstream PatchPodStatus: a two-way strategic merge patch with the UID; conditions by type with their order.
TEST(ControllerUtils, PodStatusPatchCarriesTheUIDAndOnlyWhatChanged) {
  api::core::v1::PodStatus old;
  old.phase = "Running";
  old.observedGeneration = 2;
  api::core::v1::PodCondition ready;
  ready.type = "Ready";
  ready.status = "True";
  ready.reason = "Fine";
  old.conditions.push_back(ready);
  EXPECT_EQ(podStatusPatch("u1", old, old), std::nullopt);

  auto next = old;
  next.phase = "Failed";
  next.observedGeneration = 3;
  next.conditions[0].reason = "";
  api::core::v1::PodCondition dt;
  dt.type = "DisruptionTarget";
  dt.status = "True";
  dt.reason = "DeletionByPodGC";
  dt.observedGeneration = 3;
  next.conditions.push_back(dt);
  auto patch = podStatusPatch("u1", old, next);
  ASSERT_TRUE(patch);
  EXPECT_EQ(nlohmann::json::parse(*patch), nlohmann::json::parse(R"({
    "metadata": {"uid": "u1"},
    "status": {
      "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "DisruptionTarget"}],
      "conditions": [{"type": "Ready", "reason": null},
                     {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                      "observedGeneration": 3, "lastProbeTime": null, "lastTransitionTime": null}],
      "observedGeneration": 3,
      "phase": "Failed"}})"));
}

TEST(ControllerUtils, SlowStartBatchDoublesAndStopsAtTheFirstFailingBatch) {
  std::atomic<int> calls{0};
  auto [ok, err] = slowStartBatch(10, 1, [&] {
    ++calls;
    return Status::Ok();
  });
  EXPECT_EQ(ok, 10);
  EXPECT_TRUE(err.ok());
  EXPECT_EQ(calls.load(), 10);  // batches 1, 2, 4, 3
  calls = 0;
  auto [ok2, err2] = slowStartBatch(10, 1, [&] {
    int n = ++calls;
    return n >= 3 ? Status(StatusCode::kForbidden, "quota") : Status::Ok();
  });
  EXPECT_EQ(calls.load(), 3);  // batch 1 ok, batch 2 has a failure: stop
  EXPECT_EQ(ok2, 2);
  EXPECT_EQ(err2.code(), StatusCode::kForbidden);
}

TEST(Consistency, WaitsUntilTheCacheHasSeenTheWrite) {
  std::string seen = "100";
  runtime::ConsistencyStore s({{"pods", [&] { return seen; }}});
  EXPECT_TRUE(s.ensureReady("ns/a").ok());
  s.wroteAt("ns/a", "uid1", "pods", "105");
  s.wroteAt("ns/a", "uid1", "pods", "103");  // lower: the highest write stands
  EXPECT_FALSE(s.ensureReady("ns/a").ok());
  seen = "104";
  EXPECT_FALSE(s.ensureReady("ns/a").ok());
  seen = "105";
  EXPECT_TRUE(s.ensureReady("ns/a").ok());
  s.wroteAt("ns/a", "uid1", "pods", "999");
  s.clear("ns/a", "other-uid");  // another incarnation's record is not ours to clear
  EXPECT_FALSE(s.ensureReady("ns/a").ok());
  s.clear("ns/a");
  EXPECT_TRUE(s.ensureReady("ns/a").ok());
  EXPECT_LT(runtime::compareResourceVersion("99", "100"), 0);
  runtime::ConsistencyStore off;
  off.wroteAt("ns/a", "u", "pods", "5");
  EXPECT_TRUE(off.ensureReady("ns/a").ok());
}

}  // namespace
}  // namespace kcm::controllers
