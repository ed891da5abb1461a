// The local control plane itself (hack/cluster.sh): apiserver ready, namespaces, KWOK nodes and pods.
// These hold before any controller of ours runs, and fail if KWOK is not running.
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

}  // namespace
}  // namespace kcm::e2e
