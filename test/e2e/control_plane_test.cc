// The local control plane itself (hack/cluster.sh): apiserver ready, namespaces, KWOK nodes and pods.
// These hold before any controller of ours runs, and fail if KWOK is not running.
#include <cstdlib>
#include <fstream>

#include "framework/framework.h"

namespace kcm::e2e {
namespace {

class ControlPlane : public E2ETest {};

TEST_F(ControlPlane, ApiserverReadyzSaysOk) {
  ExecResult r = kubectl({"get", "--raw", "/readyz"});
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_EQ(r.out, "ok");
}

TEST_F(ControlPlane, NamespaceCanBeCreated) {
  Json nsObj = kubectlJson({"get", "namespace", ns()});
  ASSERT_TRUE(nsObj.is_object());
  EXPECT_EQ(nsObj["status"]["phase"], "Active");
  EXPECT_EQ(nsObj["metadata"]["name"], ns());
}

TEST_F(ControlPlane, KwokNodesAreReady) {
  std::vector<std::string> notReady;
  bool ok = waitFor(
      [&] {
        Json nodes = kubectlJson({"get", "nodes", "-l", "type=kwok"});
        if (!nodes.is_object()) return false;
        notReady.clear();
        for (const Json& n : nodes["items"])
          if (conditionStatus(n, "Ready") != "True") notReady.push_back(n["metadata"]["name"]);
        return nodes["items"].size() == 3 && notReady.empty();
      },
      60s);
  EXPECT_TRUE(ok) << "KWOK nodes not Ready (is kwok running?): " << notReady.size();
}

TEST_F(ControlPlane, PodPinnedToKwokNodeBecomesRunningAndReadyWithPodIP) {
  // ServiceAccount admission rejects pods until the namespace has its `default` ServiceAccount, which the
  // serviceaccount controller creates. No controller manager runs in this suite, so the test creates it.
  apply(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}})");
  apply(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "pinned"},
    "spec": {
      "nodeName": "kwok-node-0",
      "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]
    }})");
  Json pod;
  bool ok = waitFor(
      [&] {
        pod = kubectlJson({"get", "pod", "pinned", "-n", ns()});
        return pod.is_object() && pod["status"].value("phase", "") == "Running" &&
               conditionStatus(pod, "Ready") == "True" && !pod["status"].value("podIP", "").empty();
      },
      60s);
  ASSERT_TRUE(ok) << "pod did not become Running/Ready with an IP (is kwok running?): " << pod.dump();
  EXPECT_EQ(pod["spec"]["nodeName"], "kwok-node-0");
  EXPECT_FALSE(pod["status"]["podIPs"].empty());
}

// The metrics APIs of the test cluster (hack/cluster.sh METRICS_API=1, test/cluster/k8s/metricsapi) answer through
// the apiserver's aggregator with the values a test writes: pod resource metrics selected by label, custom
// per-pod metrics, and no entry for a pod without values.
TEST_F(ControlPlane, MetricsAPIsServeTheValuesTestsSet) {
  const char* values = std::getenv("METRICS_VALUES");
  ASSERT_NE(values, nullptr) << "the e2e cluster runs with METRICS_API=1 (test/e2e/run.sh)";
  apply(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}})");  // no kcm here
  apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"busy","labels":{"app":"m"}},"spec":{"nodeName":"kwok-node-0","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})");
  apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"quiet","labels":{"app":"m"}},"spec":{"nodeName":"kwok-node-0","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})");
  {
    std::ofstream f(values);
    f << R"({"pods":{")" << ns() << R"(/busy":{"c":{"cpu":"250m","memory":"64Mi"}}},"custom":{")" << ns()
      << R"(/busy":{"requests_per_second":"12"}}})";
  }
  Json list;
  ASSERT_TRUE(waitFor([&] {
    ExecResult r = kubectl({"get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/" + ns() + "/pods?labelSelector=app%3Dm"});
    if (!r.ok()) return false;
    list = Json::parse(r.out);
    return list.value("items", Json::array()).size() == 1;
  }, 30s)) << list.dump();
  EXPECT_EQ(list["kind"], "PodMetricsList");
  EXPECT_EQ(list["items"][0]["metadata"]["name"], "busy");
  EXPECT_EQ(list["items"][0]["containers"][0]["usage"]["cpu"], "250m");
  ExecResult custom = kubectl({"get", "--raw", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/" + ns() +
                                                   "/pods/*/requests_per_second?labelSelector=app%3Dm"});
  ASSERT_TRUE(custom.ok()) << custom.err;
  const Json c = Json::parse(custom.out);
  ASSERT_EQ(c.value("items", Json::array()).size(), 1u) << custom.out;
  EXPECT_EQ(c["items"][0]["describedObject"]["name"], "busy");
  EXPECT_EQ(c["items"][0]["value"], "12");
  std::ofstream(values) << "{}";
}

}  // namespace
}  // namespace kcm::e2e
