// persistentvolume-binder-controller over the fake apiserver: the cases of upstream
// pkg/controller/volume/persistentvolume's binder_test.go, provision_test.go and delete_test.go that decide
// what ends up in the API (phases, claimRef/volumeName, annotations, events), driven through the queue handlers.
#include <gtest/gtest.h>

#include <filesystem>

#include "api/gen/core_v1_json.h"
#include "api/gen/storage_v1_json.h"
#include "client/events.h"
#include "controllers/volume/persistentvolume/pv_controller.h"
#include "controllers/volume/persistentvolume/pv_helpers.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::volume::persistentvolume {
namespace {

using testing::FakeApiServer;
using namespace std::chrono_literals;

api::Quantity qty(const char* s) { return api::Quantity::parse(s).value(); }

class PVBinderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    const std::vector<std::string> verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
    server->addResource({"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, verbs, {"status"}});
    server->addResource({"", "v1", "persistentvolumes", "PersistentVolume", false, verbs, {"status"}});
    server->addResource({"storage.k8s.io", "v1", "storageclasses", "StorageClass", false, verbs, {}});
  }
  std::unique_ptr<PersistentVolumeController> make(ControllerParameters p = {}) {
    auto c = std::make_unique<PersistentVolumeController>(
        server->client(), broadcaster.newRecorder("persistentvolume-controller"),
        factory.forType<PersistentVolume>(), factory.forType<PersistentVolumeClaim>(),
        factory.forType<StorageClass>(), factory.forType<Pod>(), factory.forType<Node>(), p, clock);
    c->initializeCaches();
    return c;
  }
  PersistentVolume pv(const std::string& name, const char* size, std::vector<std::string> modes = {"ReadWriteOnce"},
                      const std::string& cls = "", const std::string& policy = "Retain") {
    PersistentVolume v;
    v.metadata.name = name;
    v.spec.capacity["storage"] = qty(size);
    v.spec.accessModes.assign(modes.begin(), modes.end());
    v.spec.storageClassName = cls;
    v.spec.persistentVolumeReclaimPolicy = policy;
    v.spec.csi.emplace().driver = "example.csi.k8s.io";
    v.spec.csi->volumeHandle = name;
    v.status.phase = "Available";
    return v;
  }
  PersistentVolumeClaim pvc(const std::string& name, const char* size, std::optional<std::string> cls = "") {
    PersistentVolumeClaim c;
    c.metadata.namespace_ = "ns";
    c.metadata.name = name;
    c.metadata.uid = "uid-" + name;
    c.spec.accessModes = {"ReadWriteOnce"};
    c.spec.resources.requests["storage"] = qty(size);
    c.spec.storageClassName = std::move(cls);
    c.status.phase = "Pending";
    return c;
  }
  StorageClass storageClass(const std::string& name, const std::string& provisioner,
                            const std::string& mode = "Immediate") {
    StorageClass s;
    s.metadata.name = name;
    s.provisioner = provisioner;
    s.reclaimPolicy = "Delete";
    s.volumeBindingMode = mode;
    return s;
  }
  // Objects go to the server and to the informer's cache, as the informer would deliver them.
  template <class T>
  T put(const T& obj) {
    T stored = server->add(obj);
    factory.forType<T>().store().upsert(informers::metaNamespaceKey(stored), std::make_shared<const T>(stored));
    return stored;
  }
  // The informer catches up with the server (what the watch would deliver).
  void refresh() {
    for (const auto& j : server->listJson("/api/v1/persistentvolumes")) upsertJson<PersistentVolume>(j);
    for (const auto& j : server->listJson("/api/v1/namespaces/ns/persistentvolumeclaims"))
      upsertJson<PersistentVolumeClaim>(j);
  }
  template <class T>
  void upsertJson(const nlohmann::json& j) {
    T o;
    ASSERT_TRUE(fromJson(j.dump(), o).ok());
    factory.forType<T>().store().upsert(informers::metaNamespaceKey(o), std::make_shared<const T>(o));
  }
  void syncClaim(PersistentVolumeController& c, const std::string& name) {
    refresh();
    auto r = c.syncClaimByKey("ns/" + name);
    EXPECT_TRUE(r.status.ok()) << r.status.toString();
  }
  void syncVolume(PersistentVolumeController& c, const std::string& name) {
    refresh();
    auto r = c.syncVolumeByKey(name);
    EXPECT_TRUE(r.status.ok()) << r.status.toString();
  }
  void deleteClaim(const std::string& name) {
    ASSERT_TRUE(client::remove<PersistentVolumeClaim>(*server->client(), "ns", name).ok());
    factory.forType<PersistentVolumeClaim>().store().erase("ns/" + name);
  }
  PersistentVolume getPV(const std::string& n) { return server->get<PersistentVolume>("", n).value(); }
  PersistentVolumeClaim getPVC(const std::string& n) { return server->get<PersistentVolumeClaim>("ns", n).value(); }
  std::vector<std::string> events() {
    broadcaster.flush();
    return server->createdEvents();
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
};

// 1-2: an unbound claim and an Available volume that fits get bound on both sides.
TEST_F(PVBinderTest, AMatchingVolumeAndClaimAreBoundOnBothSides) {
  put(pv("pv-1", "10Gi"));
  put(pvc("claim-1", "1Gi"));
  auto ctrl = make();
  syncClaim(*ctrl, "claim-1");
  const auto v = getPV("pv-1");
  ASSERT_TRUE(v.spec.claimRef);
  EXPECT_EQ(v.spec.claimRef->name, "claim-1");
  EXPECT_EQ(v.spec.claimRef->namespace_, "ns");
  EXPECT_EQ(v.spec.claimRef->uid, "uid-claim-1");
  EXPECT_EQ(v.spec.claimRef->kind, "PersistentVolumeClaim");
  EXPECT_EQ(v.metadata.annotations.at(kAnnBoundByController), "yes");
  EXPECT_EQ(v.status.phase, "Bound");
  const auto c = getPVC("claim-1");
  EXPECT_EQ(c.spec.volumeName, "pv-1");
  EXPECT_EQ(c.metadata.annotations.at(kAnnBindCompleted), "yes");
  EXPECT_EQ(c.metadata.annotations.at(kAnnBoundByController), "yes");
  EXPECT_EQ(c.status.phase, "Bound");
  EXPECT_EQ(c.status.capacity.at("storage").str(), "10Gi");
  EXPECT_EQ(c.status.accessModes, std::vector<std::string>{"ReadWriteOnce"});
  // A second sync finds everything in place and writes nothing.
  server->clearActions();
  syncClaim(*ctrl, "claim-1");
  syncVolume(*ctrl, "pv-1");
  EXPECT_TRUE(server->actionsFor("update", "persistentvolumes").empty());
  EXPECT_TRUE(server->actionsFor("update", "persistentvolumeclaims").empty());
}

// Best fit: the smallest volume that is large enough, of the claim's class, Available, matching the selector.
TEST_F(PVBinderTest, TheSmallestFittingVolumeOfTheClaimsClassIsChosen) {
  put(pv("small", "1Gi"));
  put(pv("medium", "5Gi"));
  put(pv("large", "10Gi"));
  put(pv("other-class", "4Gi", {"ReadWriteOnce"}, "gold"));
  auto released = pv("released", "4Gi");
  released.status.phase = "Released";
  put(released);
  put(pvc("claim", "3Gi"));
  auto ctrl = make();
  syncClaim(*ctrl, "claim");
  EXPECT_EQ(getPVC("claim").spec.volumeName, "medium");
  EXPECT_FALSE(getPV("small").spec.claimRef);
  EXPECT_FALSE(getPV("large").spec.claimRef);
}

// Volumes offering fewer extra access modes win over a smaller one offering more.
TEST_F(PVBinderTest, TheFewestAccessModesWinOverSize) {
  put(pv("rwo-rox", "2Gi", {"ReadWriteOnce", "ReadOnlyMany"}));
  put(pv("rwo", "8Gi", {"ReadWriteOnce"}));
  put(pv("rwx", "1Gi", {"ReadWriteMany"}));
  put(pvc("claim", "1Gi"));
  auto ctrl = make();
  syncClaim(*ctrl, "claim");
  EXPECT_EQ(getPVC("claim").spec.volumeName, "rwo");
}

TEST_F(PVBinderTest, ASelectorAndTheVolumeModeNarrowTheChoice) {
  auto labelled = pv("labelled", "9Gi");
  labelled.metadata.labels["tier"] = "fast";
  put(labelled);
  put(pv("plain", "2Gi"));
  auto block = pv("block", "3Gi");
  block.metadata.labels["tier"] = "fast";
  block.spec.volumeMode = "Block";
  put(block);
  auto c = pvc("claim", "1Gi");
  c.spec.selector.emplace().matchLabels["tier"] = "fast";
  put(c);
  auto ctrl = make();
  syncClaim(*ctrl, "claim");
  EXPECT_EQ(getPVC("claim").spec.volumeName, "labelled");
}

// 1-1: nothing fits and no class: Pending and a FailedBinding event.
TEST_F(PVBinderTest, NoVolumeAndNoClassLeavesTheClaimPendingWithAnEvent) {
  put(pv("tiny", "1Mi"));
  put(pvc("claim", "1Gi"));
  auto ctrl = make();
  syncClaim(*ctrl, "claim");
  EXPECT_EQ(getPVC("claim").status.phase, "Pending");
  EXPECT_EQ(events(), std::vector<std::string>{
                          "Normal FailedBinding no persistent volumes available for this claim and no storage class is set"});
}

// A pre-bound volume (claimRef without UID) goes to its claim even when a better one exists.
TEST_F(PVBinderTest, APreBoundVolumeIsBoundToItsClaim) {
  put(pv("best", "1Gi"));
  auto reserved = pv("reserved", "50Gi");
  reserved.spec.claimRef.emplace();
  reserved.spec.claimRef->namespace_ = "ns";
  reserved.spec.claimRef->name = "claim";
  put(reserved);
  put(pvc("claim", "1Gi"));
  auto ctrl = make();
  syncClaim(*ctrl, "claim");
  EXPECT_EQ(getPVC("claim").spec.volumeName, "reserved");
  const auto v = getPV("reserved");
  EXPECT_EQ(v.spec.claimRef->uid, "uid-claim");
  EXPECT_FALSE(v.metadata.annotations.contains(kAnnBoundByController)) << "bound by the user";
}

// 2-x: a claim naming a volume: too small is a VolumeMismatch; someone else's is FailedBinding; free binds.
TEST_F(PVBinderTest, AClaimNamingItsVolume) {
  put(pv("small", "1Mi"));
  auto taken = pv("taken", "5Gi");
  taken.spec.claimRef.emplace();
  taken.spec.claimRef->namespace_ = "ns", taken.spec.claimRef->name = "someone", taken.spec.claimRef->uid = "u";
  taken.status.phase = "Bound";
  put(taken);
  put(pv("free", "5Gi"));
  auto a = pvc("wants-small", "1Gi");
  a.spec.volumeName = "small";
  put(a);
  auto b = pvc("wants-taken", "1Gi");
  b.spec.volumeName = "taken";
  put(b);
  auto c = pvc("wants-free", "1Gi");
  c.spec.volumeName = "free";
  put(c);
  auto d = pvc("wants-missing", "1Gi");
  d.spec.volumeName = "nowhere";
  put(d);
  auto ctrl = make();
  for (const char* n : {"wants-small", "wants-taken", "wants-free", "wants-missing"}) syncClaim(*ctrl, n);
  EXPECT_EQ(getPVC("wants-small").status.phase, "Pending");
  EXPECT_EQ(getPVC("wants-taken").status.phase, "Pending");
  EXPECT_EQ(getPVC("wants-missing").status.phase, "Pending");
  EXPECT_EQ(getPVC("wants-free").status.phase, "Bound");
  EXPECT_EQ(getPV("free").spec.claimRef->name, "wants-free");
  EXPECT_TRUE(getPV("free").metadata.annotations.contains(kAnnBoundByController));
  EXPECT_FALSE(getPVC("wants-free").metadata.annotations.contains(kAnnBoundByController)) << "the user named it";
  EXPECT_EQ(events(), (std::vector<std::string>{
                          "Warning VolumeMismatch Cannot bind to requested volume \"small\": requested PV is too small",
                          "Warning FailedBinding volume \"taken\" already bound to a different claim."}));
}

// 3-x: a bound claim whose volume is gone or bound elsewhere is Lost.
TEST_F(PVBinderTest, ABoundClaimThatLostItsVolumeIsLost) {
  auto gone = pvc("gone", "1Gi");
  gone.spec.volumeName = "missing";
  gone.metadata.annotations[kAnnBindCompleted] = "yes";
  gone.status.phase = "Bound";
  put(gone);
  auto misbound = pvc("misbound", "1Gi");
  misbound.spec.volumeName = "elsewhere";
  misbound.metadata.annotations[kAnnBindCompleted] = "yes";
  misbound.status.phase = "Bound";
  put(misbound);
  auto v = pv("elsewhere", "1Gi");
  v.spec.claimRef.emplace();
  v.spec.claimRef->namespace_ = "ns", v.spec.claimRef->name = "other", v.spec.claimRef->uid = "other-uid";
  v.status.phase = "Bound";
  put(v);
  auto ctrl = make();
  syncClaim(*ctrl, "gone");
  syncClaim(*ctrl, "misbound");
  EXPECT_EQ(getPVC("gone").status.phase, "Lost");
  EXPECT_EQ(getPVC("misbound").status.phase, "Lost");
  EXPECT_EQ(events(), (std::vector<std::string>{
                          "Warning ClaimLost Bound claim has lost its PersistentVolume. Data on the volume is lost!",
                          "Warning ClaimMisbound Two claims are bound to the same volume, this one is bound incorrectly"}));
}

// 4-x and delete_test: the claim goes; Retain is Released, an external deleter is waited for, NFS cannot be deleted.
TEST_F(PVBinderTest, AVolumeWhoseClaimIsGoneIsReleasedAndReclaimedByPolicy) {
  put(pv("retain", "1Gi"));
  put(pv("delete-csi", "1Gi", {"ReadWriteOnce"}, "", "Delete"));
  auto nfs = pv("delete-nfs", "1Gi", {"ReadWriteOnce"}, "", "Delete");
  nfs.spec.csi.reset();
  nfs.spec.nfs.emplace().server = "nfs.example";
  nfs.spec.nfs->path = "/x";
  put(nfs);
  for (const char* n : {"retain", "delete-csi", "delete-nfs"}) {
    auto c = pvc(std::string("c-") + n, "1Gi");
    c.spec.volumeName = n;
    put(c);
  }
  auto ctrl = make();
  for (const char* n : {"c-retain", "c-delete-csi", "c-delete-nfs"}) syncClaim(*ctrl, n);
  for (const char* n : {"retain", "delete-csi", "delete-nfs"}) ASSERT_EQ(getPV(n).status.phase, "Bound") << n;
  for (const char* n : {"c-retain", "c-delete-csi", "c-delete-nfs"}) {
    deleteClaim(n);
    EXPECT_TRUE(ctrl->syncClaimByKey(std::string("ns/") + n).status.ok());
  }
  for (const char* n : {"retain", "delete-csi", "delete-nfs"}) syncVolume(*ctrl, n);
  EXPECT_EQ(getPV("retain").status.phase, "Released");
  EXPECT_EQ(getPV("delete-csi").status.phase, "Released") << "its external deleter takes it from here";
  EXPECT_EQ(getPV("delete-nfs").status.phase, "Failed");
  EXPECT_TRUE(server->actionsFor("delete", "persistentvolumes").empty());
  EXPECT_EQ(events(), std::vector<std::string>{
                          "Warning VolumeFailedDelete error getting deleter volume plugin for volume \"delete-nfs\": no "
                          "deletable volume plugin matched"});
}

// An unknown reclaim policy fails the volume.
TEST_F(PVBinderTest, AnUnknownReclaimPolicyFailsTheVolume) {
  auto v = pv("odd", "1Gi", {"ReadWriteOnce"}, "", "Shred");
  v.spec.claimRef.emplace();
  v.spec.claimRef->namespace_ = "ns", v.spec.claimRef->name = "gone", v.spec.claimRef->uid = "gone-uid";
  v.status.phase = "Bound";
  put(v);
  auto ctrl = make();
  syncVolume(*ctrl, "odd");
  EXPECT_EQ(getPV("odd").status.phase, "Failed");
  EXPECT_EQ(events(), std::vector<std::string>{
                          "Warning VolumeUnknownReclaimPolicy Volume has unrecognized PersistentVolumeReclaimPolicy"});
}

// provision_test: an external provisioner gets the claim annotated and an ExternalProvisioning event.
TEST_F(PVBinderTest, AClaimOfAnExternalProvisionersClassIsHandedToIt) {
  put(storageClass("ext", "example.com/provisioner"));
  put(pvc("claim", "1Gi", "ext"));
  auto ctrl = make();
  syncClaim(*ctrl, "claim");
  const auto c = getPVC("claim");
  EXPECT_EQ(c.metadata.annotations.at(kAnnStorageProvisioner), "example.com/provisioner");
  EXPECT_EQ(c.metadata.annotations.at(kAnnBetaStorageProvisioner), "example.com/provisioner");
  EXPECT_TRUE(c.spec.volumeName.empty());
  EXPECT_EQ(events(), std::vector<std::string>{
                          "Normal ExternalProvisioning Waiting for a volume to be created either by the external "
                          "provisioner 'example.com/provisioner' or manually by the system administrator. If volume "
                          "creation is delayed, please verify that the provisioner is running and correctly registered."});
}

// A migrated in-tree provisioner is handed to its CSI driver (the claim then names the driver, so no migrated-to).
TEST_F(PVBinderTest, AMigratedInTreeProvisionerGoesToItsCSIDriver) {
  put(storageClass("ebs", "kubernetes.io/aws-ebs"));
  put(pvc("claim", "1Gi", "ebs"));
  auto ctrl = make();
  syncClaim(*ctrl, "claim");
  const auto c = getPVC("claim");
  EXPECT_EQ(c.metadata.annotations.at(kAnnStorageProvisioner), "ebs.csi.aws.com");
  EXPECT_FALSE(c.metadata.annotations.contains(kAnnMigratedTo));
}

// A claim that names an in-tree provisioner gets pv.kubernetes.io/migrated-to before anything else.
TEST_F(PVBinderTest, AClaimAnnotatedWithAMigratedProvisionerGetsMigratedTo) {
  auto c = pvc("claim", "1Gi", "gone-class");
  c.metadata.annotations[kAnnStorageProvisioner] = "kubernetes.io/gce-pd";
  put(c);
  auto ctrl = make();
  syncClaim(*ctrl, "claim");
  EXPECT_EQ(getPVC("claim").metadata.annotations.at(kAnnMigratedTo), "pd.csi.storage.gke.io");
}

// An unknown kubernetes.io/ provisioner, and a missing class, are ProvisioningFailed.
TEST_F(PVBinderTest, AnUnknownInTreeProvisionerIsProvisioningFailed) {
  put(storageClass("none", "kubernetes.io/no-provisioner"));
  put(pvc("claim", "1Gi", "none"));
  put(pvc("classless", "1Gi", "does-not-exist"));
  auto ctrl = make();
  syncClaim(*ctrl, "claim");
  syncClaim(*ctrl, "classless");
  EXPECT_EQ(events(), (std::vector<std::string>{
                          "Warning ProvisioningFailed no volume plugin matched name: kubernetes.io/no-provisioner",
                          "Warning ProvisioningFailed storageclass.storage.k8s.io \"does-not-exist\" not found"}));
}

// WaitForFirstConsumer: no binding or provisioning until the scheduler picks a node.
TEST_F(PVBinderTest, WaitForFirstConsumerWaitsForTheScheduler) {
  put(storageClass("late", "example.com/provisioner", "WaitForFirstConsumer"));
  put(pv("fits", "5Gi", {"ReadWriteOnce"}, "late"));
  put(pvc("claim", "1Gi", "late"));
  auto ctrl = make();
  syncClaim(*ctrl, "claim");
  EXPECT_TRUE(getPVC("claim").spec.volumeName.empty());
  Pod pod;
  pod.metadata.namespace_ = "ns", pod.metadata.name = "user";
  pod.spec.volumes.emplace_back().name = "data";
  pod.spec.volumes.back().persistentVolumeClaim.emplace().claimName = "claim";
  put(pod);
  syncClaim(*ctrl, "claim");
  auto c = getPVC("claim");
  c.metadata.annotations[kAnnSelectedNode] = "node-1";
  ASSERT_TRUE(client::update<PersistentVolumeClaim>(*server->client(), c).ok());
  syncClaim(*ctrl, "claim");
  EXPECT_EQ(getPVC("claim").metadata.annotations.at(kAnnStorageProvisioner), "example.com/provisioner");
  EXPECT_TRUE(getPVC("claim").spec.volumeName.empty()) << "the scheduler binds unbound volumes";
  auto ev = events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0], "Normal WaitForFirstConsumer waiting for first consumer to be created before binding");
  EXPECT_EQ(ev[1], "Normal WaitForPodScheduled waiting for pod user to be scheduled");
  EXPECT_EQ(ev[2].rfind("Normal ExternalProvisioning ", 0), 0u);
}

// A claim with no class gets the newest default class.
TEST_F(PVBinderTest, AClaimWithoutAClassGetsTheDefaultOne) {
  auto older = storageClass("older", "example.com/a");
  older.metadata.annotations[kAnnIsDefaultStorageClass] = "true";
  older.metadata.creationTimestamp = api::Time::fromUnix(1000);
  put(older);
  auto newer = storageClass("newer", "example.com/b");
  newer.metadata.annotations[kAnnBetaIsDefaultStorageClass] = "true";
  newer.metadata.creationTimestamp = api::Time::fromUnix(2000);
  put(newer);
  put(storageClass("not-default", "example.com/c"));
  put(pvc("claim", "1Gi", std::nullopt));
  auto ctrl = make();
  syncClaim(*ctrl, "claim");
  EXPECT_EQ(getPVC("claim").spec.storageClassName.value_or(""), "newer");
}

// The hostPath provisioner (--enable-hostpath-provisioner) creates the volume; Delete removes it again.
TEST_F(PVBinderTest, TheHostPathProvisionerCreatesAndDeletesVolumes) {
  put(storageClass("hp", "kubernetes.io/host-path"));
  put(pvc("claim", "1Gi", "hp"));
  ControllerParameters p;
  p.enableHostPathProvisioning = true;
  auto ctrl = make(p);
  syncClaim(*ctrl, "claim");
  auto v = server->get<PersistentVolume>("", "pvc-uid-claim");
  ASSERT_TRUE(v.has_value());
  ASSERT_TRUE(v->spec.hostPath);
  const std::string dir = v->spec.hostPath->path;
  EXPECT_EQ(dir.rfind("/tmp/hostpath_pv/", 0), 0u);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_EQ(v->metadata.annotations.at(kAnnDynamicallyProvisioned), "kubernetes.io/host-path");
  EXPECT_EQ(v->metadata.finalizers, std::vector<std::string>{"kubernetes.io/pv-controller"});
  EXPECT_EQ(v->spec.claimRef->uid, "uid-claim");
  EXPECT_EQ(v->spec.storageClassName, "hp");
  EXPECT_EQ(v->spec.persistentVolumeReclaimPolicy, "Delete");
  syncVolume(*ctrl, "pvc-uid-claim");
  syncClaim(*ctrl, "claim");
  EXPECT_EQ(getPVC("claim").spec.volumeName, "pvc-uid-claim");
  deleteClaim("claim");
  EXPECT_TRUE(ctrl->syncClaimByKey("ns/claim").status.ok());
  syncVolume(*ctrl, "pvc-uid-claim");
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_EQ(server->actionsFor("delete", "persistentvolumes").size(), 1u);
  EXPECT_FALSE(server->get<PersistentVolume>("", "pvc-uid-claim").has_value() &&
               !server->get<PersistentVolume>("", "pvc-uid-claim")->metadata.deletionTimestamp);
  auto ev = events();
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev[0], "Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-claim using kubernetes.io/host-path");
}

// Without the flag the hostPath provisioner refuses.
TEST_F(PVBinderTest, TheHostPathProvisionerIsOffByDefault) {
  put(storageClass("hp", "kubernetes.io/host-path"));
  put(pvc("claim", "1Gi", "hp"));
  auto ctrl = make();
  syncClaim(*ctrl, "claim");
  EXPECT_FALSE(server->get<PersistentVolume>("", "pvc-uid-claim").has_value());
  EXPECT_EQ(events(), std::vector<std::string>{
                          "Warning ProvisioningFailed Failed to create provisioner: provisioning in volume plugin "
                          "\"kubernetes.io/host-path\" is disabled"});
}

// A stale informer copy (older resourceVersion than the controller saved) is ignored.
TEST_F(PVBinderTest, AStaleVersionFromTheInformerIsIgnored) {
  auto stale = put(pv("pv-1", "10Gi"));
  put(pvc("claim-1", "1Gi"));
  auto ctrl = make();
  syncClaim(*ctrl, "claim-1");
  server->clearActions();
  factory.forType<PersistentVolume>().store().upsert("pv-1", std::make_shared<const PersistentVolume>(stale));
  EXPECT_TRUE(ctrl->syncVolumeByKey("pv-1").status.ok());
  EXPECT_TRUE(server->actionsFor("update", "persistentvolumes").empty()) << "the Available copy must not be acted on";
}

// recyclerclient: a Recycle volume whose claim is gone is scrubbed by a recycler pod; its success makes the volume
// Available again, its failure marks the volume Failed.
TEST_F(PVBinderTest, ARecycledVolumeIsScrubbedByARecyclerPodAndAvailableAgain) {
  for (const char* n : {"hp", "nfs"}) {
    auto v = pv(n, "3Gi", {"ReadWriteOnce"}, "", "Recycle");
    v.spec.csi.reset();
    if (std::string(n) == "hp") v.spec.hostPath.emplace().path = "/tmp/scrub-me";
    else v.spec.nfs.emplace().server = "nfs.example", v.spec.nfs->path = "/export";
    put(v);
    auto c = pvc(std::string("c-") + n, "1Gi");
    c.spec.volumeName = n;
    put(c);
  }
  auto ctrl = make();
  for (const char* n : {"c-hp", "c-nfs"}) syncClaim(*ctrl, n);
  for (const char* n : {"c-hp", "c-nfs"}) {
    deleteClaim(n);
    EXPECT_TRUE(ctrl->syncClaimByKey(std::string("ns/") + n).status.ok());
  }
  for (const char* n : {"hp", "nfs"}) syncVolume(*ctrl, n);
  auto hpPod = server->get<Pod>("default", "recycler-for-hp");
  auto nfsPod = server->get<Pod>("default", "recycler-for-nfs");
  ASSERT_TRUE(hpPod && nfsPod);
  EXPECT_EQ(hpPod->spec.volumes.at(0).hostPath->path, "/tmp/scrub-me");
  EXPECT_EQ(hpPod->spec.activeDeadlineSeconds.value_or(0), 90) << "3 Gi at 30 s per Gi beats the 60 s minimum";
  EXPECT_EQ(nfsPod->spec.activeDeadlineSeconds.value_or(0), 300);
  EXPECT_EQ(nfsPod->spec.volumes.at(0).nfs->server, "nfs.example");
  EXPECT_EQ(hpPod->spec.containers.at(0).volumeMounts.at(0).mountPath, "/scrub");
  EXPECT_EQ(hpPod->spec.restartPolicy, "Never");
  EXPECT_EQ(getPV("hp").status.phase, "Released") << "while the pod scrubs";
  hpPod->status.phase = "Succeeded";
  put(*hpPod);
  nfsPod->status.phase = "Failed";
  nfsPod->status.message = "scrub failed";
  put(*nfsPod);
  for (const char* n : {"hp", "nfs"}) syncVolume(*ctrl, n);
  EXPECT_EQ(getPV("hp").status.phase, "Available");
  EXPECT_FALSE(getPV("hp").spec.claimRef) << "bound by the controller: the claimRef goes";
  EXPECT_EQ(getPV("nfs").status.phase, "Failed");
  EXPECT_FALSE(server->get<Pod>("default", "recycler-for-hp").has_value());
  EXPECT_FALSE(server->get<Pod>("default", "recycler-for-nfs").has_value());
  auto ev = events();
  EXPECT_NE(std::find(ev.begin(), ev.end(), "Normal VolumeRecycled Volume recycled"), ev.end());
  EXPECT_NE(std::find(ev.begin(), ev.end(),
                      "Warning VolumeFailedRecycle Recycle failed: failed to recycle volume: scrub failed"),
            ev.end());
}

// A Recycle volume of a type with no recycler fails at once.
TEST_F(PVBinderTest, AVolumeWithoutARecyclerFailsToRecycle) {
  auto v = pv("csi", "1Gi", {"ReadWriteOnce"}, "", "Recycle");
  v.spec.claimRef.emplace();
  v.spec.claimRef->namespace_ = "ns", v.spec.claimRef->name = "gone", v.spec.claimRef->uid = "gone-uid";
  v.status.phase = "Bound";
  put(v);
  auto ctrl = make();
  syncVolume(*ctrl, "csi");
  EXPECT_EQ(getPV("csi").status.phase, "Failed");
  EXPECT_EQ(events(), std::vector<std::string>{"Warning VolumeFailedRecycle No recycler plugin found for the volume!"});
}

TEST(OperationBackoffTest, AFailedOperationWaitsBeforeItRunsAgain) {
  FakeClock clock;
  OperationBackoff ops(clock);
  EXPECT_TRUE(ops.mayRun("delete-x"));
  ops.done("delete-x", true);
  EXPECT_FALSE(ops.mayRun("delete-x"));
  clock.advance(500ms);
  EXPECT_TRUE(ops.mayRun("delete-x"));
  ops.done("delete-x", true);
  clock.advance(600ms);
  EXPECT_FALSE(ops.mayRun("delete-x")) << "the wait doubled to 1 s";
  clock.advance(400ms);
  EXPECT_TRUE(ops.mayRun("delete-x"));
  ops.done("delete-x", false);
  EXPECT_TRUE(ops.mayRun("delete-x"));
  EXPECT_TRUE(ops.mayRun("other"));
}

}  // namespace
}  // namespace kcm::controllers::volume::persistentvolume
