// persistentvolume-expander-controller on the real cluster. No binder and no resizer run here: each test binds a
// claim to its PV by hand (the claim's volumeName, the PV's claimRef with the claim's UID, phase Bound and a 1Gi
// capacity through the status subresource) in a StorageClass with allowVolumeExpansion (the apiserver's
// PersistentVolumeClaimResize admission refuses to grow a claim otherwise), then raises the request to 2Gi:
//  - a CSI volume is left to the driver's external resizer: a Normal ExternalExpanding event, nothing written;
//  - an in-tree AWS EBS volume (migrated to CSI) gets volume.kubernetes.io/storage-resizer=ebs.csi.aws.com and
//    its own ExternalExpanding event;
//  - a FlexVolume goes through the controller side of an expansion (upstream's no-op plugin): the PV grows, the
//    claim records 2Gi as allocated and waits for the node (NodeResizePending, FileSystemResizePending).
// PVs and classes are cluster-scoped, so they are named after the test's namespace and removed afterwards
// (admission puts kubernetes.io/pv-protection on PVs and no protection controller runs, so it is taken off).
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class VolumeExpand : public SoloKcmSuite<VolumeExpand> {
 public:
  static constexpr const char* kControllers = "persistentvolume-expander-controller";
  static constexpr const char* kLogName = "kcm-volume-expand";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void TearDown() override {
    for (const auto& n : pvs_) {
      kubectl({"patch", "pv", n, "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
      kubectl({"delete", "pv", n, "--wait=false", "--ignore-not-found"});
    }
    if (classCreated_) kubectl({"delete", "storageclass", cls(), "--ignore-not-found"});
    SoloKcmSuite<VolumeExpand>::TearDown();
  }
  std::string cls() const { return ns() + "-expandable"; }
  std::string pvName(const std::string& claim) const { return ns() + "-" + claim; }
  void storageClass() {
    if (classCreated_) return;
    classCreated_ = true;
    apply(R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":")" + cls() +
          R"("},"provisioner":"example.csi.k8s.io","allowVolumeExpansion":true})");
  }
  // A 1Gi claim Bound to its own 1Gi PV, whose volume source is `sourceJson` (e.g. "\"csi\":{...}").
  void boundClaim(const std::string& claim, const std::string& sourceJson) {
    storageClass();
    apply(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + claim + R"(","namespace":")" +
          ns() + R"("},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":")" + cls() +
          R"(","volumeName":")" + pvName(claim) + R"(","resources":{"requests":{"storage":"1Gi"}}}})");
    const std::string uid = pvcField(claim, ".metadata.uid");
    ASSERT_FALSE(uid.empty());
    pvs_.push_back(pvName(claim));
    apply(R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + pvName(claim) +
          R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],)"
          R"("persistentVolumeReclaimPolicy":"Retain","storageClassName":")" + cls() +
          R"(","claimRef":{"kind":"PersistentVolumeClaim","apiVersion":"v1","namespace":")" + ns() +
          R"(","name":")" + claim + R"(","uid":")" + uid + R"("},)" + sourceJson + "}}");
    ExecResult r = kubectl({"patch", "pvc", claim, "-n", ns(), "--subresource=status", "--type=merge", "-p",
                            R"({"status":{"phase":"Bound","accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"}}})"});
    ASSERT_TRUE(r.ok()) << r.err;
  }
  // Raises the claim's request; retried while the admission plugin's cache has not seen the class yet.
  void grow(const std::string& claim, const std::string& size) {
    ExecResult r;
    ASSERT_TRUE(waitFor([&] {
      r = kubectl({"patch", "pvc", claim, "-n", ns(), "--type=merge", "-p",
                   R"({"spec":{"resources":{"requests":{"storage":")" + size + R"("}}}})"});
      return r.ok();
    }, 30s, 1s)) << r.err;
  }
  std::string pvcField(const std::string& claim, const std::string& path) {
    return kubectl({"get", "pvc", claim, "-n", ns(), "-o", "jsonpath={" + path + "}"}).out;
  }
  std::string pvField(const std::string& claim, const std::string& path) {
    return kubectl({"get", "pv", pvName(claim), "-o", "jsonpath={" + path + "}"}).out;
  }
  Json events(const std::string& object, const std::string& reason) {
    return kubectlJson({"get", "events", "-n", ns(), "--field-selector",
                        "involvedObject.name=" + object + ",reason=" + reason});
  }
  Json waitForEvent(const std::string& object, const std::string& reason) {
    Json ev;
    waitFor([&] {
      ev = events(object, reason);
      return ev.is_object() && !ev["items"].empty();
    }, 30s);
    return ev;
  }

  std::vector<std::string> pvs_;
  bool classCreated_ = false;
};

TEST_F(VolumeExpand, AGrownCSIClaimIsLeftToTheExternalResizerWithAnEvent) {
  boundClaim("csi-claim", R"("csi":{"driver":"example.csi.k8s.io","volumeHandle":"h1"})");
  // Bound at its requested size: nothing to expand, no event.
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(events("csi-claim", "ExternalExpanding")["items"].empty());
  grow("csi-claim", "2Gi");
  Json ev = waitForEvent("csi-claim", "ExternalExpanding");
  ASSERT_FALSE(ev["items"].empty());
  EXPECT_EQ(ev["items"][0]["type"], "Normal");
  EXPECT_EQ(ev["items"][0]["message"], "waiting for an external controller to expand this PVC");
  EXPECT_EQ(ev["items"][0]["source"]["component"], "volume_expand");
  EXPECT_EQ(ev["items"][0]["involvedObject"]["kind"], "PersistentVolumeClaim");
  EXPECT_EQ(ev["items"][0]["involvedObject"]["uid"], pvcField("csi-claim", ".metadata.uid"));
  // The external resizer does the rest: nothing written here.
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(pvcField("csi-claim", ".metadata.annotations.volume\\.kubernetes\\.io/storage-resizer"), "");
  EXPECT_EQ(pvcField("csi-claim", ".status.capacity.storage"), "1Gi");
  EXPECT_EQ(pvcField("csi-claim", ".status.allocatedResources"), "");
  EXPECT_EQ(pvField("csi-claim", ".spec.capacity.storage"), "1Gi");
}

TEST_F(VolumeExpand, AGrownMigratedInTreeClaimGetsTheCSIDriverAsItsResizer) {
  boundClaim("ebs-claim", R"("awsElasticBlockStore":{"volumeID":"vol-0123456789abcdef0","fsType":"ext4"})");
  grow("ebs-claim", "2Gi");
  EXPECT_TRUE(waitFor([&] {
    return pvcField("ebs-claim", ".metadata.annotations.volume\\.kubernetes\\.io/storage-resizer") == "ebs.csi.aws.com";
  }, 30s)) << pvcField("ebs-claim", ".metadata");
  Json ev = waitForEvent("ebs-claim", "ExternalExpanding");
  ASSERT_FALSE(ev["items"].empty());
  EXPECT_EQ(ev["items"][0]["type"], "Normal");
  EXPECT_EQ(ev["items"][0]["message"],
            "CSI migration enabled for kubernetes.io/aws-ebs; waiting for external resizer to expand the pvc");
  EXPECT_EQ(ev["items"][0]["source"]["component"], "volume_expand");
  // Only the annotation: the resizer expands.
  EXPECT_EQ(pvcField("ebs-claim", ".status.capacity.storage"), "1Gi");
  EXPECT_EQ(pvField("ebs-claim", ".spec.capacity.storage"), "1Gi");
}

TEST_F(VolumeExpand, AGrownFlexClaimIsExpandedOnTheControllerSideAndWaitsForTheNode) {
  boundClaim("flex-claim", R"("flexVolume":{"driver":"example.com/flex"})");
  grow("flex-claim", "2Gi");
  EXPECT_TRUE(waitFor([&] { return pvField("flex-claim", ".spec.capacity.storage") == "2Gi"; }, 30s))
      << pvField("flex-claim", ".spec");
  EXPECT_TRUE(waitFor([&] {
    return pvField("flex-claim", ".metadata.annotations.volume\\.alpha\\.kubernetes\\.io/pre-resize-capacity") == "1Gi";
  }, 30s)) << pvField("flex-claim", ".metadata");
  EXPECT_EQ(pvcField("flex-claim", ".metadata.annotations.volume\\.kubernetes\\.io/storage-resizer"), "example.com/flex");
  EXPECT_EQ(pvcField("flex-claim", ".status.allocatedResources.storage"), "2Gi");
  EXPECT_EQ(pvcField("flex-claim", ".status.allocatedResourceStatuses.storage"), "NodeResizePending");
  EXPECT_EQ(pvcField("flex-claim", R"(.status.conditions[?(@.type=="FileSystemResizePending")].status)"), "True");
  EXPECT_EQ(pvcField("flex-claim", R"(.status.conditions[?(@.type=="Resizing")].status)"), "True");
  EXPECT_EQ(pvcField("flex-claim", ".status.capacity.storage"), "1Gi") << "the node has not resized the filesystem";
  EXPECT_TRUE(events("flex-claim", "VolumeResizeFailed")["items"].empty());
}

}  // namespace
}  // namespace kcm::e2e
