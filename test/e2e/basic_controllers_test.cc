// The first controllers of the basics slice, run by our kube-controller-manager with the seed's command line:
// serviceaccount (SA `default` in every namespace) and root-ca-certificate-publisher (`kube-root-ca.crt`).
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "framework/framework.h"
#include "framework/kcm_process.h"

namespace kcm::e2e {
namespace {

class BasicControllers : public E2ETest {
 protected:
  static void SetUpTestSuite() {
    kubectl({"delete", "lease", "-n", "kube-system", "kube-controller-manager", "--ignore-not-found"});
    kcm_ = new KcmProcess(seedFlagsForCluster({"--secure-port=0", "--v=1"}), "kcm-basic-controllers");
    ASSERT_TRUE(waitFor([] { return controllerStarting(kcm_->log()); }, 30s))
        << kcm_->log();
  }
  static void TearDownTestSuite() {
    delete kcm_;
    kcm_ = nullptr;
    kubectl({"delete", "lease", "-n", "kube-system", "kube-controller-manager", "--ignore-not-found"});
  }
  static std::string rootCA() {
    std::ifstream f(Cluster::get().dir + "/pki/ca.crt");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  static KcmProcess* kcm_;
};
KcmProcess* BasicControllers::kcm_ = nullptr;

TEST_F(BasicControllers, NewNamespaceGetsDefaultServiceAccountAndRootCAConfigMap) {
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return kubectl({"get", "serviceaccount", "default", "-n", ns()}).ok(); }, 5s))
      << kcm_->log().substr(0, 2000);
  ASSERT_TRUE(waitFor([&] { return kubectl({"get", "configmap", "kube-root-ca.crt", "-n", ns()}).ok(); }, 5s));
  std::printf("default SA and kube-root-ca.crt present %.2f s after the namespace was created\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  Json cm = kubectlJson({"get", "configmap", "kube-root-ca.crt", "-n", ns()});
  EXPECT_EQ(cm["data"]["ca.crt"], rootCA());
  EXPECT_EQ(cm["metadata"]["annotations"]["kubernetes.io/description"],
            "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such "
            "as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
            "distributions of Kubernetes clusters.");
  // Pods are admitted without the test creating a ServiceAccount.
  apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
    "spec":{"nodeName":"kwok-node-1","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})");
}

TEST_F(BasicControllers, DeletedServiceAccountAndConfigMapComeBackAndEditsAreReverted) {
  ASSERT_TRUE(waitFor([&] { return kubectl({"get", "serviceaccount", "default", "-n", ns()}).ok(); }, 5s));
  ASSERT_TRUE(waitFor([&] { return kubectl({"get", "configmap", "kube-root-ca.crt", "-n", ns()}).ok(); }, 5s));
  std::string oldUid = kubectl({"get", "serviceaccount", "default", "-n", ns(), "-o", "jsonpath={.metadata.uid}"}).out;
  ASSERT_TRUE(kubectl({"delete", "serviceaccount", "default", "-n", ns()}).ok());
  EXPECT_TRUE(waitFor([&] {
    ExecResult r = kubectl({"get", "serviceaccount", "default", "-n", ns(), "-o", "jsonpath={.metadata.uid}"});
    return r.ok() && !r.out.empty() && r.out != oldUid;
  }, 5s));
  ASSERT_TRUE(kubectl({"delete", "configmap", "kube-root-ca.crt", "-n", ns()}).ok());
  EXPECT_TRUE(waitFor([&] { return kubectl({"get", "configmap", "kube-root-ca.crt", "-n", ns()}).ok(); }, 5s));
  ASSERT_TRUE(kubectl({"patch", "configmap", "kube-root-ca.crt", "-n", ns(), "--type=merge", "-p",
                       R"({"data":{"ca.crt":"tampered","extra":"x"}})"}).ok());
  EXPECT_TRUE(waitFor([&] {
    Json cm = kubectlJson({"get", "configmap", "kube-root-ca.crt", "-n", ns()});
    return cm.is_object() && cm["data"].size() == 1 && cm["data"]["ca.crt"] == rootCA();
  }, 5s));
}

TEST_F(BasicControllers, NodesGetTheTTLAnnotationForASmallCluster) {
  // 3 nodes: the first band, 0 seconds. hack/cluster.sh creates nodes without the annotation.
  ASSERT_TRUE(waitFor([&] {
    Json nodes = kubectlJson({"get", "nodes", "-l", "type=kwok"});
    if (!nodes.is_object() || nodes["items"].empty()) return false;
    for (const Json& n : nodes["items"]) {
      const Json& a = n["metadata"]["annotations"];
      if (!a.is_object() || a.value("node.alpha.kubernetes.io/ttl", "") != "0") return false;
    }
    return true;
  }, 10s)) << kcm_->log().substr(0, 1500);
  // Removed by hand, it comes back (every node update is reconciled).
  std::string node = "kwok-node-2";
  ASSERT_TRUE(kubectl({"annotate", "node", node, "node.alpha.kubernetes.io/ttl-"}).ok());
  ASSERT_TRUE(kubectl({"label", "node", node, "e2e-touch=" + ns(), "--overwrite"}).ok());
  EXPECT_TRUE(waitFor([&] {
    ExecResult r = kubectl({"get", "node", node, "-o", "jsonpath={.metadata.annotations.node\\.alpha\\.kubernetes\\.io/ttl}"});
    return r.ok() && r.out == "0";
  }, 10s));
  kubectl({"label", "node", node, "e2e-touch-"});
}

}  // namespace
}  // namespace kcm::e2e

namespace kcm::e2e {
namespace {

// With the seed's --allocate-node-cidrs=true --cluster-cidr=100.64.0.0/10: each node a distinct /24.
TEST_F(BasicControllers, NodeIpamGivesEachNodeADistinctSlash24AndKwokPodIPsFallInside) {
  std::map<std::string, std::string> cidrs;
  ASSERT_TRUE(waitFor([&] {
    cidrs.clear();
    Json nodes = kubectlJson({"get", "nodes", "-l", "type=kwok"});
    if (!nodes.is_object()) return false;
    for (const Json& n : nodes["items"]) {
      std::string c = n["spec"].value("podCIDR", "");
      if (c.empty()) return false;
      EXPECT_EQ(n["spec"]["podCIDRs"].size(), 1u);
      cidrs[n["metadata"]["name"]] = c;
    }
    return cidrs.size() == 3;
  }, 15s)) << kcm_->log().substr(0, 2000);
  std::set<std::string> distinct;
  for (const auto& [node, c] : cidrs) {
    EXPECT_EQ(c.substr(0, 4), "100.") << c;
    EXPECT_EQ(c.substr(c.size() - 3), "/24") << c;
    int second = std::atoi(c.substr(4).c_str());
    EXPECT_GE(second, 64);
    EXPECT_LT(second, 128) << c << " is outside 100.64.0.0/10";
    distinct.insert(c);
  }
  EXPECT_EQ(distinct.size(), 3u);
  // KWOK takes pod IPs from the node's podCIDR.
  apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"ip"},
    "spec":{"nodeName":"kwok-node-0","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})");
  std::string ip;
  ASSERT_TRUE(waitFor([&] {
    ip = kubectl({"get", "pod", "ip", "-n", ns(), "-o", "jsonpath={.status.podIP}"}).out;
    return !ip.empty();
  }, 20s));
  const std::string prefix = cidrs["kwok-node-0"].substr(0, cidrs["kwok-node-0"].rfind('.') + 1);
  EXPECT_EQ(ip.rfind(prefix, 0), 0u) << ip << " not in " << cidrs["kwok-node-0"];
}

TEST_F(BasicControllers, NodeIpamReusesTheCIDRAfterNodeDeletionAndGivesTheNewNodeOne) {
  // A node that KWOK does not manage (no annotation): only node-ipam touches it.
  auto node = [](const std::string& name) {
    return R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name + R"(","labels":{"e2e":"ipam"}}})";
  };
  ASSERT_TRUE(kubectl({"apply", "-f", "-"}, node("ipam-a")).ok());
  std::string a;
  ASSERT_TRUE(waitFor([&] {
    a = kubectl({"get", "node", "ipam-a", "-o", "jsonpath={.spec.podCIDR}"}).out;
    return !a.empty();
  }, 15s));
  ASSERT_TRUE(kubectl({"delete", "node", "ipam-a"}).ok());
  // Released: the set hands out every other free /24 before coming back to it, but it is free again, and a
  // new node gets a CIDR distinct from all live ones.
  ASSERT_TRUE(kubectl({"apply", "-f", "-"}, node("ipam-b")).ok());
  std::string b;
  ASSERT_TRUE(waitFor([&] {
    b = kubectl({"get", "node", "ipam-b", "-o", "jsonpath={.spec.podCIDR}"}).out;
    return !b.empty();
  }, 15s));
  Json nodes = kubectlJson({"get", "nodes"});
  std::set<std::string> live;
  for (const Json& n : nodes["items"]) {
    std::string c = n["spec"].value("podCIDR", "");
    if (!c.empty()) {
      EXPECT_TRUE(live.insert(c).second) << "duplicate CIDR " << c;
    }
  }
  kubectl({"delete", "node", "ipam-b"});
}

}  // namespace
}  // namespace kcm::e2e

namespace kcm::e2e {
namespace {

TEST_F(BasicControllers, NodeIpamSurvivesARestartWithoutDuplicates) {
  auto cidrOf = [](const std::string& n) {
    return kubectl({"get", "node", n, "-o", "jsonpath={.spec.podCIDR}"}).out;
  };
  ASSERT_TRUE(waitFor([&] { return !cidrOf("kwok-node-0").empty(); }, 15s));
  // Restart kube-controller-manager: the new process must occupy existing CIDRs before allocating.
  delete kcm_;
  kubectl({"delete", "lease", "-n", "kube-system", "kube-controller-manager", "--ignore-not-found"});
  kcm_ = new KcmProcess(seedFlagsForCluster({"--secure-port=0", "--v=1"}), "kcm-basic-controllers-restarted");
  ASSERT_TRUE(waitFor([] { return controllerStarting(kcm_->log()); }, 30s));
  std::set<std::string> before;
  for (const char* n : {"kwok-node-0", "kwok-node-1", "kwok-node-2"}) before.insert(cidrOf(n));
  ASSERT_TRUE(kubectl({"apply", "-f", "-"},
                      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"ipam-after-restart"}})").ok());
  std::string fresh;
  ASSERT_TRUE(waitFor([&] { return !(fresh = cidrOf("ipam-after-restart")).empty(); }, 15s)) << kcm_->log();
  EXPECT_EQ(before.count(fresh), 0u) << fresh << " duplicates a CIDR held before the restart";
  kubectl({"delete", "node", "ipam-after-restart"});
}

}  // namespace
}  // namespace kcm::e2e

namespace kcm::e2e {
namespace {

TEST_F(BasicControllers, AggregatedClusterRolesGetTheRulesOfTheRolesTheySelect) {
  auto viewHas = [](const std::string& resource) {
    Json view = kubectlJson({"get", "clusterrole", "view"});
    if (!view.is_object() || !view.contains("rules")) return false;
    for (const Json& r : view["rules"])
      for (const Json& res : r.value("resources", Json::array()))
        if (res == resource) return true;
    return false;
  };
  // The bootstrap roles aggregated into view (pods, configmaps, ...) are there.
  ASSERT_TRUE(waitFor([&] { return viewHas("pods"); }, 15s)) << kcm_->log().substr(0, 1500);
  EXPECT_TRUE(viewHas("configmaps"));
  const std::string name = "e2e-aggregate-" + ns();
  ASSERT_TRUE(kubectl({"apply", "-f", "-"}, R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
    "metadata":{"name":")" + name + R"(","labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}},
    "rules":[{"apiGroups":["e2e.example.com"],"resources":["widgets-)" + ns() + R"("],"verbs":["get","list"]}]})").ok());
  EXPECT_TRUE(waitFor([&] { return viewHas("widgets-" + ns()); }, 15s));
  Json view = kubectlJson({"get", "clusterrole", "view", "--show-managed-fields"});
  bool managed = false;
  for (const Json& mf : view["metadata"].value("managedFields", Json::array()))
    managed |= mf.value("manager", "") == "clusterrole-aggregation-controller" && mf.value("operation", "") == "Apply";
  EXPECT_TRUE(managed);
  ASSERT_TRUE(kubectl({"delete", "clusterrole", name}).ok());
  EXPECT_TRUE(waitFor([&] { return !viewHas("widgets-" + ns()); }, 15s));
}

}  // namespace
}  // namespace kcm::e2e

namespace kcm::e2e {
namespace {

TEST_F(BasicControllers, LegacyTokenSecretGetsATokenTheApiserverAccepts) {
  ASSERT_TRUE(waitFor([&] { return kubectl({"get", "serviceaccount", "default", "-n", ns()}).ok(); }, 5s));
  const Json secret = createLegacyTokenSecret(ns(), "robot", 10s);
  ASSERT_TRUE(secret.is_object()) << kcm_->log().substr(0, 2000);
  EXPECT_TRUE(secret["data"].contains("ca.crt"));
  EXPECT_TRUE(secret["data"].contains("namespace"));
  EXPECT_FALSE(secret["metadata"]["annotations"].value("kubernetes.io/service-account.uid", "").empty());
  std::string token = exec({"sh", "-c", "printf %s '" + secret["data"]["token"].get<std::string>() + "' | base64 -d"}).out;
  ASSERT_FALSE(token.empty());
  // The apiserver's --service-account-key-file accepts our signature: it authenticates as the ServiceAccount.
  ExecResult who = exec({"kubectl", "--kubeconfig=/dev/null", "--server=" + std::string(std::getenv("APISERVER_URL")),
                         "--certificate-authority=" + Cluster::get().dir + "/pki/ca.crt", "--token=" + token,
                         "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"});
  ASSERT_TRUE(who.ok()) << who.err;
  EXPECT_EQ(who.out, "system:serviceaccount:" + ns() + ":robot");
  // Deleting the ServiceAccount deletes its legacy token Secret.
  ASSERT_TRUE(kubectl({"delete", "serviceaccount", "robot", "-n", ns()}).ok());
  EXPECT_TRUE(waitFor([&] { return !kubectl({"get", "secret", "robot-token", "-n", ns()}).ok(); }, 10s));
}

// Upstream builds the serviceaccount-token controller before the others and whatever --controllers says
// (cmd/kube-controller-manager/app BuildControllers): only a missing --service-account-private-key-file keeps it off.
TEST_F(E2ETest, TheTokenControllerRunsWhateverControllersSays) {
  std::unique_ptr<KcmProcess> kcm(startSoloKcm(
      "ttl-controller", {"--service-account-private-key-file=" + Cluster::get().dir + "/pki/sa.key"},
      "kcm-token-controller-always"));
  apply(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"}})");
  apply(R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"robot-token",
    "annotations":{"kubernetes.io/service-account.name":"robot"}},"type":"kubernetes.io/service-account-token"})");
  EXPECT_TRUE(waitFor([&] {
    Json s = kubectlJson({"get", "secret", "robot-token", "-n", ns()});
    return s.is_object() && s.contains("data") && s["data"].contains("token");
  }, 20s)) << kcm->log().substr(0, 3000);
  EXPECT_EQ(kcm->log().find("\"Warning: controller is disabled\" controller=\"serviceaccount-token-controller\""),
            std::string::npos);
}

// bootstrap-signer-controller and token-cleaner-controller, which the seed enables by name
// (--controllers=*,bootstrapsigner,tokencleaner) for kubeadm's node join: every bootstrap token that may sign gets
// its detached JWS of cluster-info's kubeconfig (checked here by an independent HS256 verifier in Python), and a
// token past its expiration is deleted, its signature with it (upstream bootstrapsigner.go, tokencleaner.go).
TEST_F(BasicControllers, BootstrapTokensSignClusterInfoAndExpiredTokensAreCleanedUp) {
  const std::string content = "apiVersion: v1\nclusters:\n- cluster:\n    server: https://127.0.0.1:6443\n  name: \"\"\n"
                              "kind: Config\n";
  auto expiresIn = [](std::chrono::seconds d) {
    std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() + d);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return std::string(buf);
  };
  auto token = [](const std::string& id, const std::string& secret, const std::string& expiration) {
    return R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"bootstrap-token-)" + id +
           R"(","namespace":"kube-system"},"type":"bootstrap.kubernetes.io/token","stringData":{"token-id":")" + id +
           R"(","token-secret":")" + secret + R"(","usage-bootstrap-signing":"true","usage-bootstrap-authentication":"true")" +
           (expiration.empty() ? "" : R"(,"expiration":")" + expiration + "\"") + "}}";
  };
  struct Cleanup {
    ~Cleanup() {
      kubectl({"delete", "configmap", "cluster-info", "-n", "kube-public", "--ignore-not-found"});
      kubectl({"delete", "secret", "-n", "kube-system", "bootstrap-token-e2eaaa", "bootstrap-token-e2ebbb",
               "--ignore-not-found"});
    }
  } cleanup;
  kubectl({"delete", "configmap", "cluster-info", "-n", "kube-public", "--ignore-not-found"});
  ASSERT_TRUE(kubectl({"create", "configmap", "cluster-info", "-n", "kube-public", "--from-literal=kubeconfig=" + content})
                  .ok());
  ASSERT_TRUE(kubectl({"apply", "-f", "-"}, token("e2eaaa", "0123456789abcdef", "")).ok());
  ASSERT_TRUE(kubectl({"apply", "-f", "-"}, token("e2ebbb", "fedcba9876543210", expiresIn(15s))).ok());
  auto data = [] { return kubectlJson({"get", "configmap", "cluster-info", "-n", "kube-public"})["data"]; };
  ASSERT_TRUE(waitFor([&] { return data().contains("jws-kubeconfig-e2eaaa") && data().contains("jws-kubeconfig-e2ebbb"); },
                      10s)) << data().dump() << kcm_->log().substr(0, 3000);
  const char* verifier = R"(
import base64, hashlib, hmac, json, sys
sig, content, kid, secret = sys.argv[1:5]
b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
header, payload, mac = sig.split(".")
assert payload == "", "not detached"
assert json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))) == {"alg": "HS256", "kid": kid}
want = hmac.new(secret.encode(), (header + "." + b64(content.encode())).encode(), hashlib.sha256).digest()
assert mac == b64(want), "bad signature"
print("verified")
)";
  for (auto [id, secret] : {std::pair{"e2eaaa", "0123456789abcdef"}, std::pair{"e2ebbb", "fedcba9876543210"}}) {
    ExecResult v = exec({"python3", "-c", verifier, data()["jws-kubeconfig-" + std::string(id)], content, id, secret});
    EXPECT_EQ(v.out, "verified\n") << v.err;
  }
  // The short-lived token goes at its expiration (the cleaner comes back then), and its signature with it.
  EXPECT_TRUE(waitFor([&] { return !kubectl({"get", "secret", "-n", "kube-system", "bootstrap-token-e2ebbb"}).ok(); },
                      40s));
  EXPECT_TRUE(waitFor([&] { return !data().contains("jws-kubeconfig-e2ebbb"); }, 10s)) << data().dump();
  EXPECT_TRUE(data().contains("jws-kubeconfig-e2eaaa"));
  EXPECT_TRUE(kubectl({"get", "secret", "-n", "kube-system", "bootstrap-token-e2eaaa"}).ok());
}

}  // namespace
}  // namespace kcm::e2e
