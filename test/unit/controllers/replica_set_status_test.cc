// replicaset-controller: what a sync writes to status and when it asks to come back, at the precision upstream
// works with. Covers issue 13 items 3 (observedGeneration after a status conflict, upstream
// pkg/controller/replicaset/replica_set_utils.go updateReplicaSetStatus), 5 (availability at full time
// precision and an immediate re-check, pkg/api/v1/pod/util.go IsPodAvailable and
// pkg/controller/controller_utils.go FindMinNextPodAvailabilityCheck) and 7 (the scale-down ranking's
// logarithmic ready-time buckets measured from an unrounded `now`, controller_utils.go logarithmicRankDiff).
// Only the controller's public sync is used, over informer stores the test fills itself.
#include <gtest/gtest.h>

#include <atomic>

#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "client/events.h"
#include "controllers/replicaset/replica_set.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers {
namespace {

using api::apps::v1::ReplicaSet;
using api::core::v1::Pod;
using testing::Action;
using testing::FakeApiServer;
using namespace std::chrono_literals;

ReplicaSet makeReplicaSet(int replicas, int32_t minReadySeconds = 0) {
  ReplicaSet rs;
  rs.metadata.namespace_ = "default";
  rs.metadata.name = "rs";
  rs.metadata.uid = "rs-uid";
  rs.metadata.generation = 1;
  rs.spec.replicas = replicas;
  rs.spec.minReadySeconds = minReadySeconds;
  api::meta::v1::LabelSelector sel;
  sel.matchLabels["app"] = "a";
  rs.spec.selector = sel;
  rs.spec.template_.metadata.labels["app"] = "a";
  api::core::v1::Container c;
  c.name = "c";
  c.image = "img";
  rs.spec.template_.spec.containers.push_back(c);
  return rs;
}

// A Running pod of `rs` on node "n", Ready since `readySince` (whole seconds, as metav1.Time on the wire).
Pod readyPod(const std::string& name, const std::string& uid, const ReplicaSet& rs, api::Time readySince) {
  Pod p;
  p.metadata.namespace_ = "default";
  p.metadata.name = name;
  p.metadata.uid = uid;
  p.metadata.labels["app"] = "a";
  api::meta::v1::OwnerReference r;
  r.apiVersion = "apps/v1";
  r.kind = "ReplicaSet";
  r.name = rs.metadata.name;
  r.uid = rs.metadata.uid;
  r.controller = true;
  p.metadata.ownerReferences.push_back(r);
  p.spec.nodeName = "n";
  p.status.phase = "Running";
  api::core::v1::PodCondition c;
  c.type = "Ready";
  c.status = "True";
  c.lastTransitionTime = readySince;
  p.status.conditions.push_back(c);
  return p;
}

class Harness {
 public:
  Harness() {
    server->addStandardResources();
    ReplicaSetControllerOptions o;
    o.staleConsistency = false;  // the informers never run
    ctrl = std::make_unique<ReplicaSetController>(server->client(), broadcaster.newRecorder("replicaset-controller"),
                                                  factory.forType<ReplicaSet>(), factory.forType<Pod>(), o, clock);
  }
  ReplicaSet addRS(const ReplicaSet& rs) {
    ReplicaSet stored = server->add(rs);
    factory.forType<ReplicaSet>().store().upsert("default/" + rs.metadata.name,
                                                 std::make_shared<const ReplicaSet>(stored));
    return stored;
  }
  void addPod(const Pod& p) {
    auto stored = std::make_shared<const Pod>(server->add(p));
    factory.forType<Pod>().store().upsert("default/" + p.metadata.name, stored);
  }
  runtime::SyncResult sync() { return ctrl->syncReplicaSet("default/rs"); }
  // Whole seconds of the fake wall clock (the time the sync would stamp).
  api::Time secondsAgo(int64_t s) { return api::Time::fromUnix(api::timeNow(clock).unixSeconds - s); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  std::shared_ptr<FakeApiServer> eventSink = std::make_shared<FakeApiServer>();
  client::EventBroadcaster broadcaster{eventSink->client(), "test"};
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  std::unique_ptr<ReplicaSetController> ctrl;
};

// ---- item 3: the retry after a failed status write ----

// The spec moves on (generation 2) after the cache handed the sync generation 1: the first status write
// conflicts, the retry goes to the fresh object, and still reports generation 1 as observed, since this sync
// never reconciled generation 2 (upstream saves rs.Generation before its retry loop).
TEST(ReplicaSetStatusRetry, KeepsTheGenerationTheSyncActedOn) {
  Harness h;
  const ReplicaSet cached = h.addRS(makeReplicaSet(1));
  ASSERT_EQ(cached.metadata.generation, 1);
  h.addPod(readyPod("p0", "uid-p0", cached, h.secondsAgo(100)));
  ReplicaSet scaled = cached;
  scaled.spec.replicas = 3;
  auto updated = client::update(*h.server->client(), scaled);
  ASSERT_TRUE(updated.ok()) << updated.status().toString();
  ASSERT_EQ(updated->metadata.generation, 2);
  h.server->clearActions();

  auto r = h.sync();
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  std::vector<std::string> writes;
  for (const auto& a : h.server->writes()) writes.push_back(a.toString());
  EXPECT_EQ(writes, (std::vector<std::string>{"update replicasets/status default/rs",
                                              "update replicasets/status default/rs"}));
  auto stored = h.server->get<ReplicaSet>("default", "rs");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->metadata.generation, 2);
  EXPECT_EQ(stored->status.replicas, 1);
  EXPECT_EQ(stored->status.observedGeneration, 1);
}

// ---- item 5: availability and the next availability check ----

// minReadySeconds 5, the pod Ready since 4 s before a wall time half a second past a second boundary: it is
// available 0.5 s later, not at the next whole second after that.
TEST(ReplicaSetAvailability, NextCheckIsMeasuredFromTheUnroundedNow) {
  Harness h;
  const api::Time readySince = h.secondsAgo(4);
  h.clock.advance(500ms);
  const ReplicaSet rs = h.addRS(makeReplicaSet(1, 5));
  h.addPod(readyPod("p0", "uid-p0", rs, readySince));
  auto r = h.sync();
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  auto stored = h.server->get<ReplicaSet>("default", "rs");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status.readyReplicas, 1);
  EXPECT_EQ(stored->status.availableReplicas, 0);
  ASSERT_TRUE(r.requeueAfter);
  EXPECT_EQ(*r.requeueAfter, Clock::Duration(500ms));

  h.clock.advance(500ms);  // exactly minReadySeconds after turning Ready: available (<=, as upstream)
  h.factory.forType<ReplicaSet>().store().upsert("default/rs", std::make_shared<const ReplicaSet>(*stored));
  r = h.sync();
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  stored = h.server->get<ReplicaSet>("default", "rs");
  EXPECT_EQ(stored->status.availableReplicas, 1);
  EXPECT_FALSE(r.requeueAfter);
}

// The pod becomes available while the status write is in flight: the status computed before says 0 available,
// and by the time the next check is planned the pod's moment has passed. Upstream re-checks at once (a zero
// delay), not minReadySeconds later.
TEST(ReplicaSetAvailability, RecheckIsImmediateWhenThePodBecameAvailableDuringTheSync) {
  Harness h;
  const api::Time readySince = h.secondsAgo(4);
  h.clock.advance(500ms);
  const ReplicaSet rs = h.addRS(makeReplicaSet(1, 5));
  h.addPod(readyPod("p0", "uid-p0", rs, readySince));
  h.server->prependReactor("update", "replicasets/status", [&](const Action&) -> std::optional<client::Transport::Reply> {
    h.clock.advance(1s);  // the write takes a second
    return std::nullopt;
  });
  auto r = h.sync();
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  auto stored = h.server->get<ReplicaSet>("default", "rs");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status.availableReplicas, 0);
  ASSERT_TRUE(r.requeueAfter);
  EXPECT_EQ(*r.requeueAfter, Clock::Duration::zero());
}

// ---- item 7: which pod goes first on scale-down ----

// Two pods Ready 2 s and 3 s before whole second T, the scale-down at T + 0.5 s: 2.5 s and 3.5 s both fall in
// the 2^31 ns bucket, so upstream ranks them equal on ready time and the lower UID goes first. Measured from a
// `now` rounded down to T they fall in different buckets and the more recently Ready one would go.
TEST(ReplicaSetScaleDown, ReadyTimeBucketsUseTheUnroundedNow) {
  Harness h;
  const api::Time twoAgo = h.secondsAgo(2), threeAgo = h.secondsAgo(3);
  h.clock.advance(500ms);
  const ReplicaSet rs = h.addRS(makeReplicaSet(1));
  h.addPod(readyPod("recent", "uid-b", rs, twoAgo));
  h.addPod(readyPod("earlier", "uid-a", rs, threeAgo));
  auto r = h.sync();
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  auto deletes = h.server->actionsFor("delete", "pods");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].name, "earlier");
}

}  // namespace
}  // namespace kcm::controllers
