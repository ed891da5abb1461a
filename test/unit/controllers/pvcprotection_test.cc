// persistentvolumeclaim-protection-controller (upstream pkg/controller/volume/pvcprotection/
// pvc_protection_controller_test.go's cases, through processPVC) over the fake apiserver.
#include <gtest/gtest.h>

#include "api/gen/core_v1_json.h"
#include "controllers/volume/common/volume_common.h"
#include "controllers/volume/pvcprotection/pvc_protection_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::volume::pvcprotection {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

class PVCProtectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
  }
  std::unique_ptr<Controller> controller(bool unusedSince) {
    return std::make_unique<Controller>(server->client(), factory.forType<PersistentVolumeClaim>(),
                                        factory.forType<Pod>(), unusedSince, clock);
  }
  // A PVC in the server and the cache; `deleting` gives it a deletionTimestamp (only the cache sees it).
  PersistentVolumeClaim pvc(const std::string& name, bool finalizer, bool deleting, const std::string& phase = "Pending",
                            const std::string& ownerPodUID = "") {
    PersistentVolumeClaim c;
    c.metadata.namespace_ = "ns";
    c.metadata.name = name;
    c.status.phase = phase;
    if (finalizer) c.metadata.finalizers = {"kubernetes.io/pvc-protection"};
    if (!ownerPodUID.empty()) {
      auto& r = c.metadata.ownerReferences.emplace_back();
      r.apiVersion = "v1", r.kind = "Pod", r.name = "owner", r.uid = ownerPodUID, r.controller = true;
    }
    PersistentVolumeClaim stored = server->add(c);
    if (deleting) stored.metadata.deletionTimestamp = api::Time::fromUnix(1000);
    factory.forType<PersistentVolumeClaim>().store().upsert("ns/" + name, std::make_shared<const PersistentVolumeClaim>(stored));
    return stored;
  }
  // A pod using `claim` (a PVC volume) or, with `ephemeralVolume`, an ephemeral volume of that name; in the server,
  // and in the cache unless `inCache` is false.
  Pod pod(const std::string& name, const std::string& claim, const std::string& node = "node-0",
          const std::string& ephemeralVolume = "", bool inCache = true,
          const std::function<void(Pod&)>& tweak = nullptr) {
    Pod p;
    p.metadata.namespace_ = "ns";
    p.metadata.name = name;
    p.metadata.uid = "uid-" + name;
    p.spec.nodeName = node;
    auto& v = p.spec.volumes.emplace_back();
    if (ephemeralVolume.empty()) {
      v.name = "data";
      v.persistentVolumeClaim.emplace().claimName = claim;
    } else {
      v.name = ephemeralVolume;
      v.ephemeral.emplace();
    }
    p.status.phase = "Running";
    if (tweak) tweak(p);
    Pod stored = server->add(p);
    stored.metadata.uid = p.metadata.uid;
    if (inCache) cachePod(stored);
    return stored;
  }
  void cachePod(const Pod& p) { factory.forType<Pod>().store().upsert("ns/" + p.metadata.name, std::make_shared<const Pod>(p)); }
  std::optional<PersistentVolumeClaim> inServer(const std::string& name) { return server->get<PersistentVolumeClaim>("ns", name); }
  bool protectedInServer(const std::string& name) {
    auto c = inServer(name);
    return c && !c->metadata.finalizers.empty() && c->metadata.finalizers[0] == "kubernetes.io/pvc-protection";
  }
  size_t count(const char* verb, const char* resource) { return server->actionsFor(verb, resource).size(); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
};

TEST_F(PVCProtectionTest, APVCWithoutTheFinalizerGetsIt) {
  auto c = controller(true);
  pvc("claim", false, false);
  EXPECT_TRUE(c->processPVC("ns/claim").status.ok());
  EXPECT_TRUE(protectedInServer("claim"));
  EXPECT_EQ(count("update", "persistentvolumeclaims"), 1u);
  EXPECT_EQ(count("update", "persistentvolumeclaims/status"), 0u) << "a Pending PVC gets no Unused condition";
}

TEST_F(PVCProtectionTest, ADeletedPVCNoPodUsesLosesTheFinalizerAfterALiveList) {
  auto c = controller(true);
  pvc("claim", true, true);
  pod("other", "another-claim");
  EXPECT_TRUE(c->processPVC("ns/claim").status.ok());
  EXPECT_FALSE(protectedInServer("claim"));
  EXPECT_EQ(count("list", "pods"), 1u);
}

TEST_F(PVCProtectionTest, ADeletedPVCAScheduledPodUsesIsKeptWithoutALiveList) {
  auto c = controller(true);
  pvc("claim", true, true);
  pod("user", "claim");
  EXPECT_TRUE(c->processPVC("ns/claim").status.ok());
  EXPECT_TRUE(protectedInServer("claim"));
  EXPECT_EQ(count("update", "persistentvolumeclaims"), 0u);
  EXPECT_EQ(count("list", "pods"), 0u);
}

TEST_F(PVCProtectionTest, AnUnscheduledPodDoesNotHoldADeletedPVC) {
  auto c = controller(true);
  pvc("claim", true, true);
  pod("pending", "claim", "");
  EXPECT_TRUE(c->processPVC("ns/claim").status.ok());
  EXPECT_FALSE(protectedInServer("claim"));
}

TEST_F(PVCProtectionTest, APodNotYetInTheCacheIsFoundByTheLiveList) {
  auto c = controller(true);
  pvc("claim", true, true);
  pod("late", "claim", "node-0", "", false);
  EXPECT_TRUE(c->processPVC("ns/claim").status.ok());
  EXPECT_TRUE(protectedInServer("claim"));
  EXPECT_EQ(count("list", "pods"), 1u);
}

TEST_F(PVCProtectionTest, AnEphemeralVolumeHoldsOnlyThePVCCreatedForIt) {
  auto c = controller(true);
  Pod p = pod("app", "", "node-0", "scratch");
  pvc("app-scratch", true, true, "Pending", p.metadata.uid);  // created for the pod
  pvc("app-scratch-x", true, true);
  EXPECT_TRUE(c->processPVC("ns/app-scratch").status.ok());
  EXPECT_TRUE(protectedInServer("app-scratch"));
  // The same name but not controlled by the pod: not its volume.
  pod("b", "", "node-0", "vol");
  pvc("b-vol", true, true, "Pending", "someone-else");
  EXPECT_TRUE(c->processPVC("ns/b-vol").status.ok());
  EXPECT_FALSE(protectedInServer("b-vol"));
}

TEST_F(PVCProtectionTest, AShutDownPodReleasesItsEphemeralPVCButNotAPlainOne) {
  auto c = controller(true);
  auto shutDown = [](Pod& p) {
    p.metadata.deletionTimestamp = api::Time::fromUnix(1000);
    p.metadata.deletionGracePeriodSeconds = 0;
  };
  Pod e = pod("app", "", "node-0", "scratch", true, shutDown);
  pvc("app-scratch", true, true, "Pending", e.metadata.uid);
  EXPECT_TRUE(c->processPVC("ns/app-scratch").status.ok());
  EXPECT_FALSE(protectedInServer("app-scratch"));
  pod("plain", "claim", "node-0", "", true, shutDown);
  pvc("claim", true, true);
  EXPECT_TRUE(c->processPVC("ns/claim").status.ok());
  EXPECT_TRUE(protectedInServer("claim"));
}

TEST_F(PVCProtectionTest, ABoundPVCGetsTheUnusedCondition) {
  auto c = controller(true);
  pvc("idle", true, false, "Bound");
  EXPECT_TRUE(c->processPVC("ns/idle").status.ok());
  auto idle = inServer("idle");
  ASSERT_EQ(idle->status.conditions.size(), 1u);
  EXPECT_EQ(idle->status.conditions[0].type, "Unused");
  EXPECT_EQ(idle->status.conditions[0].status, "True");
  EXPECT_EQ(idle->status.conditions[0].reason, "NoPodsUsingPVC");
  EXPECT_EQ(idle->status.conditions[0].message, "No pods are currently referencing this PVC");
  EXPECT_FALSE(idle->status.conditions[0].lastTransitionTime.isZero());

  pvc("busy", true, false, "Bound");
  pod("user", "busy", "");  // unscheduled still counts here
  EXPECT_TRUE(c->processPVC("ns/busy").status.ok());
  auto busy = inServer("busy");
  ASSERT_EQ(busy->status.conditions.size(), 1u);
  EXPECT_EQ(busy->status.conditions[0].status, "False");
  EXPECT_EQ(busy->status.conditions[0].reason, "PodUsingPVC");
  EXPECT_EQ(busy->status.conditions[0].message, "A pod is currently referencing this PVC");
  EXPECT_EQ(count("update", "persistentvolumeclaims/status"), 2u);
}

TEST_F(PVCProtectionTest, TheUnusedConditionChangesOnlyWhenUsageDoes) {
  auto c = controller(true);
  PersistentVolumeClaim p = pvc("claim", true, false, "Bound");
  auto& cond = p.status.conditions.emplace_back();
  cond.type = "Unused", cond.status = "True", cond.reason = "NoPodsUsingPVC";
  factory.forType<PersistentVolumeClaim>().store().upsert("ns/claim", std::make_shared<const PersistentVolumeClaim>(p));
  EXPECT_TRUE(c->processPVC("ns/claim").status.ok());
  EXPECT_EQ(count("update", "persistentvolumeclaims/status"), 0u);
  pod("done", "claim", "node-0", "", true, [](Pod& p) { p.status.phase = "Succeeded"; });  // terminated: not a user
  EXPECT_TRUE(c->processPVC("ns/claim").status.ok());
  EXPECT_EQ(count("update", "persistentvolumeclaims/status"), 0u);
  pod("running", "claim");
  EXPECT_TRUE(c->processPVC("ns/claim").status.ok());
  ASSERT_EQ(count("update", "persistentvolumeclaims/status"), 1u);
  EXPECT_EQ(inServer("claim")->status.conditions.at(0).status, "False");
}

TEST_F(PVCProtectionTest, WithoutTheGateNoConditionIsWritten) {
  auto c = controller(false);
  pvc("claim", true, false, "Bound");
  EXPECT_TRUE(c->processPVC("ns/claim").status.ok());
  EXPECT_EQ(count("update", "persistentvolumeclaims/status"), 0u);
  EXPECT_EQ(count("list", "pods"), 0u);
}

TEST_F(PVCProtectionTest, AFailedLiveListIsRetriedWithTheClaimNamed) {
  auto c = controller(true);
  pvc("claim", true, true);
  server->prependReactor("list", "pods", [](const testing::Action&) {
    return std::optional(FakeApiServer::errorReply(500, "InternalError", "etcd is down"));
  });
  auto r = c->processPVC("ns/claim");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_NE(r.status.message().find("PVC claim/ns failed with: live list of pods failed: "), std::string::npos)
      << r.status.message();
  EXPECT_TRUE(protectedInServer("claim"));
}

TEST(VolumeCommon, PodPVCIndexAndTermination) {
  Pod p;
  p.metadata.namespace_ = "ns";
  p.metadata.name = "web";
  auto& a = p.spec.volumes.emplace_back();
  a.name = "data";
  a.persistentVolumeClaim.emplace().claimName = "claim";
  auto& b = p.spec.volumes.emplace_back();
  b.name = "scratch";
  b.ephemeral.emplace();
  p.spec.volumes.emplace_back().name = "config";
  EXPECT_EQ(common::PodPVCIndexFunc(p), (std::vector<std::string>{"ns/claim", "ns/web-scratch"}));
  EXPECT_FALSE(common::IsPodTerminated(p));
  p.metadata.deletionTimestamp = api::Time::fromUnix(1);
  EXPECT_TRUE(common::IsPodTerminated(p)) << "deleting with no container status";
  p.status.containerStatuses.emplace_back().state.running.emplace();
  EXPECT_FALSE(common::IsPodTerminated(p));
  p.status.phase = "Failed";
  EXPECT_TRUE(common::IsPodTerminated(p));
}

}  // namespace
}  // namespace kcm::controllers::volume::pvcprotection
