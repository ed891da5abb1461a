// persistentvolume-binder-controller on the real cluster, as upstream test/e2e/storage/persistent_volumes.go and
// volume_provisioning.go check it without real storage: a PV and a PVC bind (both Bound, claimRef/volumeName),
// the best fit of three PVs is taken, a claim of an external provisioner's class is annotated and waits, a
// WaitForFirstConsumer claim binds only once the real scheduler placed its pod, a Retain PV is Released when its
// claim goes, and a Delete PV goes through the external provisioner's finalizer protocol (this test plays the
// provisioner). PVs are cluster-scoped: each test's use a storage class named after its namespace, so claims of
// other suites never match them. The protection controllers run too (admission puts their finalizers on).
#include <filesystem>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class PVBinder : public SoloKcmSuite<PVBinder> {
 public:
  static constexpr const char* kControllers =
      "persistentvolume-binder-controller,persistentvolume-protection-controller,"
      "persistentvolumeclaim-protection-controller";
  static constexpr const char* kLogName = "kcm-pv-binder";
  static std::vector<std::string> extraFlags() { return {"--pvclaimbinder-sync-period=2s"}; }

 protected:
  void TearDown() override {
    // Cluster-scoped leftovers of this test: claims go first so their volumes are released, not held as Bound.
    kubectl({"delete", "pods", "--all", "-n", ns(), "--grace-period=0", "--force", "--wait=false"});
    kubectl({"delete", "pvc", "--all", "-n", ns(), "--wait=false"});
    for (const auto& n : pvs_) kubectl({"delete", "pv", n, "--wait=false", "--ignore-not-found"});
    SoloKcmSuite<PVBinder>::TearDown();
  }
  std::string cls() { return ns() + "-class"; }
  std::string pvName(const std::string& n) { return ns() + "-" + n; }
  // pv NAME SIZE [policy] [extra metadata JSON] [extra spec JSON]: a CSI volume of this test's class.
  void pv(const std::string& n, const std::string& size, const std::string& policy = "Retain",
          const std::string& meta = "", const std::string& spec = "") {
    pvs_.push_back(pvName(n));
    apply(R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + pvName(n) + "\"" + meta +
          R"(},"spec":{"capacity":{"storage":")" + size + R"("},"accessModes":["ReadWriteOnce"],)"
          R"("persistentVolumeReclaimPolicy":")" + policy + R"(","storageClassName":")" + cls() + "\"" + spec +
          R"(,"csi":{"driver":"example.csi.k8s.io","volumeHandle":")" + pvName(n) + R"("}}})");
  }
  void pvc(const std::string& n, const std::string& size, const std::string& className = "") {
    apply(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + n + R"(","namespace":")" +
          ns() + R"("},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":")" +
          (className.empty() ? cls() : className) + R"(","resources":{"requests":{"storage":")" + size + R"("}}}})");
  }
  void storageClass(const std::string& name, const std::string& provisioner, const std::string& mode) {
    classes_.push_back(name);
    apply(R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":")" + name +
          R"("},"provisioner":")" + provisioner + R"(","volumeBindingMode":")" + mode + R"("})");
  }
  std::string pvField(const std::string& n, const std::string& path) {
    return kubectl({"get", "pv", pvName(n), "-o", "jsonpath={" + path + "}"}).out;
  }
  std::string pvcField(const std::string& n, const std::string& path) {
    return kubectl({"get", "pvc", n, "-n", ns(), "-o", "jsonpath={" + path + "}"}).out;
  }
  bool pvGone(const std::string& n) { return !kubectl({"get", "pv", pvName(n), "-o", "name"}).ok(); }
  Json events(const std::string& object, const std::string& reason) {
    return kubectlJson({"get", "events", "-n", ns(), "--field-selector",
                        "involvedObject.name=" + object + ",reason=" + reason});
  }
  bool bound(const std::string& claim, const std::string& volume) {
    return pvcField(claim, ".status.phase") == "Bound" && pvField(volume, ".status.phase") == "Bound" &&
           pvcField(claim, ".spec.volumeName") == pvName(volume);
  }
  void deleteClaim(const std::string& n) {
    ExecResult r = kubectl({"delete", "pvc", n, "-n", ns(), "--wait=false"});
    ASSERT_TRUE(r.ok()) << r.err;
  }
  ~PVBinder() override {
    for (const auto& c : classes_) kubectl({"delete", "storageclass", c, "--ignore-not-found"});
  }
  std::vector<std::string> pvs_, classes_;
};

// "should create a non-pre-bound PV and PVC: test write access": both sides Bound and pointing at each other.
TEST_F(PVBinder, APVAndAMatchingPVCBind) {
  pv("one", "2Gi");
  pvc("claim", "1Gi");
  ASSERT_TRUE(waitFor([&] { return bound("claim", "one"); }, 30s))
      << pvcField("claim", ".status") << " / " << pvField("one", ".status");
  EXPECT_EQ(pvField("one", ".spec.claimRef.name"), "claim");
  EXPECT_EQ(pvField("one", ".spec.claimRef.namespace"), ns());
  EXPECT_EQ(pvField("one", ".spec.claimRef.uid"), pvcField("claim", ".metadata.uid"));
  EXPECT_EQ(pvField("one", ".metadata.annotations.pv\\.kubernetes\\.io/bound-by-controller"), "yes");
  EXPECT_EQ(pvcField("claim", ".metadata.annotations.pv\\.kubernetes\\.io/bind-completed"), "yes");
  EXPECT_EQ(pvcField("claim", ".status.capacity.storage"), "2Gi");
  EXPECT_EQ(pvcField("claim", ".status.accessModes[0]"), "ReadWriteOnce");
}

// "create 3 PVs and 1 PVC": the smallest volume that fits is the one taken.
TEST_F(PVBinder, TheBestFitOfThreePVsIsTaken) {
  pv("small", "1Gi");
  pv("medium", "5Gi");
  pv("large", "10Gi");
  pvc("claim", "3Gi");
  ASSERT_TRUE(waitFor([&] { return bound("claim", "medium"); }, 30s)) << pvcField("claim", ".spec.volumeName");
  EXPECT_EQ(pvField("small", ".status.phase"), "Available");
  EXPECT_EQ(pvField("large", ".status.phase"), "Available");
}

// A class with an external provisioner: the claim gets the provisioner annotations and waits, with an event.
TEST_F(PVBinder, AClaimOfAnExternalProvisionerIsAnnotatedAndWaits) {
  storageClass(ns() + "-ext", "example.com/fake-provisioner", "Immediate");
  pvc("dynamic", "1Gi", ns() + "-ext");
  ASSERT_TRUE(waitFor([&] {
    return pvcField("dynamic", ".metadata.annotations.volume\\.kubernetes\\.io/storage-provisioner") ==
           "example.com/fake-provisioner";
  }, 30s)) << pvcField("dynamic", ".metadata");
  EXPECT_EQ(pvcField("dynamic", ".metadata.annotations.volume\\.beta\\.kubernetes\\.io/storage-provisioner"),
            "example.com/fake-provisioner");
  Json ev;
  ASSERT_TRUE(waitFor([&] { return !(ev = events("dynamic", "ExternalProvisioning"))["items"].empty(); }, 30s));
  EXPECT_EQ(ev["items"][0]["type"], "Normal");
  EXPECT_EQ(ev["items"][0]["source"]["component"], "persistentvolume-controller");
  EXPECT_EQ(ev["items"][0]["message"],
            "Waiting for a volume to be created either by the external provisioner 'example.com/fake-provisioner' or "
            "manually by the system administrator. If volume creation is delayed, please verify that the provisioner "
            "is running and correctly registered.");
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(pvcField("dynamic", ".status.phase"), "Pending");
}

// WaitForFirstConsumer: nothing binds until a pod using the claim is scheduled; then the scheduler binds the PV
// and this controller completes the claim.
TEST_F(PVBinder, WaitForFirstConsumerBindsOnlyOnceAPodIsScheduled) {
  const std::string late = ns() + "-late";
  storageClass(late, "kubernetes.io/no-provisioner", "WaitForFirstConsumer");
  pvs_.push_back(pvName("local"));
  apply(R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + pvName("local") +
        R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],)"
        R"("persistentVolumeReclaimPolicy":"Retain","storageClassName":")" + late +
        R"(","csi":{"driver":"example.csi.k8s.io","volumeHandle":"local"}}})");
  pvc("waiting", "1Gi", late);
  Json ev;
  ASSERT_TRUE(waitFor([&] { return !(ev = events("waiting", "WaitForFirstConsumer"))["items"].empty(); }, 30s));
  EXPECT_EQ(ev["items"][0]["message"], "waiting for first consumer to be created before binding");
  EXPECT_EQ(pvcField("waiting", ".status.phase"), "Pending");
  EXPECT_EQ(pvField("local", ".status.phase"), "Available");
  apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"consumer","namespace":")" + ns() +
        R"("},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}],)"
        R"("tolerations":[{"operator":"Exists"}],)"
        R"("volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"waiting"}}]}})");
  ASSERT_TRUE(waitFor([&] { return bound("waiting", "local"); }, 60s))
      << pvcField("waiting", ".status") << " / " << pvField("local", ".spec.claimRef");
  EXPECT_TRUE(waitFor([&] {
    return !kubectl({"get", "pod", "consumer", "-n", ns(), "-o", "jsonpath={.spec.nodeName}"}).out.empty();
  }, 60s));
}

// "should test that deleting a PVC before the pod does not cause pod deletion to fail": Retain → Released.
TEST_F(PVBinder, DeletingTheClaimOfARetainPVReleasesIt) {
  pv("kept", "1Gi", "Retain");
  pvc("claim", "1Gi");
  ASSERT_TRUE(waitFor([&] { return bound("claim", "kept"); }, 30s));
  deleteClaim("claim");
  EXPECT_TRUE(waitFor([&] { return pvField("kept", ".status.phase") == "Released"; }, 30s))
      << pvField("kept", ".status");
  EXPECT_FALSE(pvGone("kept"));
  EXPECT_EQ(pvField("kept", ".spec.claimRef.name"), "claim") << "a released volume keeps its claimRef";
}

// Delete through an external provisioner: the PV is Released, the provisioner (this test) deletes its storage
// and lets the PV go by removing its finalizer; the controller never deletes it itself.
TEST_F(PVBinder, DeletePolicyCompletesThroughTheExternalProvisioner) {
  pv("dyn", "1Gi", "Delete",
     R"(,"annotations":{"pv.kubernetes.io/provisioned-by":"example.com/fake-provisioner"},)"
     R"("finalizers":["external-provisioner.volume.kubernetes.io/finalizer"])");
  pvc("claim", "1Gi");
  ASSERT_TRUE(waitFor([&] { return bound("claim", "dyn"); }, 30s));
  EXPECT_NE(pvField("dyn", ".metadata.finalizers").find("external-provisioner.volume.kubernetes.io/finalizer"),
            std::string::npos) << "an external provisioner's finalizer is its own";
  deleteClaim("claim");
  ASSERT_TRUE(waitFor([&] { return pvField("dyn", ".status.phase") == "Released"; }, 30s)) << pvField("dyn", ".status");
  std::this_thread::sleep_for(3s);
  ASSERT_FALSE(pvGone("dyn")) << "the controller left deletion to the external provisioner";
  // The fake provisioner's part: delete the PV, then drop its finalizer.
  ASSERT_TRUE(kubectl({"delete", "pv", pvName("dyn"), "--wait=false"}).ok());
  ASSERT_TRUE(kubectl({"patch", "pv", pvName("dyn"), "--type=json", "-p",
                       R"([{"op":"remove","path":"/metadata/finalizers/0"}])"}).ok() ||
              pvGone("dyn"));
  EXPECT_TRUE(waitFor([&] { return pvGone("dyn"); }, 30s)) << pvField("dyn", ".metadata");
}

// A bound claim whose volume is deleted becomes Lost.
TEST_F(PVBinder, AClaimWhoseVolumeIsDeletedIsLost) {
  pv("doomed", "1Gi");
  pvc("claim", "1Gi");
  ASSERT_TRUE(waitFor([&] { return bound("claim", "doomed"); }, 30s));
  // The pv-protection finalizer holds a Bound PV: force it out as an operator deleting it from etcd would.
  ASSERT_TRUE(kubectl({"delete", "pv", pvName("doomed"), "--wait=false"}).ok());
  ASSERT_TRUE(kubectl({"patch", "pv", pvName("doomed"), "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"}).ok());
  EXPECT_TRUE(waitFor([&] { return pvcField("claim", ".status.phase") == "Lost"; }, 30s)) << pvcField("claim", ".status");
  Json ev;
  EXPECT_TRUE(waitFor([&] { return !(ev = events("claim", "ClaimLost"))["items"].empty(); }, 30s));
  if (!ev["items"].empty())
    EXPECT_EQ(ev["items"][0]["message"], "Bound claim has lost its PersistentVolume. Data on the volume is lost!");
}

// Recycle: the claim goes, a recycler pod (default/recycler-for-<pv>) scrubs the volume; this test plays its
// kubelet and reports it Succeeded; the volume is Available again, unbound.
TEST_F(PVBinder, ARecycledVolumeIsAvailableAgainOnceTheRecyclerPodSucceeds) {
  pvs_.push_back(pvName("recycled"));
  apply(R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + pvName("recycled") +
        R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],)"
        R"("persistentVolumeReclaimPolicy":"Recycle","storageClassName":")" + cls() +
        R"(","hostPath":{"path":"/tmp/)" + pvName("recycled") + R"("}}})");
  pvc("claim", "1Gi");
  ASSERT_TRUE(waitFor([&] { return bound("claim", "recycled"); }, 30s));
  deleteClaim("claim");
  const std::string pod = "recycler-for-" + pvName("recycled");
  const auto podField = [&](const std::string& path) {
    return kubectl({"get", "pod", pod, "-n", "default", "-o", "jsonpath={" + path + "}"}).out;
  };
  ASSERT_TRUE(waitFor([&] { return !podField(".metadata.uid").empty(); }, 30s)) << pvField("recycled", ".status");
  EXPECT_EQ(podField(".spec.volumes[0].hostPath.path"), "/tmp/" + pvName("recycled"));
  EXPECT_EQ(podField(".spec.containers[0].volumeMounts[0].mountPath"), "/scrub");
  EXPECT_EQ(pvField("recycled", ".status.phase"), "Released");
  ExecResult r = kubectl({"patch", "pod", pod, "-n", "default", "--subresource=status", "--type=merge", "-p",
                          R"({"status":{"phase":"Succeeded"}})"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] { return pvField("recycled", ".status.phase") == "Available"; }, 30s))
      << pvField("recycled", ".status");
  EXPECT_EQ(pvField("recycled", ".spec.claimRef"), "");
  EXPECT_TRUE(waitFor([&] { return podField(".metadata.uid").empty(); }, 30s)) << "the recycler pod stayed";
  Json ev = kubectlJson({"get", "events", "-n", "default", "--field-selector",
                         "involvedObject.name=" + pvName("recycled") + ",reason=VolumeRecycled"});
  EXPECT_FALSE(ev["items"].empty());
}

// --enable-hostpath-provisioner: the in-tree hostPath provisioner (test and development only) creates a directory
// under /tmp/hostpath_pv on the controller manager's host and a PV for it; deleting the claim deletes both.
class PVBinderHostPath : public SoloKcmSuite<PVBinderHostPath> {
 public:
  static constexpr const char* kControllers =
      "persistentvolume-binder-controller,persistentvolume-protection-controller,"
      "persistentvolumeclaim-protection-controller";
  static constexpr const char* kLogName = "kcm-pv-binder-hostpath";
  static std::vector<std::string> extraFlags() { return {"--enable-hostpath-provisioner", "--pvclaimbinder-sync-period=2s"}; }

 protected:
  std::string pvcField(const std::string& n, const std::string& path) {
    return kubectl({"get", "pvc", n, "-n", ns(), "-o", "jsonpath={" + path + "}"}).out;
  }
  ~PVBinderHostPath() override { kubectl({"delete", "storageclass", ns() + "-hp", "--ignore-not-found"}); }
};

TEST_F(PVBinderHostPath, AHostPathVolumeIsProvisionedBoundAndDeletedWithItsClaim) {
  apply(R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":")" + ns() +
        R"(-hp"},"provisioner":"kubernetes.io/host-path","reclaimPolicy":"Delete"})");
  apply(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"scratch","namespace":")" + ns() +
        R"("},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":")" + ns() +
        R"(-hp","resources":{"requests":{"storage":"1Gi"}}}})");
  ASSERT_TRUE(waitFor([&] { return pvcField("scratch", ".status.phase") == "Bound"; }, 30s)) << pvcField("scratch", ".status");
  const std::string pv = pvcField("scratch", ".spec.volumeName");
  EXPECT_EQ(pv, "pvc-" + pvcField("scratch", ".metadata.uid"));
  const auto field = [&](const std::string& path) { return kubectl({"get", "pv", pv, "-o", "jsonpath={" + path + "}"}).out; };
  const std::string dir = field(".spec.hostPath.path");
  EXPECT_EQ(dir.rfind("/tmp/hostpath_pv/", 0), 0u) << dir;
  EXPECT_TRUE(std::filesystem::is_directory(dir)) << dir;
  EXPECT_EQ(field(".metadata.annotations.pv\\.kubernetes\\.io/provisioned-by"), "kubernetes.io/host-path");
  EXPECT_NE(field(".metadata.finalizers").find("kubernetes.io/pv-controller"), std::string::npos);
  EXPECT_EQ(field(".spec.persistentVolumeReclaimPolicy"), "Delete");
  Json ev;
  ASSERT_TRUE(waitFor([&] {
    return !(ev = kubectlJson({"get", "events", "-n", ns(), "--field-selector", "reason=ProvisioningSucceeded"}))["items"].empty();
  }, 30s));
  EXPECT_EQ(ev["items"][0]["message"], "Successfully provisioned volume " + pv + " using kubernetes.io/host-path");
  ASSERT_TRUE(kubectl({"delete", "pvc", "scratch", "-n", ns(), "--wait=false"}).ok());
  EXPECT_TRUE(waitFor([&] { return !kubectl({"get", "pv", pv, "-o", "name"}).ok(); }, 60s)) << field(".status");
  EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
}

}  // namespace
}  // namespace kcm::e2e
