// replicaset-controller and replicationcontroller-controller on the real cluster (pods made Running/Ready by
// KWOK), reproducing upstream's test/e2e/apps/replica_set.go and rc.go cases, plus exact create counts.
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class ReplicaSets : public SoloKcmSuite<ReplicaSets> {
 public:
  static constexpr const char* kControllers =
      "replicaset-controller,replicationcontroller-controller,node-lifecycle-controller";
  static constexpr const char* kLogName = "kcm-replicasets";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void TearDown() override {
    scaleAllToZero("rs,rc");
    E2ETest::TearDown();
  }
  static std::string rs(const std::string& name, int replicas, const std::string& kind = "ReplicaSet") {
    std::string selector = kind == "ReplicaSet" ? R"({"matchLabels":{"app":")" + name + R"("}})"
                                                : R"({"app":")" + name + R"("})";
    return R"({"apiVersion":")" + std::string(kind == "ReplicaSet" ? "apps/v1" : "v1") + R"(","kind":")" + kind +
           R"(","metadata":{"name":")" + name + R"("},"spec":{"replicas":)" + std::to_string(replicas) +
           R"(,"selector":)" + selector + R"(,"template":{"metadata":{"labels":{"app":")" + name +
           R"("}},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})";
  }
  Json get(const std::string& what, const std::string& name) {
    ExecResult r = kubectl({"get", what, name, "-n", ns(), "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json();
  }
  int status(const std::string& what, const std::string& name, const std::string& field) {
    Json o = get(what, name);
    return o.is_object() ? o["status"].value(field, 0) : -1;
  }
  std::vector<Json> pods(const std::string& selector = "") {
    std::vector<std::string> args = {"get", "pods", "-n", ns(), "-o", "json"};
    if (!selector.empty()) args.insert(args.end(), {"-l", selector});
    ExecResult r = kubectl(args);
    std::vector<Json> out;
    if (!r.ok()) return out;
    const Json list = Json::parse(r.out);
    for (const Json& p : list["items"]) out.push_back(p);
    return out;
  }
  int podCount() { return static_cast<int>(pods().size()); }
  std::vector<Json> events(const std::string& reason) {
    std::vector<Json> out;
    ExecResult r = kubectl({"get", "events", "-n", ns(), "-o", "json"});
    if (!r.ok()) return out;
    const Json list = Json::parse(r.out);
    for (const Json& e : list["items"])
      if (e.value("reason", "") == reason) out.push_back(e);
    return out;
  }
  // "" also when the read failed (get() gives null then: a slow apiserver must not throw out of a waitFor probe).
  static std::string controllerUID(const Json& pod) {
    if (!pod.is_object() || !pod.contains("metadata")) return "";
    for (const Json& r : pod["metadata"].value("ownerReferences", Json::array()))
      if (r.value("controller", false)) return r.value("uid", "");
    return "";
  }
  Json condition(const std::string& what, const std::string& name, const std::string& type) {
    Json o = get(what, name);
    if (!o.is_object()) return Json();
    for (const Json& c : o["status"].value("conditions", Json::array()))
      if (c.value("type", "") == type) return c;
    return Json();
  }
};

// replica_set.go: "should serve a basic image on each replica" (status side) and rc.go's equivalent.
TEST_F(ReplicaSets, CreatePodsOwnedByTheControllerAndReportReadyStatus) {
  for (std::string kind : {"ReplicaSet", "ReplicationController"}) {
    const std::string name = kind == "ReplicaSet" ? "basic-rs" : "basic-rc";
    const std::string what = kind == "ReplicaSet" ? "rs" : "rc";
    apply(rs(name, 3, kind));
    ASSERT_TRUE(waitFor([&] { return status(what, name, "readyReplicas") == 3; }, 60s)) << get(what, name).dump();
    Json o = get(what, name);
    EXPECT_EQ(o["status"].value("replicas", 0), 3);
    EXPECT_EQ(o["status"].value("fullyLabeledReplicas", 0), 3);
    EXPECT_EQ(o["status"].value("availableReplicas", 0), 3);
    EXPECT_EQ(o["status"].value("observedGeneration", 0), o["metadata"].value("generation", -1));
    auto ps = pods("app=" + name);
    ASSERT_EQ(ps.size(), 3u);
    for (const Json& p : ps) {
      EXPECT_EQ(controllerUID(p), o["metadata"].value("uid", "x"));
      EXPECT_EQ(p["metadata"].value("generateName", ""), name + "-");
      for (const Json& r : p["metadata"]["ownerReferences"]) {
        EXPECT_EQ(r.value("kind", ""), kind);
        EXPECT_TRUE(r.value("blockOwnerDeletion", false));
      }
    }
  }
  EXPECT_GE(events("SuccessfulCreate").size(), 1u);
}

// replica_set.go: "should adopt matching pods on creation and release no longer matching pods"
TEST_F(ReplicaSets, AdoptsMatchingOrphansAndReleasesPodsThatStopMatching) {
  apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod-adoption-release","labels":{"app":"adopt"}},)"
        R"("spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})");
  ASSERT_TRUE(waitFor([&] {
    return get("pod", "pod-adoption-release").value("status", Json::object()).value("phase", "") == "Running";
  }, 30s));
  apply(rs("adopt", 1));
  ASSERT_TRUE(waitFor([&] { return !controllerUID(get("pod", "pod-adoption-release")).empty(); }, 30s));
  EXPECT_EQ(controllerUID(get("pod", "pod-adoption-release")), get("rs", "adopt")["metadata"].value("uid", "x"));
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(pods("app=adopt").size(), 1u) << "adopted the orphan instead of creating a pod";

  ASSERT_TRUE(kubectl({"label", "pod", "pod-adoption-release", "-n", ns(), "app=released", "--overwrite"}).ok());
  EXPECT_TRUE(waitFor([&] { return controllerUID(get("pod", "pod-adoption-release")).empty(); }, 30s));
  EXPECT_TRUE(waitFor([&] { return pods("app=adopt").size() == 1u && status("rs", "adopt", "readyReplicas") == 1; },
                      60s));
}

// replica_set.go / rc.go: "Replicaset should have a working scale subresource", "should get and update a
// ReplicationController scale"
TEST_F(ReplicaSets, ScaleSubresourceWorksForReplicaSetsAndReplicationControllers) {
  apply(rs("scaled-rs", 1));
  apply(rs("scaled-rc", 1, "ReplicationController"));
  for (auto [what, name, path] : {std::tuple{"rs", "scaled-rs", "/apis/apps/v1/namespaces/" + ns() + "/replicasets/scaled-rs/scale"},
                                  std::tuple{"rc", "scaled-rc", "/api/v1/namespaces/" + ns() + "/replicationcontrollers/scaled-rc/scale"}}) {
    ASSERT_TRUE(waitFor([&] { return status(what, name, "readyReplicas") == 1; }, 60s));
    ExecResult scale = kubectl({"get", "--raw", path});
    ASSERT_TRUE(scale.ok()) << scale.err;
    Json s = Json::parse(scale.out);
    EXPECT_EQ(s["spec"].value("replicas", 0), 1);
    EXPECT_EQ(s["status"].value("replicas", 0), 1);
    ASSERT_TRUE(kubectl({"patch", what, name, "-n", ns(), "--subresource=scale", "--type=merge", "-p",
                         R"({"spec":{"replicas":2}})"}).ok());
    EXPECT_TRUE(waitFor([&] { return status(what, name, "readyReplicas") == 2; }, 60s)) << get(what, name).dump();
    EXPECT_TRUE(waitFor([&] { return Json::parse(kubectl({"get", "--raw", path}).out)["status"].value("replicas", 0) == 2; },
                        10s));
  }
}

// rc.go / replica_set.go: "should surface a failure condition on a common issue like exceeded quota" -- here pod
// creation is refused by PodSecurity admission (namespace enforcing "restricted").
TEST_F(ReplicaSets, ReplicaFailureConditionWhileCreatesAreRejectedAndClearedAfter) {
  ASSERT_TRUE(kubectl({"label", "ns", ns(), "pod-security.kubernetes.io/enforce=restricted"}).ok());
  apply(rs("failing-rs", 2));
  apply(rs("failing-rc", 2, "ReplicationController"));
  for (auto [what, name] : {std::pair{"rs", "failing-rs"}, std::pair{"rc", "failing-rc"}}) {
    ASSERT_TRUE(waitFor([&] { return condition(what, name, "ReplicaFailure").is_object(); }, 30s))
        << get(what, name).dump();
    Json c = condition(what, name, "ReplicaFailure");
    EXPECT_EQ(c.value("status", ""), "True");
    EXPECT_EQ(c.value("reason", ""), "FailedCreate");
    EXPECT_NE(c.value("message", "").find("forbidden"), std::string::npos) << c.dump();
  }
  EXPECT_TRUE(waitFor([&] { return !events("FailedCreate").empty(); }, 30s));
  ASSERT_TRUE(kubectl({"label", "ns", ns(), "pod-security.kubernetes.io/enforce-"}).ok());
  for (auto [what, name] : {std::pair{"rs", "failing-rs"}, std::pair{"rc", "failing-rc"}}) {
    EXPECT_TRUE(waitFor([&] { return status(what, name, "readyReplicas") == 2; }, 120s)) << get(what, name).dump();
    EXPECT_TRUE(waitFor([&] { return !condition(what, name, "ReplicaFailure").is_object(); }, 30s));
  }
}

// rc.go / replica_set.go: "should surface a failure condition on a common issue like exceeded quota", as upstream
// runs it: a ResourceQuota allowing 2 pods, a controller asking for 3, then scaled down to 2. Upstream waits for the
// resourcequota controller to fill the quota's status.hard; that controller is not ours yet (issue 18), so the test
// writes that status itself. Admission (the apiserver's ResourceQuota plugin) then counts and refuses pods as it
// would with the controller running.
TEST_F(ReplicaSets, ExceededQuotaSurfacesReplicaFailureAndScalingDownClearsIt) {
  auto setQuota = [&](int hard, int used) {
    return kubectl({"patch", "resourcequota", "condition-test", "-n", ns(), "--subresource=status", "--type=merge", "-p",
                    R"({"status":{"hard":{"pods":")" + std::to_string(hard) + R"("},"used":{"pods":")" +
                        std::to_string(used) + R"("}}})"})
        .ok();
  };
  ASSERT_TRUE(kubectl({"create", "quota", "condition-test", "-n", ns(), "--hard=pods=2"}).ok());
  ASSERT_TRUE(setQuota(2, 0));
  // The RS gets the room the RC leaves: 2 pods each, the quota raised to 4 once the RC holds its 2.
  for (auto [what, name, kind] : {std::tuple{"rc", "quota-rc", "ReplicationController"},
                                  std::tuple{"rs", "quota-rs", "ReplicaSet"}}) {
    if (std::string(what) == "rs") {
      ASSERT_TRUE(setQuota(4, 2));
    }
    apply(rs(name, 3, kind));
    ASSERT_TRUE(waitFor([&] {
      Json o = get(what, name);
      return o.is_object() && o["status"].value("observedGeneration", 0) >= o["metadata"].value("generation", 1) &&
             condition(what, name, "ReplicaFailure").is_object();
    }, 60s)) << get(what, name).dump();
    Json c = condition(what, name, "ReplicaFailure");
    EXPECT_EQ(c.value("status", ""), "True");
    EXPECT_EQ(c.value("reason", ""), "FailedCreate");
    EXPECT_NE(c.value("message", "").find("exceeded quota: condition-test"), std::string::npos) << c.dump();
    EXPECT_EQ(static_cast<int>(pods("app=" + std::string(name)).size()), 2);
    ASSERT_TRUE(kubectl({"scale", what, name, "-n", ns(), "--replicas=2"}).ok());
    EXPECT_TRUE(waitFor([&] {
      Json o = get(what, name);
      return o.is_object() && o["status"].value("observedGeneration", 0) >= o["metadata"].value("generation", 1) &&
             !condition(what, name, "ReplicaFailure").is_object();
    }, 60s)) << get(what, name).dump();
  }
  EXPECT_FALSE(events("FailedCreate").empty());
}

// 500 replicas: every create is observed exactly once (expectations), then 10 deleted pods give exactly 10 creates.
TEST_F(ReplicaSets, FiveHundredReplicasAreCreatedExactlyOnceAndTenDeletionsGiveTenCreates) {
  KcmProcess watch({"--kubeconfig=" + Cluster::get().kubeconfig, "get", "pods", "-n", ns(), "--watch-only",
                    "--output-watch-events", "-o", "jsonpath={.type} {.object.metadata.name}{\"\\n\"}"},
                   "watch-" + ns(), "kubectl");
  std::this_thread::sleep_for(2s);  // the watch is established
  apply(rs("big", 500));
  ASSERT_TRUE(waitFor([&] { return status("rs", "big", "readyReplicas") == 500; }, 240s, 2s))
      << get("rs", "big")["status"].dump();
  auto counts = [&] {
    std::map<std::string, std::set<std::string>> byType;
    std::istringstream in(watch.log());
    std::string type, name;
    while (in >> type >> name) byType[type].insert(name);
    return byType;
  };
  std::this_thread::sleep_for(5s);
  auto c = counts();
  EXPECT_EQ(c["ADDED"].size(), 500u);
  EXPECT_EQ(c["DELETED"].size(), 0u);
  EXPECT_EQ(pods("app=big").size(), 500u);

  std::vector<std::string> victims;
  for (const Json& p : pods("app=big")) {
    if (victims.size() == 10) break;
    victims.push_back(p["metadata"]["name"]);
  }
  std::vector<std::string> del = {"delete", "pod", "-n", ns(), "--wait=false"};
  del.insert(del.end(), victims.begin(), victims.end());
  ASSERT_TRUE(kubectl(del).ok());
  ASSERT_TRUE(waitFor([&] { return counts()["DELETED"].size() == 10u && status("rs", "big", "readyReplicas") == 500; },
                      120s, 1s));
  std::this_thread::sleep_for(5s);
  c = counts();
  EXPECT_EQ(c["ADDED"].size(), 510u);
  EXPECT_EQ(c["DELETED"].size(), 10u);
}

}  // namespace
}  // namespace kcm::e2e
