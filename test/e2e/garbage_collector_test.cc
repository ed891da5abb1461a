// garbage-collector-controller on the real cluster, with the workload controllers whose objects it collects;
// reproduces upstream's test/e2e/apimachinery/garbage_collector.go cases.
#include <sstream>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class GarbageCollector : public SoloKcmSuite<GarbageCollector> {
 public:
  static constexpr const char* kControllers =
      "garbage-collector-controller,replicationcontroller-controller,replicaset-controller,deployment-controller,"
      "node-lifecycle-controller";
  static constexpr const char* kLogName = "kcm-garbage-collector";
  static std::vector<std::string> extraFlags() { return {"-v=2"}; }

 protected:
  void TearDown() override {
    for (const auto& p : names("pods"))
      kubectl({"patch", "pod", p, "-n", ns(), "--type=json", "-p", R"([{"op":"remove","path":"/metadata/finalizers"}])"});
    E2ETest::TearDown();
  }
  static std::string rc(const std::string& name, int replicas, const std::string& podFinalizer = "") {
    return R"({"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":")" + name +
           R"("},"spec":{"replicas":)" + std::to_string(replicas) + R"(,"selector":{"app":")" + name +
           R"("},"template":{"metadata":{"labels":{"app":")" + name + R"("})" +
           (podFinalizer.empty() ? "" : R"(,"finalizers":[")" + podFinalizer + R"("])") +
           R"(},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})";
  }
  std::vector<std::string> names(const std::string& what, const std::string& selector = "") {
    std::vector<std::string> args = {"get", what, "-n", ns(), "-o", "jsonpath={.items[*].metadata.name}"};
    if (!selector.empty()) args.insert(args.end(), {"-l", selector});
    std::istringstream in(kubectl(args).out);
    std::vector<std::string> out;
    for (std::string s; in >> s;) out.push_back(s);
    return out;
  }
  Json get(const std::string& what, const std::string& name) {
    ExecResult r = kubectl({"get", what, name, "-n", ns(), "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json();
  }
  bool exists(const std::string& what, const std::string& name) { return get(what, name).is_object(); }
  static size_t ownerCount(const Json& o) { return o["metadata"].value("ownerReferences", Json::array()).size(); }
  std::string uid(const std::string& what, const std::string& name) {
    return get(what, name)["metadata"].value("uid", "");
  }
  void addOwner(const std::string& what, const std::string& name, const std::string& ownerKind,
                const std::string& ownerAPIVersion, const std::string& ownerName, const std::string& ownerUID,
                bool block) {
    Json o = get(what, name);
    Json refs = o["metadata"].value("ownerReferences", Json::array());
    refs.push_back({{"apiVersion", ownerAPIVersion}, {"kind", ownerKind}, {"name", ownerName}, {"uid", ownerUID},
                    {"blockOwnerDeletion", block}});
    ASSERT_TRUE(kubectl({"patch", what, name, "-n", ns(), "--type=merge", "-p",
                         Json({{"metadata", {{"ownerReferences", refs}}}}).dump()}).ok());
  }
};

// "should delete pods created by rc when not orphaning"
TEST_F(GarbageCollector, DeletesPodsCreatedByRCWhenNotOrphaning) {
  apply(rc("simpletest.rc", 2));
  ASSERT_TRUE(waitFor([&] { return names("pods", "app=simpletest.rc").size() == 2; }, 60s));
  ASSERT_TRUE(kubectl({"delete", "rc", "simpletest.rc", "-n", ns(), "--cascade=background", "--wait=false"}).ok());
  EXPECT_TRUE(waitFor([&] { return names("pods", "app=simpletest.rc").empty(); }, 60s))
      << kubectl({"get", "pods", "-n", ns(), "-o", "yaml"}).out.substr(0, 3000);
}

// "should orphan pods created by rc if delete options say so"
TEST_F(GarbageCollector, OrphansPodsCreatedByRCWhenAsked) {
  apply(rc("simpletest.rc", 2));
  ASSERT_TRUE(waitFor([&] { return names("pods", "app=simpletest.rc").size() == 2; }, 60s));
  ASSERT_TRUE(kubectl({"delete", "rc", "simpletest.rc", "-n", ns(), "--cascade=orphan", "--wait=false"}).ok());
  ASSERT_TRUE(waitFor([&] { return !exists("rc", "simpletest.rc"); }, 60s)) << get("rc", "simpletest.rc").dump();
  std::this_thread::sleep_for(3s);
  auto pods = names("pods", "app=simpletest.rc");
  ASSERT_EQ(pods.size(), 2u);
  for (const auto& p : pods) EXPECT_EQ(ownerCount(get("pod", p)), 0u) << p;
}

// "should delete RS created by deployment when not orphaning" and "should orphan RS created by deployment when
// deleteOptions.PropagationPolicy is Orphan"
TEST_F(GarbageCollector, DeletesOrOrphansTheReplicaSetsOfADeployment) {
  for (std::string cascade : {"background", "orphan"}) {
    const std::string name = "dep-" + cascade;
    ASSERT_TRUE(kubectl({"create", "deployment", name, "-n", ns(), "--image=registry.k8s.io/pause:3.10"}).ok());
    ASSERT_TRUE(waitFor([&] { return names("rs", "app=" + name).size() == 1; }, 60s));
    const std::string rs = names("rs", "app=" + name).at(0);
    ASSERT_TRUE(kubectl({"delete", "deployment", name, "-n", ns(), "--cascade=" + cascade, "--wait=false"}).ok());
    ASSERT_TRUE(waitFor([&] { return !exists("deployment", name); }, 60s));
    if (cascade == "background") {
      EXPECT_TRUE(waitFor([&] { return !exists("rs", rs) && names("pods", "app=" + name).empty(); }, 60s));
    } else {
      std::this_thread::sleep_for(3s);
      ASSERT_TRUE(exists("rs", rs));
      EXPECT_EQ(ownerCount(get("rs", rs)), 0u);
      kubectl({"scale", "rs", rs, "-n", ns(), "--replicas=0"});
    }
  }
}

// "should keep the rc around until all its pods are deleted if the deleteOptions says so"
TEST_F(GarbageCollector, ForegroundDeletionKeepsTheRCUntilItsPodsAreGone) {
  apply(rc("fg", 3, "e2e.kcm.io/hold"));
  ASSERT_TRUE(waitFor([&] { return names("pods", "app=fg").size() == 3; }, 60s));
  ASSERT_TRUE(kubectl({"delete", "rc", "fg", "-n", ns(), "--cascade=foreground", "--wait=false"}).ok());
  // The pods are being deleted (held by the test's finalizer); the RC waits for them.
  ASSERT_TRUE(waitFor([&] {
    for (const auto& p : names("pods", "app=fg"))
      if (!get("pod", p)["metadata"].contains("deletionTimestamp")) return false;
    return true;
  }, 60s));
  std::this_thread::sleep_for(2s);
  Json r = get("rc", "fg");
  ASSERT_TRUE(r.is_object()) << "the RC went before its pods";
  EXPECT_NE(r["metadata"].value("finalizers", Json::array()).dump().find("foregroundDeletion"), std::string::npos);
  for (const auto& p : names("pods", "app=fg"))
    kubectl({"patch", "pod", p, "-n", ns(), "--type=json", "-p", R"([{"op":"remove","path":"/metadata/finalizers"}])"});
  EXPECT_TRUE(waitFor([&] { return !exists("rc", "fg"); }, 60s)) << get("rc", "fg").dump();
}

// "should not delete dependents that have both valid owner and owner that's waiting for dependents to be deleted"
TEST_F(GarbageCollector, DependentsWithAnotherValidOwnerSurviveAForegroundDeletion) {
  apply(rc("to-delete", 4, "e2e.kcm.io/hold"));
  apply(R"({"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"to-stay"},"spec":{"replicas":0,)"
        R"("selector":{"app":"nobody"},"template":{"metadata":{"labels":{"app":"nobody"}},"spec":{"containers":)"
        R"([{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})");
  ASSERT_TRUE(waitFor([&] { return names("pods", "app=to-delete").size() == 4; }, 60s));
  auto pods = names("pods", "app=to-delete");
  const std::string stayUID = uid("rc", "to-stay");
  for (size_t i = 0; i < 2; ++i) addOwner("pod", pods[i], "ReplicationController", "v1", "to-stay", stayUID, true);
  ASSERT_TRUE(kubectl({"delete", "rc", "to-delete", "-n", ns(), "--cascade=foreground", "--wait=false"}).ok());
  // The two pods with a second, valid owner lose the reference to the deleted RC instead of being deleted.
  EXPECT_TRUE(waitFor([&] {
    for (size_t i = 0; i < 2; ++i) {
      Json p = get("pod", pods[i]);
      if (!p.is_object() || p["metadata"].contains("deletionTimestamp") || ownerCount(p) != 1) return false;
    }
    return true;
  }, 60s)) << get("pod", pods[0]).dump();
  for (size_t i = 2; i < 4; ++i)
    EXPECT_TRUE(waitFor([&] { return get("pod", pods[i])["metadata"].contains("deletionTimestamp"); }, 30s));
  for (const auto& p : names("pods"))
    kubectl({"patch", "pod", p, "-n", ns(), "--type=json", "-p", R"([{"op":"remove","path":"/metadata/finalizers"}])"});
  EXPECT_TRUE(waitFor([&] { return !exists("rc", "to-delete"); }, 60s));
  EXPECT_TRUE(exists("pod", pods[0]));
  EXPECT_TRUE(exists("rc", "to-stay"));
}

// "should not be blocked by dependency circle"
TEST_F(GarbageCollector, IsNotBlockedByADependencyCycle) {
  for (const char* n : {"pod1", "pod2", "pod3"})
    apply(std::string(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")") + n +
          R"("},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})");
  const std::string u1 = uid("pod", "pod1"), u2 = uid("pod", "pod2"), u3 = uid("pod", "pod3");
  addOwner("pod", "pod1", "Pod", "v1", "pod3", u3, true);
  addOwner("pod", "pod2", "Pod", "v1", "pod1", u1, true);
  addOwner("pod", "pod3", "Pod", "v1", "pod2", u2, true);
  ASSERT_TRUE(kubectl({"delete", "pod", "pod1", "-n", ns(), "--cascade=foreground", "--wait=false"}).ok());
  EXPECT_TRUE(waitFor([&] { return names("pods").empty(); }, 90s)) << kubectl({"get", "pods", "-n", ns(), "-o", "yaml"}).out;
}

// "should support cascading deletion of custom resources" (the CRD is created by the test: the collector must
// discover it and start a monitor)
TEST_F(GarbageCollector, CascadingDeletionOfCustomResources) {
  const std::string group = "gc-" + ns().substr(ns().size() - 5) + ".e2e.kcm.io";
  const std::string plural = "widgets";
  ASSERT_TRUE(kubectl({"apply", "-f", "-"},
                      R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":")" +
                          plural + "." + group + R"("},"spec":{"group":")" + group +
                          R"(","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget"},)"
                          R"("versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":)"
                          R"({"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}})")
                  .ok());
  struct Cleanup {
    std::string crd;
    ~Cleanup() { kubectl({"delete", "crd", crd, "--wait=false"}); }
  } cleanup{plural + "." + group};
  ASSERT_TRUE(waitFor([&] { return kubectl({"get", plural + "." + group, "-n", ns()}).ok(); }, 30s));
  apply(R"({"apiVersion":")" + group + R"(/v1","kind":"Widget","metadata":{"name":"owner"}})");
  const std::string ownerUID = uid(plural + "." + group, "owner");
  apply(R"({"apiVersion":")" + group + R"(/v1","kind":"Widget","metadata":{"name":"dependent","ownerReferences":[)"
        R"({"apiVersion":")" + group + R"(/v1","kind":"Widget","name":"owner","uid":")" + ownerUID + R"("}]}})");
  ASSERT_TRUE(kubectl({"delete", plural + "." + group, "owner", "-n", ns(), "--wait=false"}).ok());
  EXPECT_TRUE(waitFor([&] { return !exists(plural + "." + group, "dependent"); }, 120s, 1s));
}

// Owner references across namespaces are invalid: the dependent is collected and an event names the reason.
TEST_F(GarbageCollector, OwnerInAnotherNamespaceIsReportedAndTheDependentCollected) {
  apply(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"owner"}})");
  const std::string other = ns() + "-other";
  ASSERT_TRUE(kubectl({"create", "namespace", other}).ok());
  struct Cleanup {
    std::string ns;
    ~Cleanup() { kubectl({"delete", "namespace", ns, "--wait=false"}); }
  } cleanup{other};
  const std::string ownerUID = uid("configmap", "owner");
  ASSERT_TRUE(kubectl({"apply", "-n", other, "-f", "-"},
                      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dependent","ownerReferences":[)"
                      R"({"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":")" + ownerUID + R"("}]}})")
                  .ok());
  EXPECT_TRUE(waitFor([&] { return !kubectl({"get", "configmap", "dependent", "-n", other}).ok(); }, 60s));
  EXPECT_TRUE(exists("configmap", "owner"));
  EXPECT_TRUE(waitFor([&] {
    return kubectl({"get", "events", "-n", other, "--field-selector", "reason=OwnerRefInvalidNamespace", "-o", "name"})
               .out.size() > 0;
  }, 30s));
}

}  // namespace
}  // namespace kcm::e2e
