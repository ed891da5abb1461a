// disruption-controller on the real cluster, as upstream test/e2e/apps/disruption.go checks it: PDB status from the
// selected pods and their controllers' scale (KWOK pods, ReplicaSets through replicaset-controller), its
// observedGeneration and DisruptionAllowed condition, the UnmanagedPods event, and the apiserver's Eviction API
// refusing and then allowing an eviction according to the status we write (the evicted pod recorded in
// disruptedPods).
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class Disruption : public SoloKcmSuite<Disruption> {
 public:
  // node-lifecycle: new KWOK nodes lose the not-ready taint, so the scheduler places the ReplicaSets' pods.
  static constexpr const char* kControllers = "disruption-controller,replicaset-controller,node-lifecycle-controller";
  static constexpr const char* kLogName = "kcm-disruption";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void TearDown() override {
    scaleAllToZero("rs");
    E2ETest::TearDown();
  }
  void barePod(const std::string& name, const std::string& app) {
    apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","labels":{"app":")" + app +
          R"("}},"spec":{"nodeName":"kwok-node-0","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})");
  }
  void replicaSet(const std::string& name, int replicas) {
    apply(R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":")" + name + R"("},"spec":{"replicas":)" +
          std::to_string(replicas) + R"(,"selector":{"matchLabels":{"app":")" + name +
          R"("}},"template":{"metadata":{"labels":{"app":")" + name +
          R"("}},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})");
  }
  void pdb(const std::string& app, const std::string& budget) {
    apply(R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"budget"},"spec":{)" + budget +
          R"(,"selector":{"matchLabels":{"app":")" + app + R"("}}}})");
  }
  Json pdbJson() {
    ExecResult r = kubectl({"get", "pdb", "budget", "-n", ns(), "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json();
  }
  // "current/desired/expected/allowed reason" once observedGeneration is the PDB's generation, else "".
  std::string summary() {
    Json p = pdbJson();
    if (p.is_null() || p["status"].value("observedGeneration", 0) != p["metadata"].value("generation", -1)) return "";
    const Json& s = p["status"];
    std::string reason;
    for (const auto& c : s.value("conditions", Json::array()))
      if (c["type"] == "DisruptionAllowed") reason = c.value("status", "") + " " + c.value("reason", "");
    return std::to_string(s.value("currentHealthy", 0)) + "/" + std::to_string(s.value("desiredHealthy", 0)) + "/" +
           std::to_string(s.value("expectedPods", 0)) + "/" + std::to_string(s.value("disruptionsAllowed", 0)) + " " +
           reason;
  }
  ExecResult evict(const std::string& pod) {
    return kubectl({"create", "--raw", "/api/v1/namespaces/" + ns() + "/pods/" + pod + "/eviction", "-f", "-"},
                   R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":")" + pod +
                       R"(","namespace":")" + ns() + R"("}})");
  }
  std::vector<std::string> podNames(const std::string& app) {
    std::vector<std::string> out;
    const Json list = kubectlJson({"get", "pods", "-n", ns(), "-l", "app=" + app});
    for (const auto& p : list["items"])
      if (!p["metadata"].contains("deletionTimestamp") && conditionStatus(p, "Ready") == "True")
        out.push_back(p["metadata"]["name"]);
    return out;
  }
};

// "should create a PodDisruptionBudget" / "should observe PodDisruptionBudget status updated": the status follows
// the pods and a spec change (a new generation).
TEST_F(Disruption, StatusFollowsThePodsAndTheSpec) {
  pdb("bare", R"("minAvailable":2)");
  EXPECT_TRUE(waitFor([&] { return summary() == "0/2/0/0 False InsufficientPods"; }, 30s)) << pdbJson().dump();
  for (const char* p : {"bare-0", "bare-1", "bare-2"}) barePod(p, "bare");
  EXPECT_TRUE(waitFor([&] { return summary() == "3/2/3/1 True SufficientPods"; }, 60s)) << pdbJson().dump();
  ASSERT_TRUE(kubectl({"patch", "pdb", "budget", "-n", ns(), "--type=merge", "-p", R"({"spec":{"minAvailable":3}})"})
                  .ok());
  EXPECT_TRUE(waitFor([&] { return summary() == "3/3/3/0 False InsufficientPods"; }, 30s)) << pdbJson().dump();
  EXPECT_EQ(pdbJson()["status"].value("observedGeneration", 0), 2);
}

// "should observe that the PodDisruptionBudget status is not updated for unmanaged pods": maxUnavailable over
// pods without a controller.
TEST_F(Disruption, UnmanagedPodsUnderMaxUnavailableGiveAnEvent) {
  barePod("loose-0", "loose");
  barePod("loose-1", "loose");
  pdb("loose", R"("maxUnavailable":1)");
  EXPECT_TRUE(waitFor([&] {
    ExecResult r = kubectl({"get", "events", "-n", ns(), "--field-selector", "reason=UnmanagedPods", "-o", "json"});
    if (!r.ok()) return false;
    const Json list = Json::parse(r.out);
    for (const auto& e : list["items"])
      if (e["source"].value("component", "") == "controllermanager" && e["involvedObject"]["name"] == "budget" &&
          e.value("message", "").find("(selector: &LabelSelector{MatchLabels:map[string]string{app: loose,},") !=
              std::string::npos)
        return true;
    return false;
  }, 30s));
  EXPECT_TRUE(waitFor([&] { return summary() == "2/0/0/0 False InsufficientPods"; }, 30s)) << pdbJson().dump();
}

// "evictions: enough pods, replicaSet, percentage => should allow an eviction" and "should block an eviction until
// the PDB is updated to allow it": the expected count comes from the ReplicaSet's scale.
TEST_F(Disruption, EvictionIsRefusedUntilTheBudgetAllowsIt) {
  replicaSet("web", 3);
  pdb("web", R"("maxUnavailable":0)");
  ASSERT_TRUE(waitFor([&] { return summary() == "3/3/3/0 False InsufficientPods"; }, 60s)) << pdbJson().dump();
  const auto pods = podNames("web");
  ASSERT_EQ(pods.size(), 3u);
  ExecResult refused = evict(pods[0]);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.err.find("Cannot evict pod as it would violate the pod's disruption budget"), std::string::npos)
      << refused.err;
  ASSERT_TRUE(kubectl({"patch", "pdb", "budget", "-n", ns(), "--type=merge", "-p",
                       R"({"spec":{"maxUnavailable":null,"minAvailable":"50%"}})"})
                  .ok());
  EXPECT_TRUE(waitFor([&] { return summary() == "3/2/3/1 True SufficientPods"; }, 30s)) << pdbJson().dump();
  ExecResult allowed = evict(pods[0]);
  EXPECT_TRUE(allowed.ok()) << allowed.err;
  // The ReplicaSet replaces the pod and the budget is whole again; the eviction's disruptedPods entry goes with the
  // deleted pod.
  EXPECT_TRUE(waitFor([&] {
    return summary() == "3/2/3/1 True SufficientPods" && !pdbJson()["status"].contains("disruptedPods");
  }, 60s)) << pdbJson().dump();
}

}  // namespace
}  // namespace kcm::e2e
