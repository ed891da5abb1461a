// persistentvolumeclaim-protection-controller on the real cluster, as upstream test/e2e/storage/pvc_protection.go
// checks it: a new PVC gets kubernetes.io/pvc-protection, a PVC no pod uses goes at once when deleted, a PVC a
// running pod uses stays (deletionTimestamp set) until the pod is gone. No binder runs here, so pods are placed
// on a KWOK node with spec.nodeName (the scheduler would wait for the claim to bind), and the Unused condition,
// which only Bound claims carry, is checked after the test sets the phase through the status subresource.
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class PVCProtection : public SoloKcmSuite<PVCProtection> {
 public:
  static constexpr const char* kControllers = "persistentvolumeclaim-protection-controller";
  static constexpr const char* kLogName = "kcm-pvc-protection";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void pvc(const std::string& name) {
    apply(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + name + R"(","namespace":")" +
          ns() + R"("},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"",)"
          R"("resources":{"requests":{"storage":"1Gi"}}}})");
  }
  void pod(const std::string& name, const std::string& claim) {
    apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","namespace":")" + ns() +
          R"("},"spec":{"nodeName":"kwok-node-0","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}],)"
          R"("volumes":[{"name":"data","persistentVolumeClaim":{"claimName":")" + claim + R"("}}]}})");
  }
  std::string field(const std::string& kind, const std::string& name, const std::string& path) {
    return kubectl({"get", kind, name, "-n", ns(), "-o", "jsonpath={" + path + "}"}).out;
  }
  bool exists(const std::string& kind, const std::string& name) {
    return kubectl({"get", kind, name, "-n", ns(), "-o", "name"}).ok();
  }
  bool hasFinalizer(const std::string& name) {
    return field("pvc", name, ".metadata.finalizers").find("kubernetes.io/pvc-protection") != std::string::npos;
  }
  std::string unused(const std::string& name) {
    return field("pvc", name, R"(.status.conditions[?(@.type=="Unused")].status)") + "/" +
           field("pvc", name, R"(.status.conditions[?(@.type=="Unused")].reason)");
  }
  void removePod(const std::string& name) {
    ExecResult r = kubectl({"delete", "pod", name, "-n", ns(), "--grace-period=0", "--force", "--wait=false"});
    ASSERT_TRUE(r.ok()) << r.err;
  }
};

// "Verify \"immediate\" deletion of a PVC that is not in active use by a pod".
TEST_F(PVCProtection, AnUnusedPVCGetsTheFinalizerAndGoesWhenDeleted) {
  pvc("unused");
  ASSERT_TRUE(waitFor([&] { return hasFinalizer("unused"); }, 30s)) << field("pvc", "unused", ".metadata");
  ExecResult r = kubectl({"delete", "pvc", "unused", "-n", ns(), "--wait=false"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] { return !exists("pvc", "unused"); }, 30s)) << field("pvc", "unused", ".metadata");
}

// "Verify that PVC in active use by a pod is not removed immediately", then removed once the pod is deleted.
TEST_F(PVCProtection, APVCInUseByARunningPodStaysUntilThePodIsGone) {
  pvc("used");
  ASSERT_TRUE(waitFor([&] { return hasFinalizer("used"); }, 30s));
  pod("user", "used");
  ASSERT_TRUE(waitFor([&] { return field("pod", "user", ".status.phase") == "Running"; }, 60s))
      << field("pod", "user", ".status");
  ExecResult r = kubectl({"delete", "pvc", "used", "-n", ns(), "--wait=false"});
  ASSERT_TRUE(r.ok()) << r.err;
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(exists("pvc", "used")) << "a PVC a running pod uses lost its finalizer";
  EXPECT_FALSE(field("pvc", "used", ".metadata.deletionTimestamp").empty());
  EXPECT_TRUE(hasFinalizer("used"));
  removePod("user");
  EXPECT_TRUE(waitFor([&] { return !exists("pvc", "used"); }, 60s)) << field("pvc", "used", ".metadata");
}

// The Unused condition (PersistentVolumeClaimUnusedSinceTime, beta at the pin) follows the pods using a Bound claim.
TEST_F(PVCProtection, ABoundPVCCarriesTheUnusedConditionAsPodsComeAndGo) {
  pvc("bound");
  ASSERT_TRUE(waitFor([&] { return hasFinalizer("bound"); }, 30s));
  ExecResult r = kubectl({"patch", "pvc", "bound", "-n", ns(), "--subresource=status", "--type=merge", "-p",
                          R"({"status":{"phase":"Bound"}})"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] { return unused("bound") == "True/NoPodsUsingPVC"; }, 30s)) << unused("bound");
  pod("reader", "bound");
  EXPECT_TRUE(waitFor([&] { return unused("bound") == "False/PodUsingPVC"; }, 30s)) << unused("bound");
  removePod("reader");
  EXPECT_TRUE(waitFor([&] { return unused("bound") == "True/NoPodsUsingPVC"; }, 60s)) << unused("bound");
}

}  // namespace
}  // namespace kcm::e2e
