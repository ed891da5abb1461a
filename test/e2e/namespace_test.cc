// namespace-controller on the real cluster: deleting a namespace deletes its content (pods first), reports what is
// left in status.conditions and finally removes the namespace; reproduces upstream's
// test/e2e/apimachinery/namespace.go cases.
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class Namespaces : public SoloKcmSuite<Namespaces> {
 public:
  static constexpr const char* kControllers = "namespace-controller";
  static constexpr const char* kLogName = "kcm-namespaces";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  static bool gone(const std::string& ns) {
    ExecResult r = kubectl({"get", "namespace", ns, "--ignore-not-found", "-o", "name"});
    return r.ok() && r.out.empty();
  }
  static void createNamespaceWith(const std::string& ns, const std::string& content) {
    ASSERT_TRUE(kubectl({"create", "namespace", ns}).ok());
    ASSERT_TRUE(kubectl({"apply", "-n", ns, "-f", "-"},
                        R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}})")
                    .ok());
    if (!content.empty()) {
      ExecResult r = kubectl({"apply", "-n", ns, "-f", "-"}, content);
      ASSERT_TRUE(r.ok()) << r.err;
    }
  }
  static std::string pod(const std::string& name) {
    return "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
           "}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers: [{name: c, image: registry.k8s.io/pause:3.10}]\n";
  }
  static std::string service(const std::string& name) {
    return "---\napiVersion: v1\nkind: Service\nmetadata: {name: " + name +
           "}\nspec:\n  selector: {app: x}\n  ports: [{port: 80}]\n";
  }
  static Json condition(const std::string& ns, const std::string& type) {
    ExecResult r = kubectl({"get", "namespace", ns, "-o", "json"});
    if (!r.ok()) return Json::object();
    Json n = Json::parse(r.out);
    for (const Json& c : n["status"].value("conditions", Json::array()))
      if (c.value("type", "") == type) return c;
    return Json::object();
  }
};

// namespace.go: "should ensure that all pods are removed when a namespace is deleted"
TEST_F(Namespaces, AllPodsAreRemovedWithTheNamespace) {
  const std::string target = ns() + "-pods";
  createNamespaceWith(target, pod("test-pod") + pod("test-pod-2"));
  ASSERT_TRUE(waitFor([&] { return kubectl({"get", "pods", "-n", target, "-o", "name"}).out.find("test-pod-2") != std::string::npos; },
                      20s));
  ASSERT_TRUE(kubectl({"delete", "namespace", target, "--wait=false"}).ok());
  EXPECT_TRUE(waitFor([&] { return gone(target); }, 90s)) << kubectl({"get", "namespace", target, "-o", "yaml"}).out;
  EXPECT_TRUE(kubectl({"get", "pods", "-n", target, "-o", "name"}).out.empty());
}

// namespace.go: "should ensure that all services are removed when a namespace is deleted"
TEST_F(Namespaces, AllServicesAreRemovedWithTheNamespace) {
  const std::string target = ns() + "-svc";
  createNamespaceWith(target, service("test-service"));
  ASSERT_TRUE(kubectl({"delete", "namespace", target, "--wait=false"}).ok());
  EXPECT_TRUE(waitFor([&] { return gone(target); }, 60s));
  // Recreated under the same name, it is empty.
  createNamespaceWith(target, "");
  EXPECT_TRUE(kubectl({"get", "services", "-n", target, "-o", "name"}).out.empty());
  kubectl({"delete", "namespace", target, "--wait=false"});
}

// Content held by a finalizer: the namespace reports it and waits; released, the namespace goes.
TEST_F(Namespaces, ConditionsReportContentAndFinalizersRemaining) {
  const std::string target = ns() + "-fin";
  createNamespaceWith(target, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [e2e.kcm.io/hold]\n");
  ASSERT_TRUE(kubectl({"delete", "namespace", target, "--wait=false"}).ok());
  ASSERT_TRUE(waitFor([&] { return condition(target, "NamespaceFinalizersRemaining").value("status", "") == "True"; }, 60s))
      << kubectl({"get", "namespace", target, "-o", "yaml"}).out;
  EXPECT_EQ(condition(target, "NamespaceFinalizersRemaining").value("message", ""),
            "Some content in the namespace has finalizers remaining: e2e.kcm.io/hold in 1 resource instances");
  Json remaining = condition(target, "NamespaceContentRemaining");
  EXPECT_EQ(remaining.value("status", ""), "True");
  EXPECT_EQ(remaining.value("message", ""), "Some resources are remaining: configmaps. has 1 resource instances");
  EXPECT_EQ(condition(target, "NamespaceDeletionDiscoveryFailure").value("reason", ""), "ResourcesDiscovered");
  EXPECT_EQ(condition(target, "NamespaceDeletionContentFailure").value("status", ""), "False");
  ExecResult phase = kubectl({"get", "namespace", target, "-o", "jsonpath={.status.phase}"});
  EXPECT_EQ(phase.out, "Terminating");
  ASSERT_TRUE(kubectl({"patch", "configmap", "held", "-n", target, "--type=json", "-p",
                       R"([{"op":"remove","path":"/metadata/finalizers"}])"}).ok());
  EXPECT_TRUE(waitFor([&] { return gone(target); }, 60s)) << kubectl({"get", "namespace", target, "-o", "yaml"}).out;
}

// 100 namespaces holding a few objects each are all gone within 150 s.
TEST_F(Namespaces, HundredNamespacesAreDeletedWithin150Seconds) {
  std::string manifest;
  for (int i = 0; i < 100; ++i) {
    const std::string name = "nsdel-" + std::to_string(i) + "-" + ns().substr(ns().size() - 5);
    manifest += "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: " + name + ", labels: {e2e-batch: \"" +
                ns().substr(ns().size() - 5) + "\"}}\n";
    for (const char* kind : {"ConfigMap", "Secret"})
      manifest += std::string("---\napiVersion: v1\nkind: ") + kind + "\nmetadata: {name: obj, namespace: " + name + "}\n";
    manifest += "---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa, namespace: " + name + "}\n";
  }
  ExecResult r = kubectl({"apply", "-f", "-"}, manifest, 180s);
  ASSERT_TRUE(r.ok()) << r.err;
  const std::string sel = "e2e-batch=" + ns().substr(ns().size() - 5);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(kubectl({"delete", "namespace", "-l", sel, "--wait=false"}, "", 120s).ok());
  EXPECT_TRUE(waitFor([&] { return kubectl({"get", "namespace", "-l", sel, "-o", "name"}).out.empty(); }, 150s, 2s))
      << kubectl({"get", "namespace", "-l", sel}).out;
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("seconds", std::to_string(took));
}

}  // namespace
}  // namespace kcm::e2e
