// ephemeral-volume-controller (upstream pkg/controller/volume/ephemeral/controller_test.go's TestSyncHandler cases,
// through syncHandler) over the fake apiserver, plus the event handlers' enqueueing.
#include <gtest/gtest.h>

#include "api/gen/core_v1_json.h"
#include "base/metrics.h"
#include "client/events.h"
#include "controllers/volume/ephemeral/ephemeral_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::volume::ephemeral {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

double counter(const char* name) {
  return metrics::Registry::global().counter(std::string("ephemeral_volume_controller_") + name, "").value();
}

class EphemeralTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    attempts0 = counter("create_total"), failures0 = counter("create_failures_total");
  }
  // test-pod in my-namespace, with an ephemeral volume "ephemeral-volume" unless `withVolume` is false.
  Pod pod(bool withVolume = true, bool deleting = false) {
    Pod p;
    p.metadata.namespace_ = "my-namespace";
    p.metadata.name = "test-pod";
    p.metadata.uid = "uidpod1";
    if (withVolume) {
      auto& v = p.spec.volumes.emplace_back();
      v.name = "ephemeral-volume";
      auto& t = v.ephemeral.emplace().volumeClaimTemplate.emplace();
      t.metadata.labels["app"] = "db";
      t.metadata.annotations["note"] = "kept";
      t.spec.accessModes = {"ReadWriteOnce"};
      t.spec.storageClassName = "fast";
      t.spec.resources.requests["storage"] = api::Quantity::parse("1Gi").value();
    }
    auto& other = p.spec.volumes.emplace_back();
    other.name = "config";
    other.configMap.emplace().name = "cm";
    Pod stored = server->add(p);
    stored.metadata.uid = p.metadata.uid;
    if (deleting) stored.metadata.deletionTimestamp = api::Time::fromUnix(1000);
    factory.forType<Pod>().store().upsert("my-namespace/test-pod", std::make_shared<const Pod>(stored));
    return stored;
  }
  // A PVC in the server and the cache, controlled by the pod with UID `ownerUID` when given.
  void pvc(const std::string& ns, const std::string& name, const std::string& ownerUID = "") {
    PersistentVolumeClaim c;
    c.metadata.namespace_ = ns;
    c.metadata.name = name;
    if (!ownerUID.empty()) {
      auto& r = c.metadata.ownerReferences.emplace_back();
      r.apiVersion = "v1", r.kind = "Pod", r.name = "test-pod", r.uid = ownerUID, r.controller = true;
    }
    factory.forType<PersistentVolumeClaim>().store().upsert(ns + "/" + name,
                                                           std::make_shared<const PersistentVolumeClaim>(server->add(c)));
  }
  std::vector<std::string> events() {
    broadcaster.flush();
    return server->createdEvents();
  }
  size_t creates() { return server->actionsFor("create", "persistentvolumeclaims").size(); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  Controller controller{server->client(), broadcaster.newRecorder("ephemeral_volume"), factory.forType<Pod>(),
                        factory.forType<PersistentVolumeClaim>(), clock};
  double attempts0 = 0, failures0 = 0;
};

// "create": the claim is named <pod>-<volume>, controlled by the pod, from the template.
TEST_F(EphemeralTest, APodWithAnEphemeralVolumeGetsItsClaim) {
  pod();
  ASSERT_TRUE(controller.syncHandler("my-namespace/test-pod").status.ok());
  auto c = server->get<PersistentVolumeClaim>("my-namespace", "test-pod-ephemeral-volume");
  ASSERT_TRUE(c.has_value());
  ASSERT_EQ(c->metadata.ownerReferences.size(), 1u);
  const auto& r = c->metadata.ownerReferences[0];
  EXPECT_EQ(r.apiVersion, "v1");
  EXPECT_EQ(r.kind, "Pod");
  EXPECT_EQ(r.name, "test-pod");
  EXPECT_EQ(r.uid, "uidpod1");
  EXPECT_EQ(r.controller, std::optional<bool>(true));
  EXPECT_EQ(r.blockOwnerDeletion, std::optional<bool>(true));
  EXPECT_EQ(c->metadata.labels.at("app"), "db");
  EXPECT_EQ(c->metadata.annotations.at("note"), "kept");
  EXPECT_EQ(c->spec.storageClassName.value_or(""), "fast");
  EXPECT_EQ(c->spec.accessModes, std::vector<std::string>{"ReadWriteOnce"});
  EXPECT_EQ(creates(), 1u);
  EXPECT_EQ(counter("create_total") - attempts0, 1);
  EXPECT_EQ(counter("create_failures_total") - failures0, 0);
  EXPECT_TRUE(events().empty());
}

TEST_F(EphemeralTest, NothingHappensForAPodThatIsGoneBeingDeletedOrWithoutEphemeralVolumes) {
  EXPECT_TRUE(controller.syncHandler("my-namespace/test-pod").status.ok()) << "no-such-pod";
  pod(true, true);
  EXPECT_TRUE(controller.syncHandler("my-namespace/test-pod").status.ok()) << "pod-deleted";
  pod(false);
  EXPECT_TRUE(controller.syncHandler("my-namespace/test-pod").status.ok()) << "no-volumes";
  EXPECT_EQ(creates(), 0u);
  EXPECT_EQ(counter("create_total") - attempts0, 0);
}

// "create-with-other-PVC": a claim of the same name in another namespace is not the pod's.
TEST_F(EphemeralTest, AClaimOfTheSameNameInAnotherNamespaceDoesNotCount) {
  pod();
  pvc("not-my-namespace", "test-pod-ephemeral-volume");
  ASSERT_TRUE(controller.syncHandler("my-namespace/test-pod").status.ok());
  EXPECT_TRUE(server->get<PersistentVolumeClaim>("my-namespace", "test-pod-ephemeral-volume").has_value());
  EXPECT_TRUE(server->get<PersistentVolumeClaim>("not-my-namespace", "test-pod-ephemeral-volume").has_value());
  EXPECT_EQ(counter("create_total") - attempts0, 1);
}

// An existing claim the pod controls is left alone.
TEST_F(EphemeralTest, AClaimThePodAlreadyControlsIsLeftAlone) {
  pod();
  pvc("my-namespace", "test-pod-ephemeral-volume", "uidpod1");
  ASSERT_TRUE(controller.syncHandler("my-namespace/test-pod").status.ok());
  EXPECT_EQ(creates(), 0u);
  EXPECT_TRUE(events().empty());
}

// "wrong-PVC-owner": a foreign claim of that name is an error and a FailedBinding Warning; nothing is written.
TEST_F(EphemeralTest, AForeignClaimOfThatNameIsAConflictWithAWarning) {
  pod();
  pvc("my-namespace", "test-pod-ephemeral-volume");
  auto r = controller.syncHandler("my-namespace/test-pod");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_EQ(r.status.message(),
            "pod my-namespace/test-pod, ephemeral volume ephemeral-volume: PVC my-namespace/test-pod-ephemeral-volume "
            "was not created for pod my-namespace/test-pod (pod is not owner)");
  EXPECT_EQ(creates(), 0u);
  EXPECT_EQ(events(), std::vector<std::string>{
                          "Warning FailedBinding ephemeral volume ephemeral-volume: PVC "
                          "my-namespace/test-pod-ephemeral-volume was not created for pod my-namespace/test-pod "
                          "(pod is not owner)"});
  EXPECT_EQ(counter("create_total") - attempts0, 0);
}

// "create-conflict": a failed create counts as an attempt and a failure, and is retried.
TEST_F(EphemeralTest, AFailedCreateIsCountedWarnedAndRetried) {
  pod();
  server->prependReactor("create", "persistentvolumeclaims", [](const testing::Action&) {
    return std::optional(FakeApiServer::errorReply(409, "Conflict", "fake conflict"));
  });
  auto r = controller.syncHandler("my-namespace/test-pod");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_NE(r.status.message().find("pod my-namespace/test-pod, ephemeral volume ephemeral-volume: create PVC "
                                    "test-pod-ephemeral-volume: "),
            std::string::npos)
      << r.status.message();
  EXPECT_EQ(counter("create_total") - attempts0, 1);
  EXPECT_EQ(counter("create_failures_total") - failures0, 1);
  auto ev = events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].rfind("Warning FailedBinding ephemeral volume ephemeral-volume: create PVC test-pod-ephemeral-volume: ", 0),
            0u)
      << ev[0];
}

}  // namespace
}  // namespace kcm::controllers::volume::ephemeral
