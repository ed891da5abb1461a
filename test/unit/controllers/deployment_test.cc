// deployment-controller's sync logic against the fake apiserver, table-driven after the cases of upstream's
// pkg/controller/deployment tests (v1.37.2): syncDeployment end to end, event handlers, adoption, proportional
// scaling, clean-up, RollingUpdate and Recreate steps, the Progressing condition and progress-deadline requeues.
// The informer caches are filled directly (no informer runs) and every request the controller sends is recorded,
// as upstream's tests fill listers and assert on the fake clientset's actions. Events go to a second fake apiserver
// so they never mix with the controller's own requests.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/gen/apps_v1.h"
#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "client/events.h"
#include "controllers/deployment/deployment_controller.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers {

// Reaches the controller's private steps (a friend of DeploymentController).
class DeploymentControllerTestPeer {
 public:
  using RSPtr = DeploymentController::RSPtr;
  using Deployment = api::apps::v1::Deployment;
  using ReplicaSet = api::apps::v1::ReplicaSet;
  using PodMap = std::map<std::string, std::vector<PodPtr>>;

  explicit DeploymentControllerTestPeer(DeploymentController& dc) : dc_(dc) {}

  runtime::WorkQueue& queue() { return dc_.base_.queue(); }
  Result<std::vector<RSPtr>> getReplicaSetsForDeployment(const Deployment& d) {
    return dc_.getReplicaSetsForDeployment(d);
  }
  PodMap getPodMapForDeployment(const std::vector<RSPtr>& rss) { return dc_.getPodMapForDeployment(rss); }
  std::vector<std::shared_ptr<const Deployment>> getDeploymentsForReplicaSet(const ReplicaSet& rs) {
    return dc_.getDeploymentsForReplicaSet(rs);
  }
  void addReplicaSet(const RSPtr& rs) { dc_.addReplicaSet(rs); }
  void updateReplicaSet(const RSPtr& oldRS, const RSPtr& curRS) { dc_.updateReplicaSet(oldRS, curRS); }
  void deleteReplicaSet(const ReplicaSet& rs) { dc_.deleteReplicaSet(rs); }
  void deletePod(const api::core::v1::Pod& pod) { dc_.deletePod(pod); }
  Status scale(Deployment& d, const RSPtr& newRS, const std::vector<RSPtr>& oldRSs) {
    return dc_.scale(d, newRS, oldRSs);
  }
  Status cleanupDeployment(const std::vector<RSPtr>& oldRSs, const Deployment& d) {
    return dc_.cleanupDeployment(oldRSs, d);
  }
  Result<RSPtr> getNewReplicaSet(Deployment& d, const std::vector<RSPtr>& rss, const std::vector<RSPtr>& oldRSs,
                                 bool create) {
    return dc_.getNewReplicaSet(d, rss, oldRSs, create);
  }
  Result<bool> reconcileNewReplicaSet(const std::vector<RSPtr>& all, const RSPtr& newRS, const Deployment& d) {
    return dc_.reconcileNewReplicaSet(all, newRS, d);
  }
  Result<bool> reconcileOldReplicaSets(const std::vector<RSPtr>& all, const std::vector<RSPtr>& oldRSs,
                                       const RSPtr& newRS, const Deployment& d) {
    return dc_.reconcileOldReplicaSets(all, oldRSs, newRS, d);
  }
  Result<int32_t> cleanupUnhealthyReplicas(std::vector<RSPtr>& oldRSs, const Deployment& d, int32_t maxCleanup) {
    return dc_.cleanupUnhealthyReplicas(oldRSs, d, maxCleanup);
  }
  Result<int32_t> scaleDownOldReplicaSetsForRollingUpdate(const std::vector<RSPtr>& all,
                                                          const std::vector<RSPtr>& oldRSs, const Deployment& d) {
    return dc_.scaleDownOldReplicaSetsForRollingUpdate(all, oldRSs, d);
  }
  static bool oldPodsRunning(const RSPtr& newRS, const std::vector<RSPtr>& oldRSs, const PodMap& podMap) {
    return DeploymentController::oldPodsRunning(newRS, oldRSs, podMap);
  }
  Clock::Duration requeueStuckDeployment(const Deployment& d, const api::apps::v1::DeploymentStatus& s) {
    return dc_.requeueStuckDeployment(d, s);
  }
  Status syncRolloutStatus(const std::vector<RSPtr>& all, const RSPtr& newRS, Deployment& d) {
    return dc_.syncRolloutStatus(all, newRS, d);
  }

 private:
  DeploymentController& dc_;
};

namespace {

using api::IntOrString;
using api::apps::v1::Deployment;
using api::apps::v1::DeploymentCondition;
using api::apps::v1::DeploymentStatus;
using api::apps::v1::ReplicaSet;
using api::core::v1::Pod;
using kcm::testing::FakeApiServer;
using RSPtr = DeploymentController::RSPtr;
using Labels = api::StringMap<api::String>;
using Strings = std::vector<std::string>;
using namespace std::chrono_literals;
namespace du = deploymentutil;

constexpr const char* kNs = "default";

template <class Case>
std::string rowName(const ::testing::TestParamInfo<Case>& info) {
  std::string out = std::to_string(info.index) + "_";
  for (char c : std::string(info.param.name)) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// A controller on a fake apiserver and informer caches that only the test fills.
class Harness {
 public:
  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  std::shared_ptr<FakeApiServer> eventSink = std::make_shared<FakeApiServer>(clock);
  client::EventBroadcaster broadcaster{eventSink->client("events"), "test-node", clock};
  informers::SharedInformerFactory factory{server->client("informers"), 0s, clock};
  DeploymentController dc{server->client("deployment-controller"),
                          broadcaster.newRecorder("deployment-controller"),
                          factory.forType<Deployment>(),
                          factory.forType<ReplicaSet>(),
                          factory.forType<Pod>(),
                          true,
                          clock};
  DeploymentControllerTestPeer peer{dc};

  // Stores obj in the apiserver and puts what it stored in the cache, as an informer would see it.
  template <class T>
  T seed(const T& obj) {
    T stored = server->add(obj);
    cache(stored);
    return stored;
  }
  template <class T>
  std::shared_ptr<const T> cache(const T& obj) {
    auto p = std::make_shared<const T>(obj);
    factory.forType<T>().store().upsert(informers::metaNamespaceKey(obj), p);
    return p;
  }
  // Stores obj in the apiserver only; returns what it stored.
  template <class T>
  std::shared_ptr<const T> stored(const T& obj) {
    return std::make_shared<const T>(server->add(obj));
  }
  // Every request the controller sent ("create replicasets default/", "update deployments/status default/foo").
  Strings requests() const {
    Strings out;
    for (const auto& a : server->actions()) out.push_back(a.toString());
    return out;
  }
  // The ReplicaSets sent in update requests, in order.
  std::vector<ReplicaSet> rsUpdates() const {
    std::vector<ReplicaSet> out;
    for (const auto& a : server->actionsFor("update", "replicasets")) {
      ReplicaSet rs;
      EXPECT_TRUE(api::apps::v1::fromJson(a.body, rs).ok()) << a.body;
      out.push_back(rs);
    }
    return out;
  }
  Strings deletedReplicaSets() const {
    Strings out;
    for (const auto& a : server->actionsFor("delete", "replicasets")) out.push_back(a.name);
    return out;
  }
  int32_t replicasOf(const std::string& name) const {
    auto rs = server->get<ReplicaSet>(kNs, name);
    EXPECT_TRUE(rs.has_value()) << name;
    return rs ? rs->spec.replicas.value_or(1) : -1;
  }
  // Keys waiting in the controller's queue (taken out).
  Strings drainQueue() {
    Strings out;
    while (auto k = peer.queue().tryGet()) {
      out.push_back(*k);
      peer.queue().done(*k);
    }
    return out;
  }
};

api::meta::v1::LabelSelector selectorOf(const Labels& l) {
  api::meta::v1::LabelSelector s;
  s.matchLabels = l;
  return s;
}

ReplicaSet rs(const std::string& name, int32_t replicas, const Labels& selector, api::Time created = {}) {
  ReplicaSet r;
  r.metadata.name = name;
  r.metadata.namespace_ = kNs;
  r.metadata.uid = "uid-rs-" + name;
  r.metadata.creationTimestamp = created;
  r.spec.replicas = replicas;
  r.spec.selector = selectorOf(selector);
  return r;
}

ReplicaSet rsWithStatus(const std::string& name, int32_t specReplicas, int32_t statusReplicas,
                        const Labels& selector = {}) {
  ReplicaSet r = rs(name, specReplicas, selector);
  r.status.replicas = statusReplicas;
  return r;
}

// A RollingUpdate Deployment (maxSurge and maxUnavailable 0 unless given) whose template is labelled with selector.
Deployment newDeployment(const std::string& name, int32_t replicas, std::optional<int32_t> revisionHistoryLimit = {},
                         std::optional<IntOrString> maxSurge = {}, std::optional<IntOrString> maxUnavailable = {},
                         const Labels& selector = {}) {
  Deployment d;
  d.apiVersion = "apps/v1";
  d.kind = "Deployment";
  d.metadata.uid = "uid-d-" + name;
  d.metadata.name = name;
  d.metadata.namespace_ = kNs;
  d.spec.strategy.type = "RollingUpdate";
  api::apps::v1::RollingUpdateDeployment ru;
  ru.maxSurge = maxSurge.value_or(IntOrString::fromInt(0));
  ru.maxUnavailable = maxUnavailable.value_or(IntOrString::fromInt(0));
  d.spec.strategy.rollingUpdate = ru;
  d.spec.replicas = replicas;
  d.spec.selector = selectorOf(selector);
  d.spec.template_.metadata.labels = selector;
  api::core::v1::Container c;
  c.image = "foo/bar";
  d.spec.template_.spec.containers.push_back(c);
  d.spec.revisionHistoryLimit = revisionHistoryLimit;
  return d;
}

// A ReplicaSet owned by d with d's template.
ReplicaSet newReplicaSet(const Deployment& d, const std::string& name, int32_t replicas) {
  ReplicaSet r;
  r.metadata.name = name;
  r.metadata.uid = "uid-rs-" + name;
  r.metadata.namespace_ = kNs;
  r.metadata.labels = d.spec.selector->matchLabels;
  r.metadata.ownerReferences.push_back(newControllerRef(d.metadata, "apps/v1", "Deployment"));
  r.spec.selector = *d.spec.selector;
  r.spec.replicas = replicas;
  r.spec.template_ = d.spec.template_;
  return r;
}

// A pod of rs: its selector's labels and a controller reference to it.
Pod podFromRS(const ReplicaSet& r) {
  Pod p;
  p.metadata.name = r.metadata.name + "-pod";
  p.metadata.namespace_ = r.metadata.namespace_;
  p.metadata.labels = r.spec.selector->matchLabels;
  api::meta::v1::OwnerReference ref;
  ref.uid = r.metadata.uid;
  ref.apiVersion = "v1beta1";
  ref.kind = "ReplicaSet";
  ref.name = r.metadata.name;
  ref.controller = true;
  p.metadata.ownerReferences.push_back(ref);
  p.spec = r.spec.template_.spec;
  return p;
}

RSPtr ptr(const ReplicaSet& r) { return std::make_shared<const ReplicaSet>(r); }

Strings names(const std::vector<RSPtr>& rss) {
  Strings out;
  for (const auto& r : rss) out.push_back(r->metadata.name);
  return out;
}

const Labels kFooBar = {{"foo", "bar"}};

// ===============================================================================================================
// syncDeployment end to end

TEST(DeploymentSync, CreatesReplicaSet) {
  Harness h;
  Deployment d = h.seed(newDeployment("foo", 1, {}, {}, {}, kFooBar));
  auto r = h.dc.syncDeployment("default/foo");
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  EXPECT_EQ(h.requests(), (Strings{"create replicasets default/", "update deployments/status default/foo",
                                   "update deployments/status default/foo"}));
  auto rss = h.server->list<ReplicaSet>(kNs);
  ASSERT_EQ(rss.size(), 1u);
  const ReplicaSet& created = rss[0];
  ASSERT_TRUE(created.metadata.labels.contains(du::kDefaultDeploymentUniqueLabelKey));
  const std::string hash = created.metadata.labels.at(du::kDefaultDeploymentUniqueLabelKey);
  EXPECT_EQ(created.metadata.name, "foo-" + hash);
  EXPECT_EQ(created.spec.replicas, 1);
  EXPECT_EQ(created.spec.selector->matchLabels.at(du::kDefaultDeploymentUniqueLabelKey), hash);
  EXPECT_EQ(created.spec.template_.metadata.labels.at(du::kDefaultDeploymentUniqueLabelKey), hash);
  ASSERT_EQ(created.metadata.ownerReferences.size(), 1u);
  EXPECT_EQ(created.metadata.ownerReferences[0].uid, d.metadata.uid);
  EXPECT_EQ(created.metadata.ownerReferences[0].controller, true);
  EXPECT_EQ(created.metadata.annotations.at(du::kRevisionAnnotation), "1");
  EXPECT_EQ(created.metadata.annotations.at(du::kDesiredReplicasAnnotation), "1");
  EXPECT_EQ(created.metadata.annotations.at(du::kMaxReplicasAnnotation), "1");
  auto after = h.server->get<Deployment>(kNs, "foo");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status.observedGeneration, d.metadata.generation);
  const auto* available = du::getDeploymentCondition(after->status, "Available");
  ASSERT_NE(available, nullptr);
  EXPECT_EQ(available->status, "True");
}

TEST(DeploymentSync, OnlySyncsStatusDuringDeletion) {
  Harness h;
  Deployment d = newDeployment("foo", 1, {}, {}, {}, kFooBar);
  d.metadata.deletionTimestamp = api::timeNow(h.clock);
  d.metadata.finalizers = {"foregroundDeletion"};
  h.seed(d);
  auto r = h.dc.syncDeployment("default/foo");
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  EXPECT_EQ(h.requests(), Strings{"update deployments/status default/foo"});
  EXPECT_TRUE(h.server->list<ReplicaSet>(kNs).empty());
}

// The cache says the Deployment lives, the apiserver says it is being deleted: adopting the orphan re-reads it,
// refuses, and the sync fails so it is retried once the cache caught up.
TEST(DeploymentSync, DeletionRaceRechecksTheDeployment) {
  Harness h;
  Deployment d = newDeployment("foo", 1, {}, {}, {}, kFooBar);
  Deployment deleted = d;
  deleted.metadata.deletionTimestamp = api::timeNow(h.clock);
  deleted.metadata.finalizers = {"foregroundDeletion"};
  h.server->add(deleted);
  h.cache(d);
  ReplicaSet orphan = newReplicaSet(d, "rs1", 1);
  orphan.metadata.ownerReferences.clear();
  h.seed(orphan);
  auto r = h.dc.syncDeployment("default/foo");
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(h.requests(), Strings{"get deployments default/foo"});
  EXPECT_TRUE(h.server->get<ReplicaSet>(kNs, "rs1")->metadata.ownerReferences.empty());
}

// An empty selector would select every pod: the Deployment is left alone but for observedGeneration.
struct EmptySelectorCase {
  std::string name;
  int64_t generation, observedGeneration;
  Strings expected;
};

class DeploymentSyncEmptySelector : public ::testing::TestWithParam<EmptySelectorCase> {};

TEST_P(DeploymentSyncEmptySelector, IsNotSynced) {
  const auto& c = GetParam();
  Harness h;
  Deployment d = newDeployment("foo", 1, {}, {}, {}, kFooBar);
  d.spec.selector = api::meta::v1::LabelSelector{};
  d.status.observedGeneration = c.observedGeneration;
  Deployment stored = h.server->add(d);
  stored.metadata.generation = c.generation;
  h.cache(stored);
  auto r = h.dc.syncDeployment("default/foo");
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  EXPECT_EQ(h.requests(), c.expected);
  EXPECT_EQ(h.server->get<Deployment>(kNs, "foo")->status.observedGeneration,
            std::max(c.generation, c.observedGeneration));
  h.broadcaster.flush();
  bool warned = false;
  for (const auto& e : h.eventSink->list<api::core::v1::Event>(kNs)) warned = warned || e.reason == "SelectingAll";
  EXPECT_TRUE(warned);
}

INSTANTIATE_TEST_SUITE_P(, DeploymentSyncEmptySelector,
                         ::testing::Values(EmptySelectorCase{"no generation", 0, 0, {}},
                                           EmptySelectorCase{"unobserved generation", 3, 1,
                                                             {"update deployments/status default/foo"}}),
                         rowName<EmptySelectorCase>);

// Rolling back to revision 0 (the last one) only rewrites the Deployment; the ReplicaSets are untouched until the
// next sync sees the cleared annotation.
TEST(DeploymentSync, ReentrantRollbackOnlyUpdatesTheDeployment) {
  Harness h;
  Deployment d = newDeployment("foo", 1, {}, {}, {}, kFooBar);
  d.metadata.annotations = {{du::kRevisionAnnotation, "2"}, {du::kDeprecatedRollbackTo, "0"}};
  ReplicaSet rs1 = newReplicaSet(d, "deploymentrs-old", 0);
  rs1.metadata.annotations = {{du::kRevisionAnnotation, "1"}};
  rs1.spec.template_.spec.terminationGracePeriodSeconds = 1;
  rs1.spec.selector->matchLabels[du::kDefaultDeploymentUniqueLabelKey] = "hash";
  ReplicaSet rs2 = newReplicaSet(d, "deploymentrs-new", 1);
  rs2.metadata.annotations = {{du::kRevisionAnnotation, "2"}};
  rs2.spec.selector->matchLabels[du::kDefaultDeploymentUniqueLabelKey] = "hash";
  h.seed(d);
  h.seed(rs1);
  h.seed(rs2);
  auto r = h.dc.syncDeployment("default/foo");
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  EXPECT_EQ(h.requests(), Strings{"update deployments default/foo"});
  auto after = h.server->get<Deployment>(kNs, "foo");
  ASSERT_TRUE(after);
  EXPECT_FALSE(after->metadata.annotations.contains(du::kDeprecatedRollbackTo));
  EXPECT_EQ(after->spec.template_.spec.terminationGracePeriodSeconds, 1);  // revision 1's template
}

// Recreate scales the old ReplicaSets down first and does not create the new one in the same pass.
TEST(DeploymentRecreate, ScalesDownOldReplicaSetsFirst) {
  Harness h;
  Deployment d = newDeployment("foo", 3, {}, {}, {}, kFooBar);
  d.spec.strategy.type = "Recreate";
  d.spec.strategy.rollingUpdate = api::Box<api::apps::v1::RollingUpdateDeployment>();
  ReplicaSet old = newReplicaSet(d, "foo-0", 3);
  old.spec.template_.spec.containers[0].image = "foo/old";
  h.seed(d);
  h.seed(old);
  auto r = h.dc.syncDeployment("default/foo");
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  EXPECT_EQ(h.requests(), (Strings{"update replicasets default/foo-0", "update deployments/status default/foo"}));
  EXPECT_EQ(h.replicasOf("foo-0"), 0);
  EXPECT_EQ(h.server->list<ReplicaSet>(kNs).size(), 1u);
}

// Once no old pod may run, the new ReplicaSet is created at full size; while one may, nothing is created.
struct RecreateCase {
  std::string name;
  std::string oldPodPhase;  // empty: no pod left
  bool expectCreate;
};

class DeploymentRecreateNewReplicaSet : public ::testing::TestWithParam<RecreateCase> {};

TEST_P(DeploymentRecreateNewReplicaSet, WaitsForOldPods) {
  const auto& c = GetParam();
  Harness h;
  Deployment d = newDeployment("foo", 3, {}, {}, {}, kFooBar);
  d.spec.strategy.type = "Recreate";
  d.spec.strategy.rollingUpdate = api::Box<api::apps::v1::RollingUpdateDeployment>();
  ReplicaSet old = newReplicaSet(d, "foo-0", 0);
  old.spec.template_.spec.containers[0].image = "foo/old";
  h.seed(d);
  h.seed(old);
  if (!c.oldPodPhase.empty()) {
    Pod p = podFromRS(old);
    p.status.phase = c.oldPodPhase;
    h.cache(p);
  }
  auto r = h.dc.syncDeployment("default/foo");
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  EXPECT_EQ(h.server->actionsFor("create", "replicasets").size(), c.expectCreate ? 1u : 0u);
  EXPECT_TRUE(h.server->actionsFor("update", "replicasets").empty());
  auto rss = h.server->list<ReplicaSet>(kNs);
  ASSERT_EQ(rss.size(), c.expectCreate ? 2u : 1u);
  for (const auto& x : rss)
    if (x.metadata.name != "foo-0") { EXPECT_EQ(x.spec.replicas, 3); }
}

INSTANTIATE_TEST_SUITE_P(, DeploymentRecreateNewReplicaSet,
                         ::testing::Values(RecreateCase{"no old pods", "", true},
                                           RecreateCase{"only a failed old pod", "Failed", true},
                                           RecreateCase{"a running old pod", "Running", false},
                                           RecreateCase{"a pending old pod", "Pending", false}),
                         rowName<RecreateCase>);

// ===============================================================================================================
// event handlers

class DeploymentPodDeletion : public ::testing::TestWithParam<bool> {};

// Deleting a pod requeues its Recreate Deployment, whether or not other pods are left.
TEST_P(DeploymentPodDeletion, EnqueuesRecreateDeployment) {
  Harness h;
  Deployment foo = newDeployment("foo", 1, {}, {}, {}, kFooBar);
  foo.spec.strategy.type = "Recreate";
  ReplicaSet r = newReplicaSet(foo, "foo-1", 1);
  Pod pod = podFromRS(r);
  h.seed(foo);
  h.seed(r);
  h.cache(pod);
  if (GetParam()) {
    Pod sibling = podFromRS(r);
    sibling.metadata.name = "foo-2";
    h.cache(sibling);
  }
  h.peer.deletePod(pod);
  EXPECT_EQ(h.drainQueue(), Strings{"default/foo"});
}

INSTANTIATE_TEST_SUITE_P(, DeploymentPodDeletion, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "PodWithSiblingsDeleted" : "LastPodDeleted"; });

TEST(DeploymentPodDeletionHandler, EnqueuesWithPartialReplicaSetOwnership) {
  Harness h;
  Deployment foo = newDeployment("foo", 1, {}, {}, {}, kFooBar);
  foo.spec.strategy.type = "Recreate";
  ReplicaSet rs1 = newReplicaSet(foo, "foo-1", 1);
  ReplicaSet rs2 = newReplicaSet(foo, "foo-2", 2);
  rs2.metadata.ownerReferences.clear();
  h.seed(foo);
  h.seed(rs1);
  h.seed(rs2);
  h.peer.deletePod(podFromRS(rs1));
  EXPECT_EQ(h.drainQueue(), Strings{"default/foo"});
}

TEST(DeploymentPodDeletionHandler, IgnoresRollingUpdateDeployments) {
  Harness h;
  Deployment foo = h.seed(newDeployment("foo", 1, {}, {}, {}, kFooBar));
  ReplicaSet r = h.seed(newReplicaSet(foo, "foo-1", 1));
  h.peer.deletePod(podFromRS(r));
  EXPECT_TRUE(h.drainQueue().empty());
}

// Two Deployments with the same labels: an owned ReplicaSet wakes only its owner.
struct TwoOwners {
  Harness h;
  Deployment d1 = newDeployment("d1", 1, {}, {}, {}, kFooBar);
  Deployment d2 = newDeployment("d2", 1, {}, {}, {}, kFooBar);
  ReplicaSet rs1 = newReplicaSet(d1, "rs1", 1);
  ReplicaSet rs2 = newReplicaSet(d2, "rs2", 1);
  TwoOwners() {
    h.cache(d1);
    h.cache(d2);
    rs1.metadata.resourceVersion = "1";
    rs2.metadata.resourceVersion = "1";
  }
  static ReplicaSet bumped(ReplicaSet r) {
    r.metadata.resourceVersion = std::to_string(std::stoi(r.metadata.resourceVersion) + 1);
    return r;
  }
};

TEST(DeploymentReplicaSetHandlers, AddEnqueuesTheOwner) {
  TwoOwners t;
  t.h.peer.addReplicaSet(ptr(t.rs1));
  EXPECT_EQ(t.h.drainQueue(), Strings{"default/d1"});
  t.h.peer.addReplicaSet(ptr(t.rs2));
  EXPECT_EQ(t.h.drainQueue(), Strings{"default/d2"});
}

TEST(DeploymentReplicaSetHandlers, AddOrphanEnqueuesEveryMatchingDeployment) {
  TwoOwners t;
  Deployment d3 = newDeployment("d3", 1, {}, {}, {}, {{"foo", "notbar"}});
  t.h.cache(d3);
  ReplicaSet orphan = t.rs1;
  orphan.metadata.ownerReferences.clear();
  t.h.peer.addReplicaSet(ptr(orphan));
  auto keys = t.h.drainQueue();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (Strings{"default/d1", "default/d2"}));
}

TEST(DeploymentReplicaSetHandlers, UpdateEnqueuesTheOwner) {
  TwoOwners t;
  t.h.cache(t.rs1);
  t.h.cache(t.rs2);
  t.h.peer.updateReplicaSet(ptr(t.rs1), ptr(TwoOwners::bumped(t.rs1)));
  EXPECT_EQ(t.h.drainQueue(), Strings{"default/d1"});
  t.h.peer.updateReplicaSet(ptr(t.rs2), ptr(TwoOwners::bumped(t.rs2)));
  EXPECT_EQ(t.h.drainQueue(), Strings{"default/d2"});
  t.h.peer.updateReplicaSet(ptr(t.rs2), ptr(t.rs2));  // a resync: same resourceVersion, nothing to do
  EXPECT_TRUE(t.h.drainQueue().empty());
}

TEST(DeploymentReplicaSetHandlers, UpdateOrphanWithNewLabelsEnqueuesMatchingDeployments) {
  TwoOwners t;
  ReplicaSet orphan = t.rs1;
  orphan.metadata.ownerReferences.clear();
  t.h.cache(orphan);
  ReplicaSet prev = orphan;
  prev.metadata.labels = {{"foo", "notbar"}};
  t.h.peer.updateReplicaSet(ptr(prev), ptr(TwoOwners::bumped(orphan)));
  EXPECT_EQ(t.h.drainQueue().size(), 2u);
}

TEST(DeploymentReplicaSetHandlers, UpdateChangingControllerRefEnqueuesOldAndNewOwner) {
  TwoOwners t;
  t.h.cache(t.rs1);
  ReplicaSet prev = t.rs1;
  prev.metadata.ownerReferences = {newControllerRef(t.d2.metadata, "apps/v1", "Deployment")};
  t.h.peer.updateReplicaSet(ptr(prev), ptr(TwoOwners::bumped(t.rs1)));
  auto keys = t.h.drainQueue();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (Strings{"default/d1", "default/d2"}));
}

TEST(DeploymentReplicaSetHandlers, UpdateReleasingEnqueuesMatchingDeployments) {
  TwoOwners t;
  t.h.cache(t.rs1);
  ReplicaSet next = TwoOwners::bumped(t.rs1);
  next.metadata.ownerReferences.clear();
  t.h.peer.updateReplicaSet(ptr(t.rs1), ptr(next));
  EXPECT_EQ(t.h.drainQueue().size(), 2u);
}

TEST(DeploymentReplicaSetHandlers, DeleteEnqueuesTheOwner) {
  TwoOwners t;
  t.h.peer.deleteReplicaSet(t.rs1);
  EXPECT_EQ(t.h.drainQueue(), Strings{"default/d1"});
  t.h.peer.deleteReplicaSet(t.rs2);
  EXPECT_EQ(t.h.drainQueue(), Strings{"default/d2"});
}

TEST(DeploymentReplicaSetHandlers, DeleteOrphanEnqueuesNothing) {
  TwoOwners t;
  ReplicaSet orphan = t.rs1;
  orphan.metadata.ownerReferences.clear();
  t.h.peer.deleteReplicaSet(orphan);
  EXPECT_TRUE(t.h.drainQueue().empty());
}

// ===============================================================================================================
// owned ReplicaSets and pods

TEST(DeploymentControllerRefs, ReplicaSetsOfEachDeployment) {
  Harness h;
  Deployment d1 = h.seed(newDeployment("foo", 1, {}, {}, {}, kFooBar));
  Deployment d2 = h.seed(newDeployment("bar", 1, {}, {}, {}, kFooBar));
  h.seed(newReplicaSet(d1, "rs1", 1));
  h.seed(newReplicaSet(d2, "rs2", 1));
  auto l1 = h.peer.getReplicaSetsForDeployment(d1);
  ASSERT_TRUE(l1.ok()) << l1.status().toString();
  EXPECT_EQ(names(*l1), Strings{"rs1"});
  auto l2 = h.peer.getReplicaSetsForDeployment(d2);
  ASSERT_TRUE(l2.ok()) << l2.status().toString();
  EXPECT_EQ(names(*l2), Strings{"rs2"});
  EXPECT_TRUE(h.server->writes().empty());
}

TEST(DeploymentControllerRefs, AdoptsMatchingOrphansAndReleasesMismatches) {
  Harness h;
  Deployment d = h.seed(newDeployment("foo", 1, {}, {}, {}, kFooBar));
  ReplicaSet adopt = newReplicaSet(d, "rsAdopt", 1);
  adopt.metadata.ownerReferences.clear();
  ReplicaSet release = newReplicaSet(d, "rsRelease", 1);
  release.metadata.labels = {{"foo", "notbar"}};
  h.seed(adopt);
  h.seed(release);
  auto l = h.peer.getReplicaSetsForDeployment(d);
  ASSERT_TRUE(l.ok()) << l.status().toString();
  EXPECT_EQ(names(*l), Strings{"rsAdopt"});
  auto adopted = h.server->get<ReplicaSet>(kNs, "rsAdopt");
  ASSERT_EQ(adopted->metadata.ownerReferences.size(), 1u);
  EXPECT_EQ(adopted->metadata.ownerReferences[0].uid, d.metadata.uid);
  EXPECT_TRUE(h.server->get<ReplicaSet>(kNs, "rsRelease")->metadata.ownerReferences.empty());
}

TEST(DeploymentControllerRefs, PodMapGroupsOwnedPodsByReplicaSet) {
  Harness h;
  Deployment d = h.seed(newDeployment("foo", 1, {}, {}, {}, kFooBar));
  ReplicaSet rs1 = h.seed(newReplicaSet(d, "rs1", 1));
  ReplicaSet rs2 = h.seed(newReplicaSet(d, "rs2", 1));
  Pod pod1 = podFromRS(rs1), pod2 = podFromRS(rs2), pod3 = podFromRS(rs1), pod4 = podFromRS(rs1);
  pod3.metadata.name = "pod3";
  pod3.metadata.ownerReferences.clear();  // matching labels, no controller
  pod4.metadata.name = "pod4";
  pod4.status.phase = "Failed";  // owned though inactive
  for (const Pod* p : {&pod1, &pod2, &pod3, &pod4}) h.cache(*p);
  auto podMap = h.peer.getPodMapForDeployment({ptr(rs1), ptr(rs2)});
  ASSERT_EQ(podMap.size(), 2u);
  Strings of1, of2;
  for (const auto& p : podMap[rs1.metadata.uid]) of1.push_back(p->metadata.name);
  for (const auto& p : podMap[rs2.metadata.uid]) of2.push_back(p->metadata.name);
  std::sort(of1.begin(), of1.end());
  EXPECT_EQ(of1, (Strings{"pod4", "rs1-pod"}));
  EXPECT_EQ(of2, Strings{"rs2-pod"});
}

// Deployments that may own a ReplicaSet: those whose selector matches its labels.
class DeploymentsForReplicaSet : public ::testing::TestWithParam<int> {};

TEST_P(DeploymentsForReplicaSet, MatchBySelector) {
  Harness h;
  for (int i = 0; i < 3; ++i) {
    Deployment d;
    d.metadata.name = "deployment-" + std::to_string(i);
    d.metadata.namespace_ = "test";
    d.spec.selector = selectorOf({{"app", "test-" + std::to_string(i)}});
    h.cache(d);
  }
  const int i = GetParam();
  ReplicaSet r;
  r.metadata.namespace_ = "test";
  r.metadata.name = "test-replicaSet-" + std::to_string(i);
  r.metadata.labels = {{"app", "test-" + std::to_string(i)}, {"label", "label-" + std::to_string(i)}};
  Strings got;
  for (const auto& d : h.peer.getDeploymentsForReplicaSet(r)) got.push_back(d->metadata.name);
  EXPECT_EQ(got, i < 3 ? Strings{"deployment-" + std::to_string(i)} : Strings{});
}

INSTANTIATE_TEST_SUITE_P(, DeploymentsForReplicaSet, ::testing::Range(0, 5),
                         [](const auto& info) { return "rs" + std::to_string(info.param); });

// ===============================================================================================================
// scale: proportional scaling of the active ReplicaSets

struct ScaleRS {
  std::string name;
  int32_t size;
  int age;  // 0 newest, 1 old, 2 older
};

struct ScaleCase {
  std::string name;
  int32_t replicas = 0, oldReplicas = 0;  // the Deployment now and before (the annotations record "before")
  int32_t surge = 0, oldSurge = 0, unavailable = 0;
  bool updatedTemplate = false;
  std::optional<ScaleRS> newRS{};
  std::vector<ScaleRS> oldRSs{};
  std::optional<int32_t> expectedNew{};
  std::vector<int32_t> expectedOld{};
  std::set<std::string> notUpdated{};                // no update request at all for these
  std::map<std::string, int32_t> desiredReplicas{};  // desired-replicas annotations other than oldReplicas
};

const std::vector<ScaleCase>& scaleCases() {
  static const std::vector<ScaleCase> cases = {
      {.name = "normal scaling 10 to 12", .replicas = 12, .oldReplicas = 10, .newRS = ScaleRS{"foo-v1", 10, 0},
       .expectedNew = 12},
      {.name = "normal scaling 10 to 5", .replicas = 5, .oldReplicas = 10, .newRS = ScaleRS{"foo-v1", 10, 0},
       .expectedNew = 5},
      {.name = "proportional 5 to 10", .replicas = 10, .oldReplicas = 5, .newRS = ScaleRS{"foo-v2", 2, 0},
       .oldRSs = {{"foo-v1", 3, 1}}, .expectedNew = 4, .expectedOld = {6}},
      {.name = "proportional 5 to 3", .replicas = 3, .oldReplicas = 5, .newRS = ScaleRS{"foo-v2", 2, 0},
       .oldRSs = {{"foo-v1", 3, 1}}, .expectedNew = 1, .expectedOld = {2}},
      {.name = "proportional 9 to 4", .replicas = 4, .oldReplicas = 9, .newRS = ScaleRS{"foo-v2", 8, 0},
       .oldRSs = {{"foo-v1", 1, 1}}, .expectedNew = 4, .expectedOld = {0}},
      {.name = "proportional 7 to 10", .replicas = 10, .oldReplicas = 7, .newRS = ScaleRS{"foo-v3", 2, 0},
       .oldRSs = {{"foo-v2", 3, 1}, {"foo-v1", 2, 2}}, .expectedNew = 3, .expectedOld = {4, 3}},
      {.name = "proportional 13 to 8", .replicas = 8, .oldReplicas = 13, .newRS = ScaleRS{"foo-v3", 2, 0},
       .oldRSs = {{"foo-v2", 8, 1}, {"foo-v1", 3, 2}}, .expectedNew = 1, .expectedOld = {5, 2}},
      // the leftover goes to the newest when scaling up ...
      {.name = "leftover 3 to 4", .replicas = 4, .oldReplicas = 3, .newRS = ScaleRS{"foo-v3", 1, 0},
       .oldRSs = {{"foo-v2", 1, 1}, {"foo-v1", 1, 2}}, .expectedNew = 2, .expectedOld = {1, 1}},
      // ... and comes from the oldest when scaling down
      {.name = "leftover 3 to 2", .replicas = 2, .oldReplicas = 3, .newRS = ScaleRS{"foo-v3", 1, 0},
       .oldRSs = {{"foo-v2", 1, 1}, {"foo-v1", 1, 2}}, .expectedNew = 1, .expectedOld = {1, 0}},
      {.name = "no new rs 4 to 5", .replicas = 5, .oldReplicas = 4,
       .oldRSs = {{"foo-v2", 2, 1}, {"foo-v1", 2, 2}}, .expectedOld = {3, 2}},
      {.name = "proportional 6 to 0", .replicas = 0, .oldReplicas = 6, .newRS = ScaleRS{"foo-v3", 3, 0},
       .oldRSs = {{"foo-v2", 2, 1}, {"foo-v1", 1, 2}}, .expectedNew = 0, .expectedOld = {0, 0}},
      {.name = "proportional 0 to 6", .replicas = 6, .oldReplicas = 6, .newRS = ScaleRS{"foo-v3", 0, 0},
       .oldRSs = {{"foo-v2", 0, 1}, {"foo-v1", 0, 2}}, .expectedNew = 6, .expectedOld = {0, 0},
       .notUpdated = {"foo-v2", "foo-v1"}},
      {.name = "one rs behind in annotations", .replicas = 5, .oldReplicas = 5, .newRS = ScaleRS{"foo-v3", 2, 0},
       .oldRSs = {{"foo-v2", 1, 1}, {"foo-v1", 1, 2}}, .expectedNew = 2, .expectedOld = {2, 1},
       .notUpdated = {"foo-v3", "foo-v1"}, .desiredReplicas = {{"foo-v2", 3}}},
      {.name = "surge pods", .replicas = 20, .oldReplicas = 10, .surge = 2, .oldSurge = 2,
       .newRS = ScaleRS{"foo-v2", 6, 0}, .oldRSs = {{"foo-v1", 6, 1}}, .expectedNew = 11, .expectedOld = {11}},
      {.name = "surge and size change", .replicas = 50, .oldReplicas = 10, .surge = 6, .oldSurge = 3,
       .newRS = ScaleRS{"foo-v2", 5, 0}, .oldRSs = {{"foo-v1", 8, 1}}, .expectedNew = 22, .expectedOld = {34}},
      {.name = "size and template change", .replicas = 14, .oldReplicas = 10, .updatedTemplate = true,
       .oldRSs = {{"foo-v2", 7, 0}, {"foo-v1", 3, 1}}, .expectedOld = {10, 4}},
      {.name = "saturated but broken new rs keeps old pods", .replicas = 2, .oldReplicas = 2, .surge = 1,
       .oldSurge = 1, .unavailable = 1, .newRS = ScaleRS{"foo-v2", 2, 0}, .oldRSs = {{"foo-v1", 1, 1}},
       .expectedNew = 2, .expectedOld = {1}, .notUpdated = {"foo-v2", "foo-v1"}},
  };
  return cases;
}

class DeploymentScale : public ::testing::TestWithParam<ScaleCase> {};

TEST_P(DeploymentScale, Proportionally) {
  const auto& c = GetParam();
  Harness h;
  const Labels labels = c.updatedTemplate ? kFooBar : Labels{};
  Deployment d = newDeployment("foo", c.replicas, {}, IntOrString::fromInt(c.surge),
                               IntOrString::fromInt(c.unavailable), labels);
  if (c.updatedTemplate) d.spec.template_.metadata.labels["another"] = "label";
  const int64_t newest = 1463702400 + 2 * 3600;  // 2016-05-20T02:00:00Z, then an hour older each
  auto make = [&](const ScaleRS& s) {
    ReplicaSet r = rs(s.name, s.size, {}, api::Time::fromUnix(newest - 3600 * s.age));
    auto it = c.desiredReplicas.find(s.name);
    const int32_t desired = it != c.desiredReplicas.end() ? it->second : c.oldReplicas;
    du::setReplicasAnnotations(r, desired, desired + c.oldSurge);
    return h.stored(r);
  };
  RSPtr newRS = c.newRS ? make(*c.newRS) : nullptr;
  std::vector<RSPtr> oldRSs;
  for (const auto& s : c.oldRSs) oldRSs.push_back(make(s));

  Status st = h.peer.scale(d, newRS, oldRSs);
  ASSERT_TRUE(st.ok()) << st.toString();

  if (c.newRS) { EXPECT_EQ(h.replicasOf(c.newRS->name), *c.expectedNew) << "new " << c.newRS->name; }
  ASSERT_EQ(c.expectedOld.size(), c.oldRSs.size());
  for (size_t i = 0; i < c.oldRSs.size(); ++i)
    EXPECT_EQ(h.replicasOf(c.oldRSs[i].name), c.expectedOld[i]) << "old " << c.oldRSs[i].name;
  for (const auto& u : h.rsUpdates()) {
    EXPECT_FALSE(c.notUpdated.contains(u.metadata.name)) << "unexpected update of " << u.metadata.name;
    // Every write records the Deployment's new size.
    EXPECT_EQ(u.metadata.annotations.at(du::kDesiredReplicasAnnotation), std::to_string(c.replicas));
    EXPECT_EQ(u.metadata.annotations.at(du::kMaxReplicasAnnotation), std::to_string(c.replicas + c.surge));
  }
}

INSTANTIATE_TEST_SUITE_P(, DeploymentScale, ::testing::ValuesIn(scaleCases()), rowName<ScaleCase>);

// ===============================================================================================================
// cleanupDeployment: keep revisionHistoryLimit old ReplicaSets

struct CleanupCase {
  std::string name;
  std::vector<std::pair<int32_t, int32_t>> rss;  // spec and status replicas of foo-1, foo-2, ...
  bool deleting = false;                           // the ReplicaSets are already being deleted
  int32_t limit;
  size_t expectedDeletions;
};

class DeploymentCleanup : public ::testing::TestWithParam<CleanupCase> {};

TEST_P(DeploymentCleanup, DeletesOnlyEmptyReplicaSetsBeyondTheLimit) {
  const auto& c = GetParam();
  Harness h;
  std::vector<RSPtr> oldRSs;
  for (size_t i = 0; i < c.rss.size(); ++i) {
    ReplicaSet r = rsWithStatus("foo-" + std::to_string(i + 1), c.rss[i].first, c.rss[i].second, kFooBar);
    if (c.deleting) {
      r.metadata.deletionTimestamp = api::timeNow(h.clock);
      r.metadata.finalizers = {"foregroundDeletion"};
    }
    h.server->add(r);
    oldRSs.push_back(ptr(r));  // generation 0, as observed
  }
  Deployment d = newDeployment("foo", 1, c.limit, {}, {}, kFooBar);
  Status st = h.peer.cleanupDeployment(oldRSs, d);
  ASSERT_TRUE(st.ok()) << st.toString();
  EXPECT_EQ(h.deletedReplicaSets().size(), c.expectedDeletions) << ::testing::PrintToString(h.requests());
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentCleanup,
    ::testing::Values(CleanupCase{"three empty limit one", {{0, 0}, {0, 0}, {0, 0}}, false, 1, 2},
                      CleanupCase{"only the fully empty one", {{0, 0}, {0, 1}, {1, 0}, {1, 1}}, false, 0, 1},
                      CleanupCase{"two empty limit zero", {{0, 0}, {0, 0}}, false, 0, 2},
                      CleanupCase{"two busy limit zero", {{1, 1}, {1, 1}}, false, 0, 0},
                      CleanupCase{"already being deleted", {{0, 0}}, true, 0, 0},
                      CleanupCase{"unlimited history", {{0, 0}, {0, 0}, {0, 0}}, false, INT32_MAX, 0}),
    rowName<CleanupCase>);

// A ReplicaSet whose latest spec its controller has not observed yet is kept.
TEST(DeploymentCleanupGeneration, KeepsReplicaSetsWithUnobservedGeneration) {
  Harness h;
  ReplicaSet r = rsWithStatus("foo-1", 0, 0, kFooBar);
  r.metadata.generation = 2;
  r.status.observedGeneration = 1;
  h.server->add(r);
  ASSERT_TRUE(h.peer.cleanupDeployment({ptr(r)}, newDeployment("foo", 1, 0, {}, {}, kFooBar)).ok());
  EXPECT_TRUE(h.deletedReplicaSets().empty());
}

struct CleanupOrderRS {
  std::string name;
  int32_t replicas;
  int minutes;  // creation time, minutes from now
  std::string revision;
};

struct CleanupOrderCase {
  std::string name;
  std::vector<CleanupOrderRS> rss;
  int32_t limit;
  std::set<std::string> expectedDeleted;
};

class DeploymentCleanupOrder : public ::testing::TestWithParam<CleanupOrderCase> {};

TEST_P(DeploymentCleanupOrder, OldestRevisionsGoFirst) {
  const auto& c = GetParam();
  Harness h;
  const int64_t now = api::timeNow(h.clock).unixSeconds;
  std::vector<RSPtr> oldRSs;
  for (const auto& s : c.rss) {
    ReplicaSet r = rs(s.name, s.replicas, kFooBar, api::Time::fromUnix(now + 60 * s.minutes));
    if (!s.revision.empty()) r.metadata.annotations[du::kRevisionAnnotation] = s.revision;
    r.status.replicas = s.replicas;
    h.server->add(r);
    oldRSs.push_back(ptr(r));
  }
  ASSERT_TRUE(h.peer.cleanupDeployment(oldRSs, newDeployment("foo", 1, c.limit, {}, {}, kFooBar)).ok());
  auto deleted = h.deletedReplicaSets();
  EXPECT_EQ(std::set<std::string>(deleted.begin(), deleted.end()), c.expectedDeleted);
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentCleanupOrder,
    ::testing::Values(
        CleanupOrderCase{"revision order 1 2", {{"foo-1", 0, -1, "1"}, {"foo-2", 0, 0, "2"}}, 1, {"foo-1"}},
        CleanupOrderCase{"revision order 2 1", {{"foo-1", 0, -1, "2"}, {"foo-2", 0, 0, "1"}}, 1, {"foo-2"}},
        CleanupOrderCase{"second has no revision", {{"foo-1", 0, -1, "1"}, {"foo-2", 0, 0, ""}}, 1, {"foo-2"}},
        CleanupOrderCase{"first has no revision", {{"foo-1", 0, -1, ""}, {"foo-2", 0, 0, "2"}}, 1, {"foo-1"}},
        CleanupOrderCase{"oldest revision still has replicas",
                         {{"foo-1", 1, -1, "1"}, {"foo-2", 0, 0, "2"}, {"foo-3", 0, 1, "3"}},
                         1,
                         {"foo-2"}},
        CleanupOrderCase{"two oldest have replicas",
                         {{"foo-1", 1, -1, "1"}, {"foo-2", 1, 0, "2"}, {"foo-3", 0, 1, "3"}},
                         1,
                         {}},
        CleanupOrderCase{"revisions out of creation order",
                         {{"foo-1", 0, -1, "3"}, {"foo-2", 0, 0, "1"}, {"foo-3", 0, 1, "4"}, {"foo-4", 0, 2, "2"}},
                         2,
                         {"foo-2", "foo-4"}}),
    rowName<CleanupOrderCase>);

// ===============================================================================================================
// new ReplicaSet names

struct NameCase {
  std::string name;
  std::string deploymentName;
  std::string wantPortion;
};

class DeploymentNewReplicaSetName : public ::testing::TestWithParam<NameCase> {};

// The created ReplicaSet is named <deployment>-<hash>, the Deployment's part cut so the whole fits 253 characters.
TEST_P(DeploymentNewReplicaSetName, FitsTheLimit) {
  const auto& c = GetParam();
  Harness h;
  Deployment d = h.seed(newDeployment(c.deploymentName, 1, {}, {}, {}, kFooBar));
  auto r = h.peer.getNewReplicaSet(d, {}, {}, true);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_TRUE(*r);
  const std::string name = (*r)->metadata.name;
  EXPECT_LE(name.size(), 253u);
  const auto dash = name.rfind('-');
  ASSERT_NE(dash, std::string::npos);
  EXPECT_EQ(name.substr(dash + 1), (*r)->metadata.labels.at(du::kDefaultDeploymentUniqueLabelKey));
  EXPECT_EQ(name.substr(0, dash), c.wantPortion);
  EXPECT_EQ(h.server->actionsFor("create", "replicasets").size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(, DeploymentNewReplicaSetName,
                         ::testing::Values(NameCase{"short name", "my-deployment", "my-deployment"},
                                           NameCase{"very long name truncated", std::string(250, 'a'),
                                                    std::string(242, 'a')},
                                           NameCase{"very long name not truncated", std::string(242, 'a'),
                                                    std::string(242, 'a')}),
                         rowName<NameCase>);

struct GenerateNameCase {
  std::string name;
  std::string deploymentName, hash, want;
};

class DeploymentGenerateReplicaSetName : public ::testing::TestWithParam<GenerateNameCase> {};

TEST_P(DeploymentGenerateReplicaSetName, Generates) {
  const auto& c = GetParam();
  EXPECT_EQ(du::generateReplicaSetName(c.deploymentName, c.hash), c.want);
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentGenerateReplicaSetName,
    ::testing::Values(
        GenerateNameCase{"short name", "my-deployment", "abcde12345", "my-deployment-abcde12345"},
        GenerateNameCase{"maximum length without truncating", std::string(242, 'a'), "abcde12345",
                         std::string(242, 'a') + "-abcde12345"},
        GenerateNameCase{"very long name is truncated", std::string(250, 'b'), "abcde12345",
                         std::string(242, 'b') + "-abcde12345"},
        GenerateNameCase{"very long hash is not truncated", std::string(252, 'd'), std::string(252, 'h'),
                         std::string(252, 'd') + "-" + std::string(252, 'h')}),
    rowName<GenerateNameCase>);

// ===============================================================================================================
// RollingUpdate steps

struct ReconcileNewCase {
  std::string name;
  int32_t deploymentReplicas, maxSurge, oldReplicas, newReplicas;
  bool scaleExpected;
  int32_t expectedNewReplicas;
};

class DeploymentReconcileNewReplicaSet : public ::testing::TestWithParam<ReconcileNewCase> {};

TEST_P(DeploymentReconcileNewReplicaSet, ScalesWithinSurge) {
  const auto& c = GetParam();
  Harness h;
  RSPtr newRS = h.stored(rs("foo-v2", c.newReplicas, {}));
  RSPtr oldRS = ptr(rs("foo-v2", c.oldReplicas, {}));
  Deployment d = newDeployment("foo", c.deploymentReplicas, {}, IntOrString::fromInt(c.maxSurge),
                               IntOrString::fromInt(0), kFooBar);
  auto scaled = h.peer.reconcileNewReplicaSet({newRS, oldRS}, newRS, d);
  ASSERT_TRUE(scaled.ok()) << scaled.status().toString();
  EXPECT_EQ(*scaled, c.scaleExpected);
  auto updates = h.rsUpdates();
  ASSERT_EQ(updates.size(), c.scaleExpected ? 1u : 0u) << ::testing::PrintToString(h.requests());
  if (c.scaleExpected) { EXPECT_EQ(updates[0].spec.replicas, c.expectedNewReplicas); }
}

INSTANTIATE_TEST_SUITE_P(, DeploymentReconcileNewReplicaSet,
                         ::testing::Values(ReconcileNewCase{"no surge no room", 10, 0, 10, 0, false, 0},
                                           ReconcileNewCase{"surge of two", 10, 2, 10, 0, true, 2},
                                           ReconcileNewCase{"room from old scaled down", 10, 2, 5, 0, true, 7},
                                           ReconcileNewCase{"surge already used", 10, 2, 10, 2, false, 0},
                                           ReconcileNewCase{"too many scales down", 10, 2, 2, 11, true, 10}),
                         rowName<ReconcileNewCase>);

struct ReconcileOldCase {
  std::string name;
  int32_t deploymentReplicas, maxUnavailable, oldReplicas, newReplicas, readyOld, readyNew;
  bool scaleExpected;
  int32_t expectedOldReplicas;
};

class DeploymentReconcileOldReplicaSets : public ::testing::TestWithParam<ReconcileOldCase> {};

TEST_P(DeploymentReconcileOldReplicaSets, ScalesDownWithinAvailability) {
  const auto& c = GetParam();
  Harness h;
  const Labels newSel = {{"foo", "new"}}, oldSel = {{"foo", "old"}};
  ReplicaSet n = rs("foo-new", c.newReplicas, newSel);
  n.status.availableReplicas = c.readyNew;
  ReplicaSet o = rs("foo-old", c.oldReplicas, oldSel);
  o.status.availableReplicas = c.readyOld;
  RSPtr newRS = h.stored(n), oldRS = h.stored(o);
  Deployment d = newDeployment("foo", c.deploymentReplicas, {}, IntOrString::fromInt(0),
                               IntOrString::fromInt(c.maxUnavailable), newSel);
  auto scaled = h.peer.reconcileOldReplicaSets({oldRS, newRS}, {oldRS}, newRS, d);
  ASSERT_TRUE(scaled.ok()) << scaled.status().toString();
  EXPECT_EQ(*scaled, c.scaleExpected);
  EXPECT_EQ(h.replicasOf("foo-old"), c.scaleExpected ? c.expectedOldReplicas : c.oldReplicas);
  EXPECT_EQ(h.replicasOf("foo-new"), c.newReplicas);
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentReconcileOldReplicaSets,
    ::testing::Values(ReconcileOldCase{"max unavailable zero", 10, 0, 10, 0, 10, 0, true, 9},
                      ReconcileOldCase{"max unavailable two", 10, 2, 10, 0, 10, 0, true, 8},
                      ReconcileOldCase{"unhealthy old replicas cleaned up", 10, 2, 10, 0, 8, 0, true, 8},
                      ReconcileOldCase{"one unhealthy one ready scaled down", 10, 2, 10, 0, 9, 0, true, 8},
                      ReconcileOldCase{"unavailable new pods block scale down", 10, 2, 8, 2, 8, 0, false, 0}),
    rowName<ReconcileOldCase>);

struct CleanupUnhealthyCase {
  std::string name;
  int32_t oldReplicas, readyPods, maxCleanup, expected;
};

class DeploymentCleanupUnhealthyReplicas : public ::testing::TestWithParam<CleanupUnhealthyCase> {};

TEST_P(DeploymentCleanupUnhealthyReplicas, CleansUpToTheMax) {
  const auto& c = GetParam();
  Harness h;
  ReplicaSet o = rs("foo-v2", c.oldReplicas, {});
  o.status.availableReplicas = c.readyPods;
  std::vector<RSPtr> oldRSs = {h.stored(o)};
  Deployment d = newDeployment("foo", 10, {}, IntOrString::fromInt(2), IntOrString::fromInt(2));
  auto n = h.peer.cleanupUnhealthyReplicas(oldRSs, d, c.maxCleanup);
  ASSERT_TRUE(n.ok()) << n.status().toString();
  EXPECT_EQ(*n, c.expected);
  EXPECT_EQ(h.replicasOf("foo-v2"), c.oldReplicas - c.expected);
  EXPECT_EQ(oldRSs[0]->spec.replicas, c.oldReplicas - c.expected);  // the caller sees the updated ReplicaSet
}

INSTANTIATE_TEST_SUITE_P(, DeploymentCleanupUnhealthyReplicas,
                         ::testing::Values(CleanupUnhealthyCase{"capped at one", 10, 8, 1, 1},
                                           CleanupUnhealthyCase{"all unhealthy", 10, 8, 3, 2},
                                           CleanupUnhealthyCase{"nothing allowed", 10, 8, 0, 0},
                                           CleanupUnhealthyCase{"all healthy", 10, 10, 3, 0}),
                         rowName<CleanupUnhealthyCase>);

struct ScaleDownOldCase {
  std::string name;
  int32_t deploymentReplicas, maxUnavailable, readyPods, oldReplicas;
  bool scaleExpected;
  int32_t expectedOldReplicas;
};

class DeploymentScaleDownOldReplicaSets : public ::testing::TestWithParam<ScaleDownOldCase> {};

TEST_P(DeploymentScaleDownOldReplicaSets, ForRollingUpdate) {
  const auto& c = GetParam();
  Harness h;
  ReplicaSet o = rs("foo-v2", c.oldReplicas, {});
  o.status.availableReplicas = c.readyPods;
  RSPtr oldRS = h.stored(o);
  Deployment d = newDeployment("foo", c.deploymentReplicas, {}, IntOrString::fromInt(0),
                               IntOrString::fromInt(c.maxUnavailable), kFooBar);
  auto n = h.peer.scaleDownOldReplicaSetsForRollingUpdate({oldRS}, {oldRS}, d);
  ASSERT_TRUE(n.ok()) << n.status().toString();
  EXPECT_EQ(*n > 0, c.scaleExpected);
  auto updates = h.rsUpdates();
  ASSERT_EQ(updates.size(), c.scaleExpected ? 1u : 0u);
  if (c.scaleExpected) { EXPECT_EQ(updates[0].spec.replicas, c.expectedOldReplicas); }
}

INSTANTIATE_TEST_SUITE_P(, DeploymentScaleDownOldReplicaSets,
                         ::testing::Values(ScaleDownOldCase{"max unavailable zero", 10, 0, 10, 10, true, 9},
                                           ScaleDownOldCase{"max unavailable two", 10, 2, 10, 10, true, 8},
                                           ScaleDownOldCase{"at min availability", 10, 2, 8, 10, false, 0},
                                           ScaleDownOldCase{"nothing to scale down", 10, 2, 10, 0, false, 0},
                                           ScaleDownOldCase{"below min availability", 10, 2, 1, 10, false, 0}),
                         rowName<ScaleDownOldCase>);

// ===============================================================================================================
// Recreate: whether old pods may still run

struct OldPodsCase {
  std::string name;
  int oldSet;  // 0 none; 1 two ReplicaSets with pods; 2 one with status replicas 1; 3 one with none
  std::map<std::string, Strings> podPhases;  // ReplicaSet uid -> phases of its pods
  bool expected;
};

class DeploymentOldPodsRunning : public ::testing::TestWithParam<OldPodsCase> {};

TEST_P(DeploymentOldPodsRunning, Checks) {
  const auto& c = GetParam();
  Deployment d = newDeployment("foo", 1, {}, {}, {}, kFooBar);
  auto withUID = [&](const std::string& uid) {
    ReplicaSet r = newReplicaSet(d, "foo-" + uid, 0);
    r.metadata.uid = uid;
    return ptr(r);
  };
  std::vector<RSPtr> oldRSs;
  if (c.oldSet == 1) oldRSs = {withUID("some-uid"), withUID("other-uid")};
  if (c.oldSet == 2) oldRSs = {ptr(rsWithStatus("rs-1", 0, 1))};
  if (c.oldSet == 3) oldRSs = {ptr(rsWithStatus("rs-1", 0, 0))};
  DeploymentControllerTestPeer::PodMap podMap;
  for (const auto& [uid, phases] : c.podPhases) {
    auto& pods = podMap[uid];
    for (const auto& phase : phases) {
      Pod p;
      p.status.phase = phase;
      pods.push_back(std::make_shared<const Pod>(p));
    }
  }
  EXPECT_EQ(DeploymentControllerTestPeer::oldPodsRunning(nullptr, oldRSs, podMap), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentOldPodsRunning,
    ::testing::Values(
        OldPodsCase{"no old rss", 0, {}, false},
        OldPodsCase{"old rss with running pods", 1, {{"some-uid", {"", ""}}, {"other-uid", {"", ""}}}, true},
        OldPodsCase{"no pods but status replicas", 2, {}, true},
        OldPodsCase{"no pods no status replicas", 3, {}, false},
        OldPodsCase{"only terminal pods", 3, {{"uid-1", {"Failed", "Succeeded"}}}, false},
        OldPodsCase{"unknown phase pod", 3, {{"uid-1", {"Unknown"}}}, true},
        OldPodsCase{"pending pod", 3, {{"uid-1", {"Pending"}}}, true},
        OldPodsCase{"running pod", 3, {{"uid-1", {"Running"}}}, true},
        OldPodsCase{"terminal and pending pods", 3,
                    {{"uid-1", {"Failed", "Succeeded"}}, {"uid-2", {}}, {"uid-3", {"Pending"}}}, true}),
    rowName<OldPodsCase>);

// Pods of the new ReplicaSet never count as old.
TEST(DeploymentOldPodsRunningNewRS, IgnoresTheNewReplicaSetsPods) {
  ReplicaSet n = rs("foo-new", 1, {});
  DeploymentControllerTestPeer::PodMap podMap;
  Pod p;
  p.status.phase = "Running";
  podMap[n.metadata.uid] = {std::make_shared<const Pod>(p)};
  EXPECT_FALSE(DeploymentControllerTestPeer::oldPodsRunning(ptr(n), {}, podMap));
  EXPECT_TRUE(DeploymentControllerTestPeer::oldPodsRunning(nullptr, {}, podMap));
}

// ===============================================================================================================
// progress: requeueing stuck Deployments and the Progressing condition

// A Recreate Deployment "progress-test" with the given status.
Deployment currentDeployment(std::optional<int32_t> pds, int32_t replicas, int32_t statusReplicas, int32_t updated,
                             int32_t available, std::vector<DeploymentCondition> conditions) {
  Deployment d;
  d.metadata.name = "progress-test";
  d.metadata.namespace_ = kNs;
  d.spec.progressDeadlineSeconds = pds;
  d.spec.replicas = replicas;
  d.spec.strategy.type = "Recreate";
  d.status.replicas = statusReplicas;
  d.status.updatedReplicas = updated;
  d.status.availableReplicas = available;
  d.status.conditions = std::move(conditions);
  return d;
}

DeploymentStatus newDeploymentStatus(int32_t replicas, int32_t updated, int32_t available) {
  DeploymentStatus s;
  s.replicas = replicas;
  s.updatedReplicas = updated;
  s.availableReplicas = available;
  return s;
}

DeploymentCondition progressing(const std::string& status, const std::string& reason, api::Time t = {}) {
  DeploymentCondition c;
  c.type = "Progressing";
  c.status = status;
  c.reason = reason;
  c.lastUpdateTime = t;
  c.lastTransitionTime = t;
  return c;
}

struct RequeueCase {
  std::string name;
  std::optional<int32_t> pds;
  std::array<int32_t, 4> counts;  // spec replicas; status replicas, updated, available
  std::string cond;               // "", "failed" or "stuck" (Progressing=True, last updated at T)
  Clock::Duration now;            // the clock, as an offset from T
  Clock::Duration expected;
};

class DeploymentRequeueStuck : public ::testing::TestWithParam<RequeueCase> {};

TEST_P(DeploymentRequeueStuck, AfterTheDeadline) {
  const auto& c = GetParam();
  Harness h;
  const api::Time t = api::timeNow(h.clock);
  std::vector<DeploymentCondition> conds;
  if (c.cond == "failed") conds = {progressing("False", du::kTimedOutReason)};
  if (c.cond == "stuck") conds = {progressing("True", "", t)};
  Deployment d = currentDeployment(c.pds, c.counts[0], c.counts[1], c.counts[2], c.counts[3], conds);
  h.clock.advance(c.now);
  EXPECT_EQ(h.peer.requeueStuckDeployment(d, newDeploymentStatus(c.counts[1], c.counts[2], c.counts[3])),
            c.expected);
  // The key shows up in the queue once that time (plus a second) passed, and not at all when never requeued.
  h.clock.advance(c.expected < 0ns ? Clock::Duration(1h) : c.expected + 1s);
  EXPECT_EQ(h.drainQueue(), c.expected < 0ns ? Strings{} : Strings{"default/progress-test"});
}

constexpr Clock::Duration kNever{-1};

INSTANTIATE_TEST_SUITE_P(
    , DeploymentRequeueStuck,
    ::testing::Values(RequeueCase{"no progress deadline", std::nullopt, {4, 3, 3, 2}, "", 0s, kNever},
                      RequeueCase{"infinite progress deadline", INT32_MAX, {4, 3, 3, 2}, "", 0s, kNever},
                      RequeueCase{"no progressing condition", 60, {4, 3, 3, 2}, "", 0s, kNever},
                      RequeueCase{"complete deployment", 60, {3, 3, 3, 3}, "", 0s, kNever},
                      RequeueCase{"already failed", 60, {3, 3, 3, 0}, "failed", 0s, kNever},
                      RequeueCase{"stuck 30s left", 60, {3, 3, 3, 1}, "stuck", 30s, 30s},
                      RequeueCase{"stuck 1s left", 60, {3, 3, 3, 1}, "stuck", 59s, 1s},
                      RequeueCase{"less than a second left", 60, {3, 3, 3, 1}, "stuck", 59s + 1ns, 0s},
                      RequeueCase{"at the deadline", 60, {3, 3, 3, 1}, "stuck", 60s, 0s},
                      RequeueCase{"1s past the deadline", 60, {3, 3, 3, 1}, "stuck", 61s, 0s},
                      RequeueCase{"60s past the deadline", 60, {3, 3, 3, 1}, "stuck", 120s, 0s}),
    rowName<RequeueCase>);

struct RolloutStatusCase {
  std::string name;
  std::optional<int32_t> pds;
  std::array<int32_t, 4> counts;       // spec replicas; status replicas, updated, available
  std::string cond;                    // "", "timedOut", "newRSAvailable" or "rsUpdated" (the last two at T)
  std::vector<std::array<int32_t, 3>> others;  // other ReplicaSets: spec, status, available replicas
  std::optional<std::array<int32_t, 3>> newRS;
  std::string expectStatus, expectReason;  // empty: no Progressing condition expected
  char lastUpdate, lastTransition;         // 'T' the old time, 'N' now, 'Z' never set
};

class DeploymentSyncRolloutStatus : public ::testing::TestWithParam<RolloutStatusCase> {};

TEST_P(DeploymentSyncRolloutStatus, SetsProgressing) {
  const auto& c = GetParam();
  Harness h;
  const api::Time now = api::timeNow(h.clock);
  const api::Time t = api::Time::fromUnix(now.unixSeconds - 3600);
  std::vector<DeploymentCondition> conds;
  if (c.cond == "timedOut") conds = {progressing("False", du::kTimedOutReason)};
  if (c.cond == "newRSAvailable") conds = {progressing("True", du::kNewRSAvailableReason, t)};
  if (c.cond == "rsUpdated") conds = {progressing("True", du::kReplicaSetUpdatedReason, t)};
  Deployment d = h.server->add(currentDeployment(c.pds, c.counts[0], c.counts[1], c.counts[2], c.counts[3], conds));
  auto withAvailable = [](const std::string& name, const std::array<int32_t, 3>& v) {
    ReplicaSet r = rs(name, v[0], {});
    r.status.replicas = v[1];
    r.status.availableReplicas = v[2];
    return ptr(r);
  };
  std::vector<RSPtr> all;
  for (size_t i = 0; i < c.others.size(); ++i)
    all.push_back(withAvailable("bar-" + std::to_string(i), c.others[i]));
  RSPtr newRS = c.newRS ? withAvailable("foo", *c.newRS) : nullptr;
  if (newRS) all.push_back(newRS);

  Status st = h.peer.syncRolloutStatus(all, newRS, d);
  ASSERT_TRUE(st.ok()) << st.toString();

  const auto* cond = du::getDeploymentCondition(d.status, "Progressing");
  if (c.expectStatus.empty()) {
    EXPECT_EQ(cond, nullptr);
    return;
  }
  ASSERT_NE(cond, nullptr);
  EXPECT_EQ(cond->status, c.expectStatus);
  EXPECT_EQ(cond->reason, c.expectReason);
  auto expectTime = [&](char which, api::Time got, const char* field) {
    const api::Time want = which == 'T' ? t : which == 'N' ? now : api::Time{};
    EXPECT_EQ(got, want) << field << " want " << which;
  };
  expectTime(c.lastUpdate, cond->lastUpdateTime, "lastUpdateTime");
  expectTime(c.lastTransition, cond->lastTransitionTime, "lastTransitionTime");
  // What the controller decided is what the apiserver holds.
  auto held = h.server->get<Deployment>(kNs, "progress-test");
  ASSERT_TRUE(held);
  const auto* stored = du::getDeploymentCondition(held->status, "Progressing");
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->reason, c.expectReason);
}

INSTANTIATE_TEST_SUITE_P(
    , DeploymentSyncRolloutStatus,
    ::testing::Values(
        RolloutStatusCase{"no deadline removes progressing", std::nullopt, {3, 2, 2, 2}, "rsUpdated", {{0, 1, 1}},
                          std::array<int32_t, 3>{3, 2, 2}, "", "", '-', '-'},
        RolloutStatusCase{"one active replica set is not estimated", 60, {3, 3, 3, 3}, "newRSAvailable",
                          {{3, 3, 3}}, std::nullopt, "True", du::kNewRSAvailableReason, 'T', 'T'},
        RolloutStatusCase{"progressing keeps transition time", 60, {3, 2, 2, 2}, "rsUpdated", {{0, 1, 1}},
                          std::array<int32_t, 3>{3, 2, 2}, "True", du::kReplicaSetUpdatedReason, 'N', 'T'},
        RolloutStatusCase{"progressing after timing out", 60, {3, 2, 2, 2}, "timedOut", {{0, 1, 1}},
                          std::array<int32_t, 3>{3, 2, 2}, "True", du::kReplicaSetUpdatedReason, 'N', 'N'},
        RolloutStatusCase{"progressing creates the condition", 60, {3, 2, 2, 2}, "", {{0, 1, 1}},
                          std::array<int32_t, 3>{3, 2, 2}, "True", du::kReplicaSetUpdatedReason, 'N', 'N'},
        RolloutStatusCase{"complete keeps transition time", 60, {3, 3, 3, 3}, "rsUpdated", {},
                          std::array<int32_t, 3>{3, 3, 3}, "True", du::kNewRSAvailableReason, 'N', 'T'},
        RolloutStatusCase{"complete after timing out", 60, {3, 3, 3, 3}, "timedOut", {},
                          std::array<int32_t, 3>{3, 3, 3}, "True", du::kNewRSAvailableReason, 'N', 'N'},
        RolloutStatusCase{"complete creates the condition", 60, {3, 3, 3, 3}, "", {},
                          std::array<int32_t, 3>{3, 3, 3}, "True", du::kNewRSAvailableReason, 'N', 'N'},
        RolloutStatusCase{"complete without a new replica set", 60, {0, 3, 3, 3}, "rsUpdated", {{0, 0, 0}},
                          std::nullopt, "True", du::kNewRSAvailableReason, 'N', 'T'},
        RolloutStatusCase{"times out past the deadline", 60, {3, 2, 2, 2}, "rsUpdated", {},
                          std::array<int32_t, 3>{3, 2, 2}, "False", du::kTimedOutReason, 'N', 'N'},
        RolloutStatusCase{"stays timed out", 60, {3, 2, 2, 2}, "timedOut", {}, std::array<int32_t, 3>{3, 2, 2},
                          "False", du::kTimedOutReason, 'Z', 'Z'}),
    rowName<RolloutStatusCase>);

// A ReplicaFailure of the new ReplicaSet is surfaced on the Deployment, and removed once it is gone.
TEST(DeploymentReplicaFailure, SurfacedAndCleared) {
  Harness h;
  Deployment d = h.server->add(currentDeployment(std::nullopt, 3, 0, 0, 0, {}));
  ReplicaSet n = rs("foo", 3, {});
  api::apps::v1::ReplicaSetCondition rf;
  rf.type = "ReplicaFailure";
  rf.status = "True";
  rf.reason = "FailedCreate";
  rf.lastTransitionTime = api::timeNow(h.clock);
  n.status.conditions = {rf};
  ASSERT_TRUE(h.peer.syncRolloutStatus({ptr(n)}, ptr(n), d).ok());
  const auto* failure = du::getDeploymentCondition(d.status, "ReplicaFailure");
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ(failure->reason, "FailedCreate");
  n.status.conditions.clear();
  ASSERT_TRUE(h.peer.syncRolloutStatus({ptr(n)}, ptr(n), d).ok());
  EXPECT_EQ(du::getDeploymentCondition(d.status, "ReplicaFailure"), nullptr);
}

}  // namespace
}  // namespace kcm::controllers
