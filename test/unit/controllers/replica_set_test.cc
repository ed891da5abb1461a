// replicaset-controller against the in-memory apiserver: syncs, slow-start creates, which pods go first on
// scale-down, adoption and release, expectations, and the status it writes. The cases follow upstream's
// pkg/controller/replicaset tests and the pod ranking cases of pkg/controller/controller_utils_test.go.
#include "controllers/replicaset/replica_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "fake/fake_apiserver.h"
#include "informers/factory.h"

namespace kcm::controllers {

// Reaches the controller's handlers and helpers, as upstream's tests call them on the controller directly.
class ReplicaSetTestPeer {
 public:
  template <class K>
  static Status manageReplicas(ReplicaSetControllerT<K>& c, const std::vector<PodPtr>& active,
                               const typename K::Object& rs) {
    return c.manageReplicas(active, rs);
  }
  template <class K>
  static auto calculateStatus(ReplicaSetControllerT<K>& c, const typename K::Object& rs,
                              const std::vector<PodPtr>& active, const std::vector<PodPtr>& terminating,
                              const Status& err) {
    return c.calculateStatus(rs, active, terminating, err, c.clock_.wallNow());
  }
  template <class K>
  static auto updateStatus(ReplicaSetControllerT<K>& c, const typename K::Object& rs,
                           const decltype(K::Object::status)& st) {
    return c.updateStatus(rs, st);
  }
  template <class K>
  static std::vector<PodPtr> indirectlyRelatedPods(ReplicaSetControllerT<K>& c, const typename K::Object& rs) {
    return c.indirectlyRelatedPods(rs);
  }
  template <class K>
  static auto podOwners(ReplicaSetControllerT<K>& c, const api::core::v1::Pod& pod) {
    return c.getPodOwners(pod);
  }
  template <class K>
  static void addPod(ReplicaSetControllerT<K>& c, const PodPtr& p) {
    c.addPod(p);
  }
  template <class K>
  static void updatePod(ReplicaSetControllerT<K>& c, const PodPtr& o, const PodPtr& n) {
    c.updatePod(o, n);
  }
  template <class K>
  static void deletePod(ReplicaSetControllerT<K>& c, const api::core::v1::Pod& p) {
    c.deletePod(p);
  }
  template <class K>
  static runtime::UIDTrackingControllerExpectations& expectations(ReplicaSetControllerT<K>& c) {
    return c.expectations_;
  }
  template <class K>
  static runtime::WorkQueue& queue(ReplicaSetControllerT<K>& c) {
    return c.base_.queue();
  }
};

namespace {

using api::apps::v1::ReplicaSet;
using api::core::v1::Pod;
using testing::Action;
using testing::FakeApiServer;
using namespace std::chrono_literals;

using Labels = std::map<std::string, std::string>;
const Labels kFooBar = {{"foo", "bar"}};

// upstream newReplicaSet: "default/foobar", controlled by an owner with uid 123, template labels name=foo and
// type=production.
ReplicaSet newReplicaSet(int replicas, const Labels& selector, const std::string& name = "foobar") {
  ReplicaSet rs;
  rs.metadata.namespace_ = "default";
  rs.metadata.name = name;
  rs.metadata.uid = "rs-uid-" + name;
  api::meta::v1::OwnerReference owner;
  owner.uid = "123";
  owner.controller = true;
  rs.metadata.ownerReferences.push_back(owner);
  rs.spec.replicas = replicas;
  api::meta::v1::LabelSelector sel;
  for (const auto& [k, v] : selector) sel.matchLabels[k] = v;
  rs.spec.selector = sel;
  rs.spec.template_.metadata.labels["name"] = "foo";
  rs.spec.template_.metadata.labels["type"] = "production";
  api::core::v1::Container c;
  c.name = "c";
  c.image = "foo/bar";
  rs.spec.template_.spec.containers.push_back(c);
  return rs;
}

api::meta::v1::OwnerReference controllerRefTo(const ReplicaSet& rs) {
  api::meta::v1::OwnerReference r;
  r.apiVersion = "apps/v1";
  r.kind = "ReplicaSet";
  r.name = rs.metadata.name;
  r.uid = rs.metadata.uid;
  r.controller = true;
  return r;
}

// upstream newPod: the ReplicaSet's selector labels, Ready when Running (since readySince, if given), and
// controlled by the ReplicaSet when owned.
Pod newPod(const std::string& name, const ReplicaSet& rs, const std::string& phase,
           std::optional<api::Time> readySince = std::nullopt, bool owned = true) {
  Pod p;
  p.metadata.namespace_ = rs.metadata.namespace_;
  p.metadata.name = name;
  p.metadata.uid = "pod-uid-" + name;
  if (rs.spec.selector)
    for (const auto& [k, v] : rs.spec.selector->matchLabels) p.metadata.labels[k] = v;
  if (owned) p.metadata.ownerReferences.push_back(controllerRefTo(rs));
  p.status.phase = phase;
  if (phase == "Running") {
    api::core::v1::PodCondition c;
    c.type = "Ready";
    c.status = "True";
    if (readySince) c.lastTransitionTime = *readySince;
    p.status.conditions.push_back(c);
  }
  return p;
}

PodPtr ptr(const Pod& p) { return std::make_shared<const Pod>(p); }

std::vector<std::string> names(const std::vector<Action>& as) {
  std::vector<std::string> out;
  for (const auto& a : as) out.push_back(a.name);
  std::sort(out.begin(), out.end());
  return out;
}

std::string key(const ReplicaSet& rs) { return rs.metadata.namespace_ + "/" + rs.metadata.name; }

// A ReplicaSet controller over informers that are never started: the tests fill their stores and call the sync
// (or the handlers) themselves, as upstream's tests do with the informers' indexers.
class Harness {
 public:
  explicit Harness(int burst = kBurstReplicas, bool terminatingReplicas = true) {
    server->addStandardResources();
    ReplicaSetControllerOptions o;
    o.burstReplicas = burst;
    o.staleConsistency = false;  // the informers never run, so they never catch up with our writes
    o.terminatingReplicas = terminatingReplicas;
    ctrl = std::make_unique<ReplicaSetController>(server->client(), broadcaster.newRecorder("replicaset-controller"),
                                                  factory.forType<ReplicaSet>(), factory.forType<Pod>(), o, clock);
  }

  informers::Store<ReplicaSet>& rsStore() { return factory.forType<ReplicaSet>().store(); }
  informers::Store<Pod>& podStore() { return factory.forType<Pod>().store(); }

  // Seeds the apiserver and the informer's cache.
  ReplicaSet addRS(const ReplicaSet& rs, bool toServer = true) {
    ReplicaSet stored = toServer ? server->add(rs) : rs;
    cacheRS(stored);
    return stored;
  }
  void cacheRS(const ReplicaSet& rs) {
    rsStore().upsert(informers::metaNamespaceKey(rs), std::make_shared<const ReplicaSet>(rs));
  }
  PodPtr addPod(const Pod& p, bool toServer = true) {
    PodPtr stored = ptr(toServer ? server->add(p) : p);
    podStore().upsert(informers::metaNamespaceKey(*stored), stored);
    return stored;
  }
  runtime::SyncResult sync(const ReplicaSet& rs) { return ctrl->syncReplicaSet(key(rs)); }

  std::vector<Action> creates() const { return server->actionsFor("create", "pods"); }
  std::vector<Action> deletes() const { return server->actionsFor("delete", "pods"); }
  std::vector<Action> patches() const { return server->actionsFor("patch", "pods"); }

  // The keys waiting in the controller's queue (drained).
  std::set<std::string> queued() {
    std::set<std::string> out;
    auto& q = ReplicaSetTestPeer::queue(*ctrl);
    while (auto k = q.tryGet()) {
      out.insert(*k);
      q.done(*k);
    }
    return out;
  }
  runtime::UIDTrackingControllerExpectations& expectations() { return ReplicaSetTestPeer::expectations(*ctrl); }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  std::shared_ptr<FakeApiServer> eventSink = std::make_shared<FakeApiServer>();
  client::EventBroadcaster broadcaster{eventSink->client(), "test"};
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  std::unique_ptr<ReplicaSetController> ctrl;
};

// ---- syncReplicaSet ----

TEST(ReplicaSetSync, DoesNothingWhenTheReplicasAreThere) {
  Harness h;
  auto rs = h.addRS(newReplicaSet(2, kFooBar));
  h.addPod(newPod("pod0", rs, "Running"));
  h.addPod(newPod("pod1", rs, "Running"));
  EXPECT_TRUE(h.sync(rs).status.ok());
  EXPECT_TRUE(h.creates().empty());
  EXPECT_TRUE(h.deletes().empty());
  EXPECT_TRUE(h.patches().empty());
}

// Asked for 100 replicas with a quota that admits 10 pods, the controller stops at the first failing batch
// (1, 2, 4, then 8 of which 3 pass) instead of sending 100 creates.
TEST(ReplicaSetSync, CreateFailuresStopTheSlowStart) {
  Harness h;
  auto rs = h.addRS(newReplicaSet(100, kFooBar));
  std::atomic<int> admitted{0};
  h.server->prependReactor("create", "pods", [&](const Action&) -> std::optional<client::Transport::Reply> {
    if (admitted.fetch_add(1) < 10) return std::nullopt;
    return FakeApiServer::errorReply(403, "Forbidden", "pods \"x\" is forbidden: exceeded quota");
  });
  auto r = h.sync(rs);
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(h.server->list<Pod>("default").size(), 10u);
  EXPECT_EQ(h.creates().size(), 15u);  // 1 + 2 + 4 + 8: no batch after the failing one
  // The pods never attempted are no longer expected; the 10 created still are.
  EXPECT_EQ(h.expectations().get(key(rs)).add, 10);
  auto stored = h.server->get<ReplicaSet>("default", "foobar");
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->status.conditions.size(), 1u);
  EXPECT_EQ(stored->status.conditions[0].type, "ReplicaFailure");
  EXPECT_EQ(stored->status.conditions[0].reason, "FailedCreate");
}

// Expectations keep a sync from creating again until the informer has seen the pods created; a failed create
// is not expected, so the next sync tries again.
TEST(ReplicaSetSync, ExpectationsMakeTheControllerDormantUntilItsCreatesAreSeen) {
  Harness h;
  auto rs = h.addRS(newReplicaSet(2, kFooBar));
  h.addPod(newPod("pod0", rs, "Running"));
  EXPECT_TRUE(h.sync(rs).status.ok());
  EXPECT_EQ(h.creates().size(), 1u);

  h.server->clearActions();
  EXPECT_TRUE(h.sync(rs).status.ok());  // the created pod is not in the cache yet: no second create
  EXPECT_TRUE(h.creates().empty());

  h.expectations().creationObserved(key(rs));
  h.server->clearActions();
  std::atomic<bool> failCreates{true};
  h.server->prependReactor("create", "pods", [&](const Action&) -> std::optional<client::Transport::Reply> {
    if (!failCreates) return std::nullopt;
    return FakeApiServer::errorReply(500, "InternalError", "fake error");
  });
  EXPECT_FALSE(h.sync(rs).status.ok());
  EXPECT_EQ(h.creates().size(), 1u);
  EXPECT_TRUE(h.expectations().satisfiedExpectations(key(rs)));  // the failed create is not waited for

  failCreates = false;
  h.server->clearActions();
  EXPECT_TRUE(h.sync(rs).status.ok());
  EXPECT_EQ(h.creates().size(), 1u);
  EXPECT_EQ(h.server->list<Pod>("default").size(), 3u);  // pod0 and the two created
}

TEST(ReplicaSetSync, DoesNotCreateWhenTheExpectationsAreStillOpen) {
  Harness h;
  auto rs = h.addRS(newReplicaSet(2, kFooBar));
  h.expectations().expectCreations(key(rs), 1);
  EXPECT_TRUE(h.sync(rs).status.ok());
  EXPECT_TRUE(h.creates().empty());
  // Expectations expire after 5 minutes (a lost watch event must not stall the ReplicaSet forever).
  h.clock.advance(5min + 1s);
  EXPECT_TRUE(h.sync(rs).status.ok());
  EXPECT_EQ(h.creates().size(), 2u);
}

// ---- related pods (pods of ReplicaSets with the same controller), used to rank pods for deletion ----

struct RelatedPodsCase {
  std::string name;
  std::vector<std::string> rss;  // of someRS, relatedRS, unrelatedRS, pendingDeletionRS
  std::string rs;
  std::vector<std::pair<std::string, std::string>> pods;  // pod name, owning ReplicaSet
  std::vector<std::string> want;
};

class ReplicaSetRelatedPods : public ::testing::TestWithParam<RelatedPodsCase> {};

TEST_P(ReplicaSetRelatedPods, AreThePodsOfReplicaSetsWithTheSameController) {
  const auto& tc = GetParam();
  std::map<std::string, ReplicaSet> all;
  all["some"] = newReplicaSet(1, {{"foo", "bar"}}, "foo1");
  all["related"] = newReplicaSet(1, {{"foo", "baz"}}, "foo2");
  all["unrelated"] = newReplicaSet(1, {{"foo", "quux"}}, "bar1");
  all["unrelated"].metadata.ownerReferences[0].uid = "456";
  all["pendingDeletion"] = newReplicaSet(1, {{"foo", "xyzzy"}}, "foo3");
  all["pendingDeletion"].metadata.ownerReferences[0].uid = "789";
  all["pendingDeletion"].metadata.deletionTimestamp = api::Time::fromUnix(1000);
  Harness h;
  for (const auto& r : tc.rss) h.addRS(all[r], false);
  for (const auto& [pod, owner] : tc.pods) {
    auto p = h.addPod(newPod(pod, all[owner], "Running"), false);
    ReplicaSetTestPeer::addPod(*h.ctrl, p);
  }
  std::vector<std::string> got;
  for (const auto& p : ReplicaSetTestPeer::indirectlyRelatedPods(*h.ctrl, all[tc.rs])) got.push_back(p->metadata.name);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, tc.want);
}

INSTANTIATE_TEST_SUITE_P(
    ReplicaSet, ReplicaSetRelatedPods,
    ::testing::Values(
        RelatedPodsCase{"OwnReplicaSetPendingDeletion", {"pendingDeletion", "unrelated"}, "pendingDeletion",
                        {{"pod", "pendingDeletion"}}, {"pod"}},
        RelatedPodsCase{"OnlyOwnPodsWithoutRelatedReplicaSets", {"some", "unrelated"}, "some",
                        {{"pod1", "some"}, {"pod2", "some"}, {"pod4", "unrelated"}}, {"pod1", "pod2"}},
        RelatedPodsCase{"OwnAndRelatedButNotUnrelated", {"some", "related", "unrelated"}, "some",
                        {{"pod1", "some"}, {"pod2", "some"}, {"pod3", "related"}, {"pod4", "unrelated"}},
                        {"pod1", "pod2", "pod3"}}),
    [](const auto& info) { return info.param.name; });

// ---- which ReplicaSets select an orphan pod ----

struct PodOwnersCase {
  std::string name;
  std::string rsNamespace, rsName;
  Labels rsSelector;  // empty: no selector
  std::string podNamespace;
  Labels podLabels;
  std::string want;  // "" = none
};

class ReplicaSetPodOwners : public ::testing::TestWithParam<PodOwnersCase> {};

TEST_P(ReplicaSetPodOwners, MatchNamespaceAndSelector) {
  const auto& tc = GetParam();
  Harness h;
  ReplicaSet rs;
  rs.metadata.namespace_ = tc.rsNamespace;
  rs.metadata.name = tc.rsName;
  if (!tc.rsSelector.empty()) {
    api::meta::v1::LabelSelector sel;
    for (const auto& [k, v] : tc.rsSelector) sel.matchLabels[k] = v;
    rs.spec.selector = sel;
  }
  h.addRS(rs, false);
  Pod pod;
  pod.metadata.namespace_ = tc.podNamespace;
  pod.metadata.name = "pod";
  for (const auto& [k, v] : tc.podLabels) pod.metadata.labels[k] = v;
  auto owners = ReplicaSetTestPeer::podOwners(*h.ctrl, pod);
  if (tc.want.empty()) {
    EXPECT_TRUE(owners.empty());
  } else {
    ASSERT_EQ(owners.size(), 1u);
    EXPECT_EQ(owners[0]->metadata.name, tc.want);
  }
}

INSTANTIATE_TEST_SUITE_P(
    ReplicaSet, ReplicaSetPodOwners,
    ::testing::Values(PodOwnersCase{"PodWithoutLabelsMatchesNothing", "", "basic", {}, "", {}, ""},
                      PodOwnersCase{"MatchingLabelsOtherNamespace", "", "foo", kFooBar, "ns", kFooBar, ""},
                      PodOwnersCase{"MatchingNamespaceAndLabels", "ns", "bar", kFooBar, "ns", kFooBar, "bar"}),
    [](const auto& info) { return info.param.name; });

// ---- pod updates: which ReplicaSets get synced ----

struct UpdatePodCase {
  std::string name;
  Labels oldLabels;
  std::string oldOwner;  // "" none, "rs1", "rs2"
  Labels newLabels;
  std::string newOwner;
  std::set<std::string> want;
};

class ReplicaSetUpdatePod : public ::testing::TestWithParam<UpdatePodCase> {};

TEST_P(ReplicaSetUpdatePod, QueuesTheOwnersConcerned) {
  const auto& tc = GetParam();
  Harness h;
  std::map<std::string, ReplicaSet> rss = {{"rs1", newReplicaSet(1, {{"foo", "bar"}}, "foobar")},
                                           {"rs2", newReplicaSet(1, {{"bar", "foo"}}, "barfoo")}};
  for (const auto& [n, rs] : rss) h.addRS(rs, false);
  auto make = [&](const Labels& labels, const std::string& owner, const std::string& rv) {
    Pod p = newPod("pod", rss["rs1"], "Running", std::nullopt, false);
    p.metadata.labels.clear();
    for (const auto& [k, v] : labels) p.metadata.labels[k] = v;
    if (!owner.empty()) p.metadata.ownerReferences.push_back(controllerRefTo(rss[owner]));
    p.metadata.resourceVersion = rv;
    return ptr(p);
  };
  ReplicaSetTestPeer::updatePod(*h.ctrl, make(tc.oldLabels, tc.oldOwner, "1"), make(tc.newLabels, tc.newOwner, "2"));
  std::set<std::string> want;
  for (const auto& n : tc.want) want.insert("default/" + rss[n].metadata.name);
  EXPECT_EQ(h.queued(), want);
}

INSTANTIATE_TEST_SUITE_P(
    ReplicaSet, ReplicaSetUpdatePod,
    ::testing::Values(
        UpdatePodCase{"ControllerRefKeptLabelsChanged", {{"foo", "bar"}}, "rs1", {{"bar", "foo"}}, "rs1", {"rs1"}},
        UpdatePodCase{"ControllerRefRemovedOwnerAlsoMatches", {{"bar", "foo"}}, "rs2", {{"bar", "foo"}}, "", {"rs2"}},
        UpdatePodCase{"ControllerRefRemovedFormerOwnerAndMatchingRS", {{"bar", "foo"}}, "rs1", {{"bar", "foo"}}, "",
                      {"rs1", "rs2"}},
        UpdatePodCase{"ControllerRefKeptOtherLabels", {{"foo", "bar"}}, "rs2", {{"bar", "foo"}}, "rs2", {"rs2"}}),
    [](const auto& info) { return info.param.name; });

// A pod controlled by one of several ReplicaSets that all select it wakes only its controller.
TEST(ReplicaSetEvents, OverlappingReplicaSetsOnlyTheControllerIsQueued) {
  Harness h;
  std::vector<ReplicaSet> rss;
  for (int j = 1; j < 10; ++j) {
    auto rs = newReplicaSet(1, kFooBar, "rs" + std::to_string(j));
    rs.metadata.creationTimestamp = api::Time::fromUnix(1417392000);  // all created at the same time
    rss.push_back(rs);
  }
  std::shuffle(rss.begin(), rss.end(), std::mt19937(42));
  for (const auto& rs : rss) h.addRS(rs, false);
  auto owner = newReplicaSet(1, kFooBar, "rs4");
  ReplicaSetTestPeer::addPod(*h.ctrl, ptr(newPod("pod0", owner, "Pending")));
  EXPECT_EQ(h.queued(), std::set<std::string>{"default/rs4"});
}

// ---- status writes ----

TEST(ReplicaSetStatus, AFailedStatusUpdateFailsTheSync) {
  Harness h;
  auto rs = newReplicaSet(1, kFooBar);
  rs = h.addRS(rs);
  rs.status.replicas = 2;
  h.cacheRS(rs);
  h.addPod(newPod("pod0", rs, "Running"));
  h.server->prependReactor("update", "replicasets/status",
                           [](const Action&) -> std::optional<client::Transport::Reply> {
                             return FakeApiServer::errorReply(500, "InternalError", "failed to update status");
                           });
  auto r = h.sync(rs);
  EXPECT_FALSE(r.status.ok());  // retried by the queue with backoff
}

// A failed status update is retried once on a fresh read; the retry still writes the computed status.
TEST(ReplicaSetStatus, UpdateIsRetriedOnceOnAFreshRead) {
  Harness h;
  auto rs = h.addRS(newReplicaSet(1, kFooBar));
  h.server->prependReactor("update", "replicasets/status",
                           [](const Action&) -> std::optional<client::Transport::Reply> {
                             return FakeApiServer::errorReply(500, "InternalError", "fake error");
                           });
  api::apps::v1::ReplicaSetStatus st;
  st.replicas = 10;
  auto r = ReplicaSetTestPeer::updateStatus(*h.ctrl, rs, st);
  EXPECT_FALSE(r.ok());
  int gets = 0, updates = 0;
  for (const auto& a : h.server->actions()) {
    ASSERT_EQ(a.resource, "replicasets") << a.toString();
    if (a.verb == "get") {
      ++gets;
      EXPECT_EQ(a.name, rs.metadata.name);
    } else if (a.verb == "update") {
      ++updates;
      ReplicaSet sent;
      ASSERT_TRUE(api::apps::v1::fromJson(a.body, sent).ok());
      EXPECT_EQ(sent.status.replicas, 10);
    } else {
      ADD_FAILURE() << "unexpected " << a.toString();
    }
  }
  EXPECT_EQ(gets, 1);
  EXPECT_EQ(updates, 2);
}

// minReadySeconds 5: three Ready pods, none available yet; the sync asks to come back when the earliest one
// becomes available, and then counts it.
TEST(ReplicaSetStatus, AvailabilityIsRecheckedWhenTheNextPodBecomesAvailable) {
  Harness h;
  auto rs = newReplicaSet(4, kFooBar);
  rs.spec.minReadySeconds = 5;
  rs = h.addRS(rs);
  const api::Time now = api::timeNow(h.clock);
  auto ago = [&](int s) { return api::Time::fromUnix(now.unixSeconds - s); };
  h.addPod(newPod("foobar-1", rs, "Pending"));
  h.addPod(newPod("foobar-2", rs, "Running", now));
  h.addPod(newPod("foobar-3", rs, "Running", ago(2)));
  h.addPod(newPod("foobar-4", rs, "Running", ago(4)));
  auto r = h.sync(rs);
  ASSERT_TRUE(r.status.ok()) << r.status.toString();
  for (const auto& a : h.server->writes()) EXPECT_EQ(a.toString(), "update replicasets/status default/foobar");
  auto stored = h.server->get<ReplicaSet>("default", "foobar");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status.readyReplicas, 3);
  EXPECT_EQ(stored->status.availableReplicas, 0);
  ASSERT_TRUE(r.requeueAfter);
  EXPECT_EQ(*r.requeueAfter, Clock::Duration(1s));  // foobar-4 is available 5 s after turning Ready

  h.clock.advance(1s);
  h.cacheRS(*stored);
  r = h.sync(*stored);
  ASSERT_TRUE(r.status.ok());
  stored = h.server->get<ReplicaSet>("default", "foobar");
  EXPECT_EQ(stored->status.availableReplicas, 1);
  ASSERT_TRUE(r.requeueAfter);
  EXPECT_EQ(*r.requeueAfter, Clock::Duration(2s));  // then foobar-3
}

// ---- burst: at most burstReplicas creates/deletes per sync, the next ones once the cache has seen them ----

struct BurstCase {
  int burst, replicas;
};

class ReplicaSetBurst : public ::testing::TestWithParam<BurstCase> {};

TEST_P(ReplicaSetBurst, ScaleUpAndDownInBursts) {
  const auto [burst, numReplicas] = GetParam();
  Harness h(burst);
  auto rs = newReplicaSet(numReplicas, kFooBar);
  rs.spec.template_.metadata.labels = rs.spec.selector->matchLabels;  // the pods it creates match its selector
  rs = h.addRS(rs);
  const std::string rsKey = key(rs);
  auto observeCreated = [&](int n) {  // the informer delivers n of the pods created but not yet cached
    for (const auto& p : h.server->list<Pod>("default")) {
      if (n == 0) break;
      if (h.podStore().get("default", p.metadata.name)) continue;
      auto cached = h.addPod(p, false);
      ReplicaSetTestPeer::addPod(*h.ctrl, cached);
      --n;
    }
  };
  auto observeDeleted = [&](const std::string& podKey) {
    auto [ns, name] = informers::splitMetaNamespaceKey(podKey);
    auto p = h.podStore().erase(podKey);
    ASSERT_TRUE(p) << podKey;
    ReplicaSetTestPeer::deletePod(*h.ctrl, *p);
  };

  for (int replicas : {numReplicas, 0}) {
    rs.spec.replicas = replicas;
    h.cacheRS(rs);
    for (int i = 0; i < numReplicas; i += burst) {
      h.server->clearActions();
      ASSERT_TRUE(h.sync(rs).status.ok());
      const int active = static_cast<int>(h.podStore().size());
      if (replicas != 0) {
        const int expected = std::min(replicas - active, burst);
        ASSERT_EQ(static_cast<int>(h.creates().size()), expected);
        ASSERT_TRUE(h.deletes().empty());
        observeCreated(expected - 1);  // none of these wakes the controller: one create is still expected
        ASSERT_EQ(h.expectations().get(rsKey).add, 1);
      } else {
        const int expected = std::min(active, burst);
        ASSERT_EQ(static_cast<int>(h.deletes().size()), expected);
        ASSERT_TRUE(h.creates().empty());
        auto waiting = h.expectations().getUIDs(rsKey);
        ASSERT_EQ(static_cast<int>(waiting.size()), expected);
        for (auto it = std::next(waiting.begin()); it != waiting.end(); ++it) observeDeleted(*it);
        ASSERT_EQ(h.expectations().get(rsKey).del, 1);
      }
      // Nothing happens while one is still expected.
      h.server->clearActions();
      ASSERT_TRUE(h.sync(rs).status.ok());
      ASSERT_TRUE(h.creates().empty());
      ASSERT_TRUE(h.deletes().empty());
      // The last one observed: the next sync may act again.
      if (replicas != 0) {
        observeCreated(1);
      } else {
        auto waiting = h.expectations().getUIDs(rsKey);
        ASSERT_EQ(waiting.size(), 1u);
        observeDeleted(*waiting.begin());
      }
      ASSERT_TRUE(h.expectations().satisfiedExpectations(rsKey));
    }
    EXPECT_EQ(static_cast<int>(h.podStore().size()), replicas);
  }
}

INSTANTIATE_TEST_SUITE_P(ReplicaSet, ReplicaSetBurst,
                         ::testing::Values(BurstCase{5, 30}, BurstCase{5, 12}, BurstCase{3, 2}),
                         [](const auto& info) {
                           return "Burst" + std::to_string(info.param.burst) + "Replicas" +
                                  std::to_string(info.param.replicas);
                         });

// ---- expectations ----

TEST(ReplicaSetExpectations, AreDroppedWithTheReplicaSet) {
  Harness h(10);
  auto rs = h.addRS(newReplicaSet(1, kFooBar));
  ASSERT_TRUE(h.sync(rs).status.ok());
  ASSERT_EQ(h.creates().size(), 1u);
  ASSERT_TRUE(h.expectations().get(key(rs)).exists);
  h.rsStore().erase(key(rs));
  ASSERT_TRUE(h.sync(rs).status.ok());
  EXPECT_FALSE(h.expectations().get(key(rs)).exists);
  // A late observation of the old pod changes nothing, and nothing is created for a deleted ReplicaSet.
  h.expectations().creationObserved(key(rs));
  h.server->clearActions();
  ASSERT_TRUE(h.sync(rs).status.ok());
  EXPECT_TRUE(h.creates().empty());
  EXPECT_FALSE(h.expectations().get(key(rs)).exists);
}

// A deletion is counted once: when the pod gets its deletionTimestamp (added or updated), not again when it
// finally goes away.
TEST(ReplicaSetExpectations, DeletionTimestampCountsAsTheDeletionOnce) {
  Harness h(10);
  auto rs = newReplicaSet(1, kFooBar);
  h.addRS(rs, false);
  const std::string rsKey = key(rs);
  auto fulfilled = [&] {
    auto e = h.expectations().get(rsKey);
    return e.exists && e.add <= 0 && e.del <= 0;
  };
  Pod pod = newPod("pod0", rs, "Pending");
  pod.metadata.deletionTimestamp = api::timeNow(h.clock);
  pod.metadata.resourceVersion = "1";
  h.expectations().expectDeletions(rsKey, {podKey(pod)});
  ReplicaSetTestPeer::addPod(*h.ctrl, ptr(pod));  // added already terminating: a deletion, not a creation
  EXPECT_EQ(h.queued(), std::set<std::string>{rsKey});
  EXPECT_TRUE(fulfilled());

  Pod oldPod = newPod("pod0", rs, "Pending");
  oldPod.metadata.resourceVersion = "2";
  h.expectations().expectDeletions(rsKey, {podKey(pod)});
  ReplicaSetTestPeer::updatePod(*h.ctrl, ptr(oldPod), ptr(pod));  // gained a deletionTimestamp
  EXPECT_EQ(h.queued(), std::set<std::string>{rsKey});
  EXPECT_TRUE(fulfilled());

  Pod second;
  second.metadata.namespace_ = "default";
  second.metadata.name = "secondPod";
  second.metadata.labels = pod.metadata.labels;
  second.metadata.ownerReferences.push_back(controllerRefTo(rs));
  h.expectations().expectDeletions(rsKey, {podKey(second)});
  oldPod.metadata.deletionTimestamp = api::timeNow(h.clock);
  ReplicaSetTestPeer::updatePod(*h.ctrl, ptr(oldPod), ptr(pod));  // another update of pod0: not counted again
  EXPECT_FALSE(fulfilled());
  ReplicaSetTestPeer::deletePod(*h.ctrl, pod);  // nor its final delete
  EXPECT_FALSE(fulfilled());
  h.queued();
  ReplicaSetTestPeer::deletePod(*h.ctrl, second);
  EXPECT_EQ(h.queued(), std::set<std::string>{rsKey});
  EXPECT_TRUE(fulfilled());
}

// ---- adoption and release ----

TEST(ReplicaSetAdoption, PodsControlledByAnotherOwnerAreLeftAlone) {
  Harness h;
  auto rs = h.addRS(newReplicaSet(2, kFooBar));
  Pod pod = newPod("pod", rs, "Running", std::nullopt, false);
  api::meta::v1::OwnerReference other;
  other.apiVersion = "apps/v1";
  other.kind = "ReplicaSet";
  other.name = "AnotherRS";
  other.uid = "another-uid";
  other.controller = true;
  pod.metadata.ownerReferences.push_back(other);
  h.addPod(pod);
  ASSERT_TRUE(h.sync(rs).status.ok());
  EXPECT_EQ(h.creates().size(), 2u);  // the matching pod already has a controller: two new ones
  EXPECT_TRUE(h.patches().empty());
}

TEST(ReplicaSetAdoption, FailedAdoptionsFailTheSyncWithoutCreating) {
  Harness h;
  auto rs = h.addRS(newReplicaSet(2, kFooBar));
  h.addPod(newPod("pod1", rs, "Running", std::nullopt, false));
  h.addPod(newPod("pod2", rs, "Running", std::nullopt, false));
  h.server->prependReactor("patch", "pods", [](const Action&) -> std::optional<client::Transport::Reply> {
    return FakeApiServer::errorReply(500, "InternalError", "fake Error");
  });
  auto r = h.sync(rs);
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("fake Error"), std::string::npos) << r.status.toString();
  EXPECT_EQ(h.patches().size(), 2u);  // one adoption attempt per orphan
  EXPECT_TRUE(h.creates().empty());
  EXPECT_TRUE(h.deletes().empty());
}

TEST(ReplicaSetAdoption, MatchingOrphansAreAdoptedInsteadOfCreatingPods) {
  Harness h;
  auto rs = h.addRS(newReplicaSet(2, kFooBar));
  h.addPod(newPod("pod1", rs, "Running", std::nullopt, false));
  ASSERT_TRUE(h.sync(rs).status.ok());
  ASSERT_EQ(h.patches().size(), 1u);
  EXPECT_EQ(h.creates().size(), 1u);
  auto adopted = h.server->get<Pod>("default", "pod1");
  ASSERT_TRUE(adopted);
  const auto* ref = getControllerOf(adopted->metadata);
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->uid, rs.metadata.uid);
  EXPECT_EQ(ref->kind, "ReplicaSet");
  EXPECT_TRUE(ref->blockOwnerDeletion.value_or(false));
}

TEST(ReplicaSetAdoption, OwnedPodsThatStopMatchingAreReleased) {
  Harness h;
  auto rs = h.addRS(newReplicaSet(1, kFooBar));
  Pod pod = newPod("pod1", rs, "Running");
  pod.metadata.labels.clear();
  pod.metadata.labels["foo"] = "other";
  h.addPod(pod);
  ASSERT_TRUE(h.sync(rs).status.ok());
  ASSERT_EQ(h.patches().size(), 1u);
  EXPECT_EQ(h.creates().size(), 1u);  // the released pod no longer counts
  auto released = h.server->get<Pod>("default", "pod1");
  ASSERT_TRUE(released);
  EXPECT_TRUE(released->metadata.ownerReferences.empty());
}

TEST(ReplicaSetAdoption, NoAdoptionOrCreationWhileTheReplicaSetIsDeleted) {
  Harness h;
  auto rs = newReplicaSet(2, kFooBar);
  rs.metadata.deletionTimestamp = api::timeNow(h.clock);
  rs = h.addRS(rs);
  h.addPod(newPod("pod1", rs, "Running", std::nullopt, false));
  ASSERT_TRUE(h.sync(rs).status.ok());
  EXPECT_TRUE(h.patches().empty());
  EXPECT_TRUE(h.creates().empty());
}

// The cache says the ReplicaSet lives; the live read before adopting says it is being deleted: nothing happens
// and the sync fails (to run again once the cache has caught up).
TEST(ReplicaSetAdoption, LiveRecheckBeforeAdoptingSeesTheDeletion) {
  Harness h;
  auto rs = newReplicaSet(2, kFooBar);
  rs.metadata.deletionTimestamp = api::timeNow(h.clock);
  rs = h.server->add(rs);
  ReplicaSet cached = rs;
  cached.metadata.deletionTimestamp.reset();
  h.cacheRS(cached);
  h.addPod(newPod("pod1", rs, "Running", std::nullopt, false));
  EXPECT_FALSE(h.sync(cached).status.ok());
  EXPECT_TRUE(h.patches().empty());
  EXPECT_TRUE(h.creates().empty());
}

// ---- calculateStatus ----

struct CalculateStatusCase {
  std::string name;
  bool terminatingReplicas;  // DeploymentReplicaSetTerminatingReplicas (false also stands for the RC controller)
  std::string rs;            // fully, notFully, longMinReady
  std::vector<std::pair<std::string, std::string>> active;  // pod template ReplicaSet, kind of pod
  int terminating;
  int replicas, fullyLabeled, ready, available;
  std::optional<int32_t> wantTerminating;
};

class ReplicaSetCalculateStatus : public ::testing::TestWithParam<CalculateStatusCase> {};

TEST_P(ReplicaSetCalculateStatus, CountsThePods) {
  const auto& tc = GetParam();
  Harness h(kBurstReplicas, tc.terminatingReplicas);
  const int64_t now = api::timeNow(h.clock).unixSeconds;
  const int longMinReady = 3600;
  const Labels full = {{"name", "foo"}, {"type", "production"}};
  std::map<std::string, ReplicaSet> rss = {{"notFully", newReplicaSet(1, {{"name", "foo"}})},
                                           {"fully", newReplicaSet(2, full)},
                                           {"longMinReady", newReplicaSet(1, full)}};
  rss["longMinReady"].spec.minReadySeconds = longMinReady;
  std::vector<PodPtr> active, terminating;
  int i = 0;
  for (const auto& [from, kind] : tc.active) {
    const std::string n = "pod" + std::to_string(++i);
    if (kind == "pending") active.push_back(ptr(newPod(n, rss[from], "Pending")));
    else if (kind == "readyNow") active.push_back(ptr(newPod(n, rss[from], "Running", api::Time::fromUnix(now))));
    else if (kind == "readyMinReadyAgo")
      active.push_back(ptr(newPod(n, rss[from], "Running", api::Time::fromUnix(now - longMinReady))));
    else if (kind == "readyTwiceMinReadyAgo")
      active.push_back(ptr(newPod(n, rss[from], "Running", api::Time::fromUnix(now - 2 * longMinReady))));
    else active.push_back(ptr(newPod(n, rss[from], "Running")));
  }
  for (int t = 0; t < tc.terminating; ++t) {
    Pod p = newPod("pod" + std::to_string(++i), rss[tc.rs], "Running");
    p.metadata.deletionTimestamp = api::Time::fromUnix(now);
    terminating.push_back(ptr(p));
  }
  auto st = ReplicaSetTestPeer::calculateStatus(*h.ctrl, rss[tc.rs], active, terminating, Status::Ok());
  EXPECT_EQ(st.replicas, tc.replicas);
  EXPECT_EQ(st.fullyLabeledReplicas, tc.fullyLabeled);
  EXPECT_EQ(st.readyReplicas, tc.ready);
  EXPECT_EQ(st.availableReplicas, tc.available);
  EXPECT_EQ(st.terminatingReplicas, tc.wantTerminating);
  EXPECT_TRUE(st.conditions.empty());
}

INSTANTIATE_TEST_SUITE_P(
    ReplicaSet, ReplicaSetCalculateStatus,
    ::testing::Values(
        CalculateStatusCase{"OneFullyLabelledPod", false, "fully", {{"fully", "ready"}}, 0, 1, 1, 1, 1, std::nullopt},
        CalculateStatusCase{"OneNotFullyLabelledPod", false, "notFully", {{"notFully", "ready"}}, 0, 1, 0, 1, 1,
                            std::nullopt},
        CalculateStatusCase{"TwoFullyLabelledPods", false, "fully", {{"fully", "ready"}, {"fully", "ready"}}, 0, 2, 2,
                            2, 2, std::nullopt},
        CalculateStatusCase{"TwoFullyLabelledPodsWithTerminatingReplicas", true, "fully",
                            {{"fully", "ready"}, {"fully", "ready"}}, 0, 2, 2, 2, 2, 0},
        CalculateStatusCase{"TwoNotFullyLabelledPods", false, "notFully",
                            {{"notFully", "ready"}, {"notFully", "ready"}}, 0, 2, 0, 2, 2, std::nullopt},
        CalculateStatusCase{"OneFullyOneNotFullyLabelledPod", false, "notFully",
                            {{"notFully", "ready"}, {"fully", "ready"}}, 0, 2, 1, 2, 2, std::nullopt},
        CalculateStatusCase{"OneNonReadyPod", false, "fully", {{"fully", "pending"}}, 0, 1, 1, 0, 0, std::nullopt},
        CalculateStatusCase{"OneReadyButNotAvailablePod", false, "longMinReady", {{"longMinReady", "readyNow"}}, 0, 1,
                            1, 1, 0, std::nullopt},
        CalculateStatusCase{"OneAvailablePodWithMinReadySeconds", false, "longMinReady",
                            {{"longMinReady", "readyMinReadyAgo"}}, 0, 1, 1, 1, 1, std::nullopt},
        CalculateStatusCase{"OneAvailablePodForALongTime", false, "longMinReady",
                            {{"longMinReady", "readyTwiceMinReadyAgo"}}, 0, 1, 1, 1, 1, std::nullopt},
        CalculateStatusCase{"TerminatingPodsWithoutTerminatingReplicas", false, "fully", {{"fully", "ready"}}, 1, 1, 1,
                            1, 1, std::nullopt},
        CalculateStatusCase{"TerminatingPodsWithTerminatingReplicas", true, "fully", {{"fully", "ready"}}, 2, 1, 1, 1,
                            1, 2},
        CalculateStatusCase{"ReplicationControllerHasNoTerminatingReplicas", false, "fully", {{"fully", "ready"}}, 2,
                            1, 1, 1, 1, std::nullopt}),
    [](const auto& info) { return info.param.name; });

struct ConditionsCase {
  std::string name;
  bool failureRS;  // 10 replicas with a ReplicaFailure condition already, else 2 replicas without
  int activePods;
  bool manageErr;
  std::string wantReason;  // "-" = no condition
  std::string wantMessage;
};

class ReplicaSetCalculateStatusConditions : public ::testing::TestWithParam<ConditionsCase> {};

TEST_P(ReplicaSetCalculateStatusConditions, ReplicaFailureFollowsTheManageError) {
  const auto& tc = GetParam();
  Harness h;
  auto rs = newReplicaSet(tc.failureRS ? 10 : 2, {{"name", "foo"}});
  if (tc.failureRS) {
    api::apps::v1::ReplicaSetCondition c;
    c.type = "ReplicaFailure";
    c.status = "True";
    rs.status.conditions.push_back(c);
  }
  std::vector<PodPtr> active;
  for (int i = 0; i < tc.activePods; ++i) active.push_back(ptr(newPod("pod" + std::to_string(i), rs, "Running")));
  Status err = tc.manageErr ? Status(StatusCode::kInternal, "fake manageReplicasErr") : Status::Ok();
  auto st = ReplicaSetTestPeer::calculateStatus(*h.ctrl, rs, active, {}, err);
  if (tc.wantReason == "-") {
    EXPECT_TRUE(st.conditions.empty());
    return;
  }
  ASSERT_EQ(st.conditions.size(), 1u);
  EXPECT_EQ(st.conditions[0].type, "ReplicaFailure");
  EXPECT_EQ(st.conditions[0].status, "True");
  EXPECT_EQ(st.conditions[0].reason, tc.wantReason);
  EXPECT_EQ(st.conditions[0].message, tc.wantMessage);
  if (!tc.failureRS) {
    EXPECT_EQ(st.conditions[0].lastTransitionTime, api::timeNow(h.clock));
  }
}

INSTANTIATE_TEST_SUITE_P(
    ReplicaSet, ReplicaSetCalculateStatusConditions,
    ::testing::Values(ConditionsCase{"ErrorWhileScalingUpAddsFailedCreate", false, 1, true, "FailedCreate",
                                     "fake manageReplicasErr"},
                      ConditionsCase{"ErrorWhileScalingDownAddsFailedDelete", false, 3, true, "FailedDelete",
                                     "fake manageReplicasErr"},
                      ConditionsCase{"NoErrorRemovesTheCondition", true, 1, false, "-", ""},
                      ConditionsCase{"ErrorKeepsTheExistingCondition", true, 1, true, "", ""},
                      ConditionsCase{"NoErrorNoCondition", false, 1, false, "-", ""}),
    [](const auto& info) { return info.param.name; });

// ---- slow start ----

struct SlowStartCase {
  std::string name;
  int count, callLimit, wantSuccesses;
  bool wantErr;
  int wantCalls;
};

class ReplicaSetSlowStartBatch : public ::testing::TestWithParam<SlowStartCase> {};

TEST_P(ReplicaSetSlowStartBatch, StopsAfterTheFirstFailingBatch) {
  const auto& tc = GetParam();
  std::mutex mu;
  int calls = 0;
  auto [successes, err] = slowStartBatch(tc.count, 1, [&]() -> Status {
    std::lock_guard l(mu);
    return ++calls > tc.callLimit ? Status(StatusCode::kInternal, "fake error") : Status::Ok();
  });
  EXPECT_EQ(successes, tc.wantSuccesses);
  EXPECT_EQ(!err.ok(), tc.wantErr);
  EXPECT_EQ(calls, tc.wantCalls);
}

INSTANTIATE_TEST_SUITE_P(ReplicaSet, ReplicaSetSlowStartBatch,
                         ::testing::Values(SlowStartCase{"AllFail", 10, 0, 0, true, 1},
                                           SlowStartCase{"AllSucceed", 10, 10, 10, false, 10},   // 1 + 2 + 4 + 3
                                           SlowStartCase{"SomeSucceed", 10, 5, 5, true, 7}),     // 1 + 2 + 4
                         [](const auto& info) { return info.param.name; });

// ---- which pods a scale-down deletes ----

// upstream TestGetPodsToDelete's pods: unscheduled and scheduled Pending, Running not Ready, Running Ready on
// two nodes.
Pod podToDelete(const std::string& kind, const std::string& suffix = "") {
  auto rs = newReplicaSet(1, {{"name", "foo"}});
  Pod p = newPod(kind + suffix, rs, kind.find("pending") != std::string::npos ? "Pending" : "Running");
  if (kind != "unscheduled-pending") p.spec.nodeName = "fake-node";
  if (kind == "running-not-ready") p.status.conditions[0].status = "False";
  if (kind == "ready-on-node-1") p.spec.nodeName = "fake-node-1";
  if (kind == "ready-on-node-2") p.spec.nodeName = "fake-node-2";
  return p;
}

struct PodsToDeleteCase {
  std::string name;
  std::vector<std::string> pods;
  std::optional<std::vector<std::string>> related;  // pods of the ReplicaSet family; default: pods
  int diff;
  std::vector<std::string> want;
};

class ReplicaSetPodsToDelete : public ::testing::TestWithParam<PodsToDeleteCase> {};

TEST_P(ReplicaSetPodsToDelete, PreferPodsEarlierInTheirLifecycle) {
  const auto& tc = GetParam();
  Harness h;
  auto rs = newReplicaSet(static_cast<int>(tc.pods.size()) - tc.diff, {{"name", "foo"}});
  h.addRS(rs, false);
  std::vector<PodPtr> active;
  for (const auto& k : tc.pods) active.push_back(ptr(h.server->add(podToDelete(k))));
  // The family's pods as the cache knows them (distinct objects, so the same kind may appear twice).
  std::map<std::string, int> seen;
  for (const auto& k : tc.related.value_or(tc.pods)) {
    const int n = seen[k]++;
    if (!tc.related && n > 0) continue;
    h.addPod(podToDelete(k, n ? "-" + std::to_string(n) : ""), false);
  }
  ASSERT_TRUE(ReplicaSetTestPeer::manageReplicas(*h.ctrl, active, rs).ok());
  std::vector<std::string> want = tc.want;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(names(h.deletes()), want);
  EXPECT_TRUE(h.creates().empty());
}

INSTANTIATE_TEST_SUITE_P(
    ReplicaSet, ReplicaSetPodsToDelete,
    ::testing::Values(
        PodsToDeleteCase{"NoPods", {}, std::nullopt, 0, {}},
        PodsToDeleteCase{"DiffIsAllPods", {"running-not-ready", "ready-on-node-1"}, std::nullopt, 2,
                         {"running-not-ready", "ready-on-node-1"}},
        PodsToDeleteCase{"DiffBelowPods", {"ready-on-node-1", "running-not-ready"}, std::nullopt, 1,
                         {"running-not-ready"}},
        PodsToDeleteCase{"AllPhasesDiffIsAllPods",
                         {"ready-on-node-1", "ready-on-node-1", "ready-on-node-2", "running-not-ready",
                          "scheduled-pending", "unscheduled-pending"},
                         std::nullopt,
                         6,
                         {"ready-on-node-1", "ready-on-node-1", "ready-on-node-2", "running-not-ready",
                          "scheduled-pending", "unscheduled-pending"}},
        PodsToDeleteCase{"AllPhasesDiffIsAllPodsNoRelatedPods",
                         {"ready-on-node-1", "ready-on-node-1", "ready-on-node-2", "running-not-ready",
                          "scheduled-pending", "unscheduled-pending"},
                         std::vector<std::string>{},
                         6,
                         {"ready-on-node-1", "ready-on-node-1", "ready-on-node-2", "running-not-ready",
                          "scheduled-pending", "unscheduled-pending"}},
        PodsToDeleteCase{"UnscheduledBeforeScheduled", {"scheduled-pending", "unscheduled-pending"}, std::nullopt, 1,
                         {"unscheduled-pending"}},
        PodsToDeleteCase{"NotReadyBeforeReady", {"ready-on-node-1", "running-not-ready", "running-not-ready"},
                         std::nullopt, 2, {"running-not-ready", "running-not-ready"}},
        PodsToDeleteCase{"MoreColocatedFamilyPodsFirst", {"ready-on-node-1", "ready-on-node-2"},
                         std::vector<std::string>{"ready-on-node-1", "ready-on-node-2", "ready-on-node-2"}, 1,
                         {"ready-on-node-2"}},
        PodsToDeleteCase{"PendingBeforeRunning", {"scheduled-pending", "running-not-ready"}, std::nullopt, 1,
                         {"scheduled-pending"}},
        PodsToDeleteCase{"AllPhasesDiffBelowPods",
                         {"ready-on-node-1", "ready-on-node-2", "running-not-ready", "scheduled-pending",
                          "unscheduled-pending"},
                         std::nullopt,
                         3,
                         {"unscheduled-pending", "scheduled-pending", "running-not-ready"}}),
    [](const auto& info) { return info.param.name; });

// ---- ranking for deletion (upstream ActivePods / ActivePodsWithRanks) ----

// The reference time of a ranking: none for the zero time (upstream ActivePods).
std::optional<WallTime> rankingTime(api::Time now) {
  if (now.isZero()) return std::nullopt;
  return toWallTime(now);
}

std::vector<std::string> sorted(std::vector<PodPtr> pods, api::Time now) {
  std::vector<RankedPod> ranked;
  for (auto& p : pods) ranked.push_back({p, 1});
  sortPodsForDeletion(ranked, rankingTime(now));
  std::vector<std::string> out;
  for (const auto& r : ranked) out.push_back(r.pod->metadata.name);
  return out;
}

api::core::v1::ContainerStatus restarts(int32_t n, const std::string& name = "") {
  api::core::v1::ContainerStatus s;
  s.name = name;
  s.restartCount = n;
  return s;
}

// Without a reference time (ActivePods): unassigned, Pending, Unknown, not Ready, then the most recently Ready,
// the most restarts (regular containers, then sidecars), the newest.
TEST(ReplicaSetPodRanking, ActivePodsOrder) {
  const api::Time now = api::Time::fromUnix(1'767'225'600);
  const api::Time then = api::Time::fromUnix(now.unixSeconds - 30 * 24 * 3600);
  auto pod = [](const std::string& name, const std::string& node, const std::string& phase) {
    Pod p;
    p.metadata.name = name;
    p.spec.nodeName = node;
    p.status.phase = phase;
    return p;
  };
  auto ready = [](Pod p, api::Time since) {
    api::core::v1::PodCondition c;
    c.type = "Ready";
    c.status = "True";
    c.lastTransitionTime = since;
    p.status.conditions.push_back(c);
    return p;
  };
  std::vector<PodPtr> pods;
  pods.push_back(ptr(pod("unscheduled", "", "Pending")));
  pods.push_back(ptr(pod("scheduledButPending", "bar", "Pending")));
  pods.push_back(ptr(pod("unknownPhase", "foo", "Unknown")));
  pods.push_back(ptr(pod("runningButNotReady", "foo", "Running")));
  Pod p = ready(pod("runningNoLastTransitionTime", "foo", "Running"), api::Time{});
  p.status.containerStatuses = {restarts(3), restarts(0)};
  pods.push_back(ptr(p));
  p = ready(pod("runningWithLastTransitionTime", "foo", "Running"), now);
  p.status.containerStatuses = {restarts(3), restarts(0)};
  pods.push_back(ptr(p));
  p = ready(pod("runningLongerTime", "foo", "Running"), then);
  p.status.containerStatuses = {restarts(3), restarts(0)};
  pods.push_back(ptr(p));
  p = ready(pod("lowerSidecarContainerRestartCount", "foo", "Running"), then);
  p.metadata.creationTimestamp = now;
  api::core::v1::Container sidecar;
  sidecar.name = "sidecar";
  sidecar.restartPolicy = "Always";
  p.spec.initContainers.push_back(sidecar);
  p.status.containerStatuses = {restarts(2), restarts(1)};
  p.status.initContainerStatuses = {restarts(2, "sidecar")};
  pods.push_back(ptr(p));
  p = ready(pod("lowerContainerRestartCount", "foo", "Running"), then);
  p.metadata.creationTimestamp = now;
  p.status.containerStatuses = {restarts(2), restarts(1)};
  pods.push_back(ptr(p));
  p = ready(pod("oldest", "foo", "Running"), then);
  p.metadata.creationTimestamp = then;
  p.status.containerStatuses = {restarts(2), restarts(1)};
  pods.push_back(ptr(p));

  const std::vector<std::string> want = {"unscheduled",
                                         "scheduledButPending",
                                         "unknownPhase",
                                         "runningButNotReady",
                                         "runningNoLastTransitionTime",
                                         "runningWithLastTransitionTime",
                                         "runningLongerTime",
                                         "lowerSidecarContainerRestartCount",
                                         "lowerContainerRestartCount",
                                         "oldest"};
  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) {
    std::shuffle(pods.begin(), pods.end(), rng);
    EXPECT_EQ(sorted(pods, api::Time{}), want);
  }
}

// upstream TestSortingActivePodsWithRanks's pods.
struct RankPods {
  api::Time now = api::Time::fromUnix(1'767'225'600);
  api::Time ago(int64_t s) const { return api::Time::fromUnix(now.unixSeconds - s); }
  PodPtr make(const std::string& name, const std::string& node, const std::string& phase, bool ready, int32_t r,
              int32_t sideR, api::Time readySince, api::Time created, const std::string& cost = "") const {
    Pod p;
    p.metadata.name = name;
    p.metadata.creationTimestamp = created;
    if (!cost.empty()) p.metadata.annotations[kPodDeletionCost] = cost;
    p.spec.nodeName = node;
    api::core::v1::Container sidecar;
    sidecar.name = "sidecar";
    sidecar.restartPolicy = "Always";
    p.spec.initContainers.push_back(sidecar);
    p.status.phase = phase;
    if (ready) {
      api::core::v1::PodCondition c;
      c.type = "Ready";
      c.status = "True";
      c.lastTransitionTime = readySince;
      p.status.conditions.push_back(c);
      p.status.containerStatuses = {restarts(r)};
      p.status.initContainerStatuses = {restarts(sideR, "sidecar")};
    }
    return ptr(p);
  }
  const api::Time zero{};
  const int64_t month = 30 * 24 * 3600, hour = 3600;
  std::map<std::string, PodPtr> pods = {
      {"unscheduled", make("unscheduled", "", "Pending", false, 0, 0, zero, zero)},
      {"scheduledPending", make("pending", "node", "Pending", false, 0, 0, zero, zero)},
      {"unknownPhase", make("unknown-phase", "node", "Unknown", false, 0, 0, zero, zero)},
      {"runningNotReady", make("not-ready", "node", "Running", false, 0, 0, zero, zero)},
      {"readyNoLastTransitionTime", make("ready-no-last-transition-time", "node", "Running", true, 0, 0, zero, zero)},
      {"readyNow", make("ready-now", "node", "Running", true, 0, 0, now, now)},
      {"readyThen", make("ready-then", "node", "Running", true, 0, 0, ago(month), ago(month))},
      {"readyNowHighRestarts", make("ready-high-restarts", "node", "Running", true, 9001, 0, now, now)},
      {"readyNowHighSideRestarts", make("ready-high-restarts", "node", "Running", true, 9001, 9001, now, now)},
      {"readyNowCreatedThen", make("ready-now-created-then", "node", "Running", true, 0, 0, now, ago(month))},
      {"lowDeletionCost", make("low-deletion-cost", "node", "Running", true, 0, 0, now, ago(month), "10")},
      {"highDeletionCost", make("high-deletion-cost", "node", "Running", true, 0, 0, now, ago(month), "100")},
      {"unscheduled5Hours", make("unscheduled-5-hours", "", "Pending", false, 0, 0, ago(5 * hour), ago(5 * hour))},
      {"unscheduled8Hours", make("unscheduled-10-hours", "", "Pending", false, 0, 0, ago(8 * hour), ago(8 * hour))},
      {"ready2Hours", make("ready-2-hours", "", "Running", true, 0, 0, ago(2 * hour), ago(month))},
      {"ready5Hours", make("ready-5-hours", "", "Running", true, 0, 0, ago(5 * hour), ago(month))},
      {"ready8Hours", make("ready-10-hours", "", "Running", true, 0, 0, ago(8 * hour), ago(month))},
  };
  // Whether a (with rank ra) sorts strictly before b (rank rb): sorting keeps equal pods in place.
  bool before(const PodPtr& a, int ra, const PodPtr& b, int rb) const {
    std::vector<RankedPod> v = {{b, rb}, {a, ra}};
    sortPodsForDeletion(v, toWallTime(now));
    return v[0].pod == a && v[0].rank == ra;
  }
};

struct RankEqualityCase {
  std::string p1, p2;  // p2 empty: the same pod
};

class ReplicaSetPodRankingEquality : public ::testing::TestWithParam<RankEqualityCase> {};

TEST_P(ReplicaSetPodRankingEquality, NeitherGoesFirst) {
  RankPods r;
  const PodPtr a = r.pods.at(GetParam().p1);
  // The same pod twice: a copy, so that which one sorts first stays observable.
  const PodPtr b = GetParam().p2.empty() ? ptr(*a) : r.pods.at(GetParam().p2);
  EXPECT_FALSE(r.before(a, 1, b, 1));
  EXPECT_FALSE(r.before(b, 1, a, 1));
}

INSTANTIATE_TEST_SUITE_P(ReplicaSet, ReplicaSetPodRankingEquality,
                         ::testing::Values(RankEqualityCase{"unscheduled", ""},
                                           RankEqualityCase{"scheduledPending", ""},
                                           RankEqualityCase{"unknownPhase", ""},
                                           RankEqualityCase{"runningNotReady", ""},
                                           RankEqualityCase{"readyNowCreatedThen", ""},
                                           RankEqualityCase{"readyNow", ""}, RankEqualityCase{"readyThen", ""},
                                           RankEqualityCase{"readyNowHighRestarts", ""},
                                           RankEqualityCase{"readyNowCreatedThen", ""},
                                           RankEqualityCase{"unscheduled5Hours", "unscheduled8Hours"},
                                           RankEqualityCase{"ready5Hours", "ready8Hours"}),
                         [](const auto& info) {
                           return std::to_string(info.index) + "_" + info.param.p1 +
                                  (info.param.p2.empty() ? "" : "_" + info.param.p2);
                         });

struct RankInequalityCase {
  std::string lesser;
  int lesserRank;
  std::string greater;
  int greaterRank;
};

class ReplicaSetPodRankingInequality : public ::testing::TestWithParam<RankInequalityCase> {};

TEST_P(ReplicaSetPodRankingInequality, LesserGoesFirst) {
  RankPods r;
  const auto& tc = GetParam();
  const auto& a = r.pods.at(tc.lesser);
  const auto& b = r.pods.at(tc.greater);
  EXPECT_TRUE(r.before(a, tc.lesserRank, b, tc.greaterRank));
  EXPECT_FALSE(r.before(b, tc.greaterRank, a, tc.lesserRank));
}

// upstream's case with the PodDeletionCost gate off is DISABLED_ below.
INSTANTIATE_TEST_SUITE_P(
    ReplicaSet, ReplicaSetPodRankingInequality,
    ::testing::Values(RankInequalityCase{"unscheduled", 1, "scheduledPending", 2},
                      RankInequalityCase{"unscheduled", 2, "scheduledPending", 1},
                      RankInequalityCase{"scheduledPending", 1, "unknownPhase", 2},
                      RankInequalityCase{"unknownPhase", 1, "runningNotReady", 2},
                      RankInequalityCase{"runningNotReady", 1, "readyNoLastTransitionTime", 1},
                      RankInequalityCase{"readyNoLastTransitionTime", 1, "readyNow", 1},
                      RankInequalityCase{"readyNow", 2, "readyNoLastTransitionTime", 1},
                      RankInequalityCase{"readyNow", 1, "readyThen", 1},
                      RankInequalityCase{"readyNow", 2, "readyThen", 1},
                      RankInequalityCase{"readyNowHighRestarts", 1, "readyNow", 1},
                      RankInequalityCase{"readyNowHighSideRestarts", 1, "readyNowHighRestarts", 1},
                      RankInequalityCase{"readyNow", 2, "readyNowHighRestarts", 1},
                      RankInequalityCase{"readyNow", 1, "readyNowCreatedThen", 1},
                      RankInequalityCase{"readyNowCreatedThen", 2, "readyNow", 1},
                      RankInequalityCase{"lowDeletionCost", 2, "highDeletionCost", 1},
                      RankInequalityCase{"ready2Hours", 1, "ready5Hours", 1}),
    [](const auto& info) {
      const auto& p = info.param;
      return std::to_string(info.index) + "_" + p.lesser + std::to_string(p.lesserRank) + "_" + p.greater +
             std::to_string(p.greaterRank);
    });

// DIVERGENCE (not fixed): PodDeletionCost is a beta gate (default on) in v1.37, and with it off upstream ignores
// the annotation, so the pod with more colocated family pods goes first whatever its cost. sortPodsForDeletion
// always honours the cost: the gate is not plumbed into the ReplicaSet controller (register.cc passes no gates for
// it), so this case cannot be expressed yet.
TEST(ReplicaSetPodRanking, DISABLED_DeletionCostIgnoredWithTheGateOff) {
  RankPods r;
  EXPECT_TRUE(r.before(r.pods.at("highDeletionCost"), 2, r.pods.at("lowDeletionCost"), 1));
}

// ---- ReplicationControllers run the same logic ----

TEST(ReplicaSetReplicationManager, CreatesPodsControlledByTheReplicationController) {
  Harness h;
  auto& rcs = h.factory.forType<api::core::v1::ReplicationController>();
  ReplicationManager rm(h.server->client(), h.broadcaster.newRecorder("replicationmanager"), rcs,
                        h.factory.forType<Pod>(), {}, h.clock);
  api::core::v1::ReplicationController rc;
  rc.metadata.namespace_ = "default";
  rc.metadata.name = "rc";
  rc.spec.replicas = 2;
  rc.spec.selector["foo"] = "bar";
  api::core::v1::PodTemplateSpec t;
  t.metadata.labels["foo"] = "bar";
  api::core::v1::Container c;
  c.name = "c";
  c.image = "img";
  t.spec.containers.push_back(c);
  rc.spec.template_ = t;
  rc = h.server->add(rc);
  rcs.store().upsert("default/rc", std::make_shared<const api::core::v1::ReplicationController>(rc));
  ASSERT_TRUE(rm.syncReplicaSet("default/rc").status.ok());
  auto pods = h.server->list<Pod>("default");
  ASSERT_EQ(pods.size(), 2u);
  for (const auto& p : pods) {
    const auto* ref = getControllerOf(p.metadata);
    ASSERT_NE(ref, nullptr);
    EXPECT_EQ(ref->kind, "ReplicationController");
    EXPECT_EQ(ref->apiVersion, "v1");
    EXPECT_EQ(ref->uid, rc.metadata.uid);
  }
  auto stored = h.server->get<api::core::v1::ReplicationController>("default", "rc");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status.replicas, 0);  // the cache has not seen the new pods yet
  EXPECT_EQ(stored->status.observedGeneration, stored->metadata.generation);
}

}  // namespace
}  // namespace kcm::controllers
