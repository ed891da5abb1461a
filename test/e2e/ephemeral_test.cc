// ephemeral-volume-controller on the real cluster, the behaviour upstream's generic ephemeral volume tests
// (test/e2e/storage/testsuites/ephemeral.go, ephemeral_volume.go) rely on without a CSI driver: a pod's ephemeral
// volume gets a PVC "<pod>-<volume>" from its template, controlled by the pod; the garbage collector removes it
// with the pod; a claim deleted under a live pod is created again; a foreign claim of that name is refused with a
// FailedBinding Warning on the pod. Pods are placed on a KWOK node by spec.nodeName (nothing binds the claims).
// The apiserver's StorageObjectInUseProtection admission puts kubernetes.io/pvc-protection on every claim, so
// persistentvolumeclaim-protection-controller runs too, as in any cluster.
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class EphemeralVolume : public SoloKcmSuite<EphemeralVolume> {
 public:
  static constexpr const char* kControllers = "ephemeral-volume-controller,garbage-collector-controller,persistentvolumeclaim-protection-controller";
  static constexpr const char* kLogName = "kcm-ephemeral-volume";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void pod(const std::string& name) {
    apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","namespace":")" + ns() +
          R"("},"spec":{"nodeName":"kwok-node-1","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}],)"
          R"("volumes":[{"name":"scratch","ephemeral":{"volumeClaimTemplate":{"metadata":{"labels":{"app":"db"}},)"
          R"("spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"fast",)"
          R"("resources":{"requests":{"storage":"1Gi"}}}}}}]}})");
  }
  std::string field(const std::string& kind, const std::string& name, const std::string& path) {
    return kubectl({"get", kind, name, "-n", ns(), "-o", "jsonpath={" + path + "}"}).out;
  }
  bool exists(const std::string& kind, const std::string& name) {
    return kubectl({"get", kind, name, "-n", ns(), "-o", "name"}).ok();
  }
};

TEST_F(EphemeralVolume, APodGetsItsClaimControlledByItAndTheClaimGoesWithThePod) {
  pod("worker");
  ASSERT_TRUE(waitFor([&] { return exists("pvc", "worker-scratch"); }, 30s));
  const std::string podUID = field("pod", "worker", ".metadata.uid");
  EXPECT_EQ(field("pvc", "worker-scratch", ".metadata.ownerReferences[0].uid"), podUID);
  EXPECT_EQ(field("pvc", "worker-scratch", ".metadata.ownerReferences[0].kind"), "Pod");
  EXPECT_EQ(field("pvc", "worker-scratch", ".metadata.ownerReferences[0].controller"), "true");
  EXPECT_EQ(field("pvc", "worker-scratch", ".metadata.ownerReferences[0].blockOwnerDeletion"), "true");
  EXPECT_EQ(field("pvc", "worker-scratch", ".metadata.labels.app"), "db");
  EXPECT_EQ(field("pvc", "worker-scratch", ".spec.storageClassName"), "fast");
  EXPECT_EQ(field("pvc", "worker-scratch", ".spec.resources.requests.storage"), "1Gi");

  ExecResult r = kubectl({"delete", "pod", "worker", "-n", ns(), "--grace-period=0", "--force", "--wait=false"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] { return !exists("pvc", "worker-scratch"); }, 60s)) << field("pvc", "worker-scratch", ".metadata");
}

// The running pod keeps its claim (pvc-protection), so the test takes the finalizer off itself once the claim is
// being deleted: when the claim is gone, the pod's claim is made again.
TEST_F(EphemeralVolume, AClaimDeletedUnderALivePodIsCreatedAgain) {
  pod("keeper");
  ASSERT_TRUE(waitFor([&] { return exists("pvc", "keeper-scratch"); }, 30s));
  const std::string first = field("pvc", "keeper-scratch", ".metadata.uid");
  ExecResult r = kubectl({"delete", "pvc", "keeper-scratch", "-n", ns(), "--wait=false"});
  ASSERT_TRUE(r.ok()) << r.err;
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(field("pvc", "keeper-scratch", ".metadata.uid"), first) << "a claim a running pod uses went at once";
  r = kubectl({"patch", "pvc", "keeper-scratch", "-n", ns(), "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] {
    const std::string uid = field("pvc", "keeper-scratch", ".metadata.uid");
    return !uid.empty() && uid != first;
  }, 30s)) << field("pvc", "keeper-scratch", ".metadata");
  EXPECT_EQ(field("pvc", "keeper-scratch", ".metadata.ownerReferences[0].uid"), field("pod", "keeper", ".metadata.uid"));
}

TEST_F(EphemeralVolume, AForeignClaimOfThatNameIsRefusedWithAFailedBindingWarning) {
  apply(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"squatted-scratch","namespace":")" + ns() +
        R"(","labels":{"owner":"someone-else"}},"spec":{"accessModes":["ReadWriteOnce"],)"
        R"("resources":{"requests":{"storage":"2Gi"}}}})");
  pod("squatted");
  const std::string want = "ephemeral volume scratch: PVC " + ns() + "/squatted-scratch was not created for pod " +
                           ns() + "/squatted (pod is not owner)";
  Json events;
  EXPECT_TRUE(waitFor([&] {
    events = kubectlJson({"get", "events", "-n", ns(), "--field-selector", "involvedObject.name=squatted,reason=FailedBinding"});
    return !events["items"].empty();
  }, 30s));
  ASSERT_FALSE(events["items"].empty());
  EXPECT_EQ(events["items"][0]["type"], "Warning");
  EXPECT_EQ(events["items"][0]["message"], want);
  EXPECT_EQ(events["items"][0]["source"]["component"], "ephemeral_volume");
  EXPECT_EQ(field("pvc", "squatted-scratch", ".metadata.labels.owner"), "someone-else");
  EXPECT_EQ(field("pvc", "squatted-scratch", ".metadata.ownerReferences"), "");
}

}  // namespace
}  // namespace kcm::e2e
