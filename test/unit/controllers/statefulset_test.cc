// statefulset-controller (upstream pkg/controller/statefulset/stateful_set_control_test.go and stateful_set_test.go
// cases) over the fake apiserver, with informer stores the test refreshes from it and the clock injected.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "client/typed_client.h"
#include "controllers/statefulset/stateful_set.h"
#include "fake/fake_apiserver.h"
#include "fake/store_sync.h"
#include "informers/factory.h"

namespace kcm::controllers::statefulset {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

class StatefulSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"apps", "v1", "statefulsets", "StatefulSet", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    server->addResource({"apps", "v1", "controllerrevisions", "ControllerRevision", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {}});
    server->addResource({"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
  }
  StatefulSet newSet(int replicas, bool withClaims = true) {
    StatefulSet s;
    s.metadata.namespace_ = "ns";
    s.metadata.name = "web";
    s.metadata.generation = 1;
    s.spec.replicas = replicas;
    s.spec.serviceName = "nginx";
    s.spec.selector.emplace().matchLabels["app"] = "web";
    s.spec.template_.metadata.labels["app"] = "web";
    auto& c = s.spec.template_.spec.containers.emplace_back();
    c.name = "c";
    c.image = "pause:1";
    s.spec.updateStrategy.type = "RollingUpdate";
    s.spec.updateStrategy.rollingUpdate.emplace().partition = 0;
    s.spec.revisionHistoryLimit = 10;
    s.spec.podManagementPolicy = "OrderedReady";
    if (withClaims) {
      auto& t = s.spec.volumeClaimTemplates.emplace_back();
      t.metadata.name = "data";
      t.spec.accessModes = {"ReadWriteOnce"};
    }
    return s;
  }
  void create(const StatefulSet& s) {
    server->add(s);
    refresh();
  }
  void updateSpec(const std::function<void(StatefulSet&)>& mutate) {
    auto s = set();
    mutate(s);
    s.metadata.generation += 1;
    ASSERT_TRUE(client::update(*server->client(), s).ok());
    refresh();
  }
  template <class T>
  void reload(const std::string& ns) {
    testing::reloadStore<T>(*server, factory, ns);
  }
  void refresh() {
    // The apiserver gives a new pod phase Pending.
    for (auto p : server->list<Pod>("ns"))
      if (p.status.phase.empty()) {
        p.status.phase = "Pending";
        ASSERT_TRUE(client::updateStatus(*server->client(), p).ok());
      }
    reload<Pod>("ns");
    reload<StatefulSet>("ns");
    reload<ControllerRevision>("ns");
    reload<PersistentVolumeClaim>("ns");
  }
  runtime::SyncResult sync() {
    auto r = controller.sync("ns/web");
    refresh();
    return r;
  }
  StatefulSet set() { return server->get<StatefulSet>("ns", "web").value(); }
  std::vector<std::string> podNames() {
    std::vector<std::string> out;
    for (const auto& p : server->list<Pod>("ns"))
      if (!p.metadata.deletionTimestamp) out.push_back(p.metadata.name);
    std::sort(out.begin(), out.end());
    return out;
  }
  void makeReady(const std::string& name, const std::string& phase = "Running") {
    auto p = server->get<Pod>("ns", name).value();
    p.status.phase = phase;
    p.status.conditions.clear();
    auto& c = p.status.conditions.emplace_back();
    c.type = "Ready";
    c.status = phase == "Running" ? "True" : "False";
    c.lastTransitionTime = api::timeNow(clock);
    ASSERT_TRUE(client::updateStatus(*server->client(), p).ok());
    refresh();
  }
  // Syncs until every one of n pods is running and ready, readying each as it appears (OrderedReady).
  void bringUp(int n) {
    for (int i = 0; i < 3 * n + 3; ++i) {
      ASSERT_TRUE(sync().status.ok());
      for (const auto& p : server->list<Pod>("ns"))
        if (p.status.phase == "Pending" && !p.metadata.deletionTimestamp) makeReady(p.metadata.name);
    }
  }
  std::vector<std::string> events() {
    broadcaster.flush();
    return server->createdEvents();
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  StatefulSetController controller{server->client(),
                                   broadcaster.newRecorder("statefulset-controller"),
                                   factory.forType<StatefulSet>(),
                                   factory.forType<Pod>(),
                                   factory.forType<PersistentVolumeClaim>(),
                                   factory.forType<ControllerRevision>(),
                                   StatefulSetControllerOptions{.staleConsistency = false},
                                   clock};
};

// TestStatefulSetControlScaleUp (OrderedReady): one pod at a time, each with its identity and claim.
TEST_F(StatefulSetTest, OrderedReadyCreatesOnePodAtATimeWithIdentityAndClaims) {
  create(newSet(3));
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(podNames(), (std::vector<std::string>{"web-0"}));
  auto p = server->get<Pod>("ns", "web-0").value();
  EXPECT_EQ(p.spec.hostname, "web-0");
  EXPECT_EQ(p.spec.subdomain, "nginx");
  EXPECT_EQ(p.metadata.labels["statefulset.kubernetes.io/pod-name"], "web-0");
  EXPECT_EQ(p.metadata.labels["apps.kubernetes.io/pod-index"], "0");
  EXPECT_EQ(p.metadata.generateName, "web-");
  ASSERT_EQ(p.spec.volumes.size(), 1u);
  EXPECT_EQ(p.spec.volumes[0].name, "data");
  EXPECT_EQ(p.spec.volumes[0].persistentVolumeClaim->claimName, "data-web-0");
  auto claim = server->get<PersistentVolumeClaim>("ns", "data-web-0");
  ASSERT_TRUE(claim);
  EXPECT_EQ(claim->metadata.labels["app"], "web");
  EXPECT_TRUE(claim->metadata.ownerReferences.empty()) << "Retain/Retain: no owner";
  auto revs = server->list<ControllerRevision>("ns");
  ASSERT_EQ(revs.size(), 1u);
  EXPECT_EQ(revs[0].revision, 1);
  EXPECT_EQ(p.metadata.labels["controller-revision-hash"], revs[0].metadata.name);
  EXPECT_EQ(revs[0].metadata.name, "web-" + revs[0].metadata.labels["controller.kubernetes.io/hash"]);
  auto s = set().status;
  EXPECT_EQ(s.updateRevision, revs[0].metadata.name);
  EXPECT_EQ(s.currentRevision, revs[0].metadata.name);
  EXPECT_EQ(s.collisionCount, 0);
  EXPECT_EQ(s.observedGeneration, 1);
  // Not Running and Ready yet: nothing more.
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(podNames().size(), 1u);
  makeReady("web-0");
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(podNames(), (std::vector<std::string>{"web-0", "web-1"}));
  bringUp(3);
  EXPECT_EQ(podNames(), (std::vector<std::string>{"web-0", "web-1", "web-2"}));
  s = set().status;
  EXPECT_EQ(s.replicas, 3);
  EXPECT_EQ(s.readyReplicas, 3);
  EXPECT_EQ(s.availableReplicas, 3);
  EXPECT_EQ(s.updatedReplicas, 3);
  EXPECT_EQ(s.currentReplicas, 3);
  auto ev = events();
  EXPECT_TRUE(std::count(ev.begin(), ev.end(), "Normal SuccessfulCreate Create Pod web-0 in StatefulSet web successful"))
      << ::testing::PrintToString(ev);
  EXPECT_TRUE(std::count(ev.begin(), ev.end(),
                         "Normal SuccessfulCreate Create Claim data-web-0 Pod web-0 in StatefulSet web success"));
}

TEST_F(StatefulSetTest, ParallelCreatesAllAtOnceFromTheStartOrdinal) {
  auto s = newSet(3, false);
  s.spec.podManagementPolicy = "Parallel";
  s.spec.ordinals.emplace().start = 5;
  create(s);
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(podNames(), (std::vector<std::string>{"web-5", "web-6", "web-7"}));
}

// TestStatefulSetControlScaleDown: the highest ordinal first, one at a time, while the others are healthy.
TEST_F(StatefulSetTest, ScaleDownRemovesTheHighestOrdinalFirst) {
  create(newSet(3));
  bringUp(3);
  updateSpec([](StatefulSet& s) { s.spec.replicas = 1; });
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(podNames(), (std::vector<std::string>{"web-0", "web-1"}));
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(podNames(), (std::vector<std::string>{"web-0"}));
  // Claims stay (Retain).
  EXPECT_TRUE(server->get<PersistentVolumeClaim>("ns", "data-web-2"));
}

// A failed pod is deleted, then recreated with the same name.
TEST_F(StatefulSetTest, FailedPodsAreRecreated) {
  create(newSet(1));
  bringUp(1);
  const std::string uid = server->get<Pod>("ns", "web-0")->metadata.uid;
  makeReady("web-0", "Failed");
  ASSERT_TRUE(sync().status.ok());
  EXPECT_TRUE(podNames().empty());
  ASSERT_TRUE(sync().status.ok());
  ASSERT_EQ(podNames(), (std::vector<std::string>{"web-0"}));
  EXPECT_NE(server->get<Pod>("ns", "web-0")->metadata.uid, uid);
}

// TestStatefulSetControlRollingUpdate / WithPartition: from the highest ordinal down, to the partition.
TEST_F(StatefulSetTest, RollingUpdateStopsAtThePartition) {
  create(newSet(3));
  bringUp(3);
  const std::string first = set().status.updateRevision;
  updateSpec([](StatefulSet& s) {
    s.spec.template_.spec.containers[0].image = "pause:2";
    s.spec.updateStrategy.rollingUpdate->partition = 1;
  });
  ASSERT_TRUE(sync().status.ok());
  const std::string second = set().status.updateRevision;
  EXPECT_NE(second, first);
  EXPECT_EQ(set().status.currentRevision, first);
  EXPECT_EQ(podNames(), (std::vector<std::string>{"web-0", "web-1"})) << "web-2 replaced first";
  bringUp(3);
  auto revOf = [&](const std::string& n) { return server->get<Pod>("ns", n)->metadata.labels["controller-revision-hash"]; };
  EXPECT_EQ(revOf("web-2"), second);
  EXPECT_EQ(revOf("web-1"), second);
  EXPECT_EQ(revOf("web-0"), first) << "below the partition";
  EXPECT_EQ(server->get<Pod>("ns", "web-0")->spec.containers[0].image, "pause:1");
  EXPECT_EQ(set().status.updatedReplicas, 2);
  EXPECT_EQ(set().status.currentRevision, first) << "not complete below the partition";
  updateSpec([](StatefulSet& s) { s.spec.updateStrategy.rollingUpdate->partition = 0; });
  bringUp(3);
  EXPECT_EQ(revOf("web-0"), second);
  EXPECT_EQ(set().status.currentRevision, second) << "complete: current is the update revision";
  EXPECT_EQ(set().status.currentReplicas, 3);
}

TEST_F(StatefulSetTest, OnDeleteReplacesNothing) {
  auto s = newSet(2, false);
  s.spec.updateStrategy.type = "OnDelete";
  s.spec.updateStrategy.rollingUpdate.reset();
  create(s);
  bringUp(2);
  updateSpec([](StatefulSet& s) { s.spec.template_.spec.containers[0].image = "pause:2"; });
  bringUp(2);
  EXPECT_EQ(server->get<Pod>("ns", "web-1")->spec.containers[0].image, "pause:1");
  EXPECT_EQ(set().status.updatedReplicas, 0);
  EXPECT_EQ(server->list<ControllerRevision>("ns").size(), 2u);
}

// A template coming back reuses its revision, renumbered.
TEST_F(StatefulSetTest, RollbackReusesTheRevision) {
  create(newSet(1, false));
  bringUp(1);
  const std::string first = set().status.updateRevision;
  updateSpec([](StatefulSet& s) { s.spec.template_.spec.containers[0].image = "pause:2"; });
  bringUp(1);
  updateSpec([](StatefulSet& s) { s.spec.template_.spec.containers[0].image = "pause:1"; });
  bringUp(1);
  EXPECT_EQ(set().status.updateRevision, first);
  auto r = server->get<ControllerRevision>("ns", first).value();
  EXPECT_EQ(r.revision, 3);
  EXPECT_EQ(server->list<ControllerRevision>("ns").size(), 2u);
}

// PersistentVolumeClaimRetentionPolicy: WhenDeleted=Delete owns claims by the set; WhenScaled=Delete hands a
// scaled-down pod's claim to the pod.
TEST_F(StatefulSetTest, RetentionPolicySetsClaimOwners) {
  auto s = newSet(2);
  auto& policy = s.spec.persistentVolumeClaimRetentionPolicy.emplace();
  policy.whenDeleted = "Delete";
  policy.whenScaled = "Delete";
  create(s);
  bringUp(2);
  const std::string setUID = set().metadata.uid;
  auto c1 = server->get<PersistentVolumeClaim>("ns", "data-web-1").value();
  ASSERT_EQ(c1.metadata.ownerReferences.size(), 1u);
  EXPECT_EQ(c1.metadata.ownerReferences[0].uid, setUID);
  EXPECT_EQ(c1.metadata.ownerReferences[0].kind, "StatefulSet");
  const std::string podUID = server->get<Pod>("ns", "web-1")->metadata.uid;
  updateSpec([](StatefulSet& s) { s.spec.replicas = 1; });
  ASSERT_TRUE(sync().status.ok());
  c1 = server->get<PersistentVolumeClaim>("ns", "data-web-1").value();
  ASSERT_EQ(c1.metadata.ownerReferences.size(), 1u);
  EXPECT_EQ(c1.metadata.ownerReferences[0].uid, podUID);
  EXPECT_EQ(c1.metadata.ownerReferences[0].kind, "Pod");
  EXPECT_EQ(podNames(), (std::vector<std::string>{"web-0"}));
}

TEST(StatefulSetUtils, IdentityAndOrdinals) {
  Pod p;
  p.metadata.name = "web-12";
  EXPECT_EQ(getParentNameAndOrdinal(p), (std::pair<std::string, int>{"web", 12}));
  p.metadata.name = "my-web-3";
  EXPECT_EQ(getParentNameAndOrdinal(p), (std::pair<std::string, int>{"my-web", 3}));
  p.metadata.name = "web-x";
  EXPECT_EQ(getOrdinal(p), -1);
  p.metadata.name = "web";
  EXPECT_EQ(getOrdinal(p), -1);
  EXPECT_EQ(getStatefulSetMaxUnavailable(api::IntOrString::fromString("40%"), 4).value(), 1);
  EXPECT_EQ(getStatefulSetMaxUnavailable(api::IntOrString::fromString("50%"), 4).value(), 2);
  EXPECT_EQ(getStatefulSetMaxUnavailable(std::nullopt, 4).value(), 1);
  EXPECT_EQ(getStatefulSetMaxUnavailable(api::IntOrString::fromInt(0), 4).value(), 1);
}

}  // namespace
}  // namespace kcm::controllers::statefulset
