// node-lifecycle-controller and taint-eviction-controller on the real cluster, run by a kube-controller-manager
// without leader election (service-account credentials, as the seed's command line).
// The taint cases reproduce upstream's test/e2e/node/taints.go with a NoExecute taint of the test's own on a KWOK
// node; the evicted pods carry a finalizer of the test so the DisruptionTarget condition can be read before they
// go (KWOK deletes terminating pods at once otherwise).
#include <atomic>
#include <thread>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

constexpr const char* kHold = "e2e.kcm.io/hold";

std::string nowMicro() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::gmtime(&t));
  char out[80];
  std::snprintf(out, sizeof out, "%s.%06lldZ", buf, static_cast<long long>(us));
  return out;
}

class NodeLifecycle : public SoloKcmSuite<NodeLifecycle> {
 public:
  static constexpr const char* kControllers =
      "node-lifecycle-controller,taint-eviction-controller,deployment-controller,replicaset-controller";
  static constexpr const char* kLogName = "kcm-node-lifecycle";
  static std::vector<std::string> extraFlags() { return {"-v=2"}; }

 protected:
  void TearDown() override {
    for (const auto& t : taints_) kubectl({"taint", "node", kNode, t + "-"});
    for (const auto& p : podNames())
      kubectl({"patch", "pod", p, "-n", ns(), "--type=json", "-p", R"([{"op":"remove","path":"/metadata/finalizers"}])"});
    E2ETest::TearDown();
  }

  // A pod bound to kNode, held by the test's finalizer; `tolerations` is a JSON array.
  void createPod(const std::string& name, const std::string& tolerations = "[]") {
    apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","finalizers":[")" + kHold +
          R"("]},"spec":{"nodeName":")" + kNode + R"(","tolerations":)" + tolerations +
          R"(,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})");
    ASSERT_TRUE(waitFor([&] { return podJson(name).value("status", Json::object()).value("phase", "") == "Running"; },
                        30s));
  }
  Json podJson(const std::string& name) {
    ExecResult r = kubectl({"get", "pod", name, "-n", ns(), "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json();
  }
  bool terminating(const std::string& name) {
    Json p = podJson(name);
    return p.is_object() && p["metadata"].contains("deletionTimestamp");
  }
  std::vector<std::string> podNames() {
    std::vector<std::string> out;
    ExecResult r = kubectl({"get", "pods", "-n", ns(), "-o", "json"});
    if (!r.ok()) return out;
    const Json list = Json::parse(r.out);  // kept alive for the loop
    for (const Json& p : list["items"]) out.push_back(p["metadata"]["name"]);
    return out;
  }
  // A NoExecute taint of this test on kNode (removed in TearDown).
  std::string taintNode() {
    std::string t = "kcm.e2e/evict-" + ns() + "=evictTaintVal:NoExecute";
    EXPECT_TRUE(kubectl({"taint", "node", kNode, t}).ok());
    taints_.push_back(t);
    return t;
  }
  std::string toleration(const std::string& seconds) {
    return R"([{"key":"kcm.e2e/evict-)" + ns() + R"(","operator":"Equal","value":"evictTaintVal","effect":"NoExecute")" +
           (seconds.empty() ? "" : R"(,"tolerationSeconds":)" + seconds) + "}]";
  }
  std::vector<Json> events(const std::string& reason) { return eventsWithReason(ns(), reason); }
  static Json nodeJson(const std::string& name) {
    ExecResult r = kubectl({"get", "node", name, "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json();
  }
  static bool hasTaint(const Json& node, const std::string& key, const std::string& effect) {
    if (!node.is_object()) return false;
    for (const Json& t : node["spec"].value("taints", Json::array()))
      if (t.value("key", "") == key && t.value("effect", "") == effect) return true;
    return false;
  }

  static constexpr const char* kNode = "kwok-node-0";
  std::vector<std::string> taints_;
};

TEST_F(NodeLifecycle, NewKwokNodeLosesNotReadyTaintOnceReadyAndPodsGetScheduled) {
  // The apiserver's TaintNodesByCondition admission gives the new node not-ready:NoSchedule; KWOK makes it Ready.
  const std::string node = "kwok-e2e-" + ns();
  ASSERT_TRUE(kubectl({"apply", "-f", "-"},
                      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + node +
                          R"(","annotations":{"kwok.x-k8s.io/node":"fake"},"labels":{"type":"kwok-e2e","e2e-ns":")" +
                          ns() + R"("}},"status":{"allocatable":{"cpu":"32","memory":"256Gi","pods":"110"},)" +
                          R"("capacity":{"cpu":"32","memory":"256Gi","pods":"110"}}})")
                  .ok());
  struct Cleanup {
    std::string n;
    ~Cleanup() { kubectl({"delete", "node", n, "--ignore-not-found"}); }
  } cleanup{node};
  ASSERT_TRUE(waitFor([&] { return conditionStatus(nodeJson(node), "Ready") == "True"; }, 30s));
  ASSERT_TRUE(waitFor([&] { return !hasTaint(nodeJson(node), "node.kubernetes.io/not-ready", "NoSchedule"); }, 10s))
      << nodeJson(node)["spec"].dump();
  // The controller also mirrors the stable os/arch labels to the beta ones, as upstream.
  EXPECT_TRUE(waitFor([&] { return nodeJson(node)["metadata"]["labels"].contains("beta.kubernetes.io/os") ||
                                   !nodeJson(node)["metadata"]["labels"].contains("kubernetes.io/os"); }, 10s));
  // The real scheduler now places a Deployment's pods there, and KWOK runs them.
  apply(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"scheduled"},"spec":{"replicas":2,)"
        R"("selector":{"matchLabels":{"app":"scheduled"}},"template":{"metadata":{"labels":{"app":"scheduled"}},)"
        R"("spec":{"nodeSelector":{"e2e-ns":")" + ns() +
        R"("},"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})");
  auto running = [&] {
    ExecResult r = kubectl({"get", "pods", "-n", ns(), "-l", "app=scheduled", "-o",
                            "jsonpath={range .items[*]}{.spec.nodeName} {.status.phase}{\"\\n\"}{end}"});
    return r.out;
  };
  EXPECT_TRUE(waitFor([&] { return running() == node + " Running\n" + node + " Running\n"; }, 60s)) << running();
  kubectl({"scale", "deployment", "scheduled", "-n", ns(), "--replicas=0"});
  waitFor([&] { return running().empty(); }, 30s);
}

TEST_F(NodeLifecycle, UnschedulableNodeGetsTheUnschedulableTaintAndLosesItWhenUncordoned) {
  const std::string node = "kwok-node-1";
  ASSERT_TRUE(kubectl({"cordon", node}).ok());
  bool tainted = waitFor([&] { return hasTaint(nodeJson(node), "node.kubernetes.io/unschedulable", "NoSchedule"); }, 10s);
  ASSERT_TRUE(kubectl({"uncordon", node}).ok());
  EXPECT_TRUE(tainted);
  EXPECT_TRUE(
      waitFor([&] { return !hasTaint(nodeJson(node), "node.kubernetes.io/unschedulable", "NoSchedule"); }, 10s));
}

// taints.go: "evicts pods from tainted nodes"
TEST_F(NodeLifecycle, EvictsPodsFromTaintedNodes) {
  createPod("victim");
  taintNode();
  ASSERT_TRUE(waitFor([&] { return terminating("victim"); }, 20s)) << kcm_->log().substr(0, 3000);
  Json p = podJson("victim");
  bool found = false;
  for (const Json& c : p["status"]["conditions"])
    if (c.value("type", "") == "DisruptionTarget") {
      found = true;
      EXPECT_EQ(c.value("status", ""), "True");
      EXPECT_EQ(c.value("reason", ""), "DeletionByTaintManager");
      EXPECT_EQ(c.value("message", ""), "Taint manager: deleting due to NoExecute taint");
    }
  EXPECT_TRUE(found) << p["status"].dump();
  ASSERT_TRUE(waitFor([&] { return !events("TaintManagerEviction").empty(); }, 10s))
      << kubectl({"get", "events", "-n", ns(), "-o", "json"}).out;
  EXPECT_EQ(events("TaintManagerEviction").at(0).value("message", ""), "Marking for deletion Pod " + ns() + "/victim");
}

// taints.go: "doesn't evict pod with tolerations from tainted nodes"
TEST_F(NodeLifecycle, DoesNotEvictPodsThatTolerateTheTaint) {
  createPod("tolerating", toleration(""));
  createPod("intolerant");
  taintNode();
  ASSERT_TRUE(waitFor([&] { return terminating("intolerant"); }, 20s));  // the controller did act on the node
  std::this_thread::sleep_for(5s);
  EXPECT_FALSE(terminating("tolerating"));
}

// taints.go: "eventually evict pod with finite tolerations from tainted nodes" and
// "evicts pods with minTolerationSeconds"
TEST_F(NodeLifecycle, EvictsPodsAfterTheirMinTolerationSeconds) {
  createPod("short", toleration("5"));
  createPod("long", toleration("20"));
  taintNode();
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return terminating("short"); }, 30s));
  double shortAfter = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(shortAfter, 4.0);
  EXPECT_FALSE(terminating("long"));
  ASSERT_TRUE(waitFor([&] { return terminating("long"); }, 40s));
  double longAfter = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(longAfter, 19.0);
}

// taints.go: "removing taint cancels eviction"
TEST_F(NodeLifecycle, RemovingTheTaintCancelsEviction) {
  createPod("spared", toleration("10"));
  std::string t = taintNode();
  std::this_thread::sleep_for(3s);
  ASSERT_TRUE(kubectl({"taint", "node", kNode, t + "-"}).ok());
  taints_.clear();
  EXPECT_TRUE(waitFor([&] { return !events("TaintManagerEviction").empty(); }, 10s));
  std::this_thread::sleep_for(12s);  // past the toleration
  EXPECT_FALSE(terminating("spared"));
  auto ev = events("TaintManagerEviction");
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.at(0).value("message", ""), "Cancelling deletion of Pod " + ns() + "/spared");
}

// Stopping KWOK stops every KWOK node's Lease. A node of the test's own in another zone keeps heartbeating (a
// cluster where every zone is fully disrupted is left alone on purpose: "master disruption mode"), so zone-a is
// FullDisruption while zone-b is Normal and zone-a's nodes are tainted unreachable:NoExecute one every
// 1/--node-eviction-rate seconds.
TEST_F(NodeLifecycle, StoppedKwokMakesNodesUnknownAndTaintedAndTolerationsDecide) {
  const std::string healthy = "e2e-healthy-" + ns();
  ASSERT_TRUE(kubectl({"apply", "-f", "-"}, R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + healthy +
                                                R"(","labels":{"topology.kubernetes.io/zone":"zone-b"}}})")
                  .ok());
  std::atomic<bool> beat{true};
  auto heartbeat = [&] {
    const std::string now = nowMicro();
    kubectl({"patch", "node", healthy, "--subresource=status", "--type=merge", "-p",
             R"({"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"e2e",)"
             R"("lastHeartbeatTime":")" + now.substr(0, 19) + R"(Z","lastTransitionTime":")" + now.substr(0, 19) +
                 R"(Z"}]}})"});
    kubectl({"apply", "-f", "-"}, R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":")" +
                                      healthy + R"(","namespace":"kube-node-lease"},"spec":{"holderIdentity":")" +
                                      healthy + R"(","leaseDurationSeconds":40,"renewTime":")" + now + R"("}})");
  };
  heartbeat();
  std::thread beater([&] {
    while (beat) {
      for (int i = 0; i < 20 && beat; ++i) std::this_thread::sleep_for(250ms);
      if (beat) heartbeat();
    }
  });
  const std::string clusterName = Cluster::get().dir.substr(Cluster::get().dir.rfind('/') + 1);
  struct Restore {
    std::atomic<bool>& beat;
    std::thread& beater;
    std::string cluster, healthy;
    ~Restore() {
      exec({"bash", repoRoot() + "/hack/cluster.sh", "start", cluster, "kwok"}, "", 120s);
      beat = false;
      beater.join();
      kubectl({"delete", "node", healthy, "--ignore-not-found"});
      kubectl({"delete", "lease", healthy, "-n", "kube-node-lease", "--ignore-not-found"});
    }
  } restore{beat, beater, clusterName, healthy};

  createPod("tolerates-5s", R"([{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute",)"
                            R"("tolerationSeconds":5}])");
  createPod("tolerates-forever",
            R"([{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute"}])");
  ASSERT_TRUE(waitFor([&] { return conditionStatus(nodeJson(healthy), "Ready") == "True"; }, 10s));

  ExecResult stop = exec({"bash", repoRoot() + "/hack/cluster.sh", "stop", clusterName, "kwok"}, "", 60s);
  ASSERT_TRUE(stop.ok()) << stop.err;
  auto t0 = std::chrono::steady_clock::now();
  // Unknown after the 50 s grace period (the lease was renewed up to 10 s before the stop).
  ASSERT_TRUE(waitFor([&] { return conditionStatus(nodeJson(kNode), "Ready") == "Unknown"; }, 90s));
  double unknownAfter = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(unknownAfter, 35.0);
  Json n = nodeJson(kNode);
  for (const Json& c : n["status"]["conditions"])
    if (c["type"] == "Ready") {
      EXPECT_EQ(c.value("reason", ""), "NodeStatusUnknown");
      EXPECT_EQ(c.value("message", ""), "Kubelet stopped posting node status.");
    }
  EXPECT_EQ(conditionStatus(nodeJson(healthy), "Ready"), "True");
  ASSERT_TRUE(waitFor([&] { return hasTaint(nodeJson(kNode), "node.kubernetes.io/unreachable", "NoExecute"); }, 45s))
      << nodeJson(kNode)["spec"].dump();
  EXPECT_TRUE(hasTaint(nodeJson(kNode), "node.kubernetes.io/unreachable", "NoSchedule"));
  // Pods on the node are marked not Ready.
  EXPECT_TRUE(waitFor([&] { return conditionStatus(podJson("tolerates-forever"), "Ready") == "False"; }, 10s));
  EXPECT_TRUE(waitFor([&] { return terminating("tolerates-5s"); }, 20s));
  std::this_thread::sleep_for(3s);
  EXPECT_FALSE(terminating("tolerates-forever"));
  EXPECT_FALSE(hasTaint(nodeJson(healthy), "node.kubernetes.io/unreachable", "NoExecute"));

  // KWOK back: the nodes report Ready again and lose both unreachable taints.
  ExecResult start = exec({"bash", repoRoot() + "/hack/cluster.sh", "start", clusterName, "kwok"}, "", 120s);
  ASSERT_TRUE(start.ok()) << start.err;
  EXPECT_TRUE(waitFor([&] {
    Json x = nodeJson(kNode);
    return conditionStatus(x, "Ready") == "True" && !hasTaint(x, "node.kubernetes.io/unreachable", "NoExecute") &&
           !hasTaint(x, "node.kubernetes.io/unreachable", "NoSchedule");
  }, 60s)) << nodeJson(kNode)["spec"].dump();
  EXPECT_FALSE(terminating("tolerates-forever"));
}

}  // namespace
}  // namespace kcm::e2e
