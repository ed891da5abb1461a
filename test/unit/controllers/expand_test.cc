// persistentvolume-expander-controller (upstream pkg/controller/volume/expand/expand_controller_test.go's
// TestSyncHandler cases, through syncHandler) over the fake apiserver, plus the PVC handlers' enqueueing, the
// failures upstream turns into events, and the FlexVolume path (the one volume type this controller still
// "expands" itself, with the no-op plugin).
//
// The fake apiserver keeps only status from a status-subresource write (the real one keeps metadata too), so the
// resizer annotation is checked in the patch the controller sends.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "base/metrics.h"
#include "client/events.h"
#include "controllers/volume/expand/expand_controller.h"
#include "fake/eventually.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::volume::expand {

class ExpandTestPeer {
 public:
  static void add(Controller& c, const PersistentVolumeClaim& pvc) { c.enqueuePVC(pvc); }
  static void update(Controller& c, const PersistentVolumeClaim& o, const PersistentVolumeClaim& n) { c.onUpdate(o, n); }
  static size_t queued(Controller& c) { return c.base_.queue().len(); }
};

namespace {

using testing::FakeApiServer;
using json = nlohmann::json;
using namespace std::chrono_literals;

api::Quantity qty(const char* s) { return api::Quantity::parse(s).value(); }

const std::vector<double> kBuckets = {.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600};
uint64_t expandOps(const std::string& plugin, const std::string& status) {
  return metrics::Registry::global()
      .histogram("storage_operation_duration_seconds", "[BETA] Storage operation duration", kBuckets,
                 {{"migrated", "false"}, {"operation_name", "expand_volume"}, {"status", status}, {"volume_plugin", plugin}})
      .count();
}

enum class Source { kAWSEBS, kCSI, kFlex, kHostPath };

class ExpandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    server->addResource({"", "v1", "persistentvolumes", "PersistentVolume", false,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
  }
  // upstream getFakePersistentVolume: claimRef in "default" with UID `claimUID` (none when empty).
  PersistentVolume pv(const std::string& name, Source source, const char* size, const std::string& claimUID,
                      const std::function<void(PersistentVolume&)>& tweak = nullptr) {
    PersistentVolume v;
    v.metadata.name = name;
    auto& ref = v.spec.claimRef.emplace();
    ref.namespace_ = "default";
    ref.uid = claimUID;
    v.spec.capacity["storage"] = qty(size);
    switch (source) {
      case Source::kAWSEBS: {
        auto& ebs = v.spec.awsElasticBlockStore.emplace();
        ebs.volumeID = name;
        ebs.fsType = "ext4";
        break;
      }
      case Source::kCSI: {
        auto& csi = v.spec.csi.emplace();
        csi.driver = "com.csi.ceph";
        csi.volumeHandle = name;
        break;
      }
      case Source::kFlex:
        v.spec.flexVolume.emplace().driver = "example/flex";
        break;
      case Source::kHostPath:
        v.spec.hostPath.emplace().path = "/tmp/" + name;
        break;
    }
    if (tweak) tweak(v);
    return server->add(v);
  }
  // upstream getFakePersistentVolumeClaim, Bound unless told otherwise; in the server and the cache.
  PersistentVolumeClaim pvc(const std::string& name, const std::string& volumeName, const char* statusSize,
                            const char* requestSize, const std::string& uid, const std::string& phase = "Bound") {
    PersistentVolumeClaim c;
    c.metadata.namespace_ = "default";
    c.metadata.name = name;
    c.metadata.uid = uid;
    c.spec.accessModes = {"ReadWriteOnce"};
    c.spec.resources.requests["storage"] = qty(requestSize);
    c.spec.volumeName = volumeName;
    c.status.phase = phase;
    c.status.capacity["storage"] = qty(statusSize);
    PersistentVolumeClaim stored = server->add(c);
    factory.forType<PersistentVolumeClaim>().store().upsert("default/" + name,
                                                           std::make_shared<const PersistentVolumeClaim>(stored));
    return stored;
  }
  std::vector<std::string> events() {
    broadcaster.flush();
    return server->createdEvents();
  }
  std::vector<testing::Action> patches(const std::string& resource) { return server->actionsFor("patch", resource); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  Controller controller{server->client(), broadcaster.newRecorder("volume_expand"),
                        factory.forType<PersistentVolumeClaim>(), clock};
};

// "when pvc has no PV binding": no volume name, so no PV can be read; retried.
TEST_F(ExpandTest, AClaimWithoutAVolumeNameIsAnError) {
  pvc("no-pv-pvc", "", "1Gi", "1Gi", "");
  auto r = controller.syncHandler("default/no-pv-pvc");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_EQ(r.status.message(), "failed to get PV \"\": resource name may not be empty");
  EXPECT_TRUE(server->actionsFor("get", "persistentvolumes").empty()) << "client-go refuses before sending";
  EXPECT_TRUE(server->writes().empty());
}

// "when pvc and pv has everything for in-tree plugin": a migrated in-tree volume is handed to the CSI driver's
// resizer through the annotation, written by a strategic-merge patch of the status subresource.
TEST_F(ExpandTest, AMigratedInTreeVolumeGetsTheCSIDriverAsItsResizer) {
  pv("vol-3", Source::kAWSEBS, "1Gi", "good-pvc-vol-3");
  auto claim = pvc("good-pvc", "vol-3", "1Gi", "2Gi", "good-pvc-vol-3");
  ASSERT_TRUE(controller.syncHandler("default/good-pvc").status.ok());
  auto p = patches("persistentvolumeclaims/status");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].patchType.find("strategic-merge-patch"), std::string::npos) << p[0].patchType;
  EXPECT_EQ(json::parse(p[0].body),
            json::parse(R"({"metadata":{"annotations":{"volume.kubernetes.io/storage-resizer":"ebs.csi.aws.com"},)"
                        R"("resourceVersion":")" + claim.metadata.resourceVersion + R"("}})"));
  EXPECT_TRUE(patches("persistentvolumes").empty()) << "no expansion here";
  EXPECT_EQ(events(), std::vector<std::string>{"Normal ExternalExpanding CSI migration enabled for kubernetes.io/aws-ebs; "
                                               "waiting for external resizer to expand the pvc"});
}

// "if pv has pre-resize capacity annotation, generate expand operation should not be called": a migrated volume
// goes to its resizer even though the request is not above the capacity.
TEST_F(ExpandTest, APreResizeAnnotationAloneStillHandsAMigratedVolumeToItsResizer) {
  pv("vol-4", Source::kAWSEBS, "2Gi", "good-pvc-vol-4",
     [](PersistentVolume& v) { v.metadata.annotations["volume.alpha.kubernetes.io/pre-resize-capacity"] = "1Gi"; });
  pvc("good-pvc", "vol-4", "2Gi", "2Gi", "good-pvc-vol-4");
  ASSERT_TRUE(controller.syncHandler("default/good-pvc").status.ok());
  auto p = patches("persistentvolumeclaims/status");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(json::parse(p[0].body)["metadata"]["annotations"]["volume.kubernetes.io/storage-resizer"], "ebs.csi.aws.com");
  EXPECT_TRUE(patches("persistentvolumes").empty());
  EXPECT_EQ(events().size(), 1u);
}

// "for csi plugin without migration path": no plugin here expands CSI volumes; the external resizer will (it
// finds the claim by its PV's driver), so nothing is written and the claim is not retried.
TEST_F(ExpandTest, ACSIVolumeIsLeftToTheExternalResizerWithANormalEvent) {
  pv("vol-5", Source::kCSI, "1Gi", "ceph-csi-pvc-vol-6");
  pvc("ceph-csi-pvc", "vol-5", "1Gi", "2Gi", "ceph-csi-pvc-vol-6");
  auto r = controller.syncHandler("default/ceph-csi-pvc");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_TRUE(patches("*").empty());
  EXPECT_EQ(events(), std::vector<std::string>{"Normal ExternalExpanding waiting for an external controller to expand this PVC"});
}

// Any other in-tree type: no expandable plugin either.
TEST_F(ExpandTest, AnInTreeVolumeWithoutAnExpandablePluginWaitsForAnExternalController) {
  pv("vol-hp", Source::kHostPath, "1Gi", "hp-uid");
  pvc("hp-pvc", "vol-hp", "1Gi", "2Gi", "hp-uid");
  ASSERT_TRUE(controller.syncHandler("default/hp-pvc").status.ok());
  EXPECT_TRUE(patches("*").empty());
  EXPECT_EQ(events(), std::vector<std::string>{"Normal ExternalExpanding waiting for an external controller to expand this PVC"});
}

TEST_F(ExpandTest, AClaimWhoseRequestIsNotAboveItsCapacityIsLeftAlone) {
  pv("vol-6", Source::kCSI, "2Gi", "uid-6");
  pvc("same", "vol-6", "2Gi", "2Gi", "uid-6");
  pv("vol-7", Source::kAWSEBS, "2Gi", "uid-7");
  pvc("shrunk", "vol-7", "2Gi", "1Gi", "uid-7");
  EXPECT_TRUE(controller.syncHandler("default/same").status.ok());
  EXPECT_TRUE(controller.syncHandler("default/shrunk").status.ok());
  EXPECT_TRUE(patches("*").empty());
  EXPECT_TRUE(events().empty());
}

TEST_F(ExpandTest, AClaimWhosePVIsMissingIsAnErrorAndRetried) {
  pvc("orphan", "vol-missing", "1Gi", "2Gi", "uid-o");
  auto r = controller.syncHandler("default/orphan");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  EXPECT_EQ(r.status.code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status.message().rfind("failed to get PV \"vol-missing\": ", 0), 0u) << r.status.message();
  EXPECT_NE(r.status.message().find("not found"), std::string::npos) << r.status.message();
  EXPECT_TRUE(patches("*").empty());
  EXPECT_TRUE(events().empty());
}

// The PV must point back at this claim (namespace and UID); otherwise an error, retried, nothing written.
TEST_F(ExpandTest, APVNotBoundToTheClaimIsAnError) {
  pv("vol-other", Source::kCSI, "1Gi", "someone-else");
  pvc("mismatch", "vol-other", "1Gi", "2Gi", "uid-m");
  auto r = controller.syncHandler("default/mismatch");
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "persistent Volume is not bound to PVC being updated : default/mismatch");
  pv("vol-noref", Source::kCSI, "1Gi", "", [](PersistentVolume& v) { v.spec.claimRef.reset(); });
  pvc("noref", "vol-noref", "1Gi", "2Gi", "uid-n");
  r = controller.syncHandler("default/noref");
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "persistent Volume is not bound to PVC being updated : default/noref");
  pv("vol-ns", Source::kCSI, "1Gi", "uid-ns", [](PersistentVolume& v) { v.spec.claimRef->namespace_ = "elsewhere"; });
  pvc("otherns", "vol-ns", "1Gi", "2Gi", "uid-ns");
  EXPECT_FALSE(controller.syncHandler("default/otherns").status.ok());
  EXPECT_TRUE(patches("*").empty());
  EXPECT_TRUE(events().empty());
}

TEST_F(ExpandTest, AClaimGoneFromTheCacheIsNothingToDo) {
  EXPECT_TRUE(controller.syncHandler("default/gone").status.ok());
  EXPECT_TRUE(server->actions().empty());
}

// A failed annotation write: a Warning ExternalExpanding with the error, after the Normal one, and a retry.
TEST_F(ExpandTest, AFailedResizerAnnotationIsAWarningAndRetried) {
  pv("vol-8", Source::kAWSEBS, "1Gi", "uid-8");
  pvc("good-pvc", "vol-8", "1Gi", "2Gi", "uid-8");
  server->prependReactor("patch", "persistentvolumeclaims/status", [](const testing::Action&) {
    return std::optional(FakeApiServer::errorReply(409, "Conflict", "fake conflict"));
  });
  auto r = controller.syncHandler("default/good-pvc");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  const std::string want =
      "error setting resizer annotation to pvc default/good-pvc, with error patchPVCStatus failed to patch PVC "
      "\"good-pvc\": fake conflict";
  EXPECT_EQ(r.status.message(), want);
  EXPECT_EQ(events(), (std::vector<std::string>{"Normal ExternalExpanding CSI migration enabled for kubernetes.io/aws-ebs; "
                                                "waiting for external resizer to expand the pvc",
                                                "Warning ExternalExpanding " + want}));
}

// Every migrated in-tree type names its CSI driver.
TEST_F(ExpandTest, EachMigratedPluginNamesItsCSIDriver) {
  struct Case {
    const char* plugin;
    const char* driver;
    std::function<void(PersistentVolume&)> source;
  };
  const std::vector<Case> cases = {
      {"kubernetes.io/gce-pd", "pd.csi.storage.gke.io", [](PersistentVolume& v) { v.spec.gcePersistentDisk.emplace().pdName = "d"; }},
      {"kubernetes.io/azure-disk", "disk.csi.azure.com", [](PersistentVolume& v) { v.spec.azureDisk.emplace().diskName = "d"; }},
      {"kubernetes.io/azure-file", "file.csi.azure.com", [](PersistentVolume& v) { v.spec.azureFile.emplace().shareName = "s"; }},
      {"kubernetes.io/cinder", "cinder.csi.openstack.org", [](PersistentVolume& v) { v.spec.cinder.emplace().volumeID = "c"; }},
      {"kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com", [](PersistentVolume& v) { v.spec.vsphereVolume.emplace().volumePath = "p"; }},
      {"kubernetes.io/portworx-volume", "pxd.portworx.com", [](PersistentVolume& v) { v.spec.portworxVolume.emplace().volumeID = "x"; }},
  };
  int i = 0;
  for (const auto& c : cases) {
    const std::string n = std::to_string(i++);
    pv("vol-m" + n, Source::kHostPath, "1Gi", "uid-m" + n, [&](PersistentVolume& v) {
      v.spec.hostPath.reset();
      c.source(v);
    });
    pvc("m" + n, "vol-m" + n, "1Gi", "2Gi", "uid-m" + n);
    server->clearActions();
    ASSERT_TRUE(controller.syncHandler("default/m" + n).status.ok()) << c.plugin;
    auto p = patches("persistentvolumeclaims/status");
    ASSERT_EQ(p.size(), 1u) << c.plugin;
    EXPECT_EQ(json::parse(p[0].body)["metadata"]["annotations"]["volume.kubernetes.io/storage-resizer"], c.driver);
    EXPECT_EQ(events().back(), std::string("Normal ExternalExpanding CSI migration enabled for ") + c.plugin +
                                   "; waiting for external resizer to expand the pvc");
  }
}

// The handlers: bound claims only; an update only when the request or the capacity grew; deletes too, but not
// tombstones (upstream's handler does not unwrap them).
TEST_F(ExpandTest, OnlyBoundClaimsWhoseRequestOrCapacityGrewAreQueued) {
  auto claim = [](const std::string& name, const char* cap, const char* req, const std::string& phase = "Bound") {
    PersistentVolumeClaim c;
    c.metadata.namespace_ = "default";
    c.metadata.name = name;
    c.status.phase = phase;
    c.status.capacity["storage"] = qty(cap);
    c.spec.resources.requests["storage"] = qty(req);
    return c;
  };
  ExpandTestPeer::add(controller, claim("pending", "1Gi", "1Gi", "Pending"));
  EXPECT_EQ(ExpandTestPeer::queued(controller), 0u) << "an unbound claim";
  ExpandTestPeer::add(controller, claim("bound", "1Gi", "1Gi"));
  EXPECT_EQ(ExpandTestPeer::queued(controller), 1u);

  ExpandTestPeer::update(controller, claim("same", "1Gi", "1Gi"), claim("same", "1Gi", "1Gi"));
  EXPECT_EQ(ExpandTestPeer::queued(controller), 1u) << "nothing grew";
  ExpandTestPeer::update(controller, claim("shrunk", "2Gi", "2Gi"), claim("shrunk", "1Gi", "1Gi"));
  EXPECT_EQ(ExpandTestPeer::queued(controller), 1u) << "shrinking is not growing";
  ExpandTestPeer::update(controller, claim("grown-unbound", "1Gi", "1Gi", "Pending"),
                         claim("grown-unbound", "1Gi", "2Gi", "Pending"));
  EXPECT_EQ(ExpandTestPeer::queued(controller), 1u) << "a grown request of an unbound claim";
  ExpandTestPeer::update(controller, claim("grown", "1Gi", "1Gi"), claim("grown", "1Gi", "2Gi"));
  EXPECT_EQ(ExpandTestPeer::queued(controller), 2u) << "the request grew";
  ExpandTestPeer::update(controller, claim("resized", "1Gi", "2Gi"), claim("resized", "2Gi", "2Gi"));
  EXPECT_EQ(ExpandTestPeer::queued(controller), 3u) << "the capacity grew";
}

// The whole loop: the informer sees a Bound claim (nothing to do at equal sizes), then its request grow.
TEST_F(ExpandTest, AGrownRequestSeenByTheInformerIsHandled) {
  pv("vol-live", Source::kCSI, "1Gi", "live-uid");
  PersistentVolumeClaim c;
  c.metadata.namespace_ = "default";
  c.metadata.name = "live";
  c.metadata.uid = "live-uid";
  c.spec.volumeName = "vol-live";
  c.spec.resources.requests["storage"] = qty("1Gi");
  c.status.phase = "Bound";
  c.status.capacity["storage"] = qty("1Gi");
  server->add(c);
  std::stop_source stop;
  factory.start(stop.get_token());
  controller.run(kDefaultWorkerCount, stop.get_token());
  ASSERT_TRUE(testing::eventually([&] { return !server->actionsFor("get", "persistentvolumes").empty(); }))
      << "the added Bound claim was not synced";
  auto r = client::patch<PersistentVolumeClaim>(*server->client(), "default", "live", client::PatchType::kMerge,
                                                R"({"spec":{"resources":{"requests":{"storage":"2Gi"}}}})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(testing::eventually([&] { return !events().empty(); }));
  EXPECT_EQ(events(), std::vector<std::string>{"Normal ExternalExpanding waiting for an external controller to expand this PVC"});
  stop.request_stop();
}

// ---- FlexVolume: the no-op expandable plugin, so the controller does the API side of an expansion.

// Filesystem volume: ControllerResizeInProgress (allocatedResources, Resizing, the flex driver as resizer), the
// PV grown, then NodeResizePending / FileSystemResizePending and the PV's pre-resize capacity.
TEST_F(ExpandTest, AFlexVolumeIsExpandedOnTheControllerSideAndLeftPendingOnTheNode) {
  const uint64_t ok0 = expandOps("example/flex", "success");
  pv("vol-flex", Source::kFlex, "1Gi", "flex-uid");
  auto claim = pvc("flex-pvc", "vol-flex", "1Gi", "2Gi", "flex-uid");
  auto r = controller.syncHandler("default/flex-pvc");
  ASSERT_TRUE(r.status.ok()) << r.status.message();

  auto p = patches("persistentvolumeclaims/status");
  ASSERT_EQ(p.size(), 2u);
  json first = json::parse(p[0].body);
  EXPECT_EQ(first["metadata"]["resourceVersion"], claim.metadata.resourceVersion.str());
  EXPECT_EQ(first["metadata"]["annotations"]["volume.kubernetes.io/storage-resizer"], "example/flex");
  EXPECT_EQ(first["status"]["allocatedResources"], json({{"storage", "2Gi"}}));
  EXPECT_EQ(first["status"]["allocatedResourceStatuses"], json({{"storage", "ControllerResizeInProgress"}}));
  ASSERT_EQ(first["status"]["conditions"].size(), 1u);
  EXPECT_EQ(first["status"]["conditions"][0]["type"], "Resizing");
  EXPECT_EQ(first["status"]["conditions"][0]["status"], "True");
  json second = json::parse(p[1].body);
  EXPECT_EQ(second["status"]["allocatedResourceStatuses"], json({{"storage", "NodeResizePending"}}));
  EXPECT_EQ(second["status"]["$setElementOrder/conditions"],
            json::parse(R"([{"type":"Resizing"},{"type":"FileSystemResizePending"}])"));
  ASSERT_EQ(second["status"]["conditions"].size(), 1u);
  EXPECT_EQ(second["status"]["conditions"][0]["type"], "FileSystemResizePending");
  EXPECT_EQ(second["status"]["conditions"][0]["message"],
            "Waiting for user to (re-)start a pod to finish file system resize of volume on node.");

  auto stored = server->get<PersistentVolumeClaim>("default", "flex-pvc");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->status.allocatedResources.at("storage").str(), "2Gi");
  EXPECT_EQ(stored->status.allocatedResourceStatuses.at("storage"), "NodeResizePending");
  EXPECT_EQ(stored->status.capacity.at("storage").str(), "1Gi") << "the node has not resized yet";
  ASSERT_EQ(stored->status.conditions.size(), 2u);
  EXPECT_EQ(stored->status.conditions[0].type, "Resizing");
  EXPECT_EQ(stored->status.conditions[1].type, "FileSystemResizePending");

  auto volume = server->get<PersistentVolume>("", "vol-flex");
  ASSERT_TRUE(volume.has_value());
  EXPECT_EQ(volume->spec.capacity.at("storage").str(), "2Gi");
  EXPECT_EQ(volume->metadata.annotations.at("volume.alpha.kubernetes.io/pre-resize-capacity"), "1Gi");
  EXPECT_EQ(patches("persistentvolumes").size(), 2u);
  EXPECT_EQ(json::parse(patches("persistentvolumes")[0].body), json::parse(R"({"spec":{"capacity":{"storage":"2Gi"}}})"));
  EXPECT_TRUE(events().empty());
  EXPECT_EQ(expandOps("example/flex", "success") - ok0, 1u);
}

// A Block volume has no filesystem for the node to grow: the claim is marked finished at once.
TEST_F(ExpandTest, AFlexBlockVolumeIsMarkedResizedAtOnce) {
  pv("vol-blk", Source::kFlex, "1Gi", "blk-uid", [](PersistentVolume& v) { v.spec.volumeMode = "Block"; });
  pvc("blk-pvc", "vol-blk", "1Gi", "2Gi", "blk-uid");
  ASSERT_TRUE(controller.syncHandler("default/blk-pvc").status.ok());
  auto stored = server->get<PersistentVolumeClaim>("default", "blk-pvc");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->status.capacity.at("storage").str(), "2Gi");
  EXPECT_FALSE(stored->status.allocatedResourceStatuses.contains("storage"));
  EXPECT_TRUE(stored->status.conditions.empty());
  auto volume = server->get<PersistentVolume>("", "vol-blk");
  EXPECT_EQ(volume->spec.capacity.at("storage").str(), "2Gi");
  EXPECT_FALSE(volume->metadata.annotations.contains("volume.alpha.kubernetes.io/pre-resize-capacity"));
  EXPECT_EQ(events(), std::vector<std::string>{"Normal VolumeResizeSuccessful ExpandVolume succeeded for volume default/blk-pvc"});
}

// Once the node caught up (capacity reached both the request and the PV), the pre-resize annotation goes.
TEST_F(ExpandTest, AFinishedFlexExpansionLosesThePreResizeAnnotation) {
  pv("vol-done", Source::kFlex, "2Gi", "done-uid", [](PersistentVolume& v) {
    v.metadata.annotations["volume.alpha.kubernetes.io/pre-resize-capacity"] = "1Gi";
    v.metadata.annotations["keep"] = "me";
  });
  pvc("done-pvc", "vol-done", "2Gi", "2Gi", "done-uid");
  ASSERT_TRUE(controller.syncHandler("default/done-pvc").status.ok());
  auto p = patches("persistentvolumes");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(json::parse(p[0].body),
            json::parse(R"({"metadata":{"annotations":{"volume.alpha.kubernetes.io/pre-resize-capacity":null}}})"));
  auto volume = server->get<PersistentVolume>("", "vol-done");
  EXPECT_FALSE(volume->metadata.annotations.contains("volume.alpha.kubernetes.io/pre-resize-capacity"));
  EXPECT_EQ(volume->metadata.annotations.at("keep"), "me");
  EXPECT_TRUE(patches("persistentvolumeclaims/status").empty());
}

// The node is already at work on a volume that is large enough: nothing to write.
TEST_F(ExpandTest, AFlexVolumePendingOnTheNodeIsNotTouched) {
  pv("vol-node", Source::kFlex, "2Gi", "node-uid");
  PersistentVolumeClaim c = pvc("node-pvc", "vol-node", "1Gi", "2Gi", "node-uid");
  c.status.allocatedResourceStatuses["storage"] = "NodeResizePending";
  factory.forType<PersistentVolumeClaim>().store().upsert("default/node-pvc", std::make_shared<const PersistentVolumeClaim>(c));
  ASSERT_TRUE(controller.syncHandler("default/node-pvc").status.ok());
  EXPECT_TRUE(patches("*").empty());
  EXPECT_TRUE(events().empty());
}

// A failed PV write: the claim stays ControllerResizeInProgress, a VolumeResizeFailed Warning, retried, counted.
TEST_F(ExpandTest, AFailedFlexPVUpdateIsAWarningAndRetried) {
  const uint64_t failed0 = expandOps("example/flex", "fail-unknown");
  pv("vol-bad", Source::kFlex, "1Gi", "bad-uid");
  pvc("bad-pvc", "vol-bad", "1Gi", "2Gi", "bad-uid");
  server->prependReactor("patch", "persistentvolumes", [](const testing::Action&) {
    return std::optional(FakeApiServer::errorReply(500, "InternalError", "fake failure"));
  });
  auto r = controller.syncHandler("default/bad-pvc");
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.retry);
  const std::string want =
      "error updating pv for pvc default/bad-pvc: error Patching PV \"vol-bad\" with error : fake failure";
  EXPECT_EQ(r.status.message(), want);
  EXPECT_EQ(events(), std::vector<std::string>{"Warning VolumeResizeFailed " + want});
  auto stored = server->get<PersistentVolumeClaim>("default", "bad-pvc");
  EXPECT_EQ(stored->status.allocatedResourceStatuses.at("storage"), "ControllerResizeInProgress");
  EXPECT_EQ(expandOps("example/flex", "fail-unknown") - failed0, 1u);
}

// Resuming: a claim already ControllerResizeInProgress is expanded to the size it recorded, not its request.
TEST_F(ExpandTest, AnInterruptedFlexExpansionResumesAtTheAllocatedSize) {
  pv("vol-res", Source::kFlex, "1Gi", "res-uid");
  PersistentVolumeClaim c = pvc("res-pvc", "vol-res", "1Gi", "3Gi", "res-uid");
  c.status.allocatedResourceStatuses["storage"] = "ControllerResizeInProgress";
  c.status.allocatedResources["storage"] = qty("2Gi");
  factory.forType<PersistentVolumeClaim>().store().upsert("default/res-pvc", std::make_shared<const PersistentVolumeClaim>(c));
  ASSERT_TRUE(controller.syncHandler("default/res-pvc").status.ok());
  auto volume = server->get<PersistentVolume>("", "vol-res");
  EXPECT_EQ(volume->spec.capacity.at("storage").str(), "2Gi");
}

}  // namespace
}  // namespace kcm::controllers::volume::expand
