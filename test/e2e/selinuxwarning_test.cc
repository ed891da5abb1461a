// selinux-warning-controller on the real cluster (upstream test/e2e/storage/csimock/csi_selinux_mount.go's
// "SELinuxMount metrics and SELinuxWarningController" cases, without a CSI driver: the controller reads only API
// objects). Two pods using one CSI volume whose CSIDriver says seLinuxMount: true, with different SELinux levels,
// get a SELinuxLabelConflict event each and a selinux_warning_controller_selinux_volume_conflict series on /metrics
// that goes with one of the pods; a Recursive pod beside a MountOption one is a SELinuxChangePolicyConflict (and,
// its mount label being empty, a label conflict too); a
// driver without seLinuxMount has no label conflicts until its CSIDriver says so; one volume mounted with two labels
// in one pod is a MultipleSELinuxLabels warning. The binder binds the claims to static PVs.
#include <algorithm>
#include <optional>
#include <sstream>
#include <thread>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class SELinuxWarning : public SoloKcmSuite<SELinuxWarning> {
 public:
  static constexpr const char* kControllers = "selinux-warning-controller,persistentvolume-binder-controller";
  static constexpr const char* kLogName = "kcm-selinuxwarning";
  static inline int port = 0;
  static std::vector<std::string> extraFlags() {
    port = freePort();
    const std::string d = Cluster::get().dir;
    return {"--secure-port=" + std::to_string(port), "--client-ca-file=" + d + "/pki/ca.crt",
            "--authentication-kubeconfig=" + d + "/controller-manager.conf",
            "--authorization-kubeconfig=" + d + "/controller-manager.conf"};
  }

 protected:
  void TearDown() override {
    kubectl({"delete", "pods", "--all", "-n", ns(), "--grace-period=0", "--force", "--wait=false"});
    kubectl({"delete", "pvc", "--all", "-n", ns(), "--wait=false"});
    for (const auto& n : cleanup_) kubectl({"delete", n, "--wait=false", "--ignore-not-found"});
    SoloKcmSuite<SELinuxWarning>::TearDown();
  }
  // One driver per test (a driver name is at most 63 bytes: the namespace's random suffix, not the namespace).
  std::string driver() { return "t" + ns().substr(ns().size() - 5) + ".selinux.e2e.csi.k8s.io"; }
  // The test's CSIDriver (seLinuxMount as given, or unset) and a claim "data" bound to a CSI PV of it.
  void volume(std::optional<bool> seLinuxMount) {
    std::string spec = R"("attachRequired":false)";
    if (seLinuxMount) spec += std::string(R"(,"seLinuxMount":)") + (*seLinuxMount ? "true" : "false");
    apply(R"({"apiVersion":"storage.k8s.io/v1","kind":"CSIDriver","metadata":{"name":")" + driver() + R"("},"spec":{)" +
          spec + "}}");
    cleanup_.push_back("csidriver/" + driver());
    const std::string pv = ns() + "-data";
    cleanup_.push_back("pv/" + pv);
    apply(R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + pv +
          R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteMany"],)"
          R"("persistentVolumeReclaimPolicy":"Retain","storageClassName":")" + ns() + R"(","csi":{"driver":")" +
          driver() + R"(","volumeHandle":")" + pv + R"("}}})");
    apply(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":")" + ns() +
          R"("},"spec":{"accessModes":["ReadWriteMany"],"storageClassName":")" + ns() + R"(","volumeName":")" + pv +
          R"(","resources":{"requests":{"storage":"1Gi"}}}})");
    ASSERT_TRUE(waitFor([&] {
      return kubectl({"get", "pvc", "data", "-n", ns(), "-o", "jsonpath={.status.phase}"}).out == "Bound";
    }, 30s));
  }
  // A pod mounting the claim in one container per level given (pod-level options when there is one level).
  void pod(const std::string& name, const std::vector<std::string>& levels, const std::string& policy = "") {
    std::string sc = "{";
    if (levels.size() == 1) sc += R"("seLinuxOptions":{"level":")" + levels[0] + R"("})";
    if (!policy.empty()) sc += std::string(levels.size() == 1 ? "," : "") + R"("seLinuxChangePolicy":")" + policy + "\"";
    sc += "}";
    std::string containers;
    for (size_t i = 0; i < levels.size(); ++i) {
      containers += std::string(i ? "," : "") + R"({"name":"c)" + std::to_string(i) +
                    R"(","image":"registry.k8s.io/pause:3.10","volumeMounts":[{"name":"vol1","mountPath":"/mnt"}])";
      if (levels.size() > 1) containers += R"(,"securityContext":{"seLinuxOptions":{"level":")" + levels[i] + R"("}})";
      containers += "}";
    }
    apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","namespace":")" + ns() +
          R"("},"spec":{"securityContext":)" + sc + R"(,"containers":[)" + containers +
          R"(],"volumes":[{"name":"vol1","persistentVolumeClaim":{"claimName":"data"}}]}})");
  }
  // "<pod>: <type> <message>" of the controller's events with this reason, sorted, each once (a failing sync is
  // retried and reports again).
  std::vector<std::string> events(const std::string& reason) {
    std::vector<std::string> out;
    for (const auto& e : eventsWithReason(ns(), reason)) {
      EXPECT_EQ(e["source"].value("component", ""), "selinux_warning");
      out.push_back(e["involvedObject"].value("name", "") + ": " + e.value("type", "") + " " + e.value("message", ""));
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  // The conflict series of this namespace on /metrics (admin client certificate).
  std::vector<std::string> conflictSeries() {
    const std::string d = Cluster::get().dir;
    ExecResult r = exec({"curl", "-sk", "--max-time", "5", "--cert", d + "/pki/admin.crt", "--key",
                         d + "/pki/admin.key", "https://127.0.0.1:" + std::to_string(port) + "/metrics"});
    std::vector<std::string> out;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("selinux_warning_controller_selinux_volume_conflict{", 0) == 0 &&
          line.find("pod1_namespace=\"" + ns() + "\"") != std::string::npos)
        out.push_back(line);
    return out;
  }
  std::string labelMessage(const std::string& mine, const std::string& other, const std::string& otherPod) {
    return "Normal SELinuxLabel \"" + mine + "\" conflicts with pod " + otherPod +
           " that uses the same volume as this pod with SELinuxLabel \"" + other +
           "\". If both pods land on the same node, only one of them may access the volume.";
  }
  std::vector<std::string> cleanup_;
};

TEST_F(SELinuxWarning, TwoPodsWithDifferentLevelsConflictWithEventsAndAMetricUntilOneGoes) {
  volume(true);
  pod("pod1", {"s0:c1,c2"});
  pod("pod2", {"s0:c98,c99"});
  const std::vector<std::string> want = {"pod1: " + labelMessage(":::s0:c1,c2", ":::s0:c98,c99", "pod2"),
                                         "pod2: " + labelMessage(":::s0:c98,c99", ":::s0:c1,c2", "pod1")};
  EXPECT_TRUE(waitFor([&] { return events("SELinuxLabelConflict") == want; }, 30s))
      << ::testing::PrintToString(events("SELinuxLabelConflict"));
  std::vector<std::string> series;
  EXPECT_TRUE(waitFor([&] { return (series = conflictSeries()).size() == 2; }, 30s)) << kcm_->log().substr(0, 2000);
  const std::string n = ns();
  EXPECT_EQ(series, (std::vector<std::string>{
                        "selinux_warning_controller_selinux_volume_conflict{pod1_name=\"pod1\",pod1_namespace=\"" + n +
                            "\",pod1_value=\":::s0:c1,c2\",pod2_name=\"pod2\",pod2_namespace=\"" + n +
                            "\",pod2_value=\":::s0:c98,c99\",property=\"SELinuxLabel\"} 1",
                        "selinux_warning_controller_selinux_volume_conflict{pod1_name=\"pod2\",pod1_namespace=\"" + n +
                            "\",pod1_value=\":::s0:c98,c99\",pod2_name=\"pod1\",pod2_namespace=\"" + n +
                            "\",pod2_value=\":::s0:c1,c2\",property=\"SELinuxLabel\"} 1"}));
  ExecResult r = kubectl({"delete", "pod", "pod2", "-n", ns(), "--grace-period=0", "--force"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_TRUE(waitFor([&] { return conflictSeries().empty(); }, 30s)) << "the conflict outlived pod2";
}

TEST_F(SELinuxWarning, ARecursivePodBesideAMountOptionPodIsAPolicyConflict) {
  volume(true);
  pod("recursive", {"s0:c1,c2"}, "Recursive");
  pod("mount", {"s0:c1,c2"}, "MountOption");
  const std::string tail = ". If both pods land on the same node, only one of them may access the volume.";
  const std::vector<std::string> want = {
      "mount: Normal SELinuxChangePolicy \"MountOption\" conflicts with pod recursive that uses the same volume as "
      "this pod with SELinuxChangePolicy \"Recursive\"" + tail,
      "recursive: Normal SELinuxChangePolicy \"Recursive\" conflicts with pod mount that uses the same volume as "
      "this pod with SELinuxChangePolicy \"MountOption\"" + tail};
  EXPECT_TRUE(waitFor([&] { return events("SELinuxChangePolicyConflict") == want; }, 30s))
      << ::testing::PrintToString(events("SELinuxChangePolicyConflict"));
  // A Recursive pod mounts without a label, and no label conflicts with any level.
  const std::vector<std::string> labels = {"mount: " + labelMessage(":::s0:c1,c2", "", "recursive"),
                                           "recursive: " + labelMessage("", ":::s0:c1,c2", "mount")};
  EXPECT_TRUE(waitFor([&] { return events("SELinuxLabelConflict") == labels; }, 30s))
      << ::testing::PrintToString(events("SELinuxLabelConflict"));
}

TEST_F(SELinuxWarning, ADriverWithoutSELinuxMountHasNoLabelConflictUntilItsCSIDriverSaysSo) {
  volume(std::nullopt);
  pod("pod1", {"s0:c1,c2"});
  pod("pod2", {"s0:c98,c99"});
  // Both are Recursive (the driver cannot mount with -o context): nothing to report.
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(events("SELinuxLabelConflict").empty());
  EXPECT_TRUE(events("SELinuxChangePolicyConflict").empty());
  ExecResult r = kubectl({"patch", "csidriver", driver(), "--type=merge", "-p", R"({"spec":{"seLinuxMount":true}})"});
  ASSERT_TRUE(r.ok()) << r.err;
  // Both pods are looked at again, one after the other: between the two syncs the first one's new label meets the
  // other's empty one (a conflict too), then the two levels conflict.
  const std::string a = "pod1: " + labelMessage(":::s0:c1,c2", ":::s0:c98,c99", "pod2"),
                    b = "pod2: " + labelMessage(":::s0:c98,c99", ":::s0:c1,c2", "pod1");
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  EXPECT_TRUE(waitFor([&] {
    auto e = events("SELinuxLabelConflict");
    return has(e, a) && has(e, b);
  }, 30s)) << "the pods of the driver were not looked at again: "
           << ::testing::PrintToString(events("SELinuxLabelConflict"));
}

TEST_F(SELinuxWarning, AVolumeMountedWithTwoLabelsInOnePodIsAWarning) {
  volume(true);
  pod("twice", {"s0:c1", "s0:c2"});
  // The service account token volume the apiserver adds to every container is mounted with both labels too.
  Json pod = kubectlJson({"get", "pod", "twice", "-n", ns()});
  std::vector<std::string> want;
  for (const auto& m : pod["spec"]["containers"][0]["volumeMounts"])
    want.push_back("twice: Warning Volume \"" + m.value("name", "") +
                   "\" is mounted twice with different SELinux labels inside this pod");
  std::sort(want.begin(), want.end());
  ASSERT_EQ(want.size(), 2u) << pod.dump();
  EXPECT_TRUE(waitFor([&] { return events("MultipleSELinuxLabels") == want; }, 30s))
      << ::testing::PrintToString(events("MultipleSELinuxLabels"));
}

}  // namespace
}  // namespace kcm::e2e
