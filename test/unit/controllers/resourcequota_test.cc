// resourcequota-controller: the quota arithmetic and core evaluators against upstream's own output
// (testdata/quota, from hack/update-pod-template-hash.sh), and the controller (upstream
// resource_quota_controller_test.go's cases) running against informers over the fake apiserver.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "api/gen/core_v1_json.h"
#include "api/gen/resource_v1_json.h"
#include "client/typed_client.h"
#include "controllers/resourcequota/resource_quota_controller.h"
#include "fake/eventually.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"
#include "quota/core_evaluators.h"
#include "quota/resource_claims.h"

namespace kcm::controllers::resourcequota {

class ResourceQuotaControllerTestPeer {
 public:
  static size_t primaryLen(ResourceQuotaController& c) { return c.primary_.queue().len(); }
  static size_t priorityLen(ResourceQuotaController& c) { return c.priority_.queue().len(); }
};

namespace {

using api::core::v1::ConfigMap;
using api::core::v1::PersistentVolumeClaim;
using api::core::v1::Pod;
using api::core::v1::ResourceQuota;
using api::core::v1::Service;
using testing::eventually;
using testing::FakeApiServer;
using namespace std::chrono_literals;

nlohmann::json readJson(const std::string& name) {
  std::ifstream f(std::string(KCM_TESTDATA_DIR) + "/controllers/testdata/quota/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

std::map<std::string, std::string> strings(const quota::ResourceList& l) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : l) out[k] = v.canonical();
  return out;
}

template <class T>
T decode(const nlohmann::json& j) {
  T out;
  EXPECT_TRUE(fromJson(j.dump(), out).ok()) << j.dump();
  return out;
}

// Every case of cases.json gives what upstream's evaluators (and Quantity.Add/String) gave.
TEST(QuotaEvaluators, UsageMatchesUpstream) {
  const auto cases = readJson("cases.json"), golden = readJson("golden.json");
  ASSERT_EQ(cases.size(), golden.size());
  const auto now = std::chrono::system_clock::now();
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto& g = golden[i];
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string kind = c["kind"];
    if (kind == "Sum") {
      quota::Amount total = quota::Amount::zero();
      for (const auto& s : c["sum"]) {
        quota::Amount a;
        ASSERT_TRUE(quota::Amount::parse(s.get<std::string>(), a));
        total.add(a);
      }
      EXPECT_EQ(total.canonical(), g["sum"].get<std::string>());
      continue;
    }
    quota::ResourceList usage;
    if (kind == "Pod") {
      auto pod = decode<Pod>(c["object"]);
      usage = quota::podUsage(pod, now);
      EXPECT_EQ(quota::isBestEffort(pod), g["bestEffort"].get<bool>());
      EXPECT_EQ(quota::isTerminating(pod), g["terminating"].get<bool>());
    } else if (kind == "Service") {
      usage = quota::serviceUsage(decode<Service>(c["object"]));
    } else if (kind == "PersistentVolumeClaim") {
      usage = quota::pvcUsage(decode<PersistentVolumeClaim>(c["object"]));
    } else if (kind == "ResourceClaim") {
      usage = quota::resourceClaimUsage(decode<api::resource::v1::ResourceClaim>(c["object"]));
    }
    EXPECT_EQ(strings(usage), (g["usage"].get<std::map<std::string, std::string>>()));
  }
}

quota::ScopedResourceSelectorRequirement req(const std::string& op, const std::string& scope,
                                             std::vector<std::string> values) {
  quota::ScopedResourceSelectorRequirement r;
  r.operator_ = op;
  r.scopeName = scope;
  r.values.assign(values.begin(), values.end());
  return r;
}

TEST(QuotaEvaluators, PodScopes) {
  Pod p;
  p.spec.priorityClassName = "high";
  auto in = req("In", "PriorityClass", {"high", "low"});
  EXPECT_TRUE(*quota::podMatchesScope(in, p));
  auto notIn = req("NotIn", "PriorityClass", {"high"});
  EXPECT_FALSE(*quota::podMatchesScope(notIn, p));
  auto exists = req("Exists", "PriorityClass", {});
  EXPECT_TRUE(*quota::podMatchesScope(exists, p));
  auto bad = req("Gt", "PriorityClass", {"1"});
  EXPECT_FALSE(quota::podMatchesScope(bad, p).ok());
  p.spec.priorityClassName.clear();
  EXPECT_FALSE(*quota::podMatchesScope(exists, p));
  EXPECT_FALSE(*quota::podMatchesScope(in, p));
  EXPECT_TRUE(*quota::podMatchesScope(notIn, p));  // no priority class: not in the set
  auto cross = req("Exists", "CrossNamespacePodAffinity", {});
  EXPECT_FALSE(*quota::podMatchesScope(cross, p));
  p.spec.affinity.emplace();
  p.spec.affinity->podAntiAffinity.emplace();
  p.spec.affinity->podAntiAffinity->requiredDuringSchedulingIgnoredDuringExecution.emplace_back().namespaces = {"other"};
  EXPECT_TRUE(*quota::podMatchesScope(cross, p));
}

// DRAExtendedResource: a claim's devices count as the class's extended resource too, less what its pod counts.
TEST(QuotaEvaluators, ResourceClaimsAsExtendedResources) {
  api::resource::v1::ResourceClaim claim;
  auto& r = claim.spec.devices.requests.emplace_back();
  r.exactly.emplace();
  r.exactly->deviceClassName = "gpu";
  r.exactly->allocationMode = "ExactCount";
  r.exactly->count = 2;
  quota::DeviceClassLookup classes;
  classes.extendedResource = [](const std::string& c) { return c == "gpu" ? std::string("example.com/gpu") : ""; };
  classes.hasDeviceClass = [](const std::string& n) { return n == "example.com/gpu"; };
  EXPECT_EQ(strings(quota::resourceClaimUsage(claim, &classes)),
            (std::map<std::string, std::string>{{"count/resourceclaims.resource.k8s.io", "1"},
                                                {"gpu.deviceclass.resource.k8s.io/devices", "2"},
                                                {"requests.deviceclass.resource.kubernetes.io/gpu", "2"},
                                                {"requests.example.com/gpu", "2"}}));
  // The pod the claim was made for already counts its extended resource request.
  quota::ResourceList pod{{"requests.example.com/gpu", quota::Amount::ofInt(2)}};
  EXPECT_EQ(strings(quota::resourceClaimUsage(claim, &classes, &pod)).count("requests.example.com/gpu"), 0u);
  auto e = quota::newResourceClaimEvaluator(
      [](const std::string&) -> Result<std::vector<std::shared_ptr<const api::resource::v1::ResourceClaim>>> {
        return std::vector<std::shared_ptr<const api::resource::v1::ResourceClaim>>{};
      },
      classes);
  EXPECT_EQ(e->matchingResources({"requests.deviceclass.resource.kubernetes.io/gpu",
                                  "requests.deviceclass.resource.kubernetes.io/fpga", "requests.example.com/gpu",
                                  "requests.example.com/other", "gpu.deviceclass.resource.k8s.io/devices", "pods"}),
            (std::vector<std::string>{"requests.deviceclass.resource.kubernetes.io/gpu", "requests.example.com/gpu",
                                      "gpu.deviceclass.resource.k8s.io/devices"}));
}

// upstream DefaultUpdateFilter: which updates are worth a recalculation.
TEST(QuotaEvaluators, UpdateFilter) {
  const auto now = std::chrono::system_clock::now();
  Pod running;
  running.status.phase = "Running";
  auto& cs = running.status.containerStatuses.emplace_back();
  cs.name = "c";
  Pod same = running;
  EXPECT_FALSE(quota::podUpdateChangesQuota(running, same, now));
  Pod failed = running;
  failed.status.phase = "Failed";
  EXPECT_TRUE(quota::podUpdateChangesQuota(running, failed, now));
  EXPECT_FALSE(quota::podUpdateChangesQuota(failed, running, now));  // only turning terminal counts
  Pod deadline = running;
  deadline.spec.activeDeadlineSeconds = 10;
  EXPECT_TRUE(quota::podUpdateChangesQuota(running, deadline, now));
  Pod resized = running;
  resized.status.containerStatuses[0].resources.emplace().requests["cpu"] = *api::Quantity::parse("2");
  EXPECT_TRUE(quota::podUpdateChangesQuota(running, resized, now));
  Service a, b;
  a.spec.type = "ClusterIP";
  b.spec.type = "ExternalName";
  EXPECT_FALSE(quota::serviceUpdateChangesQuota(a, b));  // neither counts as a NodePort or LoadBalancer
  b.spec.type = "NodePort";
  EXPECT_TRUE(quota::serviceUpdateChangesQuota(a, b));
  EXPECT_TRUE(quota::pvcUpdateChangesQuota(PersistentVolumeClaim{}, PersistentVolumeClaim{}));
}

// The VolumeAttributesClass scope: any class the claim names, has, or is being modified to.
TEST(QuotaEvaluators, VolumeAttributesClassScope) {
  quota::Registry reg;
  std::vector<std::shared_ptr<const PersistentVolumeClaim>> pvcs;
  auto add = [&](std::optional<std::string> spec, std::optional<std::string> current, const std::string& target) {
    PersistentVolumeClaim p;
    p.spec.volumeAttributesClassName = spec;
    p.status.currentVolumeAttributesClassName = current;
    if (!target.empty()) p.status.modifyVolumeStatus.emplace().targetVolumeAttributesClassName = target;
    p.spec.resources.requests["storage"] = *api::Quantity::parse("1Gi");
    pvcs.push_back(std::make_shared<const PersistentVolumeClaim>(p));
  };
  add("gold", std::nullopt, "");
  add(std::nullopt, "gold", "");
  add("silver", "silver", "gold");
  add(std::nullopt, std::nullopt, "");
  reg.add(quota::newPersistentVolumeClaimEvaluator(
      [&](const std::string&) -> Result<std::vector<std::shared_ptr<const PersistentVolumeClaim>>> { return pvcs; }));
  quota::ResourceList hard{{"persistentvolumeclaims", quota::Amount::ofInt(10)}, {"requests.storage", quota::Amount::ofInt(100)}};
  api::core::v1::ScopeSelector in;
  in.matchExpressions.push_back(req("In", "VolumeAttributesClass", {"gold"}));
  EXPECT_EQ(strings(quota::calculateUsage("ns", {}, hard, reg, &in).used),
            (std::map<std::string, std::string>{{"persistentvolumeclaims", "3"}, {"requests.storage", "3Gi"}}));
  api::core::v1::ScopeSelector exists;
  exists.matchExpressions.push_back(req("Exists", "VolumeAttributesClass", {}));
  EXPECT_EQ(strings(quota::calculateUsage("ns", {}, hard, reg, &exists).used).at("persistentvolumeclaims"), "3");
  api::core::v1::ScopeSelector notIn;
  notIn.matchExpressions.push_back(req("NotIn", "VolumeAttributesClass", {"gold"}));
  EXPECT_EQ(strings(quota::calculateUsage("ns", {}, hard, reg, &notIn).used).at("persistentvolumeclaims"), "2");
}

TEST(QuotaEvaluators, CalculateUsageMasksToHardAndDropsFailingEvaluators) {
  quota::Registry reg;
  std::vector<std::shared_ptr<const Pod>> pods;
  Pod p;
  p.spec.containers.emplace_back().resources.requests["cpu"] = *api::Quantity::parse("250m");
  pods.push_back(std::make_shared<const Pod>(p));
  reg.add(quota::newPodEvaluator([&](const std::string&) -> Result<std::vector<std::shared_ptr<const Pod>>> { return pods; }));
  reg.add(quota::newServiceEvaluator(
      [](const std::string&) -> Result<std::vector<std::shared_ptr<const Service>>> {
        return Status(StatusCode::kUnavailable, "v1, Resource=services not yet synced");
      }));
  quota::ResourceList hard{{"requests.cpu", quota::Amount::ofInt(1)},
                           {"services", quota::Amount::ofInt(5)},
                           {"unknown.example.com", quota::Amount::ofInt(1)}};
  auto u = quota::calculateUsage("ns", {}, hard, reg, nullptr);
  EXPECT_EQ(strings(u.used), (std::map<std::string, std::string>{{"requests.cpu", "250m"}}));
  EXPECT_EQ(u.error.message(), "failed to list content: v1, Resource=services not yet synced");
}

// ---- the controller over the fake apiserver ----

class ResourceQuotaControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"", "v1", "resourcequotas", "ResourceQuota", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    server->addResource({"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    auto disc = std::make_shared<client::DiscoveryClient>(server->client());
    auto reg = std::make_shared<quota::Registry>();
    reg->add(quota::newPodEvaluator(quota::cacheListFunc(factory.forType<Pod>(), "v1, Resource=pods")));
    reg->add(quota::newServiceEvaluator(quota::cacheListFunc(factory.forType<Service>(), "v1, Resource=services")));
    reg->add(quota::newPersistentVolumeClaimEvaluator(
        quota::cacheListFunc(factory.forType<PersistentVolumeClaim>(), "v1, Resource=persistentvolumeclaims")));
    quota::addLegacyObjectCountEvaluators(*reg, factory);
    ResourceQuotaController::Options o;
    o.resyncPeriod = 0s;
    controller = std::make_unique<ResourceQuotaController>(server->client(), factory, disc, reg, o);
    ASSERT_TRUE(controller->init().ok());
  }
  void start() {
    factory.start(stop.get_token());
    controller->run(2, stop.get_token());
  }
  void TearDown() override {
    stop.request_stop();
    factory.shutdown();
    controller.reset();
  }
  ResourceQuota quota(const std::string& name, std::map<std::string, std::string> hard,
                      std::vector<std::string> scopes = {}) {
    ResourceQuota q;
    q.metadata.namespace_ = "ns";
    q.metadata.name = name;
    for (const auto& [k, v] : hard) q.spec.hard[k] = *api::Quantity::parse(v);
    q.spec.scopes.assign(scopes.begin(), scopes.end());
    return server->add(q);
  }
  Pod pod(const std::string& name, std::map<std::string, std::string> requests, std::string phase = "Running") {
    Pod p;
    p.metadata.namespace_ = "ns";
    p.metadata.name = name;
    auto& c = p.spec.containers.emplace_back();
    c.name = "c";
    for (const auto& [k, v] : requests) c.resources.requests[k] = *api::Quantity::parse(v);
    p.status.phase = std::move(phase);
    return server->add(p);
  }
  std::map<std::string, std::string> used(const std::string& name) {
    auto q = server->get<ResourceQuota>("ns", name);
    std::map<std::string, std::string> out;
    if (q)
      for (const auto& [k, v] : q->status.used) out[k] = v.str();
    return out;
  }
  bool usedIs(const std::string& name, const std::map<std::string, std::string>& want) {
    return eventually([&] { return used(name) == want; });
  }

  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>();
  informers::SharedInformerFactory factory{server->client(), 0s};
  std::stop_source stop;
  std::unique_ptr<ResourceQuotaController> controller;
};

// TestSyncResourceQuota: hard mirrored into status, usage of pods (terminal ones excluded) and object counts.
TEST_F(ResourceQuotaControllerTest, StatusMirrorsHardAndCountsUsage) {
  pod("a", {{"cpu", "100m"}, {"memory", "1Gi"}});
  pod("b", {{"cpu", "1"}, {"memory", "512Mi"}});
  pod("done", {{"cpu", "5"}}, "Succeeded");
  for (const char* n : {"cm1", "cm2"}) {
    ConfigMap cm;
    cm.metadata.namespace_ = "ns";
    cm.metadata.name = n;
    server->add(cm);
  }
  quota("q", {{"cpu", "3"}, {"requests.memory", "100Gi"}, {"pods", "5"}, {"count/configmaps", "10"},
              {"configmaps", "10"}, {"count/pods", "10"}, {"example.com/unknown", "1"}, {"resourcequotas", "1"}});
  start();
  ASSERT_TRUE(usedIs("q", {{"cpu", "1100m"},
                           {"requests.memory", "1536Mi"},
                           {"pods", "2"},
                           {"count/configmaps", "2"},
                           {"configmaps", "2"},
                           {"count/pods", "3"},
                           {"resourcequotas", "1"}}));  // counted from the informer that delivered the quota
  auto q = server->get<ResourceQuota>("ns", "q");
  EXPECT_EQ(q->status.hard.size(), 8u);
  EXPECT_EQ(q->status.hard.at("cpu").str(), "3");
  EXPECT_EQ(server->actionsFor("update", "resourcequotas/status").size(), 1u);
}

// A quota whose status is already right is not written again.
TEST_F(ResourceQuotaControllerTest, NoWriteWhenStatusIsCurrent) {
  pod("a", {{"cpu", "100m"}});
  ResourceQuota q;
  q.metadata.namespace_ = "ns";
  q.metadata.name = "q";
  q.spec.hard["requests.cpu"] = *api::Quantity::parse("1");
  q.status.hard["requests.cpu"] = *api::Quantity::parse("1");
  q.status.used["requests.cpu"] = *api::Quantity::parse("100m");
  server->add(q);
  start();
  ASSERT_TRUE(eventually([&] { return ResourceQuotaControllerTestPeer::primaryLen(*controller) == 0 &&
                                      !server->actionsFor("list", "pods").empty(); }));
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(server->actionsFor("update", "resourcequotas/status").empty());
}

// Deleting a pod or a terminal transition replenishes at once (no resync period here).
TEST_F(ResourceQuotaControllerTest, DeletesAndTerminalPodsReplenish) {
  pod("a", {{"cpu", "1"}});
  pod("b", {{"cpu", "2"}});
  quota("q", {{"requests.cpu", "10"}, {"pods", "10"}});
  start();
  ASSERT_TRUE(usedIs("q", {{"requests.cpu", "3"}, {"pods", "2"}}));
  ASSERT_TRUE(client::remove<Pod>(*server->client(), "ns", "a").ok());
  ASSERT_TRUE(usedIs("q", {{"requests.cpu", "2"}, {"pods", "1"}}));
  auto b = *server->get<Pod>("ns", "b");
  b.status.phase = "Failed";
  ASSERT_TRUE(client::updateStatus(*server->client(), b).ok());
  ASSERT_TRUE(usedIs("q", {{"requests.cpu", "0"}, {"pods", "0"}}));
}

// Object counts of any resource come from metadata informers; deletes replenish them too.
TEST_F(ResourceQuotaControllerTest, ObjectCountOfDiscoveredResources) {
  for (const char* n : {"s1", "s2", "s3"}) {
    api::core::v1::Secret s;
    s.metadata.namespace_ = "ns";
    s.metadata.name = n;
    server->add(s);
  }
  quota("q", {{"count/secrets", "5"}, {"count/deployments.apps", "5"}, {"services", "2"}, {"services.nodeports", "4"}});
  Service svc;
  svc.metadata.namespace_ = "ns";
  svc.metadata.name = "np";
  svc.spec.type = "NodePort";
  svc.spec.ports.resize(2);
  server->add(svc);
  start();
  ASSERT_TRUE(usedIs("q", {{"count/secrets", "3"}, {"count/deployments.apps", "0"}, {"services", "1"},
                           {"services.nodeports", "2"}}));
  ASSERT_TRUE(client::remove<api::core::v1::Secret>(*server->client(), "ns", "s1").ok());
  ASSERT_TRUE(usedIs("q", {{"count/secrets", "2"}, {"count/deployments.apps", "0"}, {"services", "1"},
                           {"services.nodeports", "2"}}));
}

// Scopes: BestEffort and NotBestEffort quotas count disjoint pods; Terminating counts pods with a deadline.
TEST_F(ResourceQuotaControllerTest, Scopes) {
  pod("besteffort", {});
  pod("burstable", {{"cpu", "500m"}});
  Pod t;
  t.metadata.namespace_ = "ns";
  t.metadata.name = "terminating";
  t.spec.containers.emplace_back().name = "c";
  t.spec.activeDeadlineSeconds = 60;
  t.status.phase = "Running";
  server->add(t);
  quota("be", {{"pods", "10"}}, {"BestEffort"});
  quota("nbe", {{"pods", "10"}, {"requests.cpu", "4"}}, {"NotBestEffort"});
  quota("term", {{"pods", "10"}}, {"Terminating"});
  quota("nterm", {{"pods", "10"}}, {"NotTerminating"});
  start();
  EXPECT_TRUE(usedIs("be", {{"pods", "2"}}));
  EXPECT_TRUE(usedIs("nbe", {{"pods", "1"}, {"requests.cpu", "500m"}}));
  EXPECT_TRUE(usedIs("term", {{"pods", "1"}}));
  EXPECT_TRUE(usedIs("nterm", {{"pods", "2"}}));
}

// A spec.hard change is recalculated at once and through the priority queue.
TEST_F(ResourceQuotaControllerTest, SpecChangeIsPrioritised) {
  pod("a", {{"memory", "1Gi"}});
  auto q = quota("q", {{"pods", "5"}});
  start();
  ASSERT_TRUE(usedIs("q", {{"pods", "1"}}));
  auto cur = *server->get<ResourceQuota>("ns", "q");
  cur.spec.hard["requests.memory"] = *api::Quantity::parse("2Gi");
  ASSERT_TRUE(client::update(*server->client(), cur).ok());
  EXPECT_TRUE(usedIs("q", {{"pods", "1"}, {"requests.memory", "1Gi"}}));
}

// addQuota's routing: a hard limit missing from status, or a computable usage missing, goes to the priority queue.
TEST_F(ResourceQuotaControllerTest, MissingUsageGoesToThePriorityQueue) {
  ResourceQuota q;
  q.metadata.namespace_ = "ns";
  q.metadata.name = "q";
  q.spec.hard["pods"] = *api::Quantity::parse("1");
  q.status.hard["pods"] = *api::Quantity::parse("1");
  server->add(q);  // no used: computable, so prioritised
  ResourceQuota r = q;
  r.metadata.name = "r";
  r.status.used["pods"] = *api::Quantity::parse("0");
  server->add(r);  // complete: primary
  ResourceQuota s = q;
  s.metadata.name = "s";
  s.spec.hard["cpu"] = *api::Quantity::parse("1");
  server->add(s);  // spec differs from status: prioritised
  factory.start(stop.get_token());  // handlers run, workers do not
  ASSERT_TRUE(eventually([&] { return ResourceQuotaControllerTestPeer::priorityLen(*controller) == 2 &&
                                      ResourceQuotaControllerTestPeer::primaryLen(*controller) == 1; }));
}

}  // namespace
}  // namespace kcm::controllers::resourcequota
