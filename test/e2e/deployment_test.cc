// deployment-controller (with replicaset-controller) on the real cluster, pods scheduled by the real scheduler and
// made Running/Ready by KWOK; reproduces upstream's test/e2e/apps/deployment.go cases and kubectl's rollout flow.
#include <map>
#include <set>
#include <sstream>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class Deployments : public SoloKcmSuite<Deployments> {
 public:
  static constexpr const char* kControllers =
      "deployment-controller,replicaset-controller,node-lifecycle-controller,garbage-collector-controller";
  static constexpr const char* kLogName = "kcm-deployments";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void TearDown() override {
    scaleAllToZero("deployment,rs");
    E2ETest::TearDown();
  }
  // A Deployment of `replicas` pause pods labelled app=<name>; `extraSpec` is spliced into spec (JSON members).
  static std::string deployment(const std::string& name, int replicas, const std::string& image = "pause:3.10",
                                const std::string& extraSpec = "", const std::string& podSpecExtra = "") {
    return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":")" + name + R"("},"spec":{"replicas":)" +
           std::to_string(replicas) + R"(,"selector":{"matchLabels":{"app":")" + name + R"("}},)" + extraSpec +
           R"("template":{"metadata":{"labels":{"app":")" + name + R"("}},"spec":{)" + podSpecExtra +
           R"("containers":[{"name":"c","image":"registry.k8s.io/)" + image + R"("}]}}}})";
  }
  Json get(const std::string& what, const std::string& name) {
    ExecResult r = kubectl({"get", what, name, "-n", ns(), "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json();
  }
  std::vector<Json> list(const std::string& what, const std::string& selector = "") {
    std::vector<std::string> args = {"get", what, "-n", ns(), "-o", "json"};
    if (!selector.empty()) args.insert(args.end(), {"-l", selector});
    ExecResult r = kubectl(args);
    std::vector<Json> out;
    if (!r.ok()) return out;
    const Json l = Json::parse(r.out);
    for (const Json& i : l["items"]) out.push_back(i);
    return out;
  }
  std::vector<Json> pods(const std::string& selector = "") { return list("pods", selector); }
  std::vector<Json> replicaSets(const std::string& selector = "") { return list("rs", selector); }
  bool complete(const std::string& name, int replicas) {
    Json d = get("deployment", name);
    if (!d.is_object()) return false;
    const Json& s = d["status"];
    return s.value("observedGeneration", 0) >= d["metadata"].value("generation", 1) &&
           s.value("updatedReplicas", -1) == replicas && s.value("replicas", -1) == replicas &&
           s.value("availableReplicas", -1) == replicas;
  }
  Json condition(const std::string& name, const std::string& type) {
    Json d = get("deployment", name);
    if (!d.is_object()) return Json();
    for (const Json& c : d["status"].value("conditions", Json::array()))
      if (c.value("type", "") == type) return c;
    return Json();
  }
  static std::string annotation(const Json& o, const std::string& key) {
    return o["metadata"].value("annotations", Json::object()).value(key, "");
  }
  static int specReplicas(const Json& o) { return o["spec"].value("replicas", -1); }
  static std::string image(const Json& rs) { return rs["spec"]["template"]["spec"]["containers"][0].value("image", ""); }
  Json rsWithImage(const std::string& selector, const std::string& img) {
    for (const Json& rs : replicaSets(selector))
      if (image(rs) == "registry.k8s.io/" + img) return rs;
    return Json();
  }
  void setImage(const std::string& name, const std::string& img) {
    ASSERT_TRUE(kubectl({"set", "image", "deployment/" + name, "-n", ns(), "c=registry.k8s.io/" + img}).ok());
  }
};

// deployment.go: "RollingUpdateDeployment should delete old pods and create new ones" (the Deployment adopts an
// existing ReplicaSet, whose revision it continues).
TEST_F(Deployments, RollingUpdateAdoptsTheOldReplicaSetDeletesItsPodsAndCreatesNewOnes) {
  apply(R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"test-rolling-update-controller",)"
        R"("labels":{"name":"sample-pod","pod":"pause"},)"
        R"("annotations":{"deployment.kubernetes.io/revision":"3546343826724305832"}},"spec":{"replicas":1,)"
        R"("selector":{"matchLabels":{"name":"sample-pod","pod":"pause"}},"template":{"metadata":{"labels":)"
        R"({"name":"sample-pod","pod":"pause"}},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.9"}]}}}})");
  ASSERT_TRUE(waitFor([&] { return get("rs", "test-rolling-update-controller")["status"].value("readyReplicas", 0) == 1; },
                      60s));
  apply(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"test-rolling-update-deployment"},)"
        R"("spec":{"replicas":1,"selector":{"matchLabels":{"name":"sample-pod"}},"template":{"metadata":{"labels":)"
        R"({"name":"sample-pod"}},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})");
  ASSERT_TRUE(waitFor([&] { return complete("test-rolling-update-deployment", 1); }, 90s))
      << get("deployment", "test-rolling-update-deployment")["status"].dump();
  Json old = get("rs", "test-rolling-update-controller");
  EXPECT_EQ(specReplicas(old), 0);
  EXPECT_FALSE(old["metadata"].value("ownerReferences", Json::array()).empty()) << "the old ReplicaSet was not adopted";
  Json newRS = rsWithImage("name=sample-pod", "pause:3.10");
  ASSERT_TRUE(newRS.is_object());
  EXPECT_EQ(annotation(newRS, "deployment.kubernetes.io/revision"), "3546343826724305833");
  EXPECT_FALSE(newRS["metadata"]["labels"].value("pod-template-hash", "").empty());
  EXPECT_EQ(newRS["metadata"]["name"].get<std::string>(),
            "test-rolling-update-deployment-" + newRS["metadata"]["labels"].value("pod-template-hash", ""));
  EXPECT_TRUE(waitFor([&] { return pods("pod=pause").empty(); }, 60s)) << "old pods left";
  EXPECT_EQ(pods("name=sample-pod").size(), 1u);
}

// deployment.go: "RecreateDeployment should delete old pods before creating new ones"
TEST_F(Deployments, RecreateDeletesOldPodsBeforeCreatingNewOnes) {
  apply(deployment("recreate", 3, "pause:3.9", R"("strategy":{"type":"Recreate"},)"));
  ASSERT_TRUE(waitFor([&] { return complete("recreate", 3); }, 90s));
  KcmProcess watch({"--kubeconfig=" + Cluster::get().kubeconfig, "get", "pods", "-n", ns(), "--watch-only",
                    "--output-watch-events", "-o",
                    "jsonpath={.type} {.object.metadata.name} {.object.spec.containers[0].image} "
                    "{.object.metadata.deletionTimestamp}{\"\\n\"}"},
                   "watch-" + ns(), "kubectl");
  std::this_thread::sleep_for(2s);
  setImage("recreate", "pause:3.10");
  ASSERT_TRUE(waitFor([&] { return complete("recreate", 3) && pods().size() == 3u; }, 90s));
  std::this_thread::sleep_for(1s);
  // No pod of the new template may be added while a pod of the old one still exists.
  std::istringstream in(watch.log());
  std::set<std::string> oldAlive;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string type, name, img;
    f >> type >> name >> img;
    if (img == "registry.k8s.io/pause:3.9") {
      if (type == "DELETED") oldAlive.erase(name);
      else oldAlive.insert(name);
    } else if (type == "ADDED") {
      EXPECT_TRUE(oldAlive.empty()) << "new pod " << name << " created while old pods existed";
    }
  }
  for (const Json& p : pods()) EXPECT_EQ(p["spec"]["containers"][0].value("image", ""), "registry.k8s.io/pause:3.10");
}

// kubectl: `rollout status` completes, `rollout undo` restores the previous template as a new revision; events.
TEST_F(Deployments, RolloutStatusUpdateAndUndoAsKubectlDoesThem) {
  apply(deployment("web", 4, "pause:3.9"));
  ExecResult st = kubectl({"rollout", "status", "deployment/web", "-n", ns(), "--timeout=90s"}, "", 100s);
  ASSERT_TRUE(st.ok()) << st.out << st.err;
  EXPECT_NE(st.out.find("successfully rolled out"), std::string::npos);
  setImage("web", "pause:3.10");
  st = kubectl({"rollout", "status", "deployment/web", "-n", ns(), "--timeout=90s"}, "", 100s);
  ASSERT_TRUE(st.ok()) << st.out << st.err;
  EXPECT_EQ(annotation(get("deployment", "web"), "deployment.kubernetes.io/revision"), "2");
  ASSERT_TRUE(kubectl({"rollout", "undo", "deployment/web", "-n", ns()}).ok());
  st = kubectl({"rollout", "status", "deployment/web", "-n", ns(), "--timeout=90s"}, "", 100s);
  ASSERT_TRUE(st.ok()) << st.out << st.err;
  Json d = get("deployment", "web");
  EXPECT_EQ(d["spec"]["template"]["spec"]["containers"][0].value("image", ""), "registry.k8s.io/pause:3.9");
  EXPECT_EQ(annotation(d, "deployment.kubernetes.io/revision"), "3");
  Json back = rsWithImage("app=web", "pause:3.9");
  EXPECT_EQ(annotation(back, "deployment.kubernetes.io/revision"), "3");
  EXPECT_EQ(annotation(back, "deployment.kubernetes.io/revision-history"), "1");
  EXPECT_EQ(annotation(back, "deployment.kubernetes.io/desired-replicas"), "4");
  EXPECT_EQ(annotation(back, "deployment.kubernetes.io/max-replicas"), "5");  // 4 + 25% surge rounded up
  EXPECT_EQ(specReplicas(rsWithImage("app=web", "pause:3.10")), 0);
  Json avail = condition("web", "Available");
  EXPECT_EQ(avail.value("status", ""), "True");
  EXPECT_EQ(avail.value("reason", ""), "MinimumReplicasAvailable");
  Json prog = condition("web", "Progressing");
  EXPECT_EQ(prog.value("reason", ""), "NewReplicaSetAvailable");
  ExecResult ev = kubectl({"get", "events", "-n", ns(), "--field-selector", "reason=ScalingReplicaSet", "-o", "name"});
  EXPECT_FALSE(ev.out.empty());
}

// deployment.go: "deployment should support proportional scaling"
TEST_F(Deployments, ScalingMidRolloutIsProportional) {
  apply(deployment("proportional", 10, "pause:3.9",
                   R"("strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":3,"maxUnavailable":2}},)"));
  ASSERT_TRUE(waitFor([&] { return complete("proportional", 10); }, 120s));
  // The new template's pods can never be scheduled: the rollout stalls at minAvailable old pods.
  ASSERT_TRUE(kubectl({"patch", "deployment", "proportional", "-n", ns(), "--type=merge", "-p",
                       R"({"spec":{"template":{"spec":{"nodeSelector":{"no-such-node":"x"}}}}})"}).ok());
  ASSERT_TRUE(waitFor([&] {
    auto rss = replicaSets("app=proportional");
    if (rss.size() != 2) return false;
    int oldR = -1, newR = -1;
    for (const Json& rs : rss)
      (rs["spec"]["template"]["spec"].contains("nodeSelector") ? newR : oldR) = specReplicas(rs);
    return oldR == 8 && newR == 5;
  }, 90s)) << kubectl({"get", "rs", "-n", ns()}).out;
  ASSERT_TRUE(kubectl({"scale", "deployment", "proportional", "-n", ns(), "--replicas=30"}).ok());
  // 13 replicas become 33 (30 + surge 3) in proportion: 8 -> 20, 5 -> 13.
  EXPECT_TRUE(waitFor([&] {
    int oldR = -1, newR = -1;
    for (const Json& rs : replicaSets("app=proportional"))
      (rs["spec"]["template"]["spec"].contains("nodeSelector") ? newR : oldR) = specReplicas(rs);
    return oldR == 20 && newR == 13;
  }, 60s)) << kubectl({"get", "rs", "-n", ns()}).out;
}

// progressDeadlineSeconds: a rollout that cannot progress is reported as ProgressDeadlineExceeded.
TEST_F(Deployments, StalledRolloutExceedsItsProgressDeadline) {
  apply(deployment("stuck", 2, "pause:3.10", R"("progressDeadlineSeconds":5,)",
                   R"("nodeSelector":{"no-such-node":"x"},)"));
  EXPECT_TRUE(waitFor([&] { return condition("stuck", "Progressing").value("reason", "") == "ProgressDeadlineExceeded"; },
                      60s)) << get("deployment", "stuck")["status"].dump();
  Json c = condition("stuck", "Progressing");
  EXPECT_EQ(c.value("status", ""), "False");
  EXPECT_NE(c.value("message", "").find("has timed out progressing."), std::string::npos);
  EXPECT_EQ(condition("stuck", "Available").value("status", ""), "False");
  ExecResult st = kubectl({"rollout", "status", "deployment/stuck", "-n", ns(), "--timeout=20s"}, "", 30s);
  EXPECT_FALSE(st.ok());
  EXPECT_NE((st.out + st.err).find("exceeded its progress deadline"), std::string::npos) << st.out << st.err;
}

// Paused deployments get no new ReplicaSet; resuming rolls out; revisionHistoryLimit removes the oldest.
TEST_F(Deployments, PausedDeploymentsWaitAndHistoryIsLimited) {
  apply(deployment("hist", 1, "pause:3.8", R"("revisionHistoryLimit":1,)"));
  ASSERT_TRUE(waitFor([&] { return complete("hist", 1); }, 60s));
  ASSERT_TRUE(kubectl({"rollout", "pause", "deployment/hist", "-n", ns()}).ok());
  EXPECT_TRUE(waitFor([&] { return condition("hist", "Progressing").value("reason", "") == "DeploymentPaused"; }, 20s));
  setImage("hist", "pause:3.9");
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(replicaSets("app=hist").size(), 1u) << "a paused deployment rolled out";
  ASSERT_TRUE(kubectl({"rollout", "resume", "deployment/hist", "-n", ns()}).ok());
  ASSERT_TRUE(waitFor([&] { return complete("hist", 1) && rsWithImage("app=hist", "pause:3.9").is_object(); }, 60s));
  setImage("hist", "pause:3.10");
  ASSERT_TRUE(waitFor([&] { return complete("hist", 1) && rsWithImage("app=hist", "pause:3.10").is_object(); }, 60s));
  // Three revisions, history limit 1: the new one plus one old ReplicaSet remain.
  EXPECT_TRUE(waitFor([&] { return replicaSets("app=hist").size() == 2u; }, 30s)) << kubectl({"get", "rs", "-n", ns()}).out;
  EXPECT_FALSE(rsWithImage("app=hist", "pause:3.8").is_object());
}

// deployment.go: "deployment should support rollover" -- a template update while the previous rollout is stuck
// rolls over: the intermediate ReplicaSet goes to zero at once, the adopted original once the newest is available.
TEST_F(Deployments, RolloverScalesTheIntermediateReplicaSetDown) {
  apply(R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"test-rollover-controller",)"
        R"("labels":{"name":"rollover-pod","pod":"pause"}},"spec":{"replicas":1,"selector":{"matchLabels":)"
        R"({"name":"rollover-pod","pod":"pause"}},"template":{"metadata":{"labels":{"name":"rollover-pod","pod":"pause"}},)"
        R"("spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.9"}]}}}})");
  ASSERT_TRUE(waitFor([&] { return get("rs", "test-rollover-controller")["status"].value("availableReplicas", 0) == 1; },
                      60s));
  // The first rollout can never finish: its pods are unschedulable.
  apply(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"test-rollover-deployment"},"spec":{)"
        R"("replicas":1,"minReadySeconds":10,"selector":{"matchLabels":{"name":"rollover-pod"}},)"
        R"("strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":0,"maxSurge":1}},)"
        R"("template":{"metadata":{"labels":{"name":"rollover-pod"}},"spec":{"nodeSelector":{"no-such-node":"x"},)"
        R"("containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})");
  ASSERT_TRUE(waitFor([&] { return replicaSets("name=rollover-pod").size() == 2; }, 60s));
  std::string intermediate;
  for (const Json& rs : replicaSets("name=rollover-pod"))
    if (rs["metadata"]["name"] != "test-rollover-controller") intermediate = rs["metadata"]["name"];
  ASSERT_TRUE(waitFor([&] { return specReplicas(get("rs", intermediate)) == 1; }, 30s));
  EXPECT_EQ(specReplicas(get("rs", "test-rollover-controller")), 1);  // maxUnavailable 0: the original stays
  // Roll over to a template that works.
  ASSERT_TRUE(kubectl({"patch", "deployment", "test-rollover-deployment", "-n", ns(), "--type=json", "-p",
                       R"([{"op":"remove","path":"/spec/template/spec/nodeSelector"},)"
                       R"({"op":"replace","path":"/spec/template/spec/containers/0/image","value":"registry.k8s.io/pause:3.8"}])"})
                  .ok());
  ASSERT_TRUE(waitFor([&] { return complete("test-rollover-deployment", 1); }, 90s))
      << kubectl({"get", "rs", "-n", ns()}).out;
  EXPECT_EQ(specReplicas(get("rs", "test-rollover-controller")), 0);
  EXPECT_EQ(specReplicas(get("rs", intermediate)), 0);
  Json newest = rsWithImage("name=rollover-pod", "pause:3.8");
  EXPECT_EQ(specReplicas(newest), 1);
  EXPECT_EQ(newest["status"].value("availableReplicas", 0), 1);
}

// Overlapping selectors: each Deployment keeps the ReplicaSets it owns; neither adopts the other's.
TEST_F(Deployments, OverlappingSelectorsDoNotStealReplicaSets) {
  apply(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"wide"},"spec":{"replicas":1,)"
        R"("selector":{"matchLabels":{"app":"overlap"}},"template":{"metadata":{"labels":{"app":"overlap"}},)"
        R"("spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})");
  apply(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"narrow"},"spec":{"replicas":2,)"
        R"("selector":{"matchLabels":{"app":"overlap","tier":"x"}},"template":{"metadata":{"labels":)"
        R"({"app":"overlap","tier":"x"}},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.9"}]}}}})");
  ASSERT_TRUE(waitFor([&] { return complete("wide", 1) && complete("narrow", 2); }, 60s));
  std::this_thread::sleep_for(3s);
  const std::string wideUID = get("deployment", "wide")["metadata"].value("uid", "");
  const std::string narrowUID = get("deployment", "narrow")["metadata"].value("uid", "");
  int wideRS = 0, narrowRS = 0;
  for (const Json& rs : replicaSets("app=overlap")) {
    std::string owner = rs["metadata"]["ownerReferences"][0].value("uid", "");
    (owner == wideUID ? wideRS : owner == narrowUID ? narrowRS : wideRS += 100)++;
  }
  EXPECT_EQ(wideRS, 1);
  EXPECT_EQ(narrowRS, 1);
  EXPECT_EQ(get("deployment", "wide")["status"].value("replicas", 0), 1);
  EXPECT_EQ(get("deployment", "narrow")["status"].value("replicas", 0), 2);
}

// deployment.go: "should run the lifecycle of a Deployment" -- create, patch, status, scale, delete (the garbage
// collector takes the ReplicaSets and pods with it).
TEST_F(Deployments, LifecycleCreatePatchStatusScaleDelete) {
  apply(deployment("lifecycle", 1, "pause:3.9"));
  ASSERT_TRUE(waitFor([&] { return complete("lifecycle", 1); }, 60s));
  ASSERT_TRUE(kubectl({"patch", "deployment", "lifecycle", "-n", ns(), "--type=merge", "-p",
                       R"({"metadata":{"labels":{"test-deployment":"patched"}},"spec":{"replicas":2,"template":{"spec":)"
                       R"({"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}})"}).ok());
  ASSERT_TRUE(waitFor([&] { return complete("lifecycle", 2) && rsWithImage("app=lifecycle", "pause:3.10").is_object(); },
                      60s));
  EXPECT_EQ(kubectl({"get", "deployments", "-n", ns(), "-l", "test-deployment=patched", "-o", "name"}).out,
            "deployment.apps/lifecycle\n");
  // A condition written through /status by someone else survives the controller's own status writes.
  ASSERT_TRUE(kubectl({"patch", "deployment", "lifecycle", "-n", ns(), "--subresource=status", "--type=json", "-p",
                       R"([{"op":"add","path":"/status/conditions/-","value":{"type":"StatusPatched","status":"True",)"
                       R"("reason":"E2E","message":"Set from e2e test"}}])"}).ok());
  ASSERT_TRUE(kubectl({"patch", "deployment", "lifecycle", "-n", ns(), "--subresource=scale", "--type=merge", "-p",
                       R"({"spec":{"replicas":3}})"}).ok());
  ASSERT_TRUE(waitFor([&] { return complete("lifecycle", 3); }, 60s));
  EXPECT_EQ(condition("lifecycle", "StatusPatched").value("reason", ""), "E2E");
  ASSERT_TRUE(kubectl({"delete", "deployment", "lifecycle", "-n", ns(), "--wait=false"}).ok());
  EXPECT_TRUE(waitFor([&] { return replicaSets("app=lifecycle").empty() && pods("app=lifecycle").empty(); }, 60s))
      << kubectl({"get", "rs,pods", "-n", ns()}).out;
}

}  // namespace
}  // namespace kcm::e2e
