// daemonset-controller (upstream pkg/controller/daemon/daemon_controller_test.go and update_test.go cases) over
// the fake apiserver, with informer stores the test refreshes from it and the clock injected; the revision data
// against upstream's bytes (testdata/revisions/golden.json, from hack/update-pod-template-hash.sh).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "api/gen/apps_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/support/wall_time.h"
#include "client/typed_client.h"
#include "controllers/daemon/daemon_controller.h"
#include "controllers/util/pod_template_hash.h"
#include "fake/fake_apiserver.h"
#include "fake/store_sync.h"
#include "informers/factory.h"

namespace kcm::controllers::daemon {

// The pod handlers, as the informer would call them: they keep the expectations.
class DaemonSetTestPeer {
 public:
  static void addPod(DaemonSetsController& c, const PodPtr& p) { c.addPod(p); }
  static void updatePod(DaemonSetsController& c, const PodPtr& o, const PodPtr& n) { c.updatePod(o, n); }
  static void deletePod(DaemonSetsController& c, const PodPtr& p) { c.deletePod(*p); }
};

namespace {

using testing::FakeApiServer;
using json = nlohmann::json;
using namespace std::chrono_literals;
using api::core::v1::Taint;

class DaemonSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server->addStandardResources();
    server->addResource({"apps", "v1", "daemonsets", "DaemonSet", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {"status"}});
    server->addResource({"apps", "v1", "controllerrevisions", "ControllerRevision", true,
                         {"create", "delete", "get", "list", "patch", "update", "watch"}, {}});
  }
  void addNode(const std::string& name, Labels labels = {}, std::vector<Taint> taints = {}) {
    Node n;
    n.metadata.name = name;
    n.metadata.labels = std::move(labels);
    n.spec.taints = std::move(taints);
    server->add(n);
    refresh();
  }
  DaemonSet newDaemonSet(const std::string& name = "ds") {
    DaemonSet ds;
    ds.metadata.namespace_ = "ns";
    ds.metadata.name = name;
    ds.metadata.generation = 1;
    ds.spec.selector.emplace().matchLabels["app"] = "d";
    ds.spec.template_.metadata.labels["app"] = "d";
    auto& c = ds.spec.template_.spec.containers.emplace_back();
    c.name = "c";
    c.image = "pause:1";
    ds.spec.updateStrategy.type = "RollingUpdate";
    ds.spec.updateStrategy.rollingUpdate.emplace().maxUnavailable = api::IntOrString::fromInt(1);
    ds.spec.revisionHistoryLimit = 10;
    return ds;
  }
  DaemonSet create(const DaemonSet& ds) {
    auto stored = server->add(ds);
    refresh();
    return stored;
  }
  // Replaces the DaemonSet's spec (the apiserver bumps the generation as it would).
  void updateSpec(const std::function<void(DaemonSet&)>& mutate, const std::string& name = "ds") {
    auto ds = server->get<DaemonSet>("ns", name).value();
    mutate(ds);
    ds.metadata.generation += 1;
    ASSERT_TRUE(client::update(*server->client(), ds).ok());
    refresh();
  }
  // The informer stores as the apiserver has them now.
  void refresh() {
    reload<Node>("");
    reloadPods();
    reload<DaemonSet>("ns");
    reload<ControllerRevision>("ns");
  }
  template <class T>
  void reload(const std::string& ns) {
    testing::reloadStore<T>(*server, factory, ns);
  }
  // Pods through the handlers too (adds, updates, deletes), as the informer delivers them.
  void reloadPods() {
    auto& store = factory.forType<Pod>().store();
    std::map<std::string, PodPtr> before;
    for (const auto& o : store.list()) before[informers::metaNamespaceKey(*o)] = o;
    for (auto& o : server->list<Pod>("ns")) {
      const std::string k = informers::metaNamespaceKey(o);
      auto cur = std::make_shared<const Pod>(std::move(o));
      store.upsert(k, cur);
      auto it = before.find(k);
      if (it == before.end()) {
        if (controller) DaemonSetTestPeer::addPod(*controller, cur);
      } else {
        if (controller) DaemonSetTestPeer::updatePod(*controller, it->second, cur);
        before.erase(it);
      }
    }
    for (const auto& [k, old] : before) {
      store.erase(k);
      if (controller) DaemonSetTestPeer::deletePod(*controller, old);
    }
  }
  runtime::SyncResult sync(const std::string& name = "ds") {
    auto r = controller->syncDaemonSet("ns/" + name);
    refresh();
    return r;
  }
  std::vector<Pod> pods() { return server->list<Pod>("ns"); }
  std::vector<Pod> livePods() {
    std::vector<Pod> out;
    for (auto& p : pods())
      if (!p.metadata.deletionTimestamp) out.push_back(p);
    return out;
  }
  std::map<std::string, std::string> nodeOfPods() {  // pod name -> bound node
    std::map<std::string, std::string> out;
    for (const auto& p : livePods()) out[p.metadata.name] = getTargetNodeName(p).value();
    return out;
  }
  void setPodStatus(const std::string& podName, const std::string& phase, bool ready, api::Time readySince = {}) {
    auto p = server->get<Pod>("ns", podName).value();
    p.status.phase = phase;
    p.status.conditions.clear();
    auto& c = p.status.conditions.emplace_back();
    c.type = "Ready";
    c.status = ready ? "True" : "False";
    c.lastTransitionTime = readySince.isZero() ? api::timeNow(clock) : readySince;
    ASSERT_TRUE(client::updateStatus(*server->client(), p).ok());
  }
  // Every live pod scheduled onto its node and Ready (available with minReadySeconds 0).
  void runAll() {
    for (auto p : livePods()) {
      p.spec.nodeName = getTargetNodeName(p).value();
      ASSERT_TRUE(client::update(*server->client(), p).ok());
      setPodStatus(p.metadata.name, "Running", true);
    }
    refresh();
  }
  DaemonSet ds(const std::string& name = "ds") { return server->get<DaemonSet>("ns", name).value(); }
  std::vector<ControllerRevision> revisions() {
    auto r = server->list<ControllerRevision>("ns");
    std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.revision < b.revision; });
    return r;
  }
  std::vector<std::string> events() {
    broadcaster.flush();
    return server->createdEvents();
  }
  static std::string hashOf(const Pod& p) {
    auto it = p.metadata.labels.find("controller-revision-hash");
    return it == p.metadata.labels.end() ? "" : it->second;
  }

  FakeClock clock;
  std::shared_ptr<FakeApiServer> server = std::make_shared<FakeApiServer>(clock);
  informers::SharedInformerFactory factory{server->client(), 0s, clock};
  client::EventBroadcaster broadcaster{server->client(), "", clock};
  std::unique_ptr<DaemonSetsController> controller = std::make_unique<DaemonSetsController>(
      server->client(), broadcaster.newRecorder("daemonset-controller"), factory.forType<DaemonSet>(),
      factory.forType<ControllerRevision>(), factory.forType<Pod>(), factory.forType<Node>(),
      DaemonSetsControllerOptions{.staleConsistency = false}, clock);
};

Taint taint(const std::string& key, const std::string& effect) {
  Taint t;
  t.key = key;
  t.effect = effect;
  return t;
}

// TestSimpleDaemonSetLaunchesPods: one pod per node, bound by node affinity, with the daemon tolerations and the
// revision hash; the revision is <name>-<pod-template-hash> holding upstream's patch.
TEST_F(DaemonSetTest, LaunchesOnePodPerNodeBoundThroughNodeAffinity) {
  addNode("n1");
  addNode("n2");
  auto d = create(newDaemonSet());
  ASSERT_TRUE(sync().status.ok());
  const std::string hash = computeHash(d.spec.template_, std::nullopt);
  auto revs = revisions();
  ASSERT_EQ(revs.size(), 1u);
  EXPECT_EQ(revs[0].metadata.name, "ds-" + hash);
  EXPECT_EQ(revs[0].revision, 1);
  EXPECT_EQ(revs[0].metadata.labels["controller-revision-hash"], hash);
  EXPECT_EQ(revs[0].data.json, getPatch(d).value());
  ASSERT_EQ(revs[0].metadata.ownerReferences.size(), 1u);
  EXPECT_EQ(revs[0].metadata.ownerReferences[0].kind, "DaemonSet");

  std::set<std::string> nodes;
  for (const auto& p : pods()) {
    nodes.insert(getTargetNodeName(p).value());
    EXPECT_TRUE(p.spec.nodeName.empty()) << "the scheduler binds daemon pods";
    EXPECT_EQ(hashOf(p), hash);
    EXPECT_EQ(p.metadata.generateName, "ds-");
    std::set<std::string> tolerated;
    for (const auto& t : p.spec.tolerations) tolerated.insert(t.key + ":" + t.effect);
    EXPECT_EQ(tolerated, (std::set<std::string>{"node.kubernetes.io/not-ready:NoExecute",
                                                "node.kubernetes.io/unreachable:NoExecute",
                                                "node.kubernetes.io/disk-pressure:NoSchedule",
                                                "node.kubernetes.io/memory-pressure:NoSchedule",
                                                "node.kubernetes.io/pid-pressure:NoSchedule",
                                                "node.kubernetes.io/unschedulable:NoSchedule"}));
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"n1", "n2"}));
  auto s = ds().status;
  EXPECT_EQ(s.desiredNumberScheduled, 2);
  EXPECT_EQ(s.currentNumberScheduled, 0);  // the creates were not in the cache when status was computed
  EXPECT_EQ(s.observedGeneration, 1);
  EXPECT_EQ(s.numberUnavailable, 2);
  auto ev = events();
  EXPECT_EQ(std::count_if(ev.begin(), ev.end(), [](const auto& e) { return e.find("SuccessfulCreate") != std::string::npos; }), 2);

  runAll();
  ASSERT_TRUE(sync().status.ok());
  s = ds().status;
  EXPECT_EQ(s.currentNumberScheduled, 2);
  EXPECT_EQ(s.numberReady, 2);
  EXPECT_EQ(s.numberAvailable, 2);
  EXPECT_EQ(s.updatedNumberScheduled, 2);
  EXPECT_EQ(s.numberUnavailable, 0);
  EXPECT_EQ(pods().size(), 2u);  // nothing more to create
}

// TestNodeAffinityDaemonLaunchesPods / TestTaintedNode... / TestNodeDaemonLaunchesToleratePod.
TEST_F(DaemonSetTest, SelectorsAffinityAndTaintsDecideTheNodes) {
  addNode("plain");
  addNode("ssd", {{"disk", "ssd"}, {"rank", "7"}});
  addNode("ssd-tainted", {{"disk", "ssd"}, {"rank", "9"}}, {taint("dedicated", "NoSchedule")});
  addNode("ssd-notready", {{"disk", "ssd"}, {"rank", "9"}}, {taint("node.kubernetes.io/not-ready", "NoExecute")});
  addNode("ssd-cordoned", {{"disk", "ssd"}, {"rank", "3"}}, {taint("node.kubernetes.io/unschedulable", "NoSchedule")});
  auto d = newDaemonSet();
  d.spec.template_.spec.nodeSelector["disk"] = "ssd";
  auto& term = d.spec.template_.spec.affinity.emplace().nodeAffinity.emplace()
                   .requiredDuringSchedulingIgnoredDuringExecution.emplace().nodeSelectorTerms.emplace_back();
  auto& req = term.matchExpressions.emplace_back();
  req.key = "rank";
  req.operator_ = "Gt";
  req.values = {"5"};
  create(d);
  ASSERT_TRUE(sync().status.ok());
  std::set<std::string> nodes;
  for (const auto& [pod, node] : nodeOfPods()) nodes.insert(node);
  // plain: no disk label; ssd-cordoned: rank 3; ssd-tainted: untolerated NoSchedule.
  EXPECT_EQ(nodes, (std::set<std::string>{"ssd", "ssd-notready"}));
  // The template's own required terms are replaced by the node's name.
  for (const auto& p : pods()) {
    const auto& terms = p.spec.affinity->nodeAffinity->requiredDuringSchedulingIgnoredDuringExecution->nodeSelectorTerms;
    ASSERT_EQ(terms.size(), 1u);
    EXPECT_TRUE(terms[0].matchExpressions.empty());
    ASSERT_EQ(terms[0].matchFields.size(), 1u);
    EXPECT_EQ(terms[0].matchFields[0].key, "metadata.name");
  }
  EXPECT_EQ(ds().status.desiredNumberScheduled, 2);
}

// A NoSchedule taint added later leaves the running pod (misscheduled); an untolerated NoExecute one removes it.
TEST_F(DaemonSetTest, RunningPodsStayOnNoScheduleTaintsAndGoOnNoExecute) {
  addNode("n1");
  create(newDaemonSet());
  ASSERT_TRUE(sync().status.ok());
  runAll();
  auto n = server->get<Node>("", "n1").value();
  n.spec.taints = {taint("dedicated", "NoSchedule")};
  ASSERT_TRUE(client::update(*server->client(), n).ok());
  refresh();
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(livePods().size(), 1u);
  EXPECT_EQ(ds().status.numberMisscheduled, 1);
  EXPECT_EQ(ds().status.desiredNumberScheduled, 0);
  n = server->get<Node>("", "n1").value();
  n.spec.taints = {taint("dedicated", "NoExecute")};
  ASSERT_TRUE(client::update(*server->client(), n).ok());
  refresh();
  ASSERT_TRUE(sync().status.ok());
  EXPECT_TRUE(livePods().empty());
}

// TestDaemonKillFailedPods / TestDaemonKillFailedPodsBackoff: a failed pod is deleted with an event, and the next
// failure on the same node waits out the back-off (1 s, then 2 s).
TEST_F(DaemonSetTest, FailedPodsAreReplacedUnderBackoff) {
  addNode("n1");
  create(newDaemonSet());
  ASSERT_TRUE(sync().status.ok());
  runAll();
  const std::string first = livePods().at(0).metadata.name;
  setPodStatus(first, "Failed", false);
  refresh();
  ASSERT_TRUE(sync().status.ok());
  EXPECT_FALSE(server->get<Pod>("ns", first)) << "the failed pod is deleted";
  auto ev = events();
  EXPECT_TRUE(std::any_of(ev.begin(), ev.end(), [&](const auto& e) {
    return e.find("FailedDaemonPod") != std::string::npos &&
           e.find("Found failed daemon pod ns/" + first + " on node n1, will try to kill it") != std::string::npos;
  })) << ::testing::PrintToString(ev);
  ASSERT_TRUE(sync().status.ok());  // the replacement
  ASSERT_EQ(livePods().size(), 1u);
  const std::string second = livePods().at(0).metadata.name;
  EXPECT_NE(second, first);
  setPodStatus(second, "Failed", false);
  refresh();
  clock.advance(500ms);
  ASSERT_TRUE(sync().status.ok());
  EXPECT_TRUE(server->get<Pod>("ns", second)) << "within the back-off the failed pod stays";
  clock.advance(600ms);
  ASSERT_TRUE(sync().status.ok());
  EXPECT_FALSE(server->get<Pod>("ns", second));
}

// TestDaemonSetRespectsTermination... succeeded pods are deleted too (SucceededDaemonPod), without back-off.
TEST_F(DaemonSetTest, SucceededPodsAreDeleted) {
  addNode("n1");
  create(newDaemonSet());
  ASSERT_TRUE(sync().status.ok());
  runAll();
  const std::string name = livePods().at(0).metadata.name;
  setPodStatus(name, "Succeeded", false);
  refresh();
  ASSERT_TRUE(sync().status.ok());
  EXPECT_FALSE(server->get<Pod>("ns", name));
  auto ev = events();
  EXPECT_TRUE(std::any_of(ev.begin(), ev.end(), [](const auto& e) { return e.find("SucceededDaemonPod") != std::string::npos; }));
}

// TestDaemonSetUpdatesPods (update_test.go): maxUnavailable bounds how many old pods go at once.
TEST_F(DaemonSetTest, RollingUpdateReplacesAtMostMaxUnavailable) {
  for (auto n : {"n1", "n2", "n3", "n4"}) addNode(n);
  create(newDaemonSet());
  ASSERT_TRUE(sync().status.ok());
  runAll();
  ASSERT_TRUE(sync().status.ok());
  const std::string oldHash = hashOf(livePods().at(0));
  updateSpec([](DaemonSet& d) {
    d.spec.template_.spec.containers[0].image = "pause:2";
    d.spec.updateStrategy.rollingUpdate->maxUnavailable = api::IntOrString::fromInt(2);
  });
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(revisions().size(), 2u);
  EXPECT_EQ(revisions().back().revision, 2);
  EXPECT_EQ(livePods().size(), 2u) << "two old pods deleted";
  for (const auto& p : livePods()) EXPECT_EQ(hashOf(p), oldHash);
  ASSERT_TRUE(sync().status.ok());  // replacements, created with the new hash
  int fresh = 0;
  for (const auto& p : livePods()) fresh += hashOf(p) != oldHash;
  EXPECT_EQ(fresh, 2);
  EXPECT_EQ(livePods().size(), 4u);
  // The new pods are not available yet: no further old pod may go.
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(livePods().size(), 4u);
  runAll();
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(livePods().size(), 2u);
  ASSERT_TRUE(sync().status.ok());
  runAll();
  ASSERT_TRUE(sync().status.ok());
  for (const auto& p : livePods()) EXPECT_NE(hashOf(p), oldHash);
  EXPECT_EQ(ds().status.updatedNumberScheduled, 4);
}

// TestDaemonSetUpdatesSomeOldPodsNotReady / surge: a new pod starts next to each old one (up to maxSurge), and
// the old one goes once the new one is available.
TEST_F(DaemonSetTest, SurgeStartsNewPodsBesideOldOnes) {
  for (auto n : {"n1", "n2"}) addNode(n);
  create(newDaemonSet());
  ASSERT_TRUE(sync().status.ok());
  runAll();
  const std::string oldHash = hashOf(livePods().at(0));
  updateSpec([](DaemonSet& d) {
    d.spec.template_.spec.containers[0].image = "pause:2";
    d.spec.updateStrategy.rollingUpdate->maxUnavailable = api::IntOrString::fromInt(0);
    d.spec.updateStrategy.rollingUpdate->maxSurge = api::IntOrString::fromInt(1);
  });
  ASSERT_TRUE(sync().status.ok());
  ASSERT_EQ(livePods().size(), 3u) << "one surge pod";
  std::map<std::string, int> perNode;
  for (const auto& [pod, node] : nodeOfPods()) ++perNode[node];
  EXPECT_EQ(perNode.size(), 2u);
  runAll();
  ASSERT_TRUE(sync().status.ok());  // the surged node's old pod goes
  EXPECT_EQ(livePods().size(), 2u);
  ASSERT_TRUE(sync().status.ok());  // then the other node surges
  // The surged node's old pod is gone, and the other node surges now.
  std::map<std::string, std::set<std::string>> hashes;
  for (const auto& p : livePods()) hashes[getTargetNodeName(p).value()].insert(hashOf(p) == oldHash ? "old" : "new");
  EXPECT_EQ(livePods().size(), 3u);
  int onlyNew = 0, both = 0;
  for (const auto& [n, h] : hashes) {
    onlyNew += h == std::set<std::string>{"new"};
    both += h.size() == 2;
  }
  EXPECT_EQ(onlyNew, 1);
  EXPECT_EQ(both, 1);
}

// OnDelete: a template change creates a revision but touches no pod.
TEST_F(DaemonSetTest, OnDeleteLeavesPodsUntilTheyAreDeleted) {
  addNode("n1");
  auto d = newDaemonSet();
  d.spec.updateStrategy.type = "OnDelete";
  d.spec.updateStrategy.rollingUpdate.reset();
  create(d);
  ASSERT_TRUE(sync().status.ok());
  runAll();
  const std::string name = livePods().at(0).metadata.name;
  updateSpec([](DaemonSet& d) { d.spec.template_.spec.containers[0].image = "pause:2"; });
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(revisions().size(), 2u);
  ASSERT_EQ(livePods().size(), 1u);
  EXPECT_EQ(livePods()[0].metadata.name, name);
  EXPECT_EQ(ds().status.updatedNumberScheduled, 0);
}

// Rollback: returning to an earlier template reuses its revision (renumbered), so its pods are current again and
// nothing restarts; old revisions beyond the limit go unless a pod still uses them.
TEST_F(DaemonSetTest, RollbackRenumbersTheRevisionAndHistoryIsCleanedUp) {
  addNode("n1");
  auto d = newDaemonSet();
  d.spec.updateStrategy.type = "OnDelete";
  d.spec.updateStrategy.rollingUpdate.reset();
  d.spec.revisionHistoryLimit = 1;
  create(d);
  ASSERT_TRUE(sync().status.ok());
  runAll();
  const std::string podName = livePods().at(0).metadata.name;
  const std::string firstRev = revisions().at(0).metadata.name;
  updateSpec([](DaemonSet& d) { d.spec.template_.spec.containers[0].image = "pause:2"; });
  ASSERT_TRUE(sync().status.ok());
  updateSpec([](DaemonSet& d) { d.spec.template_.spec.containers[0].image = "pause:3"; });
  ASSERT_TRUE(sync().status.ok());
  // Three revisions, limit 1: pause:2's goes (no pod uses it); pause:1's stays for the running pod.
  auto revs = revisions();
  ASSERT_EQ(revs.size(), 2u);
  EXPECT_EQ(revs[0].metadata.name, firstRev);
  EXPECT_EQ(revs[1].revision, 3);
  updateSpec([](DaemonSet& d) { d.spec.template_.spec.containers[0].image = "pause:1"; });
  ASSERT_TRUE(sync().status.ok());
  revs = revisions();
  ASSERT_EQ(revs.size(), 2u);
  EXPECT_EQ(revs.back().metadata.name, firstRev);
  EXPECT_EQ(revs.back().revision, 4);
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(ds().status.updatedNumberScheduled, 1);
  EXPECT_EQ(livePods().at(0).metadata.name, podName);
}

// A revision of the same name but another template bumps status.collisionCount; the next sync uses a new name.
TEST_F(DaemonSetTest, HashCollisionBumpsCollisionCount) {
  addNode("n1");
  auto d = newDaemonSet();
  ControllerRevision squatter;
  squatter.metadata.namespace_ = "ns";
  squatter.metadata.name = "ds-" + computeHash(d.spec.template_, std::nullopt);
  squatter.data.json = R"({"spec":{"template":{"$patch":"replace"}}})";
  squatter.revision = 1;
  server->add(squatter);
  create(d);
  EXPECT_FALSE(sync().status.ok());
  EXPECT_EQ(ds().status.collisionCount, 1);
  ASSERT_TRUE(sync().status.ok());
  bool found = false;
  for (const auto& r : revisions())
    found |= r.metadata.name == "ds-" + computeHash(d.spec.template_, 1);
  EXPECT_TRUE(found);
}

// An orphan revision that matches is adopted; pods of other owners are left alone.
TEST_F(DaemonSetTest, AdoptsMatchingOrphanRevisions) {
  addNode("n1");
  auto d = create(newDaemonSet());
  ControllerRevision orphan;
  orphan.metadata.namespace_ = "ns";
  orphan.metadata.name = "orphan";
  orphan.metadata.labels["app"] = "d";
  orphan.data.json = R"({"spec":{"template":{"$patch":"replace"}}})";
  orphan.revision = 7;
  server->add(orphan);
  refresh();
  // As upstream: the claim hands back the cached (pre-adoption) revision, so labelling it conflicts once.
  auto r = sync();
  EXPECT_EQ(r.status.code(), StatusCode::kConflict) << r.status.message();
  r = sync();
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  auto adopted = server->get<ControllerRevision>("ns", "orphan").value();
  ASSERT_EQ(adopted.metadata.ownerReferences.size(), 1u);
  EXPECT_EQ(adopted.metadata.ownerReferences[0].uid, d.metadata.uid);
  EXPECT_EQ(adopted.metadata.labels["controller-revision-hash"], "orphan") << "labelled by name";
  // The current revision is numbered after it.
  EXPECT_EQ(revisions().back().revision, 8);
}

TEST_F(DaemonSetTest, SelectingAllIsRefused) {
  addNode("n1");
  auto d = newDaemonSet();
  d.spec.selector->matchLabels.clear();
  create(d);
  ASSERT_TRUE(sync().status.ok());
  EXPECT_TRUE(pods().empty());
  auto ev = events();
  EXPECT_TRUE(std::any_of(ev.begin(), ev.end(), [](const auto& e) {
    return e.find("SelectingAll") != std::string::npos &&
           e.find("This daemon set is selecting all pods. A non-empty selector is required.") != std::string::npos;
  }));
}

// Node updates re-queue only the DaemonSets whose placement changes.
TEST_F(DaemonSetTest, NodeUpdatesRequeueAffectedDaemonSets) {
  addNode("n1");
  auto d = newDaemonSet();
  d.spec.template_.spec.nodeSelector["color"] = "blue";
  create(d);
  ASSERT_TRUE(sync().status.ok());
  EXPECT_TRUE(pods().empty());
  auto n = server->get<Node>("", "n1").value();
  n.metadata.labels["color"] = "blue";
  ASSERT_TRUE(client::update(*server->client(), n).ok());
  refresh();
  ASSERT_TRUE(controller->syncNodeUpdate("n1").status.ok());
  ASSERT_TRUE(sync().status.ok());
  EXPECT_EQ(livePods().size(), 1u);
}

// The revision data is upstream's bytes: keys sorted at every level, Go's escapes (golden from Go).
TEST(DaemonSetRevisions, PatchAndHashesMatchUpstream) {
  std::ifstream f(std::string(KCM_TESTDATA_DIR) + "/controllers/testdata/revisions/golden.json");
  std::ifstream c(std::string(KCM_TESTDATA_DIR) + "/controllers/testdata/revisions/cases.json");
  ASSERT_TRUE(f && c);
  auto golden = json::parse(f);
  auto cases = json::parse(c);
  ASSERT_EQ(golden.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i]["name"].get<std::string>());
    DaemonSet ds;
    ASSERT_TRUE(api::apps::v1::fromJson(cases[i]["daemonSet"].dump(), ds).ok());
    auto patch = getPatch(ds);
    ASSERT_TRUE(patch.ok());
    EXPECT_EQ(*patch, golden[i]["patch"].get<std::string>());
    EXPECT_EQ(history::hashControllerRevision(*patch, std::nullopt), golden[i]["revisionHash"].get<std::string>());
    EXPECT_EQ(history::hashControllerRevision(*patch, 3), golden[i]["revisionHashProbe3"].get<std::string>());
  }
}

TEST(DaemonSetUtil, NodeAffinityTerms) {
  Node n;
  n.metadata.name = "n1";
  n.metadata.labels = {{"rank", "5"}, {"zone", "a"}};
  auto term = [](std::string key, std::string op, std::vector<std::string> values, bool field = false) {
    api::core::v1::NodeSelectorTerm t;
    api::core::v1::NodeSelectorRequirement r;
    r.key = std::move(key);
    r.operator_ = std::move(op);
    r.values.assign(values.begin(), values.end());
    (field ? t.matchFields : t.matchExpressions).push_back(std::move(r));
    return t;
  };
  EXPECT_EQ(nodeSelectorTermMatches(term("rank", "Gt", {"4"}), n), true);
  EXPECT_EQ(nodeSelectorTermMatches(term("rank", "Lt", {"5"}), n), false);
  EXPECT_EQ(nodeSelectorTermMatches(term("rank", "Gt", {"x"}), n), std::nullopt);
  EXPECT_EQ(nodeSelectorTermMatches(term("zone", "NotIn", {"b"}), n), true);
  EXPECT_EQ(nodeSelectorTermMatches(term("zone", "In", {}), n), std::nullopt);
  EXPECT_EQ(nodeSelectorTermMatches(term("missing", "DoesNotExist", {}), n), true);
  EXPECT_EQ(nodeSelectorTermMatches(term("metadata.name", "In", {"n1"}, true), n), true);
  EXPECT_EQ(nodeSelectorTermMatches(term("metadata.name", "NotIn", {"n1"}, true), n), false);
  EXPECT_EQ(nodeSelectorTermMatches(term("metadata.name", "In", {"a", "b"}, true), n), std::nullopt);
  // A term that does not parse is skipped; another may still match.
  api::Box<api::core::v1::Affinity> a;
  auto& terms = a.emplace().nodeAffinity.emplace().requiredDuringSchedulingIgnoredDuringExecution.emplace().nodeSelectorTerms;
  terms = {term("rank", "Bogus", {}), term("zone", "In", {"a"})};
  api::StringMap<api::String> selector;
  EXPECT_TRUE(RequiredNodeAffinity(selector, a).match(n));
  terms = {api::core::v1::NodeSelectorTerm{}};
  EXPECT_FALSE(RequiredNodeAffinity(selector, a).match(n)) << "an empty term matches nothing";
  selector["zone"] = "b";
  a.reset();
  EXPECT_FALSE(RequiredNodeAffinity(selector, a).match(n));
}

TEST(DaemonSetUtil, TolerationsAreAddedOrReplaced) {
  api::core::v1::PodSpec spec;
  auto& t = spec.tolerations.emplace_back();
  t.key = "node.kubernetes.io/not-ready";
  t.operator_ = "Exists";
  t.effect = "NoExecute";
  t.tolerationSeconds = 300;
  spec.hostNetwork = true;
  addOrUpdateDaemonPodTolerations(spec);
  ASSERT_EQ(spec.tolerations.size(), 7u);
  EXPECT_EQ(spec.tolerations[0].key, "node.kubernetes.io/not-ready");
  EXPECT_FALSE(spec.tolerations[0].tolerationSeconds) << "replaced by the forever toleration";
  EXPECT_EQ(spec.tolerations.back().key, "node.kubernetes.io/network-unavailable");
}

TEST(DaemonSetUtil, FailedPodsBackoffDoublesAndExpires) {
  FailedPodsBackoff b(1s, 8s);
  Clock::TimePoint t0{};
  EXPECT_FALSE(b.isInBackOffSinceUpdate("k", t0));
  b.next("k", t0);
  EXPECT_EQ(b.get("k"), 1s);
  EXPECT_TRUE(b.isInBackOffSinceUpdate("k", t0 + 999ms));
  EXPECT_FALSE(b.isInBackOffSinceUpdate("k", t0 + 1s));
  b.next("k", t0 + 1s);
  b.next("k", t0 + 2s);
  b.next("k", t0 + 3s);
  b.next("k", t0 + 4s);
  EXPECT_EQ(b.get("k"), 8s) << "capped";
  b.next("k", t0 + 4s + 17s);  // untouched for more than 2*max: starts over
  EXPECT_EQ(b.get("k"), 1s);
  b.gc(t0 + 4s + 17s + 17s);
  EXPECT_EQ(b.size(), 0u);
}

}  // namespace
}  // namespace kcm::controllers::daemon
