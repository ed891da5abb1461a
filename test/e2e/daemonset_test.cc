// daemonset-controller on the real cluster, as upstream test/e2e/apps/daemon_set.go and controller_revision.go
// check it: a pod on every eligible KWOK node (placed by the real scheduler through the node affinity we set),
// revived when deleted or failed, node selectors and node affinity following node labels, OnDelete and
// RollingUpdate (maxUnavailable and maxSurge) through ControllerRevisions, and a rollback that restarts no pod
// which was still on the old template.
#include <set>

#include "api/gen/apps_v1_json.h"
#include "controllers/util/pod_template_hash.h"
#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class DaemonSets : public SoloKcmSuite<DaemonSets> {
 public:
  // node-lifecycle: new KWOK nodes lose the not-ready NoSchedule taint, which daemon pods do not tolerate.
  static constexpr const char* kControllers = "daemonset-controller,node-lifecycle-controller";
  static constexpr const char* kLogName = "kcm-daemonset";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void TearDown() override {
    for (const auto& n : labelled_) kubectl({"label", "node", n, colorKey() + "-"});
    kubectl({"delete", "ds", "--all", "-n", ns(), "--wait=false"});
    kubectl({"delete", "pods", "--all", "-n", ns(), "--wait=false"});
    waitFor([&] { return kubectl({"get", "pods", "-n", ns(), "-o", "name"}).out.empty(); }, 60s, 1s);
    E2ETest::TearDown();
  }
  std::string colorKey() const { return "e2e.kcm.test/color"; }
  void labelNode(const std::string& node, const std::string& color) {
    ASSERT_TRUE(kubectl({"label", "node", node, "--overwrite", colorKey() + "=" + ns() + "-" + color}).ok());
    labelled_.insert(node);
  }
  // A DaemonSet "ds" of app=ds; `spec` adds spec members, `podSpec` pod spec members, `annotations` template ones.
  void daemonSet(const std::string& spec = R"("updateStrategy":{"type":"RollingUpdate"})",
                 const std::string& podSpec = "", const std::string& image = "registry.k8s.io/pause:3.10",
                 const std::string& annotations = "{}") {
    apply(R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds"},"spec":{)" + spec +
          R"(,"selector":{"matchLabels":{"app":"ds"}},"template":{"metadata":{"labels":{"app":"ds"},"annotations":)" +
          annotations + R"(},"spec":{)" + podSpec + (podSpec.empty() ? "" : ",") +
          R"("terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":")" + image + R"("}]}}}})");
  }
  Json dsJson() {
    ExecResult r = kubectl({"get", "ds", "ds", "-n", ns(), "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json();
  }
  struct PodInfo {
    std::string name, node, phase, hash, image;
    bool ready = false, deleting = false;
  };
  std::vector<PodInfo> pods() {
    std::vector<PodInfo> out;
    const Json list = kubectlJson({"get", "pods", "-n", ns(), "-l", "app=ds"});
    for (const auto& p : list.value("items", Json::array())) {
      PodInfo i;
      i.name = p["metadata"]["name"];
      i.node = p["spec"].value("nodeName", "");
      i.phase = p["status"].value("phase", "");
      i.hash = p["metadata"]["labels"].value("controller-revision-hash", "");
      i.image = p["spec"]["containers"][0].value("image", "");
      i.deleting = p["metadata"].contains("deletionTimestamp");
      i.ready = conditionStatus(p, "Ready") == "True";
      out.push_back(i);
    }
    return out;
  }
  std::vector<PodInfo> livePods() {
    std::vector<PodInfo> out;
    for (auto& p : pods())
      if (!p.deleting) out.push_back(p);
    return out;
  }
  // The nodes a daemon pod may run on: those whose taints the daemon tolerations cover.
  std::set<std::string> eligibleNodes() {
    static const std::set<std::string> kTolerated = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
                                                     "node.kubernetes.io/disk-pressure",
                                                     "node.kubernetes.io/memory-pressure",
                                                     "node.kubernetes.io/pid-pressure",
                                                     "node.kubernetes.io/unschedulable"};
    std::set<std::string> out;
    for (const auto& n : kubectlJson({"get", "nodes"}).value("items", Json::array())) {
      bool ok = true;
      for (const auto& t : n["spec"].value("taints", Json::array())) {
        const std::string key = t.value("key", ""), effect = t.value("effect", "");
        if ((effect == "NoSchedule" || effect == "NoExecute") && !kTolerated.count(key)) ok = false;
        if (key == "node.kubernetes.io/not-ready" && effect == "NoSchedule") ok = false;
      }
      if (ok) out.insert(n["metadata"]["name"].get<std::string>());
    }
    return out;
  }
  // Running and Ready daemon pods exactly on `nodes`, one each, and the status saying so.
  bool runningOn(const std::set<std::string>& nodes) {
    std::set<std::string> seen;
    for (const auto& p : livePods()) {
      if (p.phase != "Running" || !p.ready || !nodes.count(p.node) || !seen.insert(p.node).second) return false;
    }
    if (seen != nodes) return false;
    Json s = dsJson()["status"];
    const int n = static_cast<int>(nodes.size());
    return s.value("desiredNumberScheduled", -1) == n && s.value("numberReady", -1) == n &&
           s.value("currentNumberScheduled", -1) == n && s.value("numberAvailable", 0) == n;
  }
  std::string describe() {
    std::string out = dsJson()["status"].dump() + "\n";
    for (const auto& p : pods())
      out += p.name + " node=" + p.node + " " + p.phase + (p.ready ? " ready" : "") + (p.deleting ? " deleting" : "") +
             " hash=" + p.hash + " " + p.image + "\n";
    return out;
  }
  std::vector<Json> revisions() {
    return kubectlJson({"get", "controllerrevisions", "-n", ns()}).value("items", std::vector<Json>{});
  }
  void setImage(const std::string& image, const std::string& annotations = "null") {
    ASSERT_TRUE(kubectl({"patch", "ds", "ds", "-n", ns(), "--type=merge", "-p",
                         R"({"spec":{"template":{"metadata":{"annotations":)" + annotations +
                             R"(},"spec":{"containers":[{"name":"c","image":")" + image + R"("}]}}}})"})
                    .ok());
  }

  std::set<std::string> labelled_;
};

// "should run and stop simple daemon": a pod on each node; a deleted one comes back.
TEST_F(DaemonSets, RunsOnEveryNodeAndRevivesDeletedPods) {
  const auto nodes = eligibleNodes();
  ASSERT_GE(nodes.size(), 3u);
  daemonSet();
  ASSERT_TRUE(waitFor([&] { return runningOn(nodes); }, 90s, 1s)) << describe();
  // Bound by node affinity on metadata.name, tolerations added.
  const Json pod = kubectlJson({"get", "pods", "-n", ns(), "-l", "app=ds"})["items"][0];
  const Json terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                        ["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 1u);
  EXPECT_EQ(terms[0]["matchFields"][0]["key"], "metadata.name");
  EXPECT_EQ(terms[0]["matchFields"][0]["values"][0], pod["spec"]["nodeName"]);
  std::set<std::string> tolerations;
  for (const auto& t : pod["spec"]["tolerations"]) tolerations.insert(t.value("key", "") + ":" + t.value("effect", ""));
  EXPECT_TRUE(tolerations.count("node.kubernetes.io/unschedulable:NoSchedule")) << pod["spec"]["tolerations"].dump();
  EXPECT_TRUE(tolerations.count("node.kubernetes.io/not-ready:NoExecute"));
  EXPECT_EQ(dsJson()["status"].value("observedGeneration", 0), 1);

  const std::string victim = livePods().at(0).name;
  ASSERT_TRUE(kubectl({"delete", "pod", victim, "-n", ns(), "--wait=false"}).ok());
  EXPECT_TRUE(waitFor([&] {
    for (const auto& p : pods())
      if (p.name == victim) return false;
    return runningOn(nodes);
  }, 60s, 1s)) << describe();
}

// "should run and stop complex daemon": a node selector follows the node's labels, and a selector change moves
// the pod with a rolling update.
TEST_F(DaemonSets, NodeSelectorFollowsNodeLabels) {
  daemonSet(R"("updateStrategy":{"type":"RollingUpdate"})",
            R"("nodeSelector":{")" + colorKey() + R"(":")" + ns() + R"(-blue"})");
  ASSERT_TRUE(waitFor([&] { return dsJson()["status"].value("observedGeneration", 0) == 1; }, 30s));
  EXPECT_TRUE(pods().empty());
  EXPECT_EQ(dsJson()["status"].value("desiredNumberScheduled", -1), 0);
  labelNode("kwok-node-1", "blue");
  ASSERT_TRUE(waitFor([&] { return runningOn({"kwok-node-1"}); }, 60s, 1s)) << describe();
  labelNode("kwok-node-1", "green");
  ASSERT_TRUE(waitFor([&] { return livePods().empty(); }, 60s, 1s)) << describe();
  ASSERT_TRUE(kubectl({"patch", "ds", "ds", "-n", ns(), "--type=merge", "-p",
                       R"({"spec":{"template":{"spec":{"nodeSelector":{")" + colorKey() + R"(":")" + ns() +
                           R"(-green"}}}}})"})
                  .ok());
  EXPECT_TRUE(waitFor([&] { return runningOn({"kwok-node-1"}); }, 60s, 1s)) << describe();
}

// "should run and stop complex daemon with node affinity".
TEST_F(DaemonSets, NodeAffinityFollowsNodeLabels) {
  daemonSet(R"("updateStrategy":{"type":"RollingUpdate"})",
            R"("affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[)"
            R"({"matchExpressions":[{"key":")" + colorKey() + R"(","operator":"In","values":[")" + ns() +
                R"(-blue"]}]}]}}})");
  ASSERT_TRUE(waitFor([&] { return dsJson()["status"].value("observedGeneration", 0) == 1; }, 30s));
  EXPECT_TRUE(pods().empty());
  labelNode("kwok-node-2", "blue");
  ASSERT_TRUE(waitFor([&] { return runningOn({"kwok-node-2"}); }, 60s, 1s)) << describe();
  // The template's required terms are replaced by the node's name in the pod.
  const Json pod = kubectlJson({"get", "pods", "-n", ns(), "-l", "app=ds"})["items"][0];
  EXPECT_EQ(pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
               ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0],
            "kwok-node-2");
  ASSERT_TRUE(kubectl({"label", "node", "kwok-node-2", colorKey() + "-"}).ok());
  EXPECT_TRUE(waitFor([&] { return livePods().empty(); }, 60s, 1s)) << describe();
}

// "should retry creating failed daemon pods": a pod whose status says Failed is deleted (FailedDaemonPod) and
// replaced.
TEST_F(DaemonSets, RetriesFailedDaemonPods) {
  daemonSet(R"("updateStrategy":{"type":"RollingUpdate"})",
            R"("nodeSelector":{")" + colorKey() + R"(":")" + ns() + R"(-blue"})");
  labelNode("kwok-node-0", "blue");
  ASSERT_TRUE(waitFor([&] { return runningOn({"kwok-node-0"}); }, 60s, 1s)) << describe();
  const std::string failed = livePods().at(0).name;
  ASSERT_TRUE(kubectl({"patch", "pod", failed, "-n", ns(), "--subresource=status", "--type=merge", "-p",
                       R"({"status":{"phase":"Failed"}})"})
                  .ok());
  EXPECT_TRUE(waitFor([&] {
    auto live = livePods();
    return live.size() == 1 && live[0].name != failed && runningOn({"kwok-node-0"});
  }, 60s, 1s)) << describe();
  auto ev = eventsWithReason(ns(), "FailedDaemonPod");
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev[0].value("message", ""),
            "Found failed daemon pod " + ns() + "/" + failed + " on node kwok-node-0, will try to kill it");
  EXPECT_EQ(ev[0]["source"].value("component", ""), "daemonset-controller");
}

// "should not update pod when spec was updated and update strategy is OnDelete".
TEST_F(DaemonSets, OnDeleteKeepsPodsAcrossTemplateChanges) {
  daemonSet(R"("updateStrategy":{"type":"OnDelete"})",
            R"("nodeSelector":{")" + colorKey() + R"(":")" + ns() + R"(-blue"})");
  labelNode("kwok-node-0", "blue");
  labelNode("kwok-node-1", "blue");
  ASSERT_TRUE(waitFor([&] { return runningOn({"kwok-node-0", "kwok-node-1"}); }, 60s, 1s)) << describe();
  std::set<std::string> before;
  for (const auto& p : livePods()) before.insert(p.name);
  setImage("registry.k8s.io/pause:3.9");
  ASSERT_TRUE(waitFor([&] { return revisions().size() == 2; }, 30s)) << describe();
  ASSERT_TRUE(waitFor([&] { return dsJson()["status"].value("observedGeneration", 0) == 2; }, 30s));
  std::this_thread::sleep_for(3s);
  std::set<std::string> after;
  for (const auto& p : livePods()) after.insert(p.name);
  EXPECT_EQ(after, before);
  EXPECT_EQ(dsJson()["status"].value("updatedNumberScheduled", 0), 0);  // omitted when zero, as Go encodes it
  // A deleted pod comes back on the new template.
  ASSERT_TRUE(kubectl({"delete", "pod", *before.begin(), "-n", ns(), "--wait=false"}).ok());
  EXPECT_TRUE(waitFor([&] { return dsJson()["status"].value("updatedNumberScheduled", 0) == 1 &&
                                   runningOn({"kwok-node-0", "kwok-node-1"}); }, 60s, 1s)) << describe();
}

// "should update pod when spec was updated and update strategy is RollingUpdate", with the ControllerRevisions
// (controller_revision.go): one per template, owned by the DaemonSet, labelled with the hash its pods carry.
TEST_F(DaemonSets, RollingUpdateReplacesEveryPodThroughRevisions) {
  daemonSet(R"("updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":1}})",
            R"("nodeSelector":{")" + colorKey() + R"(":")" + ns() + R"(-blue"})");
  for (auto n : {"kwok-node-0", "kwok-node-1", "kwok-node-2"}) labelNode(n, "blue");
  const std::set<std::string> all = {"kwok-node-0", "kwok-node-1", "kwok-node-2"};
  ASSERT_TRUE(waitFor([&] { return runningOn(all); }, 90s, 1s)) << describe();
  auto revs = revisions();
  ASSERT_EQ(revs.size(), 1u);
  const std::string firstHash = revs[0]["metadata"]["labels"].value("controller-revision-hash", "");
  EXPECT_EQ(revs[0]["metadata"]["name"], "ds-" + firstHash);
  EXPECT_EQ(revs[0].value("revision", 0), 1);
  EXPECT_EQ(revs[0]["metadata"]["ownerReferences"][0].value("kind", ""), "DaemonSet");
  for (const auto& p : livePods()) EXPECT_EQ(p.hash, firstHash);
  setImage("registry.k8s.io/pause:3.9");
  ASSERT_TRUE(waitFor([&] {
    if (!runningOn(all)) return false;
    for (const auto& p : livePods())
      if (p.image != "registry.k8s.io/pause:3.9" || p.hash == firstHash) return false;
    return dsJson()["status"].value("updatedNumberScheduled", 0) == 3;
  }, 120s, 1s)) << describe();
  revs = revisions();
  ASSERT_EQ(revs.size(), 2u);
  int64_t newest = 0;
  for (const auto& r : revs) newest = std::max<int64_t>(newest, r.value("revision", 0));
  EXPECT_EQ(newest, 2);
}

// "should surge pods onto nodes when spec was updated and update strategy is RollingUpdate": with maxSurge the
// new pod starts beside the old one, which stays until the new one is available; a template whose pods never
// become ready (KWOK keeps them Pending) shows it without racing KWOK's readiness.
TEST_F(DaemonSets, SurgeStartsNewPodsBeforeOldOnesGo) {
  daemonSet(R"("updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":0,"maxSurge":1}})",
            R"("nodeSelector":{")" + colorKey() + R"(":")" + ns() + R"(-blue"})");
  labelNode("kwok-node-0", "blue");
  labelNode("kwok-node-1", "blue");
  const std::set<std::string> both = {"kwok-node-0", "kwok-node-1"};
  ASSERT_TRUE(waitFor([&] { return runningOn(both); }, 60s, 1s)) << describe();
  const std::string origHash = livePods().at(0).hash;
  setImage("registry.k8s.io/pause:3.9", R"({"kwok.kcm.test/behavior":"pending"})");
  auto surgedOnce = [&] {
    int oldRunning = 0, fresh = 0;
    for (const auto& p : livePods()) {
      if (p.hash == origHash && p.ready) ++oldRunning;
      else if (p.hash != origHash) ++fresh;
    }
    return oldRunning == 2 && fresh == 1;
  };
  ASSERT_TRUE(waitFor(surgedOnce, 60s, 500ms)) << describe();
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(surgedOnce()) << "maxSurge 1: one new pod, and no old pod goes before it is available\n" << describe();
  setImage("registry.k8s.io/pause:3.9");
  EXPECT_TRUE(waitFor([&] {
    for (const auto& p : livePods())
      if (p.hash == origHash || p.image != "registry.k8s.io/pause:3.9") return false;
    return runningOn(both);
  }, 120s, 1s)) << describe();
}

// "should rollback without unnecessary restarts": a template whose pods never become ready stalls the update;
// rolling back replaces only the stalled new pods and keeps every pod still on the original template.
TEST_F(DaemonSets, RollbackRestartsOnlyTheNewPods) {
  daemonSet(R"("updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":1}})",
            R"("nodeSelector":{")" + colorKey() + R"(":")" + ns() + R"(-blue"})");
  for (auto n : {"kwok-node-0", "kwok-node-1", "kwok-node-2"}) labelNode(n, "blue");
  const std::set<std::string> all = {"kwok-node-0", "kwok-node-1", "kwok-node-2"};
  ASSERT_TRUE(waitFor([&] { return runningOn(all); }, 90s, 1s)) << describe();
  const std::string origHash = livePods().at(0).hash;
  // KWOK keeps pods with this annotation Pending: they never become ready, like upstream's non-existent image.
  setImage("registry.k8s.io/pause:does-not-exist", R"({"kwok.kcm.test/behavior":"pending"})");
  std::set<std::string> oldPods;
  ASSERT_TRUE(waitFor([&] {
    int fresh = 0;
    oldPods.clear();
    for (const auto& p : livePods()) {
      if (p.hash != origHash) ++fresh;
      else oldPods.insert(p.name);
    }
    return fresh == 1 && oldPods.size() == 2;
  }, 60s, 1s)) << describe();
  std::this_thread::sleep_for(3s);  // stalled: maxUnavailable is used up by the pending pod
  int stillOld = 0;
  for (const auto& p : livePods()) stillOld += oldPods.count(p.name);
  EXPECT_EQ(stillOld, 2) << describe();
  setImage("registry.k8s.io/pause:3.10");
  ASSERT_TRUE(waitFor([&] { return runningOn(all); }, 90s, 1s)) << describe();
  int kept = 0;
  for (const auto& p : livePods()) {
    kept += oldPods.count(p.name);
    EXPECT_EQ(p.hash, origHash);
  }
  EXPECT_EQ(kept, 2) << "pods on the original template were not restarted\n" << describe();
  // The original revision came back (renumbered), no new one was made for it.
  auto revs = revisions();
  EXPECT_EQ(revs.size(), 2u);
  for (const auto& r : revs)
    if (r["metadata"]["labels"].value("controller-revision-hash", "") == origHash) EXPECT_EQ(r.value("revision", 0), 3);
}

// controller_revision.go "should manage the lifecycle of a ControllerRevision": a hand-made revision holding the
// current template is taken as current (the original may go), and when the template then changes to the one that
// revision's name was hashed from, the name collides: status.collisionCount goes to 1 and the new revision (3)
// gets the next name.
TEST_F(DaemonSets, ControllerRevisionLifecycleAndHashCollision) {
  const auto nodes = eligibleNodes();
  daemonSet();
  ASSERT_TRUE(waitFor([&] { return runningOn(nodes); }, 90s, 1s)) << describe();
  auto count = [&] { return kubectlJson({"get", "controllerrevisions", "-n", ns(), "-l", "app=ds"})["items"].size(); };
  ASSERT_EQ(count(), 1u);
  Json initial = revisions().at(0);
  const Json ds = dsJson();
  ASSERT_EQ(initial["metadata"]["ownerReferences"][0].value("uid", ""), ds["metadata"].value("uid", ""));
  const std::string initialName = initial["metadata"]["name"];
  ASSERT_TRUE(kubectl({"patch", "controllerrevision", initialName, "-n", ns(), "-p",
                       R"({"metadata":{"labels":{")" + initialName + R"(":"patched"}}})"})
                  .ok());
  // The name upstream's test computes for the template with terminationGracePeriodSeconds 1.
  Json changed = ds;
  changed["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1;
  api::apps::v1::DaemonSet typed;
  ASSERT_TRUE(api::apps::v1::fromJson(changed.dump(), typed).ok());
  const std::string newHash = controllers::computeHash(typed.spec.template_, typed.status.collisionCount);
  const std::string newName = "ds-" + newHash;
  Json rev = {{"apiVersion", "apps/v1"}, {"kind", "ControllerRevision"},
              {"metadata", {{"name", newName}, {"labels", {{"app", "ds"}, {"controller-revision-hash", newHash}}},
                            {"ownerReferences", ds["metadata"].contains("uid")
                                                    ? Json::array({{{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"},
                                                                    {"name", "ds"}, {"uid", ds["metadata"]["uid"]},
                                                                    {"controller", true}, {"blockOwnerDeletion", true}}})
                                                    : Json::array()}}},
              {"data", initial["data"]}, {"revision", initial.value("revision", 0) + 1}};
  ASSERT_TRUE(kubectl({"create", "-n", ns(), "-f", "-"}, rev.dump()).ok());
  ASSERT_TRUE(waitFor([&] { return count() == 2; }, 30s));
  ASSERT_TRUE(kubectl({"delete", "controllerrevision", initialName, "-n", ns()}).ok());
  ASSERT_TRUE(waitFor([&] { return count() == 1; }, 30s));
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(count(), 1u) << "the hand-made revision holds the current template: nothing is recreated";
  ASSERT_TRUE(kubectl({"label", "controllerrevision", newName, "-n", ns(), newName + "=updated"}).ok());
  ASSERT_TRUE(kubectl({"patch", "ds", "ds", "-n", ns(), "-p",
                       R"({"spec":{"template":{"spec":{"terminationGracePeriodSeconds":1}}}})"})
                  .ok());
  ASSERT_TRUE(waitFor([&] { return count() == 2; }, 30s)) << describe();
  EXPECT_EQ(dsJson()["status"].value("collisionCount", 0), 1);
  ASSERT_TRUE(kubectl({"delete", "controllerrevisions", "-n", ns(), "-l", newName + "=updated"}).ok());
  ASSERT_TRUE(waitFor([&] { return count() == 1; }, 30s));
  auto left = revisions();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].value("revision", 0), 3);
  EXPECT_EQ(left[0]["metadata"]["name"], "ds-" + controllers::computeHash(typed.spec.template_, 1));
}

}  // namespace
}  // namespace kcm::e2e
