// podgroup-protection-controller on the real cluster, with GenericWorkload on in the apiserver (hack/cluster.sh:
// scheduling.k8s.io/v1beta1 served, the PodGroupProtection admission plugin stamping
// scheduling.k8s.io/podgroup-protection on every PodGroup) and in ours. A PodGroup deleted while an active pod
// names it (spec.schedulingGroup.podGroupName) stays, deletionTimestamp set, until the pod is gone or terminal;
// one whose pods have all failed, or that no pod names, goes at once. Pods are kept Running or failed by the test
// KWOK stages (kwok.kcm.test/behavior); the scheduler ignores the group (its own gate is off).
#include <sstream>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class PodGroupProtection : public SoloKcmSuite<PodGroupProtection> {
 public:
  static constexpr const char* kControllers = "podgroup-protection-controller";
  static constexpr const char* kLogName = "kcm-podgroup-protection";
  static std::vector<std::string> extraFlags() { return {"--feature-gates=GenericWorkload=true"}; }

 protected:
  void TearDown() override {
    kubectl({"delete", "pods", "--all", "-n", ns(), "--grace-period=0", "--force", "--wait=false"});
    std::istringstream names(kubectl({"get", "podgroups", "-n", ns(), "-o", "name"}).out);
    for (std::string pg; std::getline(names, pg);)
      if (!pg.empty())
        kubectl({"patch", pg, "-n", ns(), "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
    SoloKcmSuite<PodGroupProtection>::TearDown();
  }
  void podGroup(const std::string& name) {
    apply(R"({"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup","metadata":{"name":")" + name +
          R"("},"spec":{"schedulingPolicy":{"basic":{}}}})");
  }
  void pod(const std::string& name, const std::string& group, const std::string& behavior) {
    apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
          R"(","annotations":{"kwok.kcm.test/behavior":")" + behavior + R"("}},"spec":{"schedulingGroup":{"podGroupName":")" +
          group + R"("},"restartPolicy":"Never","tolerations":[{"operator":"Exists"}],)"
          R"("containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})");
  }
  std::string podPhase(const std::string& name) {
    return kubectl({"get", "pod", name, "-n", ns(), "-o", "jsonpath={.status.phase}"}).out;
  }
  // "<deletionTimestamp set?> <finalizers>" or "gone".
  std::string podGroupState(const std::string& name) {
    ExecResult r = kubectl({"get", "podgroup", name, "-n", ns(), "-o",
                            "jsonpath={.metadata.deletionTimestamp}|{.metadata.finalizers}"});
    if (!r.ok()) return r.err.find("NotFound") != std::string::npos ? "gone" : "error: " + r.err;
    return r.out;
  }
  bool gone(const std::string& name) {
    return waitFor([&] { return podGroupState(name) == "gone"; }, 30s);
  }
  void deletePodGroup(const std::string& name) {
    ExecResult r = kubectl({"delete", "podgroup", name, "-n", ns(), "--wait=false"});
    ASSERT_TRUE(r.ok()) << r.err;
  }
};

TEST_F(PodGroupProtection, AdmissionStampsTheFinalizerAndAnUnusedPodGroupGoesAtOnce) {
  podGroup("lonely");
  EXPECT_EQ(podGroupState("lonely"), "|[\"scheduling.k8s.io/podgroup-protection\"]");
  deletePodGroup("lonely");
  EXPECT_TRUE(gone("lonely")) << podGroupState("lonely");
}

TEST_F(PodGroupProtection, ARunningPodHoldsItsPodGroupUntilDeleted) {
  podGroup("gang");
  pod("worker-0", "gang", "run");
  pod("worker-1", "gang", "run");
  ASSERT_TRUE(waitFor([&] { return podPhase("worker-0") == "Running" && podPhase("worker-1") == "Running"; }, 60s));
  deletePodGroup("gang");
  std::this_thread::sleep_for(3s);
  std::string state = podGroupState("gang");
  EXPECT_NE(state.find("scheduling.k8s.io/podgroup-protection"), std::string::npos) << state;
  EXPECT_NE(state.substr(0, state.find('|')), "") << "being deleted: " << state;
  // One pod gone: the other still holds it.
  kubectl({"delete", "pod", "worker-0", "-n", ns(), "--grace-period=0", "--force"});
  std::this_thread::sleep_for(3s);
  EXPECT_NE(podGroupState("gang").find("podgroup-protection"), std::string::npos);
  kubectl({"delete", "pod", "worker-1", "-n", ns(), "--grace-period=0", "--force"});
  EXPECT_TRUE(gone("gang")) << podGroupState("gang");
}

TEST_F(PodGroupProtection, APodThatFailsReleasesItsPodGroup) {
  podGroup("batch");
  pod("runner", "batch", "run");
  ASSERT_TRUE(waitFor([&] { return podPhase("runner") == "Running"; }, 60s));
  deletePodGroup("batch");
  std::this_thread::sleep_for(2s);
  EXPECT_NE(podGroupState("batch").find("podgroup-protection"), std::string::npos);
  // The pod turns Failed (kept, not deleted): terminal pods do not hold the PodGroup.
  ExecResult r = kubectl({"patch", "pod", "runner", "-n", ns(), "--subresource=status", "--type=merge", "-p",
                          R"({"status":{"phase":"Failed"}})"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(gone("batch")) << podGroupState("batch");
  EXPECT_EQ(podPhase("runner"), "Failed");
}

TEST_F(PodGroupProtection, APodGroupWhosePodsAlreadyFailedGoesAtOnce) {
  podGroup("done");
  pod("failed", "done", "fail");
  ASSERT_TRUE(waitFor([&] { return podPhase("failed") == "Failed"; }, 60s));
  deletePodGroup("done");
  EXPECT_TRUE(gone("done")) << podGroupState("done");
}

}  // namespace
}  // namespace kcm::e2e
