// persistentvolume-attach-detach-controller on the real cluster, with this test as the CSI external attacher: a
// pod using a CSI PV on a KWOK node (annotated volumes.kubernetes.io/controller-managed-attach-detach, as a
// kubelet would) gets a VolumeAttachment; node.status.volumesAttached lists the volume once the test marks the
// attachment attached; deleting the pod deletes the attachment and the node stops listing it. A driver whose
// CSIDriver says attachRequired: false gets no attachment. The binder binds the claims (static PVs of a class
// named after the test's namespace).
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

constexpr const char* kDriver = "attach.e2e.csi.k8s.io";
constexpr const char* kNoAttachDriver = "no-attach.e2e.csi.k8s.io";
constexpr const char* kNode = "kwok-node-0";

class AttachDetach : public SoloKcmSuite<AttachDetach> {
 public:
  static constexpr const char* kControllers =
      "persistentvolume-attach-detach-controller,persistentvolume-binder-controller,"
      "persistentvolume-protection-controller,persistentvolumeclaim-protection-controller";
  static constexpr const char* kLogName = "kcm-attachdetach";
  static std::vector<std::string> extraFlags() { return {}; }
  static void SetUpTestSuite() {
    SoloKcmSuite<AttachDetach>::SetUpTestSuite();
    ExecResult r = ::kcm::e2e::kubectl({"annotate", "node", kNode, "--overwrite",
                                  "volumes.kubernetes.io/controller-managed-attach-detach=true"});
    ASSERT_TRUE(r.ok()) << r.err;
  }

 protected:
  void TearDown() override {
    kubectl({"delete", "pods", "--all", "-n", ns(), "--grace-period=0", "--force", "--wait=false"});
    kubectl({"delete", "pvc", "--all", "-n", ns(), "--wait=false"});
    for (const auto& n : pvs_) kubectl({"delete", "pv", n, "--wait=false", "--ignore-not-found"});
    SoloKcmSuite<AttachDetach>::TearDown();
  }
  std::string handle(const std::string& n) { return ns() + "-" + n; }
  // A CSI PV of `driver` and a claim bound to it, used by a pod on the KWOK node.
  void volumeAndPod(const std::string& n, const std::string& driver) {
    const std::string pv = handle(n);
    pvs_.push_back(pv);
    apply(R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + pv +
          R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],)"
          R"("persistentVolumeReclaimPolicy":"Retain","storageClassName":")" + ns() + R"(","csi":{"driver":")" +
          driver + R"(","volumeHandle":")" + pv + R"("}}})");
    apply(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + n + R"(","namespace":")" +
          ns() + R"("},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":")" + ns() +
          R"(","volumeName":")" + pv + R"(","resources":{"requests":{"storage":"1Gi"}}}})");
    ASSERT_TRUE(waitFor([&] {
      return kubectl({"get", "pvc", n, "-n", ns(), "-o", "jsonpath={.status.phase}"}).out == "Bound";
    }, 30s));
    apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + n + R"(","namespace":")" + ns() +
          R"("},"spec":{"nodeName":")" + kNode + R"(","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}],)"
          R"("volumes":[{"name":"data","persistentVolumeClaim":{"claimName":")" + n + R"("}}]}})");
  }
  // The VolumeAttachment of a PV, by its source.
  Json attachmentOf(const std::string& pv) {
    Json list = kubectlJson({"get", "volumeattachments"});
    for (const auto& va : list["items"])
      if (va["spec"]["source"].value("persistentVolumeName", "") == pv) return va;
    return Json();
  }
  bool nodeLists(const std::string& driver, const std::string& pv) {
    const std::string want = std::string("kubernetes.io/csi/") + driver + "^" + pv;
    Json node = kubectlJson({"get", "node", kNode});
    for (const auto& v : node["status"].value("volumesAttached", Json::array()))
      if (v.value("name", "") == want) return true;
    return false;
  }
  std::vector<std::string> pvs_;
};

TEST_F(AttachDetach, APodsCSIVolumeIsAttachedThroughAVolumeAttachmentAndDetachedWithThePod) {
  apply(std::string(R"({"apiVersion":"storage.k8s.io/v1","kind":"CSIDriver","metadata":{"name":")") + kDriver +
        R"("},"spec":{"attachRequired":true}})");
  volumeAndPod("data", kDriver);
  const std::string pv = handle("data");
  Json va;
  ASSERT_TRUE(waitFor([&] { return !(va = attachmentOf(pv)).is_null(); }, 30s)) << "no VolumeAttachment for " << pv;
  EXPECT_EQ(va["spec"]["attacher"], kDriver);
  EXPECT_EQ(va["spec"]["nodeName"], kNode);
  EXPECT_EQ(va["metadata"]["name"].get<std::string>().rfind("csi-", 0), 0u);
  std::this_thread::sleep_for(2s);
  EXPECT_FALSE(nodeLists(kDriver, pv)) << "listed before the attacher reported it attached";
  // The external attacher's part.
  const std::string name = va["metadata"]["name"];
  ExecResult r = kubectl({"patch", "volumeattachment", name, "--subresource=status", "--type=merge", "-p",
                          R"({"status":{"attached":true}})"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] { return nodeLists(kDriver, pv); }, 30s)) << kubectlJson({"get", "node", kNode})["status"].dump();
  Json ev;
  EXPECT_TRUE(waitFor([&] {
    ev = kubectlJson({"get", "events", "-n", ns(), "--field-selector", "reason=SuccessfulAttachVolume"});
    return !ev["items"].empty();
  }, 30s));
  if (!ev["items"].empty()) {
    EXPECT_EQ(ev["items"][0]["message"], "AttachVolume.Attach succeeded for volume \"" + pv + "\" ");
    EXPECT_EQ(ev["items"][0]["source"]["component"], "attachdetach-controller");
  }
  r = kubectl({"delete", "pod", "data", "-n", ns(), "--grace-period=0", "--force", "--wait=false"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] { return attachmentOf(pv).is_null(); }, 60s)) << "the VolumeAttachment stayed";
  EXPECT_TRUE(waitFor([&] { return !nodeLists(kDriver, pv); }, 30s));
}

TEST_F(AttachDetach, ADriverThatNeedsNoAttachGetsNoVolumeAttachment) {
  apply(std::string(R"({"apiVersion":"storage.k8s.io/v1","kind":"CSIDriver","metadata":{"name":")") + kNoAttachDriver +
        R"("},"spec":{"attachRequired":false}})");
  volumeAndPod("plain", kNoAttachDriver);
  ASSERT_TRUE(waitFor([&] {
    return kubectl({"get", "pod", "plain", "-n", ns(), "-o", "jsonpath={.status.phase}"}).out == "Running";
  }, 60s));
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(attachmentOf(handle("plain")).is_null());
}

}  // namespace
}  // namespace kcm::e2e
