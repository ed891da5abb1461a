// resourcequota-controller on the real cluster, as upstream test/e2e/apimachinery/resource_quota.go checks it:
// status promptly calculated; the life of a pod, service, secret, configMap, replication controller, replica set,
// PVC (with a storage class) and custom resource; Terminating/NotTerminating and BestEffort/NotBestEffort scopes;
// scope selectors (PriorityClass In/NotIn/Exists, CrossNamespacePodAffinity); update and delete. The apiserver's
// quota admission decides from the status we write: a create beyond it is refused, a release lets it through.
#include <map>

#include "framework/solo_kcm_suite.h"

namespace kcm::e2e {
namespace {

constexpr const char* kExtendedResource = "example.com/dongle";

class ResourceQuotas : public SoloKcmSuite<ResourceQuotas> {
 public:
  static constexpr const char* kControllers = "resourcequota-controller";
  static constexpr const char* kLogName = "kcm-resourcequota";
  static std::vector<std::string> extraFlags() { return {}; }

 protected:
  void TearDown() override {
    for (const auto& c : clusterObjects_) kubectl({"delete", c, "--ignore-not-found", "--wait=false"});
    // No PVC protection controller here: release the claims it would.
    for (const auto& p : kubectlJson({"get", "pvc", "-n", ns()}).value("items", Json::array()))
      kubectl({"patch", "pvc", p["metadata"]["name"], "-n", ns(), "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
    E2ETest::TearDown();
  }
  // upstream newTestResourceQuota's hard limits.
  static std::string testHard() {
    return std::string(R"({"pods":"5","services":"10","services.nodeports":"1","services.loadbalancers":"1",)") +
           R"("replicationcontrollers":"10","resourcequotas":"1","cpu":"1","memory":"500Mi","configmaps":"10",)" +
           R"("secrets":"10","persistentvolumeclaims":"10","requests.storage":"10Gi","ephemeral-storage":"50Gi",)" +
           R"("gold.storageclass.storage.k8s.io/persistentvolumeclaims":"10",)" +
           R"("gold.storageclass.storage.k8s.io/requests.storage":"10Gi","count/replicasets.apps":"5",)" +
           R"("requests.example.com/dongle":"3"})";
  }
  void quota(const std::string& name, const std::string& hard, const std::string& extraSpec = "") {
    apply(R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":")" + name + R"("},"spec":{"hard":)" +
          hard + (extraSpec.empty() ? "" : "," + extraSpec) + "}}");
  }
  Json quotaJson(const std::string& name) {
    ExecResult r = kubectl({"get", "resourcequota", name, "-n", ns(), "-o", "json"});
    return r.ok() ? Json::parse(r.out) : Json();
  }
  // upstream waitForResourceQuota: every listed used value as given (canonical quantities compare as text).
  bool waitUsed(const std::string& name, const std::map<std::string, std::string>& want, std::chrono::seconds t = 60s) {
    return waitFor([&] {
      const Json q = quotaJson(name);
      const Json used = q.is_null() ? Json() : q["status"].value("used", Json::object());
      for (const auto& [k, v] : want)
        if (!used.contains(k) || used[k] != v) return false;
      return true;
    }, t, 250ms);
  }
  std::string describeQuota(const std::string& name) { return quotaJson(name)["status"].dump(); }
  // kubectl create of a manifest in the namespace; true when the apiserver accepted it.
  bool create(const std::string& manifest) {
    return kubectl({"create", "-n", ns(), "-f", "-"}, manifest).ok();
  }
  static std::string pod(const std::string& name, const std::string& requests, const std::string& limits,
                         const std::string& extraSpec = "") {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"("},"spec":{)" + extraSpec +
           (extraSpec.empty() ? "" : ",") +
           R"("terminationGracePeriodSeconds":0,"containers":[{"name":"pause","image":"registry.k8s.io/pause:3.10","resources":{"requests":)" +
           requests + R"(,"limits":)" + limits + "}}]}}";
  }
  void deletePod(const std::string& name) {
    ASSERT_TRUE(kubectl({"delete", "pod", name, "-n", ns(), "--grace-period=0", "--force"}).ok());
  }
  int count(const std::string& kind) {
    return static_cast<int>(kubectlJson({"get", kind, "-n", ns()}).value("items", Json::array()).size());
  }
  std::vector<std::string> clusterObjects_;
};

// "should create a ResourceQuota and ensure its status is promptly calculated"
TEST_F(ResourceQuotas, StatusIsPromptlyCalculated) {
  quota("test-quota", testHard());
  ASSERT_TRUE(waitUsed("test-quota", {{"resourcequotas", "1"}})) << describeQuota("test-quota");
  const Json q = quotaJson("test-quota");
  EXPECT_EQ(q["status"]["hard"], q["spec"]["hard"]);
  // Every hard limit an evaluator computes has a usage.
  const Json used = q["status"]["used"];
  for (const char* k : {"pods", "services", "services.nodeports", "services.loadbalancers", "replicationcontrollers",
                        "cpu", "memory", "configmaps", "secrets", "persistentvolumeclaims", "requests.storage",
                        "ephemeral-storage", "gold.storageclass.storage.k8s.io/persistentvolumeclaims",
                        "gold.storageclass.storage.k8s.io/requests.storage", "count/replicasets.apps",
                        "requests.example.com/dongle"})
    EXPECT_TRUE(used.contains(k)) << k << " in " << used.dump();
  EXPECT_EQ(used["pods"], "0");
  EXPECT_EQ(used["cpu"], "0");
}

// "should create a ResourceQuota and capture the life of a pod"
TEST_F(ResourceQuotas, CapturesTheLifeOfAPod) {
  quota("test-quota", testHard());
  ASSERT_TRUE(waitUsed("test-quota", {{"resourcequotas", "1"}, {"pods", "0"}})) << describeQuota("test-quota");
  ASSERT_TRUE(create(pod("test-pod",
                         std::string(R"({"cpu":"500m","memory":"252Mi","ephemeral-storage":"30Gi",")") +
                             kExtendedResource + R"(":"2"})",
                         std::string(R"({")") + kExtendedResource + R"(":"2"})")));
  ASSERT_TRUE(waitUsed("test-quota", {{"pods", "1"}, {"cpu", "500m"}, {"memory", "252Mi"},
                                      {"ephemeral-storage", "30Gi"}, {"requests.example.com/dongle", "2"}}))
      << describeQuota("test-quota");
  // Beyond the remaining cpu; beyond the remaining extended resource.
  EXPECT_FALSE(create(pod("fail-pod", R"({"cpu":"600m","memory":"100Mi"})", "{}")));
  EXPECT_FALSE(create(pod("fail-pod-for-extended-resource",
                          std::string(R"({"cpu":"500m","memory":"100Mi","ephemeral-storage":"30Gi",")") +
                              kExtendedResource + R"(":"2"})",
                          std::string(R"({")") + kExtendedResource + R"(":"2"})")));
  deletePod("test-pod");
  EXPECT_TRUE(waitUsed("test-quota", {{"pods", "0"}, {"cpu", "0"}, {"memory", "0"}, {"ephemeral-storage", "0"},
                                      {"requests.example.com/dongle", "0"}}))
      << describeQuota("test-quota");
  // Released: the same pod fits again.
  EXPECT_TRUE(create(pod("test-pod-2", R"({"cpu":"600m","memory":"100Mi"})", "{}")));
}

// "should create a ResourceQuota and capture the life of a service"
TEST_F(ResourceQuotas, CapturesTheLifeOfServices) {
  quota("test-quota", testHard());
  ASSERT_TRUE(waitUsed("test-quota", {{"services", "0"}}));
  auto svc = [](const std::string& name, const std::string& type) {
    return R"({"apiVersion":"v1","kind":"Service","metadata":{"name":")" + name + R"("},"spec":{"type":")" + type +
           R"(","ports":[{"port":80,"targetPort":80}]}})";
  };
  ASSERT_TRUE(create(svc("test-service-clusterip", "ClusterIP")));
  ASSERT_TRUE(create(svc("test-service-np", "NodePort")));
  ASSERT_TRUE(waitUsed("test-quota", {{"services", "2"}, {"services.nodeports", "1"}, {"services.loadbalancers", "0"}}))
      << describeQuota("test-quota");
  EXPECT_FALSE(create(svc("test-service-np-2", "NodePort")));  // services.nodeports is 1
  ASSERT_TRUE(kubectl({"delete", "svc", "--all", "-n", ns()}).ok());
  EXPECT_TRUE(waitUsed("test-quota", {{"services", "0"}, {"services.nodeports", "0"}})) << describeQuota("test-quota");
  EXPECT_TRUE(create(svc("test-service-lb", "LoadBalancer")));
  EXPECT_TRUE(waitUsed("test-quota", {{"services", "1"}, {"services.loadbalancers", "1"}, {"services.nodeports", "1"}}))
      << describeQuota("test-quota");
}

// "capture the life of a secret" and "of a configMap": object counts of resources every namespace may hold some of.
TEST_F(ResourceQuotas, CapturesTheLifeOfSecretsAndConfigMaps) {
  const int secrets = count("secrets"), configMaps = count("configmaps");
  quota("test-quota", testHard());
  ASSERT_TRUE(waitUsed("test-quota", {{"secrets", std::to_string(secrets)}, {"configmaps", std::to_string(configMaps)}}));
  ASSERT_TRUE(create(R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"test-secret"},"data":{"k":"dg=="}})"));
  ASSERT_TRUE(create(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"test-cm"},"data":{"a":"b"}})"));
  ASSERT_TRUE(waitUsed("test-quota", {{"secrets", std::to_string(secrets + 1)},
                                      {"configmaps", std::to_string(configMaps + 1)}}));
  ASSERT_TRUE(kubectl({"delete", "secret", "test-secret", "-n", ns()}).ok());
  ASSERT_TRUE(kubectl({"delete", "configmap", "test-cm", "-n", ns()}).ok());
  EXPECT_TRUE(waitUsed("test-quota", {{"secrets", std::to_string(secrets)}, {"configmaps", std::to_string(configMaps)}}))
      << describeQuota("test-quota");
}

// "capture the life of a replication controller" and "of a replica set" (count/replicasets.apps: a discovered
// resource counted through a metadata informer).
TEST_F(ResourceQuotas, CapturesTheLifeOfReplicationControllersAndReplicaSets) {
  quota("test-quota", testHard());
  ASSERT_TRUE(waitUsed("test-quota", {{"replicationcontrollers", "0"}, {"count/replicasets.apps", "0"}}));
  const std::string tmpl =
      R"("template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})";
  ASSERT_TRUE(create(R"({"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"test-rc"},"spec":{"replicas":0,"selector":{"app":"x"},)" +
                     tmpl + "}}"));
  ASSERT_TRUE(create(R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"test-rs"},"spec":{"replicas":0,"selector":{"matchLabels":{"app":"x"}},)" +
                     tmpl + "}}"));
  ASSERT_TRUE(waitUsed("test-quota", {{"replicationcontrollers", "1"}, {"count/replicasets.apps", "1"}}));
  ASSERT_TRUE(kubectl({"delete", "rc", "test-rc", "-n", ns()}).ok());
  ASSERT_TRUE(kubectl({"delete", "rs", "test-rs", "-n", ns()}).ok());
  EXPECT_TRUE(waitUsed("test-quota", {{"replicationcontrollers", "0"}, {"count/replicasets.apps", "0"}}))
      << describeQuota("test-quota");
}

// "capture the life of a persistent volume claim [with a storage class]"
TEST_F(ResourceQuotas, CapturesTheLifeOfPersistentVolumeClaims) {
  quota("test-quota", testHard());
  ASSERT_TRUE(waitUsed("test-quota", {{"persistentvolumeclaims", "0"}, {"requests.storage", "0"}}));
  auto pvc = [](const std::string& name, const std::string& cls) {
    return R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + name +
           R"("},"spec":{"accessModes":["ReadWriteOnce"],)" + (cls.empty() ? "" : R"("storageClassName":")" + cls + R"(",)") +
           R"("resources":{"requests":{"storage":"1Gi"}}}})";
  };
  ASSERT_TRUE(create(pvc("test-claim", "")));
  ASSERT_TRUE(create(pvc("test-claim-gold", "gold")));
  ASSERT_TRUE(waitUsed("test-quota", {{"persistentvolumeclaims", "2"}, {"requests.storage", "2Gi"},
                                      {"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1"},
                                      {"gold.storageclass.storage.k8s.io/requests.storage", "1Gi"}}))
      << describeQuota("test-quota");
  for (const char* n : {"test-claim", "test-claim-gold"}) {
    ASSERT_TRUE(kubectl({"delete", "pvc", n, "-n", ns(), "--wait=false"}).ok());
    // What the PVC protection controller would do for an unused claim.
    kubectl({"patch", "pvc", n, "-n", ns(), "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
  }
  EXPECT_TRUE(waitUsed("test-quota", {{"persistentvolumeclaims", "0"}, {"requests.storage", "0"},
                                      {"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "0"},
                                      {"gold.storageclass.storage.k8s.io/requests.storage", "0"}}))
      << describeQuota("test-quota");
}

// "capture the life of a custom resource": a CRD is picked up by the next discovery sync (at most 30 s).
TEST_F(ResourceQuotas, CapturesTheLifeOfACustomResource) {
  // count/<plural>.<group> must be a qualified name (at most 63 bytes after "count/").
  const std::string group = "q" + ns().substr(ns().size() - 5) + ".e2e.kcm.test", plural = "widgets";
  clusterObjects_.push_back("crd/" + plural + "." + group);
  ASSERT_TRUE(kubectl({"apply", "-f", "-"},
                      R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":")" +
                          plural + "." + group + R"("},"spec":{"group":")" + group +
                          R"(","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}})")
                  .ok());
  ASSERT_TRUE(waitFor([&] { return kubectl({"get", "widgets." + group, "-n", ns()}).ok(); }, 30s));
  const std::string countName = "count/" + plural + "." + group;
  // upstream updateResourceQuotaUntilUsageAppears: bump spec.hard until the usage shows up.
  quota("quota-for-widgets", R"({")" + countName + R"(":"0"})");
  int bump = 0;
  ASSERT_TRUE(waitFor([&] {
    if (quotaJson("quota-for-widgets")["status"].value("used", Json::object()).contains(countName)) return true;
    kubectl({"patch", "resourcequota", "quota-for-widgets", "-n", ns(), "--type=merge", "-p",
             R"({"spec":{"hard":{")" + countName + R"(":")" + std::to_string(++bump) + R"("}}})"});
    return false;
  }, 90s, 1s)) << describeQuota("quota-for-widgets");
  ASSERT_TRUE(kubectl({"delete", "resourcequota", "quota-for-widgets", "-n", ns()}).ok());

  quota("test-quota", R"({")" + countName + R"(":"1","resourcequotas":"1"})");
  ASSERT_TRUE(waitUsed("test-quota", {{countName, "0"}, {"resourcequotas", "1"}}));
  auto widget = [&](const std::string& name) {
    return R"({"apiVersion":")" + group + R"(/v1","kind":"Widget","metadata":{"name":")" + name + R"("}})";
  };
  ASSERT_TRUE(create(widget("test-cr-1")));
  ASSERT_TRUE(waitUsed("test-quota", {{countName, "1"}}));
  EXPECT_FALSE(create(widget("test-cr-2")));
  ASSERT_TRUE(kubectl({"delete", "widgets." + group, "test-cr-1", "-n", ns()}).ok());
  EXPECT_TRUE(waitUsed("test-quota", {{countName, "0"}})) << describeQuota("test-quota");
}

// "should create a ResourceQuota and capture the life of a ResourceClaim" (DRA, on at the pin): the claim's count
// and its devices per DeviceClass; no driver is needed, the claim only exists.
TEST_F(ResourceQuotas, CapturesTheLifeOfAResourceClaim) {
  quota("test-quota", R"({"count/resourceclaims.resource.k8s.io":"1","gold.deviceclass.resource.k8s.io/devices":"1","resourcequotas":"1"})");
  ASSERT_TRUE(waitUsed("test-quota", {{"resourcequotas", "1"}, {"count/resourceclaims.resource.k8s.io", "0"},
                                      {"gold.deviceclass.resource.k8s.io/devices", "0"}}))
      << describeQuota("test-quota");
  auto claim = [](const std::string& name) {
    return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":")" + name +
           R"("},"spec":{"devices":{"requests":[{"name":"req-0","exactly":{"deviceClassName":"gold"}}]}}})";
  };
  ASSERT_TRUE(create(claim("test-claim")));
  ASSERT_TRUE(waitUsed("test-quota", {{"count/resourceclaims.resource.k8s.io", "1"},
                                      {"gold.deviceclass.resource.k8s.io/devices", "1"}}))
      << describeQuota("test-quota");
  EXPECT_FALSE(create(claim("test-claim-2")));
  ASSERT_TRUE(kubectl({"delete", "resourceclaim", "test-claim", "-n", ns()}).ok());
  EXPECT_TRUE(waitUsed("test-quota", {{"count/resourceclaims.resource.k8s.io", "0"},
                                      {"gold.deviceclass.resource.k8s.io/devices", "0"}}))
      << describeQuota("test-quota");
}

// "should verify ResourceQuota with terminating scopes"
TEST_F(ResourceQuotas, TerminatingScopes) {
  const std::string hard = R"({"pods":"5","requests.cpu":"1","requests.memory":"500Mi","limits.cpu":"2","limits.memory":"1Gi"})";
  quota("quota-terminating", hard, R"("scopes":["Terminating"])");
  quota("quota-not-terminating", hard, R"("scopes":["NotTerminating"])");
  ASSERT_TRUE(waitUsed("quota-terminating", {{"pods", "0"}}));
  ASSERT_TRUE(waitUsed("quota-not-terminating", {{"pods", "0"}}));
  const std::string req = R"({"cpu":"500m","memory":"200Mi"})", lim = R"({"cpu":"1","memory":"400Mi"})";
  ASSERT_TRUE(create(pod("test-pod", req, lim)));
  EXPECT_TRUE(waitUsed("quota-not-terminating", {{"pods", "1"}, {"requests.cpu", "500m"}, {"requests.memory", "200Mi"},
                                                 {"limits.cpu", "1"}, {"limits.memory", "400Mi"}}))
      << describeQuota("quota-not-terminating");
  EXPECT_TRUE(waitUsed("quota-terminating", {{"pods", "0"}, {"requests.cpu", "0"}}));
  deletePod("test-pod");
  EXPECT_TRUE(waitUsed("quota-not-terminating", {{"pods", "0"}, {"requests.cpu", "0"}, {"limits.memory", "0"}}));
  ASSERT_TRUE(create(pod("terminating-pod", req, lim, R"("activeDeadlineSeconds":3600)")));
  EXPECT_TRUE(waitUsed("quota-terminating", {{"pods", "1"}, {"requests.cpu", "500m"}, {"limits.memory", "400Mi"}}))
      << describeQuota("quota-terminating");
  EXPECT_TRUE(waitUsed("quota-not-terminating", {{"pods", "0"}}));
  deletePod("terminating-pod");
  EXPECT_TRUE(waitUsed("quota-terminating", {{"pods", "0"}, {"requests.cpu", "0"}}));
}

// "should verify ResourceQuota with best effort scope" (scopes) and "... using scope-selectors".
TEST_F(ResourceQuotas, BestEffortScopes) {
  quota("quota-besteffort", R"({"pods":"5"})", R"("scopes":["BestEffort"])");
  quota("quota-not-besteffort", R"({"pods":"5"})",
        R"("scopeSelector":{"matchExpressions":[{"scopeName":"NotBestEffort","operator":"Exists"}]})");
  ASSERT_TRUE(waitUsed("quota-besteffort", {{"pods", "0"}}));
  ASSERT_TRUE(waitUsed("quota-not-besteffort", {{"pods", "0"}}));
  ASSERT_TRUE(create(pod("besteffort-pod", "{}", "{}")));
  EXPECT_TRUE(waitUsed("quota-besteffort", {{"pods", "1"}}));
  EXPECT_TRUE(waitUsed("quota-not-besteffort", {{"pods", "0"}}));
  ASSERT_TRUE(create(pod("burstable-pod", R"({"cpu":"100m"})", R"({"cpu":"200m"})")));
  EXPECT_TRUE(waitUsed("quota-not-besteffort", {{"pods", "1"}}));
  EXPECT_TRUE(waitUsed("quota-besteffort", {{"pods", "1"}}));
  deletePod("besteffort-pod");
  deletePod("burstable-pod");
  EXPECT_TRUE(waitUsed("quota-besteffort", {{"pods", "0"}}));
  EXPECT_TRUE(waitUsed("quota-not-besteffort", {{"pods", "0"}}));
}

// The priority class scope cases: In (one pod fits, a second is refused), NotIn and Exists; cpu/memory counted
// for the class only.
TEST_F(ResourceQuotas, PriorityClassScopeSelectors) {
  const std::string pc = ns() + "-pclass", other = ns() + "-pclass-other";
  for (const auto& n : {pc, other}) {
    clusterObjects_.push_back("priorityclass/" + n);
    ASSERT_TRUE(kubectl({"apply", "-f", "-"},
                        R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":")" + n +
                            R"("},"value":1000})")
                    .ok());
  }
  quota("quota-priorityclass", R"({"pods":"1","requests.cpu":"1","requests.memory":"1Gi"})",
        R"("scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":[")" + pc + R"("]}]})");
  quota("quota-not-in", R"({"pods":"5"})",
        R"("scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"NotIn","values":[")" + pc + R"("]}]})");
  quota("quota-exists", R"({"pods":"5"})",
        R"("scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"Exists"}]})");
  for (const char* q : {"quota-priorityclass", "quota-not-in", "quota-exists"}) ASSERT_TRUE(waitUsed(q, {{"pods", "0"}}));
  ASSERT_TRUE(create(pod("pod-a", R"({"cpu":"500m","memory":"200Mi"})", "{}", R"("priorityClassName":")" + pc + "\"")));
  EXPECT_TRUE(waitUsed("quota-priorityclass", {{"pods", "1"}, {"requests.cpu", "500m"}, {"requests.memory", "200Mi"}}))
      << describeQuota("quota-priorityclass");
  EXPECT_TRUE(waitUsed("quota-exists", {{"pods", "1"}}));
  const std::string small = R"({"cpu":"100m","memory":"10Mi"})";
  EXPECT_FALSE(create(pod("pod-b", small, "{}", R"("priorityClassName":")" + pc + "\"")));  // pods is 1 for the class
  ASSERT_TRUE(create(pod("pod-other", "{}", "{}", R"("priorityClassName":")" + other + "\"")));
  EXPECT_TRUE(waitUsed("quota-not-in", {{"pods", "1"}}));
  EXPECT_TRUE(waitUsed("quota-exists", {{"pods", "2"}}));
  deletePod("pod-a");
  EXPECT_TRUE(waitUsed("quota-priorityclass", {{"pods", "0"}, {"requests.cpu", "0"}}));
  EXPECT_TRUE(create(pod("pod-b", small, "{}", R"("priorityClassName":")" + pc + "\"")));
}

// "should verify ResourceQuota with cross namespace pod affinity scope using scope-selectors"
TEST_F(ResourceQuotas, CrossNamespacePodAffinityScope) {
  quota("quota-cross-namespace-affinity", R"({"pods":"1"})",
        R"("scopeSelector":{"matchExpressions":[{"scopeName":"CrossNamespacePodAffinity","operator":"Exists"}]})");
  ASSERT_TRUE(waitUsed("quota-cross-namespace-affinity", {{"pods", "0"}}));
  const std::string affinity =
      R"("affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"x"}},"namespaces":["other"],"topologyKey":"kubernetes.io/hostname"}]}})";
  ASSERT_TRUE(create(pod("no-affinity", "{}", "{}")));
  ASSERT_TRUE(create(pod("with-affinity", "{}", "{}", affinity)));
  EXPECT_TRUE(waitUsed("quota-cross-namespace-affinity", {{"pods", "1"}})) << describeQuota("quota-cross-namespace-affinity");
  EXPECT_FALSE(create(pod("with-affinity-2", "{}", "{}", affinity)));
  deletePod("with-affinity");
  EXPECT_TRUE(waitUsed("quota-cross-namespace-affinity", {{"pods", "0"}}));
}

// "should be able to update and delete ResourceQuota": status.hard follows spec.hard.
TEST_F(ResourceQuotas, UpdateAndDelete) {
  quota("test-quota", R"({"cpu":"1","memory":"500Mi"})");
  ASSERT_TRUE(waitUsed("test-quota", {{"cpu", "0"}, {"memory", "0"}}));
  ASSERT_TRUE(kubectl({"patch", "resourcequota", "test-quota", "-n", ns(), "--type=merge", "-p",
                       R"({"spec":{"hard":{"cpu":"2","memory":"1Gi","pods":"3"}}})"})
                  .ok());
  ASSERT_TRUE(waitFor([&] {
    const Json q = quotaJson("test-quota");
    return q["status"].value("hard", Json::object()) == Json::parse(R"({"cpu":"2","memory":"1Gi","pods":"3"})");
  }, 30s)) << describeQuota("test-quota");
  EXPECT_TRUE(waitUsed("test-quota", {{"pods", "0"}}));
  ASSERT_TRUE(kubectl({"delete", "resourcequota", "test-quota", "-n", ns()}).ok());
  EXPECT_FALSE(kubectl({"get", "resourcequota", "test-quota", "-n", ns()}).ok());
}

}  // namespace
}  // namespace kcm::e2e
