// persistentvolume-attach-detach-controller over the fake apiserver: the attach/detach cases of upstream
// pkg/controller/volume/attachdetach's reconciler_test.go and attach_detach_controller_test.go for CSI volumes
// (VolumeAttachment created and awaited, node.status.volumesAttached, detach once unmounted, attachRequired,
// multi-attach), driven through the handlers and reconciler passes.
#include <gtest/gtest.h>

#include "api/gen/core_v1_json.h"
#include "api/gen/storage_v1_json.h"
#include "client/events.h"
#include "controllers/volume/attachdetach/attach_detach_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::volume::attachdetach {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

constexpr const char* kVA = "csi-a440228e7bfcae4df87a8107d4deee40203887f6173bc07532d5e978d6aa84cc";  // h1, node-1
constexpr const char* kVolume = "kubernetes.io/csi/example.csi.k8s.io^h1";

TEST(AttachDetachNames, AttachmentAndVolumeNamesAreTheCSIPlugins) {
  EXPECT_EQ(getAttachmentName("h1", "example.csi.k8s.io", "node-1"), kVA);
  EXPECT_EQ(uniqueVolumeName("example.csi.k8s.io", "h1"), kVolume);
  std::string d, h;
  ASSERT_TRUE(splitUniqueVolumeName(kVolume, d, h));
  EXPECT_EQ(d, "example.csi.k8s.io");
  EXPECT_EQ(h, "h1");
  EXPECT_FALSE(splitUniqueVolumeName("kubernetes.io/gce-pd/disk", d, h));
}

class AttachDetachTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    const std::vector<std::string> verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
    server->addResource({"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, verbs, {"status"}});
    server->addResource({"", "v1", "persistentvolumes", "PersistentVolume", false, verbs, {"status"}});
    server->addResource({"storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", false, verbs, {"status"}});
    server->addResource({"storage.k8s.io", "v1", "csidrivers", "CSIDriver", false, verbs, {}});
    node("node-1", true);
    node("node-2", true);
    volume("pv-1", "h1", "claim-1");
  }
  template <class T>
  void cache(const T& obj) {
    factory.forType<T>().store().upsert(informers::metaNamespaceKey(obj), std::make_shared<const T>(obj));
  }
  void node(const std::string& name, bool managed, std::vector<std::string> inUse = {}) {
    Node n;
    n.metadata.name = name;
    if (managed) n.metadata.annotations[kControllerManagedAttachAnnotation] = "true";
    auto& c = n.status.conditions.emplace_back();
    c.type = "Ready", c.status = "True";
    n.status.volumesInUse.assign(inUse.begin(), inUse.end());
    if (!server->get<Node>("", name)) n = server->add(n);
    cache(n);
    ctrl.nodeUpdate(n);
  }
  void volume(const std::string& pv, const std::string& handle, const std::string& claim,
              std::vector<std::string> modes = {"ReadWriteOnce"}) {
    PersistentVolumeClaim c;
    c.metadata.namespace_ = "ns", c.metadata.name = claim, c.metadata.uid = "uid-" + claim;
    c.spec.volumeName = pv;
    c.status.phase = "Bound";
    cache(c);
    PersistentVolume v;
    v.metadata.name = pv;
    v.spec.accessModes.assign(modes.begin(), modes.end());
    v.spec.csi.emplace().driver = "example.csi.k8s.io";
    v.spec.csi->volumeHandle = handle;
    v.spec.claimRef.emplace().uid = "uid-" + claim;
    cache(v);
  }
  Pod pod(const std::string& name, const std::string& nodeName, const std::string& claim = "claim-1") {
    Pod p;
    p.metadata.namespace_ = "ns", p.metadata.name = name, p.metadata.uid = "uid-" + name;
    p.spec.nodeName = nodeName;
    auto& v = p.spec.volumes.emplace_back();
    v.name = "data";
    v.persistentVolumeClaim.emplace().claimName = claim;
    cache(p);
    ctrl.podAdd(p);
    return p;
  }
  // The external attacher's part: the VolumeAttachment the controller created, marked attached (or failed).
  void attacherReports(const std::string& name, bool attached, const std::string& error = "") {
    auto va = server->get<VolumeAttachment>("", name);
    ASSERT_TRUE(va.has_value()) << name;
    va->status.attached = attached;
    if (!error.empty()) va->status.attachError.emplace().message = error;
    cache(*va);
  }
  std::vector<nlohmann::json> nodeStatusPatches() {
    std::vector<nlohmann::json> out;
    for (const auto& a : server->actionsFor("patch", "nodes/status")) out.push_back(nlohmann::json::parse(a.body));
    return out;
  }
  std::vector<std::string> events() {
    broadcaster.flush();
    return server->createdEvents();
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  AttachDetachController ctrl{server->client(), broadcaster.newRecorder("attachdetach-controller"),
                              factory.forType<Pod>(), factory.forType<Node>(),
                              factory.forType<PersistentVolumeClaim>(), factory.forType<PersistentVolume>(),
                              factory.forType<CSIDriver>(), factory.forType<VolumeAttachment>(), Parameters{}, clock};
};

TEST_F(AttachDetachTest, AScheduledPodsCSIVolumeIsAttachedThroughAVolumeAttachment) {
  pod("p1", "node-1");
  ctrl.reconcile();
  auto va = server->get<VolumeAttachment>("", kVA);
  ASSERT_TRUE(va.has_value());
  EXPECT_EQ(va->spec.attacher, "example.csi.k8s.io");
  EXPECT_EQ(va->spec.nodeName, "node-1");
  EXPECT_EQ(va->spec.source.persistentVolumeName.value_or(""), "pv-1");
  EXPECT_FALSE(ctrl.actual().IsVolumeAttachedToNode(kVolume, "node-1")) << "not before the attacher says so";
  EXPECT_TRUE(nodeStatusPatches().empty());
  cache(*va);
  ctrl.reconcile();
  EXPECT_FALSE(ctrl.actual().IsVolumeAttachedToNode(kVolume, "node-1"));
  attacherReports(kVA, true);
  ctrl.reconcile();
  EXPECT_TRUE(ctrl.actual().IsVolumeAttachedToNode(kVolume, "node-1"));
  auto patches = nodeStatusPatches();
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0], nlohmann::json::parse(
                            R"({"status":{"volumesAttached":[{"devicePath":"","name":"kubernetes.io/csi/example.csi.k8s.io^h1"}]}})"));
  EXPECT_EQ(server->actionsFor("create", "volumeattachments").size(), 1u);
  EXPECT_EQ(events(), std::vector<std::string>{"Normal SuccessfulAttachVolume AttachVolume.Attach succeeded for volume \"pv-1\" "});
}

TEST_F(AttachDetachTest, NothingIsAttachedOnUnmanagedNodesOrForDriversWithoutAttach) {
  node("plain", false);
  pod("p1", "plain");
  CSIDriver d;
  d.metadata.name = "no-attach.csi.k8s.io";
  d.spec.attachRequired = false;
  cache(d);
  volume("pv-2", "h2", "claim-2");
  auto pv = *factory.forType<PersistentVolume>().store().get("pv-2");
  pv.spec.csi->driver = "no-attach.csi.k8s.io";
  cache(pv);
  pod("p2", "node-1", "claim-2");
  Pod unscheduled = pod("p3", "");
  ctrl.reconcile();
  EXPECT_TRUE(server->actionsFor("create", "volumeattachments").empty());
  EXPECT_TRUE(ctrl.desired().GetVolumesToAttach().empty());
}

TEST_F(AttachDetachTest, AnUnboundClaimIsAttachedOnceItBinds) {
  auto c = *factory.forType<PersistentVolumeClaim>().store().get("ns/claim-1");
  c.status.phase = "Pending";
  cache(c);
  pod("p1", "node-1");
  EXPECT_TRUE(ctrl.desired().GetVolumesToAttach().empty());
  c.status.phase = "Bound";
  cache(c);
  EXPECT_TRUE(ctrl.syncPVCByKey("ns/claim-1").status.ok());
  ASSERT_EQ(ctrl.desired().GetVolumesToAttach().size(), 1u);
}

TEST_F(AttachDetachTest, ADeletedPodsVolumeIsDetachedOnceTheNodeNoLongerUsesIt) {
  Pod p = pod("p1", "node-1");
  ctrl.reconcile();
  attacherReports(kVA, true);
  ctrl.reconcile();
  ASSERT_TRUE(ctrl.actual().IsVolumeAttachedToNode(kVolume, "node-1"));
  node("node-1", true, {kVolume});  // the kubelet reports it mounted
  factory.forType<Pod>().store().erase("ns/p1");
  ctrl.podDelete(p);
  ctrl.reconcile();
  EXPECT_TRUE(server->get<VolumeAttachment>("", kVA).has_value()) << "still mounted: no detach";
  node("node-1", true, {});  // unmounted
  server->clearActions();
  ctrl.reconcile();
  EXPECT_FALSE(server->get<VolumeAttachment>("", kVA).has_value());
  auto patches = nodeStatusPatches();
  ASSERT_FALSE(patches.empty());
  EXPECT_TRUE(patches[0]["status"]["volumesAttached"].is_null()) << patches[0].dump();
  EXPECT_TRUE(ctrl.actual().VolumeNodeExists(kVolume, "node-1")) << "until the attachment is gone";
  factory.forType<VolumeAttachment>().store().erase(kVA);
  ctrl.reconcile();
  EXPECT_FALSE(ctrl.actual().VolumeNodeExists(kVolume, "node-1"));
}

TEST_F(AttachDetachTest, AnAttachErrorIsAFailedAttachVolumeEventAndBacksOff) {
  pod("p1", "node-1");
  ctrl.reconcile();
  attacherReports(kVA, false, "rpc error: disk busy");
  ctrl.reconcile();
  EXPECT_FALSE(ctrl.actual().IsVolumeAttachedToNode(kVolume, "node-1"));
  ctrl.reconcile();  // within the backoff: no second attempt
  EXPECT_EQ(events(), std::vector<std::string>{
                          "Warning FailedAttachVolume AttachVolume.Attach failed for volume \"pv-1\" : rpc error: disk busy"});
  clock.advance(1s);
  attacherReports(kVA, true);
  ctrl.reconcile();
  EXPECT_TRUE(ctrl.actual().IsVolumeAttachedToNode(kVolume, "node-1"));
}

TEST_F(AttachDetachTest, TheAttachTimesOutWhenTheExternalAttacherNeverAnswers) {
  pod("p1", "node-1");
  ctrl.reconcile();
  clock.advance(2min + 1s);
  ctrl.reconcile();
  auto ev = events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], "Warning FailedAttachVolume AttachVolume.Attach failed for volume \"pv-1\" : timed out waiting for "
                   "external-attacher of example.csi.k8s.io CSI driver to attach volume h1");
}

TEST_F(AttachDetachTest, AReadWriteOnceVolumeAttachedElsewhereWaitsForDetach) {
  pod("p1", "node-1");
  ctrl.reconcile();
  attacherReports(kVA, true);
  ctrl.reconcile();
  pod("p2", "node-2");
  ctrl.reconcile();
  ctrl.reconcile();  // reported once
  EXPECT_EQ(server->actionsFor("create", "volumeattachments").size(), 1u);
  auto ev = events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1], "Warning FailedAttachVolume Waiting for detach for volume \"pv-1\" Volume is already used by pod(s) p1");
}

TEST_F(AttachDetachTest, AReadWriteManyVolumeIsAttachedToSeveralNodes) {
  volume("pv-rwx", "hx", "claim-rwx", {"ReadWriteMany"});
  pod("p1", "node-1", "claim-rwx");
  pod("p2", "node-2", "claim-rwx");
  ctrl.reconcile();
  EXPECT_EQ(server->actionsFor("create", "volumeattachments").size(), 2u);
}

TEST_F(AttachDetachTest, StartUpTakesAttachedVolumesFromNodeStatusAndDetachesUnwantedOnes) {
  Node n = *factory.forType<Node>().store().get("node-1");
  n.status.volumesAttached.emplace_back().name = kVolume;
  cache(n);
  VolumeAttachment va;
  va.metadata.name = kVA;
  va.spec.nodeName = "node-1", va.spec.attacher = "example.csi.k8s.io";
  va.spec.source.persistentVolumeName = "pv-1";
  va.status.attached = true;
  cache(server->add(va));
  ctrl.populateActualStateOfWorld();
  EXPECT_TRUE(ctrl.actual().IsVolumeAttachedToNode(kVolume, "node-1"));
  ctrl.nodeUpdate(n);  // volumesInUse empty: not mounted
  ctrl.reconcile();    // no pod wants it
  EXPECT_FALSE(server->get<VolumeAttachment>("", kVA).has_value());
}

TEST_F(AttachDetachTest, TheSyncMarksAVanishedAttachmentDetachedAndItIsAttachedAgain) {
  pod("p1", "node-1");
  ctrl.reconcile();
  attacherReports(kVA, true);
  ctrl.reconcile();
  factory.forType<VolumeAttachment>().store().erase(kVA);
  ASSERT_TRUE(client::remove<VolumeAttachment>(*server->client(), "", kVA).ok());
  ctrl.sync();
  EXPECT_FALSE(ctrl.actual().IsVolumeAttachedToNode(kVolume, "node-1"));
  ctrl.reconcile();
  EXPECT_TRUE(server->get<VolumeAttachment>("", kVA).has_value()) << "created again";
}

TEST_F(AttachDetachTest, ATerminatedPodNoLongerWantsItsVolume) {
  Pod p = pod("p1", "node-1");
  ASSERT_EQ(ctrl.desired().GetVolumesToAttach().size(), 1u);
  p.status.phase = "Succeeded";
  cache(p);
  ctrl.podAdd(p);
  EXPECT_TRUE(ctrl.desired().GetVolumesToAttach().empty());
  pod("p2", "node-1");
  factory.forType<Pod>().store().erase("ns/p2");
  ctrl.findAndRemoveDeletedPods();
  EXPECT_TRUE(ctrl.desired().GetVolumesToAttach().empty()) << "a pod gone from the informer is dropped";
}

}  // namespace
}  // namespace kcm::controllers::volume::attachdetach
