// disruption-controller (upstream pkg/controller/disruption/disruption_test.go cases) over the fake apiserver and
// informer stores the test fills, with the clock injected.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/gen/policy_v1_json.h"
#include "controllers/disruption/disruption_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers::disruption {
namespace {

using testing::FakeApiServer;
using json = nlohmann::json;
using namespace std::chrono_literals;

class DisruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    server->addResource({"apps", "v1", "statefulsets", "StatefulSet", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"scale", "status"}});
    server->addResource({"batch", "v1", "jobs", "Job", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    server->addResource({"example.com", "v1", "widgets", "Widget", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"scale"}});
  }
  PodDisruptionBudget pdb(std::optional<api::IntOrString> minAvailable,
                          std::optional<api::IntOrString> maxUnavailable = std::nullopt) {
    PodDisruptionBudget p;
    p.metadata.namespace_ = "ns";
    p.metadata.name = "budget";
    p.metadata.generation = 1;
    p.spec.minAvailable = minAvailable;
    p.spec.maxUnavailable = maxUnavailable;
    p.spec.selector = api::meta::v1::LabelSelector{};
    p.spec.selector->matchLabels["app"] = "web";
    return p;
  }
  void store(const PodDisruptionBudget& p) {
    PodDisruptionBudget stored = server->add(p);
    factory.forType<PodDisruptionBudget>().store().upsert("ns/" + p.metadata.name,
                                                          std::make_shared<const PodDisruptionBudget>(stored));
  }
  // A ready pod of app=web, controlled by `owner` (apiVersion, kind, name, uid) when given.
  void pod(const std::string& name, bool ready = true, std::vector<std::string> owner = {}) {
    Pod p;
    p.metadata.namespace_ = "ns";
    p.metadata.name = name;
    p.metadata.uid = "uid-" + name;
    p.metadata.labels["app"] = "web";
    if (!owner.empty()) {
      api::meta::v1::OwnerReference r;
      r.apiVersion = owner[0];
      r.kind = owner[1];
      r.name = owner[2];
      r.uid = owner[3];
      r.controller = true;
      p.metadata.ownerReferences.push_back(r);
    }
    p.status.phase = "Running";
    auto& c = p.status.conditions.emplace_back();
    c.type = "Ready";
    c.status = ready ? "True" : "False";
    factory.forType<Pod>().store().upsert("ns/" + name, std::make_shared<const Pod>(server->add(p)));
  }
  PodDisruptionBudget status() { return server->get<PodDisruptionBudget>("ns", "budget").value(); }
  std::vector<std::string> events() {
    broadcaster.flush();
    return server->createdEvents();
  }
  void expectStatus(int32_t current, int32_t desired, int32_t expected, int32_t allowed, const std::string& reason) {
    auto s = status().status;
    EXPECT_EQ(s.currentHealthy, current);
    EXPECT_EQ(s.desiredHealthy, desired);
    EXPECT_EQ(s.expectedPods, expected);
    EXPECT_EQ(s.disruptionsAllowed, allowed);
    EXPECT_EQ(s.observedGeneration, 1);
    ASSERT_EQ(s.conditions.size(), 1u);
    EXPECT_EQ(s.conditions[0].type, "DisruptionAllowed");
    EXPECT_EQ(s.conditions[0].reason, reason);
    EXPECT_EQ(s.conditions[0].status, allowed > 0 ? "True" : "False");
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  DisruptionController controller{
      server->client(),
      {factory.forType<Pod>(), factory.forType<PodDisruptionBudget>(),
       factory.forType<api::core::v1::ReplicationController>(), factory.forType<api::apps::v1::ReplicaSet>(),
       factory.forType<api::apps::v1::Deployment>(), factory.forType<api::apps::v1::StatefulSet>()},
      std::make_shared<client::DiscoveryClient>(server->client()),
      broadcaster.newRecorder("controllermanager"),
      clock};
};

// TestNoSelector / TestUnavailable with an integer minAvailable: the selected pods are the expected ones.
TEST_F(DisruptionTest, IntegerMinAvailableCountsTheSelectedPods) {
  store(pdb(api::IntOrString::fromInt(2)));
  pod("a");
  pod("b");
  pod("c", false);
  ASSERT_TRUE(controller.sync("ns/budget").status.ok());
  expectStatus(2, 2, 3, 0, "InsufficientPods");
  pod("c");
  store(status());
  ASSERT_TRUE(controller.sync("ns/budget").status.ok());
  expectStatus(3, 2, 3, 1, "SufficientPods");
  // Nothing changed: nothing written.
  store(status());
  server->clearActions();
  ASSERT_TRUE(controller.sync("ns/budget").status.ok());
  EXPECT_TRUE(server->actionsFor("update", "poddisruptionbudgets").empty());
}

TEST_F(DisruptionTest, NoPodsGiveAnEventAndNoDisruptions) {
  store(pdb(api::IntOrString::fromInt(1)));
  ASSERT_TRUE(controller.sync("ns/budget").status.ok());
  expectStatus(0, 1, 0, 0, "InsufficientPods");
  EXPECT_EQ(events(), (std::vector<std::string>{"Normal NoPods No matching pods found"}));
}

// TestReplicaSet / TestReplicationController / TestStatefulSetController: percentages go through the scale.
TEST_F(DisruptionTest, PercentagesUseTheControllersScale) {
  api::apps::v1::Deployment d;
  d.metadata.namespace_ = "ns";
  d.metadata.name = "web";
  d.metadata.uid = "dep-uid";
  d.spec.replicas = 4;
  factory.forType<api::apps::v1::Deployment>().store().upsert("ns/web", std::make_shared<const api::apps::v1::Deployment>(d));
  api::apps::v1::ReplicaSet rs;
  rs.metadata.namespace_ = "ns";
  rs.metadata.name = "web-abc";
  rs.metadata.uid = "rs-uid";
  rs.spec.replicas = 4;
  api::meta::v1::OwnerReference owner;
  owner.apiVersion = "apps/v1";
  owner.kind = "Deployment";
  owner.name = "web";
  owner.uid = "dep-uid";
  owner.controller = true;
  rs.metadata.ownerReferences.push_back(owner);
  factory.forType<api::apps::v1::ReplicaSet>().store().upsert("ns/web-abc", std::make_shared<const api::apps::v1::ReplicaSet>(rs));
  for (const char* n : {"a", "b", "c"}) pod(n, true, {"apps/v1", "ReplicaSet", "web-abc", "rs-uid"});
  store(pdb(api::IntOrString::fromString("50%")));
  ASSERT_TRUE(controller.sync("ns/budget").status.ok());
  expectStatus(3, 2, 4, 1, "SufficientPods");  // expected from the Deployment's 4 replicas
  // A StatefulSet's pods beside them, maxUnavailable 1: 4 + 3 expected, 7 - 1 desired.
  api::apps::v1::StatefulSet ss;
  ss.metadata.namespace_ = "ns";
  ss.metadata.name = "db";
  ss.metadata.uid = "ss-uid";
  ss.spec.replicas = 3;
  factory.forType<api::apps::v1::StatefulSet>().store().upsert("ns/db", std::make_shared<const api::apps::v1::StatefulSet>(ss));
  for (const char* n : {"db-0", "db-1"}) pod(n, true, {"apps/v1", "StatefulSet", "db", "ss-uid"});
  PodDisruptionBudget p = pdb(std::nullopt, api::IntOrString::fromInt(1));
  p.metadata.resourceVersion = status().metadata.resourceVersion;
  p.status = status().status;
  factory.forType<PodDisruptionBudget>().store().upsert("ns/budget", std::make_shared<const PodDisruptionBudget>(p));
  ASSERT_TRUE(controller.sync("ns/budget").status.ok());
  expectStatus(5, 6, 7, 0, "InsufficientPods");
}

// TestScaleResource: any owner with a scale subresource; TestScaleFinderNoResource: one without fails safe.
TEST_F(DisruptionTest, OtherOwnersGoThroughTheScaleSubresourceOrFailSafe) {
  server->prependReactor("get", "widgets/scale", [](const testing::Action&) -> std::optional<client::Transport::Reply> {
    return client::Transport::Reply{200, R"({"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w",
      "namespace":"ns","uid":"widget-uid"},"spec":{"replicas":5}})"};
  });
  for (const char* n : {"a", "b", "c", "d"}) pod(n, true, {"example.com/v1", "Widget", "w", "widget-uid"});
  store(pdb(std::nullopt, api::IntOrString::fromString("20%")));
  ASSERT_TRUE(controller.sync("ns/budget").status.ok());
  expectStatus(4, 4, 5, 0, "InsufficientPods");  // 5 - ceil(20% of 5) = 4
  pod("e", true, {"batch/v1", "Job", "j", "job-uid"});
  store(status());
  ASSERT_TRUE(controller.sync("ns/budget").status.ok());
  auto s = status().status;
  EXPECT_EQ(s.disruptionsAllowed, 0);
  ASSERT_EQ(s.conditions.size(), 1u);
  EXPECT_EQ(s.conditions[0].reason, "SyncFailed");
  EXPECT_EQ(s.conditions[0].message, "jobs.batch does not implement the scale subresource");
  auto ev = events();
  EXPECT_NE(std::find(ev.begin(), ev.end(),
                      "Warning CalculateExpectedPodCountFailed Failed to calculate the number of expected pods: "
                      "jobs.batch does not implement the scale subresource"),
            ev.end());
}

// TestUnmanagedPods: maxUnavailable over pods without a controller cannot be computed; the event says so.
TEST_F(DisruptionTest, UnmanagedPodsUnderAPercentageGiveAnEvent) {
  pod("a");
  pod("b");
  store(pdb(std::nullopt, api::IntOrString::fromInt(1)));
  ASSERT_TRUE(controller.sync("ns/budget").status.ok());
  expectStatus(2, 0, 0, 0, "InsufficientPods");
  EXPECT_EQ(events(), (std::vector<std::string>{
                          "Warning UnmanagedPods Pods selected by this PodDisruptionBudget (selector: "
                          "&LabelSelector{MatchLabels:map[string]string{app: web,},MatchExpressions:[]"
                          "LabelSelectorRequirement{},}) were found to be unmanaged. As a result, the status of the "
                          "PDB cannot be calculated correctly, which may result in undefined behavior. To account for "
                          "these pods please set \".spec.minAvailable\" field of the PDB to an integer value."}));
}

// TestUpdateDisruptedPods: a recent eviction keeps the pod out of the healthy count; an old one is dropped with a
// NotDeleted event.
TEST_F(DisruptionTest, DisruptedPodsCountUntilTheDeletionTimeout) {
  pod("a");
  pod("b");
  pod("c");
  PodDisruptionBudget p = pdb(api::IntOrString::fromInt(1));
  const int64_t now = std::chrono::system_clock::to_time_t(clock.wallNow());
  p.status.disruptedPods["a"] = api::Time::fromUnix(now - 30);
  p.status.disruptedPods["b"] = api::Time::fromUnix(now - 180);
  store(p);
  ASSERT_TRUE(controller.sync("ns/budget").status.ok());
  auto s = status().status;
  EXPECT_EQ(s.currentHealthy, 2);
  EXPECT_EQ(s.disruptedPods.size(), 1u);
  EXPECT_EQ(s.disruptedPods.count("a"), 1u);
  EXPECT_EQ(events(), (std::vector<std::string>{"Warning NotDeleted Pod was expected by PDB ns/ns to be deleted but "
                                                "it wasn't"}));
}

TEST_F(DisruptionTest, AStaleDisruptionTargetConditionIsResetAfterTwoMinutes) {
  Pod p;
  p.metadata.namespace_ = "ns";
  p.metadata.name = "victim";
  p.metadata.generation = 3;
  p.status.phase = "Running";
  auto& c = p.status.conditions.emplace_back();
  c.type = "DisruptionTarget";
  c.status = "True";
  c.reason = "EvictionByEvictionAPI";
  c.lastTransitionTime = api::Time::fromUnix(std::chrono::system_clock::to_time_t(clock.wallNow()) - 60);
  factory.forType<Pod>().store().upsert("ns/victim", std::make_shared<const Pod>(server->add(p)));
  ASSERT_TRUE(controller.syncStalePodDisruption("ns/victim").status.ok());
  EXPECT_TRUE(server->actionsFor("update", "pods").empty());  // one more minute to wait
  clock.advance(61s);
  ASSERT_TRUE(controller.syncStalePodDisruption("ns/victim").status.ok());
  auto got = server->get<Pod>("ns", "victim").value();
  ASSERT_EQ(got.status.conditions.size(), 1u);
  EXPECT_EQ(got.status.conditions[0].status, "False");
  EXPECT_EQ(got.status.conditions[0].observedGeneration, 3);
}

TEST(LabelSelectorString, AsGogoPrintsIt) {
  api::meta::v1::LabelSelector s;
  s.matchLabels["b"] = "2";
  s.matchLabels["a"] = "1";
  auto& e = s.matchExpressions.emplace_back();
  e.key = "tier";
  e.operator_ = "In";
  e.values = {"x", "y"};
  EXPECT_EQ(labelSelectorString(&s),
            "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{"
            "LabelSelectorRequirement{Key:tier,Operator:In,Values:[x y],},},}");
  EXPECT_EQ(labelSelectorString(nullptr), "nil");
}

}  // namespace
}  // namespace kcm::controllers::disruption
