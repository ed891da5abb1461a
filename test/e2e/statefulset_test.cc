// statefulset-controller on the real cluster, as upstream test/e2e/apps/statefulset.go checks it without exec
// into pods or real volumes: stable identities created in order and removed from the highest ordinal, a halt while
// a pod is not ready, claims from volumeClaimTemplates (they stay Pending here: no provisioner) with the retention
// policy's owner references, rolling updates with a partition and a rollback, spec.ordinals.start, and adoption and
// release of orphan pods.
#include <set>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

class StatefulSets : public SoloKcmSuite<StatefulSets> {
 public:
  // garbage-collector: claims handed to a scaled-down pod (WhenScaled=Delete) go with it.
  static constexpr const char* kControllers =
      "statefulset-controller,node-lifecycle-controller,garbage-collector-controller";
  static constexpr const char* kLogName = "kcm-statefulset";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void TearDown() override {
    kubectl({"delete", "sts", "--all", "-n", ns(), "--wait=false"});
    kubectl({"delete", "pods", "--all", "-n", ns(), "--wait=false"});
    waitFor([&] { return kubectl({"get", "pods", "-n", ns(), "-o", "name"}).out.empty(); }, 60s, 1s);
    E2ETest::TearDown();
  }
  // StatefulSet "ss" of app=ss; `spec` adds spec members (each ending in a comma).
  void statefulSet(int replicas, const std::string& spec = "", const std::string& image = "registry.k8s.io/pause:3.10") {
    apply(R"({"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"ss"},"spec":{)" + spec +
          R"("replicas":)" + std::to_string(replicas) +
          R"(,"serviceName":"test","selector":{"matchLabels":{"app":"ss"}},"template":{"metadata":{"labels":{"app":"ss"}},)"
          R"("spec":{"terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":")" + image + R"("}]}}}})");
  }
  Json ssJson() {
    ExecResult r = kubectl({"get", "sts", "ss", "-n", ns(), "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json();
  }
  // "name:phase[:ready]" of the pods, by name.
  std::vector<std::string> pods() {
    std::vector<std::string> out;
    for (const auto& p : kubectlJson({"get", "pods", "-n", ns()}).value("items", Json::array())) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      out.push_back(p["metadata"]["name"].get<std::string>() + ":" + p["status"].value("phase", "") +
                    (conditionStatus(p, "Ready") == "True" ? ":ready" : ""));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  bool readyReplicas(int n) {
    Json s = ssJson();
    return s["status"].value("readyReplicas", 0) == n && s["status"].value("replicas", 0) == n &&
           s["status"].value("observedGeneration", 0) == s["metadata"].value("generation", -1);
  }
  // "" while the pod does not exist (a rolling update deletes a pod before it recreates it: polls see the gap).
  std::string podRevision(const std::string& pod) {
    ExecResult r = kubectl({"get", "pod", pod, "-n", ns(), "-o", "json", "--ignore-not-found"});
    if (!r.ok() || r.out.empty()) return "";
    return Json::parse(r.out)["metadata"]["labels"].value("controller-revision-hash", "");
  }
  std::string describe() { return ssJson()["status"].dump() + "\n" + ::testing::PrintToString(pods()); }
};

// "should provide basic identity" / "Scaling should happen in predictable order": pods created in order with
// their identity, and scale-down from the highest ordinal.
TEST_F(StatefulSets, OrderedIdentitiesAndScaleDownFromTheTop) {
  statefulSet(3);
  ASSERT_TRUE(waitFor([&] { return readyReplicas(3); }, 90s, 1s)) << describe();
  EXPECT_EQ(pods(), (std::vector<std::string>{"ss-0:Running:ready", "ss-1:Running:ready", "ss-2:Running:ready"}));
  const Json p = kubectlJson({"get", "pod", "ss-1", "-n", ns()});
  EXPECT_EQ(p["spec"].value("hostname", ""), "ss-1");
  EXPECT_EQ(p["spec"].value("subdomain", ""), "test");
  EXPECT_EQ(p["metadata"]["labels"].value("statefulset.kubernetes.io/pod-name", ""), "ss-1");
  EXPECT_EQ(p["metadata"]["labels"].value("apps.kubernetes.io/pod-index", ""), "1");
  // Created one after the other: each pod's creation is no earlier than its predecessor's.
  auto created = [&](const std::string& n) {
    return kubectlJson({"get", "pod", n, "-n", ns()})["metadata"].value("creationTimestamp", "");
  };
  EXPECT_LE(created("ss-0"), created("ss-1"));
  EXPECT_LE(created("ss-1"), created("ss-2"));
  auto ev = eventsWithReason(ns(), "SuccessfulCreate");
  std::set<std::string> messages;
  for (const auto& e : ev) messages.insert(e.value("message", ""));
  EXPECT_TRUE(messages.count("Create Pod ss-0 in StatefulSet ss successful")) << ::testing::PrintToString(messages);
  ASSERT_TRUE(kubectl({"scale", "sts", "ss", "-n", ns(), "--replicas=1"}).ok());
  ASSERT_TRUE(waitFor([&] { return pods() == std::vector<std::string>{"ss-0:Running:ready"} && readyReplicas(1); },
                      60s, 500ms))
      << describe();
}

// "Scaling should happen in predictable order and halt if any stateful pod is unhealthy": while ss-0 is not
// ready, ss-1 is not created.
TEST_F(StatefulSets, ScaleUpHaltsWhileAPodIsNotReady) {
  statefulSet(1);
  ASSERT_TRUE(waitFor([&] { return readyReplicas(1); }, 60s, 1s)) << describe();
  ASSERT_TRUE(kubectl({"patch", "pod", "ss-0", "-n", ns(), "--subresource=status", "--type=json", "-p",
                       R"([{"op":"replace","path":"/status/conditions","value":[{"type":"Ready","status":"False"}]}])"})
                  .ok());
  ASSERT_TRUE(kubectl({"scale", "sts", "ss", "-n", ns(), "--replicas=3"}).ok());
  ASSERT_TRUE(waitFor([&] { return ssJson()["status"].value("observedGeneration", 0) == 2; }, 30s));
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(pods(), (std::vector<std::string>{"ss-0:Running"})) << describe();
  ASSERT_TRUE(kubectl({"patch", "pod", "ss-0", "-n", ns(), "--subresource=status", "--type=json", "-p",
                       R"([{"op":"replace","path":"/status/conditions","value":[{"type":"Ready","status":"True"}]}])"})
                  .ok());
  EXPECT_TRUE(waitFor([&] { return readyReplicas(3); }, 90s, 1s)) << describe();
}

// volumeClaimTemplates (Parallel, so the unschedulable pods do not block each other) and
// persistentVolumeClaimRetentionPolicy WhenDeleted=Delete: claims <claim>-<set>-<ordinal> owned by the set.
TEST_F(StatefulSets, ClaimsFromTemplatesWithTheRetentionPolicy) {
  apply(R"({"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"ss"},"spec":{"replicas":2,)"
        R"("podManagementPolicy":"Parallel","persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Delete","whenScaled":"Retain"},)"
        R"("serviceName":"test","selector":{"matchLabels":{"app":"ss"}},"template":{"metadata":{"labels":{"app":"ss"}},)"
        R"("spec":{"terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10",)"
        R"("volumeMounts":[{"name":"data","mountPath":"/data"}]}]}},)"
        R"("volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],)"
        R"("resources":{"requests":{"storage":"1Gi"}}}}]}})");
  auto claims = [&] { return kubectlJson({"get", "pvc", "-n", ns()}).value("items", Json::array()); };
  ASSERT_TRUE(waitFor([&] { return claims().size() == 2 && pods().size() == 2; }, 60s, 1s)) << describe();
  const std::string uid = ssJson()["metadata"].value("uid", "");
  std::set<std::string> names;
  for (const auto& c : claims()) {
    names.insert(c["metadata"]["name"].get<std::string>());
    EXPECT_EQ(c["metadata"]["labels"].value("app", ""), "ss");
    ASSERT_TRUE(waitFor([&] {
      const Json fresh = kubectlJson({"get", "pvc", c["metadata"]["name"], "-n", ns()});
      const Json refs = fresh["metadata"].value("ownerReferences", Json::array());
      return refs.size() == 1 && refs[0].value("uid", "") == uid && refs[0].value("kind", "") == "StatefulSet";
    }, 30s));
  }
  EXPECT_EQ(names, (std::set<std::string>{"data-ss-0", "data-ss-1"}));
  const Json pod = kubectlJson({"get", "pod", "ss-0", "-n", ns()});
  bool found = false;
  for (const auto& v : pod["spec"]["volumes"])
    found |= v.value("name", "") == "data" && v["persistentVolumeClaim"].value("claimName", "") == "data-ss-0";
  EXPECT_TRUE(found) << pod["spec"]["volumes"].dump();
  kubectl({"delete", "pvc", "--all", "-n", ns(), "--wait=false"});
}

// "should perform rolling updates and roll backs of template modifications" with a partition (canary).
TEST_F(StatefulSets, RollingUpdateWithPartitionAndRollback) {
  statefulSet(3, R"("updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}},)");
  ASSERT_TRUE(waitFor([&] { return readyReplicas(3); }, 90s, 1s)) << describe();
  const std::string first = ssJson()["status"].value("currentRevision", "");
  ASSERT_FALSE(first.empty());
  ASSERT_TRUE(kubectl({"set", "image", "sts/ss", "-n", ns(), "c=registry.k8s.io/pause:3.9"}).ok());
  std::string second;
  ASSERT_TRUE(waitFor([&] {
    second = ssJson()["status"].value("updateRevision", "");
    return second != first && !second.empty() && podRevision("ss-2") == second && readyReplicas(3);
  }, 90s, 1s)) << describe();
  EXPECT_EQ(podRevision("ss-1"), first);
  EXPECT_EQ(podRevision("ss-0"), first);
  EXPECT_EQ(ssJson()["status"].value("currentRevision", ""), first);
  EXPECT_EQ(ssJson()["status"].value("updatedReplicas", 0), 1);
  ASSERT_TRUE(kubectl({"patch", "sts", "ss", "-n", ns(), "--type=merge", "-p",
                       R"({"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}})"})
                  .ok());
  ASSERT_TRUE(waitFor([&] {
    return podRevision("ss-0") == second && podRevision("ss-1") == second && readyReplicas(3) &&
           ssJson()["status"].value("currentRevision", "") == second;
  }, 120s, 1s)) << describe();
  // Roll back: the first revision comes back, renumbered; every pod on it again.
  ASSERT_TRUE(kubectl({"set", "image", "sts/ss", "-n", ns(), "c=registry.k8s.io/pause:3.10"}).ok());
  ASSERT_TRUE(waitFor([&] {
    return ssJson()["status"].value("updateRevision", "") == first && podRevision("ss-0") == first &&
           podRevision("ss-1") == first && podRevision("ss-2") == first && readyReplicas(3) &&
           ssJson()["status"].value("currentRevision", "") == first;
  }, 120s, 1s)) << describe();
  EXPECT_EQ(kubectlJson({"get", "controllerrevision", first, "-n", ns()}).value("revision", 0), 3);
}

// spec.ordinals.start and Parallel management.
TEST_F(StatefulSets, StartOrdinal) {
  statefulSet(2, R"("ordinals":{"start":3},"podManagementPolicy":"Parallel",)");
  ASSERT_TRUE(waitFor([&] { return readyReplicas(2); }, 60s, 1s)) << describe();
  EXPECT_EQ(pods(), (std::vector<std::string>{"ss-3:Running:ready", "ss-4:Running:ready"}));
}

// "should adopt matching orphans and release non-matching pods": its own pod made an orphan is adopted again, a
// pod that stops matching is released, and adopted once it matches again.
TEST_F(StatefulSets, AdoptsMatchingOrphansAndReleasesNonMatchingPods) {
  statefulSet(1);
  ASSERT_TRUE(waitFor([&] { return readyReplicas(1); }, 60s, 1s)) << describe();
  auto owner = [&] {
    ExecResult r = kubectl({"get", "pod", "ss-0", "-n", ns(), "-o", "json"});
    if (!r.ok()) return std::string("<none>");
    const Json refs = Json::parse(r.out)["metadata"].value("ownerReferences", Json::array());
    return refs.empty() ? std::string() : refs[0].value("kind", "") + "/" + refs[0].value("name", "");
  };
  ASSERT_EQ(owner(), "StatefulSet/ss");
  ASSERT_TRUE(kubectl({"patch", "pod", "ss-0", "-n", ns(), "--type=json", "-p",
                       R"([{"op":"remove","path":"/metadata/ownerReferences"}])"})
                  .ok());
  ASSERT_TRUE(waitFor([&] { return owner() == "StatefulSet/ss"; }, 60s, 500ms)) << "re-adopted";
  ASSERT_TRUE(kubectl({"label", "pod", "ss-0", "-n", ns(), "--overwrite", "app=other"}).ok());
  ASSERT_TRUE(waitFor([&] { return owner().empty(); }, 60s, 500ms)) << "released: " << owner();
  ASSERT_TRUE(kubectl({"label", "pod", "ss-0", "-n", ns(), "--overwrite", "app=ss"}).ok());
  EXPECT_TRUE(waitFor([&] { return owner() == "StatefulSet/ss"; }, 60s, 500ms)) << "adopted again: " << owner();
}

// "MinReadySeconds should be honored when enabled": ready pods count as available only after minReadySeconds.
TEST_F(StatefulSets, MinReadySecondsDelaysAvailability) {
  statefulSet(1, R"("minReadySeconds":8,)");
  ASSERT_TRUE(waitFor([&] { return readyReplicas(1); }, 60s, 500ms)) << describe();
  EXPECT_EQ(ssJson()["status"].value("availableReplicas", 0), 0) << describe();
  EXPECT_TRUE(waitFor([&] { return ssJson()["status"].value("availableReplicas", 0) == 1; }, 30s, 500ms)) << describe();
}

// maxUnavailable (MaxUnavailableStatefulSet) with Parallel: a template whose pods never become ready (KWOK keeps
// them Pending) replaces exactly maxUnavailable pods, from the top, and stops there.
TEST_F(StatefulSets, MaxUnavailableBoundsTheRollingUpdate) {
  statefulSet(4, R"("podManagementPolicy":"Parallel","updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":2}},)");
  ASSERT_TRUE(waitFor([&] { return readyReplicas(4); }, 90s, 1s)) << describe();
  const std::string first = ssJson()["status"].value("currentRevision", "");
  ASSERT_TRUE(kubectl({"patch", "sts", "ss", "-n", ns(), "--type=merge", "-p",
                       R"({"spec":{"template":{"metadata":{"annotations":{"kwok.kcm.test/behavior":"pending"}}}}})"})
                  .ok());
  auto updated = [&] {
    std::vector<std::string> out;
    for (const auto& n : {"ss-0", "ss-1", "ss-2", "ss-3"})
      if (podRevision(n) != first) out.push_back(n);
    return out;
  };
  ASSERT_TRUE(waitFor([&] { return updated() == std::vector<std::string>{"ss-2", "ss-3"}; }, 60s, 500ms)) << describe();
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(updated(), (std::vector<std::string>{"ss-2", "ss-3"})) << "two unavailable: no third pod replaced\n" << describe();
}

// persistentVolumeClaimRetentionPolicy WhenScaled=Delete: the claim of a removed ordinal is handed to its pod and
// goes with it (garbage collector); the others stay.
TEST_F(StatefulSets, ScaledDownClaimsAreDeletedWhenTheyShouldBe) {
  apply(R"({"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"ss"},"spec":{"replicas":2,)"
        R"("podManagementPolicy":"Parallel","persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Retain","whenScaled":"Delete"},)"
        R"("serviceName":"test","selector":{"matchLabels":{"app":"ss"}},"template":{"metadata":{"labels":{"app":"ss"}},)"
        R"("spec":{"terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10",)"
        R"("volumeMounts":[{"name":"data","mountPath":"/data"}]}]}},)"
        R"("volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],)"
        R"("resources":{"requests":{"storage":"1Gi"}}}}]}})");
  auto claimNames = [&] {
    std::set<std::string> out;
    for (const auto& c : kubectlJson({"get", "pvc", "-n", ns()}).value("items", Json::array()))
      if (!c["metadata"].contains("deletionTimestamp")) out.insert(c["metadata"]["name"].get<std::string>());
    return out;
  };
  ASSERT_TRUE(waitFor([&] { return claimNames() == std::set<std::string>{"data-ss-0", "data-ss-1"} && pods().size() == 2; },
                      60s, 1s)) << describe();
  ASSERT_TRUE(kubectl({"scale", "sts", "ss", "-n", ns(), "--replicas=1"}).ok());
  EXPECT_TRUE(waitFor([&] { return claimNames() == std::set<std::string>{"data-ss-0"}; }, 90s, 1s))
      << ::testing::PrintToString(claimNames()) << describe();
  kubectl({"delete", "pvc", "--all", "-n", ns(), "--wait=false"});
}

// "should implement legacy replacement when the update strategy is OnDelete": a template change replaces no pod;
// a pod deleted by hand comes back on the new revision.
TEST_F(StatefulSets, OnDeleteReplacesOnlyDeletedPods) {
  statefulSet(2, R"("updateStrategy":{"type":"OnDelete"},)");
  ASSERT_TRUE(waitFor([&] { return readyReplicas(2); }, 60s, 1s)) << describe();
  const std::string first = ssJson()["status"].value("currentRevision", "");
  ASSERT_TRUE(kubectl({"set", "image", "sts/ss", "-n", ns(), "c=registry.k8s.io/pause:3.9"}).ok());
  ASSERT_TRUE(waitFor([&] { return ssJson()["status"].value("updateRevision", "") != first; }, 30s)) << describe();
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(podRevision("ss-0"), first);
  EXPECT_EQ(podRevision("ss-1"), first);
  ASSERT_TRUE(kubectl({"delete", "pod", "ss-1", "-n", ns(), "--wait=false"}).ok());
  const std::string second = ssJson()["status"].value("updateRevision", "");
  EXPECT_TRUE(waitFor([&] { return podRevision("ss-1") == second && readyReplicas(2); }, 60s, 1s)) << describe();
  EXPECT_EQ(podRevision("ss-0"), first);
}

// "Burst scaling should run to completion even with unhealthy pods": Parallel creates and deletes past a pod that
// is not ready.
TEST_F(StatefulSets, BurstScalingIgnoresUnhealthyPods) {
  statefulSet(1, R"("podManagementPolicy":"Parallel",)");
  ASSERT_TRUE(waitFor([&] { return readyReplicas(1); }, 60s, 1s)) << describe();
  ASSERT_TRUE(kubectl({"patch", "pod", "ss-0", "-n", ns(), "--subresource=status", "--type=json", "-p",
                       R"([{"op":"replace","path":"/status/conditions","value":[{"type":"Ready","status":"False"}]}])"})
                  .ok());
  ASSERT_TRUE(kubectl({"scale", "sts", "ss", "-n", ns(), "--replicas=3"}).ok());
  ASSERT_TRUE(waitFor([&] {
    return pods() == std::vector<std::string>{"ss-0:Running", "ss-1:Running:ready", "ss-2:Running:ready"};
  }, 60s, 500ms)) << describe();
  ASSERT_TRUE(kubectl({"scale", "sts", "ss", "-n", ns(), "--replicas=0"}).ok());
  EXPECT_TRUE(waitFor([&] { return pods().empty(); }, 60s, 500ms)) << describe();
}

}  // namespace
}  // namespace kcm::e2e
